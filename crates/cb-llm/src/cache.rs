//! The response cache: one SQLite file (WAL), one row per request key.
//!
//! Answers are written by one writer thread with its own connection ([`Cache::commit`]): it
//! takes every answer waiting at that moment and writes them in one transaction (group
//! commit), and each caller gets its answer back only once that transaction is committed, so
//! a process killed at any point keeps every answer it has handed out. Reads and the other
//! tables go through a second connection, which in WAL mode never waits for the writer: no
//! async worker blocks on a write (with two workers, one writing and one waiting for the
//! lock stopped every call's I/O; BENCHMARKS.md). WAL with `synchronous=NORMAL`
//! survives a killed process (the case resume is about); set `synchronous=FULL` semantics
//! by copying the file only after the build if power loss matters to you.

use crate::lookup::Lookups;
use crate::{Call, Completion, LlmError};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A cached answer.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedResponse {
    pub content: String,
    pub finish_reason: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// The full response body as the server sent it.
    pub raw: String,
}

impl CachedResponse {
    /// The answer as the caller gets it, under cache key `key` (`cached`: it came from the
    /// cache, not the endpoint); `logprobs`: the request asked for top log-probabilities,
    /// read from the stored body (`raw`), so a cached answer has the ones it came with.
    pub(crate) fn into_completion(self, key: String, cached: bool, logprobs: bool) -> Completion {
        let top_logprobs = if logprobs {
            crate::request::top_logprobs_in(&self.raw)
        } else {
            None
        };
        Completion {
            top_logprobs,
            text: self.content,
            finish_reason: self.finish_reason,
            cache_key: key,
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            cached,
        }
    }
}

/// Handle to the cache file; cheap to clone.
#[derive(Clone)]
pub struct Cache {
    conn: Arc<Mutex<Connection>>,
    /// The calls' lookups, on a connection of their own ([`Lookups`]).
    lookups: Arc<Lookups>,
    /// The answer writer (none for a read-only cache).
    writer: Option<Arc<Writer>>,
}

/// The writer thread and the way to it. Dropped with the last handle to the cache: the
/// channel closes, the thread writes what is left, closes its connection (which checkpoints
/// the WAL and removes its side files) and is joined.
struct Writer {
    tx: Option<std::sync::mpsc::Sender<Pending>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What the writer is asked to do, with the way to say it is done.
enum Pending {
    /// One answer (answers waiting together are committed in one transaction).
    Answer(Box<AnswerJob>),
    /// Any other write (another module's tables), in a transaction of its own.
    Job(Job, Done),
}

type Done = tokio::sync::oneshot::Sender<Result<(), String>>;

/// A write the writer runs on its connection.
pub(crate) type Job = Box<dyn FnOnce(&mut Connection) -> rusqlite::Result<()> + Send>;

/// What a transport writes beside an answer, in the transaction that commits the answer
/// (a pool: the replica that gave it). The cache runs it without knowing what it writes.
pub(crate) type Annex = Box<dyn FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<()> + Send>;

struct AnswerJob {
    row: AnswerRow,
    done: Done,
}

/// An answer as it is stored.
struct AnswerRow {
    request: RequestRow,
    endpoint: String,
    model: String,
    response: CachedResponse,
    annex: Option<Annex>,
}

/// What the cache stores beside an answer about the request that got it.
#[derive(Debug, Clone)]
pub(crate) struct RequestRow {
    pub key: String,
    pub template: String,
    pub template_hash: String,
    /// The serialized `ChatRequest`.
    pub request: String,
}

impl RequestRow {
    pub(crate) fn of(key: &str, call: &Call) -> Result<Self, LlmError> {
        Ok(Self {
            key: key.to_owned(),
            template: call.template.clone(),
            template_hash: call.template_hash.clone(),
            request: serde_json::to_string(&call.request)
                .map_err(|e| LlmError::Cache(e.to_string()))?,
        })
    }

    /// Stores `response` as this request's answer with `insert` (a prepared
    /// [`INSERT_RESPONSE`]: an answer already there stays, the first one wins).
    pub(crate) fn insert(
        &self,
        insert: &mut rusqlite::Statement<'_>,
        endpoint: &str,
        model: &str,
        response: &CachedResponse,
        now: i64,
    ) -> rusqlite::Result<usize> {
        insert.execute(params![
            self.key,
            crate::CACHE_FORMAT,
            endpoint,
            model,
            self.template,
            self.template_hash,
            self.request,
            response.content,
            response.finish_reason,
            response.prompt_tokens as i64,
            response.completion_tokens as i64,
            response.raw,
            now
        ])
    }
}

/// The most answers one transaction of the writer takes.
const GROUP_MAX: usize = 1024;

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cache")
    }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    cache_format INTEGER NOT NULL,
    endpoint TEXT NOT NULL,
    model TEXT NOT NULL,
    template TEXT NOT NULL,
    template_hash TEXT NOT NULL,
    request TEXT NOT NULL,
    content TEXT NOT NULL,
    finish_reason TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    raw TEXT NOT NULL,
    created_unix INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_template ON responses(template);
