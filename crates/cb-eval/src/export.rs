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
//! generation is left out: its R-Rate needs the edited words, which the harness cannot see);
//! KRE `memory` (no context), `negative` (the negative context, as zero-shot asks a known
//! item) and `golden` (the golden context, as zero-shot asks an unknown one). KRE's few-shot
//! and role settings are left out: their examples and the split into known and unknown items
//! depend on the model's own memory answers, which a fixed task file cannot hold.
//!
//! Data paths in the YAML are absolute (the harness's JSON loader resolves relative paths
//! from the working directory, not from the YAML): export again after moving the folder.
//! Bytes are deterministic for the same rows, prompts, seed and output folder.

use crate::{kre, load, recall, EvalError, EvalOptions, Templates};
use cb_audit::FileKind;
use cb_model::letter;
use serde::Serialize;
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The regular expression the generate_until tasks read an option letter with: the first
/// capital letter A-H standing alone (not part of a word).
pub const LETTER_REGEX: &str = r"\b([A-H])\b";

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

/// Exports `benchmark` (`recall` or `kre`) from `opts.data` into `out` with the option order
/// of `opts.seeds[0]`; returns the tasks written.
pub fn lm_eval(
    benchmark: &str,
    opts: &EvalOptions,
    out: &Path,
) -> Result<Vec<Exported>, EvalError> {
    let seed = *opts
        .seeds
        .first()
        .ok_or_else(|| EvalError::Config("no seed to export with".into()))?;
    let templates = Templates::new();
    // (domain, setting) -> lines, in the order the rows are read.
    let mut tasks: BTreeMap<(String, String), Vec<Line>> = BTreeMap::new();
    match benchmark {
        "recall" => {
            let files = load(
                opts,
                |k| matches!(k, FileKind::QaA | FileKind::QaNa),
                |path, _| recall::domain_of(path),
            )?;
            let t_qa = Templates::load(&opts.prompts, "recall_qa.md")?;
            for f in &files {
                let task = if f.kind == FileKind::QaA {
                    "qa_a"
                } else {
                    "qa_na"
                };
                for row in &f.rows {
                    for setting in recall::SETTINGS {
                        let (messages, options, gold) =
                            recall::qa_prompt(&templates, &t_qa, recall::qa(row), setting, seed)?;
                        let key = (f.domain.clone(), format!("{task}_{setting}"));
                        tasks
                            .entry(key)
                            .or_default()
                            .push(line(&row.id, &row.file, &messages, options, gold)?);
                    }
                }
            }
        }
        "kre" => {
            let files = load(
                opts,
                |k| matches!(k, FileKind::KreJson | FileKind::KreJsonl),
                |_, r| r.domain.clone(),
            )?;
            let p = kre::prompts(opts)?;
            for f in &files {
                for (ri, row) in f.rows.iter().enumerate() {
                    let gold = cb_model::letter_index(&kre::kre(row).answer).ok_or_else(|| {
                        EvalError::Config(format!(
                            "{} row {}: answer {:?} is not an option letter",
                            row.file,
                            row.id,
                            kre::kre(row).answer
                        ))
                    })?;
                    for (name, setting, known) in [
                        ("memory", "memory", false),
                        ("negative", "zero_shot", true),
                        ("golden", "zero_shot", false),
                    ] {
                        let (job, order) =
                            kre::job(opts, &p, &templates, f, ri, setting, seed, known)?;
                        let options: Vec<String> = order
                            .iter()
                            .map(|i| kre::kre(row).choices[*i].clone())
                            .collect();
                        let shown = order.iter().position(|i| *i == gold).unwrap_or(usize::MAX);
                        tasks
                            .entry((f.domain.clone(), name.to_owned()))
                            .or_default()
                            .push(line(&row.id, &row.file, &job.messages, options, shown)?);
                    }
                }
            }
        }
        other => {
            return Err(EvalError::Config(format!(
                "unknown benchmark {other:?}; known: recall, kre"
            )))
        }
    }
    let out = absolute(out)?;
    let data_dir = out.join("data");
    std::fs::create_dir_all(&data_dir)
        .map_err(|e| EvalError::Config(format!("cannot create {}: {e}", data_dir.display())))?;
    let mut exported = Vec::new();
    for ((domain, setting), lines) in &tasks {
        let name = format!("{benchmark}_{domain}_{setting}");
        let data = data_dir.join(format!("{name}.jsonl"));
        let mut body = String::new();
        for l in lines {
            body.push_str(&serde_json::to_string(l).expect("json"));
            body.push('\n');
        }
        crate::report::write_file(&data_dir, &format!("{name}.jsonl"), body.as_bytes())?;
        let yaml = out.join(format!("{name}.yaml"));
        crate::report::write_file(
            &out,
            &format!("{name}.yaml"),
            task_yaml(&name, benchmark, &data, false).as_bytes(),
        )?;
        crate::report::write_file(
            &out,
            &format!("{name}_mc.yaml"),
            task_yaml(&name, benchmark, &data, true).as_bytes(),
        )?;
        exported.push(Exported {
            task: name,
            benchmark: benchmark.to_owned(),
            domain: domain.clone(),
            setting: setting.clone(),
            rows: lines.len(),
            yaml,
            data,
        });
    }
    crate::report::write_file(
        &out,
        "README.md",
        readme(benchmark, seed, &exported).as_bytes(),
    )?;
    Ok(exported)
}

