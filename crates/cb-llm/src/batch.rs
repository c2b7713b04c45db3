//! `--batch`: the provider's Batch API behind [`Llm::complete`], on the same cache.
//!
//! On a cache miss the call is queued and its caller waits. A driver task (one at a time,
//! started by the first call queued) waits until no call has arrived for a short quiet
//! period (every item of the step is then waiting on it), and runs a round:
//!
//! 1. keys answered meanwhile (by an earlier run) are served from the cache;
//! 2. keys that a batch of an earlier run holds (the journal in the cache database) are
//!    waited for on that batch, never submitted again;
//! 3. the other keys are written as Batch API JSONL (`custom_id` = cache key, `body` = the
//!    exact online body), split under the per-file request and byte limits, each file
//!    counted against `--max-cost`, uploaded, recorded, and submitted;
//! 4. the batches are polled with growing intervals; each finished one is downloaded, its
//!    lines checked against their requests ([`Llm::check_results`], shared with the batch
//!    files of [`crate::batch_files`]) and its answers committed to the cache (with the batch
//!    marked collected, in one transaction);
//! 5. every waiting caller gets its answer, or its error: a retryable one (expiry, 5xx, 429,
//!    a refused line) puts the call in the next round while the collected files that held it
//!    (the journal's count, earlier runs included) number at most `max_retries`; others
//!    become rejects.
//!
//! The caller then goes on exactly as with a cache hit: validation, a second attempt (which
//! joins the next round), rejects.

use crate::batch_api::{input_line, parse_results, BatchApi, RemoteBatch};
use crate::batch_store::BatchRecord;
use crate::cache::RequestRow;
use crate::structured::{self, Form};
use crate::{Cache, CachedResponse, Call, ChatRequest, Completion, Llm, LlmError};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::oneshot;

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
}

impl Default for BatchOptions {
    fn default() -> Self {
        Self {
            max_requests_per_file: 50_000,
            max_bytes_per_file: 190 * 1024 * 1024,
            poll_initial: Duration::from_secs(5),
            poll_max: Duration::from_secs(60),
            quiet: Duration::from_millis(300),
        }
    }
}

pub(crate) type Answer = Result<CachedResponse, LlmError>;

pub(crate) struct Waiting {
    pub(crate) call: Call,
    /// The request's input line (`custom_id` = key, the exact online body).
    pub(crate) line: String,
    waiters: Vec<oneshot::Sender<Answer>>,
    rounds: u32,
}

#[derive(Default)]
struct Queue {
    pending: HashMap<String, Waiting>,
    arrivals: u64,
    driving: bool,
}

/// The calls waiting for the next round.
#[derive(Default)]
pub(crate) struct Collector {
    queue: Mutex<Queue>,
}

impl Llm {
    /// Queues a call that missed the cache and waits for its round.
    /// `key` and the body in the input line are the ones an online call in `form` would use.
    pub(crate) async fn via_batch(
        &self,
        call: &Call,
        key: String,
        form: Form,
    ) -> Result<Completion, LlmError> {
        let inner = &self.inner;
        let collector = inner.collector().expect("batch mode has a collector");
        let (tx, rx) = oneshot::channel();
        let start_driver = {
            let mut q = collector.queue.lock().expect("batch queue");
            q.arrivals += 1;
            q.pending
                .entry(key.clone())
                .or_insert_with(|| Waiting {
                    call: call.clone(),
                    line: input_line(&key, &call.request.body_as(&inner.config.model, form)),
                    waiters: Vec::new(),
                    rounds: 0,
                })
                .waiters
                .push(tx);
            !std::mem::replace(&mut q.driving, true)
        };
        if start_driver {
            let llm = self.clone();
            tokio::spawn(async move { llm.drive().await });
        }
        let answer = rx
            .await
            .map_err(|_| LlmError::Config("the batch driver stopped".into()))??;
        self.count_tokens(&answer);
        Ok(answer.into_completion(key, false))
    }

