//! Answer lookups for calls ([`Lookups`]): a connection of their own that keeps one read
//! transaction open while lookups keep finding answers. The cache names the query and reads
//! the row; this module only decides in which transaction it runs.
//!
//! A lookup in its own implicit transaction takes and drops SQLite's shared lock each time
//! (an `fcntl` on the WAL index, and the page cache checked again): in a re-run that answers
//! every call from the cache, that was a third of each lookup. Held open, one transaction
//! serves lookup after lookup. That is safe because a stored answer never changes (the first
//! answer wins, and nothing deletes one): what an older snapshot finds is what a fresh one
//! would. A key it does not find may have been written since it began, so a miss is always
//! asked again outside any snapshot before it counts. A snapshot ends when the cache's writer
//! commits (so it never holds back a checkpoint of this build's own answers), after
//! [`SNAPSHOT_READS`] lookups (so it never does for long for another process's), and at the
//! first miss; the next hit starts another.

use crate::LlmError;
use rusqlite::{Connection, OptionalExtension, Row};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The most lookup connections of a cache.
const MOST_CONNECTIONS: usize = 8;

/// The most lookups one read transaction serves.
pub(crate) const SNAPSHOT_READS: u32 = 4096;

/// The lookup connections, each with its open transaction, if any: one a core, so that
/// lookups from the runtime's worker threads seldom wait for each other (with one, a warm
/// re-run spent a twentieth of its CPU time waiting for its lock).
pub(crate) struct Lookups {
    states: Vec<Mutex<State>>,
    /// The writer's count of committed transactions (shared with it; 0 for a read-only
    /// cache, which has no writer).
    commits: Arc<AtomicU64>,
}

struct State {
    conn: Connection,
    /// The writer's commit count when the open read transaction began, and the lookups it
    /// has served; `None` when no transaction is open.
    open: Option<(u64, u32)>,
}

impl Lookups {
    /// Lookups on connections `connect` opens, one a core (at most [`MOST_CONNECTIONS`]).
    pub(crate) fn new(
        connect: impl Fn() -> Result<Connection, LlmError>,
        commits: Arc<AtomicU64>,
    ) -> Result<Self, LlmError> {
        let n = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .clamp(1, MOST_CONNECTIONS);
        let states = (0..n)
            .map(|_| {
                let conn = connect()?;
                Ok(Mutex::new(State { conn, open: None }))
            })
            .collect::<Result<_, LlmError>>()?;
        Ok(Self { states, commits })
    }

