//! `--batch`: the provider's Batch API behind [`Llm::complete`], on the same cache.
//!
//! Calls wait for rounds ([`crate::rounds`]); a round of the Batch API:
//!
//! 1. keys answered meanwhile (by an earlier run) are served from the cache;
//! 2. keys that a batch of an earlier run holds (the journal in the cache database) are
//!    waited for on that batch, never submitted again;
//! 3. the other keys are written as Batch API JSONL (`custom_id` = cache key, `body` = the
//!    exact online body), split under the per-file request and byte limits, each file
//!    counted against `--max-cost`, uploaded, recorded, and submitted;
//! 4. the batches are polled with growing intervals; each finished one is downloaded, its
//!    lines checked against their requests ([`Core::check_results`], shared with the batch
//!    files) and its answers committed to the cache (with the batch
//!    marked collected, in one transaction);
//! 5. every key gets its answer or error back to the round driver, which retries or ends
//!    each call.

use crate::batch_api::{BatchApi, RemoteBatch};
use crate::batch_store::{self, BatchRecord};
use crate::cache::Cache;
use crate::http::OpenAiHttp;
use crate::layer_core::Core;
use crate::rounds::{answered_meanwhile, chunks, journal_estimate, Checked, Round, RoundCalls};
use crate::spool::{Spool, Spooled};
use crate::{BatchOptions, LlmConfig, LlmError};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The Batch API at work: its client and options.
pub(crate) struct ApiRounds {
    http: OpenAiHttp,
    opts: BatchOptions,
}

impl ApiRounds {
    /// The Batch API of `config`'s endpoint; the journal's tables are created in `cache`.
    pub(crate) fn new(
        config: &LlmConfig,
        opts: &BatchOptions,
        cache: Option<&Cache>,
    ) -> Result<Self, LlmError> {
        if let Some(c) = cache {
            batch_store::create_tables(c)?;
        }
        Ok(Self {
            http: OpenAiHttp::new(config)?,
            opts: opts.clone(),
        })
    }
}

impl Round for ApiRounds {
    fn quiet(&self) -> Duration {
        self.opts.quiet
    }

    /// One round of `llm`'s calls: an answer (handed out as it is collected) or an error for
    /// every key taken (missing keys are retried).
    async fn run(
        &self,
        llm: &Core,
        taken: &RoundCalls,
        spool: &Spool,
    ) -> Result<HashMap<String, LlmError>, LlmError> {
        let (inner, opts) = (llm, &self.opts);
        let cache = inner
            .cache
            .as_ref()
            .ok_or_else(|| LlmError::Config("--batch needs a cache file".into()))?;
        let api = BatchApi::new(&self.http, &inner.config);
        let open = answered_meanwhile(cache, taken)?;
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
        let limits = (opts.max_requests_per_file, opts.max_bytes_per_file);
        let mut pending = chunks(&fresh, taken, limits);
        pending.reverse();
        while let Some(chunk) = pending.pop() {
            // A file the budget left cannot pay for whole is cut; the rest is refused at its
            // turn (a budget stop) and waits for a later run.
            let (head, rest) = chunk.split_at(llm.affordable(&chunk, taken));
            if !rest.is_empty() {
                pending.push(rest.to_vec());
            }
            let (record, reservation) = self.submit(llm, (cache, &api, spool), head, taken).await?;
            reservations.push(reservation);
            tracked.push(record);
        }
        // The batches' answers go to their callers as they are collected; their errors stay.
        let mut errors = self
            .await_batches(llm, (cache, &api), tracked, taken)
            .await?;
        drop(reservations);
        for key in open {
            if taken.waiting(key) && !errors.contains_key(key) {
                let e = LlmError::Batch {
                    code: "batch_missing".into(),
                    message: "the batch returned no line for this request".into(),
                };
                errors.insert(key.to_owned(), e);
            }
        }
        Ok(errors)
    }
}

impl ApiRounds {
    /// Uploads one input file (written from the spool), records it with its keys, and
    /// creates its batch; a stopped layer ([`Core::stopped`]: a signal, the budget) does
    /// neither.
    async fn submit<'a>(
        &self,
        llm: &'a Core,
        (cache, api, spool): (&Cache, &BatchApi<'_>, &Spool),
        chunk: &[&str],
        taken: &RoundCalls,
    ) -> Result<(BatchRecord, crate::layer_core::Reservation<'a>), LlmError> {
        let inner = llm;
        llm.go_on()?;
        let (est_usd, reservation) = llm.reserve_file(chunk, taken)?;
        let spooled: Vec<Spooled> = chunk.iter().map(|k| taken[*k].spooled).collect();
        let first = chunk[0];
        let path = spool.dir().join(format!(
            "conflictbench-{}.jsonl",
            &first[..first.len().min(16)]
        ));
        spool.write_lines(&spooled, &path)?;
        let size = std::fs::metadata(&path).map_or(0, |m| m.len());
        let uploaded = api.upload(&path).await;
        let _ = std::fs::remove_file(&path);
        let file_id = uploaded?;
        let key = crate::batch_store::api_key(&inner.endpoint, &file_id);
        let requests = chunk.len();
        cache
            .record_upload(
                (&key, &inner.owner),
                (&inner.endpoint, &inner.config.model),
                ("uploaded", est_usd),
                (requests, spool.rows(spooled)?),
            )
            .await?;
        // Stopped meanwhile: the file is recorded, its batch made by the next run.
        llm.go_on()?;
        let remote = api.create(&file_id).await?;
        cache
            .update_batch(&key, &remote.id, &remote.status, 0, 0)
            .await?;
        inner.stats.batches.fetch_add(1, Ordering::Relaxed);
        tracing::info!(batch = %remote.id, requests, bytes = size, estimated_usd = est_usd, "batch submitted");
        let record = cache
            .batch_keyed(&key)?
            .ok_or_else(|| LlmError::Cache(format!("batch of file {file_id} not recorded")))?;
        Ok((record, reservation))
    }

