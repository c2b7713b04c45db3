//! The requests of the calls waiting for a round, on disk (issue 29, item 5): a call that
//! misses the cache has its input line and journal row written to the spool file when it is
//! queued, so a round holds only keys, sizes and offsets, and its input files and journal
//! rows are streamed from the spool one request at a time instead of being assembled in
//! memory. A request takes three lines: its input line and its serialized request as they
//! are (each one line of JSON, copied without being parsed again), then its key and
//! template as a small JSON object. The spool is a folder of its own under the system's temporary folder (the Batch
//! API's upload files are written there too), removed when the layer is dropped.

use crate::cache::RequestRow;
use crate::{Call, LlmError};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Where a request is in the spool, and the size of its input line with its newline.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spooled {
    at: u64,
    pub(crate) line_bytes: usize,
}

/// What the journal records of a spooled request besides the request itself.
#[derive(serde::Serialize, serde::Deserialize)]
struct Meta {
    key: String,
    template: String,
    template_hash: String,
}

/// The spool of one transport in rounds.
pub(crate) struct Spool {
    dir: PathBuf,
    /// The file requests are appended to (made with the first one) and its length.
    writer: Mutex<Option<(File, u64)>>,
}

/// Spools of this process so far, to name each one's folder.
static SPOOLS: AtomicU64 = AtomicU64::new(0);

impl Spool {
    pub(crate) fn new() -> Self {
        let n = SPOOLS.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("conflictbench-rounds-{}-{n}", std::process::id()));
        Self {
            dir,
            writer: Mutex::new(None),
        }
    }

    /// The spool's folder (for files made from it, such as upload files).
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    fn file(&self) -> PathBuf {
        self.dir.join("requests.jsonl")
    }

    fn failed(&self, e: impl std::fmt::Display) -> LlmError {
        LlmError::Cache(format!(
            "cannot keep waiting requests in {}: {e}",
            self.dir.display()
        ))
    }

    /// Appends a call's input line (`line`) and journal row under `key`; returns where.
    pub(crate) fn push(&self, key: &str, line: &str, call: &Call) -> Result<Spooled, LlmError> {
        let row = RequestRow::of(key, call)?;
        let meta = Meta {
            key: row.key,
            template: row.template,
            template_hash: row.template_hash,
        };
        let meta = serde_json::to_string(&meta).map_err(|e| self.failed(e))?;
        let text = format!("{line}\n{}\n{meta}\n", row.request);
        let mut writer = self.writer.lock().expect("spool lock");
        if writer.is_none() {
            std::fs::create_dir_all(&self.dir).map_err(|e| self.failed(e))?;
            let f = File::create(self.file()).map_err(|e| self.failed(e))?;
            *writer = Some((f, 0));
        }
        let (file, len) = writer.as_mut().expect("made above");
        file.write_all(text.as_bytes())
            .map_err(|e| self.failed(e))?;
        let at = *len;
        *len += text.len() as u64;
        Ok(Spooled {
            at,
            line_bytes: line.len() + 1,
        })
    }

    fn reader(&self) -> Result<SpoolReader, LlmError> {
        let f = File::open(self.file()).map_err(|e| self.failed(e))?;
        Ok(SpoolReader {
            file: BufReader::new(f),
            text: String::new(),
        })
    }

    /// Writes the input lines of `items`, in their order, to `path` whole: under a `.part`
    /// name first, renamed once complete, so a reader of the folder never sees half a file.
    pub(crate) fn write_lines(&self, items: &[Spooled], path: &Path) -> Result<(), LlmError> {
        let io = |p: &Path, e: std::io::Error| {
            LlmError::Config(format!("cannot write {}: {e}", p.display()))
        };
        let part = path.with_extension("jsonl.part");
        let mut out = BufWriter::new(File::create(&part).map_err(|e| io(&part, e))?);
        let mut reader = self.reader()?;
        for s in items {
            let line = reader.line(*s).map_err(|e| self.failed(e))?;
            out.write_all(line.as_bytes())
                .and_then(|()| out.write_all(b"\n"))
                .map_err(|e| io(&part, e))?;
        }
        out.flush().map_err(|e| io(&part, e))?;
        drop(out);
        std::fs::rename(&part, path).map_err(|e| io(path, e))
    }

    /// The journal rows of `items`, read from the spool one at a time as they are taken (on
    /// the cache's writer thread).
    pub(crate) fn rows(
        &self,
        items: Vec<Spooled>,
    ) -> Result<impl Iterator<Item = Result<RequestRow, String>> + Send + 'static, LlmError> {
        let mut reader = self.reader()?;
        Ok(items.into_iter().map(move |s| reader.row(s)))
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        if self.writer.get_mut().map(|w| w.is_some()).unwrap_or(true) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Reads spooled records by their place.
struct SpoolReader {
    file: BufReader<File>,
    text: String,
}

impl SpoolReader {
    /// The next line from where the file stands, without its newline.
    fn next_line(&mut self) -> Result<&str, String> {
        self.text.clear();
        self.file
            .read_line(&mut self.text)
            .map_err(|e| e.to_string())?;
        Ok(self.text.strip_suffix('\n').unwrap_or(&self.text))
    }

    /// The input line of the request spooled at `s`.
    fn line(&mut self, s: Spooled) -> Result<&str, String> {
        self.file
            .seek(SeekFrom::Start(s.at))
            .map_err(|e| e.to_string())?;
        self.next_line()
    }

    /// The journal row of the request spooled at `s`.
    fn row(&mut self, s: Spooled) -> Result<RequestRow, String> {
        self.file
            .seek(SeekFrom::Start(s.at + s.line_bytes as u64))
            .map_err(|e| e.to_string())?;
        let request = self.next_line()?.to_owned();
        let meta: Meta = serde_json::from_str(self.next_line()?)
            .map_err(|e| format!("a spooled request is unreadable: {e}"))?;
        Ok(RequestRow {
            key: meta.key,
            template: meta.template,
            template_hash: meta.template_hash,
            request,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChatRequest, Message};

    fn call(text: &str) -> Call {
        Call {
            request: ChatRequest {
                messages: vec![Message::user(text)],
                temperature: 0.0,
                top_p: None,
                max_tokens: 8,
                seed: None,
                response_schema: None,
                top_logprobs: None,
            },
            template: "t.md".into(),
            template_hash: "h".into(),
            item: "i".into(),
            offline: String::new(),
        }
    }

    #[test]
    fn requests_come_back_from_the_spool_in_the_order_asked() {
        let spool = Spool::new();
        let dir = spool.dir().to_path_buf();
        let a = spool.push("ka", "{\"a\":1}", &call("first")).unwrap();
        let b = spool.push("kb", "{\"b\":2}", &call("second")).unwrap();
        assert_eq!(a.line_bytes, 8);
        let out = dir.join("input.jsonl");
        spool.write_lines(&[b, a], &out).unwrap();
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "{\"b\":2}\n{\"a\":1}\n"
        );
        let rows: Vec<RequestRow> = spool
            .rows(vec![a, b])
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!((rows[0].key.as_str(), rows[1].key.as_str()), ("ka", "kb"));
        assert!(rows[1].request.contains("second"));
        drop(spool);
        assert!(!dir.exists(), "the spool is removed with its layer");
    }
}
