//! Shared pieces: the JSON-lines iterator, field extraction with clear faults, file opening.

use cb_model::json::type_name;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::{Map, Value};

use crate::{ReadError, ReaderOptions, Records, SourceRecord};
use cb_model::Origin;

/// Why one record was rejected; the iterator adds file and line.
#[derive(Debug)]
pub(crate) struct Fault {
    pub code: &'static str,
    pub message: String,
}

impl Fault {
    pub fn missing(key: &str) -> Self {
        Fault {
            code: "missing_field",
            message: format!("missing key `{key}`"),
        }
    }

    pub fn bad(message: impl Into<String>) -> Self {
        Fault {
            code: "bad_value",
            message: message.into(),
        }
    }
}

/// `prefix.key`, or `key` when the prefix is empty: the key's path for messages.
fn path(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

/// A required key.
pub(crate) fn get<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    prefix: &str,
) -> Result<&'a Value, Fault> {
    obj.get(key)
        .ok_or_else(|| Fault::missing(&path(prefix, key)))
}

/// A required string.
pub(crate) fn req_str(obj: &Map<String, Value>, key: &str, prefix: &str) -> Result<String, Fault> {
    match get(obj, key, prefix)? {
        Value::String(s) => Ok(s.clone()),
        other => Err(Fault::bad(format!(
            "`{}` is {}, not a string",
            path(prefix, key),
            type_name(other)
        ))),
    }
}

/// An optional string: absent or null gives `None`.
pub(crate) fn opt_str(
    obj: &Map<String, Value>,
    key: &str,
    prefix: &str,
) -> Result<Option<String>, Fault> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(Fault::bad(format!(
            "`{}` is {}, not a string",
            path(prefix, key),
            type_name(other)
        ))),
    }
}

/// A required boolean.
pub(crate) fn req_bool(obj: &Map<String, Value>, key: &str, prefix: &str) -> Result<bool, Fault> {
    match get(obj, key, prefix)? {
        Value::Bool(b) => Ok(*b),
        other => Err(Fault::bad(format!(
            "`{}` is {}, not a boolean",
            path(prefix, key),
            type_name(other)
        ))),
    }
}

/// A required array.
pub(crate) fn req_array<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    prefix: &str,
) -> Result<&'a Vec<Value>, Fault> {
    match get(obj, key, prefix)? {
        Value::Array(a) => Ok(a),
        other => Err(Fault::bad(format!(
            "`{}` is {}, not an array",
            path(prefix, key),
            type_name(other)
        ))),
    }
}

/// A required array of strings.
pub(crate) fn req_str_array(
    obj: &Map<String, Value>,
    key: &str,
    prefix: &str,
) -> Result<Vec<String>, Fault> {
    let items = req_array(obj, key, prefix)?;
    str_items(items, &path(prefix, key))
}

/// The items of an array, each required to be a string.
pub(crate) fn str_items(items: &[Value], what: &str) -> Result<Vec<String>, Fault> {
    items
        .iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::String(s) => Ok(s.clone()),
            other => Err(Fault::bad(format!(
                "`{what}[{i}]` is {}, not a string",
                type_name(other)
            ))),
        })
        .collect()
}

/// An array value's item as an object.
pub(crate) fn as_object<'a>(v: &'a Value, what: &str) -> Result<&'a Map<String, Value>, Fault> {
    match v {
        Value::Object(o) => Ok(o),
        other => Err(Fault::bad(format!(
            "`{what}` is {}, not an object",
            type_name(other)
        ))),
    }
}

/// An id: a string, or a number written as text.
pub(crate) fn id_of(obj: &Map<String, Value>, key: &str) -> Result<String, Fault> {
    match get(obj, key, "")? {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(Fault::bad(format!(
            "id key `{key}` is {}, not a string or number",
            type_name(other)
        ))),
    }
}

/// Rejects any option: for readers that take none.
pub(crate) fn no_options(reader: &str, opts: &ReaderOptions) -> Result<(), ReadError> {
    match opts.keys().next() {
        None => Ok(()),
        Some(key) => Err(ReadError::Config(format!(
            "reader `{reader}` takes no option, but option `{key}` was given"
        ))),
    }
}

