//! What a reader yields: [`Records`], each a [`SourceRecord`] or a [`ReadError`], and the
//! options a recipe gives it ([`ReaderOptions`]).

use cb_model::SourceRecord;

/// An error of a reader.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file cannot be opened or read (fatal for the build).
    #[error("{file}: {message}")]
    File { file: String, message: String },
    /// One record is malformed; reading goes on after it.
    #[error("{file}:{line}: {message}")]
    Record {
        file: String,
        line: u64,
        /// The record's own id when it could be read in spite of the fault (a JSON line
        /// whose id key is usable, a SQuAD question with its `id`), so that a reject names it.
        id: Option<String>,
        code: &'static str,
        message: String,
    },
    /// A configuration problem (unknown reader, bad option, no file matched a glob).
    #[error("{0}")]
    Config(String),
}

impl ReadError {
    /// `File` and `Config` errors are fatal; a `Record` error rejects one record only.
    pub fn is_fatal(&self) -> bool {
        !matches!(self, ReadError::Record { .. })
    }

    /// A stable machine-readable code: the record error's code (`malformed_json`,
    /// `missing_field`, `bad_value`, ...), `file_error` or `config_error`.
    pub fn code(&self) -> &str {
        match self {
            ReadError::File { .. } => "file_error",
            ReadError::Record { code, .. } => code,
            ReadError::Config(_) => "config_error",
        }
    }
}

/// The records of one file, in file order.
pub type Records = Box<dyn Iterator<Item = Result<SourceRecord, ReadError>> + Send>;

/// Reader-specific options from the recipe file (a TOML table converted to JSON), e.g.
/// `{"id_field": "index"}`.
pub type ReaderOptions = serde_json::Map<String, serde_json::Value>;
