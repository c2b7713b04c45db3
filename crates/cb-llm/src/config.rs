//! What a layer is configured with ([`LlmConfig`]): the backend, the endpoint and model,
//! the limits and price (the budget is the run's: [`crate::Budget`]), and the transport with its options (a pool's endpoints, the Batch
//! API's and batch files' rounds). Plain data: no module it names runs anything.

use crate::error::LlmError;
use crate::form::Structured;
use crate::limiter;
use crate::pricing::{self, Price};
use std::path::PathBuf;
use std::time::Duration;

/// The API key. It lives only in memory: its `Debug` and `Display` never show it.
#[derive(Clone, Default)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

/// Which backend answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// Any OpenAI-compatible endpoint.
    Openai,
    /// Deterministic rules, no network: the answer is the one the step computed itself.
    Offline,
    /// Answers only from the cache; a miss is an error.
    Replay,
    /// Counts what an `openai` build would call and spend, answering with the offline rules.
    DryRun,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Openai => "openai",
            Self::Offline => "offline",
            Self::Replay => "replay",
            Self::DryRun => "dry-run",
        }
    }

    /// The backend a manifest records: a replay re-reads the answers of an `openai` build,
    /// so its manifest is that build's (the run's own mode is in `runs.jsonl`).
    pub fn recorded_name(self) -> &'static str {
        match self {
            Self::Replay => Self::Openai.name(),
            b => b.name(),
        }
    }
}

/// Everything the LLM layer is configured with.
#[derive(Debug, Clone)]
pub struct LlmConfig {
    pub backend: BackendKind,
    pub base_url: String,
    pub model: String,
    pub api_key: ApiKey,
    /// SQLite cache file; `None` disables caching (only sensible for the offline backend).
    pub cache_path: Option<PathBuf>,
    pub concurrency: usize,
    pub rpm: Option<u32>,
    pub tpm: Option<u32>,
    /// Retries after the first attempt, for 429, 5xx, timeouts and connection errors.
    pub max_retries: u32,
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// Longest wait a `Retry-After` header may impose.
    pub retry_after_max: Duration,
    pub request_timeout: Duration,
    pub price: Price,
    /// How response schemas are sent (`--structured`).
    pub structured: Structured,
    /// How a cache miss reaches the model (openai backend; the others send nothing).
    pub transport: Transport,
    /// What the user set the endpoint and model with, for the errors that say what to check.
    pub named_by: NamedBy,
    /// The job whose calls the layer makes (a recipe's name), `None` for a layer of no
    /// recipe: with its role ([`crate::Roster::layer`]) it names the layer's batch files in
    /// the journal, so each recipe imports, and is credited with, the files of its own calls.
    /// Never part of a cache key.
    pub job: Option<String>,
}

/// The settings that name an endpoint and its model, as an error tells the user to check
/// them: `--base-url` and `--model` unless the configuration says otherwise (a build's
/// reader: `--reader-base-url`, `--reader-model`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedBy {
    pub base_url: String,
    pub model: String,
}

impl Default for NamedBy {
    fn default() -> Self {
        Self {
            base_url: "--base-url".into(),
            model: "--model".into(),
        }
    }
}

/// How a cache miss reaches the model.
#[derive(Debug, Clone, Default)]
pub enum Transport {
    /// One request to `base_url` per call.
    #[default]
    Online,
    /// Several endpoints serving the same model (`--pool`); replaces `base_url`.
    Pool(PoolConfig),
    /// The provider's Batch API at `base_url` (`--batch`): calls wait for rounds of batches.
    BatchApi(BatchOptions),
    /// Batch files in a folder (`--batch-dir`), answered by whatever runs them; `base_url`
    /// only names the endpoint in cache keys and manifests.
    BatchFiles(FilesOptions),
}

impl Transport {
    /// The name `runs.jsonl` and the logs use.
    pub fn name(&self) -> &'static str {
        match self {
            Transport::Online => "online",
            Transport::Pool(_) => "pool",
            Transport::BatchApi(_) => "batch",
            Transport::BatchFiles(_) => "files",
        }
    }

    /// Calls wait for rounds (the Batch API or batch files) rather than go one by one.
    pub fn in_rounds(&self) -> bool {
        matches!(self, Transport::BatchApi(_) | Transport::BatchFiles(_))
    }

    /// The most items a build keeps waiting on rounds at once (`--batch-window`), for the
    /// transports in rounds.
    pub fn window(&self) -> Option<usize> {
        match self {
            Transport::BatchApi(o) => Some(o.window),
            Transport::BatchFiles(o) => Some(o.window),
            _ => None,
        }
    }
}

/// Items a batch round takes at most unless `--batch-window` says otherwise: one input file
/// of batch files (`FilesOptions::max_requests_per_file`, the 5,000-line shards the batch
/// engines are given), so a build's memory stays flat in its items.
pub const BATCH_WINDOW: usize = 5_000;

