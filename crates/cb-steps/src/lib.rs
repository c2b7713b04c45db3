//! The papers' construction steps, one module per step. Each module holds, side by side,
//! what its prompt sees (the variables it adds to the item's fields), how the model's
//! answer is validated (with stable reason codes), and the deterministic offline rule that
//! answers in place of a model on the offline backend.
//!
//! KRE (Li et al.), commonsense part (CoS-E, ECQA, e-CARE):
//! [`pick_negative`] -> [`negative_explanation`].
//! KRE, reading-comprehension part (SQuAD v2.0, MuSiQue):
//! [`distractors`] -> [`negative_context`].
//! RECALL (sections 2.3 to 2.5), EventKG records and UJ terms:
//! [`paraphrase`] -> [`qa`] -> [`answer_edit`] -> [`nonanswer_edit`] (word-grained) and
//! [`nonanswer_edit::sentence`] (sentence-grained, kind `insert_sentence`).
//!
//! Every bundled recipe ends with [`reader_check`]: a reader model answers the benchmark's
//! own question from the generated context alone (the papers' human check, automated).
//!
//! General step kinds, named for what they do, whose fields are the recipe's parameters
//! ([`general`]): `draw_from_pool`, `pick_value`, `compose`, `write_text`, `make_options`;
//! with [`reader_check`]'s `mode = "fields"` they make ConflictBank-style constructions
//! from recipes alone.
//!
//! A new step is one module here and one line in [`STEPS`].

pub mod answer_edit;
pub mod distractors;
pub mod general;
pub mod negative_context;
pub mod negative_explanation;
pub mod nonanswer_edit;
pub mod paraphrase;
pub mod pick_negative;
pub mod qa;
pub mod reader_check;
pub mod reading;
pub mod reasons;
pub mod recall;
mod registry;

/// What every step module imports from the step API.
mod prelude;

pub use registry::STEPS;
