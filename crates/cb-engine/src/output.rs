//! Output files. Every file is written to a temporary file in the same folder as its rows
//! pass and renamed into place at the end, so a killed or failed build never leaves a
//! half-written file and never replaces the previous build.

use crate::{EngineError, Item};
use cb_model::recall::{changed_words, name_of, Edit, QaRow, TextGenRow};
use cb_model::{DataFile, KreRow, KvItem, Manifest, Reject};
use cb_step::fields;
use serde::Serialize;
use serde_json::Value;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

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

/// A string field the output format writes; a finished item without it is a bug (a step's
/// declaration is wrong), so the build stops.
fn req<'a>(item: &'a Item, key: &str) -> Result<&'a str, EngineError> {
    item.get_text(key)
        .ok_or_else(|| EngineError::Config(item.missing("the output writer", key)))
}

/// A list-of-strings field the output format writes, as [`req`].
fn req_texts(item: &Item, key: &str) -> Result<Vec<String>, EngineError> {
    item.get_texts(key)
        .ok_or_else(|| EngineError::Config(item.missing("the output writer", key)))
}

/// A structured field the output format writes, as [`req`].
fn req_parsed<T: serde::de::DeserializeOwned>(item: &Item, key: &str) -> Result<T, EngineError> {
    item.get_parsed(key)
        .ok_or_else(|| EngineError::Config(item.missing("the output writer", key)))
}

/// The reader's record of the item (`null` where nobody read the rows back).
fn reader(item: &Item) -> Value {
    item.fields
        .get(fields::READER)
        .cloned()
        .unwrap_or(Value::Null)
}

/// What every RECALL row of one item shares.
struct RecallBase<'a> {
    item: &'a Item,
    recipe: &'a str,
    lineage: Vec<Value>,
    subject: String,
    domain: &'a str,
    paragraph: &'a str,
}

impl<'a> RecallBase<'a> {
    fn of(item: &'a Item, recipe: &'a str) -> Result<Self, EngineError> {
        let lineage: Vec<Value> = item
            .calls
            .iter()
            .map(|c| serde_json::to_value(c).expect("lineage serialises"))
            .collect();
        let subject = match item.fields.get(fields::KV) {
            Some(_) => name_of(&req_parsed::<Vec<KvItem>>(item, fields::KV)?)
                .unwrap_or_default()
                .to_owned(),
            None => req(item, fields::TERM)?.to_owned(),
        };
        Ok(RecallBase {
            item,
            recipe,
            lineage,
            subject,
            domain: req(item, fields::DOMAIN)?,
            paragraph: req(item, fields::PARAGRAPH)?,
        })
    }

    /// One QA row: `task` and `edit` name it, the edited context and its edits are the
    /// item's fields `context_key` and `edits_key`.
    fn qa(
        &self,
        task: &str,
        edit: &str,
        context_key: &str,
        edits_key: &str,
    ) -> Result<QaRow, EngineError> {
        let item = self.item;
        Ok(QaRow {
            id: format!("{}/{}/{edit}", self.recipe, item.id),
            domain: self.domain.to_owned(),
            source_id: item.id.clone(),
            origin: item.origin.to_string(),
            subject: self.subject.clone(),
            task: task.to_owned(),
            edit: edit.to_owned(),
            question: req(item, fields::QUESTION)?.to_owned(),
            answer: req(item, fields::ANSWER)?.to_owned(),
            edited_answer: req(item, fields::EDITED_ANSWER)?.to_owned(),
            answer_key: req(item, fields::ANSWER_KEY)?.to_owned(),
            options: req_texts(item, fields::OPTIONS)?,
            answer_option: req(item, fields::ANSWER_OPTION)?.to_owned(),
            context: self.paragraph.to_owned(),
            edited_context: req(item, context_key)?.to_owned(),
            edits: req_parsed(item, edits_key)?,
            donor_term: if edit == "sentence" {
                req(item, fields::DONOR_TERM)?.to_owned()
            } else {
                String::new()
            },
            warnings: item.texts(fields::WARNINGS),
            reader: reader(item),
            lineage: self.lineage.clone(),
        })
    }

