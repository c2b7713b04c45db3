//! General step kinds: steps named for what they do, whose input and output fields are
//! parameters the recipe gives, so that a recipe can put together a construction the papers'
//! steps do not make (ConflictBank's misinformation, temporal and semantic conflicts) without
//! a change to the engine. Each declares the fields it reads and writes from its parameters
//! (`fields_of`), so the recipe's chain check holds for them as for the papers' steps.
//!
//! - `draw_from_pool` ([`draw`]): another value of a field, drawn seeded from a pool of the
//!   build's items that share a group field (another object of the same relation), never the
//!   item's own value nor another form of it; a value the source gives (`prefer`) is taken
//!   instead where the item has one.
//! - `pick_value` ([`draw`]): one of a list of values, drawn seeded (a style, a year).
//! - `compose` ([`compose`]): a field written by a minijinja template over the item's fields
//!   (a claim, a question), no model.
//! - `write_text` ([`mod@write`]): a text written by the model from a prompt file into a named
//!   field, with the checks the recipe names (fields it must mention, fields it must not),
//!   and an offline rule-based template.
//! - `make_options` ([`options`]): multiple-choice options from named fields in a seeded
//!   order, each option's letter written to the field the recipe names.

pub mod compose;
pub mod draw;
pub mod options;
pub mod write;

use crate::prelude::*;
use serde_json::Value;

/// A parameter the step needs; its absence is a configuration error naming it and saying
/// what it is (a field name, unless the key says a template).
pub(crate) fn required(spec: &StepSpec, key: &str) -> Result<String, StepError> {
    let what = if key.contains("template") {
        "a minijinja template over the item's fields"
    } else {
        "the name of an item field"
    };
    match spec.str(key) {
        Some(v) if !v.trim().is_empty() => Ok(v),
        _ => Err(StepError::Config(format!(
            "step {}: `{key}` is required ({what})",
            spec.name()
        ))),
    }
}

/// The fields a general step reads and writes: the values of the parameters `reads` (each a
/// field name or a list of them) and `writes`; parameters the entry leaves out name none.
pub(crate) fn fields_of(spec: &StepSpec, reads: &[&str], writes: &[&str]) -> cb_step::StepFields {
    let names = |keys: &[&str]| -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for k in keys {
            let given = spec
                .str(k)
                .map(|v| vec![v])
                .or_else(|| spec.strs(k))
                .unwrap_or_default();
            for v in given {
                if !v.is_empty() && !out.contains(&v) {
                    out.push(v);
                }
            }
        }
        out
    };
    cb_step::StepFields {
        reads: names(reads),
        writes: names(writes),
    }
}

/// The texts of field `key` of `item`: a string, or the strings of a list (absent: none).
pub(crate) fn texts_of(item: &Item, key: &str) -> Vec<String> {
    match item.fields.get(key) {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// A list-of-field-names parameter (empty when absent).
pub(crate) fn field_list(spec: &StepSpec, key: &str) -> Vec<String> {
    spec.strs(key).unwrap_or_default()
}
