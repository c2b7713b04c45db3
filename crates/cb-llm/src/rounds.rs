//! Rounds: how calls wait for the Batch API (`batch`) and for batch files (`batch_files`).
//!
//! On a cache miss the call is queued and its caller waits. A driver task (one at a time,
//! started by the first call queued) waits until no call has arrived for a quiet period
//! (every item of the step is then waiting on it) and hands everything queued to its
//! transport as one round ([`Round::run`]); the transport gives back an answer or an error
//! for every key. Each waiting caller then gets its answer, or its error: a retryable one
//! (expiry, 5xx, 429, a refused line) puts the call in the next round while the collected
//! files that held it (the journal's count, earlier runs included) number at most
//! `max_retries`; others become rejects.
//!
//! A round holds at most the calls of the build's window of items (`--batch-window`, the
//! engine's `LlmConfig::items_in_flight`); what it learns of requests it did not take (the
//! error lines of a file written for an earlier window) is kept for when their calls come.
//!
//! The caller then goes on exactly as with a cache hit: validation, a second attempt (which
//! joins the next round), rejects. What both transports share is here too: the input file
//! of a chunk of requests with its budget reservation, the check of result lines against
//! their requests ([`Core::check_results`]), and the commit of a collected file.

use crate::batch_api::{input_line, parse_results};
use crate::budget::{Ask, Cost, Reservation};
use crate::cache::{Cache, CachedResponse};
use crate::form::Form;
use crate::layer_core::Core;
use crate::spool::{Spool, Spooled};
use crate::structured;
use crate::{Call, ChatRequest, Completion, LlmError};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

pub(crate) type Answer = Result<CachedResponse, LlmError>;

/// A transport whose calls wait for rounds.
pub(crate) trait Round: Send + Sync + 'static {
    /// A round starts when no call has been queued for this long.
    fn quiet(&self) -> Duration;

    /// One round over the calls `taken` (their requests are in `spool`): each answer is
    /// handed to its callers as soon as it is committed ([`RoundCalls::answer`]); returns the
    /// errors of the calls that got none (a call with neither is missing from the results).
    /// An `Err` ends every call of the round with it (a fatal one stops the build).
    fn run<'a>(
        &'a self,
        llm: &'a Core,
        taken: &'a RoundCalls,
        spool: &'a Spool,
    ) -> impl Future<Output = Result<HashMap<String, LlmError>, LlmError>> + Send + 'a;
}

/// The calls of one round: where their requests are and what they may cost, and the callers
/// still waiting, who get an answer as soon as it is committed, so a round never holds its
/// answers (issue 29, item 5).
pub(crate) struct RoundCalls {
    calls: HashMap<String, Waiting>,
    callers: Mutex<HashMap<String, Vec<oneshot::Sender<Answer>>>>,
}

impl RoundCalls {
    fn new(mut calls: HashMap<String, Waiting>) -> Self {
        let callers = calls
            .iter_mut()
            .map(|(k, w)| (k.clone(), std::mem::take(&mut w.waiters)))
            .collect();
        Self {
            calls,
            callers: Mutex::new(callers),
        }
    }

    pub(crate) fn keys(&self) -> impl Iterator<Item = &String> {
        self.calls.keys()
    }

    /// Whether the callers of `key` still wait for an answer.
    pub(crate) fn waiting(&self, key: &str) -> bool {
        self.callers
            .lock()
            .expect("round callers")
            .contains_key(key)
    }

    /// Hands a committed answer to the callers of `key`, if any still wait for it.
    pub(crate) fn answer(&self, key: &str, answer: &CachedResponse) {
        let waiting = self.callers.lock().expect("round callers").remove(key);
        for t in waiting.into_iter().flatten() {
            let _ = t.send(Ok(answer.clone()));
        }
    }
}

impl std::ops::Index<&str> for RoundCalls {
    type Output = Waiting;
    fn index(&self, key: &str) -> &Waiting {
        &self.calls[key]
    }
}

