//! The unit of work: one source example on its way through the steps.

use crate::{StepError, StepFailure};
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
    /// The named model (`--models`) the call went to; absent: the build's own model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
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
    /// The message of a read of field `key` that the item does not have (or not of the
    /// shape read): a step's (or the output format's) declaration is wrong.
    pub fn missing(&self, reader: &str, key: &str) -> String {
        format!(
            "{reader} reads the field `{key}` of item {}, which it does not have",
            self.id
        )
    }

    fn fatal(&self, key: &str) -> StepFailure {
        StepFailure::Fatal(StepError::Config(self.missing("step", key)))
    }

    /// A string field a step needs. Missing or not a string, it stops the build: the
    /// recipe passed the load-time chain check, so a step's declaration is wrong.
    pub fn require(&self, key: &str) -> Result<&str, StepFailure> {
        self.get_text(key).ok_or_else(|| self.fatal(key))
    }

    /// A list-of-strings field a step needs (its non-string members are skipped). Missing
    /// or not a list, it stops the build, as [`Item::require`].
    pub fn require_texts(&self, key: &str) -> Result<Vec<String>, StepFailure> {
        self.get_texts(key).ok_or_else(|| self.fatal(key))
    }

    /// A structured field a step needs (a key-value record, a list of edits) read as `T`.
    /// Missing or of another shape, it stops the build, as [`Item::require`].
    pub fn require_parsed<T: DeserializeOwned>(&self, key: &str) -> Result<T, StepFailure> {
        self.get_parsed(key).ok_or_else(|| self.fatal(key))
    }

    /// A string field that is optional by design (`premise` where a source has none,
    /// `qa_na_sentence_context` where a recipe inserts no sentence); `None` when missing or
    /// not a string.
    pub fn get_text(&self, key: &str) -> Option<&str> {
        self.fields.get(key).and_then(Value::as_str)
    }

    /// A list-of-strings field (its non-string members skipped); `None` when missing or not
    /// a list.
    pub fn get_texts(&self, key: &str) -> Option<Vec<String>> {
        self.fields.get(key).and_then(Value::as_array).map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
    }

    /// A structured field read as `T`; `None` when missing or of another shape.
    pub fn get_parsed<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        self.fields.get(key).and_then(|v| T::deserialize(v).ok())
    }

    /// A list-of-strings field that is optional by design and empty when absent (the
    /// lexical warnings, recorded only when there are some).
    pub fn texts(&self, key: &str) -> Vec<String> {
        self.get_texts(key).unwrap_or_default()
    }

    pub fn set(&mut self, key: &str, value: impl Into<Value>) {
        self.fields.insert(key.to_owned(), value.into());
    }
}

/// Field `key` of `fields` read as `T`; missing or of another shape gives `T::default()`
/// (for the other items of a build, [`crate::Peer`]s, whose fields a view reads where it
/// finds them).
pub fn parse_field<T: DeserializeOwned + Default>(fields: &Map<String, Value>, key: &str) -> T {
    fields
        .get(key)
        .and_then(|v| T::deserialize(v).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields;
    use serde_json::json;

    fn item(fields: Value) -> Item {
        Item {
            index: 0,
            id: "dev-7".into(),
            origin: Origin {
                file: "t".into(),
                line: 1,
            },
            fields: fields.as_object().unwrap().clone(),
            calls: Vec::new(),
        }
    }

    #[test]
    fn requiring_a_missing_field_is_a_fatal_config_error_naming_the_field_and_item() {
        let i = item(json!({ "question": "Why?", "choices": ["a", 1, "b"], "answer": 3 }));
        assert_eq!(i.require(fields::QUESTION).unwrap(), "Why?");
        assert_eq!(i.require_texts(fields::CHOICES).unwrap(), ["a", "b"]);
        for e in [
            i.require(fields::NEGATIVE_ANSWER).unwrap_err(),
            // Present but not a string is no better.
            i.require(fields::ANSWER).unwrap_err(),
            i.require_texts(fields::OPTIONS).unwrap_err(),
            i.require_parsed::<Vec<String>>(fields::QA_A_EDITS)
                .unwrap_err(),
        ] {
            let StepFailure::Fatal(StepError::Config(m)) = e else {
                panic!("not a fatal config error: {e:?}");
            };
            assert!(m.starts_with("step reads the field `"), "{m}");
            assert!(
                m.ends_with("` of item dev-7, which it does not have"),
                "{m}"
            );
        }
        assert_eq!(i.get_text(fields::PREMISE), None);
        assert!(i.texts(fields::WARNINGS).is_empty());
    }
}
