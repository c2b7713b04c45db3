//! An endpoint pool: several OpenAI-compatible servers answering for the same model (a vLLM
//! fleet, or a provider plus a second one), each with its own concurrency, RPM and TPM.
//!
//! A call goes to the healthy replica with the most free capacity (free slots over its
//! concurrency), waiting when every replica is full. A replica that fails `open_after` calls
//! in a row (429, 5xx, timeouts, broken connections) is paused (circuit breaker open) and
//! its calls go to the others; after the pause one call probes it: success closes the
//! breaker, failure pauses it again for twice as long (up to a minute). A failed call is
//! retried on another replica at once when one is healthy, else after a backoff.
//!
//! The fatal-endpoint rule of single endpoints applies per replica: a replica answering
//! 401/403 (credentials) or 404 (model or path unknown) is dead for the rest of the run and
//! gets no more calls; a replica that cannot be connected to goes to the circuit breaker like
//! any failing one. Only when every replica is dead, or every attempt of a call found no
//! connection while every replica was dead or paused, is the pool unusable
//! ([`LlmError::Endpoint`]) and the build stops. A refusal of the structured-output form
//! comes back as [`LlmError::FormRefused`], which the caller steps down for the whole pool.
//!
//! The pool has one identity in the cache key (`pool:NAME`): which replica answered does not
//! change the key. The replica is recorded beside the answer (`replicas` table) and counted
//! per endpoint in the run's record.

use crate::cache::{Annex, Cache};
use crate::form::Form;
use crate::http::OpenAiHttp;
use crate::layer_core::Core;
use crate::limiter::{backoff, Limiter};
use crate::structured;
use crate::{endpoint, endpoint_identity, Call, Completion, LlmConfig, LlmError, PoolConfig};
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

#[derive(Default)]
struct Breaker {
    failures: u32,
    open_until: Option<Instant>,
    pause: Duration,
    probing: bool,
    /// Why the replica is unusable for the rest of the run (401/403/404).
    dead: Option<String>,
}

struct Replica {
    url: String,
    concurrency: usize,
    http: OpenAiHttp,
    limiter: Limiter,
    in_flight: AtomicU64,
    breaker: Mutex<Breaker>,
    calls: AtomicU64,
    answers: AtomicU64,
    failures: AtomicU64,
    paused: AtomicU64,
}

/// A pool at work: its replicas with their limits and breakers.
pub(crate) struct Pool {
    replicas: Vec<Replica>,
    open_after: u32,
    cooldown: Duration,
    freed: Notify,
}

impl Pool {
    /// The pool of `pool`'s endpoints, with `config`'s key and timeouts; its table is created
    /// in `cache`.
    pub(crate) fn new(
        config: &LlmConfig,
        pool: &PoolConfig,
        cache: Option<&Cache>,
    ) -> Result<Self, LlmError> {
        pool.validate().map_err(LlmError::Config)?;
        if let Some(c) = cache {
            c.create_tables(SCHEMA)?;
        }
        if pool.endpoints.is_empty() {
            return Err(LlmError::Config(
                "an endpoint pool needs at least one endpoint".into(),
            ));
        }
        let replicas = pool
            .endpoints
            .iter()
            .map(|e| {
                let mut c = config.clone();
                c.base_url = e.base_url.clone();
                Ok(Replica {
                    url: endpoint_identity(&e.base_url),
                    concurrency: e.concurrency.max(1),
                    http: OpenAiHttp::new(&c)?,
                    limiter: Limiter::new(e.concurrency.max(1), e.rpm, e.tpm),
                    in_flight: AtomicU64::new(0),
                    breaker: Mutex::new(Breaker::default()),
                    calls: AtomicU64::new(0),
                    answers: AtomicU64::new(0),
                    failures: AtomicU64::new(0),
                    paused: AtomicU64::new(0),
                })
            })
            .collect::<Result<_, LlmError>>()?;
        Ok(Self {
            replicas,
            open_after: pool.open_after.max(1),
            cooldown: pool.cooldown,
            freed: Notify::new(),
        })
    }