/// A round's next input file as the budget let it go ([`Core::next_file`]): its calls (keys),
/// their estimate in USD and what they hold against the budget.
pub(crate) struct NextFile<'k, 'b> {
    pub(crate) calls: Vec<&'k str>,
    pub(crate) est_usd: f64,
    pub(crate) held: Reservation<'b>,
}

/// A call waiting for its round. Its request (the input line, `custom_id` = key, the exact
/// online body, and its journal row) is in the spool, not here.
pub(crate) struct Waiting {
    /// The item it is for (logs).
    item: String,
    pub(crate) spooled: Spooled,
    /// The most it can cost, in micro-USD and tokens (its prompt and all of `max_tokens`).
    cost: Cost,
    waiters: Vec<oneshot::Sender<Answer>>,
    rounds: u32,
}

#[derive(Default)]
struct Queue {
    pending: HashMap<String, Waiting>,
    arrivals: u64,
    driving: bool,
}

/// A transport in rounds with the calls waiting for its next round.
pub(crate) struct Rounds<R> {
    queue: Mutex<Queue>,
    /// What a round learnt of requests it did not take: the error lines of an imported file
    /// or a resumed batch for calls of items not yet in the window (a round takes only the
    /// window's calls, a file holds those of earlier windows too). Such a call, when its item
    /// comes, ends (or goes to the next round) with its error, as if it had been in that
    /// round; its answers are in the cache already.
    errors_ahead: Mutex<HashMap<String, LlmError>>,
    /// The requests of the waiting calls.
    spool: Spool,
    pub(crate) transport: R,
}

impl<R: Round> Rounds<R> {
    pub(crate) fn new(transport: R) -> Arc<Self> {
        Arc::new(Self {
            queue: Mutex::default(),
            errors_ahead: Mutex::default(),
            spool: Spool::new(),
            transport,
        })
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().expect("batch queue")
    }

    /// Waits for a quiet period and takes every call queued; `None` (and the driver stops)
    /// when none is.
    async fn next_round(&self) -> Option<HashMap<String, Waiting>> {
        loop {
            let before = self.queue().arrivals;
            tokio::time::sleep(self.transport.quiet()).await;
            let mut q = self.queue();
            if q.arrivals == before {
                if q.pending.is_empty() {
                    q.driving = false;
                    return None;
                }
                return Some(std::mem::take(&mut q.pending));
            }
        }
    }

    /// Keeps the errors a round got for requests it did not take, for when their calls come.
    fn keep_errors_ahead(&self, errors: HashMap<String, LlmError>) {
        if !errors.is_empty() {
            self.errors_ahead
                .lock()
                .expect("errors ahead")
                .extend(errors);
        }
    }

    /// The error a round got for `key` before its call came, if any (once).
    fn error_ahead(&self, key: &str) -> Option<LlmError> {
        self.errors_ahead.lock().expect("errors ahead").remove(key)
    }

    /// Puts calls back in the queue for the next round.
    fn requeue(&self, again: Vec<(String, Waiting)>) {
        let mut q = self.queue();
        for (key, w) in again {
            q.arrivals += 1;
            match q.pending.get_mut(&key) {
                Some(p) => p.waiters.extend(w.waiters),
                None => {
                    q.pending.insert(key, w);
                }
            }
        }
    }
}

/// Held by a round's driver while it runs: when it ends before the queue said it may (the
/// queue still marked `driving`), the calls queued are dropped (each caller gets
/// [`LlmError::Lost`]) and the queue unmarked, so the next call starts a new driver. Its
/// second field is set when the driver ended as the queue said.
struct DriverEnded<'a, R>(&'a Rounds<R>, bool);

