#![allow(clippy::print_stderr)] // the test prints the figures it measures
//! Opt-in: builds every bundled recipe on the repository's `raw/` samples against a real
//! OpenAI-compatible endpoint and checks, on whatever the model's answers let through, the
//! rows' invariants, the accounting (per stage in = out + rejected) and the audit (no echo,
//! no restatement, no error-severity finding). CI does not run it; it needs a server:
//!
//! ```text
//! scripts/local-model.sh &            # SmolLM2-135M on 127.0.0.1 (see QUALITY.md)
//! CB_REAL_BASE_URL=http://127.0.0.1:8088/v1 CB_REAL_MODEL=smollm2 \
//!   cargo test -p conflictbench --test real_model -- --ignored --nocapture
//! ```
//!
//! Optional: `CB_REAL_LIMIT` (records per source), `CB_REAL_STRUCTURED` (`auto` by default),
//! `CB_REAL_CACHE` (a cache database to reuse, e.g. the one of a QUALITY.md run),
//! `OPENAI_API_KEY` for endpoints that want one.

mod common;
#[path = "common/recall.rs"]
mod recall;

use cb_model::text::find_word_occurrences;
use common::*;
use serde_json::Value;
use std::path::Path;

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn letter(v: &Value) -> usize {
    cb_model::letter_index(v.as_str().expect("a letter")).expect("a capital letter")
}

/// The KRE row invariants: distinct choices, letters that index them, a candidate that is
/// not the answer and is the negative answer, and a negative context naming it (outside
/// e-CARE).
fn check_kre(dir: &Path, domain: &str) -> usize {
    let rows = read_jsonl(&dir.join(format!("{domain}.jsonl")));
    for r in &rows {
        let choices: Vec<String> = r["choices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_lowercase())
            .collect();
        let mut distinct = choices.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), choices.len(), "{}: choices repeat", r["id"]);
        let (answer, candidate) = (letter(&r["answer"]), letter(&r["candidate"]));
        assert!(answer < choices.len() && candidate < choices.len(), "{r}");
        assert_ne!(
            answer, candidate,
            "{}: the candidate is the answer",
            r["id"]
        );
        let negative = r["negative_answer"].as_str().unwrap();
        assert_eq!(negative.to_lowercase(), choices[candidate], "{}", r["id"]);
        let ctx = r["negative_context"].as_str().unwrap();
        // e-CARE's negative answers are whole sentences that an explanation paraphrases; the
        // other domains' recipes require the mention.
        assert!(
            domain.starts_with("ecare") || !find_word_occurrences(ctx, negative).is_empty(),
            "{}: the negative context {ctx:?} does not name {negative:?}",
            r["id"]
        );
        assert_ne!(ctx, r["golden_context"].as_str().unwrap(), "{}", r["id"]);
    }
    rows.len()
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a real model endpoint: CB_REAL_BASE_URL and CB_REAL_MODEL"]
async fn every_recipe_builds_against_a_real_model_and_keeps_the_invariants() {
    let (Some(base), Some(model)) = (env("CB_REAL_BASE_URL"), env("CB_REAL_MODEL")) else {
        panic!("set CB_REAL_BASE_URL and CB_REAL_MODEL to run this test");
    };
    let structured = env("CB_REAL_STRUCTURED").unwrap_or_else(|| "auto".to_owned());
    let out = tempfile::tempdir().unwrap();
    let raw = repo().join("raw");
    let mut args: Vec<String> = [
        "all",
        "--raw",
        raw.to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
        "--backend",
        "openai",
        "--base-url",
        &base,
        "--model",
        &model,
        "--structured",
        &structured,
        "--concurrency",
        "2",
    ]
    .map(str::to_owned)
    .into();
    if let Some(limit) = env("CB_REAL_LIMIT") {
        args.extend(["--limit".to_owned(), limit]);
    }
    if let Some(cache) = env("CB_REAL_CACHE") {
        args.extend(["--cache".to_owned(), cache]);
    }
    let key = env("OPENAI_API_KEY");
    let envs: Vec<(&str, &str)> = key.iter().map(|k| ("OPENAI_API_KEY", k.as_str())).collect();
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = build(&argv, &envs).await;
    assert!(o.status.success(), "{}", text(&o));

    let mut total = 0;
    for manifest in glob_manifests(out.path()) {
        let dir = manifest.parent().unwrap();
        assert_counts_add_up(dir);
        let m = read_json(&manifest);
        let (bench, domain) = (
            m["benchmark"].as_str().unwrap(),
            m["domain"].as_str().unwrap(),
        );
        let rows = if bench == "kre" {
            check_kre(dir, domain)
        } else {
            let (a, na, tg) = recall::check_dir(dir);
            a + na + tg
        };
        let rejects = read_jsonl(&dir.join("rejects.jsonl"));
        if structured != "off" {
            // A grammar-constrained answer is valid JSON; a bad_json left is our bug.
            let bad: Vec<&Value> = rejects
                .iter()
                .filter(|j| j["reason"] == "bad_json")
                .collect();
            assert!(
                bad.is_empty(),
                "{bench}/{domain}: bad_json with structured output: {bad:?}"
            );
        }
        eprintln!(
            "{bench}/{domain}: {} in, {rows} rows, {} rejects",
            m["stages"][0]["in"],
            rejects.len()
        );
        total += rows;
    }
    eprintln!("{total} rows in all");

    let report = out.path().join("audit.json");
    let audit = std::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .args(["audit", "--fail-on", "error", "--json"])
        .arg(&report)
        .arg(out.path())
        .output()
        .unwrap();
    assert!(audit.status.success(), "{}", text(&audit));
    // Echo is certain from the words: never in a row. A restatement of the negative answer
    // in the question's own words is a guess: a row that a reader kept may hold one, and
    // then carries it as a warning.
    let report = read_json(&report);
    for c in report["checks"].as_array().unwrap() {
        let code = c["code"].as_str().unwrap();
        if code.contains("echo") {
            assert_eq!(c["failed"], 0, "audit check {code}: {c}");
        }
    }
    for f in report["findings"].as_array().unwrap() {
        if f["check"] != "kre_negative_context_restates" {
            continue;
        }
        let file = Path::new(f["file"].as_str().unwrap());
        let row = read_jsonl(file)
            .into_iter()
            .find(|r| r["id"] == f["id"])
            .unwrap_or_else(|| panic!("{f}: no such row"));
        assert!(
            !row["reader"].is_null(),
            "{f}: restates, and no reader kept it"
        );
        let warned = row["warnings"].as_array().unwrap().iter().any(|w| {
            w.as_str()
                .is_some_and(|w| w.starts_with("restates_question"))
        });
        assert!(
            warned,
            "{f}: no restates_question warning on the row: {row}"
        );
    }
}

/// `OUT/<benchmark>/<domain>/manifest.json` of a build, in a stable order.
fn glob_manifests(out: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for bench in std::fs::read_dir(out).unwrap() {
        let bench = bench.unwrap().path();
        if !bench.is_dir() {
            continue;
        }
        for domain in std::fs::read_dir(&bench).unwrap() {
            let m = domain.unwrap().path().join("manifest.json");
            if m.is_file() {
                found.push(m);
            }
        }
    }
    found.sort();
    assert!(
        !found.is_empty(),
        "no domain was built under {}",
        out.display()
    );
    found
}
