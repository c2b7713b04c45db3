//! Progress reporting: the library code that drives calls through the layer (a build, an
//! evaluation) calls these hooks with the layer's counters; the CLI draws bars.

use crate::StatsSnapshot;

/// Implemented by whoever shows progress. Every method has a no-op default.
pub trait Progress: Send + Sync {
    /// A recipe starts processing `total` items (0 when nothing [`Progress::shows_total`]
    /// and no step needs a first pass over the source: then the items are not counted).
    fn start(&self, _recipe: &str, _total: u64) {}
    /// Whether the total passed to [`Progress::start`] is shown: when it is not, a recipe
    /// whose steps declare no view skips the first pass over its source, which would only
    /// count the items.
    fn shows_total(&self) -> bool {
        false
    }
    /// One more item is finished (written or rejected); `llm` is the layer's counters.
    fn item_done(&self, _recipe: &str, _llm: &StatsSnapshot) {}
    /// A recipe is done.
    fn finish(&self, _recipe: &str, _rows: u64, _rejected: u64) {}
}

/// Reports nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProgress;

impl Progress for NoProgress {}