impl<R> Drop for DriverEnded<'_, R> {
    fn drop(&mut self) {
        if self.1 {
            // Ended as the queue said (another driver may run already).
            return;
        }
        let mut q = self
            .0
            .queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if q.driving {
            q.driving = false;
            q.pending.clear();
        }
    }
}

impl Core {
    /// Queues a call that missed the cache and waits for its round.
    /// `key` and the body in the input line are the ones an online call in `form` would use.
    pub(crate) async fn via_rounds<R: Round>(
        self: &Arc<Self>,
        rounds: &Arc<Rounds<R>>,
        call: &Call,
        key: String,
        form: Form,
    ) -> Result<Completion, LlmError> {
        if let Some(e) = rounds.error_ahead(&key) {
            // Answered with an error in a file of an earlier window: as if it had waited in
            // that round (a retry goes into the next one).
            if let Some(e) = self.retry_or_end(&key, (&call.item, &mut 0), e) {
                return Err(e);
            }
        }
        let (tx, rx) = oneshot::channel();
        let start_driver = {
            let mut q = rounds.queue();
            q.arrivals += 1;
            let waiting = match q.pending.entry(key.clone()) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    let body = call.request.body_as(&self.config.model, form);
                    let spooled = rounds.spool.push(&key, &input_line(&key, &body), call)?;
                    e.insert(Waiting {
                        item: call.item.clone(),
                        spooled,
                        cost: self.most_of(&call.request),
                        waiters: Vec::new(),
                        rounds: 0,
                    })
                }
            };
            waiting.waiters.push(tx);
            !std::mem::replace(&mut q.driving, true)
        };
        if start_driver {
            let (llm, rounds) = (Arc::clone(self), Arc::clone(rounds));
            tokio::spawn(async move { llm.drive(&rounds).await });
        }
        let answer = rx.await.map_err(|_| {
            LlmError::Lost(format!(
                "the batch driver of {} ended before answering item {}",
                self.endpoint(),
                call.item
            ))
        })??;
        self.count_tokens(&answer);
        let logprobs = call.request.top_logprobs.is_some();
        Ok(answer.into_completion(key, false, logprobs))
    }

    /// Runs rounds while calls are queued; ends when the queue stays empty.
    async fn drive<R: Round>(&self, rounds: &Rounds<R>) {
        // A driver that ends any other way (a panic, its task dropped) says so to every call
        // queued and lets the next call start a driver: else those calls wait forever.
        let mut ended = DriverEnded(rounds, false);
        while let Some(mut pending) = rounds.next_round().await {
            // Calls whose callers are all gone (their items cancelled: the recipe stopped)
            // are sent nowhere.
            pending.retain(|_, w| w.waiters.iter().any(|t| !t.is_closed()));
            self.end_errors_ahead(rounds, &mut pending);
            if pending.is_empty() {
                continue;
            }
            tracing::info!(requests = pending.len(), "batch round");
            let taken = RoundCalls::new(pending);
            // A stopped layer (a signal, the budget) starts no round: nothing more is
            // uploaded, submitted or written.
            let ran = match self.stopped() {
                Some(e) => Err(e),
                None => rounds.transport.run(self, &taken, &rounds.spool).await,
            };
            let mut errors = match ran {
                Ok(e) => e,
                Err(e) => {
                    // Credentials refused, path unknown or no connection at all: the endpoint
                    // is unusable, as for online calls, and the build stops.
                    let e = self.fatal_batch_error(e);
                    taken.keys().map(|k| (k.clone(), e.clone())).collect()
                }
            };
            rounds.requeue(self.settle(taken, &mut errors));
            rounds.keep_errors_ahead(errors);
        }
        ended.1 = true;
    }

    /// Calls queued while an earlier round learnt their error (from a file of an earlier
    /// window): each ends with it, or stays for this round as a retry.
    fn end_errors_ahead<R: Round>(
        &self,
        rounds: &Rounds<R>,
        pending: &mut HashMap<String, Waiting>,
    ) {
        let ahead: Vec<(String, LlmError)> = {
            let mut ahead = rounds.errors_ahead.lock().expect("errors ahead");
            if ahead.is_empty() {
                return;
            }
            pending
                .keys()
                .filter_map(|k| ahead.remove(k).map(|e| (k.clone(), e)))
                .collect()
        };
        for (key, e) in ahead {
            let Some(mut w) = pending.remove(&key) else {
                continue;
            };
            match self.retry_or_end(&key, (&w.item, &mut w.rounds), e) {
                Some(e) => {
                    for t in w.waiters {
                        let _ = t.send(Err(e.clone()));
                    }
                }
                None => {
                    pending.insert(key, w);
                }
            }
        }
    }

    /// Hands each caller of the round still waiting its error (taken out of `errors`, which
    /// keeps those of requests the round did not take), or puts its call in the next round;
    /// returns those calls.
    fn settle(
        &self,
        taken: RoundCalls,
        errors: &mut HashMap<String, LlmError>,
    ) -> Vec<(String, Waiting)> {
        let mut callers = taken.callers.into_inner().expect("round callers");
        let mut again = Vec::new();
        for (key, mut w) in taken.calls {
            let e = errors.remove(&key);
            // Answered during the round.
            let Some(waiters) = callers.remove(&key) else {
                continue;
            };
            let e = e.unwrap_or_else(|| LlmError::Batch {
                code: "batch_missing".into(),
                message: "no answer for this request".into(),
            });
            match self.retry_or_end(&key, (&w.item, &mut w.rounds), e) {
                Some(e) => {
                    for t in waiters {
                        let _ = t.send(Err(e.clone()));
                    }
                }
                None => {
                    w.waiters = waiters;
                    again.push((key, w));
                }
            }
        }
        again
    }

    /// What becomes of a call (for `item`, through `rounds` rounds so far in this run) whose
    /// round ended in `e`: `None` when it goes to the next round (counted as a retry), else the
    /// error its callers get.
    fn retry_or_end(
        &self,
        key: &str,
        (item, rounds): (&str, &mut u32),
        e: LlmError,
    ) -> Option<LlmError> {
        let stats = &self.stats;
        match e {
            // Not an attempt that counts: the build stops until the files are answered, or
            // the caller steps the form down and asks again.
            e @ LlmError::Waiting(_) => Some(e),
            e @ LlmError::FormRefused(_) => {
                stats.failures.fetch_add(1, Ordering::Relaxed);
                Some(e)
            }
            e => {
                let attempts = self.attempts(key, *rounds);
                if e.is_retryable() && attempts <= self.config.max_retries {
                    *rounds += 1;
                    stats.retries.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(item = %item, attempts, error = %e, "batch request goes to the next round");
                    return None;
                }
                stats.failures.fetch_add(1, Ordering::Relaxed);
                // As an online call ends: a retryable error, or one after retries, is the
                // retries exhausted (`retries_exhausted_<reason>`).
                Some(if e.is_retryable() || attempts > 1 {
                    LlmError::Exhausted {
                        attempts,
                        last: Box::new(e),
                    }
                } else {
                    e
                })
            }
        }
    }

    /// The requests sent for `key` so far, this one included: the collected files of the
    /// journal that held it (earlier runs' too, so a killed or waiting build keeps counting),
    /// at least the `rounds` this run has been through.
    fn attempts(&self, key: &str, rounds: u32) -> u32 {
        let journal = self.cache.as_ref().map_or(Ok(0), |c| c.attempts(key));
        journal
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, "cannot count a request's earlier batches");
                0
            })
            .max(rounds + 1)
    }

    /// The next input file of a round, of the chunks `pending` (the last one first) its
    /// transport would write, once the run's budget lets it go ([`Budget::admit`] asked
    /// [`Ask::File`]): the first calls of the chunk what is left pays for (a file larger is
    /// cut there, and the rest is refused at its turn, a budget stop, and waits for a later
    /// run), their estimate in USD, and what they hold until it is dropped or kept for the
    /// file ([`Reservation::hold_for`]). `None` once every chunk is written; `Err` for a
    /// stopped layer ([`Core::stopped`]) or a budget that says no.
    ///
    /// [`Budget::admit`]: crate::budget::Budget::admit
    pub(crate) fn next_file<'k>(
        &self,
        pending: &mut Vec<Vec<&'k str>>,
        taken: &RoundCalls,
    ) -> Result<Option<NextFile<'k, '_>>, LlmError> {
        let Some(mut chunk) = pending.pop() else {
            return Ok(None);
        };
        self.go_on()?;
        let costs: Vec<Cost> = chunk.iter().map(|k| taken[*k].cost).collect();
        let file = self.budget.admit(Ask::File(&costs))?;
        let rest = chunk.split_off(file.calls);
        if !rest.is_empty() {
            pending.push(rest);
        }
        let micro: u64 = costs[..file.calls].iter().map(|c| c.0).sum();
        Ok(Some(NextFile {
            calls: chunk,
            est_usd: micro as f64 / 1e6,
            held: file.held,
        }))
    }

    /// Checks the lines of one output or error file (`source` names it in messages) against
    /// the requests of its input file (`keys`, named `input`; `estimate` gives a request's
    /// prompt size for an answer without usage), into `into`. Refused, each
    /// reported as `SOURCE:LINE: why` and never cached: a line that is not JSON or has no
    /// `custom_id`, one naming a request the file does not hold (its request is asked again,
    /// as any request left without an answer), one naming a request answered on an earlier
    /// line (that answer is kept), one answered by another model, and a 200 body that is not
    /// a completion (its request is asked again).
    pub(crate) fn check_results(
        &self,
        lines: impl std::io::BufRead,
        (source, input): (&str, &str),
        (keys, estimate): (&HashSet<String>, impl Fn(&str) -> u64),
        into: &mut Checked,
    ) {
        let asked = &self.config.model;
        // The line that first spoke of each request.
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut refuse = |n: usize, why: String| {
            tracing::warn!("{source}:{n}: {why}");
            into.refused.push(format!("{source}:{n}: {why}"));
        };
        // Lines that carry an error, by reason, and the first of them: said once.
        let mut error_lines: BTreeMap<String, usize> = BTreeMap::new();
        let mut first_error = None;
        for line in parse_results(lines, estimate) {
            let line = match line {
                Ok(l) => l,
                Err((n, why)) => {
                    refuse(n, format!("{why}; its request is asked again"));
                    continue;
                }
            };
            let n = line.line;
            let Some(key) = keys.get(&line.custom_id) else {
                refuse(
                    n,
                    format!("custom_id {} is not a request of {input}", line.custom_id),
                );
                continue;
            };
            if let Some(&first) = seen.get(&line.custom_id) {
                refuse(
                    n,
                    format!(
                        "custom_id {} is answered twice; line {first} answered it first and that answer stands",
                        line.custom_id
                    ),
                );
                continue;
            }
            seen.insert(line.custom_id.clone(), n);
            let error = match line.outcome {
                Ok(_) if line.model.as_deref().is_some_and(|m| !same_model(m, asked)) => {
                    let why = format!(
                        "answered by model {}, {asked} was asked",
                        line.model.unwrap_or_default()
                    );
                    refuse(n, format!("{why}; its request is asked again"));
                    LlmError::Batch {
                        code: "wrong_model".into(),
                        message: format!("{source}:{n}: {why}"),
                    }
                }
                Ok(answer) => {
                    into.answers.push((key.clone(), answer));
                    continue;
                }
                Err(e @ LlmError::Malformed { .. }) => {
                    refuse(n, format!("not an answer: {e}; its request is asked again"));
                    e
                }
                Err(e) => {
                    *error_lines.entry(e.reason_code()).or_default() += 1;
                    first_error.get_or_insert_with(|| format!("{source}:{n}: {e}"));
                    self.result_error(e)
                }
            };
            into.errors.insert(key.clone(), error);
        }
        if let Some(first) = first_error {
            tracing::warn!(by_reason = ?error_lines, "requests answered with errors; the first: {first}");
        }
    }

    /// A result line's error as the caller gets it: a refusal of this `response_format`
    /// becomes [`LlmError::FormRefused`], so the caller steps the form down and asks again in
    /// the next round, as after an online refusal.
    fn result_error(&self, e: LlmError) -> LlmError {
        if !structured::refuses_form(&e, false) {
            return e;
        }
        let LlmError::Status { status, body, .. } = &e else {
            unreachable!("refusals are statuses")
        };
        let said = crate::endpoint::short(body, self.config.api_key.expose());
        LlmError::FormRefused(format!("HTTP {status} in a batch result: {said}"))
    }

    /// Commits a collected file's answers to the cache with the file marked collected (one
    /// transaction), counts them as this layer's calls and spending (unless another layer
    /// of the run collected the file first), and hands them to their callers.
    pub(crate) async fn commit_file(
        &self,
        cache: &Cache,
        file_id: &str,
        answers: Vec<(String, CachedResponse)>,
        taken: &RoundCalls,
    ) -> Result<(), LlmError> {
        let inner = self;
        let (answers, first) = cache
            .collect_batch(file_id, (&inner.endpoint, &inner.config.model), answers)
            .await?;
        for (_, r) in answers.iter().filter(|_| first) {
            inner.stats.upstream_calls.fetch_add(1, Ordering::Relaxed);
            let cost = inner
                .config
                .price
                .micro_usd(r.prompt_tokens, r.completion_tokens);
            self.spend(cost, r.prompt_tokens + r.completion_tokens);
        }
        self.budget.release_file(file_id);
        for (key, answer) in &answers {
            taken.answer(key, answer);
        }
        Ok(())
    }
}

