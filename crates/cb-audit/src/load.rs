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
//!
//! Files are read as streams: a JSON array a record at a time, JSON lines a line at a time
//! ([`for_each_row`]), so that memory is bounded by the largest record, not the file. A
//! file is first checked to be UTF-8 a block at a time, so that invalid UTF-8 anywhere is
//! named (line and byte) before any record is used.

use crate::AuditError;
use cb_model::json::type_name;
use cb_model::{KreRow, QaRow, TextGenRow};
use serde_json::Value;
use std::io::{BufRead, Read};
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
    /// ConflictBank-style rows (`conflictbank.jsonl`, or any JSON-lines file whose rows have
    /// `fact`, `conflicts` and `qa`).
    ConflictBank,
}

/// The content of one row.
#[derive(Debug, Clone)]
pub enum Payload {
    Kre(KreRow),
    Qa(QaRow),
    TextGen(TextGenRow),
    Cb(Box<cb_model::conflictbank::CbRow>),
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

/// The JSON files of a build folder that never hold rows.
pub const NEVER: [&str; 3] = ["manifest.json", "rejects.jsonl", "runs.jsonl"];

fn kind_by_name(name: &str) -> Option<FileKind> {
    match name {
        n if NEVER.contains(&n) => None,
        "qa_a.jsonl" => Some(FileKind::QaA),
        "qa_na.jsonl" => Some(FileKind::QaNa),
        "text_generation.jsonl" => Some(FileKind::TextGeneration),
        "conflictbank.jsonl" => Some(FileKind::ConflictBank),
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
                    "{} is not an auditable file (expected a KRE .json/.jsonl, qa_a.jsonl, qa_na.jsonl, text_generation.jsonl or conflictbank.jsonl)",
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
            FileKind::KreJsonl => match not_kre_jsonl(p)? {
                Some(_) if is_cb_jsonl(p)? => {
                    out.push((p.clone(), FileKind::ConflictBank));
                    continue;
                }
                Some(reason) => {
                    skip(p, reason, skipped);
                    continue;
                }
                None => {}
            },
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

fn io_err(p: &Path) -> impl Fn(std::io::Error) -> AuditError + '_ {
    move |e| AuditError::Io {
        path: p.display().to_string(),
        source: e,
    }
}

type Reader = std::io::BufReader<std::fs::File>;

/// A buffered reader of the file, past a UTF-8 byte order mark.
fn past_bom(p: &Path) -> Result<Reader, AuditError> {
    let file = std::fs::File::open(p).map_err(io_err(p))?;
    let mut r = std::io::BufReader::with_capacity(1 << 16, file);
    if r.fill_buf()
        .map_err(io_err(p))?
        .starts_with(b"\xEF\xBB\xBF")
    {
        r.consume(3);
    }
    Ok(r)
}

/// A reader of the file past its byte order mark, once the whole file is known to be UTF-8
/// ([`check_utf8`]).
fn open(p: &Path) -> Result<Reader, AuditError> {
    check_utf8(p)?;
    past_bom(p)
}

/// Checks that the file (past a byte order mark) is UTF-8, a block at a time: memory is
/// bounded by the block, not the file or a line. Invalid UTF-8 is an error naming its line
/// and its byte in the line.
fn check_utf8(p: &Path) -> Result<(), AuditError> {
    let mut file = past_bom(p)?;
    let mut buf = vec![0u8; 1 << 16];
    // Bytes of a character cut by the block's end, carried to the next block.
    let mut carried = 0usize;
    // Lines before the block, and bytes of the current line before the block.
    let (mut lines, mut column) = (0usize, 0usize);
    loop {
        let n = file.read(&mut buf[carried..]).map_err(io_err(p))?;
        let end = carried + n;
        let block = &buf[..end];
        let valid = match std::str::from_utf8(block) {
            Ok(_) => end,
            Err(e) if e.error_len().is_none() && n > 0 => e.valid_up_to(),
            Err(e) => {
                let valid = &block[..e.valid_up_to()];
                let (lines, column) = match valid.iter().rposition(|b| *b == b'\n') {
                    Some(i) => (lines + count_lines(&valid[..=i]), valid.len() - i - 1),
                    None => (lines, column + valid.len()),
                };
                return Err(AuditError::Parse {
                    path: p.display().to_string(),
                    location: format!("line {}", lines + 1),
                    message: format!("invalid UTF-8 at byte {} of the line", column + 1),
                });
            }
        };
        match block[..valid].iter().rposition(|b| *b == b'\n') {
            Some(i) => {
                lines += count_lines(&block[..=i]);
                column = valid - i - 1;
            }
            None => column += valid,
        }
        if n == 0 {
            return Ok(());
        }
        buf.copy_within(valid..end, 0);
        carried = end - valid;
    }
}

fn count_lines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|b| **b == b'\n').count()
}

