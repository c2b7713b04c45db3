//! The unit of work: one source example on its way through the steps.

use cb_model::Origin;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

/// One model call behind a row: its lineage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRecord {
    pub step: String,
    pub template: String,
    pub template_hash: String,
    pub cache_key: String,
    pub attempt: u32,
    #[serde(skip)]
    pub prompt_tokens: u64,
    #[serde(skip)]
    pub completion_tokens: u64,
}

/// An item: mapped fields plus what the steps add, and the calls made for it.
#[derive(Debug, Clone)]
pub struct Item {
    /// Position in the source (output order).
    pub index: usize,
    pub id: String,
    pub origin: Origin,
    pub fields: Map<String, Value>,
    pub calls: Vec<CallRecord>,
}

impl Item {
    /// A string field; missing or non-string gives "".
    pub fn text(&self, key: &str) -> &str {
        self.fields.get(key).and_then(Value::as_str).unwrap_or("")
    }

    /// A list-of-strings field; anything else gives an empty list.
    pub fn texts(&self, key: &str) -> Vec<String> {
        self.fields
            .get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A structured field (a key-value record, a list of edits) read as `T`; missing or of
    /// another shape gives `T::default()`.
    pub fn parsed<T: DeserializeOwned + Default>(&self, key: &str) -> T {
        parse_field(&self.fields, key)
    }

    pub fn set(&mut self, key: &str, value: impl Into<Value>) {
        self.fields.insert(key.to_owned(), value.into());
    }
}

/// Field `key` of `fields` read as `T`; missing or of another shape gives `T::default()`.
pub fn parse_field<T: DeserializeOwned + Default>(fields: &Map<String, Value>, key: &str) -> T {
    fields
        .get(key)
        .and_then(|v| T::deserialize(v).ok())
        .unwrap_or_default()
}
