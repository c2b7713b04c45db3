//! Records by byte offset: the offsets of a file's records are found in one streaming pass
//! (8 bytes a record), and a record is read again from its offset alone, so that no page
//! ever holds more than the records it shows.
//!
//! JSON lines: a record is a non-empty line. A JSON array (the released KRE layout): a record
//! is a top-level element; the scanner follows strings and nesting byte by byte.

use crate::error::ViewError;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// How a file's records are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Lines,
    Array,
}

impl Layout {
    pub fn of(kind: cb_audit::FileKind) -> Layout {
        if kind == cb_audit::FileKind::KreJson {
            Layout::Array
        } else {
            Layout::Lines
        }
    }
}

fn open(path: &Path) -> Result<BufReader<std::fs::File>, ViewError> {
    let f = std::fs::File::open(path).map_err(|e| ViewError::io(path, e))?;
    Ok(BufReader::with_capacity(1 << 16, f))
}

/// Calls `each(offset, line number, line)` for every non-empty line of a JSON-lines file.
pub fn for_each_line(
    path: &Path,
    mut each: impl FnMut(u64, u64, &str) -> Result<(), ViewError>,
) -> Result<(), ViewError> {
    let mut number = 0;
    let mut r = open(path)?;
    let mut line = String::new();
    let mut offset = 0u64;
    loop {
        line.clear();
        let n = r.read_line(&mut line).map_err(|e| ViewError::io(path, e))?;
        if n == 0 {
            return Ok(());
        }
        number += 1;
        let text = line.trim_start_matches('\u{feff}');
        if !text.trim().is_empty() {
            each(offset + (line.len() - text.len()) as u64, number, text)?;
        }
        offset += n as u64;
    }
}

/// The offsets of the top-level objects (and arrays) of a JSON array file; the caller checks
/// their number against the rows the audit read.
pub fn array_offsets(path: &Path) -> Result<Vec<u64>, ViewError> {
    let mut r = open(path)?;
    let mut buf = [0u8; 1 << 16];
    let (mut depth, mut in_string, mut escaped) = (0u32, false, false);
    let mut offsets = Vec::new();
    let mut pos = 0u64;
    loop {
        let n = r.read(&mut buf).map_err(|e| ViewError::io(path, e))?;
        if n == 0 {
            return Ok(offsets);
        }
        for (i, &b) in buf[..n].iter().enumerate() {
            if in_string {
                match (escaped, b) {
                    (true, _) => escaped = false,
                    (false, b'\\') => escaped = true,
                    (false, b'"') => in_string = false,
                    _ => {}
                }
                continue;
            }
            let at = pos + i as u64;
            match b {
                b'"' => in_string = true,
                b'{' | b'[' => {
                    if depth == 1 {
                        offsets.push(at);
                    }
                    depth += 1;
                }
                b'}' | b']' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        pos += n as u64;
    }
}

/// Reads the record at `offset`: a line, or one JSON value of an array.
pub fn read_at(path: &Path, layout: Layout, offset: u64) -> Result<Value, ViewError> {
    let mut r = open(path)?;
    r.seek(SeekFrom::Start(offset))
        .map_err(|e| ViewError::io(path, e))?;
    let bad = |e: serde_json::Error| ViewError::Record {
        path: path.display().to_string(),
        message: format!("the record at byte {offset} does not parse: {e}"),
    };
    match layout {
        Layout::Lines => {
            let mut line = String::new();
            r.read_line(&mut line).map_err(|e| ViewError::io(path, e))?;
            serde_json::from_str(&line).map_err(bad)
        }
        Layout::Array => {
            let mut values = serde_json::Deserializer::from_reader(r).into_iter::<Value>();
            match values.next() {
                Some(v) => v.map_err(bad),
                None => Err(ViewError::Record {
                    path: path.display().to_string(),
                    message: format!("no record at byte {offset}"),
                }),
            }
        }
    }
}

/// Every string in a record, lowercased, joined by newlines (what the search looks in).
pub fn text_of(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => {
            out.push_str(&s.to_lowercase());
            out.push('\n');
        }
        Value::Array(a) => a.iter().for_each(|x| text_of(x, out)),
        Value::Object(o) => o.values().for_each(|x| text_of(x, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_offsets_find_each_element_and_read_it_back() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.json");
        let text =
            "\u{feff}[\n {\"a\": \"x]},{\\\"\", \"b\": [1, {\"c\": 2}]},\n{\"a\": \"é\"} ,{}]";
        std::fs::write(&p, text).unwrap();
        let offs = array_offsets(&p).unwrap();
        assert_eq!(offs.len(), 3, "{offs:?}");
        assert_eq!(read_at(&p, Layout::Array, offs[0]).unwrap()["a"], "x]},{\"");
        assert_eq!(read_at(&p, Layout::Array, offs[1]).unwrap()["a"], "é");
        assert_eq!(
            read_at(&p, Layout::Array, offs[2]).unwrap(),
            serde_json::json!({})
        );
    }

    #[test]
    fn lines_skip_blank_ones_and_read_back() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.jsonl");
        std::fs::write(&p, "{\"i\":0}\n\n{\"i\":1}\r\n{\"i\":2}").unwrap();
        let mut offs = Vec::new();
        for_each_line(&p, |o, _, _| {
            offs.push(o);
            Ok(())
        })
        .unwrap();
        let got: Vec<Value> = offs
            .iter()
            .map(|o| read_at(&p, Layout::Lines, *o).unwrap()["i"].clone())
            .collect();
        assert_eq!(got, vec![0, 1, 2]);
    }
}
