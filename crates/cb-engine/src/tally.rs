//! What the items of a recipe add up to as they end: how each ended, what it counts for the
//! manifest (steps, calls, readers, models), the first failure that stops the build, and
//! what is written in its place.

use crate::output::Encoded;
use crate::{EngineError, Item};
use cb_model::manifest::LlmTotals;
use cb_model::{Reject, StageCounts};
use cb_step::{Step, StepFailure};
use std::collections::BTreeMap;

/// Where an item ended: finished, or rejected by step `usize`.
pub(crate) type Ended = Result<(), (usize, StepFailure)>;

/// Whether an item ended waiting for batch files to be answered ([`cb_llm::LlmError::Waiting`]):
/// its request is in a file, the item itself is let go (the next build run reads it again and
/// finds its earlier answers in the cache), and the build reads on, so that one run writes
/// the files of every item while it holds only a window of them.
pub(crate) fn waits(f: &StepFailure) -> bool {
    matches!(
        f,
        StepFailure::Fatal(cb_step::StepError::Llm(cb_llm::LlmError::Waiting(_)))
    )
}

/// How an item or a loading reject ended, waiting in the reorder buffer for its turn to be
/// written.
pub(crate) enum Done {
    /// A row, serialised by the item's task (or why it could not be).
    Row(Result<Encoded, EngineError>),
    Reject(Reject),
    /// Cancelled, or ended by a fatal failure: nothing to write (the build fails).
    Nothing,
}

/// What an item's task hands back: the item, how its steps ended and, when they all
/// passed, its rows serialised for the output files (nothing otherwise).
pub(crate) struct Finished {
    pub(crate) item: Item,
    pub(crate) ended: Ended,
    pub(crate) rows: Result<Encoded, EngineError>,
    /// The rows of an item the reader check refused, for its reject
    /// ([`crate::output::Encoder::refused`]).
    pub(crate) refused: Option<Result<serde_json::Value, EngineError>>,
}

/// What running the items gave, before the accounting.
pub(crate) struct Ran {
    pub(crate) counts: Counts,
    /// The counts of the loading stages (read, join, map, filter) and the filtered records
    /// by reason.
    pub(crate) loading: (Vec<StageCounts>, BTreeMap<String, u64>),
    /// The first fatal failure of a step; it stopped the others.
    pub(crate) fatal: Option<EngineError>,
    /// Items wait for answers to batch files: the build reads on, writes nothing and ends
    /// with this error (exit code 4 from the CLI).
    pub(crate) waiting: Option<EngineError>,
    /// A failure of the source or the writer; it stopped the build too.
    pub(crate) broken: Option<EngineError>,
}

/// What a run counts for the manifest, as items end.
pub(crate) struct Counts {
    /// Per step: in, rejected and reasons (out is set by the accounting).
    pub(crate) steps: Vec<StageCounts>,
    /// Calls and tokens of the items' model calls (the price is set by the accounting).
    pub(crate) llm: LlmTotals,
    /// Per reader check: how many rows it was asked for and how many it passed; with several
    /// readers, each one's and their agreement.
    pub(crate) readers: cb_model::manifest::ReaderTally,
    /// The calls by named model and step (the manifest's `models`).
    pub(crate) models: crate::per_model::CallTally,
}

impl Ran {
    /// Takes in one item that ended: its reader verdicts, its calls, the steps it entered and
    /// the one that rejected it. Gives what is to be written in its place.
    pub(crate) fn add(&mut self, steps: &[Box<dyn Step>], finished: Finished) -> Done {
        let Finished {
            item,
            ended,
            rows,
            refused,
        } = finished;
        if let Some(r) = item.fields.get(cb_step::READER_FIELD) {
            self.counts.readers.add(r);
        }
        for c in &item.calls {
            self.counts.llm.calls += 1;
            self.counts.llm.prompt_tokens += c.prompt_tokens;
            self.counts.llm.completion_tokens += c.completion_tokens;
            self.counts.models.add(c);
        }
        let reached = match &ended {
            Ok(()) => steps.len(),
            Err((i, _)) => *i + 1,
        };
        for c in self.counts.steps.iter_mut().take(reached) {
            c.in_ += 1;
        }
        match ended {
            Ok(()) => Done::Row(rows),
            Err((_, f)) if waits(&f) => {
                if let StepFailure::Fatal(e) = f {
                    self.waiting.get_or_insert(e.into());
                }
                Done::Nothing
            }
            Err((_, StepFailure::Fatal(e))) => {
                self.fatal.get_or_insert(e.into());
                Done::Nothing
            }
            Err((_, StepFailure::Cancelled)) => Done::Nothing,
            Err((
                i,
                StepFailure::Reject {
                    reason,
                    detail,
                    raw,
                    attempts,
                },
            )) => {
                let c = &mut self.counts.steps[i];
                c.rejected += 1;
                *c.reasons.entry(reason.clone()).or_default() += 1;
                let row = match refused.transpose() {
                    Ok(row) => row,
                    Err(e) => return Done::Row(Err(e)),
                };
                Done::Reject(Reject {
                    id: item.id,
                    origin: item.origin.to_string(),
                    stage: steps[i].name().to_owned(),
                    reason,
                    detail,
                    raw_response: raw,
                    attempts,
                    row,
                })
            }
        }
    }
}
