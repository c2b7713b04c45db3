//! `conflictbench eval` end to end against scripted models (cb-mock's `eval_script`), whose
//! metrics are known in closed form: a model that always follows the context, one that always
//! answers from memory (the gold), one that never gives a valid answer, and a random one.
//! RECALL runs on an offline build of the bundled samples, KRE on KRE's released files.

mod common;

use cb_mock::eval_script::{eval_responder, Behaviour, EvalEntry};
use cb_mock::MockServer;
use cb_model::{KreRow, KvItem, QaRow, TextGenRow};
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One figure of `results.json`.
fn figure<'a>(
    results: &'a Value,
    domain: &str,
    task: &str,
    setting: &str,
    metric: &str,
) -> &'a Value {
    results["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["domain"] == domain
                && f["task"] == task
                && f["setting"] == setting
                && f["metric"] == metric
        })
        .unwrap_or_else(|| panic!("no figure {domain}/{task}/{setting}/{metric}"))
}

/// The mean of one figure (`None`: no value, e.g. an empty denominator).
fn mean(results: &Value, domain: &str, task: &str, setting: &str, metric: &str) -> Option<f64> {
    figure(results, domain, task, setting, metric)["mean"].as_f64()
}

/// `n_items` of one figure.
fn n_of(results: &Value, domain: &str, task: &str, setting: &str, metric: &str) -> u64 {
    figure(results, domain, task, setting, metric)["n_items"]
        .as_u64()
        .unwrap()
}

fn close(got: Option<f64>, want: f64, what: &str) {
    let g = got.unwrap_or_else(|| panic!("{what}: no value"));
    assert!((g - want).abs() < 1e-9, "{what}: {g} != {want}");
}

fn rows<T: serde::de::DeserializeOwned>(p: &Path) -> Vec<T> {
    read_jsonl(p)
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect()
}

/// What a model that follows the context writes from the edited record or paragraph: the
/// target with every original word replaced by its edited one.
fn follower_text(t: &TextGenRow) -> String {
    let mut out = t.target.clone();
    for (o, e) in t.original_words.iter().zip(&t.edited_words) {
        out = cb_model::text::replace_words(&out, o, e).0;
    }
    out
}

/// The scripted model's table for a RECALL build.
fn recall_entries(dir: &Path) -> Vec<EvalEntry> {
    let mut entries = Vec::new();
    for d in ["eventkg", "uj"] {
        for task in ["qa_a", "qa_na"] {
            for q in rows::<QaRow>(&dir.join(d).join(format!("{task}.jsonl"))) {
                let edited = if task == "qa_a" {
                    &q.edited_answer
                } else {
                    &q.answer
                };
                entries.push(EvalEntry {
                    question: q.question.clone(),
                    memory: q.answer.clone(),
                    contexts: vec![
                        (q.context.clone(), q.answer.clone()),
                        (q.edited_context.clone(), edited.clone()),
                    ],
                });
            }
        }
        for t in rows::<TextGenRow>(&dir.join(d).join("text_generation.jsonl")) {
            let contexts = match (&t.source, &t.edited_source) {
                (Value::String(a), Value::String(b)) => vec![
                    (a.clone(), t.target.clone()),
                    (b.clone(), follower_text(&t)),
                ],
                (a, b) => {
                    let a: Vec<KvItem> = serde_json::from_value(a.clone()).unwrap();
                    let b: Vec<KvItem> = serde_json::from_value(b.clone()).unwrap();
                    let (x, y) = a
                        .iter()
                        .zip(&b)
                        .find(|(x, y)| x != y)
                        .expect("one item differs");
                    vec![
                        (format!("{}: {}\n", x.key, x.value), t.target.clone()),
                        (format!("{}: {}\n", y.key, y.value), follower_text(&t)),
                    ]
                }
            };
            entries.push(EvalEntry {
                question: format!("\"{}\"", t.subject),
                memory: t.target.clone(),
                contexts,
            });
        }
    }
    entries
}

