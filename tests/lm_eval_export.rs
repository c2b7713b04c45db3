//! `conflictbench export lm-eval`: the exported tasks against lm-evaluation-harness's task
//! schema (offline, in CI), and, opt-in, the harness itself run on them against a mock model,
//! its accuracy compared with `conflictbench eval`'s on the same rows and prompts.
//!
//! The schema is lm-eval 0.4.13's `TaskConfig` (`lm_eval/config/task.py`: its field names)
//! and `ALL_OUTPUT_TYPES` (`lm_eval/api/task.py`), as the harness checks a task YAML when it
//! loads it.

mod common;

use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The fields of lm-eval 0.4.13's `TaskConfig`.
const TASK_CONFIG_FIELDS: &[&str] = &[
    "task",
    "task_alias",
    "tag",
    "custom_dataset",
    "dataset_path",
    "dataset_name",
    "dataset_kwargs",
    "training_split",
    "validation_split",
    "test_split",
    "fewshot_split",
    "process_docs",
    "doc_to_text",
    "doc_to_target",
    "doc_to_image",
    "doc_to_audio",
    "unsafe_code",
    "doc_to_choice",
    "process_results",
    "use_prompt",
    "description",
    "target_delimiter",
    "fewshot_delimiter",
    "fewshot_config",
    "num_fewshot",
    "metric_list",
    "output_type",
    "generation_kwargs",
    "repeats",
    "filter_list",
    "should_decontaminate",
    "doc_to_decontamination_query",
    "gen_prefix",
    "metadata",
];

const OUTPUT_TYPES: &[&str] = &[
    "loglikelihood",
    "multiple_choice",
    "loglikelihood_rolling",
    "generate_until",
];

fn conflictbench(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .args(args)
        .arg("--prompts")
        .arg(repo().join("prompts"))
        .output()
        .unwrap()
}

/// The names `{{ name }}` a harness template reads from a document.
fn fields_of(template: &str) -> Vec<String> {
    template
        .split("{{")
        .skip(1)
        .filter_map(|s| s.split("}}").next())
        .map(|s| s.trim().to_owned())
        .collect()
}

/// Checks every task YAML under `dir` as the harness would load it; returns task -> rows.
fn check_tasks(dir: &Path) -> BTreeMap<String, usize> {
    let mut seen = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "yaml") {
            continue;
        }
        let y: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let o = y
            .as_object()
            .unwrap_or_else(|| panic!("{}: not a mapping", p.display()));
        for k in o.keys() {
            assert!(
                TASK_CONFIG_FIELDS.contains(&k.as_str()),
                "{}: unknown field {k}",
                p.display()
            );
        }
        let task = o["task"].as_str().unwrap().to_owned();
        assert_eq!(p.file_stem().unwrap().to_str().unwrap(), task);
        assert_eq!(o["dataset_path"], "json");
        let split = o["test_split"].as_str().unwrap();
        let out = o["output_type"].as_str().unwrap();
        assert!(OUTPUT_TYPES.contains(&out), "{task}: output_type {out}");
        let data = PathBuf::from(o["dataset_kwargs"]["data_files"][split].as_str().unwrap());
        assert!(
            data.is_absolute() && data.is_file(),
            "{task}: {}",
            data.display()
        );
        let lines = read_jsonl(&data);
        assert!(!lines.is_empty(), "{task}: no rows");
        let mut templates = vec!["description", "doc_to_text", "doc_to_target"];
        if out == "multiple_choice" {
            templates.push("doc_to_choice");
            assert_eq!(o["metric_list"][0]["metric"], "acc");
        } else {
            assert_eq!(o["metric_list"][0]["metric"], "exact_match");
            let f = &o["filter_list"][0]["filter"];
            assert_eq!(f[0]["function"], "regex");
            assert_eq!(f[1]["function"], "take_first");
            assert!(o["generation_kwargs"]["until"].is_array());
        }
        for t in templates {
            for field in fields_of(o[t].as_str().unwrap()) {
                for (i, l) in lines.iter().enumerate() {
                    assert!(
                        l.get(&field).is_some(),
                        "{task}: line {} has no {field}",
                        i + 1
                    );
                }
            }
        }
        for (i, l) in lines.iter().enumerate() {
            let choices: Vec<&str> = l["choices"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap())
                .collect();
            let gi = l["gold_index"].as_u64().unwrap() as usize;
            assert_eq!(
                choices.get(gi),
                Some(&l["gold"].as_str().unwrap()),
                "{task} line {}",
                i + 1
            );
            assert_eq!(l["options"].as_array().unwrap().len(), choices.len());
            let user = l["user"].as_str().unwrap();
            for c in &choices {
                assert!(
                    user.contains(&format!("{c}: ")),
                    "{task} line {}: option {c} not shown",
                    i + 1
                );
            }
        }
        seen.insert(task, lines.len());
    }
    seen
}

