//! The LLM layer: every model call of a build goes through [`Llm::complete`].
//!
//! Order of a call: cache lookup (SQLite) -> budget check -> limiter (concurrency, RPM,
//! TPM, shared rate-limit pause) -> backend -> cache commit -> the caller. A response is
//! committed to the cache before the caller sees it, so a build killed at any moment never
//! pays for the same request twice.
//!
//! This is the only crate that knows HTTP and async-openai. Steps describe a call with
//! [`Call`] and get a [`Completion`] back; they never learn which backend answered.
//!
//! Modules, bottom up; each names only those before it, and each says what it holds in its
//! own docs:
//! - settings and rules: `rules` (the retried statuses, the `response_format` refusal, what
//!   an executor counts as unanswered and its output line, read from
//!   `scripts/executor-rules.json`, which `scripts/ray-batch.py` loads too), `base_url`,
//!   `form`, `limiter`, `pricing`, `ranges` (the range of every number a layer is configured
//!   with, to which flags, models and pool files and a recipe's sampling keys are held),
//!   `stats`;
//! - a call: `error`, `progress`, `request`, `lookup` (a call's lookups: one read
//!   transaction kept open while they hit, a miss asked again outside it);
//! - storage and configuration: `cache`, `stored` (a cache file read back for people: a
//!   stored call, usage per model, the latest answers; the viewer reads it), `config`
//!   (`LlmConfig` and each transport's options: plain data); then `batch_store`, `endpoint`,
//!   `http`, `limits`, `spool`, `budget` ([`Budget`]: the run's caps, holds and spend;
//!   `Budget::admit` alone decides whether a call, a probe, a dry run's call or a round's
//!   next file may go);
//! - the transports: `batch_api`; `layer_core` (what the transports work on: the
//!   configuration, cache, limiter, counters, the run's budget, the form found out);
//!   `structured`; `pool`, `rounds`, `send` (each extends `layer_core::Core`); `batch`,
//!   `batch_files`; `batch_run`;
//! - the layer and the roster: `layer` ([`Llm`]: a core and the route a cache miss takes,
//!   which no transport sees); `roster` ([`Roster`] makes every layer; `Llm::new` is a
//!   one-layer roster).
//!
//! This root only declares the modules and re-exports.

pub mod base_url;
mod batch;
mod batch_api;
pub mod batch_files;
mod batch_run;
mod batch_store;
mod budget;
mod cache;
mod config;
mod endpoint;
mod error;
mod form;
mod http;
mod layer;
mod layer_core;
mod limiter;
mod limits;
mod lookup;
mod pool;
pub mod pricing;
pub mod progress;
pub mod ranges;
mod request;
mod roster;
mod rounds;
mod rules;
mod send;
mod spool;
mod stats;
mod stored;
mod structured;

pub use batch::cancel_batch;
pub use batch_run::{run_dir, RunReport, Stop};
pub use batch_store::BatchRecord;
pub use budget::{Budget, BudgetFigures};
pub use cache::{Cache, CachedResponse};
pub use config::{
    ApiKey, BackendKind, BatchOptions, EndpointSpec, FilesOptions, LlmConfig, NamedBy, PoolConfig,
    Transport, BATCH_WINDOW,
};
pub use error::{is_transport_reason, LlmError};
pub use form::{Form, Structured};
pub use layer::Llm;
pub use limits::Limits;
pub use pricing::Price;
pub use progress::{NoProgress, Progress};
pub use request::{
    cache_key, cache_key_as, endpoint_identity, top_logprobs_in, top_logprobs_of, Call,
    ChatRequest, Completion, Message, TopLogprob, CACHE_FORMAT,
};
pub use roster::{Role, Roster};
pub use stats::{Stats, StatsSnapshot};
pub use stored::{ModelUsage, StoredAnswer, StoredCall};
