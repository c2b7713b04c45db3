//! The part of a layer its transports work on ([`Core`]): the configuration, cache,
//! limiter, counters, the run's budget and the structured-output form found out. The
//! transports (online, pool, Batch API and batch-file rounds) extend it with what they do;
//! the layer ([`crate::layer`]) owns one with the route that picks the transport, which no
//! transport sees.

use crate::budget::{Ask, Budget, Reservation};
use crate::cache::{Cache, CachedResponse};
use crate::config::LlmConfig;
use crate::error::LlmError;
use crate::form::{Form, FormState};
use crate::http::OpenAiHttp;
use crate::limiter::Limiter;
use crate::request::{self, cache_key_as, Call, ChatRequest, Completion};
use crate::stats::Stats;
use std::sync::atomic::{fence, AtomicUsize, Ordering};
use std::sync::Arc;

/// What the transports of a layer work on.
pub(crate) struct Core {
    pub(crate) config: LlmConfig,
    /// The endpoint identity in cache keys.
    pub(crate) endpoint: String,
    pub(crate) cache: Option<Cache>,
    /// Concurrency, RPM, TPM and pauses: its role's in the run's roster.
    pub(crate) limiter: Arc<Limiter>,
    /// This layer's own counters.
    pub(crate) stats: Arc<Stats>,
    /// The run's one budget, shared by every layer of its roster.
    pub(crate) budget: Arc<Budget>,
    /// The structured-output form found out (auto mode).
    pub(crate) form: Arc<FormState>,
    /// Set once the endpoint is known to be unusable, or the layer is stopped (a signal):
    /// every later call fails at once.
    pub(crate) dead: std::sync::OnceLock<String>,
    /// Whose calls these are (`kre-cose/writer`: a recipe and a role; empty for a layer of
    /// no recipe): the batch files it writes are recorded as its own.
    pub(crate) owner: String,
    /// The calls under way ([`crate::Llm::complete`] entered, not yet returned or dropped).
    pub(crate) under_way: UnderWay,
}

/// The calls of a layer under way: a stopped build waits until none is left
/// ([`crate::Roster::settled`]) before it records what its layers sent and spent, so that a
/// call its cancelled tasks were still running on another thread (past the stop flag, or
/// accounting an answer that came) is in the record.
#[derive(Default)]
pub(crate) struct UnderWay {
    calls: AtomicUsize,
    none_left: tokio::sync::Notify,
}

impl UnderWay {
    /// One call more, until the guard is dropped. The fence pairs with the one after a stop
    /// ([`crate::Llm::stop`]): a call entered after [`UnderWay::settled`] saw none left sees
    /// the stop flag.
    pub(crate) fn enter(&self) -> Entered<'_> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        Entered(self)
    }

    /// Returns once no call is under way.
    pub(crate) async fn settled(&self) {
        loop {
            let woken = self.none_left.notified();
            let mut woken = std::pin::pin!(woken);
            woken.as_mut().enable();
            if self.calls.load(Ordering::SeqCst) == 0 {
                return;
            }
            woken.await;
        }
    }
}

/// A call under way ([`UnderWay::enter`]).
pub(crate) struct Entered<'a>(&'a UnderWay);

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        if self.0.calls.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.none_left.notify_waiters();
        }
    }
}

