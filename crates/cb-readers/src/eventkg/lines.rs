//! Streaming the dump line by line, with the position of every line.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use crate::util::open_file;
use crate::ReadError;

/// A position in the dump: (file index, 1-based line).
pub(super) type Pos = (usize, u64);

/// Streams every line of every file (line end and a first-line BOM removed, blank lines
/// skipped) into `f`. A read failure is a File error naming the file.
pub(super) fn scan(
    files: &[(PathBuf, String)],
    mut f: impl FnMut(Pos, &[u8]),
) -> Result<(), ReadError> {
    let mut buf = Vec::with_capacity(4096);
    for (index, (path, name)) in files.iter().enumerate() {
        let mut reader = BufReader::with_capacity(1 << 20, open_file(path, name)?);
        let mut line = 0u64;
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    return Err(ReadError::File {
                        file: name.clone(),
                        message: format!("read error after line {line}: {e}"),
                    })
                }
            }
            line += 1;
            let mut bytes: &[u8] = &buf;
            if line == 1 {
                bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
            }
            bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
            bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
            if bytes.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            f((index, line), bytes);
        }
    }
    Ok(())
}
