//! The errors of a step: a configuration error ([`StepError`]) and why an item ends
//! ([`StepFailure`]).

/// Errors that stop a build (as opposed to rejecting one item).
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// A recipe's step entry or a prompt is wrong.
    #[error("{0}")]
    Config(String),
    /// The budget is spent.
    #[error("{0}")]
    Budget(String),
    /// The LLM layer failed in a way that concerns the whole build (cache, replay miss).
    #[error("{0}")]
    Llm(#[from] cb_llm::LlmError),
}

/// Why a step did not produce its output for an item.
#[derive(Debug)]
pub enum StepFailure {
    /// The item goes to `rejects.jsonl`.
    Reject {
        reason: String,
        detail: String,
        raw: Option<String>,
        attempts: u32,
    },
    /// The build stops (budget spent, cache broken, replay miss).
    Fatal(StepError),
    /// Not run because another item's fatal failure is stopping the build.
    Cancelled,
}

impl StepFailure {
    /// A call that failed for good: a fatal error of the layer (budget, cache, replay miss)
    /// stops the build; any other rejects the item with its reason code, `context` before
    /// the error in the detail, and the requests it took after `earlier` ones.
    pub fn from_llm(e: cb_llm::LlmError, context: &str, earlier: u32) -> Self {
        if e.is_fatal() {
            return Self::Fatal(match e {
                cb_llm::LlmError::Budget(m) => StepError::Budget(m),
                other => StepError::Llm(other),
            });
        }
        Self::Reject {
            reason: e.reason_code(),
            detail: format!("{context}: {e}"),
            raw: e.raw().map(str::to_owned),
            attempts: earlier + e.attempts(),
        }
    }

    pub fn reject(reason: &str, detail: impl Into<String>) -> Self {
        Self::Reject {
            reason: reason.into(),
            detail: detail.into(),
            raw: None,
            attempts: 0,
        }
    }
}