    /// A connection free now (this thread's own, when none is): each thread starts at a
    /// connection of its own, numbered as threads first look something up.
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        static THREADS: AtomicUsize = AtomicUsize::new(0);
        thread_local! {
            static FIRST: usize = THREADS.fetch_add(1, Ordering::Relaxed);
        }
        let n = self.states.len();
        let first = FIRST.with(|f| *f) % n;
        (0..n)
            .find_map(|i| self.states[(first + i) % n].try_lock().ok())
            .unwrap_or_else(|| self.states[first].lock().expect("cache lookup lock"))
    }

    /// The row `select` (a query of one parameter, the key, that selects at most one row
    /// of answers that never change) finds for `key`, read by `read`.
    pub(crate) fn find<T>(
        &self,
        select: &str,
        key: &str,
        read: impl Fn(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Option<T>, LlmError> {
        let mut s = self.state();
        let commits = self.commits.load(Ordering::Acquire);
        if let Some((since, reads)) = s.open {
            if since != commits || reads >= SNAPSHOT_READS {
                s.end()?;
            }
        }
        let found = s.find(select, key, &read)?;
        match (&found, s.open.as_mut()) {
            (Some(_), Some((_, reads))) => *reads += 1,
            (Some(_), None) => {
                // The next lookup reads in a transaction that stays open.
                s.conn.execute_batch("BEGIN DEFERRED")?;
                s.open = Some((commits, 0));
            }
            (None, Some(_)) => {
                // Written since the snapshot began? Ask the file as it is now.
                s.end()?;
                return s.find(select, key, &read);
            }
            (None, None) => {}
        }
        Ok(found)
    }
}

impl State {
    fn find<T>(
        &self,
        select: &str,
        key: &str,
        read: impl Fn(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Option<T>, LlmError> {
        let mut stmt = self.conn.prepare_cached(select)?;
        Ok(stmt.query_row([key], read).optional()?)
    }

    /// Ends the open read transaction.
    fn end(&mut self) -> Result<(), LlmError> {
        self.open = None;
        self.conn.execute_batch("COMMIT")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::cache::{Cache, CachedResponse};
    use crate::{Call, ChatRequest};

    fn call() -> Call {
        Call {
            request: ChatRequest {
                messages: Vec::new(),
                temperature: 0.0,
                top_p: None,
                max_tokens: 8,
                seed: None,
                response_schema: None,
                top_logprobs: None,
            },
            template: "t".into(),
            template_hash: "h".into(),
            item: "i".into(),
            offline: String::new(),
        }
    }

    fn answer(text: &str) -> CachedResponse {
        CachedResponse {
            content: text.into(),
            finish_reason: "stop".into(),
            prompt_tokens: 3,
            completion_tokens: 1,
            raw: "{}".into(),
        }
    }

    async fn put(cache: &Cache, key: &str, text: &str) {
        let who = ("http://e", "m");
        cache
            .commit(who, key, &call(), &answer(text), None)
            .await
            .unwrap();
    }

    fn open_snapshot(cache: &Cache) -> Option<(u64, u32)> {
        cache.lookups().state().open
    }

    /// An answer written by another process while this one reads in a snapshot is found:
    /// a miss is asked again outside the snapshot.
    #[tokio::test]
    async fn an_answer_written_elsewhere_during_a_snapshot_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.sqlite");
        let (here, elsewhere) = (Cache::open(&path).unwrap(), Cache::open(&path).unwrap());
        put(&here, "k1", "one").await;
        assert_eq!(here.answer("k1").unwrap().unwrap().content, "one");
        assert_eq!(here.answer("k1").unwrap().unwrap().content, "one");
        assert!(
            open_snapshot(&here).is_some(),
            "hits read in one transaction"
        );
        put(&elsewhere, "k2", "two").await;
        let found = here
            .answer("k2")
            .unwrap()
            .expect("written by the other handle");
        assert_eq!(found.content, "two");
        assert_eq!(found.raw, "", "a call's lookup leaves the raw body out");
        assert_eq!(here.answer("k3").unwrap(), None);
        assert!(open_snapshot(&here).is_none(), "a miss ends the snapshot");
    }

    /// The snapshot ends when this cache's writer commits (so it never holds back the
    /// checkpoint of the build's own answers) and after its most lookups.
    #[tokio::test]
    async fn a_snapshot_ends_at_a_commit_and_after_its_most_lookups() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(&dir.path().join("c.sqlite")).unwrap();
        put(&cache, "k1", "one").await;
        cache.answer("k1").unwrap().unwrap();
        let (began, _) = open_snapshot(&cache).unwrap();
        put(&cache, "k2", "two").await;
        assert_eq!(cache.answer("k2").unwrap().unwrap().content, "two");
        let (again, reads) = open_snapshot(&cache).unwrap();
        assert!(again > began, "a new snapshot after the commit");
        assert_eq!(reads, 0);
        for _ in 0..super::SNAPSHOT_READS {
            cache.answer("k1").unwrap().unwrap();
        }
        assert_eq!(open_snapshot(&cache).unwrap().1, super::SNAPSHOT_READS);
        cache.answer("k1").unwrap().unwrap();
        assert_eq!(
            open_snapshot(&cache).unwrap().1,
            0,
            "a fresh one after the most"
        );
    }

    /// A read-only cache (dry runs) reads the same answers through its own lookups.
    #[tokio::test]
    async fn a_read_only_cache_finds_the_answers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.sqlite");
        let cache = Cache::open(&path).unwrap();
        put(&cache, "k1", "one").await;
        drop(cache);
        let ro = Cache::open_read_only(&path).unwrap().unwrap();
        for _ in 0..3 {
            assert_eq!(ro.answer("k1").unwrap().unwrap().content, "one");
        }
        assert_eq!(ro.answer("k2").unwrap(), None);
    }
}