    /// Runs rounds while calls are queued; ends when the queue stays empty.
    async fn drive(&self) {
        let inner = &self.inner;
        let collector = inner.collector().expect("batch mode has a collector");
        let quiet = match &inner.config.transport {
            crate::Transport::BatchFiles(o) => o.quiet,
            crate::Transport::BatchApi(o) => o.quiet,
            _ => unreachable!("only rounds have a collector"),
        };
        loop {
            let taken = loop {
                let before = collector.queue.lock().expect("batch queue").arrivals;
                tokio::time::sleep(quiet).await;
                let mut q = collector.queue.lock().expect("batch queue");
                if q.arrivals == before {
                    if q.pending.is_empty() {
                        q.driving = false;
                        return;
                    }
                    break std::mem::take(&mut q.pending);
                }
            };
            tracing::info!(requests = taken.len(), "batch round");
            let round = match &inner.config.transport {
                crate::Transport::BatchFiles(o) => self.files_round(&taken, o).await,
                crate::Transport::BatchApi(o) => self.round(&taken, o).await,
                _ => unreachable!("only rounds have a collector"),
            };
            let mut answers = match round {
                Ok(a) => a,
                Err(e) => {
                    // Credentials refused, path unknown or no connection at all: the endpoint
                    // is unusable, as for online calls, and the build stops.
                    let e = self.fatal_batch_error(e);
                    taken.keys().map(|k| (k.clone(), Err(e.clone()))).collect()
                }
            };
            let mut again = Vec::new();
            for (key, mut w) in taken {
                let answer = answers.remove(&key).unwrap_or_else(|| {
                    Err(LlmError::Batch {
                        code: "batch_missing".into(),
                        message: "no answer for this request".into(),
                    })
                });
                let e = match answer {
                    Ok(r) => {
                        w.waiters.into_iter().for_each(|t| {
                            let _ = t.send(Ok(r.clone()));
                        });
                        continue;
                    }
                    // Not an attempt that counts: the build stops until the files are
                    // answered, or the caller steps the form down and asks again.
                    Err(e @ LlmError::Waiting(_)) => e,
                    Err(e @ LlmError::FormRefused(_)) => {
                        inner.stats.failures.fetch_add(1, Ordering::Relaxed);
                        e
                    }
                    Err(e) => {
                        let attempts = self.attempts(&key, w.rounds);
                        if e.is_retryable() && attempts <= inner.config.max_retries {
                            w.rounds += 1;
                            inner.stats.retries.fetch_add(1, Ordering::Relaxed);
                            tracing::warn!(item = %w.call.item, attempts, error = %e, "batch request goes to the next round");
                            again.push((key, w));
                            continue;
                        }
                        inner.stats.failures.fetch_add(1, Ordering::Relaxed);
                        // As an online call ends: a retryable error, or one after retries,
                        // is the retries exhausted (`retries_exhausted_<reason>`).
                        if e.is_retryable() || attempts > 1 {
                            LlmError::Exhausted {
                                attempts,
                                last: Box::new(e),
                            }
                        } else {
                            e
                        }
                    }
                };
                w.waiters.into_iter().for_each(|t| {
                    let _ = t.send(Err(e.clone()));
                });
            }
            let mut q = collector.queue.lock().expect("batch queue");
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

    /// The requests sent for `key` so far, this one included: the collected files of the
    /// journal that held it (earlier runs' too, so a killed or waiting build keeps counting),
    /// at least the `rounds` this run has been through.
    fn attempts(&self, key: &str, rounds: u32) -> u32 {
        let journal = self.inner.cache.as_ref().map_or(Ok(0), |c| c.attempts(key));
        journal
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, "cannot count a request's earlier batches");
                0
            })
            .max(rounds + 1)
    }

    /// One round: an answer or an error for every key taken (missing keys are retried).
    async fn round(
        &self,
        taken: &HashMap<String, Waiting>,
        opts: &BatchOptions,
    ) -> Result<HashMap<String, Answer>, LlmError> {
        let inner = &self.inner;
        let cache = inner
            .cache
            .as_ref()
            .ok_or_else(|| LlmError::Config("--batch needs a cache file".into()))?;
        let http = inner
            .http
            .as_ref()
            .expect("openai backend has an http client");
        let api = BatchApi::new(http, &inner.config);
        let (mut answers, open) = answered_meanwhile(cache, taken)?;
        let mut tracked = Vec::new();
        let mut held = HashSet::new();
        for (record, keys) in cache.live_batches(&inner.endpoint, &inner.config.model, None)? {
            if keys.iter().any(|k| open.contains(k.as_str())) {
                tracing::info!(file = %record.file_id, batch = ?record.batch_id, state = %record.state, "resuming a batch of an earlier run");
                held.extend(keys);
                tracked.push(record);
            }
        }
        let mut fresh: Vec<&str> = open
            .iter()
            .copied()
            .filter(|k| !held.contains(*k))
            .collect();
        fresh.sort_unstable();
        let mut reservations = Vec::new();
        let lines: Vec<(&str, &str)> = fresh
            .iter()
            .map(|k| (*k, taken[*k].line.as_str()))
            .collect();
        for chunk in chunks(&lines, opts.max_requests_per_file, opts.max_bytes_per_file) {
            let (record, reservation) = self.submit(cache, &api, chunk, taken).await?;
            reservations.push(reservation);
            tracked.push(record);
        }
        // What the batches answered, as collected (committed to the cache, not read back).
        let mut outcomes = self.await_batches(cache, &api, tracked, opts).await?;
        drop(reservations);
        for key in open {
            let answer = outcomes.remove(key).unwrap_or_else(|| {
                Err(LlmError::Batch {
                    code: "batch_missing".into(),
                    message: "the batch returned no line for this request".into(),
                })
            });
            answers.insert(key.to_owned(), answer);
        }
        Ok(answers)
    }

    /// One input file of `chunk`: its bytes and journal rows, its cost reserved against
    /// `--max-cost` and `--max-tokens` as a whole before anything is sent or written.
    pub(crate) fn input_file(
        &self,
        chunk: &[(&str, &str)],
        taken: &HashMap<String, Waiting>,
    ) -> Result<(Vec<u8>, Vec<RequestRow>, f64, crate::Reservation<'_>), LlmError> {
        let (mut micro, mut tokens) = (0u64, 0u64);
        let mut bytes = Vec::new();
        let mut rows = Vec::with_capacity(chunk.len());
        for (key, line) in chunk {
            let w = &taken[*key];
            let (one, most) = self.most_of(&w.call.request);
            self.check_one_call(one, most)?;
            micro += one;
            tokens += most;
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
            rows.push(RequestRow::of(key, &w.call)?);
        }
        let reservation = self.reserve(micro, tokens)?;
        Ok((bytes, rows, micro as f64 / 1e6, reservation))
    }

    /// Uploads one input file, records it with its keys, and creates its batch.
    async fn submit(
        &self,
        cache: &Cache,
        api: &BatchApi<'_>,
        chunk: &[(&str, &str)],
        taken: &HashMap<String, Waiting>,
    ) -> Result<(BatchRecord, crate::Reservation<'_>), LlmError> {
        let inner = &self.inner;
        let (bytes, rows, est_usd, reservation) = self.input_file(chunk, taken)?;
        let first = chunk[0].0;
        let name = format!("conflictbench-{}.jsonl", &first[..first.len().min(16)]);
        let size = bytes.len();
        let file_id = api.upload(&name, bytes).await?;
        let requests = rows.len();
        cache
            .record_upload(
                &file_id,
                (&inner.endpoint, &inner.config.model),
                "uploaded",
                est_usd,
                rows,
            )
            .await?;
        let remote = api.create(&file_id).await?;
        cache
            .update_batch(&file_id, &remote.id, &remote.status, 0, 0)
            .await?;
        inner.stats.batches.fetch_add(1, Ordering::Relaxed);
        tracing::info!(batch = %remote.id, requests, bytes = size, estimated_usd = est_usd, "batch submitted");
        let record = cache
            .batch(&file_id)?
            .ok_or_else(|| LlmError::Cache(format!("batch of file {file_id} not recorded")))?;
        Ok((record, reservation))
    }

    /// Polls the batches until each has ended and is collected; returns each key's answer or
    /// error.
    async fn await_batches(
        &self,
        cache: &Cache,
        api: &BatchApi<'_>,
        tracked: Vec<BatchRecord>,
        opts: &BatchOptions,
    ) -> Result<HashMap<String, Answer>, LlmError> {
        let mut outcomes = HashMap::new();
        let mut pending = Vec::new();
        for record in tracked {
            let batch_id = match record.batch_id {
                Some(id) => id,
                // Uploaded by a run that was killed before it could record the batch.
                None => match api.find_by_input(&record.file_id).await? {
                    Some(b) => b.id,
                    None => api.create(&record.file_id).await?.id,
                },
            };
            pending.push((record.file_id, batch_id));
        }
        let mut interval = opts.poll_initial;
        loop {
            let mut still = Vec::new();
            for (file_id, batch_id) in pending {
                let remote = api.retrieve(&batch_id).await?;
                cache
                    .update_batch(
                        &file_id,
                        &remote.id,
                        &remote.status,
                        remote.completed,
                        remote.failed,
                    )
                    .await?;
                if remote.is_terminal() {
                    self.collect(cache, api, &file_id, &remote, &mut outcomes)
                        .await?;
                } else {
                    tracing::debug!(batch = %batch_id, status = %remote.status, "batch not done yet");
                    still.push((file_id, batch_id));
                }
            }
            if still.is_empty() {
                return Ok(outcomes);
            }
            pending = still;
            tokio::time::sleep(interval).await;
            interval = (interval * 3 / 2).min(opts.poll_max);
        }
    }

    /// Downloads a finished batch's files, commits its answers, and puts each key's answer or
    /// error in `outcomes`.
    async fn collect(
        &self,
        cache: &Cache,
        api: &BatchApi<'_>,
        file_id: &str,
        remote: &RemoteBatch,
        outcomes: &mut HashMap<String, Answer>,
    ) -> Result<(), LlmError> {
        let rows = cache.batch_requests(file_id)?;
        let mut checked = Checked::default();
        for id in [&remote.output_file_id, &remote.error_file_id]
            .into_iter()
            .flatten()
        {
            let source = format!("batch {} file {id}", remote.id);
            let input = format!("batch {}", remote.id);
            self.check_results(
                &api.content(id).await?,
                (&source, &input),
                &rows,
                &mut checked,
            );
        }
        // Requests without a line: the batch as a whole says why.
        let code = match remote.status.as_str() {
            "failed" => "batch_failed",
            "cancelled" => "batch_cancelled",
            "expired" => "batch_expired",
            _ => "batch_missing",
        };
        checked.without_answer(&rows, || LlmError::Batch {
            code: code.into(),
            message: remote
                .errors
                .clone()
                .unwrap_or_else(|| format!("batch {} ended {}", remote.id, remote.status)),
        });
        let n = checked.answers.len();
        self.commit_file(cache, file_id, checked.answers, outcomes)
            .await?;
        tracing::info!(batch = %remote.id, status = %remote.status, answers = n, "batch collected");
        outcomes.extend(checked.errors.into_iter().map(|(k, e)| (k, Err(e))));
        Ok(())
    }

    /// Checks the lines of one output or error file (`source` names it in messages) against
    /// the requests of its input file (`rows`, named `input`), into `into`. Refused, each reported as `SOURCE:LINE:
    /// why` and never cached: a line that is not JSON or has no `custom_id`, one naming a
    /// request the file does not hold or one it answered already, one answered by another
    /// model, and a 200 body that is not a completion (its request is asked again).
    pub(crate) fn check_results(
        &self,
        bytes: &[u8],
        (source, input): (&str, &str),
        rows: &HashMap<String, RequestRow>,
        into: &mut Checked,
    ) {
        let asked = &self.inner.config.model;
        let mut seen = HashSet::new();
        let mut refuse = |n: usize, why: String| {
            tracing::warn!("{source}:{n}: {why}; its request is asked again");
            into.refused.push(format!("{source}:{n}: {why}"));
        };
        // Lines that carry an error, by reason, and the first of them: said once.
        let mut error_lines: BTreeMap<String, usize> = BTreeMap::new();
        let mut first_error = None;
        for line in parse_results(bytes, |k| estimated_prompt(rows, k)) {
            let line = match line {
                Ok(l) => l,
                Err((n, why)) => {
                    refuse(n, why);
                    continue;
                }
            };
            let n = line.line;
            let Some(row) = rows.get(&line.custom_id) else {
                refuse(
                    n,
                    format!("custom_id {} is not a request of {input}", line.custom_id),
                );
                continue;
            };
            if !seen.insert(line.custom_id.clone()) {
                refuse(
                    n,
                    format!(
                        "custom_id {} is answered twice; the first answer stands",
                        line.custom_id
                    ),
                );
                continue;
            }
            let error = match line.outcome {
                Ok(_) if line.model.as_deref().is_some_and(|m| !same_model(m, asked)) => {
                    let why = format!(
                        "answered by model {}, {asked} was asked",
                        line.model.unwrap_or_default()
                    );
                    refuse(n, why.clone());
                    LlmError::Batch {
                        code: "wrong_model".into(),
                        message: format!("{source}:{n}: {why}"),
                    }
                }
                Ok(answer) => {
                    into.answers.push((row.clone(), answer));
                    continue;
                }
                Err(e @ LlmError::Malformed { .. }) => {
                    refuse(n, format!("not an answer: {e}"));
                    e
                }
                Err(e) => {
                    *error_lines.entry(e.reason_code()).or_default() += 1;
                    first_error.get_or_insert_with(|| format!("{source}:{n}: {e}"));
                    self.result_error(e)
                }
            };
            into.errors.insert(row.key.clone(), error);
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
        let said = crate::endpoint::short(body, self.inner.config.api_key.expose());
        LlmError::FormRefused(format!("HTTP {status} in a batch result: {said}"))
    }

    /// Counts a collected file's answers as this run's calls and spending, commits them to
    /// the cache with the file marked collected (one transaction), and hands them out.
    pub(crate) async fn commit_file(
        &self,
        cache: &Cache,
        file_id: &str,
        answers: Vec<(RequestRow, CachedResponse)>,
        outcomes: &mut HashMap<String, Answer>,
    ) -> Result<(), LlmError> {
        let inner = &self.inner;
        let s = &inner.stats;
        for (_, r) in &answers {
            s.upstream_calls.fetch_add(1, Ordering::Relaxed);
            s.spent_micro_usd.fetch_add(
                inner
                    .config
                    .price
                    .micro_usd(r.prompt_tokens, r.completion_tokens),
                Ordering::Relaxed,
            );
            s.upstream_tokens
                .fetch_add(r.prompt_tokens + r.completion_tokens, Ordering::Relaxed);
        }
        let keyed: Vec<(String, CachedResponse)> = answers
            .iter()
            .map(|(r, a)| (r.key.clone(), a.clone()))
            .collect();
        cache
            .collect_batch(file_id, &inner.endpoint, &inner.config.model, answers)
            .await?;
        outcomes.extend(keyed.into_iter().map(|(k, a)| (k, Ok(a))));
        Ok(())
    }

    /// Cancels a batch of the journal (by batch id or input file id) and records its state.
    pub async fn cancel_batch(&self, id: &str) -> Result<BatchRecord, LlmError> {
        let inner = &self.inner;
        let (cache, http) = match (&inner.cache, &inner.http) {
            (Some(c), Some(h)) => (c, h),
            _ => {
                return Err(LlmError::Config(
                    "cancelling a batch needs the openai backend and the cache".into(),
                ))
            }
        };
        let record = cache
            .batch(id)?
            .ok_or_else(|| LlmError::Config(format!("no batch {id} in the cache journal")))?;
        let batch_id = record.batch_id.ok_or_else(|| {
            LlmError::Config(format!("file {id} was uploaded but never became a batch"))
        })?;
        let remote = BatchApi::new(http, &inner.config).cancel(&batch_id).await?;
        cache
            .update_batch(
                &record.file_id,
                &remote.id,
                &remote.status,
                remote.completed,
                remote.failed,
            )
            .await?;
        cache
            .batch(&record.file_id)?
            .ok_or_else(|| LlmError::Cache(format!("batch {id} vanished from the journal")))
    }
}

