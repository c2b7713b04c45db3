//! Reader `commonsenseqa`: CommonsenseQA JSON lines, both layouts in use, detected per line.
//!
//! - Official layout (v1.0 with 3 choices, v1.11 with 5):
//!   `{"answerKey", "id", "question": {"question_concept"?, "choices": [{"label", "text"}], "stem"}}`
//! - Flattened layout served by dataset hubs:
//!   `{"id", "question", "question_concept", "choices": {"label": [..], "text": [..]}, "answerKey"}`
//!
//! A line whose `question` is an object is read as the official layout, one whose `question`
//! is a string as the flattened one. Both give the same fields, in this order:
//!
//! | field              | value                                                                  |
//! |--------------------|------------------------------------------------------------------------|
//! | `id`               | the dataset id (also the record id)                                    |
//! | `question`         | the question text (`question.stem` in the official layout), unchanged  |
//! | `question_concept` | the ConceptNet concept, `""` when absent (v1.0 has none)                |
//! | `choices`          | the choice texts, in the order the file gives them                     |
//! | `labels`           | the choice labels (`"A"`, `"B"`, ...), parallel to `choices`            |
//! | `answerKey`        | the correct label, or `null` when the line has none (test splits)      |
//!
//! An absent, null or empty `answerKey` gives `null`. Record errors: `missing_field` for
//! `id`, `question`, `stem`, `choices`, a choice's `label` or `text`; `bad_value` for wrong
//! types, no choices, label and text lists of different lengths, a repeated label, or an
//! `answerKey` that is not among the labels.
//!
//! Quirks of the real files: question texts keep their double spaces as published, and a few
//! questions have two identical choice texts (the labels tell them apart).

use serde_json::{Map, Value};

use crate::util::{as_object, get, id_of, opt_str, req_str, str_items, Fault, LineFormat};
use cb_model::json::type_name;

/// The `commonsenseqa` line format.
#[derive(Debug, Clone, Copy, Default)]
pub struct Format;

impl LineFormat for Format {
    fn convert(&self, obj: Map<String, Value>) -> Result<(String, Map<String, Value>), Fault> {
        let id = id_of(&obj, "id")?;
        let (question, concept, labels, texts) = match get(&obj, "question", "")? {
            Value::Object(q) => official(&obj, q)?,
            Value::String(s) => flattened(&obj, s)?,
            other => {
                return Err(Fault::bad(format!(
                    "`question` is {}, not a string or an object",
                    type_name(other)
                )))
            }
        };
        if labels.is_empty() {
            return Err(Fault::bad("the question has no choices"));
        }
        for (i, label) in labels.iter().enumerate() {
            if labels[..i].contains(label) {
                return Err(Fault::bad(format!("choice label `{label}` appears twice")));
            }
        }
        let answer_key = match obj.get("answerKey") {
            None | Some(Value::Null) => Value::Null,
            Some(Value::String(s)) if s.is_empty() => Value::Null,
            Some(Value::String(s)) => {
                if !labels.contains(s) {
                    return Err(Fault::bad(format!(
                        "answerKey `{s}` is not among the labels {}",
                        labels.join(", ")
                    )));
                }
                Value::String(s.clone())
            }
            Some(other) => {
                return Err(Fault::bad(format!(
                    "`answerKey` is {}, not a string",
                    type_name(other)
                )))
            }
        };
        let mut fields = Map::new();
        fields.insert("id".into(), Value::String(id.clone()));
        fields.insert("question".into(), Value::String(question));
        fields.insert("question_concept".into(), Value::String(concept));
        fields.insert("choices".into(), strings(texts));
        fields.insert("labels".into(), strings(labels));
        fields.insert("answerKey".into(), answer_key);
        Ok((id, fields))
    }
}

type Parsed = (String, String, Vec<String>, Vec<String>);

fn strings(items: Vec<String>) -> Value {
    Value::Array(items.into_iter().map(Value::String).collect())
}

/// `{"question": {"question_concept"?, "choices": [{"label", "text"}], "stem"}}`
fn official(obj: &Map<String, Value>, q: &Map<String, Value>) -> Result<Parsed, Fault> {
    let stem = req_str(q, "stem", "question")?;
    // v1.11 puts the concept inside `question`; accept it at the top level too.
    let concept = match opt_str(q, "question_concept", "question")? {
        Some(c) => c,
        None => opt_str(obj, "question_concept", "")?.unwrap_or_default(),
    };
    let choices = match get(q, "choices", "question")? {
        Value::Array(a) => a,
        other => {
            return Err(Fault::bad(format!(
                "`question.choices` is {}, not an array",
                type_name(other)
            )))
        }
    };
    let mut labels = Vec::with_capacity(choices.len());
    let mut texts = Vec::with_capacity(choices.len());
    for (i, choice) in choices.iter().enumerate() {
        let prefix = format!("question.choices[{i}]");
        let c = as_object(choice, &prefix)?;
        labels.push(req_str(c, "label", &prefix)?);
        texts.push(req_str(c, "text", &prefix)?);
    }
    Ok((stem, concept, labels, texts))
}

/// `{"question": "...", "question_concept", "choices": {"label": [..], "text": [..]}}`
fn flattened(obj: &Map<String, Value>, question: &str) -> Result<Parsed, Fault> {
    let concept = opt_str(obj, "question_concept", "")?.unwrap_or_default();
    let choices = as_object(get(obj, "choices", "")?, "choices")?;
    let labels = match get(choices, "label", "choices")? {
        Value::Array(a) => str_items(a, "choices.label")?,
        other => {
            return Err(Fault::bad(format!(
                "`choices.label` is {}, not an array",
                type_name(other)
            )))
        }
    };
    let texts = match get(choices, "text", "choices")? {
        Value::Array(a) => str_items(a, "choices.text")?,
        other => {
            return Err(Fault::bad(format!(
                "`choices.text` is {}, not an array",
                type_name(other)
            )))
        }
    };
    if labels.len() != texts.len() {
        return Err(Fault::bad(format!(
            "`choices` has {} labels but {} texts",
            labels.len(),
            texts.len()
        )));
    }
    Ok((question.to_string(), concept, labels, texts))
}