    /// Takes a slot on the replica with the most free capacity; waits while every replica is
    /// full or paused. `Err` with the reasons when every replica is dead.
    async fn pick(&self) -> Result<Slot<'_>, String> {
        loop {
            let notified = self.freed.notified();
            let now = Instant::now();
            let mut best: Option<(usize, f64)> = None;
            let mut dead = Vec::new();
            for (i, r) in self.replicas.iter().enumerate() {
                let b = r.breaker.lock().expect("breaker");
                if let Some(why) = &b.dead {
                    dead.push(why.clone());
                    continue;
                }
                let usable = match b.open_until {
                    None => true,
                    // Half open: one probe at a time.
                    Some(t) if t <= now && !b.probing => true,
                    _ => false,
                };
                let in_flight = r.in_flight.load(Ordering::Relaxed) as usize;
                if usable && in_flight < r.concurrency {
                    let free = (r.concurrency - in_flight) as f64 / r.concurrency as f64;
                    if best.is_none_or(|(_, f)| free > f) {
                        best = Some((i, free));
                    }
                }
                drop(b);
            }
            if let Some((i, _)) = best {
                let r = &self.replicas[i];
                let mut b = r.breaker.lock().expect("breaker");
                let probe = b.open_until.is_some();
                b.probing |= probe;
                r.in_flight.fetch_add(1, Ordering::Relaxed);
                return Ok(Slot {
                    pool: self,
                    index: i,
                    probe,
                });
            }
            if dead.len() == self.replicas.len() {
                return Err(dead.join("; "));
            }
            // Wait for a slot to free (a freed slot wakes one waiter, see `Slot`'s drop), or
            // for a pause to end.
            let _ = tokio::time::timeout(Duration::from_millis(50), notified).await;
        }
    }

    /// Whether no replica can take a call now: each is dead or paused.
    fn none_usable(&self) -> bool {
        let now = Instant::now();
        self.replicas.iter().all(|r| {
            let b = r.breaker.lock().expect("breaker");
            b.dead.is_some() || b.open_until.is_some_and(|t| t > now)
        })
    }

    /// Per endpoint: calls sent, answers, failures, pauses.
    pub(crate) fn report(&self) -> serde_json::Value {
        json!(self
            .replicas
            .iter()
            .map(|r| json!({
                "endpoint": r.url,
                "calls": r.calls.load(Ordering::Relaxed),
                "answers": r.answers.load(Ordering::Relaxed),
                "failures": r.failures.load(Ordering::Relaxed),
                "paused": r.paused.load(Ordering::Relaxed),
                "dead": r.breaker.lock().expect("breaker").dead.is_some(),
            }))
            .collect::<Vec<_>>())
    }
}

/// A call's slot on one replica, taken by [`Pool::pick`] and given back when it is dropped:
/// a call cancelled while it holds one (its future dropped by a recipe that stops, or that
/// gives up an item) leaves the pool whole for every other call of the run.
struct Slot<'p> {
    pool: &'p Pool,
    index: usize,
    /// This call probes a paused replica; a slot dropped without a verdict lets another call
    /// probe it.
    probe: bool,
}

impl<'p> Slot<'p> {
    fn replica(&self) -> &'p Replica {
        &self.pool.replicas[self.index]
    }

    /// Gives the slot back with a verdict on the replica's health: `fatal` (401/403/404) kills
    /// the replica; a retryable error counts towards its breaker.
    fn release(mut self, ok: Result<(), &LlmError>, fatal: Option<String>) {
        let r = self.replica();
        let mut b = r.breaker.lock().expect("breaker");
        // The verdict ends the probe, if this call was one; the drop frees the slot.
        let was_probe = std::mem::take(&mut b.probing);
        self.probe = false;
        if let Some(why) = fatal {
            r.failures.fetch_add(1, Ordering::Relaxed);
            tracing::error!(endpoint = %r.url, "{why}; the pool goes on without it");
            b.dead.get_or_insert(why);
            drop(b);
            // Every waiter looks again: the pool may have no live replica left.
            self.pool.freed.notify_waiters();
            return;
        }
        match ok {
            Ok(()) => {
                if b.open_until.is_some() {
                    tracing::info!(endpoint = %r.url, "endpoint is back; resuming it");
                }
                *b = Breaker::default();
            }
            Err(e) if e.is_retryable() => {
                r.failures.fetch_add(1, Ordering::Relaxed);
                b.failures += 1;
                if was_probe || (b.open_until.is_none() && b.failures >= self.pool.open_after) {
                    b.pause = if was_probe {
                        (b.pause * 2).min(Duration::from_secs(60))
                    } else {
                        self.pool.cooldown
                    };
                    b.open_until = Some(Instant::now() + b.pause);
                    r.paused.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(endpoint = %r.url, pause_ms = b.pause.as_millis() as u64, error = %e, "endpoint keeps failing; pausing it");
                }
            }
            // A 400-class answer says nothing about the endpoint's health.
            Err(_) => {}
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let r = self.replica();
        r.in_flight.fetch_sub(1, Ordering::Relaxed);
        if self.probe {
            r.breaker.lock().expect("breaker").probing = false;
        }
        // One slot was freed: one waiter can take it. Waking every waiter here made each
        // completion a scan by all of them (64 waiters at 1,280 calls/s in the pool bench).
        // A waiter woken for nothing waits again; a dropped one passes the wake-up on.
        self.pool.freed.notify_one();
    }
}

