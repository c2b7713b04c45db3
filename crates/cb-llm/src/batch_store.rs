//! The batch journal, in the cache database beside the answers: every uploaded input file,
//! the batch the provider made of it, its state and counts, and the request keys it holds.
//!
//! A file is recorded (with its keys) right after the upload and before the batch is
//! created, so a process killed at any moment leaves enough to find the batch again (by its
//! input file) and never submits the same keys twice. Answers of a finished batch are
//! committed to the cache in the same transaction that marks the batch collected.

use crate::cache::{unix_now, Cache, CachedResponse, RequestRow};
use crate::LlmError;
use rusqlite::{params, OptionalExtension};
use std::collections::HashSet;

/// How the journal names the files of a batch folder (`--batch-dir`): `dir:FOLDER/NAME`;
/// every other file id is the Batch API's.
pub(crate) const FOLDER_FILES: &str = "dir:";

/// The journal's key of the Batch API's input file `file_id` at `endpoint` (its
/// [`crate::request::endpoint_identity`]): `ENDPOINT#FILE_ID`, so that two servers that both
/// hand out `file-1` keep two files apart. A file a version before this one journaled is
/// keyed by its id alone and read as it is (no migration: its row names its endpoint, and a
/// new file's key never equals an old one's).
pub(crate) fn api_key(endpoint: &str, file_id: &str) -> String {
    format!("{endpoint}#{file_id}")
}

/// Creates the journal's tables in `cache` (when it is writable): done by the transports that
/// write the journal (the Batch API, batch files) when they are set up. A journal made before
/// files had owners gets the column, every earlier file unowned.
pub(crate) fn create_tables(cache: &Cache) -> Result<(), LlmError> {
    cache.create_tables(SCHEMA)?;
    if cache.has_table("batches")? && !cache.has_column("batches", "owner")? {
        cache.create_tables(OWNER_COLUMN)?;
    }
    Ok(())
}

/// Who wrote each file: the layer whose calls it holds (`Core::owner`, a recipe and a role),
/// empty for a file of a layer of no recipe or of an earlier version.
const OWNER_COLUMN: &str = "ALTER TABLE batches ADD COLUMN owner TEXT NOT NULL DEFAULT ''";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS batches (
    file_id TEXT PRIMARY KEY,
    batch_id TEXT,
    endpoint TEXT NOT NULL,
    model TEXT NOT NULL,
    state TEXT NOT NULL,
    requests INTEGER NOT NULL,
    completed INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    estimated_usd REAL NOT NULL DEFAULT 0,
    collected INTEGER NOT NULL DEFAULT 0,
    created_unix INTEGER NOT NULL,
    updated_unix INTEGER NOT NULL,
    owner TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS batch_requests (
    key TEXT NOT NULL,
    file_id TEXT NOT NULL,
    template TEXT NOT NULL,
    template_hash TEXT NOT NULL,
    request TEXT NOT NULL,
    PRIMARY KEY (file_id, key)
);
CREATE INDEX IF NOT EXISTS batch_requests_key ON batch_requests(key);
";

/// One batch as the journal knows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BatchRecord {
    /// The uploaded input file as its server names it (or a batch folder's file,
    /// `dir:FOLDER/NAME`).
    pub file_id: String,
    /// The journal's own key of the file (known before the batch exists): [`api_key`] for
    /// the Batch API's, the id itself for a batch folder's or an older version's.
    #[serde(skip)]
    pub(crate) key: String,
    /// The provider's batch id; `None` while the batch has not been created yet.
    pub batch_id: Option<String>,
    pub endpoint: String,
    pub model: String,
    /// The provider's last reported status (`validating`, `in_progress`, `completed`,
    /// `expired`, `cancelled`, `failed`, ...) or `uploaded`.
    pub state: String,
    pub requests: u64,
    pub completed: u64,
    pub failed: u64,
    /// The cost estimate counted against `--max-cost` when it was submitted.
    pub estimated_usd: f64,
    /// Its answers are in the cache and its errors were handed out.
    pub collected: bool,
    pub created_unix: u64,
    pub updated_unix: u64,
    /// The layer that wrote it: a recipe and a role (`kre-cose/writer`, `kre-cose/reader`,
    /// `kre-cose/model:NAME`); empty for a layer of no recipe or a file of an older version.
    pub owner: String,
}