/// What the result files of one input file say of its requests.
#[derive(Default)]
pub(crate) struct Checked {
    /// Checked answers, to cache, by key.
    pub(crate) answers: Vec<(String, CachedResponse)>,
    /// The requests the files answer with an error (a refused form as `FormRefused`).
    pub(crate) errors: HashMap<String, LlmError>,
    /// The refused lines, `SOURCE:LINE: why`.
    pub(crate) refused: Vec<String>,
}

impl Checked {
    /// Gives `error()` to each request of `rows` the files left without an answer or error.
    pub(crate) fn without_answer(&mut self, keys: &HashSet<String>, error: impl Fn() -> LlmError) {
        let got: HashSet<&str> = self.answers.iter().map(|(k, _)| k.as_str()).collect();
        for key in keys.iter().filter(|k| !got.contains(k.as_str())) {
            self.errors.entry(key.clone()).or_insert_with(&error);
        }
    }
}

/// Whether `answered` (a result line's `model`) is the model asked for: the same name, or a
/// dated snapshot of it (`gpt-4o-mini` answered as `gpt-4o-mini-2024-07-18`).
fn same_model(answered: &str, asked: &str) -> bool {
    answered.eq_ignore_ascii_case(asked)
        || answered
            .strip_prefix(asked)
            .is_some_and(|rest| rest.starts_with('-'))
}

