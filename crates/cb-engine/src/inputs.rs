//! Where a recipe's sources are: the options that say where to look ([`SourceOptions`]), the
//! files a source spec names ([`resolve`]), their hashes for the manifest, and the watch that
//! tells a file changed since it was hashed ([`Watched`]).

use crate::recipe::SourceSpec;
use crate::EngineError;
use cb_model::manifest::InputFile;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where the sources are and how strictly to read them.
#[derive(Debug, Clone, Default)]
pub struct SourceOptions {
    pub raw: PathBuf,
    /// `--input NAME=PATH` overrides: a file, or a folder searched with the recipe's globs.
    pub inputs: BTreeMap<String, PathBuf>,
    /// Read at most this many primary records.
    pub limit: Option<usize>,
    /// A seeded sample of this many primary records (readers that select records only).
    pub sample: Option<usize>,
    /// The seed of the sample (the build's seed).
    pub seed: u64,
    /// A malformed record stops the build instead of becoming a reject.
    pub strict: bool,
}

/// The files one source spec reads.
pub fn resolve(spec: &SourceSpec, opts: &SourceOptions) -> Result<Vec<PathBuf>, EngineError> {
    match opts.inputs.get(&spec.name) {
        Some(p) if p.is_file() => Ok(vec![p.clone()]),
        Some(p) if p.is_dir() => Ok(cb_readers::resolve_inputs(p, &spec.files)?),
        Some(p) => Err(EngineError::Config(format!(
            "--input {}={}: {}",
            spec.name,
            p.display(),
            match std::fs::metadata(p) {
                // A FIFO, a socket or a device: read once it could not be hashed and read
                // again, and opening a FIFO waits for a writer.
                Ok(_) => "not a regular file or a folder (a pipe, a socket or a device): give a file, or a folder of them".to_owned(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => "no such file or folder".to_owned(),
                Err(e) => e.to_string(),
            }
        ))),
        None => {
            let dir = opts.raw.join(&spec.name);
            if !dir.is_dir() {
                return Err(EngineError::Config(format!(
                    "source folder {} does not exist (use --raw DIR or --input {}=PATH)",
                    dir.display(),
                    spec.name
                )));
            }
            Ok(cb_readers::resolve_inputs(&dir, &spec.files)?)
        }
    }
}

/// One input file as it was hashed for the manifest, watched so that every pass over it can
/// check that it still reads those bytes: its [`Stamp`] (size, modification and change times,
/// inode) is taken before it is hashed and compared after the hashing and at the end of each
/// pass. A stamp that moved is not yet a change: the file is hashed again and its content
/// decides (a `touch`, or a copy of the same bytes over it, goes on; other bytes stop the
/// build). A file modified within [`RACY`] of the hashing could change again within the same
/// tick of the file system's clock and keep its stamp (same size, same time); such a file is
/// hashed again at each check.
#[derive(Debug, Clone)]
pub(crate) struct Watched {
    pub input: InputFile,
    path: PathBuf,
    stamp: Stamp,
    racy: bool,
}

/// How close to the hashing a modification makes a stamp unable to tell a later change.
const RACY: std::time::Duration = std::time::Duration::from_secs(2);

/// What the file system says of a file, enough to tell that it was written or replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    /// Change time and inode where the platform has them (a file replaced by a rename, or
    /// written back with its old modification time).
    changed: (i64, i64, u64, u64),
}

impl Stamp {
    fn of(path: &Path) -> Result<Self, EngineError> {
        let m = std::fs::metadata(path)
            .map_err(|e| EngineError::Input(format!("{}: {e}", path.display())))?;
        #[cfg(unix)]
        let changed = {
            use std::os::unix::fs::MetadataExt;
            (m.ctime(), m.ctime_nsec(), m.ino(), m.dev())
        };
        #[cfg(not(unix))]
        let changed = (0, 0, 0, 0);
        Ok(Stamp {
            len: m.len(),
            modified: m.modified().ok(),
            changed,
        })
    }
}

/// The file changed since it was hashed: the build's passes and its manifest would not speak
/// of the same bytes.
fn changed(path: &Path, when: &str) -> EngineError {
    EngineError::Input(format!(
        "{} changed {when}: the build's passes over it and the manifest's hash would not \
         speak of the same records; nothing was written for this recipe (the previous build \
         stays); run again once the file holds still",
        path.display()
    ))
}

impl Watched {
    /// Hashes `path` (of the source `source`) for the manifest and starts watching it.
    pub(crate) fn new(source: &str, path: &Path) -> Result<Self, EngineError> {
        let mut before = Stamp::of(path)?;
        let input = input_file(source, path)?;
        let after = Stamp::of(path)?;
        if after != before {
            // Written while it was hashed: the hash holds only if the bytes are the same now.
            if input_file(source, path)?.sha256 != input.sha256 {
                return Err(changed(path, "while it was hashed"));
            }
            before = after;
        }
        let racy = before.modified.is_none_or(|t| {
            std::time::SystemTime::now()
                .duration_since(t)
                .map_or(true, |age| age < RACY)
        });
        Ok(Watched {
            input,
            path: path.to_owned(),
            stamp: before,
            racy,
        })
    }

    /// Whether the file still holds the bytes it held when it was hashed: the same hash when
    /// its stamp moved or was taken too close to its last modification.
    pub(crate) fn check(&self) -> Result<(), EngineError> {
        let moved = Stamp::of(&self.path)? != self.stamp;
        if (moved || self.racy)
            && input_file(&self.input.source, &self.path)?.sha256 != self.input.sha256
        {
            return Err(changed(&self.path, "during the build"));
        }
        if moved {
            tracing::info!(file = %self.path.display(), "touched during the build, same bytes: the build goes on");
        }
        Ok(())
    }
}

fn input_file(source: &str, path: &Path) -> Result<InputFile, EngineError> {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let mut f = std::fs::File::open(path)
        .map_err(|e| EngineError::Input(format!("{}: {e}", path.display())))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| EngineError::Input(format!("{}: {e}", path.display())))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(InputFile {
        source: source.to_owned(),
        path: path.display().to_string(),
        sha256: hex::encode(h.finalize()),
    })
}