CREATE TABLE IF NOT EXISTS capabilities (
    endpoint TEXT NOT NULL,
    model TEXT NOT NULL,
    structured TEXT NOT NULL,
    detail TEXT NOT NULL,
    detected_unix INTEGER NOT NULL,
    PRIMARY KEY (endpoint, model)
);
";

/// Commits one answer; an existing row with the same key is kept (first answer wins).
const INSERT_RESPONSE: &str = "INSERT OR IGNORE INTO responses
     (key, cache_format, endpoint, model, template, template_hash, request, content,
      finish_reason, prompt_tokens, completion_tokens, raw, created_unix)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";

impl Cache {
    pub fn open(path: &Path) -> Result<Self, LlmError> {
        if let Some(dir) = path.parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir).map_err(|e| {
                    LlmError::Cache(format!("cannot create {}: {e}", dir.display()))
                })?;
            }
        }
        let connect = || -> Result<Connection, LlmError> {
            let conn = Connection::open(path)
                .map_err(|e| LlmError::Cache(format!("cannot open {}: {e}", path.display())))?;
            conn.pragma_update(None, "journal_mode", "WAL")?;
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            conn.busy_timeout(std::time::Duration::from_secs(30))?;
            Ok(conn)
        };
        let conn = connect()?;
        conn.execute_batch(SCHEMA)?;
        let writer = connect()?;
        let commits = Arc::new(AtomicU64::new(0));
        let lookups = Lookups::new(connect, Arc::clone(&commits))?;
        let (tx, rx) = std::sync::mpsc::channel::<Pending>();
        let thread = std::thread::Builder::new()
            .name("cache-writer".into())
            .spawn(move || write_loop(writer, &rx, &commits))
            .map_err(|e| LlmError::Cache(format!("cannot start the cache writer: {e}")))?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
            lookups: Arc::new(lookups),
            writer: Some(Arc::new(Writer {
                tx: Some(tx),
                thread: Some(thread),
            })),
        })
    }

    pub(crate) fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().expect("cache lock")
    }

    /// Creates another module's tables (`schema`: `CREATE ... IF NOT EXISTS` statements),
    /// when the cache is writable; each transport creates its own when it is set up.
    pub(crate) fn create_tables(&self, schema: &str) -> Result<(), LlmError> {
        if self.writer.is_some() {
            self.conn().execute_batch(schema)?;
        }
        Ok(())
    }

    /// Whether the cache file has a table of this name (a transport's tables exist once that
    /// transport has run against the file).
    pub(crate) fn has_table(&self, name: &str) -> Result<bool, LlmError> {
        let n: i64 = self.conn().query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [name],
            |r| r.get(0),
        )?;
        Ok(n > 0)
    }

    /// Whether the table `table` of the cache file has the column `column`.
    pub(crate) fn has_column(&self, table: &str, column: &str) -> Result<bool, LlmError> {
        let n: i64 = self.conn().query_row(
            "SELECT COUNT(*) FROM pragma_table_info(?1) WHERE name = ?2",
            [table, column],
            |r| r.get(0),
        )?;
        Ok(n > 0)
    }

    /// Opens an existing cache file to read only (dry runs): `None` when there is no file, or
    /// an empty one (the lock of a build that never wrote the cache, an offline build, leaves
    /// one). Nothing is created, neither the file nor its folder.
    pub fn open_read_only(path: &Path) -> Result<Option<Self>, LlmError> {
        if !path.metadata().is_ok_and(|m| m.is_file() && m.len() > 0) {
            return Ok(None);
        }
        // A read-only connection to a WAL database leaves `-wal` and `-shm` files behind
        // unless they exist already (another connection is open): then it shares them;
        // otherwise the file is opened as immutable, which creates nothing.
        let side = |ext: &str| {
            let mut p = path.as_os_str().to_owned();
            p.push(ext);
            std::path::PathBuf::from(p).exists()
        };
        let immutable = !(side("-wal") && side("-shm"));
        let uri = format!(
            "file:{}?mode=ro{}",
            uri_path(path),
            if immutable { "&immutable=1" } else { "" }
        );
        let connect = || -> Result<Connection, LlmError> {
            let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
            let conn = Connection::open_with_flags(&uri, flags)
                .map_err(|e| LlmError::Cache(format!("cannot open {}: {e}", path.display())))?;
            conn.busy_timeout(std::time::Duration::from_secs(30))?;
            Ok(conn)
        };
        Ok(Some(Self {
            conn: Arc::new(Mutex::new(connect()?)),
            // No writer: nothing commits, and the snapshot ends only with its read count.
            lookups: Arc::new(Lookups::new(connect, Arc::default())?),
            writer: None,
        }))
    }

    /// The structured-output form remembered for this endpoint and model, if any. A cache
    /// file written before the table existed (opened read-only) has none.
    pub fn capability(&self, endpoint: &str, model: &str) -> Result<Option<String>, LlmError> {
        let conn = self.conn();
        let Ok(mut stmt) = conn.prepare_cached(
            "SELECT structured FROM capabilities WHERE endpoint = ?1 AND model = ?2",
        ) else {
            return Ok(None);
        };
        Ok(stmt
            .query_row(params![endpoint, model], |r| r.get(0))
            .optional()?)
    }

    /// Remembers the structured-output form of an endpoint and model, with how it was found.
    pub fn put_capability(
        &self,
        endpoint: &str,
        model: &str,
        structured: &str,
        detail: &str,
    ) -> Result<(), LlmError> {
        let conn = self.conn();
        conn.execute(
            "INSERT OR REPLACE INTO capabilities (endpoint, model, structured, detail, detected_unix)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![endpoint, model, structured, detail, unix_now()],
        )?;
        Ok(())
    }

    /// The answer under `key`, with the full response body.
    pub fn get(&self, key: &str) -> Result<Option<CachedResponse>, LlmError> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT content, finish_reason, prompt_tokens, completion_tokens, raw
             FROM responses WHERE key = ?1",
        )?;
        Ok(stmt.query_row([key], |r| response(r, true)).optional()?)
    }

    /// The answer under `key` without its `raw` body (left empty): what a call answered from
    /// the cache uses ([`Lookups`]). The body is most of a row's bytes (SQLite keeps it on
    /// overflow pages), so a re-run that answers every call from the cache reads a fraction
    /// of them.
    pub(crate) fn answer(&self, key: &str) -> Result<Option<CachedResponse>, LlmError> {
        const SELECT: &str = "SELECT content, finish_reason, prompt_tokens, completion_tokens
                              FROM responses WHERE key = ?1";
        self.lookups.find(SELECT, key, |r| response(r, false))
    }

    /// [`Cache::answer`] with the `raw` body: for a call that asked for top
    /// log-probabilities, which the body holds.
    pub(crate) fn answer_with_raw(&self, key: &str) -> Result<Option<CachedResponse>, LlmError> {
        const SELECT: &str = "SELECT content, finish_reason, prompt_tokens, completion_tokens, raw
                              FROM responses WHERE key = ?1";
        self.lookups.find(SELECT, key, |r| response(r, true))
    }

    #[cfg(test)]
    pub(crate) fn lookups(&self) -> &Lookups {
        &self.lookups
    }

    /// Commits one answer, and what its transport writes beside it (`annex`), through the
    /// writer thread; returns once the transaction holding it is committed. An existing row
    /// with the same key is kept (first answer wins), so concurrent identical calls cannot
    /// make a build depend on timing.
    pub(crate) async fn commit(
        &self,
        (endpoint, model): (&str, &str),
        key: &str,
        call: &Call,
        response: &CachedResponse,
        annex: Option<Annex>,
    ) -> Result<(), LlmError> {
        let writer = self
            .writer
            .as_ref()
            .ok_or_else(|| LlmError::Cache("the cache was opened read-only".into()))?;
        let row = AnswerRow {
            request: RequestRow::of(key, call)?,
            endpoint: endpoint.to_owned(),
            model: model.to_owned(),
            response: response.clone(),
            annex,
        };
        let (done, committed) = tokio::sync::oneshot::channel();
        self.send(writer, Pending::Answer(Box::new(AnswerJob { row, done })))?;
        Self::committed(committed).await
    }

    /// Runs `job` on the writer thread's connection (after the answers queued before it);
    /// returns once it has run. Every write goes through the writer, so reads never wait for
    /// one.
    pub(crate) async fn write(&self, job: Job) -> Result<(), LlmError> {
        let writer = self
            .writer
            .as_ref()
            .ok_or_else(|| LlmError::Cache("the cache was opened read-only".into()))?;
        let (done, ran) = tokio::sync::oneshot::channel();
        self.send(writer, Pending::Job(job, done))?;
        Self::committed(ran).await
    }

    fn send(&self, writer: &Writer, p: Pending) -> Result<(), LlmError> {
        let gone = || LlmError::Cache("the cache writer stopped".into());
        writer
            .tx
            .as_ref()
            .ok_or_else(gone)?
            .send(p)
            .map_err(|_| gone())
    }

    async fn committed(
        rx: tokio::sync::oneshot::Receiver<Result<(), String>>,
    ) -> Result<(), LlmError> {
        rx.await
            .map_err(|_| LlmError::Cache("the cache writer stopped".into()))?
            .map_err(LlmError::Cache)
    }

    /// Number of cached answers.
    pub fn len(&self) -> Result<u64, LlmError> {
        let conn = self.conn();
        Ok(conn.query_row("SELECT COUNT(*) FROM responses", [], |r| r.get::<_, i64>(0))? as u64)
    }

    pub fn is_empty(&self) -> Result<bool, LlmError> {
        Ok(self.len()? == 0)
    }
}