    /// The text-generation row. EventKG: record -> paragraph, the edited record differs in
    /// the answer's item. UJ: paragraph -> definition, the edited paragraph carries the
    /// answer edit and the word-grained edits (combined by the `nonanswer_edit` step).
    fn text_gen(self) -> Result<TextGenRow, EngineError> {
        let item = self.item;
        let base = TextGenRow {
            id: format!("{}/{}", self.recipe, item.id),
            domain: self.domain.to_owned(),
            source_id: item.id.clone(),
            origin: item.origin.to_string(),
            subject: self.subject,
            source: Value::Null,
            edited_source: Value::Null,
            target: String::new(),
            edited_key: String::new(),
            edited_words: Vec::new(),
            original_words: Vec::new(),
            aligned: false,
            lineage: self.lineage,
        };
        Ok(match item.fields.get(fields::KV) {
            Some(kv) => {
                let original = req(item, fields::ANSWER_VALUE)?.to_owned();
                let edited = req(item, fields::EDITED_ANSWER)?.to_owned();
                let edited_kv = item.fields.get(fields::EDITED_KV).cloned().ok_or_else(|| {
                    EngineError::Config(item.missing("the output writer", fields::EDITED_KV))
                })?;
                TextGenRow {
                    source: kv.clone(),
                    edited_source: edited_kv,
                    target: self.paragraph.to_owned(),
                    edited_key: req(item, fields::ANSWER_KEY)?.to_owned(),
                    edited_words: vec![edited],
                    original_words: vec![original],
                    aligned: true,
                    ..base
                }
            }
            None => {
                let edits = req_parsed::<Vec<Edit>>(item, fields::TG_EDITS)?;
                let edited = req(item, fields::TG_EDITED_SOURCE)?.to_owned();
                let (e, o) = changed_words(&edits);
                TextGenRow {
                    source: Value::String(self.paragraph.to_owned()),
                    edited_source: Value::String(edited),
                    target: req(item, fields::DEFINITION)?.to_owned(),
                    edited_words: e,
                    original_words: o,
                    ..base
                }
            }
        })
    }
}

/// The RECALL rows of a finished item: its QA-A row, its QA-NA rows (word-grained, and
/// sentence-grained where the recipe inserts a sentence) and its text-generation row.
pub fn recall_rows(
    item: &Item,
    recipe: &str,
) -> Result<(QaRow, Vec<QaRow>, TextGenRow), EngineError> {
    let base = RecallBase::of(item, recipe)?;
    let qa_a = base.qa("qa_a", "answer", fields::QA_A_CONTEXT, fields::QA_A_EDITS)?;
    let mut qa_na = vec![base.qa("qa_na", "word", fields::QA_NA_CONTEXT, fields::QA_NA_EDITS)?];
    // Optional: only where the recipe inserts a sentence.
    if item.fields.contains_key(fields::QA_NA_SENTENCE_CONTEXT) {
        qa_na.push(base.qa(
            "qa_na",
            "sentence",
            fields::QA_NA_SENTENCE_CONTEXT,
            fields::QA_NA_SENTENCE_EDITS,
        )?);
    }
    Ok((qa_a, qa_na, base.text_gen()?))
}

/// The released-format row of a finished KRE item.
pub fn kre_row(item: &Item) -> Result<KreRow, EngineError> {
    Ok(KreRow {
        question: req(item, fields::QUESTION)?.to_owned(),
        answer: req(item, fields::ANSWER)?.to_owned(),
        negative_answer: req(item, fields::NEGATIVE_ANSWER)?.to_owned(),
        candidate: req(item, fields::CANDIDATE)?.to_owned(),
        golden_context: req(item, fields::GOLDEN_CONTEXT)?.to_owned(),
        negative_context: req(item, fields::NEGATIVE_CONTEXT)?.to_owned(),
        choices: req_texts(item, fields::CHOICES)?,
    })
}

/// The clean JSONL row: the released fields under clean names, plus lineage (serialised in
/// this order).
#[derive(Serialize)]
struct KreCleanRow<'a> {
    id: String,
    source_id: &'a str,
    origin: String,
    question: &'a str,
    choices: &'a [String],
    answer: &'a str,
    candidate: &'a str,
    negative_answer: &'a str,
    golden_context: &'a str,
    negative_context: &'a str,
    /// Optional: recorded only when a check warned (an empty list otherwise).
    warnings: Vec<String>,
    /// The reader check's verdict (`null` without one).
    reader: &'a Value,
    lineage: &'a [cb_step::CallRecord],
}

