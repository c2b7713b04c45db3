//! `conflictbench eval conflictbank` against a scripted model (cb-mock) whose answers give
//! figures computed here by hand: ConflictBank's filter (right with no evidence and with the
//! correct evidence), both orders of the inter-context settings, the prediction folders in the
//! layout `eval conflictbank-predictions` reads, a cached second run, and a bad build folder;
//! and the average entropy from the log-probabilities a scripted model sends (hand-computed,
//! the same from the cache), "not measured" where none come.

mod common;

use cb_mock::{responder, MockServer, Reply};
use common::{eval, read_json, read_jsonl, repo, snapshot, text};
use serde_json::{json, Value};
use std::path::Path;

const ROWS: usize = 6;

/// The four options of fact `i`, the true one at a letter that moves with `i`.
fn options(i: usize) -> Vec<String> {
    let mut o = vec![
        format!("Object {i}"),
        format!("Replaced {i}"),
        "Uncertain".to_string(),
        format!("Other {i}"),
    ];
    o.rotate_left(i % 4);
    o
}

fn letter_of(i: usize, text: &str) -> &'static str {
    ["A", "B", "C", "D"][options(i).iter().position(|o| o == text).unwrap()]
}

fn row(i: usize) -> Value {
    let (object, replaced) = (format!("Object {i}"), format!("Replaced {i}"));
    let conflict = |cause: &str| {
        let mut c = json!({"cause": cause, "claim": format!("Subject {i} has {replaced}."),
               "text": format!("The {cause} evidence of fact {i} says Subject {i} has {replaced}."),
               "style": "news"});
        match cause {
            "temporal" => c["time"] = json!("2031"),
            "semantic" => c["description"] = json!("a namesake"),
            _ => {}
        }
        c
    };
    json!({
        "id": format!("f{i}"),
        "fact": {"subject": format!("Subject {i}"), "subject_id": format!("Q{}", 100 + i),
                 "relation": "occupation", "relation_id": "P106",
                 "object": object, "object_id": format!("Q{}", 200 + i)},
        "replaced_object": replaced,
        "correct": {"claim": format!("Subject {i} has {object}."),
                    "text": format!("The correct evidence of fact {i} says Subject {i} has {object}."),
                    "style": "wikipedia"},
        "conflicts": [conflict("misinformation"), conflict("temporal"), conflict("semantic")],
        "qa": {"question": format!("What is Subject {i}'s occupation?"), "options": options(i),
               "true_label": letter_of(i, &object), "replaced_label": letter_of(i, &replaced),
               "uncertain_label": letter_of(i, "Uncertain")}
    })
}

/// What the scripted model answers for fact `i` when the evidence shown last is `last`
/// (`none`, `correct` or a cause): `T` the true object, `R` the replaced one, `U` the
/// uncertain answer, `X` "I don't know".
fn script(i: usize, last: &str) -> char {
    let table = match last {
        // Fact 3 wrong with no evidence, fact 4 with the correct one, fact 5 with both: only
        // facts 0, 1 and 2 are scored.
        "none" => "TTTRTR",
        "correct" => "TTTTXX",
        "misinformation" => "RRTRRR",
        "temporal" => "UTTUUU",
        "semantic" => "RUXRRR",
        other => panic!("no script for {other}"),
    };
    table.chars().nth(i).unwrap()
}

/// The scripted model: it reads the fact from the question and follows the evidence shown
/// last; it answers with the letter for even facts and with the option's text for odd ones.
/// It sends no log-probabilities (an endpoint that ignores the request).
fn model() -> cb_mock::Responder {
    model_with(false)
}

/// The option probabilities the scripted model gives when the evidence shown last is `last`,
/// the letter it answers first: their entropy in bits is 1.75 (no evidence, the correct one),
/// -(0.7 log2 0.7 + 3 x 0.1 log2 0.1) = 1.3568 (temporal), 2 (the other conflicts).
fn distribution(last: &str) -> [f64; 4] {
    match last {
        "none" | "correct" => [0.5, 0.25, 0.125, 0.125],
        "temporal" => [0.7, 0.1, 0.1, 0.1],
        _ => [0.25; 4],
    }
}