/// The answer a row of `responses` holds, selected as content, finish reason, prompt and
/// completion tokens, then (`with_raw`) the raw body.
fn response(r: &rusqlite::Row<'_>, with_raw: bool) -> rusqlite::Result<CachedResponse> {
    Ok(CachedResponse {
        content: r.get(0)?,
        finish_reason: r.get(1)?,
        prompt_tokens: r.get::<_, i64>(2)? as u64,
        completion_tokens: r.get::<_, i64>(3)? as u64,
        raw: if with_raw { r.get(4)? } else { String::new() },
    })
}

/// The writer thread: waits for an answer, takes every other one already waiting (up to
/// [`GROUP_MAX`]), writes them in one transaction and tells each caller how it went. Ends
/// when every handle to the cache is gone.
/// `commits` counts the transactions committed (the lookups' snapshots end at each).
fn write_loop(mut conn: Connection, rx: &std::sync::mpsc::Receiver<Pending>, commits: &AtomicU64) {
    // A job that arrived while answers were being grouped runs right after them.
    let mut next = None;
    loop {
        let first = match next.take() {
            Some(p) => p,
            None => match rx.recv() {
                Ok(p) => p,
                Err(_) => return,
            },
        };
        let mut group = match first {
            Pending::Job(job, done) => {
                let result = job(&mut conn).map_err(|e| e.to_string());
                commits.fetch_add(1, Ordering::Release);
                if let Err(e) = &result {
                    tracing::error!("cache write failed: {e}");
                }
                let _ = done.send(result);
                continue;
            }
            Pending::Answer(a) => vec![*a],
        };
        while group.len() < GROUP_MAX {
            match rx.try_recv() {
                Ok(Pending::Answer(a)) => group.push(*a),
                Ok(job) => {
                    next = Some(job);
                    break;
                }
                Err(_) => break,
            }
        }
        let result = write_group(&mut conn, &mut group).map_err(|e| e.to_string());
        commits.fetch_add(1, Ordering::Release);
        if let Err(e) = &result {
            tracing::error!(answers = group.len(), "cache write failed: {e}");
        }
        for p in group {
            // A caller that went away needs no answer.
            let _ = p.done.send(result.clone());
        }
    }
}

