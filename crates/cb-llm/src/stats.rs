//! The counters of one layer ([`Stats`]) and their plain copy ([`StatsSnapshot`]).

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of one run of the layer, for progress bars and `runs.jsonl`.
#[derive(Debug, Default)]
pub struct Stats {
    pub calls: AtomicU64,
    pub upstream_calls: AtomicU64,
    pub cache_hits: AtomicU64,
    pub retries: AtomicU64,
    pub failures: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub completion_tokens: AtomicU64,
    /// Cost of the upstream calls of this run, in micro-dollars.
    pub spent_micro_usd: AtomicU64,
    /// Tokens of the upstream calls of this run (what `--max-tokens` limits).
    pub upstream_tokens: AtomicU64,
    /// For dry runs: estimated tokens of the calls that would go upstream.
    pub estimated_tokens: AtomicU64,
    /// Batches submitted by this run (`--batch`).
    pub batches: AtomicU64,
}

/// A plain copy of [`Stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct StatsSnapshot {
    pub calls: u64,
    pub upstream_calls: u64,
    pub cache_hits: u64,
    pub retries: u64,
    pub failures: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub spent_usd: f64,
    pub estimated_tokens: u64,
    pub batches: u64,
}

impl Stats {
    pub fn snapshot(&self) -> StatsSnapshot {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        StatsSnapshot {
            calls: g(&self.calls),
            upstream_calls: g(&self.upstream_calls),
            cache_hits: g(&self.cache_hits),
            retries: g(&self.retries),
            failures: g(&self.failures),
            prompt_tokens: g(&self.prompt_tokens),
            completion_tokens: g(&self.completion_tokens),
            spent_usd: g(&self.spent_micro_usd) as f64 / 1e6,
            estimated_tokens: g(&self.estimated_tokens),
            batches: g(&self.batches),
        }
    }
}