/// The pool's table in the cache file: which replica gave the answer under a key. Created
/// when a pool is set up on the cache.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS replicas (key TEXT PRIMARY KEY, replica TEXT NOT NULL);
";

/// Records which replica of a pool gave the answer under a key (first answer wins).
const INSERT_REPLICA: &str = "INSERT OR IGNORE INTO replicas (key, replica) VALUES (?1, ?2)";

/// The replica row of an answer, written in the transaction that commits it.
fn replica_annex(key: &str, replica: &str) -> Annex {
    let (key, replica) = (key.to_owned(), replica.to_owned());
    Box::new(move |tx| {
        tx.prepare_cached(INSERT_REPLICA)?
            .execute([&key, &replica])
            .map(|_| ())
    })
}

impl Cache {
    /// The replica that answered `key`, when a pool did.
    pub fn replica(&self, key: &str) -> Result<Option<String>, LlmError> {
        use rusqlite::OptionalExtension;
        if !self.has_table("replicas")? {
            return Ok(None);
        }
        Ok(self
            .conn()
            .query_row("SELECT replica FROM replicas WHERE key = ?1", [key], |r| {
                r.get(0)
            })
            .optional()?)
    }
}

/// What one try of a call on a replica came to, when it brought no answer.
enum Miss {
    /// The replica refused the structured-output form: the caller steps it down.
    FormRefused(LlmError),
    /// The replica is dead (401/403/404): another one takes the call.
    ReplicaDead,
    /// The layer was stopped while the call waited for the replica: nothing was sent.
    Stopped(LlmError),
    /// Any other failure, to retry or to end the call with.
    Failed(LlmError),
}

/// A call's tries so far on the pool.
#[derive(Clone, Copy)]
struct Tries {
    /// Retries made (the first try is not one).
    retries: u32,
    /// No try has reached a server yet.
    never_connected: bool,
}

impl Core {
    /// Answers a cache miss on `pool`, with the body of an online call in `form`.
    pub(crate) async fn via_pool(
        &self,
        pool: &Pool,
        call: &Call,
        key: String,
        form: Form,
    ) -> Result<Completion, LlmError> {
        let inner = self;
        let reservation = self.reserve_call(&call.request)?;
        let body = call.request.body_as(&inner.config.model, form);
        let mut tries = Tries {
            retries: 0,
            never_connected: true,
        };
        loop {
            if let Some(e) = inner.stopped() {
                return Err(e);
            }
            let slot = pool.pick().await.map_err(|why| {
                inner.stats.failures.fetch_add(1, Ordering::Relaxed);
                self.endpoint_down(format!(
                    "every endpoint of {} is unusable: {why}",
                    inner.endpoint
                ))
            })?;
            let url = &slot.replica().url;
            let e = match self
                .try_replica(slot, &body, reservation.tokens, form)
                .await
            {
                Ok(mut parsed) => {
                    self.account(&call.request, &mut parsed);
                    let annex = replica_annex(&key, url);
                    return self.commit(call, key, parsed, Some(annex)).await;
                }
                Err(Miss::FormRefused(e) | Miss::Stopped(e)) => return Err(e),
                // Another replica takes it; `pick` says when none is left.
                Err(Miss::ReplicaDead) => continue,
                Err(Miss::Failed(e)) => e,
            };
            tries.never_connected &= matches!(e, LlmError::Connect(_));
            if e.is_retryable() && tries.retries < inner.config.max_retries {
                tries.retries += 1;
                inner.stats.retries.fetch_add(1, Ordering::Relaxed);
                // Another replica takes it at once; a lone replica is given a backoff.
                if pool.replicas.len() == 1 {
                    let wait = backoff(
                        tries.retries,
                        inner.config.backoff_base,
                        inner.config.backoff_max,
                    );
                    tokio::time::sleep(wait).await;
                }
                tracing::debug!(item = %call.item, attempt = tries.retries, error = %e, "retrying on the pool");
                continue;
            }
            return Err(self.pool_failure(pool, e, tries));
        }
    }

