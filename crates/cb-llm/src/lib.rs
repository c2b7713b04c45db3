//! The LLM layer: every model call of a build goes through [`Llm::complete`].
//!
//! Order of a call: cache lookup (SQLite) -> budget check -> limiter (concurrency, RPM,
//! TPM, shared rate-limit pause) -> backend -> cache commit -> the caller. A response is
//! committed to the cache before the caller sees it, so a build killed at any moment never
//! pays for the same request twice.
//!
//! This is the only crate that knows HTTP and async-openai. Steps describe a call with
//! [`Call`] and get a [`Completion`] back; they never learn which backend answered.

pub mod base_url;
mod batch;
mod batch_api;
pub mod batch_files;
mod batch_run;
mod batch_store;
mod cache;
mod endpoint;
mod error;
mod form;
mod http;
mod limiter;
mod pool;
pub mod pricing;
pub mod progress;
mod request;
mod rounds;
mod send;
mod spool;
mod structured;

pub use batch::{cancel_batch, BatchOptions};
pub use batch_files::FilesOptions;
pub use batch_run::{run_dir, RunReport};
pub use batch_store::BatchRecord;
pub use cache::{Cache, CachedResponse};
pub use error::{is_transport_reason, LlmError};
pub use form::{Form, Structured};
pub use pool::{EndpointSpec, PoolConfig};
pub use pricing::Price;
pub use progress::{NoProgress, Progress};
pub use request::{
    cache_key, cache_key_as, endpoint_identity, Call, ChatRequest, Message, CACHE_FORMAT,
};

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The API key. It lives only in memory: its `Debug` and `Display` never show it.
#[derive(Clone, Default)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }
    fn expose(&self) -> &str {
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
    pub max_cost_usd: Option<f64>,
    pub max_tokens: Option<u64>,
    /// How response schemas are sent (`--structured`).
    pub structured: Structured,
    /// How a cache miss reaches the model (openai backend; the others send nothing).
    pub transport: Transport,
    /// What the user set the endpoint and model with, for the errors that say what to check.
    pub named_by: NamedBy,
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
}

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
    /// every slot; or with `--batch` and `--batch-dir` all of them, since a round holds every
    /// item waiting on the model.
    pub fn items_in_flight(&self) -> usize {
        if self.transport.in_rounds() && self.backend == BackendKind::Openai {
            1 << 30
        } else {
            self.concurrency.max(1).saturating_mul(4)
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
            max_cost_usd: None,
            max_tokens: None,
            structured: Structured::Auto,
            transport: Transport::Online,
            named_by: NamedBy::default(),
        }
    }
}

/// A model answer, with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub text: String,
    pub finish_reason: String,
    pub cache_key: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Served from the cache (no upstream call in this run).
    pub cached: bool,
}

/// Counters of one run of the layer, for progress bars and `runs.jsonl`.
#[derive(Debug, Default)]
pub struct Stats {
    pub calls: AtomicU64,
    pub upstream_calls: AtomicU64,
    pub cache_hits: AtomicU64,
    pub retries: AtomicU64,
    pub failures: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub completion_tokens: AtomicU64,
    /// Cost of the upstream calls of this run, in micro-dollars.
    pub spent_micro_usd: AtomicU64,
    /// Tokens of the upstream calls of this run (what `--max-tokens` limits).
    pub upstream_tokens: AtomicU64,
    /// For dry runs: estimated tokens of the calls that would go upstream.
    pub estimated_tokens: AtomicU64,
    /// Batches submitted by this run (`--batch`).
    pub batches: AtomicU64,
}

/// A plain copy of [`Stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct StatsSnapshot {
    pub calls: u64,
    pub upstream_calls: u64,
    pub cache_hits: u64,
    pub retries: u64,
    pub failures: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub spent_usd: f64,
    pub estimated_tokens: u64,
    pub batches: u64,
}

