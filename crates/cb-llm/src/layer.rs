//! The layer ([`Llm`]): a [`Core`] and the [`Route`] a cache miss takes. [`Llm::complete`]
//! finds the structured-output form, asks the cache and hands a miss to the route's
//! transport; the transports work on the core alone, so none of them sees the route or the
//! layer.

use crate::batch;
use crate::batch_files;
use crate::budget::Budget;
use crate::cache::Cache;
use crate::config::{BackendKind, LlmConfig, Transport};
use crate::error::LlmError;
use crate::form::{FormState, Structured};
use crate::http;
use crate::layer_core::Core;
use crate::limiter::Limiter;
use crate::pool;
use crate::request::{endpoint_identity, Call, Completion};
use crate::rounds;
use crate::stats::StatsSnapshot;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The LLM layer. Cheap to share (`Arc` inside).
#[derive(Clone)]
pub struct Llm {
    core: Arc<Core>,
    /// `None`: the offline backend.
    route: Arc<Option<Route>>,
}

/// Where a cache miss goes: the running form of the configuration's [`Transport`], with
/// what each needs.
/// The offline backend has none: it answers every call with the call's own offline answer.
pub(crate) enum Route {
    /// Answers only from the cache.
    Replay,
    /// Counts what would go upstream.
    DryRun,
    /// One request to `base_url` per call.
    Online(Box<http::OpenAiHttp>),
    /// Shared by the layers of one role of a run's [`crate::Roster`].
    Pool(Arc<pool::Pool>),
    /// The Batch API: calls wait for a round.
    BatchApi(Arc<rounds::Rounds<batch::ApiRounds>>),
    /// Batch files: calls wait for a round.
    Files(Arc<rounds::Rounds<batch_files::FileRounds>>),
}

impl Route {
    /// The running form of `config`'s transport; each transport creates its tables in
    /// `cache`. A pool is the one given (the roster's, shared by the role's layers), else
    /// one of its own.
    pub(crate) fn new(
        config: &LlmConfig,
        cache: Option<&Cache>,
        pool: Option<Arc<pool::Pool>>,
    ) -> Result<Option<Self>, LlmError> {
        Ok(Some(match (config.backend, &config.transport) {
            (BackendKind::Offline, _) => return Ok(None),
            (BackendKind::Replay, _) => Route::Replay,
            (BackendKind::DryRun, _) => Route::DryRun,
            (BackendKind::Openai, Transport::Online) => {
                Route::Online(Box::new(http::OpenAiHttp::new(config)?))
            }
            (BackendKind::Openai, Transport::Pool(p)) => Route::Pool(match pool {
                Some(pool) => pool,
                None => Arc::new(pool::Pool::new(config, p, cache)?),
            }),
            (BackendKind::Openai, Transport::BatchApi(o)) => Route::BatchApi(rounds::Rounds::new(
                batch::ApiRounds::new(config, o, cache)?,
            )),
            (BackendKind::Openai, Transport::BatchFiles(o)) => {
                Route::Files(rounds::Rounds::new(batch_files::FileRounds::new(o, cache)?))
            }
        }))
    }
}

impl std::fmt::Debug for Llm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Llm")
            .field("backend", &self.core.config.backend)
            .field("endpoint", &self.core.endpoint)
            .field("model", &self.core.config.model)
            .finish()
    }
}

impl Llm {
    /// A layer of `config` on the parts its [`crate::Roster`] gives it.
    pub(crate) fn assemble(
        config: LlmConfig,
        cache: Option<Cache>,
        route: Option<Route>,
        (limiter, form): (Arc<Limiter>, Arc<FormState>),
        (budget, owner): (Arc<Budget>, String),
    ) -> Self {
        let endpoint = match (config.backend, &config.transport) {
            (BackendKind::Offline, _) => "offline".to_string(),
            (_, Transport::Pool(p)) => format!("pool:{}", p.name),
            _ => endpoint_identity(&config.base_url),
        };
        Self {
            core: Arc::new(Core {
                limiter,
                endpoint,
                cache,
                config,
                stats: Arc::default(),
                budget,
                form,
                dead: Default::default(),
                owner,
                under_way: Default::default(),
            }),
            route: Arc::new(route),
        }
    }

