//! `conflictbench export lm-eval`: the benchmark's multiple-choice questions as
//! lm-evaluation-harness (0.4) tasks, asked exactly as `conflictbench eval` asks them.
//!
//! For each benchmark, domain and setting, one task YAML and one JSONL data file. Every data
//! line carries the conversation `eval` sends for that item (its `system` and `user` parts,
//! rendered from `prompts/eval/*.md` with the option order of the export's seed), the option
//! letters and the right one. Two tasks read each file:
//! - `NAME` (`generate_until`): the harness sends `system` (the task's `description`) and `user`
//!   (`doc_to_text`) as they are when run with `--apply_chat_template`, reads the first option
//!   letter of the reply with a regular expression and scores `exact_match` against the right
//!   letter: for API models, comparable with `eval`'s accuracy on the same rows;
//! - `NAME_mc` (`multiple_choice`): the log-likelihood of each option letter after the
//!   prompt, for models the harness scores that way (local weights; chat APIs cannot).
//!
//! Settings: RECALL QA-A and QA-NA with the `original`, `edited` and `none` context (text
//! generation is left out: its R-Rate needs the edited words, which the harness cannot see).
//! KRE: `memory` (no context) and every other setting `eval` runs (`zero_shot`, the three
//! few-shot configurations, the two roles) twice, `_negative` and `_golden`: `eval` asks an
//! item the model knows with its negative context and one it does not know with its golden
//! context, a split that depends on the model's own memory answers, so the export writes
//! both and the harness scores each on every row.
//!
//! Data paths: each YAML names its file relative to the output folder
//! (`dataset_kwargs.data_files`) and loads it through `custom_dataset`, a function of the
//! [`LOADER`] file written beside the YAMLs that resolves the path from its own place. The
//! harness resolves a `!function` from the YAML's folder but a `data_files` path from the
//! working directory, so this is what keeps the folder usable after a move.
//! Bytes are deterministic for the same rows, prompts and seed.

use crate::source::load;
use crate::templates::Templates;
use crate::{kre, recall, EvalError, EvalOptions};
use cb_audit::FileKind;
use cb_model::letter;
use serde::Serialize;
use serde_json::json;
use serde_yaml_ng::value::{Tag, TaggedValue};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The regular expression the generate_until tasks read an option letter with: the first
/// capital letter A-H standing alone (not part of a word).
pub const LETTER_REGEX: &str = r"\b([A-H])\b";

/// The Python file, beside the YAMLs, whose `load` reads a task's data file
/// (`custom_dataset: !function conflictbench_data.load`).
pub const LOADER: &str = "conflictbench_data.py";

const LOADER_SOURCE: &str = r#""""Reads the data file of a task written by `conflictbench export lm-eval`.