impl Stats {
    pub fn snapshot(&self) -> StatsSnapshot {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        StatsSnapshot {
            calls: g(&self.calls),
            upstream_calls: g(&self.upstream_calls),
            cache_hits: g(&self.cache_hits),
            retries: g(&self.retries),
            failures: g(&self.failures),
            prompt_tokens: g(&self.prompt_tokens),
            completion_tokens: g(&self.completion_tokens),
            spent_usd: g(&self.spent_micro_usd) as f64 / 1e6,
            estimated_tokens: g(&self.estimated_tokens),
            batches: g(&self.batches),
        }
    }
}

/// The LLM layer. Cheap to share (`Arc` inside).
#[derive(Clone)]
pub struct Llm {
    inner: Arc<Inner>,
}

/// Where a cache miss goes: the running form of the configuration's [`Transport`], with
/// what each needs.
enum Route {
    /// The offline backend: the call's own offline answer.
    Offline,
    /// Answers only from the cache.
    Replay,
    /// Counts what would go upstream.
    DryRun,
    /// One request to `base_url` per call.
    Online(http::OpenAiHttp),
    /// Shared by the layers made under one name of a run's [`SharedLimits`].
    Pool(Arc<pool::Pool>),
    /// The Batch API: calls wait for a round.
    BatchApi(Arc<rounds::Rounds<batch::ApiRounds>>),
    /// Batch files: calls wait for a round.
    Files(Arc<rounds::Rounds<batch_files::FileRounds>>),
}

impl Route {
    /// The running form of `config`'s transport; each transport creates its tables in
    /// `cache`. A pool's replicas (their limits and breakers) are those `limits` names, when
    /// it names some: the recipes of one build share their endpoints' concurrency.
    fn new(
        config: &LlmConfig,
        cache: Option<&Cache>,
        limits: LimitsOf<'_>,
    ) -> Result<Self, LlmError> {
        Ok(match (config.backend, &config.transport) {
            (BackendKind::Offline, _) => Route::Offline,
            (BackendKind::Replay, _) => Route::Replay,
            (BackendKind::DryRun, _) => Route::DryRun,
            (BackendKind::Openai, Transport::Online) => {
                Route::Online(http::OpenAiHttp::new(config)?)
            }
            (BackendKind::Openai, Transport::Pool(p)) => {
                let make = || pool::Pool::new(config, p, cache).map(Arc::new);
                Route::Pool(match limits {
                    Some((shared, name)) => shared.pool(name, make)?,
                    None => make()?,
                })
            }
            (BackendKind::Openai, Transport::BatchApi(o)) => Route::BatchApi(rounds::Rounds::new(
                batch::ApiRounds::new(config, o, cache)?,
            )),
            (BackendKind::Openai, Transport::BatchFiles(o)) => {
                Route::Files(rounds::Rounds::new(batch_files::FileRounds::new(o, cache)?))
            }
        })
    }
}

struct Inner {
    config: LlmConfig,
    endpoint: String,
    cache: Option<Cache>,
    /// Concurrency, RPM, TPM and pauses: its own, or shared through [`SharedLimits`].
    limiter: Arc<limiter::Limiter>,
    route: Route,
    /// This layer's counters (shared with a reader made by [`Llm::reader`]).
    stats: Arc<Stats>,
    /// The run's one budget, shared by every layer made from this one.
    budget: Arc<Budget>,
    /// The structured-output form found out (auto mode).
    form: structured::FormState,
    /// Set once the endpoint is known to be unusable: every later call fails at once.
    dead: std::sync::OnceLock<String>,
}

/// What the layers of one run spend together, against `--max-cost` and `--max-tokens`.
#[derive(Default)]
struct Budget {
    /// Cost of the upstream calls so far, in micro-dollars.
    spent_micro_usd: AtomicU64,
    /// Tokens of the upstream calls so far.
    tokens: AtomicU64,
    /// Estimated cost (micro-dollars) and tokens reserved by calls in flight.
    reserved_micro_usd: AtomicU64,
    reserved_tokens: AtomicU64,
}

