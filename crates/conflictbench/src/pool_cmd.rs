//! `build --endpoint` / `--endpoints`: an endpoint pool.

use cb_llm::{EndpointSpec, PoolConfig};
use clap::Args;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Flags of `build` for a pool of endpoints serving the same model.
#[derive(Args, Debug, Clone)]
pub struct PoolFlags {
    /// An endpoint of a pool serving the same model, with optional limits:
    /// `URL[,concurrency=N][,rpm=N][,tpm=N]` (defaults: --concurrency, --rpm, --tpm).
    /// Repeatable; replaces --base-url.
    #[arg(long = "endpoint", value_name = "URL[,LIMITS]")]
    pub endpoints: Vec<String>,
    /// A TOML file declaring the pool: `name = "..."` and `[[endpoint]]` tables with
    /// `url`, `concurrency`, `rpm`, `tpm`.
    #[arg(long = "endpoints", value_name = "FILE")]
    pub endpoints_file: Option<PathBuf>,
    /// The pool's identity in cache keys (`pool:NAME`); keep it to reuse a pool's answers.
    #[arg(long, default_value = "default")]
    pub pool_name: String,
    /// Failures in a row that pause an endpoint.
    #[arg(long, default_value_t = 3)]
    pub pool_open_after: u32,
    /// First pause of a failing endpoint, in milliseconds (doubles on each failed probe).
    #[arg(long, default_value_t = 2000)]
    pub pool_cooldown_ms: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PoolFile {
    name: Option<String>,
    /// Who reads the rows back (as `--reader-base-url`, `--reader-model`).
    reader_base_url: Option<String>,
    reader_model: Option<String>,
    endpoint: Vec<EndpointEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EndpointEntry {
    url: String,
    concurrency: Option<usize>,
    rpm: Option<u32>,
    tpm: Option<u32>,
}

impl PoolFlags {
    fn read_file(path: &Path) -> Result<PoolFile, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The pool these flags declare, if any; endpoints without their own limits get the
    /// global `--concurrency`, `--rpm` and `--tpm`.
    pub fn resolve(
        &self,
        concurrency: usize,
        rpm: Option<u32>,
        tpm: Option<u32>,
    ) -> Result<Option<(PoolConfig, Reader)>, String> {
        if self.endpoints.is_empty() && self.endpoints_file.is_none() {
            return Ok(None);
        }
        let mut reader = Reader::default();
        let default = |url: String| EndpointSpec {
            base_url: url,
            concurrency,
            rpm,
            tpm,
        };
        let mut endpoints = Vec::new();
        let mut name = self.pool_name.clone();
        if let Some(path) = &self.endpoints_file {
            let file = Self::read_file(path)?;
            if let Some(n) = file.name {
                name = n;
            }
            reader = (file.reader_base_url, file.reader_model);
            for e in file.endpoint {
                endpoints.push(EndpointSpec {
                    base_url: e.url,
                    concurrency: e.concurrency.unwrap_or(concurrency),
                    rpm: e.rpm.or(rpm),
                    tpm: e.tpm.or(tpm),
                });
            }
        }
        for spec in &self.endpoints {
            let mut parts = spec.split(',').map(str::trim);
            let mut e = default(parts.next().unwrap_or_default().to_owned());
            for p in parts {
                let bad =
                    || format!("--endpoint {spec}: `{p}` is not concurrency=N, rpm=N or tpm=N");
                let (k, v) = p.split_once('=').ok_or_else(bad)?;
                match k.trim() {
                    "concurrency" => e.concurrency = v.trim().parse().map_err(|_| bad())?,
                    "rpm" => e.rpm = Some(v.trim().parse().map_err(|_| bad())?),
                    "tpm" => e.tpm = Some(v.trim().parse().map_err(|_| bad())?),
                    _ => return Err(bad()),
                }
            }
            endpoints.push(e);
        }
        let pool = PoolConfig {
            name,
            endpoints,
            open_after: self.pool_open_after,
            cooldown: Duration::from_millis(self.pool_cooldown_ms),
        };
        pool.validate()?;
        Ok(Some((pool, reader)))
    }
}

/// The reader a pool file names: base URL and model.
type Reader = (Option<String>, Option<String>);

/// What `--batch` and the pool flags change in a run's LLM configuration
/// ([`crate::llm_args::LlmArgs::config`] applies it).
#[derive(Debug, Default)]
pub struct TransportArgs {
    pool: Option<PoolConfig>,
    reader: Reader,
    batch: Option<crate::batch_cmd::BatchFlags>,
}

impl TransportArgs {
    /// Reads the pool flags (endpoints without their own limits get `concurrency`, `rpm`,
    /// `tpm`); a pool cannot be combined with `--batch`.
    pub fn new(
        batch: &crate::batch_cmd::BatchFlags,
        flags: &PoolFlags,
        (concurrency, rpm, tpm): (usize, Option<u32>, Option<u32>),
    ) -> Result<Self, String> {
        let (pool, reader) = match flags.resolve(concurrency, rpm, tpm)? {
            Some((p, r)) => (Some(p), r),
            None => (None, Reader::default()),
        };
        if pool.is_some() && (batch.batch || batch.batch_dir.is_some()) {
            return Err("--batch or --batch-dir and an endpoint pool cannot be combined".into());
        }
        Ok(Self {
            pool,
            reader,
            batch: Some(batch.clone()),
        })
    }

    /// `--batch-dir`: misses are written to files, nothing is sent.
    pub fn sends_nothing(&self) -> bool {
        self.batch.as_ref().is_some_and(|b| b.batch_dir.is_some())
    }

    /// The reader the pool file names (base URL, model), if any.
    pub fn reader(&self) -> Reader {
        self.reader.clone()
    }

    /// The base URLs of the pool's endpoints, in order (none without a pool).
    pub fn pool_urls(&self) -> impl Iterator<Item = &str> {
        self.pool
            .iter()
            .flat_map(|p| p.endpoints.iter().map(|e| e.base_url.as_str()))
    }

    /// Puts the batch options and the pool into a configuration.
    pub fn apply(&self, config: &mut cb_llm::LlmConfig) -> Result<(), String> {
        if let Some(batch) = &self.batch {
            batch.apply(config)?;
        }
        if let (Some(pool), false) = (&self.pool, config.backend == cb_llm::BackendKind::Offline) {
            config.concurrency = pool.endpoints.iter().map(|e| e.concurrency).sum();
            config.transport = cb_llm::Transport::Pool(pool.clone());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(file: &Path) -> PoolFlags {
        PoolFlags {
            endpoints: vec![],
            endpoints_file: Some(file.to_path_buf()),
            pool_name: "default".into(),
            pool_open_after: 3,
            pool_cooldown_ms: 2000,
        }
    }

    #[test]
    fn a_pool_file_names_its_reader_and_a_bad_pool_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pool.toml");
        std::fs::write(
            &file,
            "name = \"fleet\"\nreader_base_url = \"http://10.0.0.9:8000/v1\"\nreader_model = \"judge\"\n[[endpoint]]\nurl = \"http://10.0.0.1:8000/v1\"\nconcurrency = 4\n",
        )
        .unwrap();
        let (pool, reader) = flags(&file).resolve(2, None, None).unwrap().unwrap();
        assert_eq!(pool.name, "fleet");
        assert_eq!(pool.endpoints[0].concurrency, 4);
        assert_eq!(
            reader,
            (
                Some("http://10.0.0.9:8000/v1".to_owned()),
                Some("judge".to_owned())
            )
        );
        std::fs::write(&file, "[[endpoint]]\nurl = \"10.0.0.1:8000\"\n").unwrap();
        let e = flags(&file).resolve(2, None, None).unwrap_err();
        assert!(e.contains("is not a URL"), "{e}");
        std::fs::write(
            &file,
            "reader_modle = \"x\"\n[[endpoint]]\nurl = \"http://h/v1\"\n",
        )
        .unwrap();
        let e = flags(&file).resolve(2, None, None).unwrap_err();
        assert!(e.contains("reader_modle"), "{e}");
    }
}