lm-evaluation-harness calls `load` as the task's `custom_dataset`, with the task's
`dataset_kwargs` (and `metadata`) as keyword arguments. The `data_files` paths are relative
to this file's folder, so the exported folder works wherever it lies and from any working
directory (the harness would resolve them from the working directory).
"""

from pathlib import Path

import datasets


def load(data_files, **_):
    here = Path(__file__).resolve().parent
    files = {split: str(here / path) for split, path in data_files.items()}
    return datasets.load_dataset("json", data_files=files)
"#;

/// One exported task.
#[derive(Debug, Clone, Serialize)]
pub struct Exported {
    pub task: String,
    pub benchmark: String,
    pub domain: String,
    pub setting: String,
    pub rows: usize,
    pub yaml: PathBuf,
    pub data: PathBuf,
}

/// One data line: the item asked in one setting.
#[derive(Debug, Serialize)]
struct Line {
    id: String,
    system: String,
    user: String,
    /// The option letters, in order.
    choices: Vec<String>,
    /// The right letter, and its index in `choices`.
    gold: String,
    gold_index: usize,
    /// The options' texts in the order shown.
    options: Vec<String>,
}

/// KRE's exported settings: (task suffix, `eval`'s setting, asked as a known item, that is
/// with the negative context).
fn kre_settings() -> Vec<(String, &'static str, bool)> {
    let mut out = Vec::new();
    for s in kre::SETTINGS {
        if s == "memory" {
            out.push((s.to_owned(), s, false));
        } else {
            out.push((format!("{s}_negative"), s, true));
            out.push((format!("{s}_golden"), s, false));
        }
    }
    out
}

/// (domain, setting) -> the data lines of that task, in the order the rows are read.
type Tasks = BTreeMap<(String, String), Vec<Line>>;

/// The lines of RECALL's QA tasks, asked with `seed`.
fn recall_tasks(opts: &EvalOptions, seed: u64) -> Result<Tasks, EvalError> {
    let files = load(
        opts,
        |k| matches!(k, FileKind::QaA | FileKind::QaNa),
        |path, _| recall::domain_of(path),
        &mut |_, _| Ok(()),
    )?;
    let templates = Templates::new();
    let t_qa = Templates::load(&opts.prompts, "recall_qa.md")?;
    let mut tasks = Tasks::new();
    for f in &files {
        let task = if f.kind == FileKind::QaA {
            "qa_a"
        } else {
            "qa_na"
        };
        for r in f.rows() {
            let (_, row) = r?;
            for setting in recall::SETTINGS {
                let (messages, options, gold) =
                    recall::qa_prompt(&templates, &t_qa, recall::qa(&row), setting, seed)?;
                let key = (f.domain.clone(), format!("{task}_{setting}"));
                tasks
                    .entry(key)
                    .or_default()
                    .push(line(&row.id, &row.file, &messages, options, gold)?);
            }
        }
    }
    Ok(tasks)
}

/// The lines of KRE's tasks, asked with `seed`.
fn kre_tasks(opts: &EvalOptions, seed: u64) -> Result<Tasks, EvalError> {
    let files = load(
        opts,
        |k| matches!(k, FileKind::KreJson | FileKind::KreJsonl),
        |_, r| r.domain.clone(),
        &mut |_, _| Ok(()),
    )?;
    let asker = kre::Asker::new(opts)?;
    let settings = kre_settings();
    let mut tasks = Tasks::new();
    for f in &files {
        for r in f.rows() {
            let (_, row) = r?;
            let k = kre::kre(&row);
            let gold = cb_model::letter_index(&k.answer).ok_or_else(|| {
                EvalError::Config(format!(
                    "{} row {}: answer {:?} is not an option letter",
                    row.file, row.id, k.answer
                ))
            })?;
            for (name, setting, known) in &settings {
                let (job, order) = asker.job(f, &row, setting, seed, *known)?;
                let options: Vec<String> = order.iter().map(|i| k.choices[*i].clone()).collect();
                let shown = order.iter().position(|i| *i == gold).unwrap_or(usize::MAX);
                tasks
                    .entry((f.domain.clone(), name.clone()))
                    .or_default()
                    .push(line(&row.id, &row.file, &job.messages, options, shown)?);
            }
        }
    }
    Ok(tasks)
}

/// Exports `benchmark` (`recall` or `kre`) from `opts.data` into `out` with the option order
/// (and few-shot examples) of `opts.seeds[0]`: per domain and setting a data file under
/// `data/` and two task YAMLs. Returns the tasks written; [`finish`] writes the loader and
/// the README once every benchmark is exported.
pub fn lm_eval(
    benchmark: &str,
    opts: &EvalOptions,
    out: &Path,
) -> Result<Vec<Exported>, EvalError> {
    let seed = *opts
        .seeds
        .first()
        .ok_or_else(|| EvalError::Config("no seed to export with".into()))?;
    let tasks = match benchmark {
        "recall" => recall_tasks(opts, seed)?,
        "kre" => kre_tasks(opts, seed)?,
        other => {
            return Err(EvalError::Config(format!(
                "unknown benchmark {other:?}; known: recall, kre"
            )))
        }
    };
    let data_dir = out.join("data");
    create_dir(&data_dir)?;
    tasks
        .iter()
        .map(|((domain, setting), lines)| {
            write_task(benchmark, domain, setting, lines, out, &data_dir)
        })
        .collect()
}

/// Writes one task's data file and its two YAMLs.
fn write_task(
    benchmark: &str,
    domain: &str,
    setting: &str,
    lines: &[Line],
    out: &Path,
    data_dir: &Path,
) -> Result<Exported, EvalError> {
    let name = format!("{benchmark}_{domain}_{setting}");
    let file = format!("{name}.jsonl");
    let mut body = String::new();
    for l in lines {
        body.push_str(&serde_json::to_string(l).expect("json"));
        body.push('\n');
    }
    crate::report::write_file(data_dir, &file, body.as_bytes())?;
    let relative = format!("data/{file}");
    for mc in [false, true] {
        let yaml = task_yaml(&name, benchmark, &relative, mc)
            .map_err(|e| EvalError::Config(format!("cannot write the task YAML of {name}: {e}")))?;
        let task = if mc {
            format!("{name}_mc")
        } else {
            name.clone()
        };
        crate::report::write_file(out, &format!("{task}.yaml"), yaml.as_bytes())?;
    }
    Ok(Exported {
        task: name.clone(),
        benchmark: benchmark.to_owned(),
        domain: domain.to_owned(),
        setting: setting.to_owned(),
        rows: lines.len(),
        yaml: out.join(format!("{name}.yaml")),
        data: data_dir.join(file),
    })
}

/// Writes what every exported folder holds once: the data loader ([`LOADER`]) and a README
/// listing `tasks` with the commands that run them.
pub fn finish(out: &Path, seed: u64, tasks: &[Exported]) -> Result<(), EvalError> {
    create_dir(out)?;
    crate::report::write_file(out, LOADER, LOADER_SOURCE.as_bytes())?;
    crate::report::write_file(out, "README.md", readme(seed, tasks).as_bytes())
}

fn create_dir(dir: &Path) -> Result<(), EvalError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| EvalError::Config(format!("cannot create {}: {e}", dir.display())))
}

/// One data line from the conversation `eval` sends: a system part and one user part.
fn line(
    id: &str,
    file: &str,
    messages: &[cb_llm::Message],
    options: Vec<String>,
    gold: usize,
) -> Result<Line, EvalError> {
    let part = |role: &str| -> Vec<&str> {
        messages
            .iter()
            .filter(|m| m.role == role)
            .map(|m| m.content.as_str())
            .collect()
    };
    let (system, user) = (part("system"), part("user"));
    if user.len() != 1 || system.len() > 1 || messages.len() != system.len() + user.len() {
        return Err(EvalError::Config(format!(
            "{file} row {id}: the prompt is not one system and one user message, which a harness task cannot send as it is"
        )));
    }
    if gold >= options.len() {
        return Err(EvalError::Config(format!(
            "{file} row {id}: the right option is not among the options shown"
        )));
    }
    Ok(Line {
        id: id.to_owned(),
        system: system.first().copied().unwrap_or("").to_owned(),
        user: user[0].to_owned(),
        choices: (0..options.len()).map(letter).collect(),
        gold: letter(gold),
        gold_index: gold,
        options,
    })
}

/// The task YAML reading `data` (relative to the output folder): `generate_until` with the
/// letter read by [`LETTER_REGEX`], or (`mc`) `multiple_choice` over the option letters.
/// `doc_to_text`, `doc_to_target` and `doc_to_choice` name a data field, which the harness
/// takes as it is; `description` (the system message with `--apply_chat_template`) is a
/// template of the `system` field.
fn task_yaml(
    name: &str,
    benchmark: &str,
    data: &str,
    mc: bool,
) -> Result<String, serde_yaml_ng::Error> {
    let mut task = json!({
        "task": if mc { format!("{name}_mc") } else { name.to_owned() },
        "tag": [format!("conflictbench_{benchmark}{}", if mc { "_mc" } else { "" })],
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": data}},
        "test_split": "test",
        // Without `--apply_chat_template` the harness puts the description right before the
        // question: the log-likelihood variant, often run that way, keeps them apart.
        "description": if mc { "{% if system %}{{system}}\n\n{% endif %}" } else { "{{system}}" },
        "doc_to_text": "user",
    });
    let extra = if mc {
        json!({
            "output_type": "multiple_choice",
            "doc_to_choice": "choices",
            "doc_to_target": "gold_index",
            "metric_list": [{"metric": "acc", "aggregation": "mean", "higher_is_better": true}],
        })
    } else {
        json!({
            "output_type": "generate_until",
            "doc_to_target": "gold",
            "generation_kwargs": {"until": [], "do_sample": false, "temperature": 0.0, "max_gen_toks": 256},
            "filter_list": [{"name": "letter", "filter": [
                {"function": "regex", "regex_pattern": LETTER_REGEX, "group_select": 0},
                {"function": "take_first"},
            ]}],
            "metric_list": [{"metric": "exact_match", "aggregation": "mean", "higher_is_better": true}],
        })
    };
    if let (Some(t), Some(e)) = (task.as_object_mut(), extra.as_object()) {
        t.extend(e.clone());
        t.insert(
            "metadata".into(),
            json!({"version": 1.0, "source": "conflictbench export lm-eval"}),
        );
    }
    let mut yaml = serde_yaml_ng::to_value(&task)?;
    if let Some(m) = yaml.as_mapping_mut() {
        let module = LOADER.trim_end_matches(".py");
        m.insert(
            "custom_dataset".into(),
            serde_yaml_ng::Value::Tagged(Box::new(TaggedValue {
                tag: Tag::new("function"),
                value: format!("{module}.load").into(),
            })),
        );
    }
    serde_yaml_ng::to_string(&yaml)
}

fn readme(seed: u64, tasks: &[Exported]) -> String {
    let mut benchmarks: Vec<&str> = tasks.iter().map(|t| t.benchmark.as_str()).collect();
    benchmarks.dedup();
    let tags: Vec<String> = benchmarks
        .iter()
        .map(|b| format!("conflictbench_{b}"))
        .collect();
    let mut s = format!(
        "# lm-evaluation-harness tasks\n\nWritten by `conflictbench export lm-eval` with the option order (and few-shot examples) of seed {seed}. Each task asks its rows as `conflictbench eval` does: every line of `data/` holds the system and user text eval sends for that item, and the right letter.\n\n```sh\nlm_eval --model local-chat-completions \\\n  --model_args model=MODEL,base_url=http://127.0.0.1:8000/v1/chat/completions \\\n  --apply_chat_template --include_path THIS_FOLDER --tasks {}\n```\n\nThe tag `conflictbench_<benchmark>` runs every generate_until task of a benchmark (the first standalone letter A-H of the reply, `exact_match`); `conflictbench_<benchmark>_mc` the log-likelihood variants (`acc`), for models the harness scores that way. The tasks read `data/` through `{LOADER}` (`custom_dataset`), so this folder can be moved. RECALL's text generation is not exported (its R-Rate needs the edited words, which the harness cannot see). KRE's settings other than `memory` come as `_negative` and `_golden`: eval asks an item the model knows with the negative context and one it does not know with the golden one.\n\n| task | rows |\n|---|---:|\n",
        tags.join(",")
    );
    for t in tasks {
        let _ = writeln!(s, "| {} | {} |", t.task, t.rows);
    }
    s
}