/// The limiters (concurrency, RPM, TPM, a `Retry-After` pause) of one run's layers, and their
/// endpoint pools (each replica's limiter and breaker), by a name the caller gives (a role:
/// the writer, the reader, a named model). Layers made with the same name share one limiter
/// (one pool), so several recipes built at once, each with layers of its
/// own (own counters), keep the run's `--concurrency` and rates against the endpoint rather
/// than multiply them. The first layer made under a name sets its limits.
#[derive(Clone, Default)]
pub struct SharedLimits {
    by_name: Arc<std::sync::Mutex<std::collections::HashMap<String, Arc<limiter::Limiter>>>>,
    /// Endpoint pools by name: their replicas' limiters and breakers.
    pools: Arc<std::sync::Mutex<std::collections::HashMap<String, Arc<pool::Pool>>>>,
}

impl std::fmt::Debug for SharedLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = self.by_name.lock().map(|m| m.len()).unwrap_or(0);
        f.debug_struct("SharedLimits")
            .field("names", &names)
            .finish()
    }
}

impl SharedLimits {
    /// The limiter under `name`, made with `config`'s limits when there is none yet.
    fn limiter(&self, name: &str, config: &LlmConfig) -> Arc<limiter::Limiter> {
        let mut m = self.by_name.lock().expect("limits lock");
        Arc::clone(
            m.entry(name.to_owned())
                .or_insert_with(|| Arc::new(own_limiter(config))),
        )
    }

    /// The pool under `name`, made by `make` when there is none yet.
    fn pool(
        &self,
        name: &str,
        make: impl FnOnce() -> Result<Arc<pool::Pool>, LlmError>,
    ) -> Result<Arc<pool::Pool>, LlmError> {
        let mut m = self.pools.lock().expect("pools lock");
        if let Some(p) = m.get(name) {
            return Ok(Arc::clone(p));
        }
        let p = make()?;
        m.insert(name.to_owned(), Arc::clone(&p));
        Ok(p)
    }
}

/// A limiter of `config`'s own limits.
fn own_limiter(config: &LlmConfig) -> limiter::Limiter {
    limiter::Limiter::new(config.concurrency, config.rpm, config.tpm)
}

/// Where a new layer's limiter comes from: its own, or a run's [`SharedLimits`] by name.
pub type LimitsOf<'a> = Option<(&'a SharedLimits, &'a str)>;

/// What a new layer shares with the one it is made from.
enum Shares<'a> {
    Nothing,
    /// Counters and budget (a reader).
    All(&'a Inner),
    /// The budget only (another named model).
    Budget(&'a Inner),
}

impl std::fmt::Debug for Llm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Llm")
            .field("backend", &self.inner.config.backend)
            .field("endpoint", &self.inner.endpoint)
            .field("model", &self.inner.config.model)
            .finish()
    }
}

impl Llm {
    /// Opens the cache (when configured) and prepares the backend.
    pub fn new(config: LlmConfig) -> Result<Self, LlmError> {
        Self::new_limited(config, None)
    }

    /// [`Llm::new`], with the limiter `limits` names (its own for `None`).
    pub fn new_limited(config: LlmConfig, limits: LimitsOf<'_>) -> Result<Self, LlmError> {
        // A dry run writes nothing: it reads an existing cache, and creates none.
        let cache = match (&config.cache_path, config.backend) {
            (Some(p), BackendKind::DryRun) => Cache::open_read_only(p)?,
            (Some(p), _) => Some(Cache::open(p)?),
            (None, _) => None,
        };
        Self::with_parts(config, cache, Shares::Nothing, limits)
    }

    /// Another model reached beside this one (the reader of a build's rows): `config` names
    /// its endpoint, model and price; its answers go to this layer's cache (the same file,
    /// the same writer) and its spending counts against this layer's budget (`--max-cost`,
    /// `--max-tokens`) and counters. Limits (concurrency, RPM, TPM) are its own.
    pub fn reader(&self, config: LlmConfig) -> Result<Self, LlmError> {
        self.reader_limited(config, None)
    }

    /// [`Llm::reader`], with the limiter `limits` names (its own for `None`).
    pub fn reader_limited(
        &self,
        mut config: LlmConfig,
        limits: LimitsOf<'_>,
    ) -> Result<Self, LlmError> {
        config.cache_path.clone_from(&self.inner.config.cache_path);
        config.max_cost_usd = self.inner.config.max_cost_usd;
        config.max_tokens = self.inner.config.max_tokens;
        let cache = self.inner.cache.clone();
        Self::with_parts(config, cache, Shares::All(&self.inner), limits)
    }

