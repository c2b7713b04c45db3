//! Where a recipe's sources are: the options that say where to look ([`SourceOptions`]), the
//! files a source spec names ([`resolve`]) and their hashes for the manifest.

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
            "--input {}={}: no such file or folder",
            spec.name,
            p.display()
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

pub(crate) fn input_file(source: &str, path: &Path) -> Result<InputFile, EngineError> {
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
