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

/// Two layers' counters, added up.
impl std::ops::Add for StatsSnapshot {
    type Output = Self;

    fn add(self, s: Self) -> Self {
        StatsSnapshot {
            calls: self.calls + s.calls,
            upstream_calls: self.upstream_calls + s.upstream_calls,
            cache_hits: self.cache_hits + s.cache_hits,
            retries: self.retries + s.retries,
            failures: self.failures + s.failures,
            prompt_tokens: self.prompt_tokens + s.prompt_tokens,
            completion_tokens: self.completion_tokens + s.completion_tokens,
            spent_usd: self.spent_usd + s.spent_usd,
            estimated_tokens: self.estimated_tokens + s.estimated_tokens,
            batches: self.batches + s.batches,
        }
    }
}

impl std::ops::AddAssign for StatsSnapshot {
    fn add_assign(&mut self, s: Self) {
        *self = *self + s;
    }
}

/// Several layers' counters, added up in order.
impl std::iter::Sum for StatsSnapshot {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::default(), |a, s| a + s)
    }
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