    /// Another named model of the same run: `config` names its endpoint, model, price,
    /// limits and transport; its answers go to the run's cache file (this layer's cache and
    /// writer when it has the same file) and its spending counts against this layer's
    /// budget (`--max-cost`, `--max-tokens` cover every model together), while its calls are
    /// counted apart ([`Llm::stats`]).
    pub fn sibling(&self, config: LlmConfig) -> Result<Self, LlmError> {
        self.sibling_limited(config, None)
    }

    /// [`Llm::sibling`], with the limiter `limits` names (its own for `None`).
    pub fn sibling_limited(
        &self,
        mut config: LlmConfig,
        limits: LimitsOf<'_>,
    ) -> Result<Self, LlmError> {
        config.max_cost_usd = self.inner.config.max_cost_usd;
        config.max_tokens = self.inner.config.max_tokens;
        let cache = match (&self.inner.cache, &config.cache_path) {
            (Some(c), Some(p)) if self.inner.config.cache_path.as_ref() == Some(p) => {
                Some(c.clone())
            }
            (_, Some(p)) if config.backend == BackendKind::DryRun => Cache::open_read_only(p)?,
            (_, Some(p)) => Some(Cache::open(p)?),
            (_, None) => None,
        };
        Self::with_parts(config, cache, Shares::Budget(&self.inner), limits)
    }

    fn with_parts(
        config: LlmConfig,
        cache: Option<Cache>,
        shares: Shares<'_>,
        limits: LimitsOf<'_>,
    ) -> Result<Self, LlmError> {
        if config.backend == BackendKind::Replay && cache.is_none() {
            return Err(LlmError::Config(
                "the replay backend needs a cache file".into(),
            ));
        }
        let route = Route::new(&config, cache.as_ref(), limits)?;
        let endpoint = match (config.backend, &config.transport) {
            (BackendKind::Offline, _) => "offline".to_string(),
            (_, Transport::Pool(p)) => format!("pool:{}", p.name),
            _ => endpoint_identity(&config.base_url),
        };
        Ok(Self {
            inner: Arc::new(Inner {
                limiter: match limits {
                    Some((shared, name)) => shared.limiter(name, &config),
                    None => Arc::new(own_limiter(&config)),
                },
                endpoint,
                cache,
                route,
                config,
                stats: match shares {
                    Shares::All(s) => Arc::clone(&s.stats),
                    _ => Arc::default(),
                },
                budget: match shares {
                    Shares::All(s) | Shares::Budget(s) => Arc::clone(&s.budget),
                    Shares::Nothing => Arc::default(),
                },
                form: Default::default(),
                dead: Default::default(),
            }),
        })
    }

    /// Stops the layer: every call not yet sent fails at once with `why` (as for an unusable
    /// endpoint), so a build being stopped sends nothing more while its tasks wind down.
    /// Answers already committed stay in the cache.
    pub fn stop(&self, why: &str) {
        let _ = self.inner.dead.set(why.to_owned());
    }

    pub fn config(&self) -> &LlmConfig {
        &self.inner.config
    }

    /// The endpoint identity that goes into cache keys (no credentials, no query).
    pub fn endpoint(&self) -> &str {
        &self.inner.endpoint
    }

    pub fn stats(&self) -> StatsSnapshot {
        self.inner.stats.snapshot()
    }

    /// How this run reached the model, for `runs.jsonl`: `online`, `batch` (with the batches
    /// submitted) or `pool` (with calls, answers, failures and pauses per endpoint).
    pub fn transport(&self) -> serde_json::Value {
        let inner = &self.inner;
        match &inner.route {
            Route::Pool(pool) => serde_json::json!({"mode": "pool", "endpoints": pool.report()}),
            Route::Files(rounds) => serde_json::json!({
                "mode": "files",
                "dir": rounds.transport.dir(),
                "files_written": inner.stats.batches.load(Ordering::Relaxed),
            }),
            Route::BatchApi(_) => serde_json::json!({
                "mode": "batch",
                "batches": inner.stats.batches.load(Ordering::Relaxed),
            }),
            _ => serde_json::json!({"mode": "online"}),
        }
    }

