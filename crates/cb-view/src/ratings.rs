//! The ratings file: one SQLite file beside the build (WAL), one row per rater and item,
//! written by upsert and committed before the page answers, so that a killed server or a
//! second tab loses no submitted rating. It is created at the first rating; the viewer
//! writes nothing else.
//!
//! [`Ratings::open`] checks the file before the server starts: an existing file must be a
//! ratings database; a file or folder that cannot be written leaves the viewer reading only
//! (the ratings so far are shown, no rating is taken, and the Rate page says why).
//!
//! A judgement is on two scales: how misleading (KRE appendix A.4) and how plausible. A
//! file written before the plausibility scale has no `plausible` column: it is read as
//! it is (its judgements have no plausibility), and the column is added to it, empty for
//! the old rows, when the viewer opens it to write (a file it can only read stays as it is).
//! The third question, asked of a ConflictBank-style conflicting evidence ("does it contradict
//! the correct evidence?", `contradicts`), came later still and is migrated the same way.

use crate::error::ViewError;
use cb_audit::sheet::{Plausibility, Rating, Scale};
use rusqlite::{params, Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A rater's judgement of an item: KRE appendix A.4's two questions, the plausibility of the
/// context, and a comment.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    pub rater: String,
    pub item_id: String,
    /// How misleading the negative context is.
    pub misleading: Rating,
    /// Whether a careful reader who does not know the answer could accept the negative
    /// context as written (`None`: a rating stored before that scale was asked).
    pub plausibility: Option<Plausibility>,
    /// Whether the answer set alone tells the real answer (`None`: not said).
    pub distinguishable: Option<bool>,
    /// Whether the conflicting evidence contradicts the correct one (ConflictBank-style
    /// items; `None`: not asked, or stored before that question).
    pub contradicts: Option<bool>,
    pub comment: String,
}

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS ratings (
    rater TEXT NOT NULL,
    item_id TEXT NOT NULL,
    misleading TEXT NOT NULL,
    distinguishable INTEGER,
    comment TEXT NOT NULL,
    updated_unix INTEGER NOT NULL,
    plausible TEXT,
    contradicts INTEGER,
    PRIMARY KEY (rater, item_id)
)";

/// The columns added after the first ratings files, each with its type: a file written
/// before one lacks it.
const ADDED: [(&str, &str); 2] = [("plausible", "TEXT"), ("contradicts", "INTEGER")];

/// Whether the `ratings` table has the column `name` (files written before it do not).
fn has_column(conn: &Connection, name: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM pragma_table_info('ratings') WHERE name = ?1",
        [name],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

/// The ratings file, opened at the first write (or read, when it exists).
#[derive(Debug)]
pub struct Ratings {
    path: PathBuf,
    conn: Mutex<Option<Connection>>,
    /// Why no rating can be written, when none can.
    pub read_only: Option<String>,
}

/// The columns a ratings file's `ratings` table must have (those of [`ADDED`] may be
/// missing: a file written before them).
const COLUMNS: [&str; 6] = [
    "rater",
    "item_id",
    "misleading",
    "distinguishable",
    "comment",
    "updated_unix",
];

/// A rater's name: 1 to 64 characters, none of them a control or direction character.
pub fn check_rater(name: &str) -> Result<String, ViewError> {
    let n = name.trim();
    let hidden = |c: char| c.is_control() || crate::templates::hidden(c);
    if n.is_empty() || n.chars().count() > 64 || n.chars().any(hidden) {
        return Err(ViewError::BadRequest(
            "a rater's name is 1 to 64 characters, none of them a control or direction character"
                .into(),
        ));
    }
    Ok(n.to_owned())
}

/// Why the database at `path` is not a ratings file, if it is not: not SQLite, or no
/// `ratings` table with its columns (an empty database is one still to be made).
fn not_ratings(path: &Path) -> Option<String> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
    let conn = match Connection::open_with_flags(read_only_uri(path), flags) {
        Ok(c) => c,
        Err(e) => return Some(e.to_string()),
    };
    let tables: rusqlite::Result<Vec<String>> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect());
    let tables = match tables {
        Ok(t) => t,
        Err(e) => return Some(e.to_string()),
    };
    if tables.is_empty() {
        return None;
    }
    if !tables.iter().any(|t| t == "ratings") {
        return Some(format!(
            "it holds no ratings table (tables: {})",
            tables.join(", ")
        ));
    }
    let columns: rusqlite::Result<Vec<String>> = conn
        .prepare("SELECT name FROM pragma_table_info('ratings')")
        .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect());
    match columns {
        Ok(c) if COLUMNS.iter().all(|want| c.iter().any(|h| h == want)) => None,
        Ok(c) => Some(format!(
            "its ratings table has the columns {}, not {}",
            c.join(", "),
            COLUMNS.join(", ")
        )),
        Err(e) => Some(e.to_string()),
    }
}

