//! What a command may create before it knows it can run, undone when it cannot.

use std::path::{Path, PathBuf};

/// What a command may create before it knows it can run: its cache file (with its `-wal` and
/// `-shm`) and the folders it names (the cache's, the output's, a batch folder), with their
/// missing parents, when they were not there. A failed run undoes them, unless the cache
/// holds an answer (a failure after some answers, e.g. the budget, resumes from them).
pub(crate) struct Created {
    cache: Option<PathBuf>,
    /// The folders to be created, deepest first.
    dirs: Vec<PathBuf>,
}

impl Created {
    pub(crate) fn before(cache: Option<&Path>, folders: &[&Path]) -> Self {
        let cache = cache.filter(|c| !c.exists()).map(Path::to_path_buf);
        let mut dirs: Vec<PathBuf> = cache
            .iter()
            .filter_map(|c| c.parent())
            .chain(folders.iter().copied())
            .flat_map(|f| {
                f.ancestors()
                    .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
                    .map(Path::to_path_buf)
            })
            .collect();
        dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        dirs.dedup();
        Self { cache, dirs }
    }

    /// Removes the cache file this run created when it holds no answer, then the folders this
    /// run created when they are empty. Best effort: what cannot be removed stays.
    pub(crate) fn undo(self) {
        if let Some(cache) = &self.cache {
            // Empty: made by the cache's lock before any layer opened it (no table to read).
            let empty = std::fs::metadata(cache).is_ok_and(|m| m.len() == 0);
            let unused = empty
                || match cb_llm::Cache::open_read_only(cache) {
                    Ok(Some(c)) => c.is_empty().unwrap_or(false),
                    Ok(None) => true,
                    Err(_) => false,
                };
            if !unused {
                return;
            }
            for ext in ["", "-wal", "-shm"] {
                let mut p = cache.as_os_str().to_owned();
                p.push(ext);
                let _ = std::fs::remove_file(PathBuf::from(p));
            }
        }
        for d in &self.dirs {
            let _ = std::fs::remove_dir(d);
        }
    }
}
