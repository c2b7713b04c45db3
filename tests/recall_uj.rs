//! RECALL scientific domain (UJ) end to end: the rows' invariants on offline builds of both
//! reader forms, and, with the mock server in the model's place, determinism at any
//! concurrency and faults that end in rejects.

mod common;
#[path = "common/recall.rs"]
mod recall;

use cb_mock::{responder, ChatRequest, MockServer, Reply};
use common::*;
use serde_json::{json, Value};
use std::path::Path;

#[tokio::test]
async fn offline_builds_keep_the_row_invariants_and_both_forms_agree() {
    let tmp = tempfile::tempdir().unwrap();
    let raw = repo().join("raw");
    let jsonl_out = tmp.path().join("jsonl");
    let jsonl_input = format!("uj={}", raw.join("uj/uj.jsonl").display());
    for args in [
        vec![
            "recall",
            "--domains",
            "uj",
            "--raw",
            raw.to_str().unwrap(),
            "--out",
            tmp.path().to_str().unwrap(),
        ],
        vec![
            "recall",
            "--domains",
            "uj",
            "--input",
            &jsonl_input,
            "--out",
            jsonl_out.to_str().unwrap(),
        ],
    ] {
        let o = build(&args, &[]).await;
        assert!(o.status.success(), "{}", text(&o));
    }
    let dir = tmp.path().join("recall/uj");
    let (a, na, tg) = recall::check_dir(&dir);
    assert_counts_add_up(&dir);
    let m = read_json(&dir.join("manifest.json"));
    assert_eq!(m["offline"], true);
    // raw/uj: 16 terms, one with four sentences.
    assert_eq!(m["filtered"]["fewer_than_five_sentences"], 1, "{m}");
    assert_eq!(m["rows"].as_u64().unwrap() as usize, a);
    assert_eq!((a, tg), (15, 15));
    // Two QA-NA rows a term: word-grained and sentence-grained.
    assert_eq!(na, 2 * a);
    let domains: std::collections::BTreeSet<String> = read_jsonl(&dir.join("qa_a.jsonl"))
        .iter()
        .map(|r| r["domain"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        domains.into_iter().collect::<Vec<_>>(),
        ["cs", "math", "phy"]
    );
    let card = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(card.contains("Offline build") && card.contains("text_generation.jsonl"));

    // The JSON-lines form of the same terms gives the same rows, but for the origin (file
    // and line).
    let strip = |rows: Vec<Value>| -> Vec<Value> {
        rows.into_iter()
            .map(|mut r| {
                r.as_object_mut().unwrap().remove("origin");
                r
            })
            .collect()
    };
    let jsonl = jsonl_out.join("recall/uj");
    recall::check_dir(&jsonl);
    for f in ["qa_a.jsonl", "qa_na.jsonl", "text_generation.jsonl"] {
        assert_eq!(
            strip(read_jsonl(&dir.join(f))),
            strip(read_jsonl(&jsonl.join(f))),
            "{f}"
        );
    }
}

/// The prompt's text between `<<<` and `>>>` after `label`.
fn block<'a>(all: &'a str, label: &str) -> &'a str {
    let rest = &all[all.find(label).unwrap()..];
    between(rest, "<<<\n", "\n>>>").unwrap()
}