fn is_kre_object(v: &Value) -> bool {
    v.get("question").is_some() && v.get("choices").is_some() && v.get("negative_context").is_some()
}

/// What the top level of a JSON file is.
enum TopLevel {
    /// An array.
    Array,
    /// Something else: "an object", "a string" ...
    Other(&'static str),
}

/// A visitor of a JSON file's top level that hands each record of an array, parsed alone, to
/// `each` (which says whether it wants more; the rest is then parsed but not kept), and
/// parses anything else without keeping it.
struct Records<'f, F> {
    each: &'f mut F,
    /// The error `each` returned, which stopped the parse.
    stopped: &'f mut Option<AuditError>,
}

impl<'de, F> serde::de::Visitor<'de> for Records<'_, F>
where
    F: FnMut(usize, Value) -> Result<bool, AuditError>,
{
    type Value = TopLevel;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON array")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<TopLevel, A::Error> {
        let mut i = 0;
        while let Some(v) = seq.next_element::<Value>()? {
            match (self.each)(i, v) {
                Ok(true) => i += 1,
                Ok(false) => break,
                Err(e) => {
                    *self.stopped = Some(e);
                    return Err(serde::de::Error::custom("stopped"));
                }
            }
        }
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(TopLevel::Array)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<TopLevel, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        Ok(TopLevel::Other("an object"))
    }

    fn visit_unit<E>(self) -> Result<TopLevel, E> {
        Ok(TopLevel::Other("null"))
    }

    fn visit_bool<E>(self, _: bool) -> Result<TopLevel, E> {
        Ok(TopLevel::Other("a boolean"))
    }

    fn visit_i64<E>(self, _: i64) -> Result<TopLevel, E> {
        Ok(TopLevel::Other("a number"))
    }

    fn visit_u64<E>(self, _: u64) -> Result<TopLevel, E> {
        Ok(TopLevel::Other("a number"))
    }

    fn visit_f64<E>(self, _: f64) -> Result<TopLevel, E> {
        Ok(TopLevel::Other("a number"))
    }

    fn visit_str<E>(self, _: &str) -> Result<TopLevel, E> {
        Ok(TopLevel::Other("a string"))
    }
}

/// Parses a JSON file as a stream: each record of a top-level array is handed to `each`
/// as soon as it is parsed (its index and value; `each` returns whether it wants more), so
/// that memory is bounded by a record, not the file. A syntax error names its line.
fn for_each_json_record(
    p: &Path,
    mut each: impl FnMut(usize, Value) -> Result<bool, AuditError>,
) -> Result<TopLevel, AuditError> {
    let mut de = serde_json::Deserializer::from_reader(open(p)?);
    let mut stopped = None;
    let visitor = Records {
        each: &mut each,
        stopped: &mut stopped,
    };
    let top = serde::Deserializer::deserialize_any(&mut de, visitor).and_then(|t| {
        de.end()?;
        Ok(t)
    });
    top.map_err(|e| {
        stopped.take().unwrap_or_else(|| AuditError::Parse {
            path: p.display().to_string(),
            location: format!("line {}", e.line()),
            message: e.to_string(),
        })
    })
}

/// Reads a JSON-lines file a line at a time: `each` gets the line's number (from 1) and
/// text, without its line end, and returns whether it wants more.
fn for_each_line(
    p: &Path,
    mut each: impl FnMut(usize, &str) -> Result<bool, AuditError>,
) -> Result<(), AuditError> {
    let mut r = open(p)?;
    let mut line = String::new();
    let mut n = 0;
    loop {
        line.clear();
        if r.read_line(&mut line).map_err(io_err(p))? == 0 {
            return Ok(());
        }
        n += 1;
        let text = line.strip_suffix('\n').unwrap_or(&line);
        let text = text.strip_suffix('\r').unwrap_or(text);
        if !each(n, text)? {
            return Ok(());
        }
    }
}

/// Why a `*.json` file met in a folder is not a KRE array (`None`: it is one, maybe empty).
/// Only the first record is kept; the rest is parsed, so that a syntax error is found.
fn not_kre_json(p: &Path) -> Result<Option<String>, AuditError> {
    let mut first = None;
    let top = for_each_json_record(p, |_, v| {
        first = Some(v);
        Ok(false)
    })?;
    Ok(match (top, first) {
        (TopLevel::Other(t), _) => Some(format!("its top level is {t}, not an array of objects")),
        (TopLevel::Array, None) => None,
        (TopLevel::Array, Some(first)) if is_kre_object(&first) => None,
        (TopLevel::Array, Some(Value::Object(_))) => {
            Some("its objects are not KRE rows (no question, choices and negative_context)".into())
        }
        (TopLevel::Array, Some(other)) => {
            Some(format!("an array of {}, not of objects", type_name(&other)))
        }
    })
}

