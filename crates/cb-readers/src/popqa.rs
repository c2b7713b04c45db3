//! Reader `popqa`: PopQA (Mallen et al., 2023), Wikidata facts asked as questions, as a JSON
//! array of records (the layout of the copies that join each fact with the subject's and the
//! object's Wikipedia lead paragraphs). One record per element, its id PopQA's `id`.
//!
//! Fields: every key of the element, in file order, with the values PopQA writes as text
//! decoded: `s_aliases`, `o_aliases` and `possible_answers` are JSON lists written as
//! strings, and `paragraphs`, where it is a string, a Python-literal list of
//! `{'title', 'text', ...}` (what `str()` of the list gives); each becomes the array it
//! holds (an array already is taken as it is). Then the fact, in the fields every fact reader
//! gives (see also [`crate::mquake`]):
//!
//! | field               | value                                                          |
//! |---------------------|----------------------------------------------------------------|
//! | `subject`           | `subj`                                                         |
//! | `subject_id`        | the Wikidata id that ends `s_uri` (`Q5543720`)                 |
//! | `subject_aliases`   | `s_aliases`                                                    |
//! | `relation`          | `prop` (`occupation`, `place of birth`, ...)                   |
//! | `relation_id`       | the Wikidata property of `prop` for PopQA's 16 relations (`P106`, `P19`, ...); else `popqa:` and `prop_id` |
//! | `object`            | `obj`                                                          |
//! | `object_id`         | the Wikidata id that ends `o_uri`                              |
//! | `object_aliases`    | `o_aliases`                                                    |
//! | `question`          | PopQA's question (its own key)                                 |
//! | `subject_paragraph` | the text of the paragraph titled `s_wiki_title` (only with `paragraphs`) |
//! | `object_paragraph`  | the text of the paragraph titled `o_wiki_title` (only with `paragraphs`) |
//! | `popularity`        | `s_pop`, the subject page's monthly views (long-tail facts are low) |
//!
//! PopQA has no Wikidata descriptions; the lead paragraphs are what it says of the entities.
//! (`prop_id` and `subj_id`/`obj_id` are PopQA's own numbers, not Wikidata's.)
//!
//! Checks (record errors naming the record's index and key): `id` a string or integer;
//! `subj`, `prop`, `obj`, `s_uri`, `o_uri`, `question` strings; the URIs ending in a
//! Wikidata id; the alias and answer fields lists of strings (or text holding one);
//! `paragraphs`, when present, a list of objects with string `title` and `text`; `s_pop` an
//! integer. No option.

use serde_json::{Map, Value};

use crate::json_array::{Converted, ElementFormat};
use crate::pylit;
use crate::util::{get, id_of, req_str, str_items, Fault};
use cb_model::json::type_name;

/// The `popqa` array format.
#[derive(Debug, Clone, Copy, Default)]
pub struct Format;

/// PopQA's 16 relations and their Wikidata properties.
const RELATIONS: &[(&str, &str)] = &[
    ("occupation", "P106"),
    ("place of birth", "P19"),
    ("genre", "P136"),
    ("father", "P22"),
    ("country", "P17"),
    ("producer", "P162"),
    ("director", "P57"),
    ("capital of", "P1376"),
    ("screenwriter", "P58"),
    ("composer", "P86"),
    ("color", "P462"),
    ("religion", "P140"),
    ("sport", "P641"),
    ("author", "P50"),
    ("mother", "P25"),
    ("capital", "P36"),
];

