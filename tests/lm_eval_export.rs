//! `conflictbench export lm-eval`: the exported tasks against lm-evaluation-harness's task
//! schema (offline, in CI), and, opt-in, the harness itself run on them against a mock model,
//! its prompts and per-item scores compared with `conflictbench eval`'s.
//!
//! The schema is that of lm-eval 0.4.13: `TaskConfig` in `lm_eval/config/task.py` (field
//! names and types), `ALL_OUTPUT_TYPES` in `lm_eval/api/task.py`, and how
//! `ConfigurableTask` reads a document (`resolve_field`: a field name is taken as it is,
//! anything else is a Jinja template of the document) and a filter (`regex` with
//! `regex_pattern` and `group_select`, then `take_first`).

#![allow(clippy::print_stderr)] // the opt-in test prints the accuracies it compared
mod common;

use common::*;
use serde_json::Value;
use serde_yaml_ng::Value as Yaml;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// What a `TaskConfig` field may hold.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Str,
    Bool,
    Int,
    Dict,
    /// A string or a list of strings.
    StrOrList,
    /// `!function module.name` (a Python callable).
    Function,
    /// A string (a field name or a template) or a `!function`.
    StrOrFunction,
    /// `doc_to_choice`: a string, a list, a dict or a `!function`.
    Choice,
    /// `metric_list`: a list of mappings, each naming its `metric`.
    Metrics,
    /// `filter_list`: a list of `{name, filter: [{function, ...}]}`.
    Filters,
}

/// lm-eval 0.4.13's `TaskConfig` fields and their types.
const TASK_CONFIG: &[(&str, Kind)] = &[
    ("task", Kind::Str),
    ("task_alias", Kind::Str),
    ("tag", Kind::StrOrList),
    ("custom_dataset", Kind::Function),
    ("dataset_path", Kind::Str),
    ("dataset_name", Kind::Str),
    ("dataset_kwargs", Kind::Dict),
    ("training_split", Kind::Str),
    ("validation_split", Kind::Str),
    ("test_split", Kind::Str),
    ("fewshot_split", Kind::Str),
    ("process_docs", Kind::Function),
    ("doc_to_text", Kind::StrOrFunction),
    ("doc_to_target", Kind::StrOrFunction),
    ("doc_to_image", Kind::StrOrFunction),
    ("doc_to_audio", Kind::StrOrFunction),
    ("unsafe_code", Kind::Bool),
    ("doc_to_choice", Kind::Choice),
    ("process_results", Kind::StrOrFunction),
    ("use_prompt", Kind::Str),
    ("description", Kind::Str),
    ("target_delimiter", Kind::Str),
    ("fewshot_delimiter", Kind::Str),
    ("fewshot_config", Kind::Dict),
    ("num_fewshot", Kind::Int),
    ("metric_list", Kind::Metrics),
    ("output_type", Kind::Str),
    ("generation_kwargs", Kind::Dict),
    ("repeats", Kind::Int),
    ("filter_list", Kind::Filters),
    ("should_decontaminate", Kind::Bool),
    ("doc_to_decontamination_query", Kind::Str),
    ("gen_prefix", Kind::Str),
    ("metadata", Kind::Dict),
];

/// lm-eval 0.4.13's `ALL_OUTPUT_TYPES`.
const OUTPUT_TYPES: &[&str] = &[
    "loglikelihood",
    "multiple_choice",
    "loglikelihood_rolling",
    "generate_until",
];

fn is_function(v: &Yaml) -> bool {
    matches!(v, Yaml::Tagged(t) if t.tag == "function" && t.value.is_string())
}

