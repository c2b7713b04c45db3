//! Finding the auditable files under the paths given and reading their rows.
//!
//! Known files: `*.json` arrays of KRE rows (the released layout, `" golden_context"` key, or
//! ours), `*.jsonl` clean KRE rows, and RECALL's `qa_a.jsonl`, `qa_na.jsonl`,
//! `text_generation.jsonl`. `manifest.json`, `rejects.jsonl` and `runs.jsonl` are never
//! audited. When a folder holds both `<stem>.json` and `<stem>.jsonl` (a build of ours writes
//! the same rows twice), only the JSONL is read: it carries the ids. Any other `*.json` or
//! `*.jsonl` a folder walk meets that does not hold KRE rows is reported as skipped, with
//! why. An empty array or an empty JSON-lines file is a file of 0 rows (a build that kept
//! none). A UTF-8 byte order mark at the start of a file is accepted.

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

/// A file a folder walk did not audit, and why.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Skipped {
    pub path: String,
    pub reason: String,
}

/// What [`find_files`] found.
#[derive(Debug, Clone, Default)]
pub struct Found {
    /// The files to audit, in a stable order.
    pub files: Vec<(PathBuf, FileKind)>,
    /// JSON files of folders that hold no KRE rows.
    pub skipped: Vec<Skipped>,
}

/// The auditable files under `paths`, in a stable order (folders walked in name order).
/// A file named explicitly must be of a known kind; inside folders, JSON that is not KRE
/// is skipped and reported in [`Found::skipped`].
pub fn find_files(paths: &[PathBuf]) -> Result<Found, AuditError> {
    let mut found = Found::default();
    let out = &mut found.files;
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| AuditError::Io {
            path: p.display().to_string(),
            source: e,
        })?;
        if meta.is_dir() {
            walk(p, out, &mut found.skipped)?;
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
    if found.files.is_empty() {
        let skipped: String = found
            .skipped
            .iter()
            .map(|s| format!("; skipped {}: {}", s.path, s.reason))
            .collect();
        return Err(AuditError::Input(format!(
            "no auditable file found under {}{skipped}",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(found)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn walk(
    dir: &Path,
    out: &mut Vec<(PathBuf, FileKind)>,
    skipped: &mut Vec<Skipped>,
) -> Result<(), AuditError> {
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
            walk(p, out, skipped)?;
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
                if let Some(reason) = not_kre_json(p)? {
                    skip(p, reason, skipped);
                    continue;
                }
            }
            FileKind::KreJsonl => {
                if let Some(reason) = not_kre_jsonl(p)? {
                    skip(p, reason, skipped);
                    continue;
                }
            }
            _ => {}
        }
        out.push((p.clone(), kind));
    }
    Ok(())
}

fn skip(p: &Path, reason: String, skipped: &mut Vec<Skipped>) {
    tracing::warn!(file = %p.display(), %reason, "not audited");
    skipped.push(Skipped {
        path: p.display().to_string(),
        reason,
    });
}

/// The text of a file, without a UTF-8 byte order mark; invalid UTF-8 is an error naming
/// its line.
fn read(p: &Path) -> Result<String, AuditError> {
    let mut bytes = std::fs::read(p).map_err(|e| AuditError::Io {
        path: p.display().to_string(),
        source: e,
    })?;
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line_start = valid.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        AuditError::Parse {
            path: p.display().to_string(),
            location: format!("line {}", valid.iter().filter(|b| **b == b'\n').count() + 1),
            message: format!(
                "invalid UTF-8 at byte {} of the line",
                valid.len() - line_start + 1
            ),
        }
    })
}

fn is_kre_object(v: &Value) -> bool {
    v.get("question").is_some() && v.get("choices").is_some() && v.get("negative_context").is_some()
}

/// Why a `*.json` file met in a folder is not a KRE array (`None`: it is one, maybe empty).
fn not_kre_json(p: &Path) -> Result<Option<String>, AuditError> {
    let v: Value = serde_json::from_str(&read(p)?).map_err(|e| AuditError::Parse {
        path: p.display().to_string(),
        location: format!("line {}", e.line()),
        message: e.to_string(),
    })?;
    Ok(match &v {
        Value::Array(a) => match a.first() {
            None => None,
            Some(first) if is_kre_object(first) => None,
            Some(Value::Object(_)) => Some(
                "its objects are not KRE rows (no question, choices and negative_context)".into(),
            ),
            Some(other) => Some(format!("an array of {}, not of objects", json_type(other))),
        },
        other => Some(format!(
            "its top level is {}, not an array of objects",
            json_type(other)
        )),
    })
}

/// Why a `*.jsonl` file met in a folder does not hold KRE rows (`None`: it does, or is empty).
fn not_kre_jsonl(p: &Path) -> Result<Option<String>, AuditError> {
    let text = read(p)?;
    let Some((n, first)) = text.lines().enumerate().find(|(_, l)| !l.trim().is_empty()) else {
        return Ok(None);
    };
    let v: Value = serde_json::from_str(first).map_err(|e| AuditError::Parse {
        path: p.display().to_string(),
        location: format!("line {}", n + 1),
        message: e.to_string(),
    })?;
    Ok((!is_kre_object(&v)).then(|| {
        format!(
            "its line {} is not a KRE row (no question, choices and negative_context)",
            n + 1
        )
    }))
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
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