/// What the result files of one input file say of its requests.
#[derive(Default)]
pub(crate) struct Checked {
    /// Checked answers, to cache.
    pub(crate) answers: Vec<(RequestRow, CachedResponse)>,
    /// The requests the files answer with an error (a refused form as `FormRefused`).
    pub(crate) errors: HashMap<String, LlmError>,
    /// The refused lines, `SOURCE:LINE: why`.
    pub(crate) refused: Vec<String>,
}

impl Checked {
    /// Gives `error()` to each request of `rows` the files left without an answer or error.
    pub(crate) fn without_answer(
        &mut self,
        rows: &HashMap<String, RequestRow>,
        error: impl Fn() -> LlmError,
    ) {
        let got: HashSet<&str> = self.answers.iter().map(|(r, _)| r.key.as_str()).collect();
        for key in rows.keys().filter(|k| !got.contains(k.as_str())) {
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

/// The keys taken that the cache answers now (answered meanwhile, by an earlier run), as
/// answers, and the others, in key order.
pub(crate) fn answered_meanwhile<'a>(
    cache: &Cache,
    taken: &'a HashMap<String, Waiting>,
) -> Result<(HashMap<String, Answer>, BTreeSet<&'a str>), LlmError> {
    let mut answers = HashMap::new();
    let mut open = BTreeSet::new();
    for key in taken.keys() {
        match cache.get(key)? {
            Some(hit) => {
                answers.insert(key.clone(), Ok(hit));
            }
            None => {
                open.insert(key.as_str());
            }
        }
    }
    Ok((answers, open))
}

/// The rough prompt size of a journal request, for an answer that reports no usage.
pub(crate) fn estimated_prompt(rows: &HashMap<String, RequestRow>, key: &str) -> u64 {
    rows.get(key)
        .and_then(|r| serde_json::from_str::<ChatRequest>(&r.request).ok())
        .map_or(0, |r| r.estimated_prompt_tokens())
}

/// Splits input lines into files of at most `max_requests` lines and `max_bytes` bytes.
pub(crate) fn chunks<'a, 'b>(
    lines: &'b [(&'a str, &'a str)],
    max_requests: usize,
    max_bytes: usize,
) -> Vec<&'b [(&'a str, &'a str)]> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0usize);
    for (i, (_, line)) in lines.iter().enumerate() {
        let size = line.len() + 1;
        let n = i - start;
        if n > 0 && (n >= max_requests.max(1) || bytes + size > max_bytes) {
            out.push(&lines[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += size;
    }
    if start < lines.len() {
        out.push(&lines[start..]);
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
        let text: Vec<String> = (0..10).map(|i| "x".repeat(9 + i % 2)).collect();
        let lines: Vec<(&str, &str)> = text.iter().map(|t| ("k", t.as_str())).collect();
        let sizes = |c: Vec<&[(&str, &str)]>| c.iter().map(|c| c.len()).collect::<Vec<_>>();
        assert_eq!(sizes(chunks(&lines, 4, 1000)), [4, 4, 2]);
        assert_eq!(sizes(chunks(&lines, 100, 32)), [3, 3, 3, 1]);
        // A line larger than the byte limit still goes, alone.
        assert_eq!(sizes(chunks(&lines, 100, 5)), [1; 10]);
        assert!(chunks(&[], 4, 1000).is_empty());
    }
}
