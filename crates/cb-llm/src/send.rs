//! Sending one request body upstream: retries with backoff and `Retry-After`, accounting,
//! and the errors that say the endpoint itself is unusable.

use crate::cache::Annex;
use crate::form::Form;
use crate::layer_core::Core;
use crate::structured;
use crate::{endpoint, http, request, ChatRequest, LlmError};
use serde_json::Value;
use std::sync::atomic::Ordering;

impl Core {
    /// Accounts for an answer that came upstream: fills in `usage` (estimated when the
    /// server sent none) and adds its tokens and cost to the run's counters.
    pub(crate) fn account(&self, request: &ChatRequest, parsed: &mut http::Parsed) {
        let (pt, ct) = parsed.usage.unwrap_or_else(|| {
            (
                request.estimated_prompt_tokens(),
                request::estimate_tokens(&parsed.content),
            )
        });
        parsed.usage = Some((pt, ct));
        let stats = &self.stats;
        let cost = self.config.price.micro_usd(pt, ct);
        stats.prompt_tokens.fetch_add(pt, Ordering::Relaxed);
        stats.completion_tokens.fetch_add(ct, Ordering::Relaxed);
        self.spend(cost, pt + ct);
    }

    /// Commits an accounted answer to the cache under `key` (with what its transport writes
    /// beside it) and returns it to the caller once it is written (see `Cache::commit`).
    pub(crate) async fn commit(
        &self,
        call: &crate::Call,
        key: String,
        parsed: http::Parsed,
        annex: Option<Annex>,
    ) -> Result<crate::Completion, LlmError> {
        let inner = self;
        let (pt, ct) = parsed.usage.unwrap_or_default();
        let response = crate::CachedResponse {
            content: parsed.content,
            finish_reason: parsed.finish_reason,
            prompt_tokens: pt,
            completion_tokens: ct,
            raw: parsed.raw,
        };
        if let Some(cache) = &inner.cache {
            let model = &inner.config.model;
            cache
                .commit((&inner.endpoint, model), &key, call, &response, annex)
                .await?;
        }
        let logprobs = call.request.top_logprobs.is_some();
        Ok(response.into_completion(key, false, logprobs))
    }

    /// Sends one body with retries and accounts for what it cost; the answer's `usage` is
    /// filled in (estimated when the server sent none). A refusal of the structured-output
    /// `form` comes back at once as [`LlmError::FormRefused`]; 401/403/404, or a connection
    /// refused on every attempt, as [`LlmError::Endpoint`], after which every call fails so.
    pub(crate) async fn send(
        &self,
        http: &http::OpenAiHttp,
        body: &Value,
        (request, item): (&ChatRequest, &str),
        form: Form,
        probing: bool,
    ) -> Result<http::Parsed, LlmError> {
        let inner = self;
        let est_tokens = request.estimated_tokens();
        let mut attempt: u32 = 0;
        let mut every_attempt_unconnected = true;
        loop {
            let permit = inner.limiter.acquire(est_tokens).await;
            if let Some(e) = inner.stopped() {
                return Err(e);
            }
            inner.stats.upstream_calls.fetch_add(1, Ordering::Relaxed);
            let result = http.send(body, inner.config.request_timeout).await;
            drop(permit);
            let e = match result {
                Ok(mut parsed) => {
                    self.account(request, &mut parsed);
                    return Ok(parsed);
                }
                Err(e) => e,
            };
            let key = inner.config.api_key.expose();
            if form != Form::Off && structured::refuses_form(&e, probing) {
                let LlmError::Status { status, body, .. } = &e else {
                    unreachable!("refusals are statuses")
                };
                let said = endpoint::short(body, key);
                return Err(LlmError::FormRefused(format!("HTTP {status}: {said}")));
            }
            let named_by = &inner.config.named_by;
            if let Some(why) =
                endpoint::fatal_status(&e, (&inner.endpoint, &inner.config.model), named_by, key)
            {
                return Err(self.endpoint_down(why));
            }
            every_attempt_unconnected &= matches!(e, LlmError::Connect(_));
            if e.is_retryable() && attempt < inner.config.max_retries {
                attempt += 1;
                inner.stats.retries.fetch_add(1, Ordering::Relaxed);
                let wait = inner.config.retry_wait(&e, attempt);
                if e.retry_after().is_some() {
                    // The server asked every caller to wait, not only this one.
                    inner.limiter.pause_for(wait);
                }
                tracing::warn!(item = %item, attempt, wait_ms = wait.as_millis() as u64, error = %e, "retrying model call");
                tokio::time::sleep(wait).await;
                continue;
            }
            inner.stats.failures.fetch_add(1, Ordering::Relaxed);
            if every_attempt_unconnected {
                return Err(self.endpoint_down(endpoint::unreachable(
                    &e,
                    &inner.endpoint,
                    attempt + 1,
                    &inner.config.named_by.base_url,
                )));
            }
            return Err(if e.is_retryable() || attempt > 0 {
                LlmError::Exhausted {
                    attempts: attempt + 1,
                    last: Box::new(e),
                }
            } else {
                e
            });
        }
    }

    /// A round's error that says the endpoint is unusable (401/403/404 on the Files or Batch
    /// API, or no connection on any attempt) marks it dead; others are passed on.
    pub(crate) fn fatal_batch_error(&self, e: LlmError) -> LlmError {
        let inner = self;
        let (ep, model, key) = (
            &inner.endpoint,
            &inner.config.model,
            inner.config.api_key.expose(),
        );
        let last = match &e {
            LlmError::Exhausted { last, .. } => last.as_ref(),
            other => other,
        };
        let named_by = &inner.config.named_by;
        if let Some(why) = endpoint::fatal_status(last, (ep, model), named_by, key) {
            return self.endpoint_down(why);
        }
        if let LlmError::Status {
            status: 413, body, ..
        } = last
        {
            // Every later file would be as large: stop, nothing was submitted.
            return LlmError::Config(format!(
                "{ep} refused a batch input file as too large (HTTP 413: {}); lower --batch-max-mb or --batch-max-requests and run the same command again",
                endpoint::short(body, key)
            ));
        }
        if matches!(last, LlmError::Connect(_)) {
            let attempts = match &e {
                LlmError::Exhausted { attempts, .. } => *attempts,
                _ => 1,
            };
            return self.endpoint_down(endpoint::unreachable(
                last,
                ep,
                attempts,
                &named_by.base_url,
            ));
        }
        e
    }

    /// Marks the endpoint unusable (the first reason stays) and returns the error saying so.
    pub(crate) fn endpoint_down(&self, why: String) -> LlmError {
        LlmError::Endpoint(self.dead.get_or_init(|| why).clone())
    }
}
