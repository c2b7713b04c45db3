//! The ratings file: one SQLite file beside the build (WAL), one row per rater and item,
//! written by upsert and committed before the page answers, so that a killed server or a
//! second tab loses no submitted rating. It is created at the first rating; the viewer
//! writes nothing else.

use crate::error::ViewError;
use cb_audit::sheet::Rating;
use rusqlite::{params, Connection};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A rater's judgement of an item on KRE appendix A.4's two scales, and a comment.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    pub rater: String,
    pub item_id: String,
    /// How misleading the negative context is.
    pub misleading: Rating,
    /// Whether the answer set alone tells the real answer (`None`: not said).
    pub distinguishable: Option<bool>,
    pub comment: String,
}

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS ratings (
    rater TEXT NOT NULL,
    item_id TEXT NOT NULL,
    misleading TEXT NOT NULL,
    distinguishable INTEGER,
    comment TEXT NOT NULL,
    updated_unix INTEGER NOT NULL,
    PRIMARY KEY (rater, item_id)
)";

/// The ratings file, opened at the first write (or read, when it exists).
#[derive(Debug)]
pub struct Ratings {
    path: PathBuf,
    conn: Mutex<Option<Connection>>,
}

/// A rater's name: 1 to 64 characters, none of them a control character.
pub fn check_rater(name: &str) -> Result<String, ViewError> {
    let n = name.trim();
    if n.is_empty() || n.chars().count() > 64 || n.chars().any(char::is_control) {
        return Err(ViewError::BadRequest(
            "a rater's name is 1 to 64 characters, none of them a control character".into(),
        ));
    }
    Ok(n.to_owned())
}

impl Ratings {
    pub fn new(path: &Path) -> Self {
        Ratings {
            path: path.to_path_buf(),
            conn: Mutex::new(None),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn with<T>(
        &self,
        create: bool,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<Option<T>, ViewError> {
        let mut guard = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            if !create && !self.path.is_file() {
                return Ok(None);
            }
            let err = |e| ViewError::sqlite(&self.path, e);
            let conn = Connection::open(&self.path).map_err(err)?;
            conn.pragma_update(None, "journal_mode", "WAL")
                .map_err(err)?;
            conn.pragma_update(None, "synchronous", "FULL")
                .map_err(err)?;
            conn.busy_timeout(std::time::Duration::from_secs(10))
                .map_err(err)?;
            conn.execute_batch(SCHEMA).map_err(err)?;
            *guard = Some(conn);
        }
        let conn = guard.as_ref().expect("opened above");
        f(conn)
            .map(Some)
            .map_err(|e| ViewError::sqlite(&self.path, e))
    }

    /// Stores a judgement (replacing the rater's earlier one of the item), committed on return.
    pub fn put(&self, j: &Judgement) -> Result<(), ViewError> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        self.with(true, |c| {
            c.execute(
                "INSERT INTO ratings (rater, item_id, misleading, distinguishable, comment, updated_unix)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (rater, item_id) DO UPDATE SET misleading = excluded.misleading,
                   distinguishable = excluded.distinguishable, comment = excluded.comment,
                   updated_unix = excluded.updated_unix",
                params![
                    j.rater,
                    j.item_id,
                    j.misleading.as_str(),
                    j.distinguishable,
                    j.comment,
                    now
                ],
            )
        })?;
        Ok(())
    }

    /// Every judgement, by rater then item.
    pub fn all(&self) -> Result<Vec<Judgement>, ViewError> {
        let got = self.with(false, |c| {
            let mut st = c.prepare(
                "SELECT rater, item_id, misleading, distinguishable, comment FROM ratings
                 ORDER BY rater, item_id",
            )?;
            let rows = st.query_map([], |r| {
                let m: String = r.get(2)?;
                Ok(Judgement {
                    rater: r.get(0)?,
                    item_id: r.get(1)?,
                    misleading: Rating::parse(&m).unwrap_or(Rating::Not),
                    distinguishable: r.get(3)?,
                    comment: r.get(4)?,
                })
            })?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })?;
        Ok(got.unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upsert_keeps_one_row_per_rater_and_item_and_creates_nothing_to_read() {
        let d = tempfile::tempdir().unwrap();
        let r = Ratings::new(&d.path().join("ratings.sqlite"));
        assert!(r.all().unwrap().is_empty());
        assert!(!d.path().join("ratings.sqlite").exists());
        let mut j = Judgement {
            rater: "ann".into(),
            item_id: "a#1".into(),
            misleading: Rating::Somewhat,
            distinguishable: Some(false),
            comment: "<b>".into(),
        };
        r.put(&j).unwrap();
        j.misleading = Rating::Highly;
        r.put(&j).unwrap();
        assert_eq!(r.all().unwrap(), vec![j]);
        assert!(check_rater(" ").is_err() && check_rater("a\u{7}").is_err());
    }
}
