//! One command per folder and per cache: a build (its `--out`, its `--batch-dir` and its
//! `--cache`), an evaluation (its `--out` and its `--cache`), an audit that asks a reader (its
//! `--cache`) and `batches run-dir` (its folder) take an advisory lock before they create
//! anything there. The lock is the OS's (`flock`), held by the process on an open file: the
//! folder itself for a folder, the cache file itself for a cache, so that deleting a lock
//! file by hand lets no second command in, and a command killed at any point holds nothing
//! (the OS frees its locks at once). A note beside it names the holder (process id, start
//! time, command): `.conflictbench.lock` in a folder, `.NAME.lock` beside a cache `NAME`; a
//! second command exits 2 before it creates any file, naming the holder. The note is removed
//! when its command ends. `batches run-dir` locks its note file itself (a build may hold the
//! folder meanwhile): deleting that file by hand lets a second executor in.

use crate::config_error::config_err;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The note of the lock a build, an evaluation and a batch folder's build hold on a folder.
pub const FOLDER: &str = ".conflictbench.lock";
/// The lock file `batches run-dir` holds in the folder it answers: a build may write new
/// files there meanwhile (each appears whole), a second executor may not answer them too.
pub const EXECUTOR: &str = ".conflictbench-run-dir.lock";

/// A lock held; released, and its note removed, when dropped.
#[derive(Debug)]
pub struct Held {
    /// The open file the lock is held on (taken out only when dropped).
    locked: Option<File>,
    /// The note that names the holder (the locked file itself for `batches run-dir`).
    note: PathBuf,
    /// What is locked: a folder, the note file, or a cache (whose open file is kept until the
    /// process ends: closing a second descriptor of an SQLite file would drop SQLite's own
    /// locks on it).
    kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Folder,
    Note,
    Cache,
}

/// Descriptors of caches whose lock was released, open until the process ends.
static KEPT: Mutex<Vec<File>> = Mutex::new(Vec::new());

/// Takes the lock `name` in `dir` (created when missing), which `flag` named: exit 2 (a
/// configuration error) naming the holder when another command holds it. [`FOLDER`] is
/// held on the folder itself, any other name on the file of that name.
pub fn lock(dir: &Path, name: &str, flag: &str) -> anyhow::Result<Held> {
    let cannot = |e: std::io::Error| config_err(format!("{flag} {}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(cannot)?;
    if name == FOLDER {
        let locked = File::open(dir).map_err(cannot)?;
        return take(locked, (dir.join(name), Kind::Folder), (flag, dir));
    }
    lock_note(dir, name, flag)
}

/// The lock of the cache `file`, held on the file itself (created empty when missing: a
/// new cache), its note `.NAME.lock` beside it: two commands never write one cache.
pub fn for_file(file: &Path, flag: &str) -> anyhow::Result<Held> {
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let cannot = |e: std::io::Error| config_err(format!("{flag} {}: {e}", file.display()));
    std::fs::create_dir_all(dir).map_err(cannot)?;
    let locked = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(file)
        .map_err(cannot)?;
    let name = file.file_name().unwrap_or_default().to_string_lossy();
    let note = dir.join(format!(".{name}.lock"));
    take(locked, (note, Kind::Cache), (flag, file))
}

/// Locks `locked`, then writes the note that names this process: exit 2 naming the holder
/// (from the note) when another process holds the lock.
fn take(
    locked: File,
    (note, kind): (PathBuf, Kind),
    (flag, shown): (&str, &Path),
) -> anyhow::Result<Held> {
    match locked.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let holder = std::fs::read_to_string(&note).unwrap_or_default();
            return Err(in_use(flag, shown, &holder));
        }
        Err(TryLockError::Error(e)) => {
            return Err(config_err(format!("{flag} {}: {e}", shown.display())))
        }
    }
    let held = Held {
        locked: Some(locked),
        note,
        kind,
    };
    std::fs::write(&held.note, me().as_bytes()).map_err(|e| {
        let folder = if held.note.is_dir() {
            " (a folder has the lock file's name: remove it)"
        } else {
            ""
        };
        config_err(format!(
            "{flag} {}: cannot write its lock file {}: {e}{folder}",
            shown.display(),
            held.note.display()
        ))
    })?;
    Ok(held)
}

/// The error of a lock another command holds.
fn in_use(flag: &str, shown: &Path, holder: &str) -> anyhow::Error {
    config_err(format!(
        "{flag} {} is in use by another conflictbench command ({}); run one command per folder or cache at a time: wait for it to end, stop it, or choose another",
        shown.display(),
        said(holder.trim())
    ))
}

/// This process as a note says it.
fn me() -> String {
    format!(
        "process {}, started {}: {}",
        std::process::id(),
        utc_now(),
        std::env::args().collect::<Vec<_>>().join(" ")
    )
}

/// The lock `name` in `dir` held on that file itself (`batches run-dir`'s).
fn lock_note(dir: &Path, name: &str, flag: &str) -> anyhow::Result<Held> {
    let path = dir.join(name);
    let cannot = |e: std::io::Error| config_err(format!("{flag} {}: {e}", path.display()));
    loop {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| {
                let folder = if path.is_dir() {
                    " (a folder has the lock file's name: remove it)"
                } else {
                    ""
                };
                config_err(format!(
                    "{flag} {}: cannot open its lock file {}: {e}{folder}",
                    dir.display(),
                    path.display()
                ))
            })?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                return Err(in_use(flag, dir, &holder));
            }
            Err(TryLockError::Error(e)) => return Err(cannot(e)),
        }
        // The holder before may have removed the file between our open and our lock: the
        // lock then guards nothing, so take the file at the path again.
        if !same_file(&file, &path) {
            continue;
        }
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(me().as_bytes()))
            .map_err(cannot)?;
        return Ok(Held {
            locked: Some(file),
            note: path,
            kind: Kind::Note,
        });
    }
}