    /// The cache key this call would have, in the structured-output form known now.
    pub fn key_of(&self, call: &Call) -> String {
        self.key_as(call, self.form_now(&call.request))
    }

    fn key_as(&self, call: &Call, form: Form) -> String {
        cache_key_as(
            &self.inner.endpoint,
            &self.inner.config.model,
            &call.request,
            form,
        )
    }

    /// Answers one call. See the crate documentation for the order of things.
    pub async fn complete(&self, call: &Call) -> Result<Completion, LlmError> {
        let inner = &self.inner;
        inner.stats.calls.fetch_add(1, Ordering::Relaxed);
        if let Route::Offline = inner.route {
            // No cache, no structured-output form to find out: the step's own answer.
            return Ok(self.offline_answer(call));
        }
        loop {
            let form = self.form_for(&call.request).await?;
            let key = self.key_as(call, form);
            if let Some(hit) = self.cached(&key)? {
                return Ok(hit);
            }
            let result = match &inner.route {
                Route::Replay => Err(LlmError::ReplayMiss {
                    key,
                    template: call.template.clone(),
                    item: call.item.clone(),
                }),
                Route::DryRun => Ok(self.dry_run(call, key)),
                Route::Online(http) => self.upstream(http, call, key, form).await,
                Route::Pool(pool) => self.via_pool(pool, call, key, form).await,
                Route::BatchApi(r) => self.via_rounds(r, call, key, form).await,
                Route::Files(r) => self.via_rounds(r, call, key, form).await,
                Route::Offline => Ok(self.offline_answer(call)),
            };
            match (result, inner.config.structured) {
                (Err(LlmError::FormRefused(why)), Structured::Auto) => self.step_down(form, &why)?,
                (Err(LlmError::FormRefused(why)), Structured::Fixed(_)) => {
                    return Err(LlmError::FormRefused(format!(
                        "the endpoint {} refuses structured output as --structured {} ({why}); use --structured auto",
                        inner.endpoint,
                        form.name()
                    )))
                }
                (r, _) => return r,
            }
        }
    }

    /// The offline backend's answer: the one the step computed itself.
    fn offline_answer(&self, call: &Call) -> Completion {
        Completion {
            text: call.offline.clone(),
            finish_reason: "offline".into(),
            cache_key: self.key_of(call),
            prompt_tokens: 0,
            completion_tokens: 0,
            cached: false,
        }
    }

    fn cached(&self, key: &str) -> Result<Option<Completion>, LlmError> {
        let inner = &self.inner;
        let Some(hit) = inner
            .cache
            .as_ref()
            .map(|c| c.answer(key))
            .transpose()?
            .flatten()
        else {
            return Ok(None);
        };
        inner.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
        self.count_tokens(&hit);
        Ok(Some(hit.into_completion(key.to_owned(), true)))
    }

    /// Adds the tokens of an answer that cost nothing now (from the cache, or from a batch
    /// whose cost was counted when it was collected) to the build's totals; an online answer
    /// is counted by `Llm::account`.
    fn count_tokens(&self, answer: &CachedResponse) {
        let stats = &self.inner.stats;
        stats
            .prompt_tokens
            .fetch_add(answer.prompt_tokens, Ordering::Relaxed);
        stats
            .completion_tokens
            .fetch_add(answer.completion_tokens, Ordering::Relaxed);
    }

    /// Counts an upstream answer's cost and tokens in this layer's counters and the run's
    /// budget.
    pub(crate) fn spend(&self, micro_usd: u64, tokens: u64) {
        let (stats, budget) = (&self.inner.stats, &self.inner.budget);
        stats
            .spent_micro_usd
            .fetch_add(micro_usd, Ordering::Relaxed);
        stats.upstream_tokens.fetch_add(tokens, Ordering::Relaxed);
        budget
            .spent_micro_usd
            .fetch_add(micro_usd, Ordering::Relaxed);
        budget.tokens.fetch_add(tokens, Ordering::Relaxed);
    }