/// The first answer token's top log-probabilities of fact `i` answering `letter` after
/// `last`: the letters as `" A"` for even facts and `"A"` for odd ones, and a token that is
/// no letter, which does not count.
fn logprobs(i: usize, letter: &str, last: &str) -> Vec<(String, f64)> {
    let mut letters = vec![letter];
    letters.extend(["A", "B", "C", "D"].into_iter().filter(|l| *l != letter));
    let space = if i.is_multiple_of(2) { " " } else { "" };
    let mut top: Vec<(String, f64)> = letters
        .iter()
        .zip(distribution(last))
        .map(|(l, p)| (format!("{space}{l}"), p.ln()))
        .collect();
    top.insert(1, ("The".to_string(), 0.001f64.ln()));
    top
}

/// [`model`], sending the top log-probabilities of [`logprobs`] where `with_logprobs`.
fn model_with(with_logprobs: bool) -> cb_mock::Responder {
    responder(move |req| {
        let prompt = req.last_user();
        let i: usize = common::between(prompt, "What is Subject ", "'s")
            .and_then(|s| s.parse().ok())
            .expect("a question");
        let last = ["correct", "misinformation", "temporal", "semantic"]
            .iter()
            .filter_map(|k| {
                prompt
                    .rfind(&format!("The {k} evidence of fact {i}"))
                    .map(|p| (p, *k))
            })
            .max()
            .map_or("none", |(_, k)| k);
        let text = match script(i, last) {
            'T' => format!("Object {i}"),
            'R' => format!("Replaced {i}"),
            'U' => "Uncertain".to_string(),
            _ if with_logprobs => {
                return Reply::WithLogprobs {
                    content: "I don't know.".into(),
                    top_logprobs: logprobs(i, "A", last),
                }
            }
            _ => return Reply::Content("I don't know.".into()),
        };
        let letter = letter_of(i, &text);
        let content = if i.is_multiple_of(2) {
            letter.to_string()
        } else {
            text
        };
        if with_logprobs {
            Reply::WithLogprobs {
                content,
                top_logprobs: logprobs(i, letter, last),
            }
        } else {
            Reply::Content(content)
        }
    })
}

fn write_rows(dir: &Path) -> std::path::PathBuf {
    let build = dir.join("generated/conflictbank");
    std::fs::create_dir_all(build.join("popqa")).unwrap();
    let body: String = (0..ROWS).map(|i| format!("{}\n", row(i))).collect();
    std::fs::write(build.join("popqa/conflictbank.jsonl"), body).unwrap();
    build
}

async fn run(build: &Path, out: &Path, base: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "conflictbank",
        "--data",
        build.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--base-url",
        base,
        "--model",
        "m",
        "--seeds",
        "1",
    ];
    args.extend_from_slice(extra);
    eval(&args).await
}

/// `[correct, replaced, uncertain, memorization ratio]` of a setting in `results.json`.
fn figures(results: &Value, setting: &str) -> [Value; 4] {
    let f = &results["runs"][0]["figures"]["settings"][setting];
    assert!(f.is_object(), "no figures for {setting}: {results}");
    assert_eq!(f["scored"], 3, "{setting}");
    assert_eq!(f["average_entropy"], Value::Null, "{setting}");
    [
        f["correct_accuracy"].clone(),
        f["replaced_accuracy"].clone(),
        f["uncertain_accuracy"].clone(),
        f["memorization_ratio"].clone(),
    ]
}

