//! Joined sources: side tables read completely and keyed by record id, so that each primary
//! record can look its partner up. A lookup that cannot give one record says why: no such
//! id, a malformed record of that id (named by file and line), or two records of that id.
//!
//! The one part of a build's sources read whole before the build, so it is held compactly:
//! each record's fields are written as compact JSON to a temporary file (removed at once and
//! read through its handle, so nothing is left behind), and memory keeps per record a 16-byte
//! hash of its id (the first bytes of its SHA-256) and where its text is and where it was
//! read: 40 bytes in the table, about 70 with the table's spare room, whatever the record's
//! size (a CoS-E explanation as parsed fields took about 900). A lookup reads the record's
//! text back and parses it.

use crate::inputs::{resolve, SourceOptions, Watched};
use crate::recipe::{toml_to_json, SourceSpec};
use crate::EngineError;
use cb_model::SourceRecord;
use cb_readers::ReadError;
use serde_json::{Map, Value};
use std::collections::hash_map::Entry;
use std::collections::HashMap;

/// The key of an id in a table: the first 16 bytes of its SHA-256. Two ids share one with a
/// chance of about n^2 / 2^129.
fn key_of(id: &str) -> u128 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(id.as_bytes());
    u128::from_be_bytes(digest[..16].try_into().expect("16 of 32 bytes"))
}

/// What a joined source holds under one id (32 bytes; the rare failures boxed).
#[derive(Debug)]
enum Slot {
    /// A record: where its fields are in the spill file (compact JSON), and where it was
    /// read (the file as an index into the table's `files`).
    Record {
        at: u64,
        len: u32,
        file: u32,
        line: u32,
    },
    /// The record of this id is malformed (its id could be read, the rest not).
    Malformed(Box<ReadError>),
    /// Two records carry this id: where the first and the second are.
    Duplicate(Box<(String, String)>),
}

impl Slot {
    fn origin(&self, files: &[String]) -> String {
        match self {
            Slot::Record { file, line, .. } => format!("{}:{line}", files[*file as usize]),
            Slot::Malformed(e) => error_origin(e),
            Slot::Duplicate(d) => d.0.clone(),
        }
    }
}

fn error_origin(e: &ReadError) -> String {
    match e {
        ReadError::Record { file, line, .. } => format!("{file}:{line}"),
        other => other.to_string(),
    }
}

/// One joined source, read.
#[derive(Debug)]
pub struct Table {
    source: String,
    by_id: HashMap<u128, Slot>,
    /// The files its records were read from, as their origins name them.
    files: Vec<String>,
    /// The records' fields.
    spill: Spill,
    /// Malformed records whose id could not be read, as `file:line: message`.
    unreadable: Vec<String>,
}

/// Why a lookup gave no record: a reject's reason and detail.
#[derive(Debug)]
pub struct Miss {
    pub reason: String,
    pub detail: String,
}

impl Table {
    /// Reads every file of `spec` (recording them in `inputs`). A malformed record stops the
    /// build with `--strict`; otherwise it is kept to explain the lookups that needed it.
    pub(crate) fn load(
        spec: &SourceSpec,
        opts: &SourceOptions,
        inputs: &mut Vec<Watched>,
    ) -> Result<Self, EngineError> {
        let mut table = Table {
            source: spec.name.clone(),
            by_id: HashMap::new(),
            files: Vec::new(),
            spill: Spill::new().map_err(|e| {
                EngineError::Input(format!(
                    "cannot make a temporary file for the joined source {}: {e}",
                    spec.name
                ))
            })?,
            unreadable: Vec::new(),
        };
        let ropts = toml_to_json(&spec.options);
        for path in resolve(spec, opts)? {
            inputs.push(Watched::new(&spec.name, &path)?);
            for rec in cb_readers::open(&spec.reader, &path, &ropts)? {
                match rec {
                    Ok(r) => {
                        let slot = table.keep(&r).map_err(|e| {
                            EngineError::Input(format!("{}: {e}", table.spill.path.display()))
                        })?;
                        table.insert(&r.id, slot);
                    }
                    Err(e) if e.is_fatal() || opts.strict => return Err(e.into()),
                    Err(e) => {
                        tracing::warn!(source = %spec.name, error = %e, "a malformed record of a joined source");
                        match &e {
                            ReadError::Record { id: Some(id), .. } => {
                                table.insert(&id.clone(), Slot::Malformed(Box::new(e)))
                            }
                            _ => table.unreadable.push(e.to_string()),
                        }
                    }
                }
            }
        }
        table
            .spill
            .done()
            .map_err(|e| EngineError::Input(format!("{}: {e}", table.spill.path.display())))?;
        Ok(table)
    }