/// The clean JSONL row of a finished item whose released row is `row`.
fn kre_clean_row<'a>(item: &'a Item, recipe: &str, row: &'a KreRow) -> KreCleanRow<'a> {
    const NONE: Value = Value::Null;
    KreCleanRow {
        id: format!("{recipe}/{}", item.id),
        source_id: &item.id,
        origin: item.origin.to_string(),
        question: &row.question,
        choices: &row.choices,
        answer: &row.answer,
        candidate: &row.candidate,
        negative_answer: &row.negative_answer,
        golden_context: &row.golden_context,
        negative_context: &row.negative_context,
        warnings: item.texts(fields::WARNINGS),
        reader: item.fields.get(fields::READER).unwrap_or(&NONE),
        lineage: &item.calls,
    }
}

/// The config of `rejects.jsonl`.
pub const REJECTS: &str = "rejects";

/// How a file lays out its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// One JSON document a line.
    Lines,
    /// One JSON array indented by 4 spaces, no final newline (KRE's released layout).
    Array,
}

/// One output file being written as rows pass: to a temporary file `.NAME.tmp-PID` beside
/// its final path (nothing in a dry run), counted for the manifest and the card.
struct Sink {
    /// The file's name in the output folder.
    path: String,
    /// The card's config that loads it; `None` for KRE's released-layout `.json`, which holds
    /// the same rows as the `.jsonl` under a key that makes a poor column name.
    config: Option<String>,
    layout: Layout,
    rows: u64,
    bytes: u64,
    /// The temporary file and its writer (`None` in a dry run).
    file: Option<(PathBuf, BufWriter<File>)>,
}

impl Sink {
    fn new(
        dir: Option<&Path>,
        path: String,
        config: Option<&str>,
        layout: Layout,
    ) -> io::Result<Self> {
        let file = match dir {
            Some(d) => {
                let tmp = d.join(format!(".{path}.tmp-{}", std::process::id()));
                let f = File::create(&tmp)?;
                Some((tmp, BufWriter::with_capacity(1 << 16, f)))
            }
            None => None,
        };
        Ok(Sink {
            path,
            config: config.map(str::to_owned),
            layout,
            rows: 0,
            bytes: 0,
            file,
        })
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.bytes += bytes.len() as u64;
        match &mut self.file {
            Some((_, w)) => w.write_all(bytes),
            None => Ok(()),
        }
    }

    /// Appends one row, already serialised ([`encode`]): in the array layout after `[` or a
    /// comma and the array's indent, as a serialiser of the whole array would write it.
    fn put_row(&mut self, row: &[u8]) -> io::Result<()> {
        if self.layout == Layout::Array {
            self.put(if self.rows == 0 {
                b"[\n    "
            } else {
                b",\n    "
            })?;
        }
        self.rows += 1;
        self.put(row)
    }

    /// Ends the file (the array's closing bracket) and syncs it to disk.
    fn end(&mut self) -> io::Result<()> {
        if self.layout == Layout::Array {
            self.put(if self.rows == 0 { b"[]" } else { b"\n]" })?;
        }
        if let Some((_, w)) = &mut self.file {
            w.flush()?;
            w.get_ref().sync_all()?;
        }
        Ok(())
    }

    /// What the manifest and the card say of the file, when a config loads it.
    fn data_file(&self, split: &str) -> Option<DataFile> {
        Some(DataFile {
            config: self.config.clone()?,
            path: self.path.clone(),
            split: split.to_owned(),
            rows: self.rows,
            bytes: self.bytes,
        })
    }
}

/// One row serialised as a file of `layout` holds it: a line (with its newline) or an array
/// element at the array's 4-space indent (without the separator before it).
fn encode(layout: Layout, row: &impl Serialize) -> Vec<u8> {
    match layout {
        Layout::Lines => {
            let mut buf = serde_json::to_vec(row).expect("serialising to memory");
            buf.push(b'\n');
            buf
        }
        Layout::Array => {
            let json = to_json_4(row);
            let mut buf = Vec::with_capacity(json.len() + json.len() / 8);
            for b in json {
                buf.push(b);
                if b == b'\n' {
                    buf.extend_from_slice(b"    ");
                }
            }
            buf
        }
    }
}

/// A finished item's rows, serialised for the output files, in the order they are written,
/// each with the index of its file among [`Outputs`]' files. Empty for an item that writes
/// no row.
#[derive(Debug, Default)]
pub struct Encoded(Vec<(usize, Vec<u8>)>);

