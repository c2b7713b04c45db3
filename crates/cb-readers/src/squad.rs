//! Reader `squad_v2`: the official SQuAD v2.0 JSON document
//! `{"version", "data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question",
//! "answers": [{"text", "answer_start"}], "is_impossible", "plausible_answers"?}]}]}]}`.
//!
//! One record per question, in document order:
//!
//! | field                     | value                                                        |
//! |---------------------------|--------------------------------------------------------------|
//! | `id`                      | the question id (also the record id)                         |
//! | `title`                   | the article title (`""` if the article has none)              |
//! | `context`                 | the paragraph text                                           |
//! | `question`                | the question                                                 |
//! | `answers`                 | the answer texts (empty for unanswerable questions)          |
//! | `answer_starts`           | their `answer_start`s, parallel to `answers`                 |
//! | `is_impossible`           | bool, `false` when absent (SQuAD v1.1 files)                  |
//! | `plausible_answers`       | texts of `plausible_answers`, empty when absent              |
//! | `plausible_answer_starts` | their `answer_start`s                                        |
//!
//! `answer_start` is an offset in Unicode code points (Python string indices), not in bytes:
//! convert before slicing a Rust `String`. Answers repeat (one per annotator), as published.
//!
//! # Streaming
//! The document is walked by serde visitors (data -> paragraphs -> qas) on a thread that
//! sends the records through a bounded channel; memory holds one paragraph at a time (the
//! official files write `qas` before `context`, so a paragraph's questions wait for its
//! context). If an article writes `title` after `paragraphs`, that article's records are held
//! until its end. Dropping the iterator stops the thread at the next record.
//!
//! # Errors
//! The `line` of a record error is the 0-based running index of the question in the file
//! (counting every `qas` item, good or bad), and the message locates it as
//! `data[i].paragraphs[j].qas[k]`. Record errors: a question that is not an object, lacks
//! `id`, `question` or `answers` (`missing_field`), has values of the wrong type, or whose
//! paragraph lacks a string `context` (`bad_value` / `missing_field`). A document that is not
//! valid JSON, has no `data`, or whose `data` or `paragraphs` are not arrays of objects or
//! `qas` not an array, is a fatal File error giving serde's line and column; the records sent
//! before it stay valid.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::sync::mpsc::{sync_channel, SyncSender};

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::util::{as_object, get, json_message, open_file, req_str, skip_bom, Fault};
use crate::{ReadError, Records, SourceRecord};
use cb_model::json::type_name;
use cb_model::Origin;

/// How many records the reading thread may run ahead of the consumer.
const CHANNEL_BOUND: usize = 256;

pub(crate) fn open(path: &Path, file: String) -> Result<Records, ReadError> {
    let handle = open_file(path, &file)?;
    let (tx, rx) = sync_channel(CHANNEL_BOUND);
    let thread_file = file.clone();
    std::thread::Builder::new()
        .name("cb-readers-squad".into())
        .spawn(move || run(handle, thread_file, tx))
        .map_err(|e| ReadError::File {
            file,
            message: format!("cannot start the reading thread: {e}"),
        })?;
    Ok(Box::new(rx.into_iter()))
}

type Item = Result<SourceRecord, ReadError>;

struct State {
    file: String,
    tx: SyncSender<Item>,
    /// Running question index (0-based).
    question: u64,
    /// The consumer went away: stop quietly.
    stopped: bool,
}

impl State {
    fn send<E: de::Error>(&mut self, item: Item) -> Result<(), E> {
        if self.tx.send(item).is_err() {
            self.stopped = true;
            return Err(E::custom("the consumer stopped reading"));
        }
        Ok(())
    }
}

