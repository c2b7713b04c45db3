//! `--models FILE`: named models, one `[models.NAME]` table a model (issue 31). A model is
//! reached at `base_url`, or through a pool of endpoints declared as in a pool file
//! (`[[models.NAME.endpoint]]` tables with `url`, `concurrency`, `rpm`, `tpm`; the pool's
//! identity in cache keys is `pool:NAME`); it names the `model` sent, and may set its own
//! limits (`concurrency`, `rpm`, `tpm`), prices (`price_input`, `price_output`, USD per
//! million tokens) and structured-output form (`structured`). What it leaves out is the
//! run's (`--concurrency`, ..., the built-in price table, `--structured`).
//!
//! ```toml
//! [models.cheap]
//! base_url = "http://127.0.0.1:8001/v1"
//! model = "qwen2.5-1.5b"
//! price_input = 0.02
//! price_output = 0.02
//!
//! [models.strong]
//! model = "llama-3.1-70b"
//! [[models.strong.endpoint]]
//! url = "http://gpu-1:8000/v1"
//! concurrency = 32
//! [[models.strong.endpoint]]
//! url = "http://gpu-2:8000/v1"
//! ```

use crate::pool_file::EndpointEntry;
use cb_llm::{Form, Limits, PoolConfig, Structured};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelsFile {
    models: BTreeMap<String, Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    base_url: Option<String>,
    model: String,
    #[serde(default)]
    endpoint: Vec<EndpointEntry>,
    concurrency: Option<toml::Value>,
    rpm: Option<toml::Value>,
    tpm: Option<toml::Value>,
    price_input: Option<f64>,
    price_output: Option<f64>,
    structured: Option<String>,
}

/// A named model as its file declares it.
#[derive(Debug, Clone)]
pub struct NamedModel {
    /// Its endpoint; `None` when a pool reaches it.
    pub base_url: Option<String>,
    pub pool: Option<PoolConfig>,
    pub model: String,
    /// Concurrency, RPM, TPM (a pool's: its endpoints' together).
    pub limits: Limits,
    pub price: (Option<f64>, Option<f64>),
    pub structured: Option<Structured>,
}

/// Reads the models of `path`; `limits` are the run's (`--concurrency`, `--rpm`, `--tpm`),
/// `breaker` a pool's (`--pool-open-after`, `--pool-cooldown-ms`). An error names the file
/// and the model, or the line.
pub fn read(
    path: &Path,
    limits: Limits,
    breaker: (u32, Duration),
) -> Result<BTreeMap<String, NamedModel>, String> {
    let text = crate::pool_file::read_settings(path)
        .map_err(|e| format!("--models {}: {e}", path.display()))?;
    let file: ModelsFile =
        toml::from_str(&text).map_err(|e| format!("--models {}: {e}", path.display()))?;
    let mut out = BTreeMap::new();
    for (name, e) in file.models {
        let line = line_of(&text, &name).map_or(String::new(), |l| format!(":{l}"));
        let at = |why: String| format!("--models {}{line}: models.{name}: {why}", path.display());
        if RESERVED.contains(&name.as_str()) {
            return Err(at(format!(
                "`{name}` is reserved (`--reader {name}` means no reader): choose another name"
            )));
        }
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_".contains(c))
        {
            return Err(at("a model's name is letters, digits, `-` and `_`".into()));
        }
        let model = named(&name, e, limits, breaker).map_err(at)?;
        out.insert(name, model);
    }
    Ok(out)
}

/// Names a model may not have: `--reader none` says that nobody reads.
pub const RESERVED: &[&str] = &["none"];

/// The line (1-based) of model `name`'s table in the file's text, if it is found.
fn line_of(text: &str, name: &str) -> Option<usize> {
    let heads = [format!("[models.{name}]"), format!("[models.\"{name}\"]")];
    text.lines()
        .position(|l| {
            let t: String = l.chars().filter(|c| !c.is_whitespace()).collect();
            heads.iter().any(|h| t.starts_with(h.as_str()))
                || t.starts_with(&format!("[[models.{name}."))
        })
        .map(|i| i + 1)
}