/// Which files a build writes: KRE's two, RECALL's three, or the recipe's own rows.
#[derive(Debug, Clone)]
pub enum Written {
    Kre,
    Recall,
    /// Format `rows`: the recipe's rows, and whether the writer is the offline rules (the
    /// rows' `offline`).
    Rows(std::sync::Arc<crate::rows::RowsSpec>, bool),
}

/// What serialises a finished item's rows as [`Outputs`] writes them ([`Outputs::encoder`]):
/// each item's own task serialises its rows, so that the one task writing in source order
/// only copies bytes.
#[derive(Debug, Clone)]
pub struct Encoder {
    recipe: String,
    written: Written,
    /// The layout of each file, in [`Outputs`]' order.
    layouts: Vec<Layout>,
}

impl Encoder {
    /// The rows of one finished item: the release and clean KRE rows, or the three RECALL
    /// files' (with none, one or several `qa_na` rows). A field the format needs and the
    /// item lacks is the error (a step's declaration is wrong).
    pub fn encode(&self, item: &Item) -> Result<Encoded, EngineError> {
        let at = |file: usize| self.layouts[file];
        let rows = match &self.written {
            Written::Recall => {
                let (a, na, t) = recall_rows(item, &self.recipe)?;
                let mut rows = vec![(0, encode(at(0), &a))];
                rows.extend(na.iter().map(|r| (1, encode(at(1), r))));
                rows.push((2, encode(at(2), &t)));
                rows
            }
            Written::Kre => {
                let release = kre_row(item)?;
                let clean = kre_clean_row(item, &self.recipe, &release);
                vec![(0, encode(at(0), &release)), (1, encode(at(1), &clean))]
            }
            Written::Rows(spec, offline) => {
                vec![(0, encode(at(0), &spec.row(item, &self.recipe, *offline)?))]
            }
        };
        Ok(Encoded(rows))
    }

    /// The rows an item the reader check refused would have written, as one value for its
    /// reject's `row` (KRE: the clean JSONL row; RECALL: `qa_a`, `qa_na` and
    /// `text_generation` by name).
    pub fn refused(&self, item: &Item) -> Result<Value, EngineError> {
        Ok(match &self.written {
            Written::Recall => {
                let (qa_a, qa_na, text_generation) = recall_rows(item, &self.recipe)?;
                serde_json::json!({ "qa_a": qa_a, "qa_na": qa_na, "text_generation": text_generation })
            }
            Written::Kre => {
                let release = kre_row(item)?;
                serde_json::to_value(kre_clean_row(item, &self.recipe, &release))
                    .expect("a row serialises")
            }
            Written::Rows(spec, offline) => spec.row(item, &self.recipe, *offline)?,
        })
    }
}

/// The output files of one recipe's build, written as its rows pass in source order: the
/// benchmark files of the format (KRE: the released layout and the clean JSONL; RECALL:
/// `qa_a`, `qa_na`, `text_generation`), then `rejects.jsonl`. Each goes to a temporary file;
/// [`Outputs::commit`] renames them into place with the card and the manifest, and anything
/// else (an error, a stopped build: dropping it) removes them, so a failed build leaves the
/// previous one as it was. Memory: one row at a time and the writers' buffers.
pub struct Outputs {
    dir: PathBuf,
    recipe: String,
    written: Written,
    sinks: Vec<Sink>,
    /// The first folder this build created (removed again, when empty, by a build that
    /// fails).
    created: Option<PathBuf>,
    committed: bool,
}

