//! The transport of a model's calls that miss the cache, decided once from the flags
//! ([`TransportSetting::resolve`]): online, an endpoint pool, the Batch API, or a folder of
//! batch files ([`BatchFolder`]: its folder, named once, made once when it is locked, and
//! what a build whose requests wait there says).

use crate::config_error::config_err;
use crate::exit::{Exit, Stopped};
use crate::folder_lock;
use crate::llm_args::BatchFlags;
use anyhow::Context;
use cb_llm::{
    batch_files, BackendKind, BatchOptions, FilesOptions, Limits, LlmConfig, PoolConfig, Transport,
};
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// How the calls of a model that miss the cache travel, as the flags chose it.
#[derive(Debug, Clone)]
pub enum TransportSetting {
    Online,
    /// `--endpoint` / `--endpoints FILE`.
    Pool(PoolConfig),
    /// `--batch`, at `price_factor` of the online price.
    BatchApi {
        options: BatchOptions,
        price_factor: f64,
    },
    /// `--batch-dir DIR`.
    Files(BatchFolder),
}

/// `--batch-dir DIR`: the folder where a build's requests wait for answers, and its limits.
#[derive(Debug, Clone)]
pub struct BatchFolder {
    /// The folder as the flag gives it (the messages say it so).
    given: PathBuf,
    /// Its limits and its absolute name, as the OS will name it once made: the journal names
    /// the files by their folder, so one folder keeps one name whatever way it is spelled.
    options: FilesOptions,
}

impl TransportSetting {
    /// The transport the batch flags and the pool choose; a pool cannot be combined with
    /// `--batch` or `--batch-dir`, nor `--batch-dir` name a file. Nothing is created here.
    pub fn resolve(batch: &BatchFlags, pool: Option<PoolConfig>) -> anyhow::Result<Self> {
        let window = batch_window(batch)?;
        if pool.is_some() && (batch.batch || batch.batch_dir.is_some()) {
            return Err(config_err(
                "--batch or --batch-dir and an endpoint pool cannot be combined",
            ));
        }
        if let Some(dir) = &batch.batch_dir {
            return BatchFolder::resolve(dir, batch, window).map(Self::Files);
        }
        if batch.batch {
            return Ok(Self::BatchApi {
                options: BatchOptions {
                    max_requests_per_file: batch.batch_max_requests,
                    max_bytes_per_file: batch.batch_max_mb * 1024 * 1024,
                    poll_initial: Duration::from_millis(batch.batch_poll_ms),
                    window,
                    ..BatchOptions::default()
                },
                price_factor: batch.batch_price_factor,
            });
        }
        Ok(match pool {
            Some(p) => Self::Pool(p),
            None => Self::Online,
        })
    }

    /// Whether the calls that miss the cache are sent to an endpoint: batch files send
    /// nothing (an executor answers them), so they need no key.
    pub fn sends(&self) -> bool {
        !matches!(self, Self::Files(_))
    }

    /// Whether it names where the calls go (a pool, batch files): the backend is then openai
    /// unless `--backend` says otherwise.
    pub fn names_endpoint(&self) -> bool {
        matches!(self, Self::Pool(_) | Self::Files(_))
    }

    /// The batch folder, when the calls wait in one.
    pub fn folder(&self) -> Option<&BatchFolder> {
        match self {
            Self::Files(f) => Some(f),
            _ => None,
        }
    }

    /// The endpoint that stands in for `--base-url` when none is given: a pool's first
    /// endpoint, and for batch files `batch-files` (their answers are recorded as from it).
    pub fn stand_in_endpoint(&self) -> Option<String> {
        match self {
            Self::Pool(p) => p.endpoints.first().map(|e| e.base_url.clone()),
            Self::Files(_) => Some(batch_files::ENDPOINT.to_owned()),
            _ => None,
        }
    }

    /// Puts the transport into a configuration whose backend is set: a pool (not for the
    /// offline backend, which sends nothing) sums its endpoints' concurrency; the Batch API
    /// prices calls at its factor; batch files and the Batch API need the openai backend
    /// (or a dry run of it).
    pub fn apply(&self, c: &mut LlmConfig) -> anyhow::Result<()> {
        let batch_backend = matches!(c.backend, BackendKind::Openai | BackendKind::DryRun);
        match self {
            Self::Online => {}
            Self::Pool(pool) => {
                if c.backend != BackendKind::Offline {
                    c.concurrency = Limits::of_pool(pool).concurrency;
                    c.transport = Transport::Pool(pool.clone());
                }
            }
            Self::Files(_) if !batch_backend => return Err(config_err(
                "--batch-dir needs the openai backend (--model names the model the files ask for)",
            )),
            Self::Files(folder) => c.transport = Transport::BatchFiles(folder.options.clone()),
            Self::BatchApi { .. } if !batch_backend => {
                return Err(config_err(
                    "--batch needs the openai backend (--base-url and --model)",
                ))
            }
            Self::BatchApi {
                options,
                price_factor,
            } => {
                c.price.input_per_million *= price_factor;
                c.price.output_per_million *= price_factor;
                c.transport = Transport::BatchApi(options.clone());
            }
        }
        Ok(())
    }
}