/// Why a `*.jsonl` file met in a folder does not hold KRE rows (`None`: it does, or is empty).
/// Whether the first row of a JSON-lines file is a ConflictBank-style row.
fn is_cb_jsonl(p: &Path) -> Result<bool, AuditError> {
    let mut cb = false;
    for_each_line(p, |_, line| {
        if line.trim().is_empty() {
            return Ok(true);
        }
        let v: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        cb = ["fact", "conflicts", "qa"]
            .iter()
            .all(|k| v.get(k).is_some());
        Ok(false)
    })?;
    Ok(cb)
}

fn not_kre_jsonl(p: &Path) -> Result<Option<String>, AuditError> {
    let mut reason = None;
    for_each_line(p, |n, line| {
        if line.trim().is_empty() {
            return Ok(true);
        }
        let v: Value = serde_json::from_str(line).map_err(|e| AuditError::Parse {
            path: p.display().to_string(),
            location: format!("line {n}"),
            message: e.to_string(),
        })?;
        if !is_kre_object(&v) {
            reason = Some(format!(
                "its line {n} is not a KRE row (no question, choices and negative_context)"
            ));
        }
        Ok(false)
    })?;
    Ok(reason)
}

/// Reads every row of a file. Any record that does not parse is an error naming the file
/// and the line (JSONL) or record index (JSON array).
pub fn read_rows(path: &Path, kind: FileKind) -> Result<Vec<Row>, AuditError> {
    let mut rows = Vec::new();
    for_each_row(path, kind, |row| {
        rows.push(row);
        Ok(())
    })?;
    Ok(rows)
}

/// Reads the rows of a file one at a time, each handed to `each` as soon as it is read, so
/// that memory is bounded by a record (a line of JSONL, a record of a JSON array), not the
/// file; returns how many rows there were. The first record that does not parse is an
/// error naming the file and the line (JSONL) or record index (JSON array), as is an error
/// `each` returns.
pub fn for_each_row(
    path: &Path,
    kind: FileKind,
    mut each: impl FnMut(Row) -> Result<(), AuditError>,
) -> Result<usize, AuditError> {
    let names = RowNames::of(path);
    let mut index = 0;
    let mut record = |location: String, v: Value| -> Result<bool, AuditError> {
        each(names.row(kind, index, &location, v)?)?;
        index += 1;
        Ok(true)
    };
    if kind == FileKind::KreJson {
        let top = for_each_json_record(path, |i, v| record(format!("record {i}"), v))?;
        if let TopLevel::Other(_) = top {
            return Err(names.error(
                "top level".into(),
                "expected a JSON array of KRE rows".into(),
            ));
        }
    } else {
        for_each_line(path, |n, line| {
            if line.trim().is_empty() {
                return Ok(true);
            }
            let v: Value = serde_json::from_str(line)
                .map_err(|e| names.error(format!("line {n}"), e.to_string()))?;
            record(format!("line {n}"), v)
        })?;
    }
    Ok(index)
}

/// What the rows of one file are named after: the file as given, its name, its stem (also
/// how `cb-eval`, which reads rows back from their place in the file, makes them).
pub struct RowNames {
    file: String,
    name: String,
    stem: String,
}

impl RowNames {
    pub fn of(path: &Path) -> Self {
        RowNames {
            file: path.display().to_string(),
            name: file_name(path),
            stem: path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
        }
    }

    pub fn error(&self, location: String, message: String) -> AuditError {
        AuditError::Parse {
            path: self.file.clone(),
            location,
            message,
        }
    }

    /// The row of the record `v`, the file's `index`-th, read at `location`.
    pub fn row(
        &self,
        kind: FileKind,
        index: usize,
        location: &str,
        v: Value,
    ) -> Result<Row, AuditError> {
        let id = match v.get("id").and_then(Value::as_str) {
            Some(s) => s.to_owned(),
            None => format!("{}#{index}", self.name),
        };
        let domain = match v.get("domain").and_then(Value::as_str) {
            Some(s) if !s.is_empty() => s.to_owned(),
            _ => self.stem.clone(),
        };
        let payload = match kind {
            FileKind::KreJson | FileKind::KreJsonl => serde_json::from_value(v).map(Payload::Kre),
            FileKind::QaA | FileKind::QaNa => serde_json::from_value(v).map(Payload::Qa),
            FileKind::TextGeneration => serde_json::from_value(v).map(Payload::TextGen),
            FileKind::ConflictBank => serde_json::from_value(v).map(|r| Payload::Cb(Box::new(r))),
        }
        .map_err(|e| self.error(location.to_owned(), e.to_string()))?;
        Ok(Row {
            file: self.file.clone(),
            index,
            id,
            domain,
            payload,
        })
    }
}
