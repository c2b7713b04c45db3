//! cb-eval: evaluates a model on a built benchmark (ours, or KRE's released files as they
//! are) with the papers' metrics, through the same LLM layer as the build (cache, limits,
//! resume, budget).
//!
//! Flow: read the benchmark files one record at a time ([`source`]: a first pass checks,
//! counts and hashes the rows; errors name file and line or record) -> make one prompt per
//! item, setting and seed as the rows are read again (`prompts/eval/*.md`; option order
//! seeded with `cb_model::item_rng`) -> [`run::run_stream`] (a bounded window of jobs, replies
//! handed on in job order) -> [`cb_step::choice::extract`] the chosen option (the letter
//! extraction the build's reader check uses too) -> each answer kept as a compact per-item
//! score ([`scores`]) and its prediction line spooled to a temporary file -> every figure by
//! its one formula ([`metric`]) per seed, mean and standard deviation over seeds, bootstrap
//! interval over items -> `predictions.jsonl`, `results.json`, `results.md`, `results.html`
//! ([`report`]). Memory holds the jobs in flight and a few bytes per item and seed, never the
//! rows or the prediction lines. `eval compare` ([`compare`]) recomputes the figures from
//! `predictions.jsonl` through the same scores and formulas.
//!
//! The offline backend has nothing to evaluate (it would only echo rules), so the CLI
//! refuses it; the dry-run backend counts the calls and writes nothing.

pub mod charts;
pub mod compare;
pub mod error;
pub mod export;
pub mod kre;
mod kre_tables;
pub mod metric;
pub mod recall;
pub mod report;
pub mod run;
pub mod scores;
pub mod source;

pub use error::EvalError;
pub use metric::Metric;
pub use report::{Figure, Predictions, Results};
pub use run::Sampling;

use cb_llm::Message;
use cb_metrics::Summary;
use cb_step::Prompt;
use scores::Scores;
use std::path::PathBuf;

/// What an evaluation reads, sends and writes.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// Benchmark files or folders (a build's `generated/<benchmark>`, or released files).
    pub data: Vec<PathBuf>,
    /// The prompts folder (`prompts/`); templates are read from its `eval/` sub-folder.
    pub prompts: cb_step::Files,
    /// Only these domains (all when empty).
    pub domains: Vec<String>,
    /// Only these settings (the benchmark's defaults when empty).
    pub settings: Vec<String>,
    /// One run per seed.
    pub seeds: Vec<u64>,
    /// At most this many rows per domain and file.
    pub limit: Option<usize>,
    pub sampling: Sampling,
    /// Requests in flight (the LLM layer bounds the calls themselves).
    pub concurrency: usize,
    /// KRE only: KRE's instruction pool (`instructions/`), used instead of ours.
    pub kre_instructions: Option<PathBuf>,
    /// KRE only: which instruction of the pool (`N.txt`).
    pub instruction: String,
    /// KRE only: take the pool's instructions that warn the context may mislead.
    pub hint: bool,
    /// KRE only: KRE's few-shot examples (`prompt_examples/`), used instead of examples drawn
    /// from the benchmark's other rows.
    pub kre_examples: Option<PathBuf>,
}

/// The settings to run: `wanted` (checked against `known`) or all of `known`.
pub(crate) fn settings(wanted: &[String], known: &[&str]) -> Result<Vec<String>, EvalError> {
    if wanted.is_empty() {
        return Ok(known.iter().map(|s| (*s).to_owned()).collect());
    }
    for w in wanted {
        if !known.contains(&w.as_str()) {
            return Err(EvalError::Config(format!(
                "unknown setting {w:?}; known: {}",
                known.join(", ")
            )));
        }
    }
    Ok(known
        .iter()
        .filter(|k| wanted.iter().any(|w| w == *k))
        .map(|s| (*s).to_owned())
        .collect())
}

/// The eval prompt templates, loaded once.
pub(crate) struct Templates {
    env: minijinja::Environment<'static>,
}

pub(crate) use cb_step::choice::option_views;

impl Templates {
    pub fn new() -> Self {
        Templates {
            env: cb_step::template::environment(),
        }
    }

    /// The template `eval/{name}` of the prompt set.
    pub fn load(files: &cb_step::Files, name: &str) -> Result<Prompt, EvalError> {
        Prompt::load(files, &format!("eval/{name}")).map_err(|e| EvalError::Config(e.to_string()))
    }

    /// Renders a template into the conversation to send.
    pub fn render(&self, p: &Prompt, ctx: minijinja::Value) -> Result<Vec<Message>, EvalError> {
        p.render(&self.env, &ctx).map_err(EvalError::Config)
    }
}

/// Builds a [`Figure`]: `g(seed, items)` is the figure of one seed over the items at these
/// indices (with repeats in a bootstrap resample; `0..n_items` is the observed sample). The
/// value per seed is `g` over all items; the interval is the percentile bootstrap of the mean
/// over seeds, the same resampled items for every seed ([`cb_metrics::bootstrap`]).
pub(crate) fn figure(
    domain: &str,
    task: &str,
    setting: &str,
    metric: Metric,
    n_items: usize,
    seeds: &[u64],
    g: &dyn Fn(u64, &[usize]) -> Option<f64>,
) -> Figure {
    let id = format!("{domain}/{task}/{setting}/{metric}");
    let interval = cb_metrics::bootstrap::interval(
        n_items,
        report::BOOTSTRAP_RESAMPLES,
        report::BOOTSTRAP_SEED,
        &id,
        |idx| Summary::of(seeds.iter().map(|s| g(*s, idx))).mean,
    );
    let all: Vec<usize> = (0..n_items).collect();
    let per_seed: Vec<Option<f64>> = seeds.iter().map(|s| g(*s, &all)).collect();
    Figure {
        domain: domain.to_owned(),
        task: task.to_owned(),
        setting: setting.to_owned(),
        metric,
        n_items,
        summary: Summary::of(per_seed.iter().copied()),
        interval,
        per_seed,
    }
}

/// Every figure of `task` that the settings `run` allow ([`metric::candidates`],
/// [`metric::reads`]), each from `scores` by its one formula, with its `n_items`.
pub(crate) fn figures_of(
    domain: &str,
    task: &str,
    scores: &Scores,
    run: &[String],
    seeds: &[u64],
) -> Vec<Figure> {
    metric::candidates(task)
        .into_iter()
        .filter(|(setting, m)| {
            metric::reads(task, setting, *m).is_some_and(|r| r.resolve(run).is_ok())
        })
        .map(|(setting, m)| {
            let g = |seed: u64, idx: &[usize]| m.value(setting, &scores.seed(seed), idx);
            Figure {
                n_items: m.n_items(scores, seeds),
                ..figure(domain, task, setting, m, scores.n, seeds, &g)
            }
        })
        .collect()
}

/// The mean of per-seed counts, rounded up (a subset that some seed has is never `n = 0`):
/// the `n` of a figure on a subset of the items that each seed draws itself (the items a
/// model knows).
pub(crate) fn mean_count(counts: impl Iterator<Item = usize>) -> usize {
    let (mut sum, mut k) = (0, 0);
    for c in counts {
        sum += c;
        k += 1;
    }
    if k == 0 {
        0
    } else {
        sum.div_ceil(k)
    }
}
