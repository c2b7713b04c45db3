//! Helpers shared by the reader tests.
#![allow(dead_code)]

use cb_readers::{ReadError, SourceRecord};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Writes `content` to `dir/name` and returns the path.
pub fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path
}

/// The parts of a record error: (file, line, code, message); panics on any other error.
pub fn record_error(e: &ReadError) -> (&str, u64, &str, &str) {
    match e {
        ReadError::Record {
            file,
            line,
            code,
            message,
            ..
        } => (file.as_str(), *line, *code, message.as_str()),
        other => panic!("expected a record error, got {other:?}"),
    }
}

/// The strings of a JSON array; panics on anything else.
pub fn strs(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

/// A record's field names, in order.
pub fn keys(r: &SourceRecord) -> Vec<&str> {
    r.fields.keys().map(String::as_str).collect()
}