impl BatchFolder {
    /// `--batch-dir dir` with the limits of `batch`: refused when it names a file; named
    /// absolute now, made only when it is locked ([`BatchFolder::lock`]).
    fn resolve(dir: &Path, batch: &BatchFlags, window: usize) -> anyhow::Result<Self> {
        if dir.exists() && !dir.is_dir() {
            return Err(config_err(format!(
                "--batch-dir {} names a file, not a folder: give the folder where the batch files go",
                dir.display()
            )));
        }
        let absolute = absolute_folder(dir)
            .map_err(|e| config_err(format!("--batch-dir {}: {e}", dir.display())))?;
        Ok(Self {
            given: dir.to_path_buf(),
            options: FilesOptions {
                max_requests_per_file: batch.batch_dir_max_lines,
                max_bytes_per_file: batch.batch_max_mb * 1024 * 1024,
                window,
                ..FilesOptions::new(absolute)
            },
        })
    }

    /// The folder as `--batch-dir` gives it.
    pub fn given(&self) -> &Path {
        &self.given
    }

    /// Makes the folder and takes its lock (one build a batch folder; exit 2 naming the
    /// holder), unless it is the build's `--out` (`out`, locked already).
    pub fn lock(&self, out: &Path) -> anyhow::Result<Option<folder_lock::Held>> {
        if std::fs::canonicalize(out).is_ok_and(|o| o == self.options.dir) {
            return Ok(None);
        }
        folder_lock::lock(&self.given, folder_lock::FOLDER, "--batch-dir").map(Some)
    }

    /// What a build whose recipes `recipes` wait for answers says, with [`Exit::Waiting`]:
    /// the files of this build (`files`: those its calls waited on) still without an output
    /// file, whatever else the folder holds, and what to run.
    pub fn waiting(&self, recipes: &[String], files: BTreeSet<PathBuf>) -> anyhow::Result<Stopped> {
        let dir = &self.given;
        let files = batch_files::pending(files)
            .with_context(|| format!("cannot read {}", dir.display()))?;
        let requests: usize = files.iter().map(|f| f.requests).sum();
        let mut m = format!(
            "{} waiting for answers: {requests} requests in {} batch files in {}\n",
            recipes.join(", "),
            files.len(),
            dir.display()
        );
        for f in &files {
            m.push_str(&format!(
                "  {}  {} requests, model {}\n",
                f.path.display(),
                f.requests,
                f.model
            ));
        }
        let (first, model) = files
            .first()
            .map(|f| (f.path.clone(), f.model.as_str()))
            .unwrap_or_default();
        m.push_str(&format!(
            "Answer each file into the file beside it named .output.jsonl instead of .jsonl, for example\n  \
             conflictbench batches run-dir {dir} --base-url URL\n  \
             python -m vllm.entrypoints.openai.run_batch -i {input} -o {output} --model {model}\n  \
             python scripts/ray-batch.py {dir} --base-url URL   (Ray Data; --model-source M on GPUs)\n\
             then run this command again: it imports the answers and goes on (see README, \"Batch files\").",
            dir = dir.display(),
            input = first.display(),
            output = batch_files::output_path(&first).display(),
        ));
        Ok(Stopped {
            code: Exit::Waiting,
            message: m,
        })
    }
}

/// `--batch-window` (its range held by its parser) only where rounds are (`--batch`,
/// `--batch-dir`); [`cb_llm::BATCH_WINDOW`] when not given.
fn batch_window(batch: &BatchFlags) -> anyhow::Result<usize> {
    match batch.batch_window {
        None => Ok(cb_llm::BATCH_WINDOW),
        Some(_) if !batch.batch && batch.batch_dir.is_none() => Err(config_err(
            "--batch-window sets the items a batch round takes: give it with --batch or --batch-dir",
        )),
        Some(n) => Ok(n),
    }
}

/// `dir` as the OS will name it once made, without making it: its deepest ancestor that
/// exists, canonical (links resolved), then the rest, which does not exist yet and so holds
/// no link, read as written (`..` goes up one).
fn absolute_folder(dir: &Path) -> std::io::Result<PathBuf> {
    let absolute = std::path::absolute(dir)?;
    let parts: Vec<Component<'_>> = absolute.components().collect();
    for there in (1..=parts.len()).rev() {
        let Ok(mut name) = parts[..there].iter().collect::<PathBuf>().canonicalize() else {
            continue;
        };
        for part in &parts[there..] {
            match part {
                Component::ParentDir => {
                    name.pop();
                }
                Component::Normal(n) => name.push(n),
                _ => {}
            }
        }
        return Ok(name);
    }
    Ok(absolute)
}

#[cfg(test)]
mod tests {
    use super::absolute_folder;

    #[test]
    fn a_folder_is_named_as_it_will_be_once_made() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        std::fs::create_dir(root.join("a")).expect("mkdir");
        std::os::unix::fs::symlink(root.join("a"), root.join("link")).expect("symlink");
        let made = |p: &str| {
            let dir = tmp.path().join(p);
            let named = absolute_folder(&dir).expect("absolute");
            std::fs::create_dir_all(&dir).expect("make");
            (named, dir.canonicalize().expect("canonical"))
        };
        for p in ["a", "a/new", "link/b", "link/c/../d", "e/f/../../g", "./h"] {
            let (named, made) = made(p);
            assert_eq!(named, made, "{p}");
        }
    }
}