impl LlmConfig {
    /// How long to wait before retry `attempt` (from 1) after `e`: the server's
    /// `Retry-After`, at most `retry_after_max`, else the exponential backoff.
    pub(crate) fn retry_wait(&self, e: &LlmError, attempt: u32) -> Duration {
        e.retry_after().map_or_else(
            || limiter::backoff(attempt, self.backoff_base, self.backoff_max),
            |d| d.min(self.retry_after_max),
        )
    }

    /// Items a build keeps in flight for this configuration: four times the calls it may have
    /// in flight (a pool's are its endpoints' together), so that items held back by a long
    /// resample chain ahead of them (rows are written in source order) still leave work for
    /// every slot; or with `--batch` and `--batch-dir` the batch window
    /// ([`Transport::window`], default [`BATCH_WINDOW`]): a round takes the calls of at most
    /// that many items, and the others wait in the source, not in memory.
    pub fn items_in_flight(&self) -> usize {
        match self.transport.window() {
            Some(window) if self.backend == BackendKind::Openai => window.max(1),
            _ => self.concurrency.max(1).saturating_mul(4),
        }
    }

    /// The offline configuration: no network, no cache.
    pub fn offline() -> Self {
        Self {
            backend: BackendKind::Offline,
            base_url: "offline:".into(),
            model: pricing::OFFLINE_MODEL.into(),
            api_key: ApiKey::default(),
            cache_path: None,
            concurrency: 16,
            rpm: None,
            tpm: None,
            max_retries: 5,
            backoff_base: Duration::from_millis(500),
            backoff_max: Duration::from_secs(60),
            retry_after_max: Duration::from_secs(300),
            request_timeout: Duration::from_secs(120),
            price: Price::default(),
            structured: Structured::Auto,
            transport: Transport::Online,
            named_by: NamedBy::default(),
            job: None,
        }
    }
}

/// One endpoint of a pool.
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointSpec {
    pub base_url: String,
    pub concurrency: usize,
    pub rpm: Option<u32>,
    pub tpm: Option<u32>,
}

/// The pool's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolConfig {
    /// The pool's identity in cache keys: `pool:NAME`.
    pub name: String,
    pub endpoints: Vec<EndpointSpec>,
    /// Consecutive failures that pause a replica.
    pub open_after: u32,
    /// First pause of a failing replica (doubles on each failed probe, up to a minute).
    pub cooldown: Duration,
}

impl PoolConfig {
    /// What a pool must be before it is used: at least one endpoint, each a URL with a
    /// concurrency, and where given an `rpm` and `tpm`, in their ranges ([`crate::ranges`]:
    /// 0 is refused, never read as unlimited: leave a rate out for that).
    pub fn validate(&self) -> Result<(), String> {
        if self.endpoints.is_empty() {
            return Err("the endpoint pool declares no endpoint".into());
        }
        if let Some(e) = self.endpoints.iter().find(|e| !e.base_url.contains("://")) {
            return Err(format!("endpoint `{}` is not a URL", e.base_url));
        }
        for e in &self.endpoints {
            let wide = |v: u32| Some(i64::from(v));
            crate::ranges::own_limits((
                Some(i64::try_from(e.concurrency).unwrap_or(i64::MAX)),
                e.rpm.and_then(wide),
                e.tpm.and_then(wide),
            ))
            .map_err(|why| format!("endpoint `{}`: {why}", e.base_url))?;
        }
        Ok(())
    }
}

/// How `--batch` runs.
#[derive(Debug, Clone)]
pub struct BatchOptions {
    /// Most requests in one input file (OpenAI: 50,000).
    pub max_requests_per_file: usize,
    /// Most bytes in one input file (OpenAI: 200 MB).
    pub max_bytes_per_file: usize,
    /// First wait between two polls of a batch; it grows by half each poll up to `poll_max`.
    pub poll_initial: Duration,
    pub poll_max: Duration,
    /// A round starts when no call has been queued for this long.
    pub quiet: Duration,
    /// The most items a build keeps waiting on rounds (`--batch-window`): a round takes at
    /// most their calls.
    pub window: usize,
}

impl Default for BatchOptions {
    fn default() -> Self {
        Self {
            max_requests_per_file: 50_000,
            max_bytes_per_file: 190 * 1024 * 1024,
            poll_initial: Duration::from_secs(5),
            poll_max: Duration::from_secs(60),
            quiet: Duration::from_millis(300),
            window: BATCH_WINDOW,
        }
    }
}

/// How `--batch-dir` runs.
#[derive(Debug, Clone)]
pub struct FilesOptions {
    /// The folder of input and output files (absolute: it names the files in the journal).
    pub dir: PathBuf,
    /// Most requests in one input file.
    pub max_requests_per_file: usize,
    /// Most bytes in one input file.
    pub max_bytes_per_file: usize,
    /// A round starts when no call has been queued for this long.
    pub quiet: Duration,
    /// The most items a build keeps waiting on rounds (`--batch-window`): a round writes the
    /// calls of at most that many; the others are read again by the next build run.
    pub window: usize,
}

impl FilesOptions {
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            max_requests_per_file: 5_000,
            max_bytes_per_file: 190 * 1024 * 1024,
            quiet: Duration::from_millis(300),
            window: BATCH_WINDOW,
        }
    }
}
