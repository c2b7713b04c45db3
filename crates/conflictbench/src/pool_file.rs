//! The endpoint pool of `build --endpoint` / `--endpoints FILE`: the pool file's format
//! (`name`, the reader's `reader_base_url` and `reader_model`, `[[endpoint]]` tables with
//! `url`, `concurrency`, `rpm`, `tpm`) and the `URL[,LIMITS]` form of `--endpoint`. A named
//! model of a models file (`models_file`) declares its pool with the same tables.

use crate::llm_args::PoolFlags;
use cb_llm::{ranges, EndpointSpec, Limits, PoolConfig};
use serde::Deserialize;
use std::path::Path;
use std::time::Duration;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PoolFile {
    name: Option<String>,
    /// Who reads the rows back (as `--reader-base-url`, `--reader-model`).
    reader_base_url: Option<String>,
    reader_model: Option<String>,
    endpoint: Vec<EndpointEntry>,
}

/// One `[[endpoint]]` table of a pool file (and of a named model's pool in a models file).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointEntry {
    url: String,
    concurrency: Option<toml::Value>,
    rpm: Option<toml::Value>,
    tpm: Option<toml::Value>,
}

/// The limits `concurrency`, `rpm` and `tpm` as a file writes them, each a whole number in its
/// range (`cb_llm::ranges`), or the key, the value and the range said.
pub fn limit_keys(
    (concurrency, rpm, tpm): (
        &Option<toml::Value>,
        &Option<toml::Value>,
        &Option<toml::Value>,
    ),
) -> Result<cb_llm::ranges::OwnLimits, String> {
    let int = |key: &str, v: &Option<toml::Value>, range: cb_model::Range| match v {
        None => Ok(None),
        Some(toml::Value::Integer(i)) => Ok(Some(*i)),
        Some(other) => Err(format!(
            "`{key} = {other}`: not a whole number: must be {range}"
        )),
    };
    Limits::own((
        int("concurrency", concurrency, ranges::CONCURRENCY)?,
        int("rpm", rpm, ranges::RPM)?,
        int("tpm", tpm, ranges::TPM)?,
    ))
}

impl EndpointEntry {
    /// The endpoint, its own limits (each in its range: `cb_llm::ranges`) or else
    /// `concurrency`, `rpm` and `tpm`; an error names the endpoint and the key.
    pub fn spec(&self, limits: Limits) -> Result<EndpointSpec, String> {
        let own = limit_keys((&self.concurrency, &self.rpm, &self.tpm))
            .map_err(|why| format!("endpoint `{}`: {why}", self.url))?;
        Ok(limits.under(own).endpoint(self.url.clone()))
    }
}

fn read_file(path: &Path) -> Result<PoolFile, String> {
    let text = read_settings(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The text of a settings file (a pool or models file). A pipe, a socket or a device is
/// refused, not read: opening a FIFO waits for a writer that may never come.
pub fn read_settings(path: &Path) -> std::io::Result<String> {
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return Err(std::io::Error::other(
            "not a regular file (a pipe, a socket or a device): give the file itself",
        ));
    }
    std::fs::read_to_string(path)
}

/// The pool the flags declare, if any, with the reader its file names; endpoints without
/// their own limits get the global `--concurrency`, `--rpm` and `--tpm`.
pub fn resolve(flags: &PoolFlags, limits: Limits) -> Result<Option<(PoolConfig, Reader)>, String> {
    if flags.endpoints.is_empty() && flags.endpoints_file.is_none() {
        return Ok(None);
    }
    let mut reader = Reader::default();
    let default = |url: String| limits.endpoint(url);
    let mut endpoints = Vec::new();
    let mut name = flags.pool_name.clone();
    if let Some(path) = &flags.endpoints_file {
        let file = read_file(path)?;
        if let Some(n) = file.name {
            name = n;
        }
        reader = (file.reader_base_url, file.reader_model);
        for e in &file.endpoint {
            endpoints.push(
                e.spec(limits)
                    .map_err(|why| format!("{}: {why}", path.display()))?,
            );
        }
    }
    for spec in &flags.endpoints {
        let mut parts = spec.split(',').map(str::trim);
        let mut e = default(parts.next().unwrap_or_default().to_owned());
        for p in parts {
            let bad = || format!("--endpoint {spec}: `{p}` is not concurrency=N, rpm=N or tpm=N");
            let (k, v) = p.split_once('=').ok_or_else(bad)?;
            let range = match k.trim() {
                "concurrency" => ranges::CONCURRENCY,
                "rpm" => ranges::RPM,
                "tpm" => ranges::TPM,
                _ => return Err(bad()),
            };
            let n = range
                .parse_whole(v)
                .map_err(|why| format!("--endpoint {spec}: `{}`: {why}", k.trim()))?;
            // The ranges' ceilings fit the types.
            match k.trim() {
                "concurrency" => e.concurrency = n as usize,
                "rpm" => e.rpm = Some(n as u32),
                _ => e.tpm = Some(n as u32),
            }
        }
        endpoints.push(e);
    }
    let pool = PoolConfig {
        name,
        endpoints,
        open_after: flags.pool_open_after,
        cooldown: Duration::from_millis(flags.pool_cooldown_ms),
    };
    pool.validate()?;
    Ok(Some((pool, reader)))
}

/// The reader a pool file names: base URL and model.
pub type Reader = (Option<String>, Option<String>);

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
        let (pool, reader) = resolve(
            &flags(&file),
            cb_llm::Limits {
                concurrency: 2,
                rpm: None,
                tpm: None,
            },
        )
        .unwrap()
        .unwrap();
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
        let e = resolve(
            &flags(&file),
            cb_llm::Limits {
                concurrency: 2,
                rpm: None,
                tpm: None,
            },
        )
        .unwrap_err();
        assert!(e.contains("is not a URL"), "{e}");
        std::fs::write(
            &file,
            "reader_modle = \"x\"\n[[endpoint]]\nurl = \"http://h/v1\"\n",
        )
        .unwrap();
        let e = resolve(
            &flags(&file),
            cb_llm::Limits {
                concurrency: 2,
                rpm: None,
                tpm: None,
            },
        )
        .unwrap_err();
        assert!(e.contains("reader_modle"), "{e}");
    }
}