fn has_kind(v: &Yaml, kind: Kind) -> bool {
    let strings = |v: &Yaml| {
        v.as_sequence()
            .is_some_and(|s| s.iter().all(Yaml::is_string))
    };
    match kind {
        Kind::Str => v.is_string(),
        Kind::Bool => v.is_bool(),
        Kind::Int => v.is_i64() || v.is_u64(),
        Kind::Dict => v.is_mapping(),
        Kind::StrOrList => v.is_string() || strings(v),
        Kind::Function => is_function(v),
        Kind::StrOrFunction => v.is_string() || is_function(v),
        Kind::Choice => v.is_string() || v.is_sequence() || v.is_mapping() || is_function(v),
        Kind::Metrics => v.as_sequence().is_some_and(|s| {
            s.iter()
                .all(|m| m.get("metric").is_some_and(Yaml::is_string))
        }),
        Kind::Filters => v.as_sequence().is_some_and(|s| {
            s.iter().all(|f| {
                f.get("name").is_some_and(Yaml::is_string)
                    && f.get("filter")
                        .and_then(Yaml::as_sequence)
                        .is_some_and(|steps| {
                            steps
                                .iter()
                                .all(|st| st.get("function").is_some_and(Yaml::is_string))
                        })
            })
        }),
    }
}

fn conflictbench(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .args(args)
        .arg("--prompts")
        .arg(repo().join("prompts"))
        .output()
        .unwrap()
}

/// The document fields a `doc_to_*` or `description` value reads, as the harness resolves
/// it: a bare field name, or the names in a template's `{{ ... }}` and `{% if ... %}`.
fn fields_of(value: &str, fields: &serde_json::Map<String, Value>) -> Vec<String> {
    if fields.contains_key(value) {
        return vec![value.to_owned()];
    }
    let mut out = Vec::new();
    for (open, close) in [("{{", "}}"), ("{% if ", "%}")] {
        out.extend(
            value
                .split(open)
                .skip(1)
                .filter_map(|s| s.split(close).next())
                .map(|s| s.trim().to_owned()),
        );
    }
    out
}

/// What the harness's `regex` filter with `group_select: 0` then `take_first` keeps of
/// `reply`: the first match's group (`re.findall`), else nothing.
fn harness_pick(pattern: &str, reply: &str) -> Option<String> {
    let re = regex_automata::meta::Regex::new(pattern).unwrap();
    let mut caps = re.create_captures();
    re.captures(reply, &mut caps);
    caps.get_group(1).map(|s| reply[s.range()].to_owned())
}