impl Core {
    /// The endpoint identity that goes into cache keys (no credentials, no query).
    pub(crate) fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Why nothing more may be sent, if so: the layer was stopped ([`crate::Llm::stop`]: a
    /// signal, or its recipe ended by the budget or a failure) or its endpoint found unusable.
    /// Every transport asks before each request, upload, batch or file it would send or write.
    pub(crate) fn stopped(&self) -> Option<LlmError> {
        self.dead.get().map(|why| LlmError::Endpoint(why.clone()))
    }

    /// `Err` when the layer is stopped ([`Core::stopped`]).
    pub(crate) fn go_on(&self) -> Result<(), LlmError> {
        self.stopped().map_or(Ok(()), Err)
    }

    pub(crate) fn key_as(&self, call: &Call, form: Form) -> String {
        cache_key_as(&self.endpoint, &self.config.model, &call.request, form)
    }

    /// The cached answer of `call` under `key`, if any (with the top log-probabilities its
    /// stored body holds, when the call asks for them).
    pub(crate) fn cached(&self, call: &Call, key: &str) -> Result<Option<Completion>, LlmError> {
        let inner = self;
        let logprobs = call.request.top_logprobs.is_some();
        let Some(hit) = inner
            .cache
            .as_ref()
            .map(|c| {
                if logprobs {
                    c.answer_with_raw(key)
                } else {
                    c.answer(key)
                }
            })
            .transpose()?
            .flatten()
        else {
            return Ok(None);
        };
        inner.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
        self.count_tokens(&hit);
        Ok(Some(hit.into_completion(key.to_owned(), true, logprobs)))
    }

    /// Adds the tokens of an answer that cost nothing now (from the cache, or from a batch
    /// whose cost was counted when it was collected) to the build's totals; an online answer
    /// is counted by [`Core::account`].
    pub(crate) fn count_tokens(&self, answer: &CachedResponse) {
        let stats = &self.stats;
        stats
            .prompt_tokens
            .fetch_add(answer.prompt_tokens, Ordering::Relaxed);
        stats
            .completion_tokens
            .fetch_add(answer.completion_tokens, Ordering::Relaxed);
    }

    /// Counts an upstream answer's cost and tokens in this layer's counters and the run's
    /// budget ([`Budget::spend`]).
    pub(crate) fn spend(&self, micro_usd: u64, tokens: u64) {
        self.budget.spend(&self.stats, (micro_usd, tokens));
    }

    /// Counts what would go upstream, answering with the call's offline answer; a call the
    /// run's budget could not pay for even with nothing spent is refused as the build would
    /// refuse it (a configuration error).
    pub(crate) fn dry_run(&self, call: &Call, key: String) -> Result<Completion, LlmError> {
        self.budget.admit(Ask::Check(self.most_of(&call.request)))?;
        let est = call.request.estimated_prompt_tokens() + request::estimate_tokens(&call.offline);
        let stats = &self.stats;
        stats.upstream_calls.fetch_add(1, Ordering::Relaxed);
        stats.estimated_tokens.fetch_add(est, Ordering::Relaxed);
        Ok(Completion {
            text: call.offline.clone(),
            finish_reason: "dry-run".into(),
            cache_key: key,
            prompt_tokens: 0,
            completion_tokens: 0,
            cached: false,
            top_logprobs: None,
        })
    }

    pub(crate) async fn upstream(
        &self,
        http: &OpenAiHttp,
        call: &Call,
        key: String,
        form: Form,
    ) -> Result<Completion, LlmError> {
        let inner = self;
        let _reservation = self.reserve_call(&call.request)?;
        let body = call.request.body_as(&inner.config.model, form);
        let parsed = self
            .send(http, &body, (&call.request, &call.item), form, false)
            .await?;
        self.commit(call, key, parsed, None).await
    }

    /// Holds the most one request may cost (its estimated prompt plus `max_tokens` of
    /// answer) against the run's budget ([`Budget::admit`]).
    pub(crate) fn reserve_call(&self, request: &ChatRequest) -> Result<Reservation<'_>, LlmError> {
        Ok(self.budget.admit(Ask::Call(self.most_of(request)))?.held)
    }

    /// The most one call of `request` can cost, in micro-USD and tokens: the prompt's rough
    /// size and the whole `max_tokens`.
    pub(crate) fn most_of(&self, request: &ChatRequest) -> (u64, u64) {
        let (prompt, answer) = (
            request.estimated_prompt_tokens(),
            u64::from(request.max_tokens),
        );
        (self.config.price.micro_usd(prompt, answer), prompt + answer)
    }
}
