//! Joined sources: side tables read completely and keyed by record id, so that each primary
//! record can look its partner up. A lookup that cannot give one record says why: no such
//! id, a malformed record of that id (named by file and line), or two records of that id.

use crate::recipe::{toml_to_json, SourceSpec};
use crate::source::{input_file, resolve, SourceOptions};
use crate::EngineError;
use cb_model::manifest::InputFile;
use cb_model::SourceRecord;
use cb_readers::ReadError;
use std::collections::hash_map::Entry;
use std::collections::HashMap;

/// What a joined source holds under one id.
#[derive(Debug)]
enum Slot {
    Record(SourceRecord),
    /// The record of this id is malformed (its id could be read, the rest not).
    Malformed(ReadError),
    /// Two records carry this id: where the first and the second are.
    Duplicate {
        first: String,
        second: String,
    },
}

impl Slot {
    fn origin(&self) -> String {
        match self {
            Slot::Record(r) => r.origin.to_string(),
            Slot::Malformed(e) => error_origin(e),
            Slot::Duplicate { first, .. } => first.clone(),
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
    by_id: HashMap<String, Slot>,
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
    pub fn load(
        spec: &SourceSpec,
        opts: &SourceOptions,
        inputs: &mut Vec<InputFile>,
    ) -> Result<Self, EngineError> {
        let mut table = Table {
            source: spec.name.clone(),
            by_id: HashMap::new(),
            unreadable: Vec::new(),
        };
        let ropts = toml_to_json(&spec.options);
        for path in resolve(spec, opts)? {
            inputs.push(input_file(&spec.name, &path)?);
            for rec in cb_readers::open(&spec.reader, &path, &ropts)? {
                match rec {
                    Ok(r) => table.insert(r.id.clone(), Slot::Record(r)),
                    Err(e) if e.is_fatal() || opts.strict => return Err(e.into()),
                    Err(e) => {
                        tracing::warn!(source = %spec.name, error = %e, "a malformed record of a joined source");
                        match &e {
                            ReadError::Record { id: Some(id), .. } => {
                                table.insert(id.clone(), Slot::Malformed(e))
                            }
                            _ => table.unreadable.push(e.to_string()),
                        }
                    }
                }
            }
        }
        Ok(table)
    }

    fn insert(&mut self, id: String, slot: Slot) {
        match self.by_id.entry(id) {
            Entry::Vacant(v) => {
                v.insert(slot);
            }
            Entry::Occupied(mut o) => {
                if !matches!(o.get(), Slot::Duplicate { .. }) {
                    let first = o.get().origin();
                    let second = slot.origin();
                    o.insert(Slot::Duplicate { first, second });
                }
            }
        }
    }

    /// The record of id `key`, `Ok(None)` when there is none and the join is optional, or
    /// why there is no usable record.
    pub fn get(&self, key: &str, required: bool) -> Result<Option<&SourceRecord>, Miss> {
        match self.by_id.get(key) {
            Some(Slot::Record(r)) => Ok(Some(r)),
            Some(Slot::Malformed(e)) => Err(Miss {
                reason: e.code().to_owned(),
                detail: format!(
                    "the record with id {key} in source {} is malformed: {e}",
                    self.source
                ),
            }),
            Some(Slot::Duplicate { first, second }) => Err(Miss {
                reason: "duplicate_id".into(),
                detail: format!(
                    "source {} has more than one record with id {key}: {first} and {second}",
                    self.source
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
