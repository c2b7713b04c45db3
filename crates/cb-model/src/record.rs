//! Source records: what a reader yields for one example of a source dataset.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Where a record came from: the file and the 1-based line (or, for formats that are not
/// line-based, the 0-based record index described in `unit`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    pub file: String,
    /// 1-based line number for line-based formats; record index otherwise.
    pub line: u64,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// One example of a source dataset, as a flat JSON object whose keys the reader documents.
///
/// `id` is the dataset's own identifier when it has one (CommonsenseQA ids, e-CARE
/// `index`, SQuAD question ids) and a stable positional id otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceRecord {
    pub id: String,
    pub origin: Origin,
    pub fields: Map<String, Value>,
}

impl SourceRecord {
    /// A string field, if present and a string.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.fields.get(key).and_then(Value::as_str)
    }
}
