//! Sending the evaluation prompts through the LLM layer, bounded, in a stable order.

use crate::EvalError;
use cb_llm::Progress;
use cb_llm::{Call, Llm, Message};
use cb_step::choice::Extracted;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// One prompt to send.
#[derive(Debug, Clone)]
pub struct Job {
    /// `domain/task/setting/seed/item`, for logs and error messages.
    pub label: String,
    /// The conversation: system part, worked examples, user part.
    pub messages: Vec<Message>,
    /// Prompt template name and hash (stored beside the answer in the cache).
    pub template: String,
    pub template_hash: String,
    pub seed: u64,
}

/// The model's answer to one job.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    pub raw: String,
    /// The cache key of the request (the prompt key in `predictions.jsonl`).
    pub key: String,
    /// The reason code when the call failed for good (the answer then counts as invalid).
    pub error: Option<String>,
}

/// Sampling settings of the model under test.
pub use cb_step::choice::Sampling;

fn call(job: &Job, sampling: Sampling) -> Call {
    // No offline answer: the dry-run backend "answers" nothing, so a dry run only counts calls.
    cb_step::choice::call(
        job.messages.clone(),
        (&job.template, &job.template_hash),
        &job.label,
        Some(job.seed),
        sampling,
        String::new(),
    )
}

/// Extracts the choice of a model reply; a call that failed for good is invalid (`error`).
pub fn extract_reply(reply: &Reply, options: &[String]) -> Extracted {
    if reply.error.is_some() {
        Extracted {
            choice: None,
            how: "error",
        }
    } else {
        cb_step::choice::extract(&reply.raw, options)
    }
}

/// Answers every job, at most `2 × concurrency` in flight (the LLM layer's own limiter
/// bounds the calls); replies come back in job order. A fatal error of the layer (budget,
/// cache, replay miss) stops the run; any other failure becomes an invalid answer with its
/// reason code.
pub async fn run_jobs(
    llm: &Llm,
    jobs: Vec<Job>,
    sampling: Sampling,
    concurrency: usize,
    name: &str,
    progress: &dyn Progress,
) -> Result<Vec<Reply>, EvalError> {
    progress.start(name, jobs.len() as u64);
    let permits = Arc::new(Semaphore::new(concurrency.max(1) * 2));
    let mut set = tokio::task::JoinSet::new();
    let total = jobs.len();
    for (i, job) in jobs.into_iter().enumerate() {
        let llm = llm.clone();
        let permits = permits.clone();
        set.spawn(async move {
            let _permit = permits
                .acquire_owned()
                .await
                .expect("semaphore never closed");
            let c = call(&job, sampling);
            let key = llm.key_of(&c);
            (i, key, llm.complete(&c).await, job.label)
        });
    }
    let mut replies = vec![Reply::default(); total];
    while let Some(joined) = set.join_next().await {
        let (i, key, result, label) =
            joined.map_err(|e| EvalError::Config(format!("task failed: {e}")))?;
        replies[i] = match result {
            Ok(c) => Reply {
                raw: c.text,
                key: c.cache_key,
                error: None,
            },
            Err(e) if e.is_fatal() => {
                set.abort_all();
                return Err(e.into());
            }
            Err(e) => {
                tracing::warn!(item = %label, error = %e, "no answer; counted as invalid");
                Reply {
                    raw: String::new(),
                    key,
                    error: Some(e.reason_code()),
                }
            }
        };
        progress.item_done(name, &llm.stats());
    }
    progress.finish(name, total as u64, 0);
    Ok(replies)
}
