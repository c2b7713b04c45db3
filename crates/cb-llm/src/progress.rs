//! Progress reporting: the library code that drives calls through the layer (a build, an
//! evaluation) calls these hooks with the layer's counters; the CLI draws bars.

use crate::StatsSnapshot;

/// Implemented by whoever shows progress. Every method has a no-op default.
pub trait Progress: Send + Sync {
    /// A recipe starts processing `total` items.
    fn start(&self, _recipe: &str, _total: u64) {}
    /// One more item is finished (written or rejected); `llm` is the layer's counters.
    fn item_done(&self, _recipe: &str, _llm: &StatsSnapshot) {}
    /// A recipe is done.
    fn finish(&self, _recipe: &str, _rows: u64, _rejected: u64) {}
}

/// Reports nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProgress;

impl Progress for NoProgress {}
