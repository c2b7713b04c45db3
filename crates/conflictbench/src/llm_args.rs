//! The LLM flags shared by `build` and `eval` (backend, endpoint, limits, budget, cache) and
//! the one place where parsed arguments become an `LlmConfig`: [`LlmArgs::config`], with the
//! transport (`--batch`, an endpoint pool) the build's flags declare.

use crate::config_err;
use crate::pool_cmd::TransportArgs;
use cb_llm::{pricing, ApiKey, BackendKind, LlmConfig, Price};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Backend {
    /// Any OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp, Ollama).
    Openai,
    /// Deterministic rules, no network; labelled `offline` in every output.
    Offline,
    /// Answers only from the cache; a miss is an error.
    Replay,
}

#[derive(Args, Debug)]
pub struct LlmArgs {
    /// Model calls in flight at once.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// Who answers: default `openai` when a base URL is set (flag or OPENAI_BASE_URL), else `offline`.
    #[arg(long, value_enum)]
    pub backend: Option<Backend>,
    /// Base URL of the OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1.
    #[arg(long, env = "OPENAI_BASE_URL")]
    pub base_url: Option<String>,
    /// Model name sent to the endpoint. For `replay`, default: the one in the previous manifest.
    #[arg(long)]
    pub model: Option<String>,
    /// Requests per minute (unlimited when absent).
    #[arg(long)]
    pub rpm: Option<u32>,
    /// Tokens per minute (unlimited when absent).
    #[arg(long)]
    pub tpm: Option<u32>,
    /// Retries of a call after 429, 5xx, a timeout or a broken connection.
    #[arg(long, default_value_t = 5)]
    pub max_retries: u32,
    /// First backoff delay in milliseconds (doubles each retry, with jitter).
    #[arg(long, default_value_t = 500)]
    pub backoff_ms: u64,
    /// Longest backoff delay in seconds.
    #[arg(long, default_value_t = 60)]
    pub backoff_max_s: u64,
    /// Seconds before a call times out.
    #[arg(long, default_value_t = 120)]
    pub timeout_s: u64,
    /// Stop cleanly (resumable, exit code 3) before the calls of this run cost more than this many USD.
    #[arg(long, value_parser = crate::build_args::amount)]
    pub max_cost: Option<f64>,
    /// Stop cleanly (resumable, exit code 3) before the calls of this run use more tokens than this.
    #[arg(long)]
    pub max_tokens: Option<u64>,
    /// USD per million prompt tokens (default: the built-in table, 0 for unknown models).
    #[arg(long, value_parser = crate::build_args::amount)]
    pub price_input: Option<f64>,
    /// USD per million completion tokens (default: the built-in table, 0 for unknown models).
    #[arg(long, value_parser = crate::build_args::amount)]
    pub price_output: Option<f64>,
    /// Response cache (SQLite). Default: OUT/llm-cache.sqlite.
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// Print how many calls would go upstream, their estimated tokens and cost; call nothing, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// How steps' JSON schemas are sent: `auto` finds out once per endpoint and model.
    #[arg(long, value_enum, default_value = "auto")]
    pub structured: crate::structured_arg::StructuredArg,
}

impl LlmArgs {
    /// Checks every endpoint of the run before any work (`--base-url`, a pool's): a base URL
    /// that cannot be parsed, or a public host with no API key, is a configuration error.
    pub fn preflight(&self, transport: &TransportArgs) -> anyhow::Result<()> {
        let backend = self.backend(transport);
        if backend == Backend::Offline {
            return Ok(());
        }
        let calls = backend == Backend::Openai && !self.dry_run && !transport.sends_nothing();
        for url in self
            .base_url
            .iter()
            .map(String::as_str)
            .chain(transport.pool_urls())
        {
            crate::preflight::check_endpoint(url, calls)?;
        }
        Ok(())
    }

    /// The backend asked for, or the default: `openai` with a base URL, a pool or batch
    /// files, else `offline`.
    pub fn backend(&self, transport: &TransportArgs) -> Backend {
        match self.backend {
            Some(b) => b,
            None if self.base_url.is_some()
                || transport.pool_urls().next().is_some()
                || transport.sends_nothing() =>
            {
                Backend::Openai
            }
            None => Backend::Offline,
        }
    }

    /// The LLM layer's configuration, with the transport's batch options and pool. `out` is
    /// where the default cache file goes; `previous` gives the endpoint and model a replay
    /// falls back on (a previous manifest), and `what` names the job in the error when there
    /// is none. A pool stands in for `--base-url` (its first endpoint names the run).
    pub fn config(
        &self,
        out: &Path,
        previous: impl Fn() -> Option<(String, String)>,
        what: &str,
        transport: &TransportArgs,
    ) -> anyhow::Result<LlmConfig> {
        let backend = self.backend(transport);
        // Batch files name no server unless told: their answers are recorded as from
        // `batch-files`.
        let base_url = self
            .base_url
            .clone()
            .or_else(|| transport.pool_urls().next().map(str::to_owned))
            .or_else(|| {
                transport
                    .sends_nothing()
                    .then(|| cb_llm::batch_files::ENDPOINT.to_owned())
            });
        let mut c = LlmConfig::offline();
        c.concurrency = self.concurrency;
        c.rpm = self.rpm;
        c.tpm = self.tpm;
        c.max_retries = self.max_retries;
        c.backoff_base = Duration::from_millis(self.backoff_ms);
        c.backoff_max = Duration::from_secs(self.backoff_max_s);
        c.request_timeout = Duration::from_secs(self.timeout_s.max(1));
        c.max_cost_usd = self.max_cost;
        c.max_tokens = self.max_tokens;
        c.structured = self.structured.into();
        if backend == Backend::Offline {
            transport.apply(&mut c).map_err(config_err)?;
            return Ok(c);
        }
        let (base_url, model) = match (backend, &base_url, &self.model) {
            (_, Some(u), Some(m)) => (u.clone(), m.clone()),
            (Backend::Replay, u, m) => {
                let prev = previous();
                let u = u.clone().or_else(|| prev.as_ref().map(|p| p.0.clone()));
                let m = m.clone().or_else(|| prev.as_ref().map(|p| p.1.clone()));
                match (u, m) {
                    (Some(u), Some(m)) => (u, m),
                    _ => return Err(config_err(format!(
                        "replay of {what}: give --base-url and --model, or build it once with a model so its manifest names them"
                    ))),
                }
            }
            (_, None, _) => {
                return Err(config_err(
                    "--backend openai needs --base-url (or OPENAI_BASE_URL)",
                ))
            }
            (_, Some(_), None) => return Err(config_err("--backend openai needs --model")),
        };
        let builtin = pricing::builtin(&model).unwrap_or_default();
        c.price = Price {
            input_per_million: self.price_input.unwrap_or(builtin.input_per_million),
            output_per_million: self.price_output.unwrap_or(builtin.output_per_million),
        };
        c.backend = if self.dry_run {
            BackendKind::DryRun
        } else if backend == Backend::Replay {
            BackendKind::Replay
        } else {
            BackendKind::Openai
        };
        c.base_url = base_url;
        c.model = model;
        c.api_key = api_key();
        c.cache_path = Some(
            self.cache
                .clone()
                .unwrap_or_else(|| out.join("llm-cache.sqlite")),
        );
        transport.apply(&mut c).map_err(config_err)?;
        Ok(c)
    }
}

/// The API key of the run, from `OPENAI_API_KEY` (empty when unset); it lives only in memory.
pub fn api_key() -> ApiKey {
    ApiKey::new(std::env::var("OPENAI_API_KEY").unwrap_or_default())
}