fn named(
    name: &str,
    e: Entry,
    run: Limits,
    (open_after, cooldown): (u32, Duration),
) -> Result<NamedModel, String> {
    let own = run.under(crate::pool_file::limit_keys((
        &e.concurrency,
        &e.rpm,
        &e.tpm,
    ))?);
    let pool = match (&e.base_url, e.endpoint.is_empty()) {
        (Some(_), false) => return Err("give `base_url` or `[[endpoint]]` tables, not both".into()),
        (None, true) => return Err("give `base_url` or `[[endpoint]]` tables".into()),
        (Some(_), true) => None,
        (None, false) => {
            let pool = PoolConfig {
                name: name.to_owned(),
                endpoints: e
                    .endpoint
                    .iter()
                    .map(|x| x.spec(own))
                    .collect::<Result<_, _>>()?,
                open_after,
                cooldown,
            };
            pool.validate()?;
            Some(pool)
        }
    };
    if e.model.trim().is_empty() {
        return Err("`model` is empty".into());
    }
    for (key, p) in [
        ("price_input", e.price_input),
        ("price_output", e.price_output),
    ] {
        if let Some(Err(why)) = p.map(|p| cb_llm::ranges::PRICE.check_real(p)) {
            return Err(format!("`{key}`: {why}"));
        }
    }
    let structured = match e.structured.as_deref() {
        None => None,
        Some("auto") => Some(Structured::Auto),
        Some(s) => Some(Structured::Fixed(Form::parse(s).ok_or_else(|| {
            format!("`structured = {s:?}`: expected auto, json-schema, json-object or off")
        })?)),
    };
    let limits = match &pool {
        Some(p) => Limits::of_pool(p),
        None => own,
    };
    Ok(NamedModel {
        base_url: e.base_url,
        pool,
        model: e.model,
        limits,
        price: (e.price_input, e.price_output),
        structured,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn models(text: &str) -> Result<BTreeMap<String, NamedModel>, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("models.toml");
        std::fs::write(&path, text).unwrap();
        read(
            &path,
            cb_llm::Limits {
                concurrency: 16,
                rpm: None,
                tpm: None,
            },
            (3, Duration::from_secs(2)),
        )
    }

    #[test]
    fn a_model_is_an_endpoint_or_a_pool_with_its_own_settings() {
        let m = models(
            "[models.cheap]\nbase_url = \"http://127.0.0.1:8001/v1\"\nmodel = \"small\"\nconcurrency = 4\nprice_input = 0.5\nstructured = \"json-object\"\n\
             [models.strong]\nmodel = \"big\"\n[[models.strong.endpoint]]\nurl = \"http://a:8000/v1\"\nconcurrency = 3\n[[models.strong.endpoint]]\nurl = \"http://b:8000/v1\"\n",
        )
        .unwrap();
        let cheap = &m["cheap"];
        assert_eq!(
            (cheap.model.as_str(), cheap.limits.concurrency),
            ("small", 4)
        );
        assert_eq!(cheap.price, (Some(0.5), None));
        assert_eq!(cheap.structured, Some(Structured::Fixed(Form::JsonObject)));
        let strong = &m["strong"];
        let pool = strong.pool.as_ref().unwrap();
        assert_eq!((pool.name.as_str(), pool.endpoints.len()), ("strong", 2));
        assert_eq!(strong.limits.concurrency, 3 + 16);
    }

    #[test]
    fn a_bad_model_is_refused_naming_it() {
        for (text, said) in [
            ("[models.a]\nmodel = \"m\"\n", "models.a: give `base_url`"),
            (
                "[models.a]\nbase_url = \"http://h/v1\"\nmodel = \"m\"\nstructured = \"xml\"\n",
                "expected auto, json-schema",
            ),
            (
                "[models.a]\nbase_url = \"http://h/v1\"\nmodle = \"m\"\n",
                "modle",
            ),
            (
                "[models.a]\nbase_url = \"http://h/v1\"\nmodel = \"m\"\nprice_input = -1\n",
                "price_input",
            ),
        ] {
            let e = models(text).unwrap_err();
            assert!(e.contains(said) && e.contains("--models"), "{e}");
        }
    }
}