/// A stand-in model for the UJ prompts, deterministic in the prompt. Faults by term:
/// `stack` gets broken JSON for its question, `binary search` a server error on its answer edit,
/// `matrix` a non-answer edit that changes the answer.
fn uj_model(req: &ChatRequest) -> Reply {
    let all = all_text(req);
    if all.contains("Sentences collected about the term:") {
        let term = between(&all, "Term: ", "\n").unwrap();
        let sentences: Vec<&str> = all
            .lines()
            .filter_map(|l| l.split_once(". ").filter(|(n, _)| n.parse::<u32>().is_ok()))
            .map(|(_, s)| s)
            .collect();
        let mut p = sentences[..3].join(" ");
        if !p.to_lowercase().contains(&term.to_lowercase()) {
            p = format!("About {term}: {p}");
        }
        return Reply::Content(p);
    }
    if all.contains("Write one question about") {
        let term = between(&all, "Write one question about \"", "\"").unwrap();
        if term == "stack" {
            return Reply::Content("{\"question\": \"What is".into());
        }
        let paragraph = block(&all, "Paragraph:");
        let first = paragraph.split(". ").next().unwrap().trim_end_matches('.');
        let words: Vec<&str> = first.split_whitespace().collect();
        let answer = words[words.len() - 3..].join(" ");
        return Reply::Content(
            json!({"question": format!("What ends the first statement about {term}?"), "answer": answer})
                .to_string(),
        );
    }
    if all.contains("Answer, copied from the paragraph:") {
        if all.contains("Paragraph about \"binary search\"") {
            return Reply::server_error(500);
        }
        let answer = between(&all, "Answer, copied from the paragraph: \"", "\"").unwrap();
        let mut words: Vec<&str> = answer.split_whitespace().collect();
        let last = words.len() - 1;
        words[last] = "zorblax";
        return Reply::Content(json!({"edited_answer": words.join(" ")}).to_string());
    }
    if all.contains("factually wrong outside the answer") {
        let term = between(&all, "Paragraph about \"", "\"").unwrap();
        let answer = between(&all, "Answer: \"", "\"").unwrap();
        let paragraph = block(&all, "Paragraph about");
        let original = if term == "matrix" {
            answer.split_whitespace().last().unwrap().to_owned()
        } else {
            paragraph
                .split(|c: char| !c.is_alphabetic())
                .find(|w| {
                    w.len() >= 6
                        && !answer.to_lowercase().contains(&w.to_lowercase())
                        && !term.to_lowercase().contains(&w.to_lowercase())
                })
                .unwrap()
                .to_owned()
        };
        return Reply::Content(
            json!({"replacements": [{"original": original, "edited": "flibbertigibbet"}]})
                .to_string(),
        );
    }
    Reply::Content(format!("unexpected prompt: {all}"))
}

async fn mock_build(base: &str, out: &Path, concurrency: &str) -> std::process::Output {
    let raw = repo().join("raw");
    let (raw, out) = (raw.to_str().unwrap(), out.to_str().unwrap());
    let mut args = model_args("recall", "uj", base, raw, out);
    args.extend(["--concurrency", concurrency, "--max-retries", "0"]);
    build(&args, &[("OPENAI_API_KEY", "sk-test")]).await
}

#[tokio::test]
async fn same_seed_same_files_at_any_concurrency_and_faults_end_in_rejects() {
    let server = MockServer::start(responder(uj_model)).await;
    let (one, many) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let o = mock_build(&server.base_url(), one.path(), "1").await;
    assert!(o.status.success(), "{}", text(&o));
    let o = mock_build(&server.base_url(), many.path(), "16").await;
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        snapshot(&one.path().join("recall/uj")),
        snapshot(&many.path().join("recall/uj")),
        "concurrency 1 and 16 wrote different files"
    );

    let dir = one.path().join("recall/uj");
    let (a, na, _) = recall::check_dir(&dir);
    assert_counts_add_up(&dir);
    let rejects = read_jsonl(&dir.join("rejects.jsonl"));
    let by_term = |id: &str| {
        rejects
            .iter()
            .find(|r| r["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no reject for {id}: {rejects:?}"))
    };
    // stack (cs/test/3): broken JSON at every try (the bundled recipe asks four times, each
    // a new draw), raw text kept.
    let stack = by_term("cs/test/3");
    assert_eq!(
        (stack["stage"].as_str(), stack["reason"].as_str()),
        (Some("qa"), Some("bad_json")),
        "{stack}"
    );
    assert_eq!(stack["attempts"], 4);
    assert!(stack["raw_response"]
        .as_str()
        .unwrap()
        .contains("\"question\": \"What is"));
    // binary search: HTTP 500 with no retry left.
    let search = rejects
        .iter()
        .find(|r| r["stage"] == "answer_edit")
        .expect("binary search's reject");
    assert!(
        search["reason"].as_str().unwrap().contains("http_500"),
        "{search}"
    );
    // matrix: its non-answer edit touched the answer: discarded, as the paper does.
    let matrix = rejects
        .iter()
        .find(|r| r["stage"] == "nonanswer_edit")
        .expect("matrix's reject");
    assert_eq!(matrix["reason"], "answer_modified", "{matrix}");
    assert!(matrix["raw_response"]
        .as_str()
        .unwrap()
        .contains("flibbertigibbet"));
    // 16 terms: 1 filtered, 3 rejected by the faults.
    assert_eq!(a, 12, "{rejects:?}");
    assert_eq!(na, 24);
    let m = read_json(&dir.join("manifest.json"));
    assert_eq!(m["offline"], false);
    assert_eq!(m["rejected"], 4);
}