fn absolute(p: &Path) -> Result<PathBuf, EvalError> {
    std::fs::create_dir_all(p)
        .and_then(|()| p.canonicalize())
        .map_err(|e| {
            EvalError::Config(format!(
                "cannot use {} as the output folder: {e}",
                p.display()
            ))
        })
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

/// The task YAML: `generate_until` with the letter read by [`LETTER_REGEX`], or
/// (`mc`) `multiple_choice` over the option letters.
fn task_yaml(name: &str, benchmark: &str, data: &Path, mc: bool) -> String {
    let mut task = json!({
        "task": if mc { format!("{name}_mc") } else { name.to_owned() },
        "tag": [format!("conflictbench_{benchmark}{}", if mc { "_mc" } else { "" })],
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": data.to_string_lossy()}},
        "test_split": "test",
        "description": "{{system}}",
        "doc_to_text": "{{user}}",
    });
    let extra = if mc {
        json!({
            "output_type": "multiple_choice",
            "doc_to_choice": "{{choices}}",
            "doc_to_target": "{{gold_index}}",
            "metric_list": [{"metric": "acc", "aggregation": "mean", "higher_is_better": true}],
        })
    } else {
        json!({
            "output_type": "generate_until",
            "doc_to_target": "{{gold}}",
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
    serde_yaml_ng::to_string(&task).expect("yaml")
}

fn readme(benchmark: &str, seed: u64, tasks: &[Exported]) -> String {
    let mut s = format!(
        "# {benchmark}: lm-evaluation-harness tasks\n\nWritten by `conflictbench export lm-eval` with the option order of seed {seed}. Each task asks its rows as `conflictbench eval` does (the same system and user text).\n\n```sh\nlm_eval --model local-chat-completions \\\n  --model_args model=MODEL,base_url=http://127.0.0.1:8000/v1/chat/completions \\\n  --apply_chat_template --include_path THIS_FOLDER --tasks conflictbench_{benchmark}\n```\n\n`conflictbench_{benchmark}` runs every generate_until task (the first option letter of the reply, `exact_match`); `conflictbench_{benchmark}_mc` the log-likelihood variants (`acc`), for models the harness scores that way. Data paths are absolute: export again after moving this folder.\n\n| task | rows |\n|---|---:|\n"
    );
    for t in tasks {
        let _ = writeln!(s, "| {} | {} |", t.task, t.rows);
    }
    s
}