fn run(handle: File, file: String, tx: SyncSender<Item>) {
    let mut reader = BufReader::new(handle);
    if let Err(e) = skip_bom(&mut reader) {
        let _ = tx.send(Err(ReadError::File {
            file,
            message: format!("read error: {e}"),
        }));
        return;
    }
    let mut de = serde_json::Deserializer::from_reader(reader);
    let mut state = State {
        file,
        tx,
        question: 0,
        stopped: false,
    };
    let result = DocumentSeed { state: &mut state }
        .deserialize(&mut de)
        .and_then(|()| de.end());
    if let Err(e) = result {
        if state.stopped {
            return;
        }
        let message = if e.is_io() {
            format!("read error: {e}")
        } else {
            format!(
                "not a valid SQuAD document at line {} column {}: {}",
                e.line(),
                e.column(),
                json_message(&e)
            )
        };
        let _ = state.tx.send(Err(ReadError::File {
            file: state.file.clone(),
            message,
        }));
    }
}

/// `{"version", "data": [...]}`
struct DocumentSeed<'s> {
    state: &'s mut State,
}

impl<'de> DeserializeSeed<'de> for DocumentSeed<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for DocumentSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a SQuAD document: an object with a `data` array")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen_data = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "data" {
                map.next_value_seed(DataSeed {
                    state: &mut *self.state,
                })?;
                seen_data = true;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        if !seen_data {
            return Err(de::Error::missing_field("data"));
        }
        Ok(())
    }
}

/// `[article, ...]`
struct DataSeed<'s> {
    state: &'s mut State,
}

impl<'de> DeserializeSeed<'de> for DataSeed<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for DataSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("`data`: an array of articles")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut article = 0;
        while seq
            .next_element_seed(ArticleSeed {
                state: &mut *self.state,
                article,
            })?
            .is_some()
        {
            article += 1;
        }
        Ok(())
    }
}

/// `{"title", "paragraphs": [...]}`
struct ArticleSeed<'s> {
    state: &'s mut State,
    article: usize,
}

impl<'de> DeserializeSeed<'de> for ArticleSeed<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ArticleSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "data[{}]: an article object", self.article)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut title: Option<String> = None;
        // Records built before the title was known (title after paragraphs).
        let mut pending: Vec<Item> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "title" => {
                    let value: Value = map.next_value()?;
                    title = Some(match value {
                        Value::String(s) => s,
                        Value::Null => String::new(),
                        other => other.to_string(),
                    });
                }
                "paragraphs" => map.next_value_seed(ParagraphsSeed {
                    state: &mut *self.state,
                    article: self.article,
                    title: title.as_deref(),
                    pending: &mut pending,
                })?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let title = title.unwrap_or_default();
        for mut item in pending {
            if let Ok(record) = &mut item {
                record
                    .fields
                    .insert("title".into(), Value::String(title.clone()));
            }
            self.state.send(item)?;
        }
        Ok(())
    }
}

/// `[paragraph, ...]`
struct ParagraphsSeed<'s, 't> {
    state: &'s mut State,
    article: usize,
    title: Option<&'t str>,
    pending: &'s mut Vec<Item>,
}

impl<'de> DeserializeSeed<'de> for ParagraphsSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ParagraphsSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "data[{}].paragraphs: an array of paragraphs",
            self.article
        )
    }
    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        while let Some(paragraph) = seq.next_element_seed(ParagraphSeed {
            article: self.article,
            paragraph: index,
        })? {
            self.emit(paragraph, index)?;
            index += 1;
        }
        Ok(())
    }
}

impl ParagraphsSeed<'_, '_> {
    fn emit<E: de::Error>(&mut self, paragraph: Paragraph, index: usize) -> Result<(), E> {
        for (k, qa) in paragraph.qas.iter().enumerate() {
            let line = self.state.question;
            self.state.question += 1;
            let place = format!("data[{}].paragraphs[{index}].qas[{k}]", self.article);
            let item = match question(qa, &paragraph.context, self.title.unwrap_or_default()) {
                Ok(fields) => Ok(SourceRecord {
                    id: fields
                        .get("id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    origin: Origin {
                        file: self.state.file.clone(),
                        line,
                    },
                    fields,
                }),
                Err(fault) => Err(ReadError::Record {
                    file: self.state.file.clone(),
                    line,
                    id: qa.get("id").and_then(Value::as_str).map(str::to_owned),
                    code: fault.code,
                    message: format!("{place}: {}", fault.message),
                }),
            };
            if self.title.is_some() {
                self.state.send(item)?;
            } else {
                self.pending.push(item);
            }
        }
        Ok(())
    }
}

