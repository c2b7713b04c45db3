//! What can stop the viewer, or one of its pages.

/// An error of the viewer: what it read, the ratings file, or a request.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// The folder or file to view cannot be read, or holds a malformed record.
    #[error("{0}")]
    Audit(#[from] cb_audit::AuditError),
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Record { path: String, message: String },
    #[error("{path}: {source}")]
    Sqlite {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    /// The build's cache file cannot be read.
    #[error("{path}: {source}")]
    Cache {
        path: String,
        #[source]
        source: cb_llm::LlmError,
    },
    /// A request that names what does not exist, or a value out of range.
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    BadRequest(String),
    /// A request the viewer will not serve (a post that is not from its own pages).
    #[error("{0}")]
    Forbidden(String),
    /// What cannot be done now (a rating when the ratings file cannot be written).
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    Template(#[from] minijinja::Error),
}

impl ViewError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        ViewError::Io {
            path: path.display().to_string(),
            source,
        }
    }

    pub(crate) fn cache(path: &std::path::Path, source: cb_llm::LlmError) -> Self {
        ViewError::Cache {
            path: path.display().to_string(),
            source,
        }
    }

    pub(crate) fn sqlite(path: &std::path::Path, source: rusqlite::Error) -> Self {
        ViewError::Sqlite {
            path: path.display().to_string(),
            source,
        }
    }
}
