//! The part of a layer its transports work on ([`Core`]): the configuration, cache,
//! limiter, counters, the run's budget and the structured-output form found out. The
//! transports (online, pool, Batch API and batch-file rounds) extend it with what they do;
//! the layer ([`crate::layer`]) owns one with the route that picks the transport, which no
//! transport sees.

use crate::cache::{Cache, CachedResponse};
use crate::config::LlmConfig;
use crate::error::LlmError;
use crate::form::{Form, FormState};
use crate::http::OpenAiHttp;
use crate::limiter::Limiter;
use crate::request::{self, cache_key_as, Call, ChatRequest, Completion};
use crate::stats::Stats;
use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};
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

/// What the layers of one run spend together, against `--max-cost` and `--max-tokens`.
#[derive(Default)]
pub(crate) struct Budget {
    /// Cost of the upstream calls so far, in micro-dollars.
    pub(crate) spent_micro_usd: AtomicU64,
    /// Tokens of the upstream calls so far.
    pub(crate) tokens: AtomicU64,
    /// Estimated cost (micro-dollars) and tokens reserved by calls in flight.
    pub(crate) reserved_micro_usd: AtomicU64,
    pub(crate) reserved_tokens: AtomicU64,
    /// The reservations (micro-dollars, tokens) of the batch files this run wrote, by file
    /// id: part of `reserved_*` until the file is collected, as a file written may be
    /// answered and billed in full whatever the rest of the run does.
    pub(crate) files: std::sync::Mutex<std::collections::HashMap<String, (u64, u64)>>,
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

    pub(crate) fn cached(&self, key: &str) -> Result<Option<Completion>, LlmError> {
        let inner = self;
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
    /// budget.
    pub(crate) fn spend(&self, micro_usd: u64, tokens: u64) {
        let (stats, budget) = (&self.stats, &self.budget);
        stats
            .spent_micro_usd
            .fetch_add(micro_usd, Ordering::Relaxed);
        stats.upstream_tokens.fetch_add(tokens, Ordering::Relaxed);
        budget
            .spent_micro_usd
            .fetch_add(micro_usd, Ordering::Relaxed);
        budget.tokens.fetch_add(tokens, Ordering::Relaxed);
    }

    pub(crate) fn dry_run(&self, call: &Call, key: String) -> Completion {
        let est = call.request.estimated_prompt_tokens() + request::estimate_tokens(&call.offline);
        let stats = &self.stats;
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

    /// A budget that cannot pay for one call would stop every run before any progress: that
    /// is a configuration error, said before anything is reserved or sent.
    pub(crate) fn check_one_call(&self, micro_usd: u64, tokens: u64) -> Result<(), LlmError> {
        if self
            .config
            .max_cost_usd
            .is_some_and(|max| micro_usd as f64 / 1e6 > max)
            || self.config.max_tokens.is_some_and(|max| tokens > max)
        {
            return Err(LlmError::Config(format!(
                "the budget cannot pay for one call: the next call may use {tokens} tokens, about {:.6} USD (--max-tokens {}, --max-cost {}); raise the budget",
                micro_usd as f64 / 1e6,
                self.config.max_tokens.map_or("none".into(), |t| t.to_string()),
                self.config.max_cost_usd.map_or("none".into(), |c| c.to_string()),
            )));
        }
        Ok(())
    }

    /// Reserves the most one request may cost (its estimated prompt plus `max_tokens` of
    /// answer) against the budget.
    pub(crate) fn reserve_call(&self, request: &ChatRequest) -> Result<Reservation<'_>, LlmError> {
        let (cost, tokens) = self.most_of(request);
        self.check_one_call(cost, tokens)?;
        self.reserve(cost, tokens)
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

    /// Reserves the estimate of one call against the budget, or says the budget is spent.
    pub(crate) fn reserve(&self, micro_usd: u64, tokens: u64) -> Result<Reservation<'_>, LlmError> {
        let inner = self;
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

pub(crate) struct Reservation<'a> {
    pub(crate) llm: &'a Core,
    pub(crate) micro_usd: u64,
    pub(crate) tokens: u64,
}

impl Reservation<'_> {
    /// Keeps this reservation for the batch file `file_id` until [`Core::release_file`].
    pub(crate) fn hold_for(self, file_id: &str) {
        let held = (self.micro_usd, self.tokens);
        let files = &self.llm.budget.files;
        files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(file_id.to_owned(), held);
        std::mem::forget(self);
    }
}

impl Core {
    /// Holds `micro_usd` and `tokens` against the budget whatever is left, for a batch file
    /// an earlier run wrote, which may be answered and billed whatever this run does (see
    /// `batch_files`); gives nothing back until the file is collected.
    pub(crate) fn hold_written(&self, file_id: &str, (micro_usd, tokens): (u64, u64)) {
        let budget = &self.budget;
        if budget
            .files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains_key(file_id)
        {
            return;
        }
        budget
            .reserved_micro_usd
            .fetch_add(micro_usd, Ordering::SeqCst);
        budget.reserved_tokens.fetch_add(tokens, Ordering::SeqCst);
        Reservation {
            llm: self,
            micro_usd,
            tokens,
        }
        .hold_for(file_id);
    }

    /// Gives back the reservation a batch file of this run held ([`Reservation::hold_for`]),
    /// once it is collected; nothing for a file of an earlier run.
    pub(crate) fn release_file(&self, file_id: &str) {
        let budget = &self.budget;
        let held = budget
            .files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(file_id);
        if let Some((micro_usd, tokens)) = held {
            drop(Reservation {
                llm: self,
                micro_usd,
                tokens,
            });
        }
    }
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
