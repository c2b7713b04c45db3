//! What an audit can fail with ([`AuditError`]).

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {location}: {message}")]
    Parse {
        path: String,
        location: String,
        message: String,
    },
    #[error("{0}")]
    Input(String),
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: line {line}: {message}")]
    Sheet {
        path: String,
        line: u64,
        message: String,
    },
}
