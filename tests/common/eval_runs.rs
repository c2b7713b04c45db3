//! Evaluation runs for the compare and chart tests (included with `#[path]`): small KRE files
//! written on the spot, scripted models under test (cb-mock's `eval_script`) whose figures
//! follow from their definitions, and `conflictbench eval` / `eval compare` on them.
#![allow(dead_code)]

use crate::common::{eval_with_prompts, read_json, repo, text};
use cb_mock::eval_script::{eval_responder, Behaviour, EvalEntry};
use cb_mock::MockServer;
use cb_model::KreRow;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Output;

/// Writes `dir/<domain>.json`: `n` KRE rows in the released layout (four choices, the golden
/// one `A`, the negative one `B`), each context naming its option. `changed`: the row whose
/// negative context gets other words (another build of "the same" data).
pub fn write_kre(dir: &Path, domain: &str, n: usize, changed: Option<usize>) -> PathBuf {
    let rows: Vec<Value> = (0..n)
        .map(|i| {
            let mut negative = format!("Thing {i} of {domain} is always kept on the shelf {i}.");
            if changed == Some(i) {
                negative = format!("Everyone keeps thing {i} of {domain} on the shelf {i}.");
            }
            json!({
                "question": format!("Case {domain} {i}: where is thing {i} kept?"),
                "answer": "A",
                "negative_answer": format!("shelf {i}"),
                "candidate": "B",
                " golden_context": format!("Thing {i} of {domain} is always kept in the drawer {i}."),
                "negative_context": negative,
                "choices": [format!("drawer {i}"), format!("shelf {i}"), format!("box {i}"), format!("bag {i}")],
            })
        })
        .collect();
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(format!("{domain}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&rows).unwrap()).unwrap();
    path
}

/// The scripted model's table for KRE files: memory gives the golden option, the golden
/// context supports it, the negative context the negative answer.
pub fn kre_entries(files: &[PathBuf]) -> Vec<EvalEntry> {
    files
        .iter()
        .flat_map(|f| serde_json::from_slice::<Vec<KreRow>>(&std::fs::read(f).unwrap()).unwrap())
        .map(|k| {
            let gold = k.choices[cb_model::letter_index(&k.answer).unwrap()].clone();
            EvalEntry {
                question: k.question.clone(),
                memory: gold.clone(),
                contexts: vec![
                    (k.golden_context.clone(), gold),
                    (k.negative_context.clone(), k.negative_answer.clone()),
                ],
            }
        })
        .collect()
}

/// `conflictbench eval kre` of model `model` answering as `behaviour` on `files`, 2 seeds,
/// into `out`, with `extra` arguments and the prompts of `prompts` (the repository's when
/// `None`); asserts success and returns `results.json`.
pub async fn run_kre(
    files: &[PathBuf],
    out: &Path,
    model: &str,
    behaviour: Behaviour,
    extra: &[&str],
    prompts: Option<&Path>,
) -> Value {
    let server = MockServer::start(eval_responder(behaviour, kre_entries(files))).await;
    let base = server.base_url();
    let mut args = vec![
        "kre",
        "--out",
        out.to_str().unwrap(),
        "--base-url",
        &base,
        "--model",
        model,
        "--seeds",
        "2",
    ];
    for f in files {
        args.extend(["--data", f.to_str().unwrap()]);
    }
    args.extend_from_slice(extra);
    let prompts = prompts.map_or_else(|| repo().join("prompts"), Path::to_path_buf);
    let o = eval_with_prompts(&prompts, &args).await;
    assert!(o.status.success(), "{}", text(&o));
    read_json(&out.join("results.json"))
}

/// Runs `conflictbench eval compare ARGS` (none of the caller's log settings).
pub fn compare(args: &[&Path]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .args(["eval", "compare"])
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("CONFLICTBENCH_LOG")
        .output()
        .unwrap()
}

/// The figure `domain/task/setting/metric` of a `compare.json`.
pub fn compared<'a>(
    c: &'a Value,
    domain: &str,
    task: &str,
    setting: &str,
    metric: &str,
) -> &'a Value {
    c["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["domain"] == domain
                && f["task"] == task
                && f["setting"] == setting
                && f["metric"] == metric
        })
        .unwrap_or_else(|| panic!("no compared figure {domain}/{task}/{setting}/{metric}"))
}
