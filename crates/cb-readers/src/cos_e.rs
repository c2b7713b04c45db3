//! Reader `cos_e`: CoS-E explanations of CommonsenseQA questions (v1.0 and v1.11),
//! one JSON object a line: `{"id", "explanation": {"open-ended", "selected"}}`.
//!
//! | field        | value                                                              |
//! |--------------|--------------------------------------------------------------------|
//! | `id`         | the CommonsenseQA id (also the record id)                          |
//! | `open_ended` | `explanation["open-ended"]`: the free-text explanation             |
//! | `selected`   | `explanation["selected"]`: the span the annotator highlighted       |
//!
//! All three are required strings (`missing_field` / `bad_value` otherwise). The hyphenated
//! key of the file becomes `open_ended`.
//!
//! Quirks of the real files: many explanations are a few words or merely restate the
//! question or an option ("woods are must"); `selected` sometimes holds the whole question
//! prefixed by `Question: `.

use serde_json::{Map, Value};

use crate::util::{as_object, get, id_of, req_str, Fault, LineFormat};

/// The `cos_e` line format.
#[derive(Debug, Clone, Copy, Default)]
pub struct Format;

impl LineFormat for Format {
    fn convert(&self, obj: Map<String, Value>) -> Result<(String, Map<String, Value>), Fault> {
        let id = id_of(&obj, "id")?;
        let explanation = as_object(get(&obj, "explanation", "")?, "explanation")?;
        let open_ended = req_str(explanation, "open-ended", "explanation")?;
        let selected = req_str(explanation, "selected", "explanation")?;
        let mut fields = Map::new();
        fields.insert("id".into(), Value::String(id.clone()));
        fields.insert("open_ended".into(), Value::String(open_ended));
        fields.insert("selected".into(), Value::String(selected));
        Ok((id, fields))
    }
}