    /// The slot of a record read: its fields written to the spill file, and where it was read.
    fn keep(&mut self, r: &SourceRecord) -> std::io::Result<Slot> {
        if self.files.last() != Some(&r.origin.file) {
            self.files.push(r.origin.file.clone());
        }
        let text = serde_json::to_vec(&r.fields).expect("a record's fields serialise");
        let (at, len) = self.spill.append(&text)?;
        Ok(Slot::Record {
            at,
            len,
            file: self.files.len() as u32 - 1,
            line: u32::try_from(r.origin.line).unwrap_or(u32::MAX),
        })
    }

    fn insert(&mut self, id: &str, slot: Slot) {
        match self.by_id.entry(key_of(id)) {
            Entry::Vacant(v) => {
                v.insert(slot);
            }
            Entry::Occupied(mut o) => {
                if !matches!(o.get(), Slot::Duplicate(_)) {
                    let first = o.get().origin(&self.files);
                    let second = slot.origin(&self.files);
                    o.insert(Slot::Duplicate(Box::new((first, second))));
                }
            }
        }
    }

    /// The record of id `key`, `Ok(None)` when there is none and the join is optional, or
    /// why there is no usable record.
    pub fn get(&self, key: &str, required: bool) -> Result<Option<Map<String, Value>>, Miss> {
        match self.by_id.get(&key_of(key)) {
            Some(Slot::Record { at, len, .. }) => match self.spill.read(*at, *len) {
                Ok(fields) => Ok(Some(fields)),
                Err(e) => Err(Miss {
                    reason: "unreadable".into(),
                    detail: format!(
                        "the record with id {key} of source {} cannot be read back from {}: {e}",
                        self.source,
                        self.spill.path.display()
                    ),
                }),
            },
            Some(Slot::Malformed(e)) => Err(Miss {
                reason: e.code().to_owned(),
                detail: format!(
                    "the record with id {key} in source {} is malformed: {e}",
                    self.source
                ),
            }),
            Some(Slot::Duplicate(d)) => Err(Miss {
                reason: "duplicate_id".into(),
                detail: format!(
                    "source {} has more than one record with id {key}: {} and {}",
                    self.source, d.0, d.1
                ),
            }),
            None if !required => Ok(None),
            None => {
                let mut detail = format!("no record with id {key} in source {}", self.source);
                if let Some(first) = self.unreadable.first() {
                    detail.push_str(&format!(
                        " ({} record(s) of it could not be read, the first: {first})",
                        self.unreadable.len()
                    ));
                }
                Err(Miss {
                    reason: "no_match".into(),
                    detail,
                })
            }
        }
    }
}

/// Where a table keeps its records' text: a temporary file, appended while the table is read,
/// then read back at the offsets its slots keep. On Unix it is removed as soon as it is made
/// (its handle keeps it readable); elsewhere when the table is dropped.
#[derive(Debug)]
struct Spill {
    path: std::path::PathBuf,
    /// While the table is read.
    writer: Option<std::io::BufWriter<std::fs::File>>,
    /// Once it is read.
    reader: std::sync::Mutex<Option<std::fs::File>>,
    len: u64,
    removed: bool,
}

impl Spill {
    fn new() -> std::io::Result<Self> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            ".conflictbench-join-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        let removed = cfg!(unix) && std::fs::remove_file(&path).is_ok();
        Ok(Spill {
            path,
            writer: Some(std::io::BufWriter::with_capacity(1 << 16, file)),
            reader: std::sync::Mutex::new(None),
            len: 0,
            removed,
        })
    }

    /// Appends `text`; gives where it is.
    fn append(&mut self, text: &[u8]) -> std::io::Result<(u64, u32)> {
        use std::io::Write;
        let w = self
            .writer
            .as_mut()
            .expect("appended while the table is read");
        w.write_all(text)?;
        let at = self.len;
        self.len += text.len() as u64;
        Ok((at, text.len() as u32))
    }

    /// The table is read: what was appended is flushed and can be read back.
    fn done(&mut self) -> std::io::Result<()> {
        if let Some(w) = self.writer.take() {
            let file = w.into_inner().map_err(|e| e.into_error())?;
            *self.reader.lock().unwrap_or_else(|e| e.into_inner()) = Some(file);
        }
        Ok(())
    }

    /// The fields written at `at`.
    fn read(&self, at: u64, len: u32) -> std::io::Result<Map<String, Value>> {
        use std::io::{Read, Seek, SeekFrom};
        let mut guard = self.reader.lock().unwrap_or_else(|e| e.into_inner());
        let file = guard.as_mut().expect("read once the table is read");
        file.seek(SeekFrom::Start(at))?;
        let mut buf = vec![0; len as usize];
        file.read_exact(&mut buf)?;
        serde_json::from_slice(&buf).map_err(std::io::Error::other)
    }
}

impl Drop for Spill {
    fn drop(&mut self) {
        if !self.removed {
            self.writer = None;
            *self.reader.get_mut().unwrap_or_else(|e| e.into_inner()) = None;
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
