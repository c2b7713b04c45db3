//! Errors of an evaluation.

use cb_llm::LlmError;

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A bad option or a missing input (exit code 2 in the CLI).
    #[error("{0}")]
    Config(String),
    /// A benchmark file that cannot be read or parsed (names the file and line or record).
    #[error(transparent)]
    Data(#[from] cb_audit::AuditError),
    /// The budget is spent: the answers so far are cached; run again to continue.
    #[error("budget reached: {0}")]
    Budget(String),
    /// An error of the LLM layer that stops the run (cache, replay miss, configuration).
    #[error("{0}")]
    Llm(LlmError),
    /// An output file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

impl From<LlmError> for EvalError {
    fn from(e: LlmError) -> Self {
        match e {
            LlmError::Budget(m) => EvalError::Budget(m),
            other => EvalError::Llm(other),
        }
    }
}
