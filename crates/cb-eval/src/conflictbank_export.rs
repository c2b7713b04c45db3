//! `conflictbench export conflictbank`: a built ConflictBank-style benchmark as the input of
//! ConflictBank's own evaluation, so that its `inference.py` runs on it unchanged and its
//! `evaluate.py` scores what that writes.
//!
//! For each domain (a folder holding `conflictbank.jsonl`, rows of
//! [`cb_model::conflictbank::CbRow`]), one folder `OUT/<domain>/` with one file per setting
//! of [`SETTINGS`], `<setting>.json`, each one JSON object a line, the rows in the same
//! order in every file (ConflictBank's filter pairs them by position):
//! `{"id", "prompt", "true_label", "replaced_label", "uncertain_label"}`. `inference.py`
//! reads `prompt`, asks the model for the next token and keeps the log-probabilities of
//! ` A` .. ` D`, so the prompt (`prompts/eval/conflictbank.md`) ends with `Answer:`: the
//! evidence of the setting (none, the correct one, a conflicting one, or both in the
//! setting's order), the question and the four options. Files are written whole
//! (temporary file, then rename) and their bytes depend only on the rows and the template.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use cb_audit::AuditError;
use cb_model::conflictbank::{Cause, CbRow, CB_LETTERS};
use cb_step::Prompt;
use serde::Serialize;
use serde_json::json;

use crate::conflictbank::SETTINGS;
use crate::templates::Templates;
use crate::EvalError;

/// The file a ConflictBank-style build writes its rows to, in each domain's folder.
pub const ROWS_FILE: &str = "conflictbank.jsonl";

/// One exported domain.
#[derive(Debug, Clone, Serialize)]
pub struct CbExported {
    pub domain: String,
    pub rows: usize,
    pub dir: PathBuf,
}

/// The evidences a setting shows, in order (`None`: the correct evidence).
pub fn setting_evidence(setting: &str) -> Option<Vec<Option<Cause>>> {
    let cause = |name: &str| match name {
        "misinformation" => Some(Cause::Misinformation),
        "temporal" => Some(Cause::Temporal),
        "semantic" => Some(Cause::Semantic),
        _ => None,
    };
    match setting {
        "default" => Some(Vec::new()),
        "correct" => Some(vec![None]),
        _ => match setting.split_once('_') {
            Some(("correct", c)) => Some(vec![None, Some(cause(c)?)]),
            Some((c, "correct")) => Some(vec![Some(cause(c)?), None]),
            None => Some(vec![Some(cause(setting)?)]),
            _ => None,
        },
    }
}

/// The domains' row files under `dir`: `dir/conflictbank.jsonl`, else
/// `dir/*/conflictbank.jsonl` (a benchmark's folder), else `dir/conflictbank/*/...` (a
/// build's `generated/`); a file is taken as the rows of its folder's domain.
pub fn find_rows(dir: &Path) -> Result<Vec<(String, PathBuf)>, EvalError> {
    let domain_of = |p: &Path| {
        p.parent()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "conflictbank".to_string())
    };
    if dir.is_file() {
        return Ok(vec![(domain_of(dir), dir.to_path_buf())]);
    }
    for base in [dir.to_path_buf(), dir.join("conflictbank")] {
        if base.join(ROWS_FILE).is_file() {
            return Ok(vec![(
                domain_of(&base.join(ROWS_FILE)),
                base.join(ROWS_FILE),
            )]);
        }
        let mut found = Vec::new();
        if let Ok(entries) = std::fs::read_dir(&base) {
            for entry in entries.flatten() {
                let rows = entry.path().join(ROWS_FILE);
                if rows.is_file() {
                    found.push((domain_of(&rows), rows));
                }
            }
        }
        if !found.is_empty() {
            found.sort();
            return Ok(found);
        }
    }
    Err(EvalError::Config(format!(
        "no ConflictBank-style rows ({ROWS_FILE}) in {} or its domain folders",
        dir.display()
    )))
}

/// The domains' row files under each of `paths` ([`find_rows`]); an error names the first
/// path that has none.
pub fn find_rows_in(paths: &[PathBuf]) -> Result<Vec<(String, PathBuf)>, EvalError> {
    let mut all = Vec::new();
    for p in paths {
        all.extend(find_rows(p)?);
    }
    Ok(all)
}

/// Writes every domain's setting files under `out`.
pub fn export(
    build: &Path,
    out: &Path,
    prompts: &cb_step::Files,
    limit: Option<usize>,
) -> Result<Vec<CbExported>, EvalError> {
    if limit == Some(0) {
        return Err(EvalError::Config(
            "--limit must be at least 1: an export of no rows is refused".into(),
        ));
    }
    if out.exists() && !out.is_dir() {
        return Err(EvalError::Config(format!(
            "{} is not a folder: give the folder the domains' folders go to",
            out.display()
        )));
    }
    let prompt = Templates::load(prompts, "conflictbank.md")?;
    let templates = Templates::new();
    let mut done = Vec::new();
    for (domain, rows) in find_rows(build)? {
        let dir = out.join(&domain);
        let n = export_domain(&rows, &dir, &templates, &prompt, limit)?;
        done.push(CbExported {
            domain,
            rows: n,
            dir,
        });
    }
    Ok(done)
}

/// One setting's file in the writing.
struct Output {
    setting: &'static str,
    evidence: Vec<Option<Cause>>,
    tmp: tempfile::NamedTempFile,
    writer: BufWriter<File>,
}