/// One paragraph, held until its end.
struct Paragraph {
    context: Option<Value>,
    qas: Vec<Value>,
}

struct ParagraphSeed {
    article: usize,
    paragraph: usize,
}

impl<'de> DeserializeSeed<'de> for ParagraphSeed {
    type Value = Paragraph;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Paragraph, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ParagraphSeed {
    type Value = Paragraph;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "data[{}].paragraphs[{}]: a paragraph object with `context` and `qas`",
            self.article, self.paragraph
        )
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Paragraph, A::Error> {
        let mut paragraph = Paragraph {
            context: None,
            qas: Vec::new(),
        };
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "context" => paragraph.context = Some(map.next_value()?),
                "qas" => paragraph.qas = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(paragraph)
    }
}

/// The fields of one question.
fn question(qa: &Value, context: &Option<Value>, title: &str) -> Result<Map<String, Value>, Fault> {
    let Value::Object(qa) = qa else {
        return Err(Fault::bad(format!(
            "the `qas` item is {}, not an object",
            type_name(qa)
        )));
    };
    let id = req_str(qa, "id", "")?;
    let text = req_str(qa, "question", "")?;
    let context = match context {
        None => return Err(Fault::missing("context (of the paragraph)")),
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(Fault::bad(format!(
                "the paragraph's `context` is {}, not a string",
                type_name(other)
            )))
        }
    };
    let (answers, starts) = answer_list(get(qa, "answers", "")?, "answers")?;
    let is_impossible = match qa.get("is_impossible") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(Fault::bad(format!(
                "`is_impossible` is {}, not a boolean",
                type_name(other)
            )))
        }
    };
    let (plausible, plausible_starts) = match qa.get("plausible_answers") {
        None | Some(Value::Null) => (Vec::new(), Vec::new()),
        Some(v) => answer_list(v, "plausible_answers")?,
    };
    let mut fields = Map::new();
    fields.insert("id".into(), Value::String(id));
    fields.insert("title".into(), Value::String(title.to_string()));
    fields.insert("context".into(), Value::String(context));
    fields.insert("question".into(), Value::String(text));
    fields.insert("answers".into(), Value::Array(answers));
    fields.insert("answer_starts".into(), Value::Array(starts));
    fields.insert("is_impossible".into(), Value::Bool(is_impossible));
    fields.insert("plausible_answers".into(), Value::Array(plausible));
    fields.insert(
        "plausible_answer_starts".into(),
        Value::Array(plausible_starts),
    );
    Ok(fields)
}

/// `[{"text", "answer_start"}]` as (texts, starts).
fn answer_list(v: &Value, what: &str) -> Result<(Vec<Value>, Vec<Value>), Fault> {
    let Value::Array(items) = v else {
        return Err(Fault::bad(format!(
            "`{what}` is {}, not an array",
            type_name(v)
        )));
    };
    let mut texts = Vec::with_capacity(items.len());
    let mut starts = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let prefix = format!("{what}[{i}]");
        let answer = as_object(item, &prefix)?;
        texts.push(Value::String(req_str(answer, "text", &prefix)?));
        let start = get(answer, "answer_start", &prefix)?;
        if start.as_u64().is_none() {
            return Err(Fault::bad(format!(
                "`{prefix}.answer_start` is {}, not a non-negative integer",
                type_name(start)
            )));
        }
        starts.push(start.clone());
    }
    Ok((texts, starts))
}
