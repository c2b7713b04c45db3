//! The benchmark files, read one record at a time: memory is bounded by the largest record,
//! never by the file. A first pass ([`load`]) finds each file's domain, checks and counts its
//! rows and keeps where each one lies (16 bytes a row), so that a later pass streams the rows
//! again ([`Source::rows`]) and a few-shot example is read back from its place
//! ([`Source::row`]).
//!
//! Rows mean what `cb_audit::load::read_rows` makes of them (the same id, domain and payload),
//! and a record that does not parse is an error naming the file and the line (JSON lines) or
//! record (JSON array).

use crate::{EvalError, EvalOptions};
use cb_audit::load::{find_files, RowNames};
use cb_audit::{AuditError, FileKind, Row};
use serde_json::Value;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Where a row lies in its file.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: u64,
    len: u32,
}

/// One benchmark file to evaluate.
#[derive(Debug, Clone)]
pub struct Source {
    pub path: PathBuf,
    pub kind: FileKind,
    pub domain: String,
    spans: Vec<Span>,
}

/// One record as found: its bytes, where it lies, and how an error names it.
struct Record<'a> {
    bytes: &'a [u8],
    span: Span,
    location: String,
}

/// The row of a record's bytes, as `cb_audit` makes it from a record.
fn row_of(
    names: &RowNames,
    kind: FileKind,
    index: usize,
    r: &Record<'_>,
) -> Result<Row, AuditError> {
    let v: Value = serde_json::from_slice(r.bytes)
        .map_err(|e| names.error(r.location.clone(), e.to_string()))?;
    names.row(kind, index, &r.location, v)
}

fn io_error(path: &Path, e: std::io::Error) -> EvalError {
    EvalError::Data(AuditError::Io {
        path: path.display().to_string(),
        source: e,
    })
}