fn write_group(conn: &mut Connection, group: &mut [AnswerJob]) -> Result<(), rusqlite::Error> {
    let now = unix_now();
    let tx = conn.transaction()?;
    {
        let mut answer = tx.prepare_cached(INSERT_RESPONSE)?;
        for AnswerJob { row: r, .. } in group.iter() {
            r.request
                .insert(&mut answer, &r.endpoint, &r.model, &r.response, now)?;
        }
    }
    for AnswerJob { row: r, .. } in group.iter_mut() {
        if let Some(annex) = r.annex.take() {
            annex(&tx)?;
        }
    }
    tx.commit()
}

pub(crate) fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A path as the path part of an SQLite `file:` URI (`%`, `?`, `#` and non-ASCII escaped).
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for b in path.to_string_lossy().bytes() {
        match b {
            b'%' | b'?' | b'#' | 0x80.. | ..=0x20 => out.push_str(&format!("%{b:02X}")),
            _ => out.push(b as char),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_opening_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("not here/c.sqlite");
        assert!(Cache::open_read_only(&missing).unwrap().is_none());
        assert!(!dir.path().join("not here").exists());
        // An offline build's lock leaves an empty file: a dry run reads it as no cache.
        let empty = dir.path().join("empty.sqlite");
        std::fs::write(&empty, "").unwrap();
        assert!(Cache::open_read_only(&empty).unwrap().is_none());
        let path = dir.path().join("a dir #1?/c.sqlite");
        let rw = Cache::open(&path).unwrap();
        rw.put_capability("e", "m", "json-object", "probe").unwrap();
        drop(rw);
        let names = || {
            let mut v: Vec<_> = std::fs::read_dir(path.parent().unwrap())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            v.sort();
            v
        };
        let before = names();
        let ro = Cache::open_read_only(&path).unwrap().unwrap();
        assert_eq!(
            ro.capability("e", "m").unwrap().as_deref(),
            Some("json-object")
        );
        assert_eq!(ro.get("nokey").unwrap(), None);
        drop(ro);
        assert_eq!(names(), before);
    }
}