    /// Polls the batches until each has ended and is collected (its answers handed to their
    /// callers in `taken`); returns the errors of the requests without one.
    async fn await_batches(
        &self,
        llm: &Core,
        (cache, api): (&Cache, &BatchApi<'_>),
        tracked: Vec<BatchRecord>,
        taken: &RoundCalls,
    ) -> Result<HashMap<String, LlmError>, LlmError> {
        let opts = &self.opts;
        let mut errors = HashMap::new();
        let mut pending = Vec::new();
        for record in tracked {
            let batch_id = match record.batch_id {
                Some(id) => id,
                // Uploaded by a run that was killed before it could record the batch.
                None => match api.find_by_input(&record.file_id).await? {
                    Some(b) => b.id,
                    None => {
                        llm.go_on()?;
                        api.create(&record.file_id).await?.id
                    }
                },
            };
            pending.push((record.key, batch_id));
        }
        let mut interval = opts.poll_initial;
        loop {
            // A stopped build polls no more; its batches are found again by the next run.
            llm.go_on()?;
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
                    let e = self
                        .collect(llm, (cache, api), &file_id, &remote, taken)
                        .await?;
                    errors.extend(e);
                } else {
                    tracing::debug!(batch = %batch_id, status = %remote.status, "batch not done yet");
                    still.push((file_id, batch_id));
                }
            }
            if still.is_empty() {
                return Ok(errors);
            }
            pending = still;
            tokio::time::sleep(interval).await;
            interval = (interval * 3 / 2).min(opts.poll_max);
        }
    }

    /// Downloads a finished batch's files, commits its answers and hands them to their
    /// callers; returns the errors of its requests without an answer.
    async fn collect(
        &self,
        llm: &Core,
        (cache, api): (&Cache, &BatchApi<'_>),
        file_id: &str,
        remote: &RemoteBatch,
        taken: &RoundCalls,
    ) -> Result<HashMap<String, LlmError>, LlmError> {
        let keys = cache.batch_keys(file_id)?;
        let mut checked = Checked::default();
        for id in [&remote.output_file_id, &remote.error_file_id]
            .into_iter()
            .flatten()
        {
            let source = format!("batch {} file {id}", remote.id);
            let input = format!("batch {}", remote.id);
            llm.check_results(
                &api.content(id).await?[..],
                (&source, &input),
                (&keys, journal_estimate(cache, file_id)),
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
        checked.without_answer(&keys, || LlmError::Batch {
            code: code.into(),
            message: remote
                .errors
                .clone()
                .unwrap_or_else(|| format!("batch {} ended {}", remote.id, remote.status)),
        });
        let n = checked.answers.len();
        llm.commit_file(cache, file_id, checked.answers, taken)
            .await?;
        tracing::info!(batch = %remote.id, status = %remote.status, answers = n, "batch collected");
        Ok(checked.errors)
    }
}

/// Cancels a batch of `cache`'s journal (by batch id or input file id) at `config`'s
/// endpoint and records its state.
pub async fn cancel_batch(
    cache: &Cache,
    config: &LlmConfig,
    id: &str,
) -> Result<BatchRecord, LlmError> {
    let at = crate::request::endpoint_identity(&config.base_url);
    let record = cache
        .batch(id, Some(&at))?
        .ok_or_else(|| LlmError::Config(format!("no batch {id} of {at} in the cache journal")))?;
    let batch_id = record.batch_id.ok_or_else(|| {
        LlmError::Config(format!("file {id} was uploaded but never became a batch"))
    })?;
    let http = OpenAiHttp::new(config)?;
    let remote = BatchApi::new(&http, config).cancel(&batch_id).await?;
    cache
        .update_batch(
            &record.key,
            &remote.id,
            &remote.status,
            remote.completed,
            remote.failed,
        )
        .await?;
    cache
        .batch_keyed(&record.key)?
        .ok_or_else(|| LlmError::Cache(format!("batch {id} vanished from the journal")))
}
