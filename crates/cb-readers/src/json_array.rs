//! Files that are one JSON array of objects (PopQA, MQuAKE), read one element at a time.
//!
//! A thread walks the array with a serde visitor and sends each element, parsed as a
//! [`Value`], through a bounded channel; the iterator turns it into records with an
//! [`ElementFormat`]. Memory holds one element (and the channel's few) at a time.
//!
//! The `line` of a record, and of a record error, is the element's 0-based index in the
//! array (`record [i]` in messages). An element that is not an object, or that its format
//! refuses, is a record error; the reading goes on. A document that is not a JSON array, or
//! whose JSON breaks, is a fatal File error with serde's line and column, after the records
//! read before it.

use std::collections::VecDeque;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use serde::de::{self, DeserializeSeed, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::util::{id_of, json_message, open_file, skip_bom, Fault};
use crate::{ReadError, Records, SourceRecord};
use cb_model::json::type_name;
use cb_model::Origin;

/// How many elements the reading thread may run ahead of the consumer.
const CHANNEL_BOUND: usize = 64;

/// The records an element gives: each an id and its fields.
pub(crate) type Converted = Vec<(String, Map<String, Value>)>;

/// How one array format turns an element into records: none, one or several (MQuAKE gives a
/// record per fact of a case).
pub(crate) trait ElementFormat: Send + 'static {
    /// The records of the element at `index`, each an id and its fields.
    fn convert(&mut self, obj: Map<String, Value>, index: u64) -> Result<Converted, Fault>;

    /// The key of the element's id, read to name an element that [`ElementFormat::convert`]
    /// rejects.
    fn id_key(&self) -> &str;
}

/// What the thread sends: an element with its index, or the end of the document in error.
enum Sent {
    Element(u64, Value),
    Broken(String),
}

/// Opens `path` as a JSON array read with `format`.
pub(crate) fn open<F: ElementFormat>(
    path: &Path,
    file: String,
    format: F,
) -> Result<Records, ReadError> {
    let handle = open_file(path, &file)?;
    let (tx, rx) = sync_channel(CHANNEL_BOUND);
    std::thread::Builder::new()
        .name("cb-readers-array".into())
        .spawn(move || walk(handle, tx))
        .map_err(|e| ReadError::File {
            file: file.clone(),
            message: format!("cannot start the reading thread: {e}"),
        })?;
    Ok(Box::new(Elements {
        file,
        rx,
        format,
        pending: VecDeque::new(),
        done: false,
    }))
}

fn walk(handle: File, tx: SyncSender<Sent>) {
    let mut reader = BufReader::new(handle);
    if let Err(e) = skip_bom(&mut reader) {
        let _ = tx.send(Sent::Broken(format!("read error: {e}")));
        return;
    }
    let mut de = serde_json::Deserializer::from_reader(reader);
    let mut stopped = false;
    let result = ArraySeed {
        tx: &tx,
        stopped: &mut stopped,
    }
    .deserialize(&mut de)
    .and_then(|()| de.end());
    if let Err(e) = result {
        if stopped {
            return;
        }
        let message = if e.is_io() {
            format!("read error: {e}")
        } else {
            format!(
                "not a JSON array of records at line {} column {}: {}",
                e.line(),
                e.column(),
                json_message(&e)
            )
        };
        let _ = tx.send(Sent::Broken(message));
    }
}

struct ArraySeed<'s> {
    tx: &'s SyncSender<Sent>,
    stopped: &'s mut bool,
}

impl<'de> DeserializeSeed<'de> for ArraySeed<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ArraySeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON array of records")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0u64;
        while let Some(value) = seq.next_element::<Value>()? {
            if self.tx.send(Sent::Element(index, value)).is_err() {
                *self.stopped = true;
                return Err(de::Error::custom("the consumer stopped reading"));
            }
            index += 1;
        }
        Ok(())
    }
}

/// The records of an array file, in file order.
struct Elements<F> {
    file: String,
    rx: Receiver<Sent>,
    format: F,
    pending: VecDeque<Result<SourceRecord, ReadError>>,
    done: bool,
}

impl<F: ElementFormat> Elements<F> {
    fn element(&mut self, index: u64, value: Value) {
        let record_error = |id, code, message| ReadError::Record {
            file: self.file.clone(),
            line: index,
            id,
            code,
            message: format!("record [{index}]: {message}"),
        };
        let obj = match value {
            Value::Object(o) => o,
            other => {
                let message = format!("is {}, not a JSON object", type_name(&other));
                self.pending
                    .push_back(Err(record_error(None, "bad_value", message)));
                return;
            }
        };
        let id = id_of(&obj, self.format.id_key()).ok();
        match self.format.convert(obj, index) {
            Ok(records) => {
                for (id, fields) in records {
                    self.pending.push_back(Ok(SourceRecord {
                        id,
                        origin: Origin {
                            file: self.file.clone(),
                            line: index,
                        },
                        fields,
                    }));
                }
            }
            Err(fault) => {
                let error = record_error(id, fault.code, fault.message);
                self.pending.push_back(Err(error));
            }
        }
    }
}

impl<F: ElementFormat> Iterator for Elements<F> {
    type Item = Result<SourceRecord, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Some(item);
            }
            if self.done {
                return None;
            }
            match self.rx.recv() {
                Ok(Sent::Element(index, value)) => self.element(index, value),
                Ok(Sent::Broken(message)) => {
                    self.done = true;
                    return Some(Err(ReadError::File {
                        file: self.file.clone(),
                        message,
                    }));
                }
                Err(_) => {
                    self.done = true;
                    return None;
                }
            }
        }
    }
}