/// An SQLite address that opens `path` to read only and creates nothing beside it: sharing
/// its `-wal` file where there is one (a viewer that was killed left its last ratings there),
/// else as immutable.
fn read_only_uri(path: &Path) -> String {
    const SET: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
        .add(b' ')
        .add(b'%')
        .add(b'?')
        .add(b'#');
    let p = path.to_string_lossy();
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let immutable = if Path::new(&wal).exists() {
        ""
    } else {
        "&immutable=1"
    };
    format!(
        "file:{}?mode=ro{immutable}",
        percent_encoding::utf8_percent_encode(&p, SET)
    )
}

/// Why the ratings file `path` cannot be written, if it cannot: the file, or its folder
/// (which holds the file's journal), refuses a write. The folder is asked by making a file
/// there, removed at once (modes say nothing where privileges ignore them).
fn unwritable(path: &Path) -> Option<String> {
    if path.exists() {
        if let Err(e) = std::fs::OpenOptions::new().append(true).open(path) {
            return Some(format!("{} cannot be written: {e}", path.display()));
        }
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let probe = tempfile::Builder::new()
        .prefix(".view-ratings-probe")
        .tempfile_in(dir);
    probe.err().map(|e| {
        format!(
            "the folder {} cannot be written (the ratings file and its journal live there): {e}",
            dir.display()
        )
    })
}

impl Ratings {
    /// A ratings file at `path`, to read and write.
    pub fn new(path: &Path) -> Self {
        Ratings {
            path: path.to_path_buf(),
            conn: Mutex::new(None),
            read_only: None,
        }
    }

    /// The ratings file at `path`, checked: an existing file that is not a ratings database
    /// is an error naming it; one that cannot be written is opened to read only.
    pub fn open(path: &Path) -> Result<Self, ViewError> {
        if path.is_file() {
            if let Some(why) = not_ratings(path) {
                return Err(ViewError::Record {
                    path: path.display().to_string(),
                    message: format!("not a ratings file of the viewer: {why}"),
                });
            }
        }
        Ok(Ratings {
            read_only: unwritable(path),
            ..Ratings::new(path)
        })
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
            if self.read_only.is_some() {
                // Read only: a file with no ratings table yet holds no rating.
                let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
                let conn =
                    Connection::open_with_flags(read_only_uri(&self.path), flags).map_err(err)?;
                let tables: i64 = conn
                    .query_row(
                        "SELECT count(*) FROM sqlite_master WHERE name = 'ratings'",
                        [],
                        |r| r.get(0),
                    )
                    .map_err(err)?;
                if tables == 0 {
                    return Ok(None);
                }
                *guard = Some(conn);
                let conn = guard.as_ref().expect("opened above");
                return f(conn).map(Some).map_err(err);
            }
            let conn = Connection::open(&self.path).map_err(err)?;
            conn.pragma_update(None, "journal_mode", "WAL")
                .map_err(err)?;
            conn.pragma_update(None, "synchronous", "FULL")
                .map_err(err)?;
            conn.busy_timeout(std::time::Duration::from_secs(10))
                .map_err(err)?;
            conn.execute_batch(SCHEMA).map_err(err)?;
            for (name, kind) in ADDED {
                if !has_column(&conn, name).map_err(err)? {
                    conn.execute_batch(&format!("ALTER TABLE ratings ADD COLUMN {name} {kind}"))
                        .map_err(err)?;
                }
            }
            *guard = Some(conn);
        }
        let conn = guard.as_ref().expect("opened above");
        f(conn)
            .map(Some)
            .map_err(|e| ViewError::sqlite(&self.path, e))
    }

    /// Stores a judgement (replacing the rater's earlier one of the item), committed on return.
    pub fn put(&self, j: &Judgement) -> Result<(), ViewError> {
        if let Some(why) = &self.read_only {
            return Err(ViewError::Unavailable(format!(
                "no rating can be stored: {why}; nothing was stored"
            )));
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        self.with(true, |c| {
            c.execute(
                "INSERT INTO ratings (rater, item_id, misleading, distinguishable, comment, updated_unix, plausible, contradicts)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT (rater, item_id) DO UPDATE SET misleading = excluded.misleading,
                   distinguishable = excluded.distinguishable, comment = excluded.comment,
                   updated_unix = excluded.updated_unix, plausible = excluded.plausible,
                   contradicts = excluded.contradicts",
                params![
                    j.rater,
                    j.item_id,
                    j.misleading.as_str(),
                    j.distinguishable,
                    j.comment,
                    now,
                    j.plausibility.map(Scale::as_str),
                    j.contradicts,
                ],
            )
        })?;
        Ok(())
    }

    /// Every judgement, by rater then item.
    pub fn all(&self) -> Result<Vec<Judgement>, ViewError> {
        let got = self.with(false, |c| {
            // A file opened read only keeps its columns as they were written.
            let mut added = Vec::new();
            for (name, _) in ADDED {
                added.push(if has_column(c, name)? { name } else { "NULL" });
            }
            let mut st = c.prepare(&format!(
                "SELECT rater, item_id, misleading, distinguishable, comment, {}
                 FROM ratings ORDER BY rater, item_id",
                added.join(", ")
            ))?;
            let rows = st.query_map([], |r| {
                let m: String = r.get(2)?;
                let p: Option<String> = r.get(5)?;
                Ok(Judgement {
                    rater: r.get(0)?,
                    item_id: r.get(1)?,
                    misleading: Rating::parse(&m).unwrap_or(Rating::Not),
                    plausibility: p.as_deref().and_then(Plausibility::parse),
                    distinguishable: r.get(3)?,
                    contradicts: r.get(6)?,
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
            plausibility: Some(Plausibility::Somewhat),
            distinguishable: Some(false),
            contradicts: None,
            comment: "<b>".into(),
        };
        r.put(&j).unwrap();
        j.misleading = Rating::Highly;
        j.plausibility = Some(Plausibility::Implausible);
        j.contradicts = Some(true);
        r.put(&j).unwrap();
        assert_eq!(r.all().unwrap(), vec![j]);
        assert!(check_rater(" ").is_err() && check_rater("a\u{7}").is_err());
        assert!(check_rater("\u{202e}nna").is_err());
    }

    /// A file written before the plausibility scale (no such column) is read as it is, its
    /// judgements without a plausibility; opened to write, it gains the column and keeps them.
    #[test]
    fn a_file_of_a4_alone_reads_and_takes_the_second_scale() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("ratings.sqlite");
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(
                "CREATE TABLE ratings (rater TEXT NOT NULL, item_id TEXT NOT NULL,
                 misleading TEXT NOT NULL, distinguishable INTEGER, comment TEXT NOT NULL,
                 updated_unix INTEGER NOT NULL, PRIMARY KEY (rater, item_id));
                 INSERT INTO ratings VALUES ('ann', 'a#1', 'highly', 1, 'old', 0);",
            )
            .unwrap();
        }
        let old = Judgement {
            rater: "ann".into(),
            item_id: "a#1".into(),
            misleading: Rating::Highly,
            plausibility: None,
            distinguishable: Some(true),
            contradicts: None,
            comment: "old".into(),
        };
        let r = Ratings::open(&path).unwrap();
        assert_eq!(r.all().unwrap(), vec![old.clone()]);
        let new = Judgement {
            rater: "bob".into(),
            plausibility: Some(Plausibility::Plausible),
            ..old.clone()
        };
        r.put(&new).unwrap();
        assert_eq!(r.all().unwrap(), vec![old.clone(), new.clone()]);
        // Opened again (as a viewer started later would), both read back.
        drop(r);
        assert_eq!(Ratings::open(&path).unwrap().all().unwrap(), vec![old, new]);
    }

    /// A file written before the contradiction question (with the plausibility column, no
    /// `contradicts`) reads as it is where it cannot be written, and gains the column, its
    /// old ratings kept and unanswered, where it can.
    #[test]
    fn a_file_of_two_scales_reads_and_takes_the_contradiction_question() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("ratings.sqlite");
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(
                "CREATE TABLE ratings (rater TEXT NOT NULL, item_id TEXT NOT NULL,
                 misleading TEXT NOT NULL, distinguishable INTEGER, comment TEXT NOT NULL,
                 updated_unix INTEGER NOT NULL, plausible TEXT, PRIMARY KEY (rater, item_id));
                 INSERT INTO ratings VALUES ('ann', 'r#1', 'somewhat', NULL, '', 0, 'plausible');",
            )
            .unwrap();
        }
        let old = Judgement {
            rater: "ann".into(),
            item_id: "r#1".into(),
            misleading: Rating::Somewhat,
            plausibility: Some(Plausibility::Plausible),
            distinguishable: None,
            contradicts: None,
            comment: String::new(),
        };
        let columns = |p: &Path| -> Vec<String> {
            let c = Connection::open(p).unwrap();
            let mut st = c
                .prepare("SELECT name FROM pragma_table_info('ratings')")
                .unwrap();
            let names = st.query_map([], |r| r.get(0)).unwrap();
            names.collect::<rusqlite::Result<_>>().unwrap()
        };
        // Read only: read as it is, the file left without the column.
        let ro = Ratings {
            read_only: Some("test".into()),
            ..Ratings::new(&path)
        };
        assert_eq!(ro.all().unwrap(), vec![old.clone()]);
        assert!(ro.put(&old).is_err());
        drop(ro);
        assert!(!columns(&path).contains(&"contradicts".to_owned()));
        // Opened to write: the column is added and the new answer kept.
        let r = Ratings::open(&path).unwrap();
        let new = Judgement {
            rater: "bob".into(),
            contradicts: Some(false),
            ..old.clone()
        };
        r.put(&new).unwrap();
        assert_eq!(r.all().unwrap(), vec![old.clone(), new.clone()]);
        drop(r);
        assert!(columns(&path).contains(&"contradicts".to_owned()));
        assert_eq!(Ratings::open(&path).unwrap().all().unwrap(), vec![old, new]);
    }
}
