//! Engine errors: everything that stops a build (as opposed to rejecting one item).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A recipe, prompt or option is wrong: the CLI exits with code 2.
    #[error("{0}")]
    Config(String),
    /// A source file cannot be read, or (with `--strict`) a record is malformed.
    #[error("{0}")]
    Input(String),
    /// The budget is spent: nothing was written for this recipe; run again to resume.
    #[error("{0}")]
    Budget(String),
    /// The LLM layer failed in a way that concerns the whole build (cache, replay miss,
    /// endpoint unusable). Transparent: its message is printed once.
    #[error(transparent)]
    Llm(#[from] cb_llm::LlmError),
    /// A task of the build ended without its item (it panicked, or was dropped): the CLI
    /// exits with code 1 naming what was lost, never the configuration code.
    #[error("{0}")]
    Lost(String),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl EngineError {
    /// A configuration error (exit code 2): the run could not have made progress, so it
    /// leaves no trace (no `runs.jsonl` line).
    pub fn is_config(&self) -> bool {
        matches!(
            self,
            Self::Config(_) | Self::Llm(cb_llm::LlmError::Config(_))
        )
    }
}

impl From<cb_step::StepError> for EngineError {
    fn from(e: cb_step::StepError) -> Self {
        match e {
            cb_step::StepError::Config(m) => Self::Config(m),
            cb_step::StepError::Budget(m) => Self::Budget(m),
            cb_step::StepError::Llm(e) => Self::Llm(e),
        }
    }
}

impl From<cb_readers::ReadError> for EngineError {
    fn from(e: cb_readers::ReadError) -> Self {
        match e {
            cb_readers::ReadError::Config(m) => Self::Config(m),
            other => Self::Input(other.to_string()),
        }
    }
}
