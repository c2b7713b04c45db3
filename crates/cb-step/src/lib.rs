//! What a construction step is, for the engine that drives steps and for the crates that
//! implement them. The engine (`cb-engine`) knows no particular step and the steps
//! (`cb-steps`) know nothing of the engine: both depend on this crate only.
//!
//! - [`Step`]: one construction step; it reads fields of an [`Item`] and adds its own.
//! - [`StepCtx`]: what a run needs besides the item (the LLM layer, the template
//!   environment, the seed, the [`Corpus`]: the compact views of the whole build that the
//!   engine fills in a first pass, those the steps declare).
//! - [`Registry`]: the table from a recipe's `kind = "..."` to the step's constructor; the
//!   steps crate declares it, whoever builds hands it to the engine.
//! - [`ask()`]: how a step asks the model: render the prompt, call, validate, send an
//!   unusable answer back with the reason, record the lineage. Steps never learn which
//!   backend answered: each supplies its own rule-based answer for the offline backend.
//! - [`choice`]: how a multiple-choice question is asked and its letter read back, by the
//!   reader check of a build and by `conflictbench eval` alike.

pub mod ask;
pub mod choice;
pub mod corpus;
mod ctx;
mod error;
pub mod fields;
pub mod files;
pub mod item;
pub mod params;
pub mod prompt;
pub mod routes;
pub mod schema;
pub mod spec;
mod step;
pub mod template;

pub use ask::{
    ask, clean_text_answer, extract_json, Ask, Guesses, LlmParams, Model, ModelBacked, ModelStep,
    OnInvalid, GUESS_CODES, WARNINGS_FIELD,
};
pub use corpus::{view, view_keyed, Corpus, Indexer, Peer, View, ViewSpec};
pub use ctx::StepCtx;
pub use error::{StepError, StepFailure};
pub use files::Files;
pub use item::{CallRecord, Item};
pub use prompt::Prompt;
pub use routes::Routes;
pub use spec::StepSpec;
pub use step::{Constructor, Registry, Step, StepFields, StepFuture, StepKind};

/// The item field (and the rows' column) that holds what the reader picked in each check of
/// the item; the old name of [`fields::READER`].
pub use fields::READER as READER_FIELD;
