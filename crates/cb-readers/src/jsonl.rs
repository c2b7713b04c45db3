//! Reader `jsonl`: generic JSON lines. Every line must be a JSON object; the record's fields
//! are that object as it is (keys and key order unchanged).
//!
//! Options:
//! - `id_field` (string, default `"id"`): the key whose value is the record id. A string is
//!   taken as is, a number written as text; a missing key is a `missing_field` record error,
//!   any other type a `bad_value` one.
//! - `required` (array of strings, default none): keys every line must have; a line without
//!   one of them is a `missing_field` record error naming the key.
//!
//! e-CARE is read with this reader and `id_field = "index"`: `dev_full.jsonl` gives `index`,
//! `premise`, `ask-for` (`"cause"` or `"effect"`), `hypothesis1`, `hypothesis2`, `label`
//! (the integer 0 or 1: which hypothesis is right) and `conceptual_explanation`;
//! `Causal_Reasoning_dev.jsonl` the same without the explanation;
//! `Explanation_Generation_dev.jsonl` gives `index`, `cause`, `effect`,
//! `conceptual_explanation`. The original e-CARE files end without a final newline.

use serde_json::{Map, Value};

use crate::util::{id_of, Fault, LineFormat};
use crate::{ReadError, ReaderOptions};
use cb_model::json::type_name;

/// The `jsonl` line format with its options.
#[derive(Debug, Clone)]
pub struct Format {
    id_field: String,
    required: Vec<String>,
}

impl Default for Format {
    fn default() -> Self {
        Format {
            id_field: "id".into(),
            required: Vec::new(),
        }
    }
}

impl Format {
    /// Reads the options `id_field` and `required`; any other option is a Config error.
    pub fn from_options(opts: &ReaderOptions) -> Result<Self, ReadError> {
        let mut format = Format::default();
        for (key, value) in opts {
            match (key.as_str(), value) {
                ("id_field", Value::String(s)) if !s.is_empty() => format.id_field = s.clone(),
                ("id_field", other) => {
                    return Err(ReadError::Config(format!(
                        "reader `jsonl`: option `id_field` must be a non-empty string, not {}",
                        describe(other)
                    )))
                }
                ("required", Value::Array(items)) => {
                    for item in items {
                        match item {
                            Value::String(s) => format.required.push(s.clone()),
                            other => {
                                return Err(ReadError::Config(format!(
                                    "reader `jsonl`: option `required` must list key names (strings), not {}",
                                    describe(other)
                                )))
                            }
                        }
                    }
                }
                ("required", other) => {
                    return Err(ReadError::Config(format!(
                        "reader `jsonl`: option `required` must be an array of key names, not {}",
                        describe(other)
                    )))
                }
                (other, _) => {
                    return Err(ReadError::Config(format!(
                        "reader `jsonl` has no option `{other}` (options: id_field, required)"
                    )))
                }
            }
        }
        Ok(format)
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::String(_) => "an empty string".to_string(),
        other => type_name(other).to_string(),
    }
}

impl LineFormat for Format {
    fn convert(&self, obj: Map<String, Value>) -> Result<(String, Map<String, Value>), Fault> {
        if let Some(key) = self.required.iter().find(|k| !obj.contains_key(k.as_str())) {
            return Err(Fault::missing(key));
        }
        let id = id_of(&obj, &self.id_field)?;
        Ok((id, obj))
    }

    fn id_key(&self) -> &str {
        &self.id_field
    }
}