#[tokio::test]
async fn a_scripted_model_gives_hand_computed_figures_in_both_orders() {
    let tmp = tempfile::tempdir().unwrap();
    let build = write_rows(tmp.path());
    let server = MockServer::start(model()).await;
    let out = tmp.path().join("eval");
    let o = run(&build, &out, &server.base_url(), &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        server.request_count(),
        ROWS * 11,
        "a request a row and setting"
    );
    assert!(text(&o).contains("not measured"), "{}", text(&o));

    let r = read_json(&out.join("results.json"));
    assert_eq!(
        r["entropy"].as_str().unwrap().split(':').next(),
        Some("not measured")
    );
    let run0 = &r["runs"][0];
    assert_eq!(
        (run0["domain"].as_str(), run0["seed"].as_u64()),
        (Some("popqa"), Some(42))
    );
    // The filter: fact 3 is right only with the correct evidence, fact 4 only with none.
    let f = &run0["figures"];
    assert_eq!(
        (f["questions"].as_u64(), f["default_true"].as_u64()),
        (Some(6), Some(4))
    );
    assert_eq!(
        (f["correct_true"].as_u64(), f["scored"].as_u64()),
        (Some(4), Some(3))
    );
    // Over facts 0, 1, 2 (k of 3: round(k / 3 * 100, 2); MR from the rounded accuracies).
    let (third, two_thirds) = (json!(33.33), json!(66.67));
    let (zero, hundred) = (json!(0.0), json!(100.0));
    assert_eq!(
        figures(&r, "default"),
        [hundred.clone(), zero.clone(), zero.clone(), hundred.clone()]
    );
    assert_eq!(figures(&r, "correct"), figures(&r, "default"));
    let misinformation = [
        third.clone(),
        two_thirds.clone(),
        zero.clone(),
        third.clone(),
    ];
    let temporal = [
        two_thirds.clone(),
        zero.clone(),
        third.clone(),
        hundred.clone(),
    ];
    let semantic = [zero.clone(), third.clone(), third.clone(), zero.clone()];
    let all_true = figures(&r, "default");
    for (cause, want) in [
        ("misinformation", &misinformation),
        ("temporal", &temporal),
        ("semantic", &semantic),
    ] {
        assert_eq!(&figures(&r, cause), want, "{cause}");
        // The model follows the evidence shown last: the order matters.
        assert_eq!(
            &figures(&r, &format!("correct_{cause}")),
            want,
            "correct_{cause}"
        );
        assert_eq!(
            figures(&r, &format!("{cause}_correct")),
            all_true,
            "{cause}_correct"
        );
    }

    // The prediction folder: ConflictBank's layout, the export's prompts, and the same
    // figures from `eval conflictbank-predictions`.
    let pred = out.join("popqa/seed-42");
    let export = tmp.path().join("export");
    let prompts = repo().join("prompts");
    let exported = std::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .args([
            "export",
            "conflictbank",
            build.to_str().unwrap(),
            export.to_str().unwrap(),
        ])
        .args(["--prompts", prompts.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(exported.status.success(), "{}", text(&exported));
    for setting in cb_eval::conflictbank::SETTINGS {
        let ours = read_jsonl(&pred.join(format!("{setting}.json")));
        let theirs = read_jsonl(&export.join(format!("popqa/{setting}.json")));
        assert_eq!(ours.len(), ROWS, "{setting}");
        for (a, b) in ours.iter().zip(&theirs) {
            for key in [
                "id",
                "prompt",
                "true_label",
                "replaced_label",
                "uncertain_label",
            ] {
                assert_eq!(a[key], b[key], "{setting} {key}");
            }
        }
    }
    let sem = read_jsonl(&pred.join("semantic.json"));
    assert_eq!(
        sem[2]["prediction"],
        Value::Null,
        "fact 2 says it does not know"
    );
    assert_eq!(
        sem[1]["prediction"],
        json!(letter_of(1, "Uncertain")),
        "read from the text"
    );
    let json_out = tmp.path().join("again.json");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .args([
            "eval",
            "conflictbank-predictions",
            pred.to_str().unwrap(),
            "--json",
        ])
        .arg(&json_out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(read_json(&json_out), run0["figures"]);

    // A second run asks nothing (the cache) and writes the same bytes.
    let before = snapshot(&out);
    let o = run(&build, &out, &server.base_url(), &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        server.request_count(),
        ROWS * 11,
        "the second run made a request"
    );
    assert_eq!(snapshot(&out), before);

    // Fewer settings into the same folder: default and correct still run, the other setting
    // files of the first run go (the folder scores as this run did), and nothing is asked.
    let o = run(
        &build,
        &out,
        &server.base_url(),
        &["--settings", "temporal_correct"],
    )
    .await;
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(server.request_count(), ROWS * 11);
    let mut names: Vec<String> = std::fs::read_dir(&pred)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["correct.json", "default.json", "temporal_correct.json"]
    );
    let r = read_json(&out.join("results.json"));
    assert_eq!(
        r["settings"],
        json!(["default", "correct", "temporal_correct"])
    );
    assert_eq!(figures(&r, "temporal_correct"), all_true);
}

#[tokio::test]
async fn a_folder_without_conflictbank_rows_or_a_kre_flag_exits_2_before_any_file() {
    let tmp = tempfile::tempdir().unwrap();
    let build = tmp.path().join("build");
    std::fs::create_dir_all(build.join("popqa")).unwrap();
    std::fs::write(build.join("popqa/rows.jsonl"), "{}\n").unwrap();
    let server = MockServer::start(model()).await;
    let out = tmp.path().join("eval");
    let before = snapshot(tmp.path());
    let o = run(&build, &out, &server.base_url(), &[]).await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("conflictbank.jsonl"), "{}", text(&o));
    assert!(!out.exists(), "the output folder was made");
    assert_eq!(snapshot(tmp.path()), before, "a file was made");
    // A flag of `eval kre` is refused, not ignored, before any file too.
    let good = write_rows(tmp.path());
    let before = snapshot(tmp.path());
    let o = run(&good, &out, &server.base_url(), &["--hint"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--hint"), "{}", text(&o));
    assert_eq!(snapshot(tmp.path()), before, "a file was made");
    // A dry run writes nothing: not even the output folder it locked.
    let o = run(&good, &out, &server.base_url(), &["--dry-run"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!out.exists(), "a dry run left the output folder");
    assert_eq!(server.request_count(), 0);
}

/// The average entropy of each setting in `results.json`.
fn entropies(results: &Value) -> Vec<(String, Value)> {
    let settings = results["runs"][0]["figures"]["settings"]
        .as_object()
        .unwrap();
    settings
        .iter()
        .map(|(k, f)| (k.clone(), f["average_entropy"].clone()))
        .collect()
}

#[tokio::test]
async fn log_probabilities_sent_give_a_hand_computed_entropy_again_from_the_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let build = write_rows(tmp.path());
    let server = MockServer::start(model_with(true)).await;
    let base = server.base_url();
    let cache = tmp.path().join("cache.sqlite");
    let out = tmp.path().join("eval");
    let with_cache = ["--cache", cache.to_str().unwrap()];
    let o = run(&build, &out, &base, &with_cache).await;
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(server.request_count(), ROWS * 11);
    for entry in server.journal() {
        assert_eq!(
            (&entry.body["logprobs"], &entry.body["top_logprobs"]),
            (&json!(true), &json!(20)),
            "the default asks for the top 20"
        );
    }
    let r = read_json(&out.join("results.json"));
    assert_eq!(
        r["entropy"].as_str().unwrap().split(':').next(),
        Some("measured"),
        "{r}"
    );
    assert_eq!(r["logprobs"], json!(20));
    // Over the scored facts 0, 1, 2, all answering after the same evidence.
    let (settled, temporal, flat) = (json!(1.75), json!(1.36), json!(2.0));
    for (setting, h) in entropies(&r) {
        let last = setting.rsplit('_').next().unwrap();
        let want = match last {
            "default" | "correct" => &settled,
            "temporal" => &temporal,
            _ => &flat,
        };
        assert_eq!(&h, want, "{setting}");
    }
    assert!(text(&o).contains("1.36"), "{}", text(&o));
    // The line's `prob`: the letter answered at 0.5, the rest as scripted, A to D in order.
    let pred = out.join("popqa/seed-42");
    let default = read_jsonl(&pred.join("default.json"));
    let prob = default[1]["prob"].as_object().unwrap();
    assert_eq!(prob.keys().collect::<Vec<_>>(), ["A", "B", "C", "D"]);
    let answered = letter_of(1, "Object 1");
    assert!(
        (prob[answered].as_f64().unwrap() - 0.5).abs() < 1e-6,
        "{prob:?}"
    );
    let sum: f64 = prob.values().map(|p| p.as_f64().unwrap()).sum();
    assert!((sum - 1.0).abs() < 1e-6, "{prob:?}");

    // The same answers from the cache, with nothing asked: the same lines and figures.
    let again = tmp.path().join("again");
    let mut replay = with_cache.to_vec();
    replay.extend(["--backend", "replay"]);
    let o = run(&build, &again, &base, &replay).await;
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        server.request_count(),
        ROWS * 11,
        "the replay made a request"
    );
    let a = read_json(&again.join("results.json"));
    assert_eq!(a["runs"], r["runs"]);
    assert_eq!(a["entropy"], r["entropy"]);
    for setting in cb_eval::conflictbank::SETTINGS {
        let name = format!("popqa/seed-42/{setting}.json");
        assert_eq!(
            std::fs::read(again.join(&name)).unwrap(),
            std::fs::read(out.join(&name)).unwrap(),
            "{name}"
        );
    }

    // `--logprobs 0` asks for none (other cache keys: asked again), and says so.
    let none = tmp.path().join("none");
    let o = run(&build, &none, &base, &["--logprobs", "0"]).await;
    assert!(o.status.success(), "{}", text(&o));
    let journal = server.journal();
    assert_eq!(journal.len(), ROWS * 22);
    assert!(journal[ROWS * 11..]
        .iter()
        .all(|e| e.body.get("logprobs").is_none() && e.body.get("top_logprobs").is_none()));
    let n = read_json(&none.join("results.json"));
    assert!(n["entropy"]
        .as_str()
        .unwrap()
        .starts_with("not measured: --logprobs 0"));
    assert!(entropies(&n).iter().all(|(_, h)| h.is_null()));
    assert!(read_jsonl(&none.join("popqa/seed-42/default.json"))
        .iter()
        .all(|l| l.get("prob").is_none()));
}

#[tokio::test]
async fn an_endpoint_that_sends_no_log_probabilities_leaves_entropy_not_measured() {
    let tmp = tempfile::tempdir().unwrap();
    let build = write_rows(tmp.path());
    let server = MockServer::start(model()).await;
    let out = tmp.path().join("eval");
    let o = run(&build, &out, &server.base_url(), &["--logprobs", "5"]).await;
    assert!(o.status.success(), "{}", text(&o));
    assert!(server
        .journal()
        .iter()
        .all(|e| e.body["top_logprobs"] == json!(5)));
    let r = read_json(&out.join("results.json"));
    let note = r["entropy"].as_str().unwrap();
    assert!(
        note.starts_with("not measured: the endpoint returned no log-probabilities"),
        "{note}"
    );
    assert!(entropies(&r).iter().all(|(_, h)| h.is_null()));
    assert!(read_jsonl(&out.join("popqa/seed-42/correct.json"))
        .iter()
        .all(|l| l.get("prob").is_none()));
    // An endpoint that refuses the field (HTTP 400) is named, with the way out.
    let refusing = MockServer::start(responder(|req| {
        if req.body.get("logprobs").is_some() {
            Reply::bad_request("logprobs is not supported for this model")
        } else {
            Reply::Content("A".into())
        }
    }))
    .await;
    let out = tmp.path().join("refused");
    let o = run(&build, &out, &refusing.base_url(), &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    let note = read_json(&out.join("results.json"))["entropy"].clone();
    let note = note.as_str().unwrap();
    assert!(
        note.starts_with("not measured: 66 of 66 requests were refused with HTTP 400")
            && note.contains("--logprobs 0"),
        "{note}"
    );
    // `--logprobs` is ConflictBank's alone, and held to 0..20: refused, not ignored.
    for (bench, n) in [("recall", "5"), ("conflictbank", "21")] {
        let o = eval(&[
            bench,
            "--base-url",
            &server.base_url(),
            "--model",
            "m",
            "--logprobs",
            n,
        ])
        .await;
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains("--logprobs"), "{}", text(&o));
    }
}
