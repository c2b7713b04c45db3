//! Errors of the LLM layer, each with a stable reason code for rejects.

use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The server answered with a non-success status.
    #[error("HTTP {status}: {body}")]
    Status {
        status: u16,
        retry_after: Option<Duration>,
        body: String,
    },
    /// No answer in time.
    #[error("request timed out after {0:?}")]
    Timeout(Duration),
    /// The connection failed or broke (refused, reset, closed mid-body).
    #[error("connection error: {0}")]
    Connection(String),
    /// The server answered 200 with a body that is not a usable chat completion.
    #[error("malformed response: {reason}")]
    Malformed { reason: String, raw: String },
    /// A batch answered a request with an error of its own (expired, cancelled, failed).
    #[error("batch: {code}: {message}")]
    Batch { code: String, message: String },
    /// Retries ran out; `last` is the last error.
    #[error("gave up after {attempts} attempts: {last}")]
    Exhausted { attempts: u32, last: Box<LlmError> },
    /// The replay backend found no cached answer.
    #[error("replay: no cached answer for item {item} (template {template}, key {key})")]
    ReplayMiss {
        key: String,
        template: String,
        item: String,
    },
    /// The budget (`--max-cost`, `--max-tokens`) is spent: the build stops, resumable.
    #[error("budget reached: {0}")]
    Budget(String),
    #[error("cache: {0}")]
    Cache(String),
    #[error("{0}")]
    Config(String),
}

impl LlmError {
    /// Worth another attempt: 429, 5xx, 408, timeouts and connection errors.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Status { status, .. } => *status == 429 || *status == 408 || *status >= 500,
            Self::Timeout(_) | Self::Connection(_) => true,
            Self::Batch { code, .. } => !matches!(
                code.as_str(),
                "batch_cancelled" | "batch_failed" | "invalid_request"
            ),
            _ => false,
        }
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// Errors that stop the whole build rather than reject one item.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            Self::Budget(_) | Self::Cache(_) | Self::Config(_) | Self::ReplayMiss { .. }
        )
    }

    /// A stable reason code for `rejects.jsonl`.
    pub fn reason_code(&self) -> String {
        match self {
            Self::Status { status, .. } => format!("http_{status}"),
            Self::Timeout(_) => "timeout".into(),
            Self::Connection(_) => "connection".into(),
            Self::Malformed { .. } => "malformed_response".into(),
            Self::Batch { code, .. } if code.starts_with("batch_") => code.clone(),
            Self::Batch { code, .. } => format!("batch_{code}"),
            Self::Exhausted { last, .. } => format!("retries_exhausted_{}", last.reason_code()),
            Self::ReplayMiss { .. } => "replay_miss".into(),
            Self::Budget(_) => "budget".into(),
            Self::Cache(_) => "cache".into(),
            Self::Config(_) => "config".into(),
        }
    }

    /// The raw text the server sent, when there is one.
    pub fn raw(&self) -> Option<&str> {
        match self {
            Self::Status { body, .. } => Some(body),
            Self::Malformed { raw, .. } => Some(raw),
            Self::Exhausted { last, .. } => last.raw(),
            _ => None,
        }
    }
}

impl From<rusqlite::Error> for LlmError {
    fn from(e: rusqlite::Error) -> Self {
        Self::Cache(e.to_string())
    }
}
