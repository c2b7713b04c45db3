//! Finding the auditable files under the paths given and reading their rows.
//!
//! Known files: `*.json` arrays of KRE rows (the released layout, `" golden_context"` key, or
//! ours), `*.jsonl` clean KRE rows, and RECALL's `qa_a.jsonl`, `qa_na.jsonl`,
//! `text_generation.jsonl`. `manifest.json`, `rejects.jsonl` and `runs.jsonl` are never
//! audited. When a folder holds both `<stem>.json` and `<stem>.jsonl` (a build of ours writes
//! the same rows twice), only the JSONL is read: it carries the ids.

use crate::AuditError;
use cb_model::{KreRow, QaRow, TextGenRow};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// A JSON array of KRE rows.
    KreJson,
    /// KRE rows, one JSON object a line.
    KreJsonl,
    /// RECALL `qa_a.jsonl`.
    QaA,
    /// RECALL `qa_na.jsonl`.
    QaNa,
    /// RECALL `text_generation.jsonl`.
    TextGeneration,
}

/// The content of one row.
#[derive(Debug, Clone)]
pub enum Payload {
    Kre(KreRow),
    Qa(QaRow),
    TextGen(TextGenRow),
}

/// One row read from a file.
#[derive(Debug, Clone)]
pub struct Row {
    /// The file as found (the path given, or below the folder given).
    pub file: String,
    /// 0-based position in the file.
    pub index: usize,
    /// The row's `id`, or `<file name>#<index>` when the file has none (released KRE).
    pub id: String,
    /// The row's `domain`, or the file stem.
    pub domain: String,
    pub payload: Payload,
}

const NEVER: [&str; 3] = ["manifest.json", "rejects.jsonl", "runs.jsonl"];

fn kind_by_name(name: &str) -> Option<FileKind> {
    match name {
        n if NEVER.contains(&n) => None,
        "qa_a.jsonl" => Some(FileKind::QaA),
        "qa_na.jsonl" => Some(FileKind::QaNa),
        "text_generation.jsonl" => Some(FileKind::TextGeneration),
        n if n.ends_with(".jsonl") => Some(FileKind::KreJsonl),
        n if n.ends_with(".json") => Some(FileKind::KreJson),
        _ => None,
    }
}

/// The auditable files under `paths`, in a stable order (folders walked in name order).
/// A file named explicitly must be of a known kind; inside folders, JSON that is not KRE
/// is skipped (with a debug log).
pub fn find_files(paths: &[PathBuf]) -> Result<Vec<(PathBuf, FileKind)>, AuditError> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| AuditError::Io {
            path: p.display().to_string(),
            source: e,
        })?;
        if meta.is_dir() {
            walk(p, &mut out)?;
        } else {
            let name = file_name(p);
            let kind = kind_by_name(&name).ok_or_else(|| {
                AuditError::Input(format!(
                    "{} is not an auditable file (expected a KRE .json/.jsonl, qa_a.jsonl, qa_na.jsonl or text_generation.jsonl)",
                    p.display()
                ))
            })?;
            out.push((p.clone(), kind));
        }
    }
    if out.is_empty() {
        return Err(AuditError::Input(format!(
            "no auditable file found under {}",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(out)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn walk(dir: &Path, out: &mut Vec<(PathBuf, FileKind)>) -> Result<(), AuditError> {
    let io = |e| AuditError::Io {
        path: dir.display().to_string(),
        source: e,
    };
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(io)?;
    entries.sort();
    let names: Vec<String> = entries.iter().map(|p| file_name(p)).collect();
    for p in &entries {
        if p.is_dir() {
            walk(p, out)?;
            continue;
        }
        let name = file_name(p);
        let Some(kind) = kind_by_name(&name) else {
            continue;
        };
        match kind {
            FileKind::KreJson => {
                if names.contains(&format!("{name}l")) {
                    tracing::debug!(file = %p.display(), "skipped: the .jsonl beside it holds the same rows");
                    continue;
                }
                if !looks_like_kre_json(p)? {
                    tracing::debug!(file = %p.display(), "skipped: not a KRE array");
                    continue;
                }
            }
            FileKind::KreJsonl if !looks_like_kre_jsonl(p)? => {
                tracing::debug!(file = %p.display(), "skipped: not KRE rows");
                continue;
            }
            _ => {}
        }
        out.push((p.clone(), kind));
    }
    Ok(())
}

fn read(p: &Path) -> Result<String, AuditError> {
    std::fs::read_to_string(p).map_err(|e| AuditError::Io {
        path: p.display().to_string(),
        source: e,
    })
}

fn is_kre_object(v: &Value) -> bool {
    v.get("question").is_some() && v.get("choices").is_some() && v.get("negative_context").is_some()
}

fn looks_like_kre_json(p: &Path) -> Result<bool, AuditError> {
    let v: Value = serde_json::from_str(&read(p)?).map_err(|e| AuditError::Parse {
        path: p.display().to_string(),
        location: format!("line {}", e.line()),
        message: e.to_string(),
    })?;
    Ok(matches!(&v, Value::Array(a) if a.first().is_some_and(is_kre_object)))
}

fn looks_like_kre_jsonl(p: &Path) -> Result<bool, AuditError> {
    let text = read(p)?;
    let Some((n, first)) = text.lines().enumerate().find(|(_, l)| !l.trim().is_empty()) else {
        return Ok(false);
    };
    let v: Value = serde_json::from_str(first).map_err(|e| AuditError::Parse {
        path: p.display().to_string(),
        location: format!("line {}", n + 1),
        message: e.to_string(),
    })?;
    Ok(is_kre_object(&v))
}

/// Reads every row of a file. Any record that does not parse is an error naming the file
/// and the line (JSONL) or record index (JSON array).
pub fn read_rows(path: &Path, kind: FileKind) -> Result<Vec<Row>, AuditError> {
    let text = read(path)?;
    let file = path.display().to_string();
    let name = file_name(path);
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let parse_err = |location: String, message: String| AuditError::Parse {
        path: file.clone(),
        location,
        message,
    };
    let mut records: Vec<(String, Value)> = Vec::new();
    if kind == FileKind::KreJson {
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| parse_err(format!("line {}", e.line()), e.to_string()))?;
        let Value::Array(items) = v else {
            return Err(parse_err(
                "top level".into(),
                "expected a JSON array of KRE rows".into(),
            ));
        };
        for (i, v) in items.into_iter().enumerate() {
            records.push((format!("record {i}"), v));
        }
    } else {
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(line)
                .map_err(|e| parse_err(format!("line {}", n + 1), e.to_string()))?;
            records.push((format!("line {}", n + 1), v));
        }
    }
    let mut rows = Vec::with_capacity(records.len());
    for (index, (location, v)) in records.into_iter().enumerate() {
        let id = match v.get("id").and_then(Value::as_str) {
            Some(s) => s.to_owned(),
            None => format!("{name}#{index}"),
        };
        let domain = match v.get("domain").and_then(Value::as_str) {
            Some(s) if !s.is_empty() => s.to_owned(),
            _ => stem.clone(),
        };
        let payload = match kind {
            FileKind::KreJson | FileKind::KreJsonl => serde_json::from_value(v).map(Payload::Kre),
            FileKind::QaA | FileKind::QaNa => serde_json::from_value(v).map(Payload::Qa),
            FileKind::TextGeneration => serde_json::from_value(v).map(Payload::TextGen),
        }
        .map_err(|e| parse_err(location.clone(), e.to_string()))?;
        rows.push(Row {
            file: file.clone(),
            index,
            id,
            domain,
            payload,
        });
    }
    Ok(rows)
}
