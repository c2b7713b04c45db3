//! Reader `musique`: MuSiQue-Ans v1.0 (and MuSiQue-Full, same layout), one JSON object a
//! line.
//!
//! Fields: every key of the line as it is, in file order, which for MuSiQue is
//!
//! | field                    | value                                                         |
//! |--------------------------|---------------------------------------------------------------|
//! | `id`                     | e.g. `2hop__131318_49700`, `3hop1__..`, `4hop3__..` (the record id) |
//! | `paragraphs`             | `[{idx, title, paragraph_text, is_supporting}]` (20 in the release) |
//! | `question`               | the multi-hop question                                        |
//! | `question_decomposition` | `[{id, question, answer, paragraph_support_idx}]`, one per hop |
//! | `answer`                 | the answer text                                               |
//! | `answer_aliases`         | other accepted answer texts                                   |
//! | `answerable`             | `true` in MuSiQue-Ans; `false` for MuSiQue-Full's contrast questions |
//!
//! followed by two derived fields:
//!
//! | field                | value                                                             |
//! |----------------------|-------------------------------------------------------------------|
//! | `supporting_context` | the `paragraph_text`s of the paragraphs with `is_supporting: true`, joined with `"\n"` |
//! | `supporting_titles`  | their `title`s, in the same order                                  |
//!
//! Order of the supporting paragraphs: the reasoning order, i.e. the order in which the hops
//! of `question_decomposition` cite them through `paragraph_support_idx` (first citation
//! counts), when every supporting paragraph is cited there; otherwise (a supporting paragraph
//! no hop cites) the order of their `idx`. In the released files the `idx` order and the hop
//! order differ for most 3- and 4-hop questions and many 2-hop ones (a 4-hop train record
//! cites paragraphs 15, 14, 6, 16), so the hop order is what reads naturally: each paragraph
//! introduces the bridge entity that the next one talks about. A `paragraph_support_idx`
//! that is null (no paragraph supports that hop) is skipped.
//!
//! Checks (record errors): `id`, `question`, `answer` strings; `paragraphs` an array of
//! objects with an integer `idx`, string `title` and `paragraph_text`, boolean
//! `is_supporting`; `question_decomposition` an array of objects whose
//! `paragraph_support_idx`, when not null, is an integer; `answer_aliases` an array of
//! strings; `answerable` a boolean. Missing keys give `missing_field`, wrong types
//! `bad_value`.

use serde_json::{Map, Value};

use crate::util::{
    as_object, get, id_of, req_array, req_bool, req_str, req_str_array, Fault, LineFormat,
};
use cb_model::json::type_name;

/// The `musique` line format.
#[derive(Debug, Clone, Copy, Default)]
pub struct Format;

struct Paragraph {
    idx: i64,
    title: String,
    text: String,
    supporting: bool,
}

impl LineFormat for Format {
    fn convert(&self, mut obj: Map<String, Value>) -> Result<(String, Map<String, Value>), Fault> {
        let id = id_of(&obj, "id")?;
        req_str(&obj, "question", "")?;
        req_str(&obj, "answer", "")?;
        req_str_array(&obj, "answer_aliases", "")?;
        req_bool(&obj, "answerable", "")?;

        let mut paragraphs = Vec::new();
        for (i, p) in req_array(&obj, "paragraphs", "")?.iter().enumerate() {
            let prefix = format!("paragraphs[{i}]");
            let p = as_object(p, &prefix)?;
            paragraphs.push(Paragraph {
                idx: int(get(p, "idx", &prefix)?, &format!("{prefix}.idx"))?,
                title: req_str(p, "title", &prefix)?,
                text: req_str(p, "paragraph_text", &prefix)?,
                supporting: req_bool(p, "is_supporting", &prefix)?,
            });
        }

        let mut cited: Vec<i64> = Vec::new();
        for (i, step) in req_array(&obj, "question_decomposition", "")?
            .iter()
            .enumerate()
        {
            let prefix = format!("question_decomposition[{i}]");
            let step = as_object(step, &prefix)?;
            match get(step, "paragraph_support_idx", &prefix)? {
                Value::Null => {}
                v => {
                    let idx = int(v, &format!("{prefix}.paragraph_support_idx"))?;
                    if !cited.contains(&idx) {
                        cited.push(idx);
                    }
                }
            }
        }

        let mut supporting: Vec<&Paragraph> = paragraphs.iter().filter(|p| p.supporting).collect();
        let all_cited = supporting.iter().all(|p| cited.contains(&p.idx));
        if all_cited {
            supporting.sort_by_key(|p| cited.iter().position(|c| *c == p.idx));
        } else {
            supporting.sort_by_key(|p| p.idx);
        }
        let context = supporting
            .iter()
            .map(|p| p.text.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let titles = supporting
            .iter()
            .map(|p| Value::String(p.title.clone()))
            .collect();
        obj.insert("supporting_context".into(), Value::String(context));
        obj.insert("supporting_titles".into(), Value::Array(titles));
        Ok((id, obj))
    }
}

fn int(v: &Value, what: &str) -> Result<i64, Fault> {
    v.as_i64()
        .ok_or_else(|| Fault::bad(format!("`{what}` is {}, not an integer", type_name(v))))
}