/// Opens a file for reading, with a File error naming it.
pub(crate) fn open_file(path: &Path, file: &str) -> Result<File, ReadError> {
    if path.is_dir() {
        return Err(ReadError::File {
            file: file.to_string(),
            message: "is a directory, not a file".to_string(),
        });
    }
    File::open(path).map_err(|e| ReadError::File {
        file: file.to_string(),
        message: format!("cannot open: {e}"),
    })
}

/// Skips a UTF-8 byte order mark at the start of a stream.
pub(crate) fn skip_bom(reader: &mut impl BufRead) -> std::io::Result<()> {
    if reader.fill_buf()?.starts_with(b"\xEF\xBB\xBF") {
        reader.consume(3);
    }
    Ok(())
}

/// A serde_json error message without its " at line L column C" suffix.
pub(crate) fn json_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    text.strip_suffix(&suffix).unwrap_or(&text).to_string()
}

/// How one JSON-lines format turns a line's object into a record's id and fields.
pub(crate) trait LineFormat: Send + 'static {
    fn convert(&self, obj: Map<String, Value>) -> Result<(String, Map<String, Value>), Fault>;

    /// [`LineFormat::convert`] with the record's 1-based line, for formats whose id may
    /// depend on the position of the record (default: the line is not used).
    fn convert_at(
        &self,
        obj: Map<String, Value>,
        _line: u64,
    ) -> Result<(String, Map<String, Value>), Fault> {
        self.convert(obj)
    }

    /// The key of the record's id, read to name a record that [`LineFormat::convert`]
    /// rejects (default `id`).
    fn id_key(&self) -> &str {
        "id"
    }
}

/// Opens `path` as JSON lines read with `format`.
pub(crate) fn json_lines<F: LineFormat>(
    path: &Path,
    file: String,
    format: F,
) -> Result<Records, ReadError> {
    let handle = open_file(path, &file)?;
    Ok(Box::new(JsonLines {
        file,
        reader: BufReader::new(handle),
        buf: Vec::new(),
        line: 0,
        done: false,
        format,
    }))
}

/// Reads a JSON-lines file one line at a time.
struct JsonLines<F> {
    file: String,
    reader: BufReader<File>,
    buf: Vec<u8>,
    line: u64,
    done: bool,
    format: F,
}

impl<F> JsonLines<F> {
    fn record_error(&self, id: Option<String>, code: &'static str, message: String) -> ReadError {
        ReadError::Record {
            file: self.file.clone(),
            line: self.line,
            id,
            code,
            message,
        }
    }
}

impl<F: LineFormat> Iterator for JsonLines<F> {
    type Item = Result<SourceRecord, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            self.buf.clear();
            match self.reader.read_until(b'\n', &mut self.buf) {
                Ok(0) => {
                    self.done = true;
                    return None;
                }
                Ok(_) => {}
                Err(e) => {
                    self.done = true;
                    return Some(Err(ReadError::File {
                        file: self.file.clone(),
                        message: format!("read error after line {}: {e}", self.line),
                    }));
                }
            }
            self.line += 1;
            let mut bytes: &[u8] = &self.buf;
            if self.line == 1 {
                bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
            }
            bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
            bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
            if bytes.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let text = match std::str::from_utf8(bytes) {
                Ok(t) => t,
                Err(e) => {
                    let message =
                        format!("invalid UTF-8 after byte {} of the line", e.valid_up_to());
                    return Some(Err(self.record_error(None, "bad_encoding", message)));
                }
            };
            let value: Value = match serde_json::from_str(text) {
                Ok(v) => v,
                Err(e) => {
                    let what = if e.is_eof() {
                        "truncated JSON"
                    } else {
                        "invalid JSON"
                    };
                    let message = format!("{what} at column {}: {}", e.column(), json_message(&e));
                    return Some(Err(self.record_error(None, "malformed_json", message)));
                }
            };
            let obj = match value {
                Value::Object(o) => o,
                other => {
                    let message = format!("the line is {}, not a JSON object", type_name(&other));
                    return Some(Err(self.record_error(None, "bad_value", message)));
                }
            };
            let id = id_of(&obj, self.format.id_key()).ok();
            return Some(match self.format.convert_at(obj, self.line) {
                Ok((id, fields)) => Ok(SourceRecord {
                    id,
                    origin: Origin {
                        file: self.file.clone(),
                        line: self.line,
                    },
                    fields,
                }),
                Err(fault) => Err(self.record_error(id, fault.code, fault.message)),
            });
        }
    }
}
