//! Sending the evaluation prompts through the LLM layer, bounded, in a stable order.

use crate::EvalError;
use cb_llm::Progress;
use cb_llm::{Call, Llm, Message};
use cb_step::choice::Extracted;
use std::collections::BTreeMap;

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
    /// Ask for the first answer token's top N log-probabilities (`None`: not asked).
    pub top_logprobs: Option<u8>,
}

/// The model's answer to one job.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    pub raw: String,
    /// The cache key of the request (the prompt key in `predictions.jsonl`).
    pub key: String,
    /// The reason code when the call failed for good (the answer then counts as invalid).
    pub error: Option<String>,
    /// The first answer token's top log-probabilities, when asked for and sent.
    pub top_logprobs: Option<Vec<cb_llm::TopLogprob>>,
}

/// Sampling settings of the model under test.
pub use cb_step::choice::Sampling;

fn call(job: &Job, sampling: Sampling) -> Call {
    // No offline answer: the dry-run backend "answers" nothing, so a dry run only counts calls.
    let mut call = cb_step::choice::call(
        job.messages.clone(),
        (&job.template, &job.template_hash),
        &job.label,
        Some(job.seed),
        sampling,
        String::new(),
    );
    call.request.top_logprobs = job.top_logprobs;
    call
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

/// Answers the jobs as `jobs` makes them, at most `2 × concurrency` made and not yet handed
/// on (the LLM layer's own limiter bounds the calls), and hands each reply with its job's
/// `meta` to `done` in job order: memory holds the jobs in that window, never all of them.
/// `total` is the number of jobs, for the progress bar. A fatal error of the layer (budget,
/// cache, replay miss), of `jobs` or of `done` stops the run; any other failure of a call
/// becomes an invalid answer with its reason code.
#[allow(clippy::too_many_arguments)]
pub async fn run_stream<M>(
    llm: &Llm,
    jobs: impl Iterator<Item = Result<(Job, M), EvalError>>,
    sampling: Sampling,
    concurrency: usize,
    name: &str,
    total: u64,
    progress: &dyn Progress,
    mut done: impl FnMut(M, Reply) -> Result<(), EvalError>,
) -> Result<(), EvalError> {
    progress.start(name, total);
    let window = concurrency.max(1) * 2;
    let mut set = tokio::task::JoinSet::new();
    let mut metas: BTreeMap<usize, M> = BTreeMap::new();
    let mut ready: BTreeMap<usize, Reply> = BTreeMap::new();
    let (mut made, mut handed) = (0usize, 0usize);
    let mut jobs = jobs.fuse();
    loop {
        while made < handed + window {
            let Some(next) = jobs.next() else { break };
            let (job, meta) = match next {
                Ok(j) => j,
                Err(e) => return Err(wind_down(llm, &mut set, e).await),
            };
            metas.insert(made, meta);
            let llm = llm.clone();
            set.spawn(async move {
                let c = call(&job, sampling);
                let key = llm.key_of(&c);
                (made, key, llm.complete(&c).await, job.label)
            });
            made += 1;
        }
        let Some(joined) = set.join_next().await else {
            break;
        };
        let (i, key, result, label) =
            joined.map_err(|e| EvalError::Config(format!("task failed: {e}")))?;
        let reply = match reply(result, key, &label) {
            Ok(r) => r,
            Err(e) => return Err(wind_down(llm, &mut set, e).await),
        };
        progress.item_done(name, &llm.stats());
        ready.insert(i, reply);
        while let Some(r) = ready.remove(&handed) {
            let meta = metas.remove(&handed).expect("a meta per job made");
            if let Err(e) = done(meta, r) {
                return Err(wind_down(llm, &mut set, e).await);
            }
            handed += 1;
        }
    }
    progress.finish(name, total, 0);
    Ok(())
}

/// Ends a run on the error `e` (given back): the layer sends nothing more, and the calls
/// already sent are waited for, not dropped: each answer that comes is paid for, and kept in
/// the cache for the next run (a budget stop used to drop them, and the next run paid again).
async fn wind_down<T: 'static>(
    llm: &Llm,
    set: &mut tokio::task::JoinSet<T>,
    e: EvalError,
) -> EvalError {
    llm.stop(&e.to_string());
    while set.join_next().await.is_some() {}
    e
}

/// The reply of a call: its answer, or an invalid one with the reason of its failure; `Err`
/// for an error that stops the run.
fn reply(
    result: Result<cb_llm::Completion, cb_llm::LlmError>,
    key: String,
    label: &str,
) -> Result<Reply, EvalError> {
    match result {
        Ok(c) => Ok(Reply {
            raw: c.text,
            key: c.cache_key,
            error: None,
            top_logprobs: c.top_logprobs,
        }),
        Err(e) if e.is_fatal() => Err(e.into()),
        Err(e) => {
            tracing::warn!(item = %label, error = %e, "no answer; counted as invalid");
            Ok(Reply {
                raw: String::new(),
                key,
                error: Some(e.reason_code()),
                top_logprobs: None,
            })
        }
    }
}

/// Answers every job (see [`run_stream`]); the replies in job order.
pub async fn run_jobs(
    llm: &Llm,
    jobs: Vec<Job>,
    sampling: Sampling,
    concurrency: usize,
    name: &str,
    progress: &dyn Progress,
) -> Result<Vec<Reply>, EvalError> {
    let total = jobs.len() as u64;
    let mut replies = Vec::with_capacity(jobs.len());
    let jobs = jobs.into_iter().map(|j| Ok((j, ())));
    run_stream(
        llm,
        jobs,
        sampling,
        concurrency,
        name,
        total,
        progress,
        |(), r| {
            replies.push(r);
            Ok(())
        },
    )
    .await?;
    Ok(replies)
}
