//! RECALL common-sense domain (EventKG) end to end: offline builds of the `raw/eventkg`
//! dump keep the row invariants, its light form builds the same rows, `--limit` and
//! `--sample` select events, and with the mock server in the model's place malformed and
//! off-schema answers end in rejects while the files stay the same at any concurrency.

mod common;
#[path = "common/recall.rs"]
mod recall;

use cb_mock::{responder, ChatRequest, MockServer, Reply};
use common::*;
use serde_json::{json, Value};
use std::path::Path;

fn raw() -> String {
    repo().join("raw").to_str().unwrap().to_owned()
}

async fn offline(extra: &[&str], out: &Path) -> std::process::Output {
    let mut args = vec![
        "recall",
        "--domains",
        "eventkg",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    build(&args, &[]).await
}

/// The source ids of a build's QA-A rows, in order.
fn ids(dir: &Path) -> Vec<String> {
    read_jsonl(&dir.join("qa_a.jsonl"))
        .iter()
        .map(|r| r["source_id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn offline_build_of_the_sample_dump_keeps_the_invariants() {
    let tmp = tempfile::tempdir().unwrap();
    let raw = raw();
    let o = offline(&["--raw", &raw], tmp.path()).await;
    assert!(o.status.success(), "{}", text(&o));
    let dir = tmp.path().join("recall/eventkg");
    let (a, na, tg) = recall::check_dir(&dir);
    assert_counts_add_up(&dir);
    assert!(a >= 12, "only {a} rows");
    assert_eq!((na, tg), (a, a));
    let m = read_json(&dir.join("manifest.json"));
    assert_eq!(m["offline"], true);
    for reason in ["no_description", "too_few_items"] {
        assert!(
            m["filtered"][reason].as_u64().unwrap() >= 1,
            "{reason}: {m}"
        );
    }
    // Every kind of value is asked about somewhere, dates with their granularity.
    let rows = read_jsonl(&dir.join("qa_a.jsonl"));
    assert!(rows.iter().all(|r| r["domain"] == "eventkg"));
    let tg_rows = read_jsonl(&dir.join("text_generation.jsonl"));
    let kinds: std::collections::BTreeSet<String> = tg_rows
        .iter()
        .map(|r| {
            let key = r["edited_key"].as_str().unwrap();
            r["source"]
                .as_array()
                .unwrap()
                .iter()
                .find(|i| i["key"] == key)
                .unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(kinds.len() >= 2, "{kinds:?}");
    let card = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(card.contains("Offline build") && card.contains("edited_words"));
}

#[tokio::test]
async fn the_light_dump_builds_the_same_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let light = tmp.path().join("light");
    std::fs::create_dir_all(&light).unwrap();
    for e in std::fs::read_dir(repo().join("raw/eventkg")).unwrap() {
        let p = e.unwrap().path();
        // Drop the graph term: `<s> <p> <o> <g> .` -> `<s> <p> <o> .`
        let stripped: String = std::fs::read_to_string(&p)
            .unwrap()
            .lines()
            .map(
                |l| match l.rfind(" <http://eventKG.l3s.uni-hannover.de/graph/") {
                    Some(i) => format!("{} .\n", &l[..i]),
                    None => format!("{l}\n"),
                },
            )
            .collect();
        std::fs::write(light.join(p.file_name().unwrap()), stripped).unwrap();
    }
    let raw = raw();
    let input = format!("eventkg={}", light.display());
    let full_out = tmp.path().join("full");
    let light_out = tmp.path().join("lightout");
    assert!(offline(&["--raw", &raw], &full_out).await.status.success());
    let o = offline(&["--input", &input], &light_out).await;
    assert!(o.status.success(), "{}", text(&o));
    let strip = |dir: &Path, f: &str| -> Vec<Value> {
        read_jsonl(&dir.join("recall/eventkg").join(f))
            .into_iter()
            .map(|mut r| {
                r.as_object_mut().unwrap().remove("origin");
                r
            })
            .collect()
    };
    for f in ["qa_a.jsonl", "qa_na.jsonl", "text_generation.jsonl"] {
        assert_eq!(strip(&full_out, f), strip(&light_out, f), "{f}");
    }
}

#[tokio::test]
async fn limit_and_sample_select_events() {
    let tmp = tempfile::tempdir().unwrap();
    let raw = raw();
    let limited = tmp.path().join("limited");
    assert!(offline(&["--raw", &raw, "--limit", "6"], &limited)
        .await
        .status
        .success());
    let m = read_json(&limited.join("recall/eventkg/manifest.json"));
    assert_eq!(m["stages"][0]["in"], 6, "{m}");

    for (name, seed) in [("s1", "7"), ("s2", "7"), ("s3", "8")] {
        let out = tmp.path().join(name);
        let o = offline(&["--raw", &raw, "--sample", "8", "--seed", seed], &out).await;
        assert!(o.status.success(), "{}", text(&o));
        let m = read_json(&out.join("recall/eventkg/manifest.json"));
        assert_eq!(m["stages"][0]["in"], 8, "{m}");
        // In dump order: the origins (file, line) increase.
        let origins: Vec<(String, u64)> = read_jsonl(&out.join("recall/eventkg/qa_a.jsonl"))
            .iter()
            .map(|r| {
                let (f, l) = r["origin"].as_str().unwrap().rsplit_once(':').unwrap();
                (f.to_owned(), l.parse().unwrap())
            })
            .collect();
        assert!(origins.windows(2).all(|w| w[0] < w[1]), "{origins:?}");
    }
    let s1 = ids(&tmp.path().join("s1/recall/eventkg"));
    let s2 = ids(&tmp.path().join("s2/recall/eventkg"));
    assert_eq!(s1, s2, "same seed, same sample");
    let s3 = read_jsonl(&tmp.path().join("s3/recall/eventkg/rejects.jsonl"));
    let s1r = read_jsonl(&tmp.path().join("s1/recall/eventkg/rejects.jsonl"));
    assert!(
        s1 != ids(&tmp.path().join("s3/recall/eventkg")) || s1r != s3,
        "another seed, another sample"
    );

    // Only a reader that selects records itself takes --sample.
    let o = build(
        &[
            "recall",
            "--domains",
            "uj",
            "--raw",
            &raw,
            "--out",
            tmp.path().to_str().unwrap(),
            "--sample",
            "3",
        ],
        &[],
    )
    .await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--sample"), "{}", text(&o));
}

/// The text between `<<<` and `>>>` after `label`.
fn block<'a>(all: &'a str, label: &str) -> &'a str {
    let rest = &all[all.find(label).unwrap()..];
    between(rest, "<<<\n", "\n>>>").unwrap_or("")
}

/// `30 May 1431` -> `May 30, 1431`: the stand-in model writes dates its own way.
fn reword_date(v: &str) -> String {
    let w: Vec<&str> = v.split(' ').collect();
    if w.len() == 3 && w[0].parse::<u32>().is_ok() && w[2].parse::<u32>().is_ok() {
        format!("{} {}, {}", w[1], w[0], w[2])
    } else {
        v.to_owned()
    }
}

fn record_lines(block: &str) -> Vec<(String, String)> {
    block
        .lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// A stand-in model for the EventKG prompts, deterministic in the prompt. Faults by event:
/// Apollo 12's paragraph leaves a value out, Battle of Hastings gets an off-schema question,
/// Congress of Vienna a truncated answer edit, Apollo 11 a non-answer edit of its answer.
fn eventkg_model(req: &ChatRequest) -> Reply {
    let all = all_text(req);
    if all.contains("Here is a record about an event") {
        let lines = record_lines(block(&all, "Here is a record"));
        let name = lines
            .iter()
            .find(|(k, _)| k == "name")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        let mut sentences: Vec<String> = lines
            .iter()
            .filter(|(k, _)| k != "description")
            .map(|(k, v)| match k.as_str() {
                "name" => format!("This is about {v}."),
                _ => format!("Its {k} was {}.", reword_date(v)),
            })
            .collect();
        if name == "Apollo 12" {
            sentences.pop();
        }
        return Reply::Content(sentences.join(" "));
    }
    if all.contains("Paragraph written from the record") {
        let lines = record_lines(block(&all, "Record of the event"));
        let name = &lines.iter().find(|(k, _)| k == "name").unwrap().1;
        if name == "Battle of Hastings" {
            return Reply::Content(r#"{"q": "When?", "a": "1066"}"#.into());
        }
        let (k, v) = lines
            .iter()
            .find(|(k, _)| k != "name" && k != "description")
            .unwrap();
        return Reply::Content(
            json!({"key": k, "question": format!("What was the {k} of {name}?"), "answer": v})
                .to_string(),
        );
    }
    if all.contains("Give another") {
        if all.contains("Congress of Vienna") {
            return Reply::Content(r#"{"edited_answer": "Par"#.into());
        }
        // "(the event's KEY: a date)": the kind in words after the last colon.
        let about = between(&all, "\nCorrect answer: \"", ")").unwrap();
        let edited = match about.rsplit(": ").next().unwrap() {
            "a date" => "1 January 1900",
            "a place" => "Timbuktu",
            "a person or organisation" => "Ada Lovelace",
            "an event" => "Siege of Troy",
            _ => "Zzyzx",
        };
        return Reply::Content(json!({ "edited_answer": edited }).to_string());
    }
    if all.contains("Introduce factual errors") {
        let answer = between(&all, "Answer: \"", "\"").unwrap();
        let paragraph = block(&all, "Paragraph about an event");
        let original = if paragraph.contains("This is about Apollo 11.") {
            answer.to_owned()
        } else {
            paragraph
                .split(". ")
                .filter_map(|s| {
                    s.split_once(" was ")
                        .map(|(_, v)| v.trim_end_matches('.').to_owned())
                })
                .find(|v| v != answer && !v.contains(answer) && !answer.contains(v.as_str()))
                .unwrap_or_default()
        };
        return Reply::Content(
            json!({"replacements": [{"original": original, "edited": "Xanadu"}]}).to_string(),
        );
    }
    Reply::Content(format!("unexpected prompt: {all}"))
}

async fn mock_build(base: &str, out: &Path, concurrency: &str) -> std::process::Output {
    let raw = raw();
    let mut args = model_args("recall", "eventkg", base, &raw, out.to_str().unwrap());
    args.extend(["--concurrency", concurrency]);
    build(&args, &[("OPENAI_API_KEY", "sk-test")]).await
}

#[tokio::test]
async fn bad_model_answers_end_in_rejects_and_files_do_not_depend_on_concurrency() {
    let server = MockServer::start(responder(eventkg_model)).await;
    let (one, many) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for (dir, c) in [(&one, "1"), (&many, "16")] {
        let o = mock_build(&server.base_url(), dir.path(), c).await;
        assert!(o.status.success(), "{}", text(&o));
    }
    assert_eq!(
        snapshot(&one.path().join("recall/eventkg")),
        snapshot(&many.path().join("recall/eventkg"))
    );
    let dir = one.path().join("recall/eventkg");
    let (a, _, _) = recall::check_dir(&dir);
    assert_counts_add_up(&dir);
    assert!(a >= 8, "{a} rows");
    let rejects = read_jsonl(&dir.join("rejects.jsonl"));
    let find = |stage: &str, reason: &str, raw_has: &str| {
        rejects
            .iter()
            .find(|r| {
                r["stage"] == stage
                    && r["reason"] == reason
                    && r["raw_response"]
                        .as_str()
                        .is_some_and(|t| t.contains(raw_has))
            })
            .unwrap_or_else(|| panic!("no {stage}/{reason} reject with {raw_has:?}: {rejects:#?}"))
            .clone()
    };
    let r = find("paraphrase", "missing_values", "This is about Apollo 12.");
    assert_eq!(r["attempts"], 4, "asked afresh three more times");
    assert!(r["detail"].as_str().unwrap().contains("missing"), "{r}");
    find("qa", "bad_json", r#""q": "When?""#);
    find("answer_edit", "bad_json", r#"{"edited_answer": "Par"#);
    find("nonanswer_edit", "answer_modified", "Xanadu");
    let m = read_json(&dir.join("manifest.json"));
    for s in ["paraphrase", "qa", "answer_edit", "nonanswer_edit"] {
        let st = m["stages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == s)
            .unwrap();
        assert!(st["rejected"].as_u64().unwrap() >= 1, "{st}");
    }
}

/// The editor's questions of the reader check (`kind_check`, `coherence_check` in the bundled
/// recipe): a reader that judges an edited answer of another kind, or a non-answer-edited
/// context that contradicts itself, refuses exactly those samples, with the reasons
/// `reader_wrong_kind` and `reader_contradiction`; a reader that finds no flaw refuses none.
#[tokio::test(flavor = "multi_thread")]
async fn the_reader_refuses_edits_of_another_kind_and_contexts_that_contradict_themselves() {
    let raw = raw();
    // The stand-in writes every step; its answer edit puts "Timbuktu" for a place, and its
    // non-answer edit "Xanadu" for a place outside the answer.
    let build_read = |flaws: bool| {
        let raw = raw.clone();
        async move {
            let server = MockServer::start(responder(move |req: &ChatRequest| {
                let last = req.last_user();
                if flaws && last.contains("Reply with the letter of one option (one of") {
                    let flawed = (last.contains("same kind of thing")
                        && last.contains("with \"Timbuktu\""))
                        || (last.contains("contradict") && last.contains("Xanadu"));
                    return Reply::Content(cb_mock::reader_script::judge(last, flawed).unwrap());
                }
                cb_mock::stand_in::answer(req)
            }))
            .await;
            let out = tempfile::tempdir().unwrap();
            let base = server.base_url();
            let args = reading_args(
                "recall",
                "eventkg",
                &base,
                &raw,
                out.path().to_str().unwrap(),
            );
            let o = build(&args, &[("OPENAI_API_KEY", "sk-test")]).await;
            assert!(o.status.success(), "{}", text(&o));
            (out, server)
        }
    };
    let (clean, _s1) = build_read(false).await;
    let dir = clean.path().join("recall/eventkg");
    let rows = read_jsonl(&dir.join("qa_na.jsonl"));
    let m = read_json(&dir.join("manifest.json"));
    assert_eq!(
        m["reader"]["checks"]["kind"]["asked"],
        m["reader"]["checks"]["kind"]["passed"]
    );
    let kinds = m["reader"]["checks"]["kind"]["asked"].as_u64().unwrap();
    assert!(kinds >= rows.len() as u64, "{}", m["reader"]);
    let (mut wrong_kind, mut contradiction) = (Vec::new(), Vec::new());
    for r in &rows {
        let id = r["source_id"].as_str().unwrap().to_owned();
        if r["edited_answer"] == "Timbuktu" {
            wrong_kind.push(id);
        } else if r["edited_context"].as_str().unwrap().contains("Xanadu") {
            contradiction.push(id);
        }
    }
    assert!(
        !wrong_kind.is_empty() && !contradiction.is_empty(),
        "{wrong_kind:?} {contradiction:?}"
    );

    let (flawed, _s2) = build_read(true).await;
    let dir = flawed.path().join("recall/eventkg");
    assert_counts_add_up(&dir);
    let kept: Vec<String> = read_jsonl(&dir.join("qa_na.jsonl"))
        .iter()
        .map(|r| r["source_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        kept.len(),
        rows.len() - wrong_kind.len() - contradiction.len()
    );
    let rejects = read_jsonl(&dir.join("rejects.jsonl"));
    let refused = |reason: &str| -> Vec<String> {
        rejects
            .iter()
            .filter(|r| r["stage"] == "reader_check" && r["reason"] == reason)
            .map(|r| r["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(refused("reader_wrong_kind"), wrong_kind);
    assert_eq!(refused("reader_contradiction"), contradiction);
    let r = rejects
        .iter()
        .find(|r| r["reason"] == "reader_wrong_kind")
        .unwrap();
    assert!(
        r["detail"]
            .as_str()
            .unwrap()
            .contains("asked whether the edited answer keeps the answer's kind, the reader picked")
            && r["detail"]
                .as_str()
                .unwrap()
                .contains("no: another kind of thing"),
        "{r}"
    );
}
