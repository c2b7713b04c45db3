//! The build engine: recipes (files that describe a domain), the steps they chain, the
//! runner that feeds source records through those steps with bounded concurrency, and the
//! writers of every output file (atomic: temporary file, then rename).
//!
//! Flow of one recipe: read the source (streaming) and its joins -> map fields with the
//! recipe's expressions -> filters -> steps, item by item, concurrently -> outputs in source
//! order: the benchmark files, `rejects.jsonl`, `manifest.json`, the card, `runs.jsonl`.

pub mod build;
pub mod card;
pub mod error;
pub mod item;
pub mod join;
pub mod output;
pub mod progress;
pub mod prompt;
pub mod recipe;
pub mod source;
pub mod steps;

pub use build::{build_recipe, BuildOptions, BuildOutcome};
pub use error::EngineError;
pub use item::{CallRecord, Item};
pub use progress::{NoProgress, Progress};
pub use recipe::{load_recipes, Recipe};