    /// Sends `body` once to the replica of `slot` (taken by `pick`) and releases the slot,
    /// telling the breaker how it went.
    async fn try_replica(
        &self,
        slot: Slot<'_>,
        body: &serde_json::Value,
        est_tokens: u64,
        form: Form,
    ) -> Result<crate::http::Parsed, Miss> {
        let inner = self;
        let api_key = inner.config.api_key.expose();
        let r = slot.replica();
        let permit = r.limiter.acquire(est_tokens).await;
        // A stop while the call waited for a replica (its slot, its limits) sends nothing; the
        // slot goes back as it drops, without a verdict on the replica's health.
        if let Some(e) = inner.stopped() {
            return Err(Miss::Stopped(e));
        }
        r.calls.fetch_add(1, Ordering::Relaxed);
        inner.stats.upstream_calls.fetch_add(1, Ordering::Relaxed);
        let result = r.http.send(body, inner.config.request_timeout).await;
        drop(permit);
        let fatal = result.as_ref().err().and_then(|e| {
            let named_by = &inner.config.named_by;
            endpoint::fatal_status(e, (&r.url, &inner.config.model), named_by, api_key)
        });
        let refused = result
            .as_ref()
            .is_err_and(|e| form != Form::Off && structured::refuses_form(e, false));
        // A refused form says nothing about the replica's health.
        let health = match &result {
            Err(e) if !refused => Err(e),
            _ => Ok(()),
        };
        slot.release(health, fatal.clone());
        let e = match result {
            Ok(parsed) => {
                r.answers.fetch_add(1, Ordering::Relaxed);
                return Ok(parsed);
            }
            Err(e) => e,
        };
        if let (true, LlmError::Status { status, body, .. }) = (refused, &e) {
            let said = endpoint::short(body, api_key);
            return Err(Miss::FormRefused(LlmError::FormRefused(format!(
                "HTTP {status}: {said}"
            ))));
        }
        Err(if fatal.is_some() {
            Miss::ReplicaDead
        } else {
            Miss::Failed(e)
        })
    }

    /// The error a call on the pool ends with after its last try failed with `e`: the pool
    /// unusable when no try ever connected and no replica can take a call, else the retries
    /// exhausted (a retryable error) or `e` itself.
    fn pool_failure(&self, pool: &Pool, e: LlmError, tries: Tries) -> LlmError {
        let inner = self;
        inner.stats.failures.fetch_add(1, Ordering::Relaxed);
        let attempts = tries.retries + 1;
        if tries.never_connected && pool.none_usable() {
            return self.endpoint_down(format!(
                "no endpoint of {} can be reached ({e}, {attempts} attempts); check that the servers are running",
                inner.endpoint
            ));
        }
        if e.is_retryable() {
            LlmError::Exhausted {
                attempts,
                last: Box::new(e),
            }
        } else {
            e
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EndpointSpec;

    /// A pool of one replica (never reached) at `concurrency`.
    fn pool(concurrency: usize) -> Pool {
        let config = PoolConfig {
            name: "p".into(),
            endpoints: vec![EndpointSpec {
                base_url: "http://127.0.0.1:9/v1".into(),
                concurrency,
                rpm: None,
                tpm: None,
            }],
            open_after: 1,
            cooldown: Duration::from_secs(1),
        };
        Pool::new(&LlmConfig::offline(), &config, None).unwrap()
    }

    /// Takes a slot of `pool` and is cancelled (dropped) while it holds it.
    async fn cancelled_in_a_slot(pool: &Pool) {
        let held = tokio::time::timeout(Duration::from_millis(1), async {
            let _slot = pool.pick().await.unwrap();
            std::future::pending::<()>().await
        });
        assert!(held.await.is_err());
    }

    #[tokio::test]
    async fn a_slot_dropped_without_a_verdict_is_free_again() {
        let pool = pool(2);
        cancelled_in_a_slot(&pool).await;
        cancelled_in_a_slot(&pool).await;
        let r = &pool.replicas[0];
        assert_eq!(r.in_flight.load(Ordering::Relaxed), 0);
        let (a, b) = (pool.pick().await.unwrap(), pool.pick().await.unwrap());
        assert_eq!(r.in_flight.load(Ordering::Relaxed), 2);
        drop((a, b));
        assert_eq!(r.in_flight.load(Ordering::Relaxed), 0);
    }

    #[tokio::test]
    async fn a_probe_dropped_without_a_verdict_lets_another_call_probe() {
        let pool = pool(1);
        let r = &pool.replicas[0];
        // Paused, and the pause is over: the next call probes the replica.
        *r.breaker.lock().unwrap() = Breaker {
            open_until: Some(Instant::now()),
            pause: Duration::from_secs(1),
            ..Breaker::default()
        };
        cancelled_in_a_slot(&pool).await;
        assert!(!r.breaker.lock().unwrap().probing);
        let probe = pool.pick().await.unwrap();
        assert!(probe.probe);
        // A failed probe pauses the replica again.
        probe.release(Err(&LlmError::Timeout(Duration::from_secs(1))), None);
        let b = r.breaker.lock().unwrap();
        assert!(!b.probing && b.open_until.is_some_and(|t| t > Instant::now()));
        assert_eq!(r.in_flight.load(Ordering::Relaxed), 0);
    }
}