/// `build BENCHMARK` of the bundled samples (offline) into `tmp/generated`, exported into
/// `tmp/tasks`; returns the two folders.
async fn built_and_exported(tmp: &Path, benchmark: &str) -> (PathBuf, PathBuf) {
    let built = tmp.join("generated");
    let raw = repo().join("raw");
    let (r, b) = (raw.to_str().unwrap(), built.to_str().unwrap());
    let o = build(&[benchmark, "--raw", r, "--out", b], &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    let out = tmp.join("tasks");
    let o = conflictbench(&["export", "lm-eval", b, out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    (built, out)
}

#[tokio::test]
async fn exported_tasks_follow_the_harness_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let (built, out) = built_and_exported(tmp.path(), "all").await;
    let tasks = check_tasks(&out);
    // RECALL: 2 domains x 2 QA tasks x 3 contexts; KRE: 5 domains x 3 contexts; each twice.
    assert_eq!(tasks.len(), 2 * (2 * 2 * 3 + 5 * 3), "{tasks:?}");
    let qa_a = read_jsonl(&built.join("recall/eventkg/qa_a.jsonl")).len();
    assert_eq!(tasks["recall_eventkg_qa_a_edited"], qa_a);
    assert_eq!(tasks["recall_eventkg_qa_a_edited_mc"], qa_a);
    assert!(std::fs::read_to_string(out.join("README.md"))
        .unwrap()
        .contains("--include_path"));

    // The same rows, prompts and seed give the same bytes.
    let again = tmp.path().join("again");
    let o = conflictbench(&[
        "export",
        "lm-eval",
        built.to_str().unwrap(),
        again.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let strip = |dir: &Path| -> BTreeMap<String, String> {
        snapshot(dir)
            .into_iter()
            .map(|(k, v)| {
                (
                    k,
                    String::from_utf8(v)
                        .unwrap()
                        .replace(dir.to_str().unwrap(), "DIR"),
                )
            })
            .collect()
    };
    assert_eq!(strip(&out), strip(&again));

    // KRE's released files, read as they are.
    if let Some(shared) = shared_data() {
        let out = tmp.path().join("released");
        let o = conflictbench(&[
            "export",
            "lm-eval",
            shared.join("kre/cose.json").to_str().unwrap(),
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o));
        let tasks = check_tasks(&out);
        assert_eq!(tasks["kre_cose_negative"], 150, "{tasks:?}");
    }

    // Nothing to export: exit 2 naming the folder.
    let empty = tempfile::tempdir().unwrap();
    let o = conflictbench(&[
        "export",
        "lm-eval",
        empty.path().to_str().unwrap(),
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains(empty.path().to_str().unwrap()),
        "{}",
        text(&o)
    );
}

/// Opt-in (`cargo test --test lm_eval_export -- --ignored`): runs lm-evaluation-harness 0.4
/// (`LM_EVAL` names its `lm_eval` command; default `target/lm-eval-venv/bin/lm_eval`, made with
/// `python3 -m venv target/lm-eval-venv && target/lm-eval-venv/bin/pip install "lm_eval[api]==0.4.13"`)
/// on the exported RECALL tasks against a mock model that reads the context (the reader
/// script), and compares each task's `exact_match` with `conflictbench eval`'s ACC on the same
/// rows, prompts and seed.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Python lm-evaluation-harness 0.4 (see the doc comment)"]
async fn the_harness_scores_the_exported_tasks_as_eval_does() {
    let lm_eval = std::env::var("LM_EVAL")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo().join("target/lm-eval-venv/bin/lm_eval"));
    assert!(lm_eval.is_file(), "{} is missing", lm_eval.display());
    let tmp = tempfile::tempdir().unwrap();
    let (built, tasks) = built_and_exported(tmp.path(), "recall").await;
    let mock = cb_mock::MockServer::start(cb_mock::reader_script::context_follower()).await;
    let base = mock.base_url();
    let ours = tmp.path().join("eval");
    let o = eval(&[
        "recall",
        "--data",
        built.join("recall").to_str().unwrap(),
        "--out",
        ours.to_str().unwrap(),
        "--base-url",
        &base,
        "--model",
        "m",
        "--seeds",
        "1",
        "--settings",
        "original,edited,none",
    ])
    .await;
    assert!(o.status.success(), "{}", text(&o));
    let results = read_json(&ours.join("results.json"));
    let harness_out = tmp.path().join("harness");
    let o = tokio::process::Command::new(&lm_eval)
        .args(["--model", "local-chat-completions", "--model_args"])
        .arg(format!("model=m,base_url={base}/chat/completions,num_concurrent=1,max_retries=1,tokenizer_backend=None"))
        .args(["--apply_chat_template", "--include_path"])
        .arg(&tasks)
        .args(["--tasks", "conflictbench_recall", "--output_path"])
        .arg(&harness_out)
        .env("OPENAI_API_KEY", "sk-test")
        .env("HF_DATASETS_OFFLINE", "1")
        .output()
        .await
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let file = walk(&harness_out)
        .into_iter()
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("results"))
        })
        .expect("the harness wrote its results");
    let theirs = read_json(&file);
    let mut compared = 0;
    for f in results["figures"].as_array().unwrap() {
        if f["metric"] != "acc" {
            continue;
        }
        let task = format!(
            "recall_{}_{}_{}",
            f["domain"].as_str().unwrap(),
            f["task"].as_str().unwrap(),
            f["setting"].as_str().unwrap()
        );
        let got = theirs["results"][&task]["exact_match,letter"]
            .as_f64()
            .unwrap_or_else(|| panic!("no harness figure for {task}: {}", theirs["results"]));
        let want = f["mean"].as_f64().unwrap();
        assert!(
            (got - want).abs() < 1e-9,
            "{task}: harness {got}, conflictbench eval {want}"
        );
        compared += 1;
    }
    assert_eq!(compared, 12, "every RECALL QA task compared");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