/// Reads the records of a JSON-lines file one line at a time (blank lines skipped, a UTF-8
/// byte order mark at the start accepted), calling `f` with each until it says stop.
fn jsonl_records(
    path: &Path,
    names: &RowNames,
    f: &mut dyn FnMut(&Record<'_>) -> Result<bool, EvalError>,
) -> Result<(), EvalError> {
    let mut r = BufReader::new(File::open(path).map_err(|e| io_error(path, e))?);
    let (mut buf, mut pos, mut line) = (Vec::new(), 0u64, 0usize);
    loop {
        buf.clear();
        let n = r
            .read_until(b'\n', &mut buf)
            .map_err(|e| io_error(path, e))?;
        if n == 0 {
            return Ok(());
        }
        line += 1;
        let mut start = 0;
        if line == 1 && buf.starts_with(b"\xEF\xBB\xBF") {
            start = 3;
        }
        let mut end = buf.len();
        while end > start && matches!(buf[end - 1], b'\n' | b'\r') {
            end -= 1;
        }
        let text = std::str::from_utf8(&buf[start..end]).map_err(|e| {
            names.error(
                format!("line {line}"),
                format!("invalid UTF-8 at byte {} of the line", e.valid_up_to() + 1),
            )
        })?;
        let span = Span {
            start: pos + start as u64,
            len: u32::try_from(end - start).unwrap_or(u32::MAX),
        };
        pos += n as u64;
        if text.trim().is_empty() {
            continue;
        }
        let record = Record {
            bytes: text.as_bytes(),
            span,
            location: format!("line {line}"),
        };
        if !f(&record)? {
            return Ok(());
        }
    }
}

/// A reader of bytes that counts where it is.
struct Bytes<R> {
    r: R,
    pos: u64,
    line: usize,
}

impl<R: BufRead> Bytes<R> {
    fn peek(&mut self) -> std::io::Result<Option<u8>> {
        Ok(self.r.fill_buf()?.first().copied())
    }

    fn next(&mut self) -> std::io::Result<Option<u8>> {
        let b = self.peek()?;
        if let Some(b) = b {
            self.r.consume(1);
            self.pos += 1;
            self.line += usize::from(b == b'\n');
        }
        Ok(b)
    }

    /// The next byte that is not JSON white space, consumed.
    fn next_token(&mut self) -> std::io::Result<Option<u8>> {
        loop {
            match self.next()? {
                Some(b' ' | b'\t' | b'\n' | b'\r') => {}
                other => return Ok(other),
            }
        }
    }

    /// The rest of the value that starts with `first` (already consumed), into `out`: up to
    /// its closing bracket for an object or array, its closing quote for a string, else up
    /// to the next `,`, `]` or white space. `false` when the file ends first.
    fn value(&mut self, first: u8, out: &mut Vec<u8>) -> std::io::Result<bool> {
        out.clear();
        out.push(first);
        let (mut depth, mut in_string, mut escaped) = (0usize, first == b'"', false);
        match first {
            b'{' | b'[' => depth = 1,
            b'"' => {}
            _ => {
                while let Some(b) = self.peek()? {
                    if matches!(b, b',' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.next()?;
                    out.push(b);
                }
                return Ok(true);
            }
        }
        while let Some(b) = self.next()? {
            out.push(b);
            if in_string {
                match (escaped, b) {
                    (true, _) => escaped = false,
                    (false, b'\\') => escaped = true,
                    (false, b'"') if depth == 0 => return Ok(true),
                    (false, b'"') => in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(true);
                    }
                }
                _ => {}
            }
        }
        Ok(false)
    }
}

/// Reads the records of a file holding one JSON array one element at a time, calling `f` with
/// each until it says stop.
fn array_records(
    path: &Path,
    names: &RowNames,
    f: &mut dyn FnMut(&Record<'_>) -> Result<bool, EvalError>,
) -> Result<(), EvalError> {
    let io = |e| io_error(path, e);
    let mut b = Bytes {
        r: BufReader::new(File::open(path).map_err(io)?),
        pos: 0,
        line: 1,
    };
    if b.r.fill_buf().map_err(io)?.starts_with(b"\xEF\xBB\xBF") {
        b.r.consume(3);
        b.pos = 3;
    }
    let bad = |b: &Bytes<_>, m: &str| {
        EvalError::Data(names.error(format!("line {}", b.line), m.to_owned()))
    };
    if b.next_token().map_err(io)? != Some(b'[') {
        return Err(bad(&b, "expected a JSON array of KRE rows"));
    }
    let mut buf = Vec::new();
    let mut next = b.next_token().map_err(io)?;
    if next == Some(b']') {
        next = None;
    }
    let mut index = 0;
    while let Some(first) = next {
        let start = b.pos - 1;
        let line = b.line;
        if !b.value(first, &mut buf).map_err(io)? {
            return Err(bad(&b, &format!("the file ends inside record {index}")));
        }
        let record = Record {
            bytes: &buf,
            span: Span {
                start,
                len: u32::try_from(buf.len()).unwrap_or(u32::MAX),
            },
            location: format!("record {index} (line {line})"),
        };
        if !f(&record)? {
            return Ok(());
        }
        index += 1;
        next = match b.next_token().map_err(io)? {
            Some(b',') => match b.next_token().map_err(io)? {
                Some(c) if c != b']' => Some(c),
                _ => {
                    return Err(bad(
                        &b,
                        &format!("expected a record after record {}", index - 1),
                    ))
                }
            },
            Some(b']') => None,
            _ => {
                return Err(bad(
                    &b,
                    &format!("expected `,` or `]` after record {}", index - 1),
                ))
            }
        };
    }
    if b.next_token().map_err(io)?.is_some() {
        return Err(bad(&b, "characters after the array's end"));
    }
    Ok(())
}

fn records(
    path: &Path,
    kind: FileKind,
    names: &RowNames,
    f: &mut dyn FnMut(&Record<'_>) -> Result<bool, EvalError>,
) -> Result<(), EvalError> {
    if kind == FileKind::KreJson {
        array_records(path, names, f)
    } else {
        jsonl_records(path, names, f)
    }
}

/// The files under `opts.data` that `accept` takes, each read once: its domain from
/// `domain_of` and its first row, its rows cut to `opts.limit`, and `visit` called with each
/// row in order (the checks and sums of a first pass). A file of another domain than
/// `opts.domains` asks for, or without rows, is left out; none left is an error.
pub(crate) fn load(
    opts: &EvalOptions,
    accept: impl Fn(FileKind) -> bool,
    domain_of: impl Fn(&Path, &Row) -> String,
    visit: &mut dyn FnMut(&Source, &Row) -> Result<(), EvalError>,
) -> Result<Vec<Source>, EvalError> {
    let mut out = Vec::new();
    for (path, kind) in find_files(&opts.data)?.files {
        if !accept(kind) {
            continue;
        }
        let names = RowNames::of(&path);
        let limit = opts.limit.unwrap_or(usize::MAX);
        let mut src: Option<Source> = None;
        let mut keep = true;
        records(&path, kind, &names, &mut |r| {
            if src.as_ref().is_some_and(|s| s.spans.len() >= limit) || limit == 0 {
                return Ok(false);
            }
            let row = row_of(&names, kind, src.as_ref().map_or(0, |s| s.spans.len()), r)?;
            let s = src.get_or_insert_with(|| Source {
                path: path.clone(),
                kind,
                domain: domain_of(&path, &row),
                spans: Vec::new(),
            });
            if !opts.domains.is_empty() && !opts.domains.contains(&s.domain) {
                keep = false;
                return Ok(false);
            }
            s.spans.push(r.span);
            visit(s, &row)?;
            Ok(true)
        })?;
        match src {
            Some(s) if keep => out.push(s),
            _ => {}
        }
    }
    if out.is_empty() {
        return Err(nothing_to_evaluate(opts));
    }
    Ok(out)
}

fn nothing_to_evaluate(opts: &EvalOptions) -> EvalError {
    EvalError::Config(format!(
        "no rows to evaluate under {} (domains: {})",
        opts.data
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        if opts.domains.is_empty() {
            "all".to_owned()
        } else {
            opts.domains.join(",")
        }
    ))
}

impl Source {
    /// Rows evaluated.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    fn parse(&self, names: &RowNames, index: usize, bytes: &[u8]) -> Result<Row, EvalError> {
        let record = Record {
            bytes,
            span: self.spans[index],
            location: format!("record {index}"),
        };
        Ok(row_of(names, self.kind, index, &record)?)
    }

    /// Row `index`, read again from its place in the file.
    pub fn row(&self, index: usize) -> Result<Row, EvalError> {
        let span = self.spans[index];
        let mut f = File::open(&self.path).map_err(|e| io_error(&self.path, e))?;
        let mut bytes = vec![0; span.len as usize];
        f.seek(SeekFrom::Start(span.start))
            .and_then(|_| f.read_exact(&mut bytes))
            .map_err(|e| io_error(&self.path, e))?;
        self.parse(&RowNames::of(&self.path), index, &bytes)
    }

    /// The rows evaluated, in order, read one at a time.
    pub fn rows(&self) -> impl Iterator<Item = Result<(usize, Row), EvalError>> + '_ {
        let names = RowNames::of(&self.path);
        let mut reader: Option<(BufReader<File>, u64)> = None;
        let mut bytes = Vec::new();
        (0..self.spans.len()).map(move |i| {
            let span = self.spans[i];
            if reader.is_none() {
                let f = File::open(&self.path).map_err(|e| io_error(&self.path, e))?;
                reader = Some((BufReader::new(f), 0));
            }
            let (r, pos) = reader.as_mut().expect("opened above");
            let skip = i64::try_from(span.start - *pos).unwrap_or(i64::MAX);
            bytes.resize(span.len as usize, 0);
            r.seek_relative(skip)
                .and_then(|()| r.read_exact(&mut bytes))
                .map_err(|e| io_error(&self.path, e))?;
            *pos = span.start + u64::from(span.len);
            Ok((i, self.parse(&names, i, &bytes)?))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(data: &Path) -> EvalOptions {
        EvalOptions {
            data: vec![data.to_path_buf()],
            prompts: cb_step::Files::Bundled(&[]),
            domains: vec![],
            settings: vec![],
            seeds: vec![1],
            limit: None,
            sampling: crate::Sampling {
                temperature: 0.0,
                max_tokens: 8,
            },
            concurrency: 1,
            kre_instructions: None,
            instruction: "1".into(),
            hint: false,
            kre_examples: None,
            logprobs: None,
        }
    }

    fn kre_row(q: &str) -> Value {
        serde_json::json!({
            "question": q, "choices": ["a", "b ]\"[", "c"], "answer": "A",
            "golden_context": "g {x}", "negative_context": "n", "negative_answer": "b ]\"[",
            "candidate": "B",
        })
    }

    #[test]
    fn array_rows_stream_as_audit_reads_them() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("cose.json");
        let rows: Vec<Value> = (0..5).map(|i| kre_row(&format!("q{i} \\ \"x\""))).collect();
        let text = format!(
            "\u{feff} [\n{}\n ]\n",
            rows.iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join(" ,\n")
        );
        std::fs::write(&path, text).unwrap();
        let want = cb_audit::load::read_rows(&path, FileKind::KreJson).unwrap();
        let mut o = opts(&path);
        o.limit = Some(4);
        let mut seen = 0;
        let files = load(&o, |_| true, |_, r| r.domain.clone(), &mut |_, _| {
            seen += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, 4);
        let f = &files[0];
        assert_eq!((f.len(), f.domain.as_str()), (4, "cose"));
        let got: Vec<Row> = f.rows().map(|r| r.unwrap().1).collect();
        for (g, w) in got.iter().zip(&want) {
            assert_eq!((&g.id, &g.domain, g.index), (&w.id, &w.domain, w.index));
            assert_eq!(format!("{:?}", g.payload), format!("{:?}", w.payload));
        }
        assert_eq!(
            format!("{:?}", f.row(2).unwrap().payload),
            format!("{:?}", want[2].payload)
        );
    }

    #[test]
    fn broken_files_name_the_record_or_line() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("cose.json");
        std::fs::write(&path, format!("[{} {}]", kre_row("a"), kre_row("b"))).unwrap();
        let e = load(
            &opts(&path),
            |_| true,
            |_, r| r.domain.clone(),
            &mut |_, _| Ok(()),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("cose.json") && e.contains("after record 0"),
            "{e}"
        );
        let path = tmp.path().join("x.jsonl");
        std::fs::write(&path, format!("{}\n\n{{\"question\": 1}}\n", kre_row("a"))).unwrap();
        let e = load(
            &opts(&path),
            |_| true,
            |_, r| r.domain.clone(),
            &mut |_, _| Ok(()),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("x.jsonl") && e.contains("line 3"), "{e}");
    }
}
