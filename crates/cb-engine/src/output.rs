//! Output files. Every file is written to a temporary file in the same folder and renamed
//! into place, so a killed build never leaves a half-written file.

use crate::{EngineError, Item};
use cb_model::recall::{changed_words, name_of, Edit, QaRow, TextGenRow};
use cb_model::{DataFile, KreRow, KvItem, Manifest, Reject};
use serde::Serialize;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically ([`cb_step::files::write_atomic`]: temporary file in
/// the same folder, fsync, rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), EngineError> {
    cb_step::files::write_atomic(path, bytes).map_err(|source| EngineError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Removes the temporary files (`.NAME.tmp-PID`) that a killed build left in `dir`: those
/// of a process that no longer runs (where `/proc` cannot tell, those of any other process).
/// Returns how many were removed; a folder that does not exist has none.
pub fn remove_stale_temp_files(dir: &Path) -> Result<usize, EngineError> {
    let err = |source| EngineError::Write {
        path: dir.to_path_buf(),
        source,
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(err(e)),
    };
    let own = std::process::id();
    let proc_fs = Path::new("/proc/self").exists();
    let mut removed = 0;
    for entry in entries {
        let path = entry.map_err(err)?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some(pid) = name
            .strip_prefix('.')
            .and_then(|n| n.rsplit_once(".tmp-"))
            .and_then(|(_, pid)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let running = pid == own || (proc_fs && Path::new("/proc").join(pid.to_string()).exists());
        if !running && path.is_file() {
            std::fs::remove_file(&path).map_err(|source| EngineError::Write {
                path: path.clone(),
                source,
            })?;
            tracing::info!(file = %path.display(), "removed a temporary file left by a killed build");
            removed += 1;
        }
    }
    Ok(removed)
}

/// Appends one line to a log file (used for `runs.jsonl`, the one file that grows per run).
pub fn append_line(path: &Path, line: &str) -> Result<(), EngineError> {
    let err = |source| EngineError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(err)?;
    writeln!(f, "{line}").map_err(err)
}

/// JSON with a 4-space indent and non-ASCII as is (the released KRE layout), no final newline.
pub fn to_json_4(v: &impl Serialize) -> Vec<u8> {
    let mut out = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
    v.serialize(&mut ser).expect("serialising to memory");
    out
}

/// One JSON document per line.
pub fn to_jsonl<T: Serialize>(rows: impl IntoIterator<Item = T>) -> Vec<u8> {
    let mut out = Vec::new();
    for r in rows {
        serde_json::to_writer(&mut out, &r).expect("serialising to memory");
        out.push(b'\n');
    }
    out
}

/// The RECALL rows of a finished item: its QA-A row, its QA-NA rows (word-grained, and
/// sentence-grained where the recipe inserts a sentence) and its text-generation row.
pub fn recall_rows(item: &Item, recipe: &str) -> (QaRow, Vec<QaRow>, TextGenRow) {
    let lineage: Vec<Value> = item
        .calls
        .iter()
        .map(|c| serde_json::to_value(c).expect("lineage serialises"))
        .collect();
    let subject = match item.fields.get("kv") {
        Some(_) => name_of(&item.parsed::<Vec<KvItem>>("kv"))
            .unwrap_or_default()
            .to_owned(),
        None => item.text("term").to_owned(),
    };
    let qa = |task: &str, edit: &str, context_key: &str, edits_key: &str| QaRow {
        id: format!("{recipe}/{}/{edit}", item.id),
        domain: item.text("domain").to_owned(),
        source_id: item.id.clone(),
        origin: item.origin.to_string(),
        subject: subject.clone(),
        task: task.to_owned(),
        edit: edit.to_owned(),
        question: item.text("question").to_owned(),
        answer: item.text("answer").to_owned(),
        edited_answer: item.text("edited_answer").to_owned(),
        answer_key: item.text("answer_key").to_owned(),
        options: item.texts("options"),
        answer_option: item.text("answer_option").to_owned(),
        context: item.text("paragraph").to_owned(),
        edited_context: item.text(context_key).to_owned(),
        edits: item.parsed(edits_key),
        donor_term: if edit == "sentence" {
            item.text("donor_term").to_owned()
        } else {
            String::new()
        },
        reader: item
            .fields
            .get(cb_step::READER_FIELD)
            .cloned()
            .unwrap_or(Value::Null),
        lineage: lineage.clone(),
    };
    let qa_a = qa("qa_a", "answer", "qa_a_context", "qa_a_edits");
    let mut qa_na = vec![qa("qa_na", "word", "qa_na_context", "qa_na_edits")];
    if item.fields.contains_key("qa_na_sentence_context") {
        qa_na.push(qa(
            "qa_na",
            "sentence",
            "qa_na_sentence_context",
            "qa_na_sentence_edits",
        ));
    }
    let paragraph = item.text("paragraph");
    let base = TextGenRow {
        id: format!("{recipe}/{}", item.id),
        domain: item.text("domain").to_owned(),
        source_id: item.id.clone(),
        origin: item.origin.to_string(),
        subject: subject.clone(),
        source: Value::Null,
        edited_source: Value::Null,
        target: String::new(),
        edited_key: String::new(),
        edited_words: Vec::new(),
        original_words: Vec::new(),
        aligned: false,
        lineage,
    };
    let tg = match item.fields.get("kv") {
        // EventKG: record -> paragraph; the edited record differs in the answer's item.
        Some(kv) => {
            let original = item.text("answer_value").to_owned();
            let edited = item.text("edited_answer").to_owned();
            TextGenRow {
                source: kv.clone(),
                edited_source: item.fields.get("edited_kv").cloned().unwrap_or(Value::Null),
                target: paragraph.to_owned(),
                edited_key: item.text("answer_key").to_owned(),
                edited_words: vec![edited],
                original_words: vec![original],
                aligned: true,
                ..base
            }
        }
        // UJ: paragraph -> definition; the edited paragraph carries the answer edit and the
        // word-grained edits (combined by the `nonanswer_edit` step).
        None => {
            let edits = item.parsed::<Vec<Edit>>("tg_edits");
            let edited = item.text("tg_edited_source").to_owned();
            let (e, o) = changed_words(&edits);
            TextGenRow {
                source: Value::String(paragraph.to_owned()),
                edited_source: Value::String(edited),
                target: item.text("definition").to_owned(),
                edited_words: e,
                original_words: o,
                ..base
            }
        }
    };
    (qa_a, qa_na, tg)
}

/// The released-format row of a finished KRE item.
pub fn kre_row(item: &Item) -> KreRow {
    KreRow {
        question: item.text("question").to_owned(),
        answer: item.text("answer").to_owned(),
        negative_answer: item.text("negative_answer").to_owned(),
        candidate: item.text("candidate").to_owned(),
        golden_context: item.text("golden_context").to_owned(),
        negative_context: item.text("negative_context").to_owned(),
        choices: item.texts("choices"),
    }
}

/// The clean JSONL row: the released fields under clean names, plus lineage.
pub fn kre_clean_row(item: &Item, recipe: &str) -> Value {
    let row = kre_row(item);
    json!({
        "id": format!("{recipe}/{}", item.id),
        "source_id": item.id,
        "origin": item.origin.to_string(),
        "question": row.question,
        "choices": row.choices,
        "answer": row.answer,
        "candidate": row.candidate,
        "negative_answer": row.negative_answer,
        "golden_context": row.golden_context,
        "negative_context": row.negative_context,
        "warnings": item.texts(cb_step::WARNINGS_FIELD),
        "reader": item.fields.get(cb_step::READER_FIELD).cloned().unwrap_or(Value::Null),
        "lineage": item.calls,
    })
}

/// A file of a build, serialised once: counted for the manifest and the card, then written.
pub struct OutFile {
    pub path: String,
    /// The card's config that loads it; `None` for KRE's released-layout `.json`, which
    /// holds the same rows as the `.jsonl` under a key that makes a poor column name.
    pub config: Option<String>,
    pub rows: u64,
    pub bytes: Vec<u8>,
}

impl OutFile {
    fn new(path: String, config: Option<&str>, rows: usize, bytes: Vec<u8>) -> Self {
        OutFile {
            path,
            config: config.map(str::to_owned),
            rows: rows as u64,
            bytes,
        }
    }

    /// What the manifest and the card say of the file, when a config loads it.
    pub fn data_file(&self, split: &str) -> Option<DataFile> {
        Some(DataFile {
            config: self.config.clone()?,
            path: self.path.clone(),
            split: split.to_owned(),
            rows: self.rows,
            bytes: self.bytes.len() as u64,
        })
    }
}

/// The config of `rejects.jsonl`.
pub const REJECTS: &str = "rejects";

/// The benchmark files of a build of `format` (KRE: the released layout and the clean
/// JSONL; RECALL: `qa_a`, `qa_na`, `text_generation`), then `rejects.jsonl`.
pub fn out_files(
    format: &str,
    domain: &str,
    recipe: &str,
    items: &[Item],
    rejects: &[Reject],
) -> Vec<OutFile> {
    let mut files = if format == "recall" {
        let (mut qa_a, mut qa_na, mut tg) = (Vec::new(), Vec::new(), Vec::new());
        for item in items {
            let (a, na, t) = recall_rows(item, recipe);
            qa_a.push(a);
            qa_na.extend(na);
            tg.push(t);
        }
        vec![
            OutFile::new(
                "qa_a.jsonl".into(),
                Some("qa_a"),
                qa_a.len(),
                to_jsonl(&qa_a),
            ),
            OutFile::new(
                "qa_na.jsonl".into(),
                Some("qa_na"),
                qa_na.len(),
                to_jsonl(&qa_na),
            ),
            OutFile::new(
                "text_generation.jsonl".into(),
                Some("text_generation"),
                tg.len(),
                to_jsonl(&tg),
            ),
        ]
    } else {
        let release: Vec<KreRow> = items.iter().map(kre_row).collect();
        let clean = to_jsonl(items.iter().map(|i| kre_clean_row(i, recipe)));
        vec![
            OutFile::new(
                format!("{domain}.json"),
                None,
                items.len(),
                to_json_4(&release),
            ),
            OutFile::new(format!("{domain}.jsonl"), Some(domain), items.len(), clean),
        ]
    };
    files.push(OutFile::new(
        "rejects.jsonl".into(),
        Some(REJECTS),
        rejects.len(),
        to_jsonl(rejects),
    ));
    files
}

/// Writes the files, then the card and, last, the manifest.
pub fn write_outputs(
    dir: &Path,
    files: &[OutFile],
    card: &str,
    manifest: &Manifest,
) -> Result<(), EngineError> {
    for f in files {
        write_atomic(&dir.join(&f.path), &f.bytes)?;
    }
    write_atomic(&dir.join("README.md"), card.as_bytes())?;
    let mut manifest = serde_json::to_vec_pretty(manifest).expect("manifest serialises");
    manifest.push(b'\n');
    write_atomic(&dir.join("manifest.json"), &manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn release_json_layout_matches_the_published_files() {
        let v = vec![json!({"a": "é"})];
        let s = String::from_utf8(to_json_4(&v)).unwrap();
        assert_eq!(s, "[\n    {\n        \"a\": \"é\"\n    }\n]");
    }
}
