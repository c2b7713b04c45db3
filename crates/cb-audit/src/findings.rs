//! The failing (row, check) pairs of an audit, kept in a temporary file rather than in
//! memory: an audit's findings grow with its rows (several a row on a file of repeated
//! questions), while what the audit keeps in memory must not.
//!
//! Each finding is one JSON line `[row, finding]` (`row`: the row's place in the audit),
//! appended as the rows are checked; the file goes when the [`Findings`] does. The JSON
//! report streams them back ([`Findings`] serialises as the array of findings, in the order
//! they were added), and so do the pages' rows.

use crate::{AuditError, Finding};
use std::io::{BufRead, Write};
use std::sync::Mutex;

/// The findings of an audit, in a temporary file.
#[derive(Debug)]
pub struct Findings {
    file: tempfile::NamedTempFile,
    /// The appending end (flushed before every read).
    writer: Mutex<std::io::BufWriter<std::fs::File>>,
    len: usize,
}

impl Findings {
    pub fn new() -> Result<Self, AuditError> {
        let file = tempfile::NamedTempFile::new().map_err(|e| spill_err("create", e))?;
        let handle = file.reopen().map_err(|e| spill_err("open", e))?;
        Ok(Findings {
            file,
            writer: Mutex::new(std::io::BufWriter::new(handle)),
            len: 0,
        })
    }

    /// How many findings there are.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds the finding of the audit's row `row`.
    pub fn push(&mut self, row: usize, f: &Finding) -> Result<(), AuditError> {
        let w = self.writer.get_mut().unwrap_or_else(|e| e.into_inner());
        serde_json::to_writer(&mut *w, &(row, f))
            .map_err(std::io::Error::from)
            .and_then(|()| w.write_all(b"\n"))
            .map_err(|e| spill_err("write", e))?;
        self.len += 1;
        Ok(())
    }

    /// The findings from the first, each with its row, read back a line at a time.
    pub fn iter(&self) -> Result<FindingsIter, AuditError> {
        self.writer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .flush()
            .map_err(|e| spill_err("write", e))?;
        let file = self.file.reopen().map_err(|e| spill_err("open", e))?;
        Ok(FindingsIter {
            lines: std::io::BufReader::new(file).lines(),
            left: self.len,
        })
    }
}

/// The findings of [`Findings::iter`].
pub struct FindingsIter {
    lines: std::io::Lines<std::io::BufReader<std::fs::File>>,
    /// Findings still to read (the file holds no more than were added).
    left: usize,
}

impl Iterator for FindingsIter {
    type Item = Result<(usize, Finding), AuditError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let line = match self.lines.next()? {
            Ok(line) => line,
            Err(e) => return Some(Err(spill_err("read", e))),
        };
        Some(serde_json::from_str(&line).map_err(|e| spill_err("read", e.into())))
    }
}

fn spill_err(what: &str, e: std::io::Error) -> AuditError {
    AuditError::Io {
        path: format!("the audit's temporary file of findings ({what})"),
        source: e,
    }
}

impl serde::Serialize for Findings {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let mut seq = s.serialize_seq(Some(self.len))?;
        for f in self.iter().map_err(S::Error::custom)? {
            let (_, f) = f.map_err(S::Error::custom)?;
            seq.serialize_element(&f)?;
        }
        seq.end()
    }
}
