//! The LLM flags as clap parses them (the low-level arguments): the backend, endpoint, limits,
//! budget and cache shared by `build` and `eval`, and `build`'s transport (`--batch`,
//! `--batch-dir`, an endpoint pool) and reader flags. They say nothing until
//! `llm_config::LlmSetup` resolves them into the run's one configuration.

use crate::flag_values::{real, whole};
use cb_llm::{ranges, BackendKind};
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::Args;
use std::path::PathBuf;

/// The backends `--backend` takes, each with its help (a dry run is `--dry-run`).
const BACKENDS: [(BackendKind, &str); 3] = [
    (
        BackendKind::Openai,
        "Any OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp, Ollama)",
    ),
    (
        BackendKind::Offline,
        "Deterministic rules, no network; labelled `offline` in every output",
    ),
    (
        BackendKind::Replay,
        "Answers only from the cache; a miss is an error",
    ),
];

/// The clap value parser of `--backend`: one of [`BACKENDS`] by its name.
fn backend() -> impl TypedValueParser<Value = BackendKind> {
    let names = BACKENDS.map(|(b, help)| PossibleValue::new(b.name()).help(help));
    PossibleValuesParser::new(names).try_map(|name| {
        BACKENDS
            .iter()
            .map(|(b, _)| *b)
            .find(|b| b.name() == name)
            .ok_or_else(|| format!("unknown backend {name}"))
    })
}

#[derive(Args, Debug)]
pub struct LlmArgs {
    /// Model calls in flight at once (1 to 10000).
    #[arg(long, default_value_t = 16, value_parser = whole::<usize>(ranges::CONCURRENCY))]
    pub concurrency: usize,
    /// Who answers: default `openai` when a base URL is set (flag or OPENAI_BASE_URL), else `offline`.
    #[arg(long, value_parser = backend())]
    pub backend: Option<BackendKind>,
    /// Base URL of the OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1.
    #[arg(long, env = "OPENAI_BASE_URL")]
    pub base_url: Option<String>,
    /// Model name sent to the endpoint. For `replay`, default: the one in the previous manifest.
    #[arg(long)]
    pub model: Option<String>,
    /// Requests per minute (unlimited when absent; 1 to 10000000).
    #[arg(long, value_parser = whole::<u32>(ranges::RPM))]
    pub rpm: Option<u32>,
    /// Tokens per minute (unlimited when absent; 1 to 1000000000).
    #[arg(long, value_parser = whole::<u32>(ranges::TPM))]
    pub tpm: Option<u32>,
    /// Retries of a call after 429, 5xx, a timeout or a broken connection (0 to 100).
    #[arg(long, default_value_t = 5, value_parser = whole::<u32>(ranges::MAX_RETRIES))]
    pub max_retries: u32,
    /// First backoff delay in milliseconds (doubles each retry, with jitter; 1 to 600000).
    #[arg(long, default_value_t = 500, value_parser = whole::<u64>(ranges::BACKOFF_MS))]
    pub backoff_ms: u64,
    /// Longest backoff delay in seconds (1 to 3600).
    #[arg(long, default_value_t = 60, value_parser = whole::<u64>(ranges::BACKOFF_MAX_S))]
    pub backoff_max_s: u64,
    /// Seconds before a call times out (1 to 86400).
    #[arg(long, default_value_t = 120, value_parser = whole::<u64>(ranges::TIMEOUT_S))]
    pub timeout_s: u64,
    /// Stop cleanly (resumable, exit code 3) before the calls of this run cost more than this
    /// many USD (above 0, at most 1000000).
    #[arg(long, value_parser = real(ranges::MAX_COST))]
    pub max_cost: Option<f64>,
    /// Stop cleanly (resumable, exit code 3) before the calls of this run use more tokens
    /// than this (1 to 1000000000000).
    #[arg(long, value_parser = whole::<u64>(ranges::MAX_TOKENS))]
    pub max_tokens: Option<u64>,
    /// USD per million prompt tokens (default: the built-in table; a model it does not know
    /// costs 0, and is refused under --max-cost; 0 to 10000).
    #[arg(long, value_parser = real(ranges::PRICE))]
    pub price_input: Option<f64>,
    /// USD per million completion tokens (default as --price-input; 0 to 10000).
    #[arg(long, value_parser = real(ranges::PRICE))]
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

/// Flags of `build` for the provider's Batch API.
#[derive(Args, Debug, Clone)]
pub struct BatchFlags {
    /// Send the calls that miss the cache through the provider's Batch API (half price,
    /// answers within 24 h) instead of online; same cache, same outputs. A killed build
    /// finds its batches again on the next run.
    #[arg(long)]
    pub batch: bool,
    /// Batch price as a fraction of the online price (OpenAI: 0.5; above 0, at most 1).
    #[arg(long, default_value_t = 0.5, value_name = "FACTOR", value_parser = real(ranges::BATCH_PRICE_FACTOR))]
    pub batch_price_factor: f64,
    /// First wait between two polls of a batch, in milliseconds (grows to a minute; 1 to
    /// 60000).
    #[arg(long, default_value_t = 5000, value_name = "MS", value_parser = whole::<u64>(ranges::BATCH_POLL_MS))]
    pub batch_poll_ms: u64,
    /// Most requests in one batch input file (1 to 1000000).
    #[arg(long, default_value_t = 50_000, value_name = "N", value_parser = whole::<usize>(ranges::BATCH_MAX_REQUESTS))]
    pub batch_max_requests: usize,
    /// Most megabytes in one batch input file (--batch and --batch-dir; 1 to 100000).
    #[arg(long, default_value_t = 190, value_name = "MB", value_parser = whole::<usize>(ranges::BATCH_MAX_MB))]
    pub batch_max_mb: usize,
    /// Write the calls that miss the cache as OpenAI batch input files in DIR
    /// (`requests-NNNNN.jsonl`) and stop with exit code 4; once something has written the
    /// output files beside them (`requests-NNNNN.output.jsonl`: `vllm run_batch`, Ray Data,
    /// `conflictbench batches run-dir`), the same command imports them and goes on. Nothing
    /// is sent: --base-url, if given, only names the endpoint in cache keys and manifests
    /// (default `batch-files`).
    #[arg(long, value_name = "DIR", conflicts_with = "batch")]
    pub batch_dir: Option<PathBuf>,
    /// Most requests in one file of --batch-dir (1 to 10000000).
    #[arg(long, default_value_t = 5_000, value_name = "N", value_parser = whole::<usize>(ranges::BATCH_DIR_MAX_LINES))]
    pub batch_dir_max_lines: usize,
    /// Most items a round of --batch or --batch-dir takes at once (default 5000): the build
    /// holds only these in memory, whatever the size of the source, at the cost of more rounds
    /// (with --batch, one batch turnaround each); 1 to 10000000, and only with --batch or
    /// --batch-dir. A dry run counts the same calls whatever the window.
    #[arg(long, value_name = "N", value_parser = whole::<usize>(ranges::BATCH_WINDOW))]
    pub batch_window: Option<usize>,
}

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
    /// Failures in a row that pause an endpoint (1 to 1000).
    #[arg(long, default_value_t = 3, value_parser = whole::<u32>(ranges::POOL_OPEN_AFTER))]
    pub pool_open_after: u32,
    /// First pause of a failing endpoint, in milliseconds (doubles on each failed probe, up
    /// to a minute; 1 to 60000).
    #[arg(long, default_value_t = 2000, value_parser = whole::<u64>(ranges::POOL_COOLDOWN_MS))]
    pub pool_cooldown_ms: u64,
}