/// Hands the callers of the keys taken that the cache answers now (answered meanwhile, by
/// an earlier run) their answers; returns the others, in key order.
pub(crate) fn answered_meanwhile<'a>(
    cache: &Cache,
    taken: &'a RoundCalls,
) -> Result<BTreeSet<&'a str>, LlmError> {
    let mut open = BTreeSet::new();
    for key in taken.keys() {
        match cache.get(key)? {
            Some(hit) => taken.answer(key, &hit),
            None => {
                open.insert(key.as_str());
            }
        }
    }
    Ok(open)
}

/// The rough prompt size of a request of the journal's file `file_id`, for an answer that
/// reports no usage (read from the journal when it is needed, one request at a time).
pub(crate) fn journal_estimate<'a>(
    cache: &'a Cache,
    file_id: &'a str,
) -> impl Fn(&str) -> u64 + 'a {
    move |key| {
        cache
            .batch_request(file_id, key)
            .ok()
            .flatten()
            .and_then(|r| serde_json::from_str::<ChatRequest>(&r).ok())
            .map_or(0, |r| r.estimated_prompt_tokens())
    }
}

/// Splits the keys of `taken` (in their order) into files of at most `max_requests` lines
/// and `max_bytes` bytes.
pub(crate) fn chunks<'a>(
    keys: &[&'a str],
    taken: &RoundCalls,
    (max_requests, max_bytes): (usize, usize),
) -> Vec<Vec<&'a str>> {
    let sizes: Vec<usize> = keys.iter().map(|k| taken[*k].spooled.line_bytes).collect();
    split(&sizes, max_requests, max_bytes)
        .into_iter()
        .map(|r| keys[r].to_vec())
        .collect()
}

