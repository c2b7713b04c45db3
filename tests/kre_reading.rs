#![allow(clippy::print_stderr)] // the tests print the figures they measure
//! End-to-end tests of `conflictbench build kre` on the reading-comprehension recipes
//! (SQuAD v2.0, MuSiQue): the rows' invariants, the filter counts, answers of a model that
//! break the distractors' schema, and the prompts rendered with real records.

mod common;

use cb_engine::source::{self, SourceOptions};
use cb_engine::Recipe;
use cb_mock::{responder, ChatRequest, MockServer, Reply};
use common::*;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

/// Whether `phrase` occurs in `text` case-insensitively, on word boundaries (written here,
/// independently of the engine's text helpers).
fn mentions(text: &str, phrase: &str) -> bool {
    let (t, p) = (text.to_lowercase(), phrase.trim().to_lowercase());
    if p.is_empty() {
        return false;
    }
    let mut from = 0;
    while let Some(i) = t[from..].find(&p).map(|i| i + from) {
        let e = i + p.len();
        let before = t[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric());
        let after = t[e..].chars().next().is_none_or(|c| !c.is_alphanumeric());
        if before && after {
            return true;
        }
        from = i + t[i..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// Whether one of `a` and `b` holds the other, case and punctuation aside: as whole words,
/// or inside a word where the shorter has at least three letters or digits ("Nederrijn"
/// holds "Rijn", "westward" holds "west", "Germany" holds "German"). Written here,
/// independently of the steps' rule.
fn one_holds_the_other(a: &str, b: &str) -> bool {
    let norm = |s: &str| -> String {
        s.to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty() && !["a", "an", "the"].contains(w))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (a, b) = (norm(a), norm(b));
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.is_empty() {
        return false;
    }
    let whole = format!(" {long} ").contains(&format!(" {short} "));
    whole || (short.chars().filter(|c| c.is_alphanumeric()).count() >= 3 && long.contains(&short))
}

fn letter_index(l: &Value) -> usize {
    (l.as_str().unwrap().as_bytes()[0] - b'A') as usize
}

/// Checks every released row of one built domain; returns the number of rows.
fn check_rows(dir: &Path, domain: &str) -> usize {
    assert_counts_add_up(dir);
    let rows = read_json(&dir.join(format!("{domain}.json")));
    let clean = read_jsonl(&dir.join(format!("{domain}.jsonl")));
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), clean.len());
    for (r, c) in rows.iter().zip(&clean) {
        let choices: Vec<&str> = r["choices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        assert_eq!(choices.len(), 4, "{r}");
        let distinct: HashSet<String> = choices.iter().map(|c| c.to_lowercase()).collect();
        assert_eq!(distinct.len(), 4, "{r}");
        let golden = choices[letter_index(&r["answer"])];
        // No option is the golden answer in another form (issue 48 item 6: "west" for
        // "westward", "Germany" for "German", "Nederrijn" for "Rijn").
        for o in &choices {
            assert!(
                *o == golden || !one_holds_the_other(o, golden),
                "option \"{o}\" holds or is held by the golden answer \"{golden}\": {r}"
            );
        }
        for key in [
            "question",
            "choices",
            "answer",
            "candidate",
            "negative_context",
        ] {
            assert_eq!(c[key], r[key], "clean and released rows differ on {key}");
        }
        assert_ne!(r["candidate"], r["answer"], "{r}");
        assert_eq!(
            r["negative_answer"].as_str().unwrap(),
            choices[letter_index(&r["candidate"])],
            "{r}"
        );
        let negative = r["negative_answer"].as_str().unwrap();
        let neg_ctx = r["negative_context"].as_str().unwrap();
        assert!(
            mentions(r[" golden_context"].as_str().unwrap(), golden) || domain == "musique",
            "{r}"
        );
        assert!(mentions(neg_ctx, negative), "{r}");
        if !mentions(negative, golden) {
            assert!(
                !mentions(neg_ctx, golden),
                "negative context names the answer: {r}"
            );
        }
    }
    rows.len()
}

async fn offline_build(raw: &Path, out: &Path) {
    let o = build(
        &[
            "kre",
            "--domains",
            "squad,musique",
            "--raw",
            raw.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    assert!(o.status.success(), "{}", text(&o));
}

#[tokio::test(flavor = "multi_thread")]
async fn offline_rows_have_four_options_and_a_conflicting_context() {
    let mut sets = vec![("raw".to_owned(), repo().join("raw"))];
    if let Some(d) = shared_data() {
        sets.push(("shared".into(), d));
    }
    for (name, raw) in sets {
        let out = tempfile::tempdir().unwrap();
        offline_build(&raw, out.path()).await;
        for domain in ["squad", "musique"] {
            let dir = out.path().join("kre").join(domain);
            let n = check_rows(&dir, domain);
            assert!(n >= 3, "{name}/{domain}: only {n} rows");
            let m = read_json(&dir.join("manifest.json"));
            assert_eq!(m["offline"], true);
            eprintln!(
                "{name}/{domain}: {n} rows, {} rejected, filtered {}",
                m["rejected"], m["filtered"]
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn filter_counts_on_the_normans_sample_match_the_file() {
    let Some(data) = shared_data() else { return };
    let doc = read_json(&data.join("squad_v2/dev-v2.0.normans.json"));
    let (mut total, mut unanswerable, mut not_in_context) = (0u64, 0u64, 0u64);
    for article in doc["data"].as_array().unwrap() {
        for p in article["paragraphs"].as_array().unwrap() {
            let context = p["context"].as_str().unwrap();
            for q in p["qas"].as_array().unwrap() {
                total += 1;
                if q["is_impossible"].as_bool().unwrap_or(false) {
                    unanswerable += 1;
                } else if !mentions(context, q["answers"][0]["text"].as_str().unwrap()) {
                    not_in_context += 1;
                }
            }
        }
    }
    let out = tempfile::tempdir().unwrap();
    offline_build(&data, out.path()).await;
    let m = read_json(&out.path().join("kre/squad/manifest.json"));
    let mut expect = BTreeMap::new();
    if unanswerable > 0 {
        expect.insert("unanswerable".to_owned(), json!(unanswerable));
    }
    if not_in_context > 0 {
        expect.insert("answer_not_in_context".to_owned(), json!(not_in_context));
    }
    let filtered: BTreeMap<String, Value> = m["filtered"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(filtered, expect);
    let read = m["stages"][0]["in"].as_u64().unwrap();
    assert_eq!(read, total);
    let filter = m["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "filter")
        .unwrap();
    assert_eq!(
        filter["out"].as_u64().unwrap(),
        total - unanswerable - not_in_context
    );
    eprintln!(
        "normans: {total} questions, {unanswerable} unanswerable, {not_in_context} answer not in context, {} rows",
        m["rows"]
    );
}

/// A SQuAD v2.0 document with one answerable question per case name.
fn write_squad(raw: &Path, cases: &[&str]) {
    let paragraphs: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let context = format!(
                "The town of Case{i} was founded by Alice Smith in 1820. Alice Smith also built its first bridge, which still stands."
            );
            json!({
                "context": context,
                "qas": [{
                    "id": format!("q{i:03}"),
                    "question": format!("Case {c}: who founded the town of Case{i}?"),
                    "answers": [{"text": "Alice Smith", "answer_start": 31}],
                    "is_impossible": false
                }]
            })
        })
        .collect();
    let doc = json!({"version": "v2.0", "data": [{"title": "Towns", "paragraphs": paragraphs}]});
    let dir = raw.join("squad_v2");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("dev-v2.0.json"), doc.to_string()).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn off_schema_distractors_end_in_rejects_and_the_rest_are_rows() {
    let cases = [
        "ok1",
        "badjson",
        "ok2",
        "twooptions",
        "sameasanswer",
        "ok3",
        "parrot",
    ];
    let raw = tempfile::tempdir().unwrap();
    write_squad(raw.path(), &cases);
    let mock = MockServer::start(responder(|req| {
        let all = all_text(req);
        let case = between(&all, "Case ", ":").unwrap_or("").to_owned();
        if all.contains("misleading options") {
            let repair = req.last_user();
            return Reply::content(match case.as_str() {
                // Sends our repair message back as its second answer: echo, not an answer.
                "parrot" if repair.starts_with("That answer cannot be used") => repair,
                "parrot" => r#"{"options": ["Bob Jones"]}"#,
                "badjson" => r#"{"options": ["Bob Jones", "Carol"#,
                "twooptions" => r#"{"options": ["Bob Jones", "Carol White"]}"#,
                "sameasanswer" => r#"{"options": ["Bob Jones", "alice smith", "Dan Brown"]}"#,
                _ => "```json\n{\"options\": [\"Bob Jones\", \"Carol White\", \"Dan Brown\"]}\n```",
            });
        }
        rewritten(&all)
    }))
    .await;
    let out = tempfile::tempdir().unwrap();
    let base = mock.base_url();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let recipes = squad_recipe_with("repair", 1);
    let o = build_with(recipes.path(), &openai_args("squad", &base, r, o), &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    let dir = out.path().join("kre/squad");
    assert_eq!(check_rows(&dir, "squad"), 3);
    let rows = read_json(&dir.join("squad.json"));
    for r in rows.as_array().unwrap() {
        assert!(r["question"].as_str().unwrap().contains(": who founded"));
        assert!(["Bob Jones", "Carol White", "Dan Brown"]
            .contains(&r["negative_answer"].as_str().unwrap()));
    }
    let rejects = read_jsonl(&dir.join("rejects.jsonl"));
    assert_eq!(rejects.len(), 4, "{rejects:?}");
    let by_id: BTreeMap<&str, &Value> = rejects
        .iter()
        .map(|r| (r["id"].as_str().unwrap(), r))
        .collect();
    for (i, reason, raw_part) in [
        (1, "bad_json", r#"["Bob Jones", "Carol"#),
        (3, "bad_options", r#"["Bob Jones", "Carol White"]"#),
        (4, "bad_options", "alice smith"),
        (
            6,
            "prompt_echo",
            "Answer again, following the instructions exactly",
        ),
    ] {
        let r = by_id[format!("q{i:03}").as_str()];
        assert_eq!(r["stage"], "distractors", "{r}");
        assert_eq!(r["reason"], reason, "{r}");
        assert_eq!(r["attempts"], 2, "sent back once with the reason: {r}");
        assert!(
            r["raw_response"].as_str().unwrap().contains(raw_part),
            "{r}"
        );
    }
    let m = read_json(&dir.join("manifest.json"));
    assert_eq!(m["backend"], "openai");
    // 3 good items: 2 calls each; 4 bad ones: 2 distractors attempts each; and the two
    // probes of `--structured auto` (json-schema, then json-object) to a mock that ignores
    // `response_format`, after which the schema goes in the prompt only.
    assert_eq!(mock.request_count(), 14 + 2);
}

/// A mock model's `negative_context`: the passage of the prompt, the answer replaced.
fn rewritten(prompt: &str) -> Reply {
    Reply::content(rewrite(prompt))
}

/// The text of [`rewritten`].
fn rewrite(prompt: &str) -> String {
    let passage = between(prompt, "<<<\n", "\n>>>").unwrap_or_default();
    let answer = between(prompt, "Correct answer: \"", "\"").unwrap_or_default();
    let negative = between(prompt, "Replacement answer: \"", "\"").unwrap_or_default();
    passage.replace(answer, negative)
}

/// The bundled SQuAD recipe in a folder of its own, its `distractors` step asking again
/// `retries` times after an unusable answer, in the way `on_invalid` says.
fn squad_recipe_with(on_invalid: &str, retries: u32) -> tempfile::TempDir {
    let bundled = std::fs::read_to_string(repo().join("recipes/kre-squad.toml")).unwrap();
    let bundled_retry = "on_invalid = \"resample\"\nretries_on_invalid = 3\n";
    assert!(bundled.contains(bundled_retry), "{bundled}");
    let recipe = bundled.replacen(
        bundled_retry,
        &format!("on_invalid = \"{on_invalid}\"\nretries_on_invalid = {retries}\n"),
        1,
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("kre-squad.toml"), recipe).unwrap();
    dir
}

/// `on_invalid = "resample"`: an unusable answer is not sent back; the same question is asked
/// afresh with the next seed and a note saying why the last answer was refused, each try its
/// own cache entry, so a re-run sends nothing.
#[tokio::test(flavor = "multi_thread")]
async fn resampling_asks_the_same_question_with_the_next_seed() {
    let cases = ["ok", "third", "never"];
    let raw = tempfile::tempdir().unwrap();
    write_squad(raw.path(), &cases);
    let recipes = squad_recipe_with("resample", 2);
    let mock = MockServer::start(responder(|req| {
        let all = all_text(req);
        if all.contains("misleading options") {
            let case = between(&all, "Case ", ":").unwrap_or("").to_owned();
            let seed = req.body.get("seed").and_then(Value::as_u64);
            let good = match case.as_str() {
                "ok" => true,
                "third" => seed == Some(2),
                _ => false,
            };
            return Reply::content(if good {
                r#"{"options": ["Bob Jones", "Carol White", "Dan Brown"]}"#
            } else {
                r#"{"options": ["Bob Jones"]}"#
            });
        }
        rewritten(&all)
    }))
    .await;
    let out = tempfile::tempdir().unwrap();
    let base = mock.base_url();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let args = openai_args("squad", &base, r, o);
    let first = build_with(recipes.path(), &args, &[]).await;
    assert!(first.status.success(), "{}", text(&first));
    let dir = out.path().join("kre/squad");
    assert_eq!(check_rows(&dir, "squad"), 2);

    let requests: Vec<ChatRequest> = mock
        .journal()
        .into_iter()
        .map(|e| ChatRequest::new(e.body))
        .collect();
    let seeds: Vec<(String, Option<u64>)> = requests
        .iter()
        .filter_map(|r| {
            let all = all_text(r);
            let case = between(&all, "Case ", ":")?.to_owned();
            all.contains("misleading options")
                .then(|| (case, r.body.get("seed").and_then(Value::as_u64)))
        })
        .collect();
    for (case, want) in [
        ("ok", vec![None]),
        ("third", vec![None, Some(1), Some(2)]),
        ("never", vec![None, Some(1), Some(2)]),
    ] {
        let mut got: Vec<Option<u64>> = seeds
            .iter()
            .filter(|(c, _)| c == case)
            .map(|(_, s)| *s)
            .collect();
        got.sort();
        assert_eq!(got, want, "{case}: {seeds:?}");
    }
    for r in &requests {
        assert!(
            r.messages.iter().all(|(_, c)| !c.contains("Bob Jones")
                && !c.contains("That answer cannot be used")),
            "a resample does not send the answer back: {:?}",
            r.messages
        );
        // The reason, where there was one: after the question, in the same message.
        let again = r.body.get("seed").is_some_and(|s| !s.is_null());
        let note = "\n\nAn earlier answer to this request could not be used: bad_options: expected exactly 3 options, got 1. Answer afresh";
        if all_text(r).contains("misleading options") {
            assert_eq!(r.last_user().contains(note), again, "{:?}", r.messages);
        }
    }
    let rejects = read_jsonl(&dir.join("rejects.jsonl"));
    assert_eq!(rejects.len(), 1, "{rejects:?}");
    assert_eq!(rejects[0]["reason"], "bad_options");
    assert_eq!(rejects[0]["attempts"], 3);
    let rows = read_jsonl(&dir.join("squad.jsonl"));
    let third = rows
        .iter()
        .find(|r| r["question"].as_str().unwrap().starts_with("Case third"))
        .unwrap();
    let attempts: Vec<u64> = third["lineage"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["step"] == "distractors")
        .map(|c| c["attempt"].as_u64().unwrap())
        .collect();
    assert_eq!(attempts, [1, 2, 3], "{third}");

    let before = snapshot(&dir);
    let sent = mock.request_count();
    let again = build_with(recipes.path(), &args, &[]).await;
    assert!(again.status.success(), "{}", text(&again));
    assert_eq!(mock.request_count(), sent, "every try came from the cache");
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn prompts_carry_the_question_the_answer_and_the_context() {
    let env = cb_step::template::environment();
    for domain in ["squad", "musique"] {
        let recipes = cb_engine::Files::Dir(repo().join("recipes"));
        let recipe = Recipe::load(&recipes, &format!("kre-{domain}.toml")).unwrap();
        let loaded = source::load(
            &recipe,
            &SourceOptions {
                raw: repo().join("raw"),
                ..Default::default()
            },
        )
        .unwrap();
        let item = loaded
            .entries
            .iter()
            .find_map(|e| e.as_ref().ok())
            .expect("a real record");
        let mut vars = item.fields.clone();
        vars.insert("negative_answer".into(), json!("Zanzibar"));
        let vars = minijinja::Value::from_serialize(&vars);
        for name in ["kre/distractors.md", "kre/rewrite_context.md"] {
            let prompts = cb_step::Files::Dir(repo().join("prompts"));
            let p = cb_step::Prompt::load(&prompts, name).unwrap();
            let messages = p.render(&env, &vars).unwrap();
            assert_eq!(messages[0].role, "system", "{name}");
            let user = &messages.last().unwrap().content;
            for (what, v) in [
                ("question", item.get_text("question").unwrap()),
                ("answer", item.get_text("answer_text").unwrap()),
                ("context", item.get_text("golden_context").unwrap()),
            ] {
                assert!(!v.is_empty());
                assert!(user.contains(v), "{domain} {name}: no {what} in\n{user}");
            }
            if name.contains("rewrite") {
                assert!(user.contains("\"Zanzibar\""), "{user}");
            } else {
                assert!(user.contains(r#"key is "options""#), "{user}");
            }
        }
    }
}

/// The negative answer is never an option that already stands in the passage (the rewrite
/// would name it twice, in two roles); when all three do, the item is rejected
/// (`negative_in_context`). An answer SQuAD's annotators gave instead of the first one is
/// shown to the model as such, never an option, and noted on the row (`answers_disagree`).
#[tokio::test(flavor = "multi_thread")]
async fn negatives_already_in_the_passage_and_answers_in_dispute() {
    let cases = ["twoin", "allin", "disputed"];
    let raw = tempfile::tempdir().unwrap();
    write_squad(raw.path(), &cases);
    let file = raw.path().join("squad_v2/dev-v2.0.json");
    let mut doc = read_json(&file);
    doc["data"][0]["paragraphs"][2]["qas"][0]["answers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"text": "Bob Jones", "answer_start": 0}));
    std::fs::write(&file, doc.to_string()).unwrap();
    let mock = MockServer::start(responder(|req| {
        let all = all_text(req);
        let case = between(&all, "Case ", ":").unwrap_or("").to_owned();
        if all.contains("misleading options") {
            let again = req.last_user().starts_with("That answer cannot be used");
            return Reply::content(match case.as_str() {
                "twoin" => r#"{"options": ["1820", "first bridge", "Dan Brown"]}"#,
                "allin" => r#"{"options": ["1820", "first bridge", "Case1"]}"#,
                "disputed" if again => r#"{"options": ["Eve Adams", "Carol White", "Dan Brown"]}"#,
                _ => r#"{"options": ["Bob Jones", "Carol White", "Dan Brown"]}"#,
            });
        }
        rewritten(&all)
    }))
    .await;
    let out = tempfile::tempdir().unwrap();
    let base = mock.base_url();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let recipes = squad_recipe_with("repair", 1);
    let o = build_with(recipes.path(), &openai_args("squad", &base, r, o), &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    let dir = out.path().join("kre/squad");
    assert_eq!(check_rows(&dir, "squad"), 2);
    let rows = read_jsonl(&dir.join("squad.jsonl"));
    assert_eq!(rows[0]["source_id"], "q000");
    assert_eq!(rows[0]["negative_answer"], "Dan Brown", "{}", rows[0]);
    assert_eq!(rows[0]["warnings"], json!([]));
    assert_eq!(rows[1]["source_id"], "q002");
    let notes = rows[1]["warnings"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{notes:?}");
    let note = notes[0].as_str().unwrap();
    assert!(
        note.starts_with("answers_disagree: ") && note.contains("\"Bob Jones\""),
        "{note}"
    );
    let choices = rows[1]["choices"].as_array().unwrap();
    assert!(choices.contains(&json!("Eve Adams")) && !choices.contains(&json!("Bob Jones")));
    let rejects = read_jsonl(&dir.join("rejects.jsonl"));
    assert_eq!(rejects.len(), 1, "{rejects:?}");
    assert_eq!(rejects[0]["id"], "q001");
    assert_eq!(rejects[0]["stage"], "distractors");
    assert_eq!(
        rejects[0]["reason"], "negative_in_context",
        "{}",
        rejects[0]
    );
    // The disputed answer reached the model as another accepted answer, not a form.
    let asked: Vec<String> = mock
        .journal()
        .into_iter()
        .map(|e| all_text(&ChatRequest::new(e.body)))
        .filter(|t| t.contains("Case disputed") && t.contains("misleading options"))
        .collect();
    assert!(!asked.is_empty());
    for t in &asked {
        assert!(
            t.contains("Other answers the dataset accepts (do not use them as options either): \"Bob Jones\""),
            "{t}"
        );
        assert!(!t.contains("written in other ways"), "{t}");
    }
}

/// A rewrite that replaces the one mention of a list answer but keeps a sentence naming one
/// of its parts on its own (the SQuAD row of QUALITY.md's capable-model rating that a
/// majority called only "somewhat misleading") is refused as `states_golden`, naming the
/// part; the bundled recipe's resample sends that reason with the next draw, without the
/// refused answer, and a second answer that rewrites the part too keeps the row.
#[tokio::test(flavor = "multi_thread")]
async fn a_part_of_a_list_answer_left_in_the_rewrite_is_sent_back_with_the_resample() {
    const ANSWER: &str = "analysis of algorithms and computability theory";
    const PART: &str = "analysis of algorithms";
    let context = format!(
        "Closely related fields in theoretical computer science are {ANSWER}. A key distinction between {PART} and computational complexity theory is that the former is devoted to analyzing the amount of resources needed by a particular algorithm to solve a problem."
    );
    let doc = json!({"version": "v2.0", "data": [{"title": "Computational_complexity_theory", "paragraphs": [{
        "context": context,
        "qas": [{
            "id": "q000",
            "question": "What two fields of theoretical computer science closely mirror computational complexity theory?",
            "answers": [{"text": ANSWER, "answer_start": context.find(ANSWER)}],
            "is_impossible": false
        }]
    }]}]});
    let raw = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(raw.path().join("squad_v2")).unwrap();
    std::fs::write(raw.path().join("squad_v2/dev-v2.0.json"), doc.to_string()).unwrap();
    const NOTE: &str = "An earlier answer to this request could not be used: ";
    let mock = MockServer::start(responder(|req| {
        let all = all_text(req);
        if all.contains("misleading options") {
            return Reply::content(
                r#"{"options": ["automata theory and formal language theory", "graph theory and combinatorics", "numerical analysis and scientific computing"]}"#,
            );
        }
        let first = rewrite(&all);
        if !req.last_user().contains(NOTE) {
            return Reply::content(first);
        }
        // Told which part is left, a model rewrites it too.
        let negative = between(&all, "Replacement answer: \"", "\"").unwrap_or_default();
        Reply::content(first.replace(PART, negative))
    }))
    .await;
    let out = tempfile::tempdir().unwrap();
    let base = mock.base_url();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let built = build(&openai_args("squad", &base, r, o), &[]).await;
    assert!(built.status.success(), "{}", text(&built));
    let dir = out.path().join("kre/squad");
    assert_eq!(check_rows(&dir, "squad"), 1);
    assert!(read_jsonl(&dir.join("rejects.jsonl")).is_empty());
    let row = &read_jsonl(&dir.join("squad.jsonl"))[0];
    let negative = row["negative_answer"].as_str().unwrap();
    let neg_ctx = row["negative_context"].as_str().unwrap();
    assert!(!mentions(neg_ctx, PART), "{neg_ctx}");
    let attempts: Vec<u64> = row["lineage"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["step"] == "negative_context")
        .map(|c| c["attempt"].as_u64().unwrap())
        .collect();
    assert_eq!(attempts, [1, 2], "{row}");

    let rewrites: Vec<ChatRequest> = mock
        .journal()
        .into_iter()
        .map(|e| ChatRequest::new(e.body))
        .filter(|r| all_text(r).contains("Replacement answer:"))
        .collect();
    assert_eq!(rewrites.len(), 2);
    assert!(!rewrites[0].last_user().contains(NOTE));
    let again = &rewrites[1];
    // A new draw: the next seed, the same conversation (the refused answer is not in it).
    assert_eq!(again.body.get("seed").and_then(Value::as_u64), Some(1));
    assert_eq!(again.messages.len(), rewrites[0].messages.len());
    assert_eq!(
        again.messages[..again.messages.len() - 1],
        rewrites[0].messages[..again.messages.len() - 1]
    );
    let note = again.last_user().split(NOTE).nth(1).unwrap();
    assert!(
        note.starts_with(&format!(
            "states_golden: the negative context still names \"{PART}\", a part of the golden answer \"{ANSWER}\""
        )),
        "{note}"
    );
    assert!(!negative.contains(PART));
}

/// SQuAD's annotators often mark a shorter span of the same answer ("tidal" for "tidal
/// delta"), a word the passage also uses for other things ("tidal currents"). The bundled
/// recipe's rewrite forms are only the fuller writings of the answer ("the city of Nijmegen"
/// for "Nijmegen"): a rewrite that replaces the answer and keeps "tidal currents" word for
/// word is a row at the first try, and neither prompt lists the shorter span as another
/// writing of the answer, while a fuller one is listed to both.
#[tokio::test(flavor = "multi_thread")]
async fn a_shorter_span_among_the_answers_is_no_form_to_rewrite_and_a_fuller_one_is() {
    let context = "The delta of the Rhine is a tidal delta, shaped by the sediment of its rivers and by tidal currents. Before the dams were built, the tide was felt inland up to the city of Nijmegen.";
    let qa = |id: &str, question: &str, answers: &[&str]| {
        let answers: Vec<Value> = answers
            .iter()
            .map(|a| json!({"text": a, "answer_start": context.find(a).unwrap()}))
            .collect();
        json!({"id": id, "question": question, "answers": answers, "is_impossible": false})
    };
    let doc = json!({"version": "v2.0", "data": [{"title": "Rhine", "paragraphs": [{
        "context": context,
        "qas": [
            qa("q000", "What type of delta is the delta of the Rhine?", &["tidal delta", "tidal", "tidal delta"]),
            qa("q001", "Up to where was the tide felt before the dams?", &["Nijmegen", "the city of Nijmegen"]),
        ]
    }]}]});
    let raw = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(raw.path().join("squad_v2")).unwrap();
    std::fs::write(raw.path().join("squad_v2/dev-v2.0.json"), doc.to_string()).unwrap();
    let mock = MockServer::start(responder(|req| {
        let all = all_text(req);
        if all.contains("misleading options") {
            return Reply::content(if all.contains("type of delta") {
                r#"{"options": ["river delta", "wave delta", "inland delta"]}"#
            } else {
                r#"{"options": ["Arnhem", "Utrecht", "Zwolle"]}"#
            });
        }
        rewritten(&all)
    }))
    .await;
    let out = tempfile::tempdir().unwrap();
    let base = mock.base_url();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let built = build(&openai_args("squad", &base, r, o), &[]).await;
    assert!(built.status.success(), "{}", text(&built));
    let dir = out.path().join("kre/squad");
    assert_eq!(check_rows(&dir, "squad"), 2);
    assert!(read_jsonl(&dir.join("rejects.jsonl")).is_empty());
    let rows = read_jsonl(&dir.join("squad.jsonl"));
    let delta = &rows[0];
    assert_eq!(delta["source_id"], "q000");
    let neg_ctx = delta["negative_context"].as_str().unwrap();
    assert!(neg_ctx.contains("and by tidal currents."), "{neg_ctx}");
    assert!(!mentions(neg_ctx, "tidal delta"), "{neg_ctx}");
    assert_eq!(delta["warnings"], json!([]), "{delta}");
    for row in &rows {
        let attempts = row["lineage"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["step"] == "negative_context")
            .count();
        assert_eq!(attempts, 1, "{row}");
    }
    let asked: Vec<String> = mock
        .journal()
        .into_iter()
        .map(|e| all_text(&ChatRequest::new(e.body)))
        .filter(|t| t.contains("Correct answer:"))
        .collect();
    let (delta_asks, city_asks): (Vec<&String>, Vec<&String>) =
        asked.iter().partition(|t| t.contains("type of delta"));
    assert_eq!((delta_asks.len(), city_asks.len()), (2, 2), "{asked:?}");
    for t in delta_asks {
        assert!(
            !t.contains("\"tidal\"")
                && !t.contains("other ways")
                && !t.contains("also write it as"),
            "{t}"
        );
    }
    for t in city_asks {
        assert!(t.contains("\"the city of Nijmegen\""), "{t}");
    }
}

/// The reading-comprehension template `kre-squad-believable` (issue 48): after the model's
/// three options, the model is shown the paragraph with them and names the one the rewritten
/// paragraph could make most believable, which becomes the negative answer the rewrite uses;
/// "none" refuses the row (`no_believable_negative`) before any rewrite is asked.
#[tokio::test(flavor = "multi_thread")]
async fn a_reading_recipe_can_pick_the_option_the_rewritten_passage_could_fit() {
    let raw = tempfile::tempdir().unwrap();
    write_squad(raw.path(), &["fit", "none"]);
    let recipes = tempfile::tempdir().unwrap();
    std::fs::copy(
        repo().join("recipes/kre-squad-believable.toml"),
        recipes.path().join("kre-squad-believable.toml"),
    )
    .unwrap();
    let mock = MockServer::start(responder(|req| {
        let all = all_text(req);
        let case = between(&all, "Case ", ":").unwrap_or("").to_owned();
        if all.contains("misleading options") {
            return Reply::content(r#"{"options": ["Bob Jones", "Carol White", "Dan Brown"]}"#);
        }
        if all.contains("rewritten to say it in place of the correct answer") {
            if case == "none" {
                return Reply::content(r#"{"option": "none"}"#);
            }
            let last = req.last_user();
            let letter = last
                .lines()
                .find_map(|l| l.strip_suffix(". Carol White"))
                .expect("the options are listed with their letters");
            return Reply::content(format!(r#"{{"option": "{letter}"}}"#));
        }
        rewritten(&all)
    }))
    .await;
    let out = tempfile::tempdir().unwrap();
    let base = mock.base_url();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let args = openai_args("squad-believable", &base, r, o);
    let built = build_with(recipes.path(), &args, &[]).await;
    assert!(built.status.success(), "{}", text(&built));
    let dir = out.path().join("kre/squad-believable");
    assert_counts_add_up(&dir);
    let rows = read_jsonl(&dir.join("squad-believable.jsonl"));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["negative_answer"], "Carol White", "{}", rows[0]);
    assert!(rows[0]["negative_context"]
        .as_str()
        .unwrap()
        .contains("founded by Carol White"));
    let rejects = read_jsonl(&dir.join("rejects.jsonl"));
    assert_eq!(rejects.len(), 1, "{rejects:?}");
    assert_eq!(rejects[0]["stage"], "pick_negative");
    assert_eq!(rejects[0]["reason"], "no_believable_negative");
    // The pick saw the paragraph; no rewrite was asked for the refused row.
    let asked: Vec<String> = mock
        .journal()
        .into_iter()
        .map(|e| all_text(&ChatRequest::new(e.body)))
        .collect();
    let picks: Vec<&String> = asked
        .iter()
        .filter(|a| a.contains("rewritten to say it in place of the correct answer"))
        .collect();
    assert_eq!(picks.len(), 2);
    assert!(picks
        .iter()
        .all(|a| a.contains("was founded by Alice Smith in 1820")));
    assert!(!asked
        .iter()
        .any(|a| a.contains("Case none") && a.contains("Replacement answer")));
}

/// MuSiQue records, one per case name, each a two-hop question over two supporting
/// paragraphs whose answer is "Alice Smith".
fn write_musique(raw: &Path, cases: &[&str]) {
    let lines: Vec<String> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({
                "id": format!("2hop__{i}"),
                "question": format!("Case {c}: who founded the town where the Case{i} bridge stands?"),
                "answer": "Alice Smith",
                "answer_aliases": [],
                "answerable": true,
                "paragraphs": [
                    {"idx": 0, "title": "Case bridge", "paragraph_text": format!("The Case{i} bridge stands in the town of Millford{i}."), "is_supporting": true},
                    {"idx": 1, "title": "Millford", "paragraph_text": format!("The town of Millford{i} was founded by Alice Smith in 1820."), "is_supporting": true}
                ],
                "question_decomposition": [
                    {"id": 1, "question": "where does the bridge stand?", "answer": "Millford", "paragraph_support_idx": 0},
                    {"id": 2, "question": "who founded it?", "answer": "Alice Smith", "paragraph_support_idx": 1}
                ]
            })
            .to_string()
        })
        .collect();
    let dir = raw.join("musique");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("musique_ans_v1.0_dev.jsonl"),
        lines.join("\n") + "\n",
    )
    .unwrap();
}

/// The MuSiQue template `kre-musique-believable` (issue 48, run 4: rewrites of facts a rater
/// knows, "Gorbachev" as Russia's first president, were called only "somewhat" plausible):
/// the believable pick is shown the supporting paragraphs and asked, in its own prompt, to
/// answer "none" when the correct answer is a fact an educated reader knows by heart; such a
/// row is refused `no_believable_negative` before any rewrite is asked, and a picked option
/// becomes the negative answer the rewrite uses. `build kre` alone still builds MuSiQue with
/// KRE's seeded pick (the alternate is not a default domain).
#[tokio::test(flavor = "multi_thread")]
async fn musique_can_refuse_a_question_whose_answer_an_educated_reader_knows() {
    let raw = tempfile::tempdir().unwrap();
    write_musique(raw.path(), &["obscure", "famous"]);
    let recipes = tempfile::tempdir().unwrap();
    for name in ["kre-musique.toml", "kre-musique-believable.toml"] {
        std::fs::copy(repo().join("recipes").join(name), recipes.path().join(name)).unwrap();
    }
    let mock = MockServer::start(responder(|req| {
        let all = all_text(req);
        let case = between(&all, "Case ", ":").unwrap_or("").to_owned();
        if all.contains("misleading options") {
            return Reply::content(r#"{"options": ["Bob Jones", "Carol White", "Dan Brown"]}"#);
        }
        if all.contains("rewritten to say it in place of the correct answer") {
            // A model that follows the prompt: the famous case's answer is "known by heart".
            if case == "famous" && all.contains("a fact an educated reader knows by heart") {
                return Reply::content(r#"{"option": "none"}"#);
            }
            let letter = req
                .last_user()
                .lines()
                .find_map(|l| l.strip_suffix(". Carol White"))
                .expect("the options are listed with their letters")
                .to_owned();
            return Reply::content(format!(r#"{{"option": "{letter}"}}"#));
        }
        rewritten(&all)
    }))
    .await;
    let out = tempfile::tempdir().unwrap();
    let base = mock.base_url();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let args = openai_args("musique-believable", &base, r, o);
    let built = build_with(recipes.path(), &args, &[]).await;
    assert!(built.status.success(), "{}", text(&built));
    let dir = out.path().join("kre/musique-believable");
    assert_counts_add_up(&dir);
    let rows = read_jsonl(&dir.join("musique-believable.jsonl"));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(rows[0]["question"]
        .as_str()
        .unwrap()
        .starts_with("Case obscure"));
    assert_eq!(rows[0]["negative_answer"], "Carol White", "{}", rows[0]);
    assert!(rows[0]["negative_context"]
        .as_str()
        .unwrap()
        .contains("founded by Carol White"));
    let rejects = read_jsonl(&dir.join("rejects.jsonl"));
    assert_eq!(rejects.len(), 1, "{rejects:?}");
    assert_eq!(rejects[0]["stage"], "pick_negative");
    assert_eq!(rejects[0]["reason"], "no_believable_negative");
    // The pick saw both supporting paragraphs; no rewrite was asked for the refused row.
    let asked: Vec<String> = mock
        .journal()
        .into_iter()
        .map(|e| all_text(&ChatRequest::new(e.body)))
        .collect();
    let picks: Vec<&String> = asked
        .iter()
        .filter(|a| a.contains("rewritten to say it in place of the correct answer"))
        .collect();
    assert_eq!(picks.len(), 2);
    assert!(picks.iter().all(
        |a| a.contains("bridge stands in the town") && a.contains("was founded by Alice Smith")
    ));
    assert!(!asked
        .iter()
        .any(|a| a.contains("Case famous") && a.contains("Replacement answer")));
    // The regeneration recipe is the default MuSiQue domain and asks no pick.
    let recipes = cb_engine::load_recipes(&cb_engine::Files::Dir(recipes.path().into())).unwrap();
    let defaults: Vec<&str> = recipes
        .iter()
        .filter(|r| r.default)
        .map(|r| r.domain.as_str())
        .collect();
    assert_eq!(defaults, ["musique"]);
}

/// With `--strict`, a malformed record stops the build only within `--limit`: past it the
/// record is read once, to fill the distractors' pool of golden answers, and stops nothing.
#[tokio::test]
async fn a_malformed_record_past_the_limit_stops_no_strict_build() {
    let raw = tempfile::tempdir().unwrap();
    let dir = raw.path().join("musique");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("musique_ans_v1.0_dev.jsonl");
    let lines: Vec<String> =
        std::fs::read_to_string(repo().join("raw/musique").join(file.file_name().unwrap()))
            .unwrap()
            .lines()
            .enumerate()
            .map(|(i, l)| {
                if i == 3 {
                    l[..l.len() / 2].to_owned()
                } else {
                    l.to_owned()
                }
            })
            .collect();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let out = tempfile::tempdir().unwrap();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let args = [
        "kre",
        "--domains",
        "musique",
        "--raw",
        r,
        "--out",
        o,
        "--strict",
    ];
    let stopped = build(&args, &[]).await;
    assert_eq!(stopped.status.code(), Some(1), "{}", text(&stopped));
    assert!(
        text(&stopped).contains("musique_ans_v1.0_dev.jsonl:4"),
        "{}",
        text(&stopped)
    );
    let limited = build(&[&args[..], &["--limit", "3"]].concat(), &[]).await;
    assert!(limited.status.success(), "{}", text(&limited));
    assert_counts_add_up(&out.path().join("kre/musique"));
}