/// The locks of a build: its `--out`, then the one `folder` takes (its `--batch-dir`'s,
/// unless the same folder), then its cache, so that two builds never write one folder's
/// files, nor two journals one batch folder's, nor two writers one cache. A refused lock
/// leaves no folder the build made for the other (nor a cache file).
pub fn for_build(
    out: &Path,
    folder: impl FnOnce() -> anyhow::Result<Option<Held>>,
    cache: Option<&Path>,
) -> anyhow::Result<Vec<Held>> {
    let made_out = !out.exists();
    let undo = |held: Vec<Held>| {
        drop(held);
        if made_out {
            let _ = std::fs::remove_dir(out);
        }
    };
    let mut held = vec![lock(out, FOLDER, "--out")?];
    match folder() {
        Ok(h) => held.extend(h),
        Err(e) => {
            undo(held);
            return Err(e);
        }
    }
    if let Some(cache) = cache {
        let made = !cache.exists();
        match for_file(cache, "--cache") {
            Ok(h) => held.push(h),
            Err(e) => {
                if made {
                    let _ = std::fs::remove_file(cache);
                }
                undo(held);
                return Err(e);
            }
        }
    }
    Ok(held)
}

/// What a lock file says of its holder.
fn said(holder: &str) -> String {
    if holder.is_empty() {
        "its note naming the holder is empty or gone: being written, or removed by hand".into()
    } else {
        holder.to_owned()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // Removed while still held, so that a command starting now writes a new note.
        let Some(locked) = self.locked.take() else {
            return;
        };
        if self.kind != Kind::Note || same_file(&locked, &self.note) {
            let _ = std::fs::remove_file(&self.note);
        }
        let _ = locked.unlock();
        if self.kind == Kind::Cache {
            KEPT.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(locked);
        }
    }
}

/// Whether `path` is still the file `file` opened.
fn same_file(file: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        path.exists()
    }
}

/// The time now in UTC, `YYYY-MM-DD HH:MM:SS UTC`.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_a_folder_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let held = lock(dir.path(), FOLDER, "--out").unwrap();
        let e = lock(dir.path(), FOLDER, "--out").unwrap_err().to_string();
        assert!(e.contains("--out") && e.contains("in use"), "{e}");
        assert!(
            e.contains(&format!("process {}", std::process::id())),
            "{e}"
        );
        // Another lock name in the same folder is another lock.
        drop(lock(dir.path(), EXECUTOR, "DIR").unwrap());
        let cache = dir.path().join("c.sqlite");
        let file = for_file(&cache, "--cache").unwrap();
        let e = for_file(&cache, "--cache").unwrap_err().to_string();
        assert!(e.contains(&format!("--cache {}", cache.display())), "{e}");
        drop(file);
        drop(held);
        assert!(!dir.path().join(FOLDER).exists(), "the lock file stays");
        drop(lock(dir.path(), FOLDER, "--out").unwrap());
    }

    /// The lock is the open file's, not the note's: deleting the note by hand lets no
    /// second command in (a folder's, a cache's), and the lock is free again once dropped.
    #[test]
    fn a_deleted_note_lets_no_second_command_in() {
        let dir = tempfile::tempdir().unwrap();
        let held = lock(dir.path(), FOLDER, "--out").unwrap();
        std::fs::remove_file(dir.path().join(FOLDER)).unwrap();
        let e = lock(dir.path(), FOLDER, "--out").unwrap_err().to_string();
        assert!(e.contains("in use"), "{e}");
        drop(held);
        drop(lock(dir.path(), FOLDER, "--out").unwrap());

        let cache = dir.path().join("llm-cache.sqlite");
        let held = for_file(&cache, "--cache").unwrap();
        std::fs::remove_file(dir.path().join(".llm-cache.sqlite.lock")).unwrap();
        let e = for_file(&cache, "--cache").unwrap_err().to_string();
        assert!(e.contains("--cache") && e.contains("in use"), "{e}");
        drop(held);
        drop(for_file(&cache, "--cache").unwrap());
        assert!(cache.exists(), "the cache file is the lock's, not a note");
    }

    /// Issue 50: a folder where the lock file goes is named, not the folder locked.
    #[test]
    fn a_folder_in_the_lock_files_place_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let in_the_way = dir.path().join(FOLDER);
        std::fs::create_dir(&in_the_way).unwrap();
        let e = lock(dir.path(), FOLDER, "--out").unwrap_err();
        assert_eq!(crate::exit::exit_code(&e), crate::exit::Exit::Config);
        let e = e.to_string();
        assert!(
            e.contains(&format!("its lock file {}", in_the_way.display()))
                && e.contains("a folder has the lock file's name"),
            "{e}"
        );
        let cache = dir.path().join("c.sqlite");
        std::fs::create_dir(dir.path().join(".c.sqlite.lock")).unwrap();
        let e = for_file(&cache, "--cache").unwrap_err().to_string();
        assert!(
            e.contains(".c.sqlite.lock") && e.contains("a folder"),
            "{e}"
        );
    }

    #[test]
    fn times_are_said_in_utc() {
        let t = utc_now();
        assert_eq!(t.len(), "2026-11-26 23:01:07 UTC".len(), "{t}");
        assert!(t.starts_with("20"), "{t}");
    }
}