/// Splits lines of `sizes` bytes (newline included) into ranges of at most `max_requests`
/// lines and `max_bytes` bytes; a line larger than `max_bytes` goes alone.
fn split(sizes: &[usize], max_requests: usize, max_bytes: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0usize);
    for (i, size) in sizes.iter().enumerate() {
        let n = i - start;
        if n > 0 && (n >= max_requests.max(1) || bytes + size > max_bytes) {
            out.push(start..i);
            (start, bytes) = (i, 0);
        }
        bytes += size;
    }
    if start < sizes.len() {
        out.push(start..sizes.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dated_snapshot_is_the_model_asked() {
        assert!(same_model("gpt-4o-mini-2024-07-18", "gpt-4o-mini"));
        assert!(same_model("SmolLM2", "smollm2"));
        assert!(!same_model("gpt-4o", "gpt-4o-mini"));
        assert!(!same_model("llama3", "smollm2"));
    }

    #[test]
    fn files_are_split_under_both_limits() {
        // Lines of 10 and 11 bytes with their newline.
        let lines: Vec<usize> = (0..10).map(|i| 10 + i % 2).collect();
        let sizes = |c: Vec<std::ops::Range<usize>>| c.iter().map(|c| c.len()).collect::<Vec<_>>();
        assert_eq!(sizes(split(&lines, 4, 1000)), [4, 4, 2]);
        assert_eq!(sizes(split(&lines, 100, 32)), [3, 3, 3, 1]);
        // A line larger than the byte limit still goes, alone.
        assert_eq!(sizes(split(&lines, 100, 5)), [1; 10]);
        assert!(split(&[], 4, 1000).is_empty());
    }

    /// A driver that dies (here a panic, as a log line on a closed stderr once made one)
    /// unmarks the queue, so the next call starts a driver instead of waiting forever; one
    /// that ended as the queue said leaves the queue to the driver after it.
    #[test]
    fn a_driver_that_dies_lets_the_next_call_start_another() {
        let rounds = |driving| Rounds {
            queue: Mutex::new(Queue {
                driving,
                ..Queue::default()
            }),
            errors_ahead: Mutex::default(),
            spool: Spool::new(),
            transport: (),
        };
        let r = rounds(true);
        let died = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ended = DriverEnded(&r, false);
            panic!("a driver's log line panicked");
        }));
        assert!(died.is_err());
        assert!(!r.queue.lock().unwrap().driving, "the queue stayed marked");
        let r = rounds(true);
        drop(DriverEnded(&r, true));
        assert!(
            r.queue.lock().unwrap().driving,
            "a later driver was unmarked"
        );
    }
}
