//! Rejects: every item that did not make it into a benchmark, with why.

use serde::{Deserialize, Serialize};

/// One line of `rejects.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reject {
    /// The source record's id (or the positional id when the record could not be parsed).
    pub id: String,
    /// `file:line` of the source record.
    pub origin: String,
    /// The stage that rejected it: `read`, `join`, `map`, `filter`, or a step name.
    pub stage: String,
    /// A stable machine-readable reason code, e.g. `malformed_json`, `refusal`, `http_500`.
    pub reason: String,
    /// A human-readable sentence.
    pub detail: String,
    /// The raw model response behind the rejection, when there was one (`null` otherwise:
    /// every line has every key).
    #[serde(default)]
    pub raw_response: Option<String>,
    /// How many model calls were made for this stage (0 for non-LLM stages).
    pub attempts: u32,
    /// A row the reader check refused (`reader_disagrees`, `reader_implausible`): what the item would have
    /// written, reader verdicts and lineage included (KRE: the clean JSONL row; RECALL: its
    /// sample, `{"qa_a": row, "qa_na": [rows], "text_generation": row}`), so that people can
    /// rate it beside the rows kept. Absent from every other reject (the key is not written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row: Option<serde_json::Value>,
}