impl ElementFormat for Format {
    fn convert(&mut self, mut obj: Map<String, Value>, _index: u64) -> Result<Converted, Fault> {
        let id = id_of(&obj, "id")?;
        let subject = req_str(&obj, "subj", "")?;
        let relation = req_str(&obj, "prop", "")?;
        let object = req_str(&obj, "obj", "")?;
        req_str(&obj, "question", "")?;
        let subject_id = entity_id(&obj, "s_uri")?;
        let object_id = entity_id(&obj, "o_uri")?;
        let relation_id = match RELATIONS.iter().find(|(name, _)| *name == relation) {
            Some((_, pid)) => (*pid).to_string(),
            None => format!("popqa:{}", id_of(&obj, "prop_id")?),
        };
        let popularity = match get(&obj, "s_pop", "")? {
            Value::Number(n) if n.is_i64() || n.is_u64() => Value::Number(n.clone()),
            other => {
                return Err(Fault::bad(format!(
                    "`s_pop` is {}, not an integer",
                    type_name(other)
                )))
            }
        };
        let mut lists = Vec::new();
        for key in ["s_aliases", "o_aliases", "possible_answers"] {
            let items = string_list(get(&obj, key, "")?, key)?;
            let value = Value::Array(items.into_iter().map(Value::String).collect());
            obj.insert(key.into(), value.clone());
            lists.push(value);
        }
        let paragraphs = match obj.get("paragraphs") {
            None | Some(Value::Null) => None,
            Some(v) => Some(paragraph_list(v)?),
        };
        let mut fields = obj;
        let [subject_aliases, object_aliases, _] = <[Value; 3]>::try_from(lists)
            .map_err(|_| Fault::bad("internal: three lists expected"))?;
        fields.insert("subject".into(), Value::String(subject));
        fields.insert("subject_id".into(), Value::String(subject_id));
        fields.insert("subject_aliases".into(), subject_aliases);
        fields.insert("relation".into(), Value::String(relation));
        fields.insert("relation_id".into(), Value::String(relation_id));
        fields.insert("object".into(), Value::String(object));
        fields.insert("object_id".into(), Value::String(object_id));
        fields.insert("object_aliases".into(), object_aliases);
        if let Some((array, paragraphs)) = paragraphs {
            for (side, title_key) in [("subject", "s_wiki_title"), ("object", "o_wiki_title")] {
                let title = fields.get(title_key).and_then(Value::as_str);
                let text = paragraphs
                    .iter()
                    .find(|(t, _)| Some(t.as_str()) == title)
                    .map(|(_, text)| text.clone());
                if let Some(text) = text {
                    fields.insert(format!("{side}_paragraph"), Value::String(text));
                }
            }
            fields.insert("paragraphs".into(), array);
        }
        fields.insert("popularity".into(), popularity);
        Ok(vec![(id, fields)])
    }

    fn id_key(&self) -> &str {
        "id"
    }
}

/// The Wikidata id at the end of an entity URI (`http://www.wikidata.org/entity/Q42`).
fn entity_id(obj: &Map<String, Value>, key: &str) -> Result<String, Fault> {
    let uri = req_str(obj, key, "")?;
    let last = uri.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    let ok =
        last.len() > 1 && last.starts_with('Q') && last[1..].bytes().all(|b| b.is_ascii_digit());
    if ok {
        Ok(last.to_string())
    } else {
        Err(Fault::bad(format!(
            "`{key}` is `{uri}`, not a Wikidata entity URI ending in a Q-id"
        )))
    }
}

/// A list of strings, or text holding one (JSON, else a Python literal).
fn string_list(value: &Value, key: &str) -> Result<Vec<String>, Fault> {
    let decoded;
    let items = match value {
        Value::Array(items) => items,
        Value::String(text) => {
            decoded = decode_text(text, key)?;
            match &decoded {
                Value::Array(items) => items,
                other => {
                    return Err(Fault::bad(format!(
                        "`{key}` holds {}, not a list",
                        type_name(other)
                    )))
                }
            }
        }
        other => {
            return Err(Fault::bad(format!(
                "`{key}` is {}, not a list or a list written as text",
                type_name(other)
            )))
        }
    };
    str_items(items, key)
}

/// Text holding a value: JSON first, else a Python literal.
fn decode_text(text: &str, key: &str) -> Result<Value, Fault> {
    serde_json::from_str(text).or_else(|_| {
        pylit::parse(text).map_err(|e| {
            Fault::bad(format!(
                "`{key}` is text that is neither JSON nor a Python literal: {e}"
            ))
        })
    })
}

/// `paragraphs`: the list (decoded when written as text) and its `(title, text)` pairs.
type Paragraphs = (Value, Vec<(String, String)>);

fn paragraph_list(value: &Value) -> Result<Paragraphs, Fault> {
    let decoded;
    let items = match value {
        Value::Array(items) => items,
        Value::String(text) => {
            decoded = decode_text(text, "paragraphs")?;
            decoded.as_array().ok_or_else(|| {
                Fault::bad(format!(
                    "`paragraphs` holds {}, not a list",
                    type_name(&decoded)
                ))
            })?
        }
        other => {
            return Err(Fault::bad(format!(
                "`paragraphs` is {}, not a list",
                type_name(other)
            )))
        }
    };
    let pairs = items
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let prefix = format!("paragraphs[{i}]");
            let p = p.as_object().ok_or_else(|| {
                Fault::bad(format!("`{prefix}` is {}, not an object", type_name(p)))
            })?;
            Ok((req_str(p, "title", &prefix)?, req_str(p, "text", &prefix)?))
        })
        .collect::<Result<_, Fault>>()?;
    Ok((Value::Array(items.clone()), pairs))
}