    fn dry_run(&self, call: &Call, key: String) -> Completion {
        let est = call.request.estimated_prompt_tokens() + request::estimate_tokens(&call.offline);
        let stats = &self.inner.stats;
        stats.upstream_calls.fetch_add(1, Ordering::Relaxed);
        stats.estimated_tokens.fetch_add(est, Ordering::Relaxed);
        Completion {
            text: call.offline.clone(),
            finish_reason: "dry-run".into(),
            cache_key: key,
            prompt_tokens: 0,
            completion_tokens: 0,
            cached: false,
        }
    }

    async fn upstream(
        &self,
        http: &http::OpenAiHttp,
        call: &Call,
        key: String,
        form: Form,
    ) -> Result<Completion, LlmError> {
        let inner = &self.inner;
        let _reservation = self.reserve_call(&call.request)?;
        let body = call.request.body_as(&inner.config.model, form);
        let parsed = self
            .send(http, &body, (&call.request, &call.item), form, false)
            .await?;
        self.commit(call, key, parsed, None).await
    }

    /// A budget that cannot pay for one call would stop every run before any progress: that
    /// is a configuration error, said before anything is reserved or sent.
    pub(crate) fn check_one_call(&self, micro_usd: u64, tokens: u64) -> Result<(), LlmError> {
        if self
            .inner
            .config
            .max_cost_usd
            .is_some_and(|max| micro_usd as f64 / 1e6 > max)
            || self.inner.config.max_tokens.is_some_and(|max| tokens > max)
        {
            return Err(LlmError::Config(format!(
                "the budget cannot pay for one call: the next call may use {tokens} tokens, about {:.6} USD (--max-tokens {}, --max-cost {}); raise the budget",
                micro_usd as f64 / 1e6,
                self.inner.config.max_tokens.map_or("none".into(), |t| t.to_string()),
                self.inner.config.max_cost_usd.map_or("none".into(), |c| c.to_string()),
            )));
        }
        Ok(())
    }

    /// Reserves the most one request may cost (its estimated prompt plus `max_tokens` of
    /// answer) against the budget.
    fn reserve_call(&self, request: &ChatRequest) -> Result<Reservation<'_>, LlmError> {
        let (cost, tokens) = self.most_of(request);
        self.check_one_call(cost, tokens)?;
        self.reserve(cost, tokens)
    }

    /// The most one call of `request` can cost, in micro-USD and tokens: the prompt's rough
    /// size and the whole `max_tokens`.
    fn most_of(&self, request: &ChatRequest) -> (u64, u64) {
        let (prompt, answer) = (
            request.estimated_prompt_tokens(),
            u64::from(request.max_tokens),
        );
        (
            self.inner.config.price.micro_usd(prompt, answer),
            prompt + answer,
        )
    }

    /// Reserves the estimate of one call against the budget, or says the budget is spent.
    fn reserve(&self, micro_usd: u64, tokens: u64) -> Result<Reservation<'_>, LlmError> {
        let inner = &self.inner;
        let budget = &inner.budget;
        let spent = budget.spent_micro_usd.load(Ordering::Relaxed);
        let reserved = budget
            .reserved_micro_usd
            .fetch_add(micro_usd, Ordering::SeqCst);
        let used_tokens = budget.tokens.load(Ordering::Relaxed);
        let reserved_tok = budget.reserved_tokens.fetch_add(tokens, Ordering::SeqCst);
        let r = Reservation {
            llm: inner,
            micro_usd,
            tokens,
        };
        if let Some(max) = inner.config.max_cost_usd {
            if (spent + reserved + micro_usd) as f64 / 1e6 > max {
                return Err(LlmError::Budget(format!("--max-cost {max} USD reached")));
            }
        }
        if let Some(max) = inner.config.max_tokens {
            if used_tokens + reserved_tok + tokens > max {
                return Err(LlmError::Budget(format!("--max-tokens {max} reached")));
            }
        }
        Ok(r)
    }
}

struct Reservation<'a> {
    llm: &'a Inner,
    micro_usd: u64,
    tokens: u64,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let budget = &self.llm.budget;
        budget
            .reserved_micro_usd
            .fetch_sub(self.micro_usd, Ordering::SeqCst);
        budget
            .reserved_tokens
            .fetch_sub(self.tokens, Ordering::SeqCst);
    }
}