#[derive(Args, Debug, Clone, Default)]
pub struct ReaderArgs {
    /// `none`: skip the reader check; or the NAME of a model of --models. By default a model
    /// build reads with its own endpoint and model, and an offline build reads with nobody.
    #[arg(long, value_name = "none|NAME")]
    pub reader: Option<String>,
    /// Base URL of the model that reads the rows back (default: the build's own --base-url).
    #[arg(long, value_name = "URL")]
    pub reader_base_url: Option<String>,
    /// Model that reads the rows back (default: the build's own --model).
    #[arg(long, value_name = "NAME")]
    pub reader_model: Option<String>,
    /// USD per million prompt tokens of the reader of --reader-model / --reader-base-url
    /// (default: the build's own price for the build's model, else the built-in table; 0 to
    /// 10000).
    #[arg(long, value_name = "USD", value_parser = real(ranges::PRICE))]
    pub reader_price_input: Option<f64>,
    /// USD per million completion tokens of that reader (default as --reader-price-input; 0
    /// to 10000).
    #[arg(long, value_name = "USD", value_parser = real(ranges::PRICE))]
    pub reader_price_output: Option<f64>,
}

/// Flags of `build` for named models (issue 31).
#[derive(Args, Debug, Clone, Default)]
pub struct ModelFlags {
    /// A TOML file naming models, one `[models.NAME]` table a model (`base_url` or
    /// `[[models.NAME.endpoint]]` tables, `model`, and optionally `concurrency`, `rpm`, `tpm`,
    /// `price_input`, `price_output`, `structured`). A recipe step calls one with
    /// `model = "NAME"`; --base-url and --model stay the model of every other step.
    #[arg(long = "models", value_name = "FILE")]
    pub models_file: Option<PathBuf>,
    /// Step STEP (its name in the recipe) calls the named model NAME, whatever its recipe
    /// says. Repeatable.
    #[arg(long = "model-for", value_name = "STEP=NAME")]
    pub model_for: Vec<String>,
}
