//! Errors of the LLM layer, each with a stable reason code for rejects.

use std::time::Duration;

#[derive(Debug, Clone, thiserror::Error)]
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
    /// The connection failed or broke after it was made (reset, closed mid-body).
    #[error("connection error: {0}")]
    Connection(String),
    /// No connection could be made at all (refused, unknown host): worth a retry, and when
    /// every attempt of a call ends so, the endpoint is taken for down ([`LlmError::Endpoint`]).
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The server answered 200 with a body that is not a usable chat completion (not JSON,
    /// an error object, no message). Retried like a 5xx; never cached.
    #[error("malformed response: {reason}")]
    Malformed { reason: String, raw: String },
    /// A batch answered a request with an error of its own (expired, cancelled, failed).
    #[error("batch: {code}: {message}")]
    Batch { code: String, message: String },
    /// Retries ran out (or a later attempt failed for good); `last` is the last error and
    /// `attempts` the number of requests sent.
    #[error("gave up after {attempts} attempts: {last}")]
    Exhausted { attempts: u32, last: Box<LlmError> },
    /// The endpoint is unusable for the whole build: unreachable on every attempt,
    /// credentials refused (401/403), or model or path unknown (404). One sentence naming the
    /// endpoint and the cause; the build stops and writes nothing for the recipe.
    #[error("{0}")]
    Endpoint(String),
    /// The endpoint refuses this form of structured output (`response_format`), with a
    /// `--structured` form given explicitly.
    #[error("{0}")]
    FormRefused(String),
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
    /// `--batch-dir`: the call's request is in a batch file under this folder and has no
    /// answer yet. Stops the build (nothing is written, nothing is lost); the same command
    /// imports the answers once an executor has written them.
    #[error("waiting for answers to the batch files in {0}")]
    Waiting(String),
    #[error("{0}")]
    Config(String),
    /// A task of the layer ended without its answer (a batch driver that panicked or was
    /// dropped): a failure of the run, not of its configuration.
    #[error("lost: {0}")]
    Lost(String),
}

impl LlmError {
    /// Worth another attempt: the statuses of the shared rule (`scripts/executor-rules.json`:
    /// 429, 5xx, 408), timeouts, connection errors and malformed 200s.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Status { status, .. } => crate::rules::RULES.retry.status(*status),
            Self::Timeout(_) | Self::Connection(_) | Self::Connect(_) | Self::Malformed { .. } => {
                true
            }
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
            Self::Budget(_)
                | Self::Cache(_)
                | Self::Config(_)
                | Self::ReplayMiss { .. }
                | Self::Endpoint(_)
                | Self::FormRefused(_)
                | Self::Waiting(_)
                | Self::Lost(_)
        )
    }

    /// Requests sent for this call before it failed (0 when nothing was sent).
    pub fn attempts(&self) -> u32 {
        match self {
            Self::Exhausted { attempts, .. } => *attempts,
            Self::Status { .. }
            | Self::Timeout(_)
            | Self::Connection(_)
            | Self::Connect(_)
            | Self::Malformed { .. } => 1,
            _ => 0,
        }
    }

    /// A stable reason code for `rejects.jsonl`.
    pub fn reason_code(&self) -> String {
        match self {
            Self::Status { status, .. } => format!("http_{status}"),
            Self::Timeout(_) => "timeout".into(),
            Self::Connection(_) | Self::Connect(_) => "connection".into(),
            Self::Malformed { .. } => "malformed_response".into(),
            Self::Batch { code, .. } if code.starts_with("batch_") => code.clone(),
            Self::Batch { code, .. } => format!("batch_{code}"),
            Self::Exhausted { last, .. } if last.is_retryable() => {
                format!("retries_exhausted_{}", last.reason_code())
            }
            Self::Exhausted { last, .. } => last.reason_code(),
            Self::Endpoint(_) => "endpoint".into(),
            Self::FormRefused(_) => "structured_refused".into(),
            Self::ReplayMiss { .. } => "replay_miss".into(),
            Self::Budget(_) => "budget".into(),
            Self::Cache(_) => "cache".into(),
            Self::Config(_) => "config".into(),
            Self::Waiting(_) => "waiting".into(),
            Self::Lost(_) => "lost".into(),
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

/// Whether a reject reason (a [`LlmError::reason_code`]) means the endpoint failed to answer
/// (connection, timeout, 408/429/5xx or malformed 200 after every retry), as opposed to an
/// answer that was refused or unusable.
pub fn is_transport_reason(code: &str) -> bool {
    code.starts_with("retries_exhausted_")
        || matches!(code, "connection" | "timeout" | "malformed_response")
}

impl From<rusqlite::Error> for LlmError {
    fn from(e: rusqlite::Error) -> Self {
        Self::Cache(e.to_string())
    }
}
