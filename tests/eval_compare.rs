//! `conflictbench eval compare` end to end: evaluation runs of scripted models (cb-mock's
//! `eval_script`) whose figures follow from their definitions, a context follower against a
//! memory model, give the differences their definitions imply with paired intervals that
//! exclude 0; identical runs give 0; runs of another benchmark, data or prompt set are
//! refused, naming what differs.

mod common;
#[path = "common/fs.rs"]
mod fs;
use fs::copy_dir;
#[path = "common/eval_runs.rs"]
mod eval_runs;

use cb_mock::eval_script::{eval_responder, Behaviour, EvalEntry};
use cb_mock::MockServer;
use cb_model::QaRow;
use common::*;
use eval_runs::{compare, compared, run_kre, write_kre};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The scripted model's table for a RECALL build's QA rows (text generation is left out:
/// both models answer it "I don't know.").
fn qa_entries(dir: &Path) -> Vec<EvalEntry> {
    let mut out = Vec::new();
    for d in ["eventkg", "uj"] {
        for task in ["qa_a", "qa_na"] {
            for line in read_jsonl(&dir.join(d).join(format!("{task}.jsonl"))) {
                let q: QaRow = serde_json::from_value(line).unwrap();
                let edited = if task == "qa_a" {
                    q.edited_answer.clone()
                } else {
                    q.answer.clone()
                };
                out.push(EvalEntry {
                    question: q.question.clone(),
                    memory: q.answer.clone(),
                    contexts: vec![(q.context, q.answer), (q.edited_context, edited)],
                });
            }
        }
    }
    out
}

async fn run_recall(data: &Path, out: &Path, model: &str, b: Behaviour, extra: &[&str]) -> Value {
    let server = MockServer::start(eval_responder(b, qa_entries(data))).await;
    let base = server.base_url();
    let mut args = vec![
        "recall",
        "--data",
        data.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--base-url",
        &base,
        "--model",
        model,
        "--seeds",
        "2",
    ];
    args.extend_from_slice(extra);
    let o = eval(&args).await;
    assert!(o.status.success(), "{}", text(&o));
    read_json(&out.join("results.json"))
}

async fn built_recall(tmp: &Path) -> PathBuf {
    let raw = repo().join("raw");
    let out = tmp.join("build");
    let o = build(
        &[
            "recall",
            "--raw",
            raw.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    assert!(o.status.success(), "{}", text(&o));
    out.join("recall")
}

/// Runs `eval compare RUNS --out OUT`, asserting success; `compare.json`.
fn compare_ok(runs: &[&Path], out: &Path) -> Value {
    let mut args = runs.to_vec();
    args.extend([Path::new("--out"), out]);
    let o = compare(&args);
    assert!(o.status.success(), "{}", text(&o));
    for f in ["compare.json", "compare.md", "compare.html"] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    read_json(&out.join("compare.json"))
}

/// The difference of run 2 to run 1 of a compared figure: (value, low, high, excludes 0).
fn diff(f: &Value) -> (Option<f64>, Option<f64>, Option<f64>, bool) {
    let d = &f["differences"][0];
    (
        d["difference"].as_f64(),
        d["interval"]["low"].as_f64(),
        d["interval"]["high"].as_f64(),
        d["excludes_zero"].as_bool().unwrap(),
    )
}

fn assert_diff(c: &Value, fig: [&str; 4], want: f64) {
    let (v, low, high, excludes) = diff(compared(c, fig[0], fig[1], fig[2], fig[3]));
    let v = v.unwrap_or_else(|| panic!("{fig:?}: no difference"));
    assert!((v - want).abs() < 1e-9, "{fig:?}: {v} != {want}");
    let (low, high) = (low.unwrap(), high.unwrap());
    // The model's behaviour is the same on every item: every resample gives the difference.
    assert!(
        (low - want).abs() < 1e-9 && (high - want).abs() < 1e-9,
        "{fig:?}: [{low}, {high}]"
    );
    assert_eq!(excludes, want != 0.0, "{fig:?}");
}

/// Every compared figure's value per run equals the run's own `results.json` (the runs share
/// all their items, so the recomputation must give the run's figures).
fn assert_recomputed_as_in_results(c: &Value, results: &[&Value]) {
    for f in c["figures"].as_array().unwrap() {
        for (r, res) in results.iter().enumerate() {
            let own = res["figures"]
                .as_array()
                .unwrap()
                .iter()
                .find(|g| {
                    ["domain", "task", "setting", "metric"]
                        .iter()
                        .all(|k| g[k] == f[k])
                })
                .unwrap();
            let (a, b) = (&f["runs"][r], own);
            assert_eq!(
                a["mean"].as_f64().map(|x| (x * 1e9).round()),
                b["mean"].as_f64().map(|x| (x * 1e9).round()),
                "run {r}, {f}"
            );
            // A figure on a per-run subset (the items a model knows) has that subset's size as
            // its own n; a comparison counts the shared items it resamples.
            if !["vr", "rr", "m_rate", "acc@known"].contains(&f["metric"].as_str().unwrap()) {
                assert_eq!(f["n_items"], b["n_items"], "{f}");
            }
            assert_eq!(a["interval"], b["interval"], "run {r}, {f}");
        }
    }
}

#[tokio::test]
async fn recall_follower_against_memory_and_identical_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let data = built_recall(t).await;
    let follow = t.join("follow");
    let memory = t.join("memory");
    let again = t.join("follow-again");
    let rf = run_recall(&data, &follow, "follower", Behaviour::FollowContext, &[]).await;
    let rm = run_recall(&data, &memory, "memory", Behaviour::Memory, &[]).await;
    run_recall(
        &data,
        &again,
        "follower",
        Behaviour::FollowContext,
        &["--concurrency", "1"],
    )
    .await;

    let c = compare_ok(&[&follow, &memory], &t.join("cmp"));
    assert_eq!(c["benchmark"], "recall");
    assert_eq!(c["seeds"], serde_json::json!([42, 43]));
    for d in ["eventkg", "uj"] {
        // The edited context names the edited answer: the follower takes it, memory does not.
        assert_diff(&c, [d, "qa_a", "edited", "acc"], 1.0);
        assert_diff(&c, [d, "qa_a", "edited", "m_rate"], -1.0);
        // Both know every item, so on the known items the same differences hold.
        assert_diff(&c, [d, "qa_a", "edited", "acc@known"], 1.0);
        assert_diff(&c, [d, "qa_na", "edited", "acc@known"], 0.0);
        // Neither context misleads on QA-NA, and both models know every answer.
        assert_diff(&c, [d, "qa_na", "edited", "acc"], 0.0);
        assert_diff(&c, [d, "qa_na", "edited", "m_rate"], 0.0);
        assert_diff(&c, [d, "qa_a", "original", "acc"], 0.0);
        assert_diff(&c, [d, "qa_a", "none", "invalid_rate"], 0.0);
        // Both answer text generation "I don't know.".
        assert_diff(&c, [d, "text_generation", "edited", "rouge_l"], 0.0);
        let f = compared(&c, d, "qa_a", "edited", "acc");
        let rows = read_jsonl(&data.join(d).join("qa_a.jsonl")).len();
        assert_eq!(f["n_items"], rows);
    }
    assert_recomputed_as_in_results(&c, &[&rf, &rm]);
    let left: Vec<&str> = c["left_out"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["figure"].as_str().unwrap())
        .collect();
    assert_eq!(
        left,
        [
            "eventkg/text_generation/edited/r_rate",
            "uj/text_generation/edited/r_rate"
        ]
    );
    let md = std::fs::read_to_string(t.join("cmp/compare.md")).unwrap();
    assert!(
        md.contains("| eventkg | qa_a | edited | acc | 20† | 0.00 [0.00, 0.00] | 100.00 [100.00, 100.00] | +100.00 [100.00, 100.00] | yes |"),
        "{md}"
    );
    assert!(
        md.contains("| eventkg/text_generation/edited/r_rate | needs each row's edited words"),
        "{md}"
    );

    // The same runs compared again: the same bytes.
    compare_ok(&[&follow, &memory], &t.join("cmp2"));
    for f in ["compare.json", "compare.md", "compare.html"] {
        assert!(
            std::fs::read(t.join("cmp").join(f)).unwrap()
                == std::fs::read(t.join("cmp2").join(f)).unwrap(),
            "{f} differs"
        );
    }

    // Two runs of the same model (another concurrency): every difference 0, its interval 0.
    let c = compare_ok(&[&follow, &again], &t.join("same"));
    let figures = c["figures"].as_array().unwrap();
    assert!(figures.len() > 20, "{}", figures.len());
    for f in figures {
        let d = &f["differences"][0];
        if d["difference"].is_null() {
            continue;
        }
        assert_eq!(d["difference"].as_f64(), Some(0.0), "{f}");
        assert_eq!(
            d["interval"],
            serde_json::json!({"low": 0.0, "high": 0.0}),
            "{f}"
        );
        assert_eq!(d["excludes_zero"], false, "{f}");
    }
}

#[tokio::test]
async fn kre_follower_against_memory_on_shared_items() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let files = vec![
        write_kre(&t.join("data"), "cose", 8, None),
        write_kre(&t.join("data"), "ecare", 8, None),
    ];
    let settings = [
        "--settings",
        "zero_shot,mixed,role_dependent,role_intuitive",
    ];
    let follow = t.join("follow");
    let memory = t.join("memory");
    let rf = run_kre(
        &files,
        &follow,
        "follower",
        Behaviour::FollowContext,
        &settings,
        None,
    )
    .await;
    let rm = run_kre(
        &files,
        &memory,
        "memory",
        Behaviour::Memory,
        &settings,
        None,
    )
    .await;
    let c = compare_ok(&[&follow, &memory], &t.join("cmp"));
    for d in ["cose", "ecare", "all"] {
        // Both know every answer without context.
        assert_diff(&c, [d, "kre", "memory", "memory_acc"], 0.0);
        for s in ["zero_shot", "mixed", "role_dependent", "role_intuitive"] {
            // Known questions with the negative context: the follower is misled on every one
            // (VR 0, DMSS -1), the memory model on none (VR 1, DMSS +1).
            assert_diff(&c, [d, "kre", s, "vr"], 1.0);
            assert_diff(&c, [d, "kre", s, "dmss"], 2.0);
            assert_diff(&c, [d, "kre", s, "negative_rate"], -1.0);
            // Nothing is unknown: no RR, so no difference.
            assert_eq!(diff(compared(&c, d, "kre", s, "rr")).0, None);
        }
        assert_diff(&c, [d, "kre", "few_shot_mean", "vr"], 1.0);
        assert_diff(&c, [d, "kre", "roles", "adaptivity"], 0.0);
    }
    assert_eq!(compared(&c, "all", "kre", "zero_shot", "vr")["n_items"], 16);
    assert_recomputed_as_in_results(&c, &[&rf, &rm]);
    assert!(
        c["left_out"].as_array().unwrap().is_empty(),
        "{}",
        c["left_out"]
    );
    let html = std::fs::read_to_string(t.join("cmp/compare.html")).unwrap();
    assert_eq!(
        html.matches("class=\"cb-point\"").count(),
        2,
        "both runs on the style axis"
    );

    // A run on fewer rows of the same data: paired on the rows both evaluated.
    let few = t.join("memory-few");
    run_kre(
        &files,
        &few,
        "memory",
        Behaviour::Memory,
        &["--settings", "zero_shot", "--limit", "3"],
        None,
    )
    .await;
    let c = compare_ok(&[&follow, &few], &t.join("cmp-few"));
    assert_eq!(c["shared_rows"], 6);
    assert_eq!(c["settings"], serde_json::json!(["memory", "zero_shot"]));
    assert_eq!(compared(&c, "cose", "kre", "zero_shot", "vr")["n_items"], 3);
    assert_eq!(compared(&c, "all", "kre", "zero_shot", "vr")["n_items"], 6);
    assert_diff(&c, ["all", "kre", "zero_shot", "vr"], 1.0);
    let left = c["left_out"].to_string();
    assert!(
        left.contains("cose/kre/mixed/vr") && left.contains("not in"),
        "{left}"
    );
}

#[tokio::test]
async fn runs_of_another_benchmark_data_or_prompt_set_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let cose = vec![write_kre(&t.join("data"), "cose", 5, None)];
    let settings = ["--settings", "zero_shot"];
    let base = t.join("base");
    run_kre(&cose, &base, "m", Behaviour::FollowContext, &settings, None).await;

    let refused = |other: &Path, words: &[&str]| {
        let out = t.join("refused");
        let o = compare(&[&base, other, Path::new("--out"), &out]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let msg = text(&o);
        for w in words {
            assert!(msg.contains(w), "{w:?} not in {msg}");
        }
        assert!(!out.exists(), "nothing written");
    };

    // Another benchmark.
    let data = built_recall(t).await;
    let recall = t.join("recall");
    run_recall(
        &data,
        &recall,
        "m",
        Behaviour::Memory,
        &["--settings", "none", "--limit", "2"],
    )
    .await;
    refused(
        &recall,
        &["different benchmarks", "evaluates kre", "evaluates recall"],
    );

    // The same row ids with other words in one row (another build of the file).
    let changed = vec![write_kre(&t.join("changed"), "cose", 5, Some(2))];
    let other = t.join("changed-run");
    run_kre(&changed, &other, "m", Behaviour::Memory, &settings, None).await;
    refused(&other, &["different data", "row cose.json#2 of cose"]);

    // Other rows altogether.
    let ecare = vec![write_kre(&t.join("data"), "ecare", 5, None)];
    let other = t.join("ecare-run");
    run_kre(&ecare, &other, "m", Behaviour::Memory, &settings, None).await;
    refused(&other, &["different data", "share no row"]);

    // Another prompt set: the same files, eval/kre.md with one more sentence.
    let prompts = t.join("prompts");
    copy_dir(&repo().join("prompts"), &prompts);
    let kre_md = prompts.join("eval/kre.md");
    let mut md = std::fs::read_to_string(&kre_md).unwrap();
    md.push_str("\nThink before you answer.\n");
    std::fs::write(&kre_md, md).unwrap();
    let other = t.join("prompt-run");
    run_kre(
        &cose,
        &other,
        "m",
        Behaviour::Memory,
        &settings,
        Some(&prompts),
    )
    .await;
    refused(&other, &["different prompts", "eval/kre.md"]);

    // Another instruction text: KRE's pool instead of ours.
    if let Some(shared) = shared_data() {
        let pool = shared.join("kre/instructions");
        let other = t.join("pool-run");
        let mut extra = settings.to_vec();
        extra.extend(["--kre-instructions", pool.to_str().unwrap()]);
        run_kre(&cose, &other, "m", Behaviour::Memory, &extra, None).await;
        refused(&other, &["different prompts", "kre_instructions/no_hint_"]);
    }

    // A run written before runs named their data.
    let old = t.join("old-run");
    copy_dir(&base, &old);
    let mut r = read_json(&old.join("results.json"));
    r.as_object_mut().unwrap().remove("data");
    std::fs::write(old.join("results.json"), serde_json::to_vec(&r).unwrap()).unwrap();
    refused(&old, &["no data identity", "evaluate again"]);
}