const SELECT: &str =
    "SELECT file_id, batch_id, endpoint, model, state, requests, completed, failed,
    estimated_usd, collected, created_unix, updated_unix, owner FROM batches";

fn record(r: &rusqlite::Row<'_>) -> rusqlite::Result<BatchRecord> {
    let (key, endpoint): (String, String) = (r.get(0)?, r.get(2)?);
    let file_id = key
        .strip_prefix(endpoint.as_str())
        .and_then(|id| id.strip_prefix('#'))
        .unwrap_or(&key)
        .to_owned();
    Ok(BatchRecord {
        file_id,
        key,
        batch_id: r.get(1)?,
        endpoint,
        model: r.get(3)?,
        state: r.get(4)?,
        requests: r.get::<_, i64>(5)? as u64,
        completed: r.get::<_, i64>(6)? as u64,
        failed: r.get::<_, i64>(7)? as u64,
        estimated_usd: r.get(8)?,
        collected: r.get::<_, i64>(9)? != 0,
        created_unix: r.get::<_, i64>(10)? as u64,
        updated_unix: r.get::<_, i64>(11)? as u64,
        owner: r.get(12)?,
    })
}

impl Cache {
    /// Every batch in the journal, oldest first (none in a cache no batch transport has
    /// written to).
    pub fn batches(&self) -> Result<Vec<BatchRecord>, LlmError> {
        if !self.has_table("batches")? {
            return Ok(Vec::new());
        }
        create_tables(self)?;
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!("{SELECT} ORDER BY created_unix, rowid"))?;
        let rows = stmt.query_map([], record)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The batch with this provider id or input file id, at the endpoint `at` (its
    /// [`crate::request::endpoint_identity`]) when given: an id that names batches of two
    /// servers (each hands out `batch-1`) is refused without it, naming them.
    pub fn batch(&self, id: &str, at: Option<&str>) -> Result<Option<BatchRecord>, LlmError> {
        if !self.has_table("batches")? {
            return Ok(None);
        }
        create_tables(self)?;
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "{SELECT} WHERE batch_id = ?1 OR file_id = ?1 OR file_id = endpoint || '#' || ?1
             ORDER BY rowid"
        ))?;
        let mut named: Vec<BatchRecord> =
            stmt.query_map([id], record)?.collect::<Result<_, _>>()?;
        if let Some(at) = at {
            named.retain(|b| b.endpoint == at);
        }
        if named.len() > 1 {
            let servers: Vec<&str> = named.iter().map(|b| b.endpoint.as_str()).collect();
            return Err(LlmError::Config(format!(
                "{id} names {} batches of the journal, at {}: say which server with --base-url",
                named.len(),
                servers.join(" and ")
            )));
        }
        Ok(named.pop())
    }

    /// The batch the journal keys `key` ([`BatchRecord::key`]).
    pub(crate) fn batch_keyed(&self, key: &str) -> Result<Option<BatchRecord>, LlmError> {
        let conn = self.conn();
        Ok(conn
            .query_row(&format!("{SELECT} WHERE file_id = ?1"), [key], record)
            .optional()?)
    }

    /// Records an input file (uploaded, or written to a batch folder) of the layer `owner`
    /// and its `requests` requests, in `state` (one transaction, on the writer). `rows` are taken one at a time
    /// as they are written (from the spool of waiting requests); one that cannot be read
    /// undoes the whole record.
    pub(crate) async fn record_upload<I>(
        &self,
        (file_id, owner): (&str, &str),
        (endpoint, model): (&str, &str),
        (state, estimated_usd): (&str, f64),
        (requests, rows): (usize, I),
    ) -> Result<(), LlmError>
    where
        I: IntoIterator<Item = Result<RequestRow, String>> + Send + 'static,
        I::IntoIter: Send,
    {
        let (file_id, owner, endpoint, model, state) = (
            file_id.to_owned(),
            owner.to_owned(),
            endpoint.to_owned(),
            model.to_owned(),
            state.to_owned(),
        );
        let rows = rows.into_iter();
        self.write(Box::new(move |conn| {
            let tx = conn.transaction()?;
            tx.execute(
                "INSERT INTO batches (file_id, endpoint, model, state, requests, estimated_usd,
                 created_unix, updated_unix, owner) VALUES (?1, ?2, ?3, ?7, ?4, ?5, ?6, ?6, ?8)",
                params![
                    file_id,
                    endpoint,
                    model,
                    requests as i64,
                    estimated_usd,
                    unix_now(),
                    state,
                    owner
                ],
            )?;
            {
                let mut stmt = tx.prepare(
                    "INSERT OR IGNORE INTO batch_requests (key, file_id, template, template_hash, request)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )?;
                for r in rows {
                    let r = r.map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.into()))?;
                    stmt.execute(params![
                        r.key,
                        file_id,
                        r.template,
                        r.template_hash,
                        r.request
                    ])?;
                }
            }
            tx.commit()
        }))
        .await
    }

    /// Stores what the provider last said of a batch (on the writer).
    pub(crate) async fn update_batch(
        &self,
        file_id: &str,
        batch_id: &str,
        state: &str,
        completed: u64,
        failed: u64,
    ) -> Result<(), LlmError> {
        let (file_id, batch_id, state) =
            (file_id.to_owned(), batch_id.to_owned(), state.to_owned());
        self.write(Box::new(move |conn| {
            conn.execute(
                "UPDATE batches SET batch_id = ?2, state = ?3, completed = ?4, failed = ?5,
                 updated_unix = ?6 WHERE file_id = ?1",
                params![
                    file_id,
                    batch_id,
                    state,
                    completed as i64,
                    failed as i64,
                    unix_now()
                ],
            )
            .map(|_| ())
        }))
        .await
    }

    /// Live (not yet collected) batches of this endpoint and model, with the keys each holds:
    /// the Batch API's (`folder` `None`), or the files of one batch folder (`folder` is their
    /// ids' common start, [`FOLDER_FILES`] and the folder).
    pub(crate) fn live_batches(
        &self,
        endpoint: &str,
        model: &str,
        folder: Option<&str>,
    ) -> Result<Vec<(BatchRecord, Vec<String>)>, LlmError> {
        let conn = self.conn();
        // Without a folder: every file but the folders' (their ids start with `dir:`).
        let mut stmt = conn.prepare(&format!(
            "{SELECT} WHERE collected = 0 AND endpoint = ?1 AND model = ?2
             AND (substr(file_id, 1, length(?3)) = ?3) = (?4 IS NOT NULL) ORDER BY rowid"
        ))?;
        let prefix = folder.unwrap_or(FOLDER_FILES);
        let live: Vec<BatchRecord> = stmt
            .query_map(params![endpoint, model, prefix, folder], record)?
            .collect::<Result<_, _>>()?;
        let mut keys = conn.prepare("SELECT key FROM batch_requests WHERE file_id = ?1")?;
        live.into_iter()
            .map(|b| {
                let k = keys
                    .query_map([&b.key], |r| r.get(0))?
                    .collect::<Result<Vec<String>, _>>()?;
                Ok((b, k))
            })
            .collect()
    }

    /// The live (not yet collected) files of one batch folder (their ids start with
    /// `prefix`, [`FOLDER_FILES`] and the folder) for this endpoint and model, without their
    /// keys: a waiting build has one a window of its source, so their keys together grow with
    /// the items and are asked of one at a time ([`Cache::held_live`]).
    pub(crate) fn live_files(
        &self,
        endpoint: &str,
        model: &str,
        prefix: &str,
    ) -> Result<Vec<BatchRecord>, LlmError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "{SELECT} WHERE collected = 0 AND endpoint = ?1 AND model = ?2
             AND substr(file_id, 1, length(?3)) = ?3 ORDER BY rowid"
        ))?;
        let live = stmt.query_map(params![endpoint, model, prefix], record)?;
        Ok(live.collect::<Result<_, _>>()?)
    }

    /// The live file of the batch folder `prefix` names that holds the request `key` (for
    /// this endpoint and model), if one does: its id and owner.
    pub(crate) fn held_live(
        &self,
        key: &str,
        (endpoint, model): (&str, &str),
        prefix: &str,
    ) -> Result<Option<(String, String)>, LlmError> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT b.file_id, b.owner FROM batch_requests r JOIN batches b ON b.file_id = r.file_id
             WHERE r.key = ?1 AND b.collected = 0 AND b.endpoint = ?2 AND b.model = ?3
             AND substr(b.file_id, 1, length(?4)) = ?4 LIMIT 1",
        )?;
        Ok(stmt
            .query_row(params![key, endpoint, model, prefix], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?)
    }

    /// The ids of the journal's files that start with `prefix`.
    pub(crate) fn file_ids(&self, prefix: &str) -> Result<Vec<String>, LlmError> {
        let conn = self.conn();
        let mut stmt =
            conn.prepare("SELECT file_id FROM batches WHERE substr(file_id, 1, length(?1)) = ?1")?;
        let ids = stmt.query_map([prefix], |r| r.get(0))?;
        Ok(ids.collect::<Result<_, _>>()?)
    }

    /// How many collected files (uploaded or in a batch folder) held this request: the
    /// times it was sent and came back.
    pub(crate) fn attempts(&self, key: &str) -> Result<u32, LlmError> {
        let conn = self.conn();
        let n: i64 = conn.query_row(
            "SELECT COUNT(*) FROM batch_requests r JOIN batches b ON b.file_id = r.file_id
             WHERE r.key = ?1 AND b.collected = 1",
            [key],
            |r| r.get(0),
        )?;
        Ok(n as u32)
    }

    /// The keys of the requests of a batch.
    pub(crate) fn batch_keys(&self, file_id: &str) -> Result<HashSet<String>, LlmError> {
        let conn = self.conn();
        let mut stmt = conn.prepare("SELECT key FROM batch_requests WHERE file_id = ?1")?;
        let keys = stmt.query_map([file_id], |r| r.get(0))?;
        Ok(keys.collect::<Result<_, _>>()?)
    }

    /// The serialized request of `key` in a batch.
    pub(crate) fn batch_request(
        &self,
        file_id: &str,
        key: &str,
    ) -> Result<Option<String>, LlmError> {
        let conn = self.conn();
        Ok(conn
            .query_row(
                "SELECT request FROM batch_requests WHERE file_id = ?1 AND key = ?2",
                [file_id, key],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// Commits a collected batch's answers (each stored with its request as the journal
    /// holds it, never read into memory) and marks it collected, in one transaction on the
    /// writer; gives the answers back, and whether this collection was the file's first (a
    /// file collected already, by another layer of the run, is paid for and counted once).
    pub(crate) async fn collect_batch(
        &self,
        file_id: &str,
        (endpoint, model): (&str, &str),
        answers: Vec<(String, CachedResponse)>,
    ) -> Result<(Vec<(String, CachedResponse)>, bool), LlmError> {
        let (file_id, endpoint, model) =
            (file_id.to_owned(), endpoint.to_owned(), model.to_owned());
        let (back, answered) = tokio::sync::oneshot::channel();
        self.write(Box::new(move |conn| {
            let tx = conn.transaction()?;
            {
                let mut stmt = tx.prepare(INSERT_FROM_JOURNAL)?;
                let t = unix_now();
                for (key, a) in &answers {
                    stmt.execute(params![
                        file_id,
                        key,
                        crate::CACHE_FORMAT,
                        endpoint,
                        model,
                        a.content,
                        a.finish_reason,
                        a.prompt_tokens as i64,
                        a.completion_tokens as i64,
                        a.raw,
                        t
                    ])?;
                }
            }
            let first = tx.execute(
                "UPDATE batches SET collected = 1, updated_unix = ?2 WHERE file_id = ?1
                 AND collected = 0",
                params![file_id, unix_now()],
            )? == 1;
            tx.commit()?;
            let _ = back.send((answers, first));
            Ok(())
        }))
        .await?;
        answered
            .await
            .map_err(|_| LlmError::Cache("the cache writer stopped".into()))
    }
}

/// Stores an answer under its key with the request the journal holds for it in that file
/// (an answer already there stays: the first one wins).
const INSERT_FROM_JOURNAL: &str = "INSERT OR IGNORE INTO responses
     (key, cache_format, endpoint, model, template, template_hash, request, content,
      finish_reason, prompt_tokens, completion_tokens, raw, created_unix)
     SELECT key, ?3, ?4, ?5, template, template_hash, request, ?6, ?7, ?8, ?9, ?10, ?11
     FROM batch_requests WHERE file_id = ?1 AND key = ?2";

#[cfg(test)]
mod tests {
    use super::*;

    /// The journal is written by the cache's writer thread: a reader holding the read
    /// connection does not hold it up (before, the journal wrote on that connection and this
    /// waited forever).
    #[tokio::test]
    #[allow(clippy::await_holding_lock)] // on purpose: a reader holds the read connection
    async fn journal_writes_go_through_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(&dir.path().join("c.sqlite")).unwrap();
        create_tables(&cache).unwrap();
        let reading = cache.conn();
        let row = RequestRow {
            key: "k1".into(),
            template: "t".into(),
            template_hash: "h".into(),
            request: "{}".into(),
        };
        let written = async {
            cache
                .record_upload(
                    ("file-1", "kre-cose/writer"),
                    ("http://e/v1", "m"),
                    ("uploaded", 0.5),
                    (1, vec![Ok(row)]),
                )
                .await?;
            cache
                .update_batch("file-1", "batch-1", "in_progress", 0, 0)
                .await
        };
        tokio::time::timeout(std::time::Duration::from_secs(20), written)
            .await
            .expect("the journal write waited for the read connection")
            .unwrap();
        drop(reading);
        let b = cache.batch_keyed("file-1").unwrap().unwrap();
        assert_eq!(
            (b.batch_id.as_deref(), b.state.as_str(), b.requests),
            (Some("batch-1"), "in_progress", 1)
        );
    }

    /// Two servers that both hand out `file-1` keep two files; a file an older version
    /// journaled under its bare id is read (and resumed) as it was.
    #[tokio::test]
    async fn two_servers_file_ids_are_kept_apart() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(&dir.path().join("c.sqlite")).unwrap();
        create_tables(&cache).unwrap();
        let (a, b) = ("http://a/v1", "http://b/v1");
        let row = |key: &str| RequestRow {
            key: key.into(),
            template: "t".into(),
            template_hash: "h".into(),
            request: "{}".into(),
        };
        for (file, at, key) in [
            (api_key(a, "file-1"), a, "k1"),
            (api_key(b, "file-1"), b, "k2"),
            ("file-9".to_owned(), a, "k3"),
        ] {
            cache
                .record_upload(
                    (&file, "o"),
                    (at, "m"),
                    ("uploaded", 0.0),
                    (1, vec![Ok(row(key))]),
                )
                .await
                .unwrap();
        }
        let ids: Vec<(String, String)> = cache
            .batches()
            .unwrap()
            .into_iter()
            .map(|r| (r.file_id, r.endpoint))
            .collect();
        assert_eq!(
            ids,
            [("file-1", a), ("file-1", b), ("file-9", a)]
                .map(|(f, e)| (f.to_owned(), e.to_owned()))
        );
        let e = cache.batch("file-1", None).unwrap_err().to_string();
        assert!(e.contains(a) && e.contains(b), "{e}");
        assert_eq!(cache.batch("file-1", Some(b)).unwrap().unwrap().endpoint, b);
        assert_eq!(cache.batch("file-9", None).unwrap().unwrap().key, "file-9");
        let live: Vec<(String, Vec<String>)> = cache
            .live_batches(a, "m", None)
            .unwrap()
            .into_iter()
            .map(|(r, k)| (r.file_id, k))
            .collect();
        assert_eq!(
            live,
            [("file-1", "k1"), ("file-9", "k3")].map(|(f, k)| (f.to_owned(), vec![k.to_owned()]))
        );
    }
}