/// Checks every task YAML under `dir` as the harness would load it; returns task -> rows.
fn check_tasks(dir: &Path) -> BTreeMap<String, usize> {
    let mut seen = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "yaml") {
            continue;
        }
        let name = p.display().to_string();
        let y: Yaml = serde_yaml_ng::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let m = y
            .as_mapping()
            .unwrap_or_else(|| panic!("{name}: not a mapping"));
        for (k, v) in m {
            let k = k.as_str().unwrap_or_else(|| panic!("{name}: a key {k:?}"));
            let (_, kind) = TASK_CONFIG
                .iter()
                .find(|(f, _)| *f == k)
                .unwrap_or_else(|| panic!("{name}: {k} is no TaskConfig field"));
            assert!(has_kind(v, *kind), "{name}: {k} is not {kind:?}: {v:?}");
        }
        for required in [
            "task",
            "test_split",
            "doc_to_text",
            "doc_to_target",
            "output_type",
        ] {
            assert!(m.contains_key(required), "{name}: no {required}");
        }
        let task = m["task"].as_str().unwrap().to_owned();
        assert_eq!(p.file_stem().unwrap().to_str().unwrap(), task);
        let out = m["output_type"].as_str().unwrap();
        assert!(OUTPUT_TYPES.contains(&out), "{task}: output_type {out}");

        // The data: `custom_dataset` is the loader beside the YAML, reading `data_files`
        // relative to its folder (what `dataset_path: json` reads from that folder too).
        let Yaml::Tagged(loader) = &m["custom_dataset"] else {
            panic!("{task}: no custom_dataset")
        };
        let module = loader.value.as_str().unwrap().rsplit_once('.').unwrap().0;
        assert!(
            dir.join(format!("{module}.py")).is_file(),
            "{task}: {module}"
        );
        assert_eq!(m["dataset_path"].as_str(), Some("json"));
        let split = m["test_split"].as_str().unwrap();
        let rel = m["dataset_kwargs"]["data_files"][split]
            .as_str()
            .unwrap_or_else(|| panic!("{task}: no data file for split {split}"));
        assert!(Path::new(rel).is_relative(), "{task}: {rel}");
        let lines = read_jsonl(&dir.join(rel));
        assert!(!lines.is_empty(), "{task}: no rows");

        let mut templates = vec!["description", "doc_to_text", "doc_to_target"];
        let regex = if out == "multiple_choice" {
            templates.push("doc_to_choice");
            assert_eq!(m["metric_list"][0]["metric"].as_str(), Some("acc"));
            None
        } else {
            assert_eq!(m["metric_list"][0]["metric"].as_str(), Some("exact_match"));
            let f = &m["filter_list"][0]["filter"];
            assert_eq!(f[0]["function"].as_str(), Some("regex"));
            assert_eq!(f[0]["group_select"].as_i64(), Some(0));
            assert_eq!(f[1]["function"].as_str(), Some("take_first"));
            assert!(m["generation_kwargs"]["until"].is_sequence());
            let re = f[0]["regex_pattern"].as_str().unwrap().to_owned();
            assert_eq!(
                harness_pick(&re, "The answer is B.").as_deref(),
                Some("B"),
                "{task}"
            );
            assert_eq!(harness_pick(&re, "None"), None, "{task}");
            Some(re)
        };
        for (i, l) in lines.iter().enumerate() {
            let at = format!("{task}: line {}", i + 1);
            let o = l.as_object().unwrap();
            for t in &templates {
                for field in fields_of(m[*t].as_str().unwrap(), o) {
                    assert!(o.contains_key(&field), "{at} has no {field} ({t})");
                }
            }
            let choices: Vec<&str> = l["choices"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap())
                .collect();
            let gold = l["gold"].as_str().unwrap();
            let gi = l["gold_index"].as_u64().unwrap() as usize;
            assert_eq!(choices.get(gi), Some(&gold), "{at}");
            assert_eq!(l["options"].as_array().unwrap().len(), choices.len());
            let user = l["user"].as_str().unwrap();
            for c in &choices {
                assert!(
                    user.contains(&format!("{c}: ")),
                    "{at}: option {c} not shown"
                );
            }
            if let Some(re) = &regex {
                let reply = format!("{gold}: {}", l["options"][gi].as_str().unwrap());
                assert_eq!(harness_pick(re, &reply).as_deref(), Some(gold), "{at}");
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
    // RECALL: 2 domains x 2 QA tasks x 3 contexts; KRE: 5 domains x (memory + 6 settings x 2
    // contexts); each also as _mc.
    assert_eq!(tasks.len(), 2 * (2 * 2 * 3 + 5 * 13), "{tasks:?}");
    let qa_a = read_jsonl(&built.join("recall/eventkg/qa_a.jsonl")).len();
    assert_eq!(tasks["recall_eventkg_qa_a_edited"], qa_a);
    assert_eq!(tasks["recall_eventkg_qa_a_edited_mc"], qa_a);
    let cose = read_jsonl(&built.join("kre/cose/cose.jsonl")).len();
    for s in [
        "memory",
        "zero_shot_negative",
        "mixed_golden",
        "role_intuitive_negative",
    ] {
        assert_eq!(tasks[&format!("kre_cose_{s}")], cose, "{s}");
    }
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    for tag in [
        "conflictbench_recall",
        "conflictbench_kre",
        "--include_path",
    ] {
        assert!(readme.contains(tag), "{tag}: {readme}");
    }

    // The same rows, prompts and seed give the same bytes, in any folder.
    let again = tmp.path().join("again");
    let o = conflictbench(&[
        "export",
        "lm-eval",
        built.to_str().unwrap(),
        again.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(snapshot(&out) == snapshot(&again), "the exports differ");

    // KRE's released files, read as they are.
    if let Some(shared) = shared_data() {
        for (domain, rows) in [("cose", 150), ("ecare", 150)] {
            let file = shared.join(format!("kre/{domain}.json"));
            let out = tmp.path().join(format!("released-{domain}"));
            let o = conflictbench(&[
                "export",
                "lm-eval",
                file.to_str().unwrap(),
                out.to_str().unwrap(),
            ]);
            assert!(o.status.success(), "{}", text(&o));
            let tasks = check_tasks(&out);
            assert_eq!(tasks.len(), 2 * 13, "{tasks:?}");
            assert_eq!(
                tasks[&format!("kre_{domain}_zero_shot_negative")],
                rows,
                "{tasks:?}"
            );
        }
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

/// The (system, user) texts of every request the mock answered, counted.
fn prompts_sent(mock: &cb_mock::MockServer) -> BTreeMap<(String, String), usize> {
    let mut out = BTreeMap::new();
    for e in mock.journal() {
        let req = cb_mock::ChatRequest::new(e.body);
        let key = (
            req.system().unwrap_or("").to_owned(),
            req.last_user().to_owned(),
        );
        *out.entry(key).or_default() += 1;
    }
    out
}

/// Opt-in (`cargo test -p conflictbench --test lm_eval_export -- --ignored`): runs
/// lm-evaluation-harness 0.4 (`LM_EVAL` names its `lm_eval` command; default
/// `target/lm-eval-venv/bin/lm_eval`, made with `python3 -m venv target/lm-eval-venv &&
/// target/lm-eval-venv/bin/pip install "lm_eval[api]==0.4.13"`) on every exported
/// generate_until task, from a moved copy of the export folder, against a mock model that
/// follows the context and, without one, knows every other KRE item. Checks that every
/// prompt `conflictbench eval` sends (seed 42) the harness sends too, byte for byte, and that
/// each item eval scores gets the same score from the harness; then that the `_mc` variants
/// load and run (the harness's `dummy` model).
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Python lm-evaluation-harness 0.4 (see the doc comment)"]
async fn the_harness_scores_the_exported_tasks_as_eval_does() {
    let lm_eval = std::env::var("LM_EVAL")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo().join("target/lm-eval-venv/bin/lm_eval"));
    assert!(lm_eval.is_file(), "{} is missing", lm_eval.display());
    let tmp = tempfile::tempdir().unwrap();
    let (built, exported) = built_and_exported(tmp.path(), "all").await;
    let tasks = tmp.path().join("elsewhere/tasks");
    std::fs::create_dir_all(tasks.parent().unwrap()).unwrap();
    std::fs::rename(&exported, &tasks).unwrap();

    // Without a context the model knows every other KRE item (its memory task's lines).
    let mut known = HashMap::new();
    for e in std::fs::read_dir(tasks.join("data")).unwrap() {
        let p = e.unwrap().path();
        if p.to_string_lossy().ends_with("_memory.jsonl") {
            for l in read_jsonl(&p).iter().step_by(2) {
                known.insert(
                    l["user"].as_str().unwrap().to_owned(),
                    l["gold"].as_str().unwrap().to_owned(),
                );
            }
        }
    }
    let mock = cb_mock::MockServer::start(cb_mock::responder(move |req| {
        let user = req.last_user();
        let reply = match cb_mock::reader_script::parse(user) {
            Some(q) if !q.context.is_empty() => cb_mock::reader_script::follow_context(&q),
            _ => known
                .get(user)
                .cloned()
                .unwrap_or_else(|| "None".to_owned()),
        };
        cb_mock::Reply::Content(reply)
    }))
    .await;
    let base = mock.base_url();

    // conflictbench eval, one seed (42, the export's), on what the export holds (RECALL: the
    // QA files, not text generation).
    let mut predictions = Vec::new();
    for benchmark in ["recall", "kre"] {
        let out = tmp.path().join(format!("eval-{benchmark}"));
        let data: Vec<PathBuf> = if benchmark == "recall" {
            ["eventkg", "uj"]
                .iter()
                .flat_map(|d| {
                    ["qa_a", "qa_na"].map(|t| built.join(format!("recall/{d}/{t}.jsonl")))
                })
                .collect()
        } else {
            vec![built.join("kre")]
        };
        let mut args = vec![benchmark];
        for d in &data {
            args.extend(["--data", d.to_str().unwrap()]);
        }
        args.extend([
            "--out",
            out.to_str().unwrap(),
            "--base-url",
            &base,
            "--model",
            "m",
            "--seeds",
            "1",
        ]);
        let o = eval(&args).await;
        assert!(o.status.success(), "{}", text(&o));
        predictions.extend(read_jsonl(&out.join("predictions.jsonl")));
    }
    let eval_prompts = prompts_sent(&mock);
    mock.clear_journal();

    // The harness, run from another folder than the export's.
    let harness_out = tmp.path().join("harness");
    let o = tokio::process::Command::new(&lm_eval)
        .current_dir(tmp.path())
        .args(["--model", "local-chat-completions", "--model_args"])
        .arg(format!("model=m,base_url={base}/chat/completions,num_concurrent=1,max_retries=1,tokenizer_backend=None"))
        .args(["--apply_chat_template", "--include_path"])
        .arg(&tasks)
        .args([
            "--tasks",
            "conflictbench_recall,conflictbench_kre",
            "--log_samples",
            "--output_path",
        ])
        .arg(&harness_out)
        .env("OPENAI_API_KEY", "sk-test")
        .env("HF_DATASETS_OFFLINE", "1")
        .output()
        .await
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let harness_prompts = prompts_sent(&mock);
    for p in eval_prompts.keys() {
        assert!(
            harness_prompts.contains_key(p),
            "eval sent a prompt the harness did not: {p:?}"
        );
    }

    // Per item: the harness's exact_match against eval's `correct`.
    let mut scores: HashMap<(String, String), f64> = HashMap::new();
    for p in walk(&harness_out) {
        let file = p.file_name().unwrap().to_string_lossy().into_owned();
        let Some(rest) = file.strip_prefix("samples_") else {
            continue;
        };
        let task = rest.rsplit_once('_').unwrap().0.to_owned();
        for s in read_jsonl(&p) {
            let id = s["doc"]["id"].as_str().unwrap().to_owned();
            scores.insert((task.clone(), id), s["exact_match"].as_f64().unwrap());
        }
    }
    let mut compared: BTreeMap<String, (usize, f64, f64)> = BTreeMap::new();
    for p in &predictions {
        let task = match p["benchmark"].as_str().unwrap() {
            "recall" => format!(
                "recall_{}_{}_{}",
                p["domain"].as_str().unwrap(),
                p["task"].as_str().unwrap(),
                p["setting"].as_str().unwrap()
            ),
            _ if p["setting"] == "memory" => {
                format!("kre_{}_memory", p["domain"].as_str().unwrap())
            }
            _ => format!(
                "kre_{}_{}_{}",
                p["domain"].as_str().unwrap(),
                p["setting"].as_str().unwrap(),
                p["context"].as_str().unwrap()
            ),
        };
        let item = p["item"].as_str().unwrap().to_owned();
        let theirs = *scores
            .get(&(task.clone(), item.clone()))
            .unwrap_or_else(|| panic!("the harness did not score {task} {item}"));
        let ours = if p["correct"].as_bool().unwrap() {
            1.0
        } else {
            0.0
        };
        assert_eq!(theirs, ours, "{task} {item}: {}", p["raw"]);
        let c = compared.entry(task).or_default();
        c.0 += 1;
        c.1 += ours;
        c.2 += theirs;
    }
    assert_eq!(
        compared.values().map(|c| c.0).sum::<usize>(),
        predictions.len()
    );
    eprintln!(
        "{} items in {} tasks scored alike by eval and the harness",
        predictions.len(),
        compared.len()
    );
    for (task, (n, ours, theirs)) in &compared {
        eprintln!(
            "{task}: n={n} eval {:.3} harness {:.3}",
            ours / *n as f64,
            theirs / *n as f64
        );
    }

    // The log-likelihood variants load and run.
    let o = tokio::process::Command::new(&lm_eval)
        .current_dir(tmp.path())
        .args(["--model", "dummy", "--include_path"])
        .arg(&tasks)
        .args([
            "--tasks",
            "conflictbench_recall_mc,conflictbench_kre_mc",
            "--limit",
            "2",
        ])
        .env("HF_DATASETS_OFFLINE", "1")
        .output()
        .await
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
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