impl Outputs {
    /// The files of a build into `dir` of what `written` says (`write` false: a dry run,
    /// which counts and writes nothing).
    pub fn create(
        dir: &Path,
        written: Written,
        domain: &str,
        recipe: &str,
        write: bool,
    ) -> Result<Self, EngineError> {
        let err = |source| EngineError::Write {
            path: dir.to_path_buf(),
            source,
        };
        let created = if write {
            let first = dir
                .ancestors()
                .take_while(|d| !d.exists())
                .last()
                .map(Path::to_path_buf);
            std::fs::create_dir_all(dir).map_err(err)?;
            first
        } else {
            None
        };
        let mut out = Outputs {
            dir: dir.to_path_buf(),
            recipe: recipe.to_owned(),
            written,
            sinks: Vec::new(),
            created,
            committed: false,
        };
        let at = write.then_some(dir);
        let files: Vec<(String, Option<&str>, Layout)> = match &out.written {
            Written::Recall => vec![
                ("qa_a.jsonl".into(), Some("qa_a"), Layout::Lines),
                ("qa_na.jsonl".into(), Some("qa_na"), Layout::Lines),
                (
                    "text_generation.jsonl".into(),
                    Some("text_generation"),
                    Layout::Lines,
                ),
            ],
            Written::Kre => vec![
                (format!("{domain}.json"), None, Layout::Array),
                (format!("{domain}.jsonl"), Some(domain), Layout::Lines),
            ],
            Written::Rows(spec, _) => {
                vec![(spec.file.clone(), Some(spec.config.as_str()), Layout::Lines)]
            }
        };
        for (path, config, layout) in
            files
                .into_iter()
                .chain([("rejects.jsonl".into(), Some(REJECTS), Layout::Lines)])
        {
            out.sinks
                .push(Sink::new(at, path, config, layout).map_err(err)?);
        }
        Ok(out)
    }

    fn io(&self, source: io::Error) -> EngineError {
        EngineError::Write {
            path: self.dir.clone(),
            source,
        }
    }

    /// What serialises the rows of finished items for these files.
    pub fn encoder(&self) -> Encoder {
        let data = &self.sinks[..self.sinks.len() - 1];
        Encoder {
            recipe: self.recipe.clone(),
            written: self.written.clone(),
            layouts: data.iter().map(|s| s.layout).collect(),
        }
    }

    /// Writes the rows of one finished item, serialised by [`Outputs::encoder`]'s encoder.
    pub fn row(&mut self, rows: Encoded) -> Result<(), EngineError> {
        for (file, row) in &rows.0 {
            self.sinks[*file].put_row(row).map_err(|e| self.io(e))?;
        }
        Ok(())
    }

    /// Writes one reject.
    pub fn reject(&mut self, r: &Reject) -> Result<(), EngineError> {
        let last = self.sinks.len() - 1;
        let row = encode(self.sinks[last].layout, r);
        self.sinks[last].put_row(&row).map_err(|e| self.io(e))
    }

    /// The rows written so far.
    pub fn rows(&self) -> u64 {
        self.sinks[if matches!(self.written, Written::Kre) {
            1
        } else {
            0
        }]
        .rows
    }

    /// The rejects written so far.
    pub fn rejected(&self) -> u64 {
        self.sinks[self.sinks.len() - 1].rows
    }

    /// The files the manifest lists (these, then the card and the manifest).
    pub fn paths(&self) -> impl Iterator<Item = String> + '_ {
        self.sinks
            .iter()
            .map(|s| s.path.clone())
            .chain(["README.md".into(), "manifest.json".into()])
    }

    /// The files a config of the card loads, with their rows and bytes.
    pub fn data_files(&self, split: &str) -> Vec<DataFile> {
        self.sinks
            .iter()
            .filter_map(|s| s.data_file(split))
            .collect()
    }

    /// Ends every file, syncs and renames it into place, then writes the card and, last, the
    /// manifest (not in a dry run).
    pub fn commit(mut self, card: &str, manifest: &Manifest) -> Result<(), EngineError> {
        for i in 0..self.sinks.len() {
            self.sinks[i].end().map_err(|e| self.io(e))?;
        }
        let write = self.sinks.iter().any(|s| s.file.is_some());
        for s in &mut self.sinks {
            if let Some((tmp, _)) = s.file.take() {
                let path = self.dir.join(&s.path);
                std::fs::rename(&tmp, &path)
                    .map_err(|source| EngineError::Write { path, source })?;
            }
        }
        self.committed = true;
        if write {
            write_atomic(&self.dir.join("README.md"), card.as_bytes())?;
            let mut manifest = serde_json::to_vec_pretty(manifest).expect("manifest serialises");
            manifest.push(b'\n');
            write_atomic(&self.dir.join("manifest.json"), &manifest)?;
        }
        Ok(())
    }
}

impl Drop for Outputs {
    /// A build that did not commit leaves nothing: its temporary files are removed, and the
    /// folders it created when they are empty.
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        for s in &mut self.sinks {
            if let Some((tmp, w)) = s.file.take() {
                drop(w);
                let _ = std::fs::remove_file(tmp);
            }
        }
        if let Some(first) = &self.created {
            for d in self.dir.ancestors() {
                if std::fs::remove_dir(d).is_err() || d == first {
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
