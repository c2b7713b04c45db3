//! One endpoint: its check before any work ([`check_endpoint`]), and its configuration
//! reached alone or as a reader (`batches`' endpoint, `audit`'s reader, the build's reader),
//! with the run's API key.

use crate::config_error::config_err;
use cb_llm::base_url::{check_base_url_of, HostKind};
use cb_llm::{pricing, ApiKey, BackendKind, Llm, LlmConfig, NamedBy, Role, Roster, Transport};
use std::path::Path;

/// Checks the endpoint `url` before any work (exit 2 when it fails): a URL that is not an
/// absolute http(s) URL, and a public host without `OPENAI_API_KEY`. A loopback or private
/// host needs no key (local servers such as vLLM, llama.cpp or Ollama rarely ask for one);
/// a dry run and a replay call nothing, so they need none either. `flag`: the setting that
/// gives it (`--base-url`, `--reader-base-url`, ...), which the errors name;
/// `calls_upstream`: whether this run sends it requests.
pub fn check_endpoint(flag: &str, url: &str, calls_upstream: bool) -> anyhow::Result<()> {
    let kind = check_base_url_of(flag, url).map_err(config_err)?;
    let has_key = std::env::var("OPENAI_API_KEY").is_ok_and(|k| !k.trim().is_empty());
    if calls_upstream && kind == HostKind::Public && !has_key {
        return Err(config_err(format!(
            "{url} is a public host and OPENAI_API_KEY is not set: export OPENAI_API_KEY=... \
             (it is read from the environment only), or point {flag} at a local server"
        )));
    }
    Ok(())
}

/// One endpoint reached alone, outside a build (`batches run-dir`, `batches --cancel`): the
/// openai backend at `base_url` for `model` (`None`, `batches run-dir`: no model, each
/// request names its own in its line), the key from `OPENAI_API_KEY`, everything else as
/// [`LlmConfig::offline`] leaves it.
pub fn endpoint_config(base_url: &str, model: Option<&str>) -> LlmConfig {
    let mut c = LlmConfig::offline();
    c.backend = BackendKind::Openai;
    c.base_url = base_url.to_owned();
    c.model = model.unwrap_or_default().to_owned();
    c.api_key = api_key();
    c
}

/// The one layer of `audit --reader-base-url URL --reader-model M`: the reader of
/// [`reader_config`], on a roster of its own (its cache file `cache`, no budget).
pub fn audit_reader(
    cache: &Path,
    concurrency: usize,
    (base_url, model): (&str, &str),
) -> anyhow::Result<Llm> {
    let mut c = LlmConfig::offline();
    c.cache_path = Some(cache.to_path_buf());
    c.concurrency = concurrency;
    let c = reader_config(c, base_url.to_owned(), model.to_owned());
    Ok(Roster::new(None, None).layer(&Role::Reader, c)?)
}

/// The API key of the run, from `OPENAI_API_KEY` (empty when unset); it lives only in memory.
pub fn api_key() -> ApiKey {
    ApiKey::new(std::env::var("OPENAI_API_KEY").unwrap_or_default())
}

/// `base` (limits, budget, cache, retries) turned to the reader `model` at `base_url`: an
/// OpenAI-compatible endpoint, no pool, the model's built-in price, the key from
/// `OPENAI_API_KEY`, named by `--reader-base-url` and `--reader-model`. The build's reader
/// and the audit's are made by it.
pub fn reader_config(mut base: LlmConfig, base_url: String, model: String) -> LlmConfig {
    base.backend = BackendKind::Openai;
    if matches!(base.transport, Transport::Pool(_)) {
        base.transport = Transport::Online;
    }
    base.price = pricing::builtin(&model).unwrap_or_default();
    base.api_key = api_key();
    base.base_url = base_url;
    base.model = model;
    base.named_by = NamedBy {
        base_url: "--reader-base-url".into(),
        model: "--reader-model".into(),
    };
    base
}
