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
//! ConflictBank's figures from prediction files in its own layout: [`conflictbank`]; a
//! ConflictBank-style build written as its evaluation input: [`conflictbank_export`]; a model
//! asked it in ConflictBank's settings, its answers written in that layout and scored by the
//! same code: [`conflictbank_run`].
//!
//! The offline backend has nothing to evaluate (it would only echo rules), so the CLI
//! refuses it; the dry-run backend counts the calls and writes nothing.

pub mod charts;
pub mod compare;
pub mod conflictbank;
pub mod conflictbank_export;
pub mod conflictbank_prob;
pub mod conflictbank_run;
pub mod error;
pub mod export;
mod figures;
pub mod kre;
mod kre_tables;
pub mod metric;
mod options;
mod outcomes;
pub mod recall;
pub mod report;
pub mod run;
pub mod scores;
pub mod source;
mod templates;

pub use error::EvalError;
pub use metric::Metric;
pub use options::EvalOptions;
pub use report::{Figure, Predictions, Results};
pub use run::Sampling;