    /// Whether `other` is this very layer (a clone of it), not just one of the same model.
    pub fn same_layer(&self, other: &Llm) -> bool {
        Arc::ptr_eq(&self.core, &other.core)
    }

    /// Stops the layer: every call not yet sent fails at once with `why` (as for an unusable
    /// endpoint), so a build being stopped sends nothing more while its tasks wind down.
    /// Answers already committed stay in the cache.
    pub fn stop(&self, why: &str) {
        let _ = self.core.dead.set(why.to_owned());
        // Pairs with the fence of `UnderWay::enter`.
        std::sync::atomic::fence(Ordering::SeqCst);
    }

    /// Returns once no call of this layer is under way: each one sent was counted, and each
    /// answer that came was accounted and handed to the cache's writer. After a stop, with
    /// the tasks that made the calls cancelled, that is at once.
    pub async fn settled(&self) {
        self.core.under_way.settled().await;
    }

    pub fn config(&self) -> &LlmConfig {
        &self.core.config
    }

    /// The endpoint identity that goes into cache keys (no credentials, no query).
    pub fn endpoint(&self) -> &str {
        &self.core.endpoint
    }

    pub fn stats(&self) -> StatsSnapshot {
        self.core.stats.snapshot()
    }

    /// How this run reached the model, for `runs.jsonl`: `online`, `batch` (with the batches
    /// submitted) or `pool` (with calls, answers, failures and pauses per endpoint).
    pub fn transport(&self) -> serde_json::Value {
        let inner = &self.core;
        match self.route.as_ref() {
            Some(Route::Pool(pool)) => {
                serde_json::json!({"mode": "pool", "endpoints": pool.report()})
            }
            Some(Route::Files(rounds)) => serde_json::json!({
                "mode": "files",
                "dir": rounds.transport.dir(),
                "files_written": inner.stats.batches.load(Ordering::Relaxed),
            }),
            Some(Route::BatchApi(_)) => serde_json::json!({
                "mode": "batch",
                "batches": inner.stats.batches.load(Ordering::Relaxed),
            }),
            _ => serde_json::json!({"mode": "online"}),
        }
    }

    /// The input files of a batch folder (`--batch-dir`) this layer's calls waited on in
    /// this run, answered since or not; none for the other transports.
    pub fn waiting_files(&self) -> Vec<std::path::PathBuf> {
        match self.route.as_ref() {
            Some(Route::Files(rounds)) => rounds.transport.waits_on(),
            _ => Vec::new(),
        }
    }

    /// The cache key this call would have, in the structured-output form known now.
    pub fn key_of(&self, call: &Call) -> String {
        self.core.key_as(call, self.core.form_now(&call.request))
    }

    /// The form in use for schema calls: fixed, remembered, found out, or (replay and dry
    /// runs, which never probe) `json-schema` when nothing is remembered.
    pub fn structured_form(&self) -> Option<&'static str> {
        self.core.structured_form()
    }

    /// Answers one call. See the crate documentation for the order of things.
    pub async fn complete(&self, call: &Call) -> Result<Completion, LlmError> {
        let inner = &self.core;
        let _under_way = inner.under_way.enter();
        inner.stats.calls.fetch_add(1, Ordering::Relaxed);
        let Some(route) = self.route.as_ref() else {
            // No cache, no structured-output form to find out: the step's own answer.
            return Ok(self.offline_answer(call));
        };
        loop {
            let online = match route {
                Route::Online(http) => Some(&**http),
                _ => None,
            };
            let form = inner.form_for(&call.request, online).await?;
            let key = inner.key_as(call, form);
            if let Some(hit) = inner.cached(call, &key)? {
                return Ok(hit);
            }
            let result = match route {
                Route::Replay => Err(LlmError::ReplayMiss {
                    key,
                    template: call.template.clone(),
                    item: call.item.clone(),
                }),
                Route::DryRun => inner.dry_run(call, key),
                Route::Online(http) => inner.upstream(http, call, key, form).await,
                Route::Pool(pool) => inner.via_pool(pool, call, key, form).await,
                Route::BatchApi(r) => inner.via_rounds(r, call, key, form).await,
                Route::Files(r) => inner.via_rounds(r, call, key, form).await,
            };
            match (result, inner.config.structured) {
                (Err(LlmError::FormRefused(why)), Structured::Auto) => inner.step_down(form, &why)?,
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
            top_logprobs: None,
        }
    }
}
