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
    cache_key, cache_key_as, endpoint_identity, Call, ChatRequest, Completion, Message,
    CACHE_FORMAT,
};
pub use roster::{Role, Roster};
pub use stats::{Stats, StatsSnapshot};
pub use stored::{ModelUsage, StoredAnswer, StoredCall};
