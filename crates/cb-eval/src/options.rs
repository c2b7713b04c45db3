//! What an evaluation is asked to do ([`EvalOptions`]) and the settings it runs.

use crate::error::EvalError;
use crate::run::Sampling;
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
    /// ConflictBank only: ask for the top N log-probabilities of the answer's first token,
    /// from which the option probabilities and their entropy come (`None` or 0: not asked).
    pub logprobs: Option<u8>,
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