async fn built_recall(tmp: &Path) -> PathBuf {
    let raw = repo().join("raw");
    let o = build(
        &[
            "recall",
            "--raw",
            raw.to_str().unwrap(),
            "--out",
            tmp.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    assert!(o.status.success(), "{}", text(&o));
    tmp.join("recall")
}

async fn run_recall(data: &Path, out: &Path, behaviour: Behaviour, extra: &[&str]) -> Value {
    let server = MockServer::start(eval_responder(behaviour, recall_entries(data))).await;
    run_recall_at(&server.base_url(), data, out, extra).await
}

async fn run_recall_at(base: &str, data: &Path, out: &Path, extra: &[&str]) -> Value {
    let mut args = vec![
        "recall",
        "--data",
        data.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--base-url",
        base,
        "--model",
        "m",
        "--seeds",
        "2",
    ];
    args.extend_from_slice(extra);
    let o = eval(&args).await;
    assert!(o.status.success(), "{}", text(&o));
    for f in [
        "predictions.jsonl",
        "results.json",
        "results.md",
        "results.html",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    read_json(&out.join("results.json"))
}

#[tokio::test]
async fn recall_closed_forms() {
    let tmp = tempfile::tempdir().unwrap();
    let data = built_recall(tmp.path()).await;

    // Always follows the context.
    let follower = MockServer::start(eval_responder(
        Behaviour::FollowContext,
        recall_entries(&data),
    ))
    .await;
    let r = run_recall_at(&follower.base_url(), &data, &tmp.path().join("follow"), &[]).await;
    for d in ["eventkg", "uj"] {
        close(mean(&r, d, "qa_a", "original", "acc"), 1.0, "QA-A original");
        close(mean(&r, d, "qa_a", "edited", "acc"), 0.0, "QA-A edited");
        close(mean(&r, d, "qa_a", "none", "acc"), 1.0, "QA-A none");
        close(mean(&r, d, "qa_a", "edited", "m_rate"), 1.0, "QA-A M-Rate");
        close(mean(&r, d, "qa_na", "edited", "acc"), 1.0, "QA-NA edited");
        close(
            mean(&r, d, "qa_na", "edited", "m_rate"),
            0.0,
            "QA-NA M-Rate",
        );
        close(
            mean(&r, d, "qa_a", "edited", "invalid_rate"),
            0.0,
            "invalid",
        );
        close(
            mean(&r, d, "text_generation", "original", "bleu"),
            100.0,
            "BLEU of the target itself",
        );
        close(
            mean(&r, d, "text_generation", "original", "rouge_l"),
            1.0,
            "ROUGE-L of the target itself",
        );
    }
    // Everything is known (memory answers with no context): the figures on the known items
    // are the figures on all items, with all items behind them.
    for d in ["eventkg", "uj"] {
        let rows = n_of(&r, d, "qa_a", "edited", "acc");
        close(
            mean(&r, d, "qa_a", "edited", "acc@known"),
            0.0,
            "QA-A edited, known",
        );
        close(
            mean(&r, d, "qa_a", "original", "acc@known"),
            1.0,
            "QA-A original, known",
        );
        close(
            mean(&r, d, "qa_na", "edited", "acc@known"),
            1.0,
            "QA-NA edited, known",
        );
        assert_eq!(n_of(&r, d, "qa_a", "edited", "acc@known"), rows);
        assert_eq!(n_of(&r, d, "qa_a", "edited", "m_rate"), rows);
    }
    // Every edit that touches the target comes back in the output.
    close(
        mean(&r, "eventkg", "text_generation", "edited", "r_rate"),
        1.0,
        "R-Rate",
    );
    let md = std::fs::read_to_string(tmp.path().join("follow/results.md")).unwrap();
    assert!(
        md.contains("QA-A M-Rate") && md.contains("| eventkg | 100.00 [100.00, 100.00] (n="),
        "{md}"
    );
    let preds = read_jsonl(&tmp.path().join("follow/predictions.jsonl"));
    let qa_a = rows::<QaRow>(&data.join("eventkg/qa_a.jsonl")).len();
    let edited: Vec<&Value> = preds
        .iter()
        .filter(|p| p["domain"] == "eventkg" && p["task"] == "qa_a" && p["setting"] == "edited")
        .collect();
    assert_eq!(edited.len(), qa_a * 2, "one prediction per row and seed");
    assert!(edited.iter().all(|p| p["correct"] == false
        && p["how"] == "text"
        && p["prompt_key"].as_str().unwrap().len() == 64));

    // Same inputs and seeds at another concurrency (and a fresh cache): the same bytes.
    run_recall_at(
        &follower.base_url(),
        &data,
        &tmp.path().join("follow1"),
        &["--concurrency", "1"],
    )
    .await;
    for f in [
        "predictions.jsonl",
        "results.json",
        "results.md",
        "results.html",
    ] {
        let a = std::fs::read(tmp.path().join("follow").join(f)).unwrap();
        let b = std::fs::read(tmp.path().join("follow1").join(f)).unwrap();
        assert!(a == b, "{f} differs between concurrency 16 and 1");
    }

    // Always answers from memory.
    let r = run_recall(&data, &tmp.path().join("memory"), Behaviour::Memory, &[]).await;
    for d in ["eventkg", "uj"] {
        for s in ["original", "edited", "none"] {
            close(mean(&r, d, "qa_a", s, "acc"), 1.0, "memory ACC");
        }
        close(
            mean(&r, d, "qa_a", "edited", "m_rate"),
            0.0,
            "memory M-Rate",
        );
        close(
            mean(&r, d, "text_generation", "edited", "bleu"),
            100.0,
            "memory BLEU",
        );
    }

    // Never a valid answer.
    let r = run_recall(
        &data,
        &tmp.path().join("invalid"),
        Behaviour::Invalid,
        &["--settings", "edited,none"],
    )
    .await;
    close(mean(&r, "uj", "qa_na", "edited", "acc"), 0.0, "invalid ACC");
    close(
        mean(&r, "uj", "qa_na", "edited", "invalid_rate"),
        1.0,
        "invalid rate",
    );
    assert_eq!(
        mean(&r, "uj", "qa_na", "edited", "m_rate"),
        None,
        "nothing known: no M-Rate"
    );
    assert_eq!(mean(&r, "uj", "qa_na", "edited", "acc@known"), None);
    assert_eq!(n_of(&r, "uj", "qa_na", "edited", "acc@known"), 0);
    assert_eq!(n_of(&r, "uj", "qa_na", "edited", "m_rate"), 0);

    // A random model knows some items and not others: the figures on the known items, their
    // counts and the R-Rate interval agree with what its predictions say.
    let rand = run_recall(&data, &tmp.path().join("random"), Behaviour::Random(7), &[]).await;
    let preds = read_jsonl(&tmp.path().join("random/predictions.jsonl"));
    let seeds = [42u64, 43];
    for d in ["eventkg", "uj"] {
        for task in ["qa_a", "qa_na"] {
            let correct = |setting: &str, seed: u64| -> Vec<(String, bool)> {
                preds
                    .iter()
                    .filter(|p| {
                        p["domain"] == d
                            && p["task"] == task
                            && p["setting"] == setting
                            && p["seed"] == seed
                    })
                    .map(|p| (p["item"].as_str().unwrap().to_owned(), p["correct"] == true))
                    .collect()
            };
            let mut counts = Vec::new();
            let mut per_seed = Vec::new();
            for seed in seeds {
                let none = correct("none", seed);
                let edited = correct("edited", seed);
                let known: Vec<bool> = none
                    .iter()
                    .zip(&edited)
                    .filter(|(a, _)| a.1)
                    .map(|(a, b)| {
                        assert_eq!(a.0, b.0);
                        b.1
                    })
                    .collect();
                counts.push(known.len());
                per_seed.push(known.iter().filter(|x| **x).count() as f64 / known.len() as f64);
            }
            let want_n = counts.iter().sum::<usize>().div_ceil(2);
            assert_eq!(
                n_of(&rand, d, task, "edited", "acc@known") as usize,
                want_n,
                "{d}/{task}"
            );
            assert_eq!(
                n_of(&rand, d, task, "edited", "m_rate") as usize,
                want_n,
                "{d}/{task}"
            );
            assert!(
                counts
                    .iter()
                    .all(|c| *c > 0 && *c < correct("none", 42).len()),
                "{d}/{task}: the random model should know some items, not all: {counts:?}"
            );
            close(
                mean(&rand, d, task, "edited", "acc@known"),
                per_seed.iter().sum::<f64>() / 2.0,
                "acc@known from the predictions",
            );
        }
    }
    let rr = rand["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["metric"] == "r_rate" && f["domain"] == "eventkg")
        .unwrap();
    let (low, high, m) = (
        rr["interval"]["low"].as_f64().unwrap(),
        rr["interval"]["high"].as_f64().unwrap(),
        rr["mean"].as_f64().unwrap(),
    );
    assert!(low <= m && m <= high, "the R-Rate has its interval: {rr}");
    assert_eq!(r["settings"], serde_json::json!(["edited", "none"]));
}

fn kre_rows(path: &Path) -> Vec<KreRow> {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn kre_entries(files: &[PathBuf]) -> Vec<EvalEntry> {
    files
        .iter()
        .flat_map(|f| kre_rows(f))
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

async fn run_kre(
    files: &[PathBuf],
    out: &Path,
    behaviour: Behaviour,
    extra: &[&str],
) -> (Value, MockServer) {
    let server = MockServer::start(eval_responder(behaviour, kre_entries(files))).await;
    let base = server.base_url();
    let mut args = vec![
        "kre",
        "--out",
        out.to_str().unwrap(),
        "--base-url",
        &base,
        "--model",
        "m",
        "--limit",
        "8",
        "--seeds",
        "2",
    ];
    for f in files {
        args.extend(["--data", f.to_str().unwrap()]);
    }
    args.extend_from_slice(extra);
    let o = eval(&args).await;
    assert!(o.status.success(), "{}", text(&o));
    (read_json(&out.join("results.json")), server)
}

#[tokio::test]
async fn kre_closed_forms_on_the_released_files() {
    let Some(shared) = shared_data() else { return };
    let files = vec![shared.join("kre/cose.json"), shared.join("kre/ecare.json")];
    let tmp = tempfile::tempdir().unwrap();

    // A context follower that knows every answer: all known, all misled, DMSS at the
    // dependent extreme in every setting.
    let (r, _s) = run_kre(
        &files,
        &tmp.path().join("follow"),
        Behaviour::FollowContext,
        &[],
    )
    .await;
    for d in ["cose", "ecare", "all"] {
        close(mean(&r, d, "kre", "memory", "memory_acc"), 1.0, "memory");
        for s in [
            "zero_shot",
            "all_positive",
            "all_negative",
            "mixed",
            "role_dependent",
            "role_intuitive",
        ] {
            close(mean(&r, d, "kre", s, "vr"), 0.0, "VR");
            assert_eq!(mean(&r, d, "kre", s, "rr"), None, "nothing unknown: no RR");
            close(mean(&r, d, "kre", s, "dmss"), -1.0, "DMSS");
            close(
                mean(&r, d, "kre", s, "negative_rate"),
                1.0,
                "negative answers",
            );
        }
        close(mean(&r, d, "kre", "roles", "adaptivity"), 0.0, "adaptivity");
    }
    let md = std::fs::read_to_string(tmp.path().join("follow/results.md")).unwrap();
    assert!(
        md.contains(
            "| all | 0.00 [0.00, 0.00] (n=16)† | n/a | n/a | n/a | -100.00 [-100.00, -100.00] (n=16)† | dependent |"
        ),
        "{md}"
    );

    // Answers from memory whatever the context: VR 1, DMSS at the intuitive extreme.
    let (r, _s) = run_kre(
        &files,
        &tmp.path().join("memory"),
        Behaviour::Memory,
        &["--settings", "zero_shot"],
    )
    .await;
    close(mean(&r, "all", "kre", "zero_shot", "vr"), 1.0, "VR");
    close(mean(&r, "all", "kre", "zero_shot", "dmss"), 1.0, "DMSS");
    assert_eq!(r["settings"], serde_json::json!(["memory", "zero_shot"]));

    // Never valid: nothing known, RR 0, DMSS 0, every answer invalid.
    let (r, _s) = run_kre(
        &files,
        &tmp.path().join("invalid"),
        Behaviour::Invalid,
        &["--settings", "zero_shot"],
    )
    .await;
    close(
        mean(&r, "cose", "kre", "memory", "invalid_rate"),
        1.0,
        "invalid",
    );
    close(mean(&r, "cose", "kre", "zero_shot", "rr"), 0.0, "RR");
    close(mean(&r, "cose", "kre", "zero_shot", "dmss"), 0.0, "DMSS");
    assert_eq!(mean(&r, "cose", "kre", "zero_shot", "vr"), None);

    // Random answers are always one of the options, so never invalid.
    let (r, _s) = run_kre(
        &files,
        &tmp.path().join("random"),
        Behaviour::Random(7),
        &["--settings", "mixed"],
    )
    .await;
    close(
        mean(&r, "all", "kre", "mixed", "invalid_rate"),
        0.0,
        "random invalid",
    );
    let d = mean(&r, "all", "kre", "mixed", "dmss").unwrap();
    assert!((-1.0..=1.0).contains(&d));
}

#[tokio::test]
async fn kre_instruction_pool_and_examples_are_read_as_data() {
    let Some(shared) = shared_data() else { return };
    let files = vec![shared.join("kre/cose.json")];
    let tmp = tempfile::tempdir().unwrap();
    let instructions = shared.join("kre/instructions");
    let examples = shared.join("kre/prompt_examples");
    let (r, server) = run_kre(
        &files,
        &tmp.path().join("pool"),
        Behaviour::FollowContext,
        &[
            "--settings",
            "zero_shot,all_positive",
            "--kre-instructions",
            instructions.to_str().unwrap(),
            "--instruction",
            "2",
            "--kre-examples",
            examples.to_str().unwrap(),
        ],
    )
    .await;
    close(
        mean(&r, "cose", "kre", "all_positive", "dmss"),
        -1.0,
        "DMSS with KRE's examples",
    );
    let zero = std::fs::read_to_string(instructions.join("no_hint_zeroshot/2.txt")).unwrap();
    let example = std::fs::read_to_string(examples.join("neg_context/cose/e_1.txt")).unwrap();
    let prompts: Vec<String> = server
        .journal()
        .iter()
        .map(|j| all_text(&cb_mock::ChatRequest::new(j.body.clone())))
        .collect();
    assert!(
        prompts.iter().any(|p| p.contains(zero.trim())),
        "zero-shot instruction not sent"
    );
    assert!(
        prompts
            .iter()
            .any(|p| p.contains(example.trim()) && !p.contains("[example1]")),
        "examples not filled in"
    );
}

#[tokio::test]
async fn bad_inputs_are_refused_with_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let o = eval(&["recall", "--data", tmp.path().to_str().unwrap()]).await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("offline backend"), "{}", text(&o));

    let bad = tmp.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"[{"question": "q?", "answer": "Z", "negative_answer": "b", "candidate": "B", " golden_context": "g", "negative_context": "n", "choices": ["a", "b"]}]"#,
    )
    .unwrap();
    let o = eval(&[
        "kre",
        "--data",
        bad.to_str().unwrap(),
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        "--out",
        tmp.path().join("o").to_str().unwrap(),
    ])
    .await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("bad.json") && text(&o).contains("bad.json#0"),
        "{}",
        text(&o)
    );
    // A budget that cannot pay for one call is a configuration error here as in `build`.
    let Some(data) = shared_data() else { return };
    let mock = cb_mock::MockServer::start(cb_mock::fixed("A")).await;
    let o = eval(&[
        "kre",
        "--data",
        data.join("kre/cose.json").to_str().unwrap(),
        "--base-url",
        &mock.base_url(),
        "--model",
        "m",
        "--max-tokens",
        "10",
        "--out",
        tmp.path().join("budget").to_str().unwrap(),
    ])
    .await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("cannot pay for one call"), "{}", text(&o));
    assert_eq!(mock.request_count(), 0);
    // A flag of `eval kre` given to `eval recall` is refused, not ignored, before any file.
    let out = tmp.path().join("recall-hint");
    let o = eval(&[
        "recall",
        "--data",
        tmp.path().to_str().unwrap(),
        "--base-url",
        &mock.base_url(),
        "--model",
        "m",
        "--hint",
        "--out",
        out.to_str().unwrap(),
    ])
    .await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--hint is a flag of `eval kre`"),
        "{}",
        text(&o)
    );
    assert!(!out.exists());
    assert_eq!(mock.request_count(), 0);
}
