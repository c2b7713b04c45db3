//! The build engine: recipes (files that describe a domain), the runner that feeds source
//! records through the steps a recipe chains with bounded concurrency, and the writers of
//! every output file (atomic: temporary file, then rename). The engine knows no particular
//! step: it drives items through [`cb_step::Step`]s built from the step table
//! ([`cb_step::Registry`]) that whoever builds hands it in [`BuildOptions::steps`].
//!
//! Flow of one recipe: read the joined side tables -> a first pass over the primary source
//! (record by record: map fields with the recipe's expressions, filters) that fills the
//! compact views the steps declare -> a second pass, each item through the steps in a window
//! bounded by the items in flight, each finished row and reject written at once in source
//! order (a reorder buffer no larger than the window) to temporary files -> renamed into
//! place with `manifest.json` and the card once every item has ended -> `runs.jsonl`.
//! Memory grows with the window, the joined tables and the views, not with the rows.

pub mod build;
pub mod card;
pub mod error;
pub mod expr;
pub mod format;
pub mod hub;
mod inputs;
pub mod join;
pub mod output;
mod per_model;
pub mod recipe;
pub mod rows;
pub mod source;
mod tally;

pub use build::{build_recipe, build_recipes, BuildOptions, BuildOutcome, RecipeJob};
pub use cb_llm::{NoProgress, Progress};
pub use cb_step::Files;
pub use cb_step::{CallRecord, Item, Routes, Step};
pub use error::EngineError;
pub use recipe::{load_recipes, Recipe};