/// Writes one domain's folder; on an error, removes the folders it made (its temporary files
/// are gone with it), so that a bad row leaves nothing behind.
fn export_domain(
    rows: &Path,
    dir: &Path,
    templates: &Templates,
    prompt: &Prompt,
    limit: Option<usize>,
) -> Result<usize, EvalError> {
    let mut made = Vec::new();
    let mut at = Some(dir);
    while let Some(d) = at.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
        made.push(d.to_path_buf());
        at = d.parent();
    }
    let result = write_domain(rows, dir, templates, prompt, limit);
    if result.is_err() {
        for d in &made {
            let _ = std::fs::remove_dir(d);
        }
    }
    result
}

fn write_err(path: &Path) -> impl FnOnce(std::io::Error) -> EvalError {
    let path = path.to_path_buf();
    move |source| EvalError::Write { path, source }
}

fn write_domain(
    rows: &Path,
    dir: &Path,
    templates: &Templates,
    prompt: &Prompt,
    limit: Option<usize>,
) -> Result<usize, EvalError> {
    std::fs::create_dir_all(dir).map_err(write_err(dir))?;
    let mut outputs = Vec::new();
    for setting in SETTINGS {
        let tmp = tempfile::NamedTempFile::new_in(dir).map_err(write_err(dir))?;
        let writer = BufWriter::new(tmp.reopen().map_err(write_err(dir))?);
        let evidence = setting_evidence(setting).unwrap_or_default();
        outputs.push(Output {
            setting,
            evidence,
            tmp,
            writer,
        });
    }
    let shown = rows.display().to_string();
    let file = File::open(rows).map_err(|source| AuditError::Io {
        path: shown.clone(),
        source,
    })?;
    let mut count = 0;
    for (i, line) in BufReader::new(file).lines().enumerate() {
        if limit.is_some_and(|l| count >= l) {
            break;
        }
        let parse = |message: String| AuditError::Parse {
            path: shown.clone(),
            location: format!("line {}", i + 1),
            message,
        };
        let line = line.map_err(|e| parse(format!("cannot read: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let row: CbRow = serde_json::from_str(&line)
            .map_err(|e| parse(format!("not a ConflictBank-style row: {e}")))?;
        let problems = row.problems();
        if !problems.is_empty() {
            return Err(parse(problems.join("; ")).into());
        }
        for out in &mut outputs {
            let text = prompt_of(&row, &out.evidence, templates, prompt)?;
            let line = json!({
                "id": row.id,
                "prompt": text,
                "true_label": row.qa.true_label,
                "replaced_label": row.qa.replaced_label,
                "uncertain_label": row.qa.uncertain_label,
            });
            writeln!(out.writer, "{line}").map_err(write_err(out.tmp.path()))?;
        }
        count += 1;
    }
    if count == 0 {
        return Err(EvalError::Config(format!("{shown} holds no row")));
    }
    for out in outputs {
        let path = dir.join(format!("{}.json", out.setting));
        let mut writer = out.writer;
        writer.flush().map_err(write_err(&path))?;
        drop(writer);
        out.tmp.persist(&path).map_err(|e| EvalError::Write {
            path,
            source: e.error,
        })?;
    }
    Ok(count)
}

/// The prompt of one row in one setting: the user part of [`messages_of`], as
/// `inference.py` reads it.
pub(crate) fn prompt_of(
    row: &CbRow,
    evidence: &[Option<Cause>],
    templates: &Templates,
    prompt: &Prompt,
) -> Result<String, EvalError> {
    let messages = messages_of(row, evidence, templates, prompt)?;
    Ok(user_part(&messages))
}

/// The last message's text, its trailing white space cut (the prompt ends with `Answer:`).
pub(crate) fn user_part(messages: &[cb_llm::Message]) -> String {
    messages
        .last()
        .map(|m| m.content.trim_end().to_string())
        .unwrap_or_default()
}

/// The conversation that asks one row in one setting (`evidence`, from [`setting_evidence`]).
pub(crate) fn messages_of(
    row: &CbRow,
    evidence: &[Option<Cause>],
    templates: &Templates,
    prompt: &Prompt,
) -> Result<Vec<cb_llm::Message>, EvalError> {
    let mut evidences = Vec::new();
    for which in evidence {
        let text = match which {
            None => &row.correct.text,
            Some(cause) => {
                &row.conflict(*cause)
                    .ok_or_else(|| {
                        EvalError::Config(format!("row {}: no {} evidence", row.id, cause.name()))
                    })?
                    .evidence
                    .text
            }
        };
        evidences.push(text.trim().to_string());
    }
    let options: Vec<_> = CB_LETTERS
        .iter()
        .zip(&row.qa.options)
        .map(|(letter, text)| json!({"letter": letter, "text": text}))
        .collect();
    let ctx = minijinja::Value::from_serialize(json!({
        "evidences": evidences,
        "question": row.qa.question,
        "options": options,
    }));
    templates.render(prompt, ctx)
}

#[cfg(test)]
mod tests {
    use super::setting_evidence;
    use cb_model::Cause;

    #[test]
    fn every_setting_has_its_evidence_in_order() {
        for s in crate::conflictbank::SETTINGS {
            assert!(setting_evidence(s).is_some(), "{s}");
        }
        assert_eq!(setting_evidence("default"), Some(vec![]));
        assert_eq!(
            setting_evidence("temporal_correct"),
            Some(vec![Some(Cause::Temporal), None])
        );
        assert_eq!(
            setting_evidence("correct_semantic"),
            Some(vec![None, Some(Cause::Semantic)])
        );
        assert_eq!(setting_evidence("correct_correct"), None);
        assert_eq!(setting_evidence("other"), None);
    }
}
