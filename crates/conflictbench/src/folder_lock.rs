//! One command per folder: a build (its `--out` and its `--batch-dir`), an evaluation (its
//! `--out`), an audit that asks a reader (its `--cache`, by a lock file beside it) and `batches
//! run-dir` (its folder) take an advisory lock before they create anything there. The lock is the OS's (`flock` on a file
//! in the folder that names the holder: process id, start time, command), so a command killed
//! at any point leaves no lock held; a second command on the same folder exits 2 before it
//! creates any file, naming the one that holds it. The lock file is removed when its command
//! ends.

use crate::config_error::config_err;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// The lock file a build, an evaluation and a batch folder's build hold.
pub const FOLDER: &str = ".conflictbench.lock";
/// The lock file `batches run-dir` holds in the folder it answers: a build may write new
/// files there meanwhile (each appears whole), a second executor may not answer them too.
pub const EXECUTOR: &str = ".conflictbench-run-dir.lock";

/// A lock held; released, and its file removed, when dropped.
#[derive(Debug)]
pub struct Held {
    file: File,
    path: PathBuf,
}

/// Takes the lock `name` in `dir` (created when missing), which `flag` named: exit 2 (a
/// configuration error) naming the holder when another command holds it.
pub fn lock(dir: &Path, name: &str, flag: &str) -> anyhow::Result<Held> {
    lock_as(dir, name, (flag, dir))
}

/// The lock of the file `file` (an audit's reader cache): `.NAME.lock` beside it, so that
/// two commands never write one cache while others may write beside it.
pub fn for_file(file: &Path, flag: &str) -> anyhow::Result<Held> {
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = file.file_name().unwrap_or_default().to_string_lossy();
    lock_as(dir, &format!(".{name}.lock"), (flag, file))
}

/// [`lock`], the error naming `shown` after `flag`.
fn lock_as(dir: &Path, name: &str, (flag, shown): (&str, &Path)) -> anyhow::Result<Held> {
    let cannot = |e: std::io::Error| config_err(format!("{flag} {}: {e}", shown.display()));
    std::fs::create_dir_all(dir).map_err(cannot)?;
    let path = dir.join(name);
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
                    shown.display(),
                    path.display()
                ))
            })?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                return Err(config_err(format!(
                    "{flag} {} is in use by another conflictbench command ({}); run one command per folder at a time: wait for it to end, stop it, or choose another folder",
                    shown.display(),
                    said(holder.trim())
                )));
            }
            Err(TryLockError::Error(e)) => return Err(cannot(e)),
        }
        // The holder before may have removed the file between our open and our lock: the
        // lock then guards nothing, so take the file at the path again.
        if !same_file(&file, &path) {
            continue;
        }
        let me = format!(
            "process {}, started {}: {}",
            std::process::id(),
            utc_now(),
            std::env::args().collect::<Vec<_>>().join(" ")
        );
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(me.as_bytes()))
            .map_err(cannot)?;
        return Ok(Held { file, path });
    }
}

/// The locks of a build: its `--out`, and its `--batch-dir` (unless the same folder), so that
/// two builds never write one folder's files, nor two journals one batch folder's.
/// A refused lock leaves no folder the build made for the other.
pub fn for_build(out: &Path, batch_dir: Option<&Path>) -> anyhow::Result<Vec<Held>> {
    let made_out = !out.exists();
    let mut held = vec![lock(out, FOLDER, "--out")?];
    if let Some(dir) = batch_dir {
        let same = match (std::fs::canonicalize(out), std::fs::canonicalize(dir)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if !same {
            match lock(dir, FOLDER, "--batch-dir") {
                Ok(h) => held.push(h),
                Err(e) => {
                    drop(held);
                    if made_out {
                        let _ = std::fs::remove_dir(out);
                    }
                    return Err(e);
                }
            }
        }
    }
    Ok(held)
}

/// What a lock file says of its holder.
fn said(holder: &str) -> String {
    if holder.is_empty() {
        "a process starting now".into()
    } else {
        holder.to_owned()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // Removed while still held, so that a command starting now takes a new file.
        if same_file(&self.file, &self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
        let _ = self.file.unlock();
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

    /// Issue 50: a folder where the lock file goes is named, not the folder locked.
    #[test]
    fn a_folder_in_the_lock_files_place_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let in_the_way = dir.path().join(FOLDER);
        std::fs::create_dir(&in_the_way).unwrap();
        let e = lock(dir.path(), FOLDER, "--out").unwrap_err();
        assert_eq!(crate::exit::exit_code(&e), 2);
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
