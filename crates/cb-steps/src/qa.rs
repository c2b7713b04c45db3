//! Step 2 of RECALL (paper section 2.4): a question about the paragraph and its answer.
//! EventKG: the answer is one item's value; UJ: a phrase copied from the paragraph.

use crate::prelude::*;
use crate::recall::{base_key, content_words, is_fixed, json_field, kv, record_lines, Mode};
use cb_model::recall::name_of;
use cb_model::spans::{mentions, occurs_verbatim, sentence_spans, states, word_spans};
use cb_model::{item_rng, text, KvItem};
use rand::seq::{IndexedRandom, SliceRandom};
use rand::Rng;
use serde_json::{json, Value};

/// The step table's constructor.
pub fn build(spec: &StepSpec, prompts: &Files) -> Result<Box<dyn Step>, StepError> {
    let (mode, model) = Mode::with_model(spec, prompts, "qa", 200)?;
    let (q, a) = (("question", schema::string()), ("answer", schema::string()));
    let answer = match mode {
        Mode::Record => schema::object(&[("key", schema::string()), q, a]),
        Mode::Text => schema::object(&[q, a]),
    };
    Ok(Model::boxed(model.with_schema(answer), Qa { mode }))
}

/// Record mode: a question whose answer is exactly one item's value, never the
/// name or the description; the model says which item (`key`), the question and the
/// answer. Validated: the key is an item of the record (or the answer matches one value),
/// the answer equals that value (a date in any writing), the paragraph states it and the
/// question does not. The stored `answer` is the value as the paragraph writes it.
///
/// Text mode: a question whose answer is a phrase copied verbatim from the paragraph (at
/// most 12 words, not the term itself, not stated by the question).
///
/// Offline rule. Record: a seeded item among those the paragraph states (items whose key
/// is not repeated first), asked with a template per key ("When did X begin?", "Where did X
/// take place?", "Who was the commander of X?"). Text: a fill-in-the-blank question: a
/// seeded run of two to four words of a seeded sentence is blanked out and is the answer.
#[derive(Debug)]
pub struct Qa {
    mode: Mode,
}

impl ModelBacked for Qa {
    async fn apply<'a>(
        &'a self,
        model: &'a ModelStep,
        item: &'a mut Item,
        ctx: &'a StepCtx<'_>,
    ) -> Result<(), StepFailure> {
        let paragraph = item.require(fields::PARAGRAPH)?.to_owned();
        let mut rng = item_rng(ctx.seed, ctx.recipe, &item.id, "qa");
        match self.mode {
            Mode::Record => {
                let record = kv(item)?;
                let name = name_of(&record).unwrap_or_default().to_owned();
                let offline = offline_record_question(&record, &name, &paragraph, &mut rng);
                let a = model.ask(item, "", [("record_lines", record_lines(&record))], offline);
                let (q, surface, it) = ask(ctx, item, a, |raw| {
                    validate_record_qa(raw, &record, &paragraph)
                })
                .await?;
                item.set(fields::QUESTION, q);
                item.set(fields::ANSWER, surface);
                item.set(fields::ANSWER_VALUE, it.value);
                item.set(fields::ANSWER_KEY, it.key);
                item.set(fields::ANSWER_KIND, it.kind);
            }
            Mode::Text => {
                let term = item.require(fields::TERM)?.to_owned();
                let offline = offline_cloze(&term, &paragraph, &mut rng);
                let a = model.ask(item, "", [], offline);
                let (q, answer) =
                    ask(ctx, item, a, |raw| validate_text_qa(raw, &term, &paragraph)).await?;
                item.set(fields::QUESTION, q);
                item.set(fields::ANSWER, answer.clone());
                item.set(fields::ANSWER_VALUE, answer);
                item.set(fields::ANSWER_KEY, "");
                item.set(fields::ANSWER_KIND, "phrase");
            }
        }
        Ok(())
    }
}

fn question_of(v: &Value) -> Result<String, String> {
    let q = json_field(v, "question").ok_or("bad_json: no \"question\"")?;
    if !q.ends_with('?') {
        return Err(format!("bad_question: \"{q}\" is not a question"));
    }
    Ok(q.to_owned())
}

fn validate_record_qa(
    raw: &str,
    record: &[KvItem],
    paragraph: &str,
) -> Result<(String, String, KvItem), String> {
    let v = extract_json(raw).ok_or("bad_json: the answer holds no JSON object")?;
    let question = question_of(&v)?;
    let answer = json_field(&v, "answer").ok_or("bad_json: no \"answer\"")?;
    let same = |i: &KvItem| {
        text::normalize(&i.value) == text::normalize(answer)
            || mentions(answer, &i.value, &i.kind)
                .iter()
                .any(|&(s, e)| answer[s..e].trim() == answer)
    };
    let item = match json_field(&v, "key") {
        // A repeated key ("location", "location 2"): the one whose value is the answer.
        Some(k) => record
            .iter()
            .filter(|i| i.key.eq_ignore_ascii_case(k) || base_key(&i.key).eq_ignore_ascii_case(k))
            .min_by_key(|i| (!same(i), !i.key.eq_ignore_ascii_case(k)))
            .ok_or_else(|| format!("bad_key: the record has no item \"{k}\""))?,
        None => record
            .iter()
            .find(|i| same(i))
            .ok_or_else(|| format!("bad_answer: \"{answer}\" is not a value of the record"))?,
    };
    if is_fixed(&item.kind) {
        return Err(format!(
            "bad_answer: the answer must not be the event's {}",
            item.kind
        ));
    }
    if let Some(name) = name_of(record) {
        if states(name, &item.value, &item.kind) {
            return Err(format!(
                "bad_answer: \"{}\" is part of the event's name; ask about another item",
                item.value
            ));
        }
    }
    if !same(item) {
        return Err(format!(
            "bad_answer: \"{answer}\" is not the value of \"{}\" ({})",
            item.key, item.value
        ));
    }
    let spans = mentions(paragraph, &item.value, &item.kind);
    let &(s, e) = spans
        .first()
        .ok_or_else(|| format!("not_in_paragraph: the paragraph does not state \"{answer}\""))?;
    if !mentions(&question, &item.value, &item.kind).is_empty() {
        return Err("answer_in_question: the question states its own answer".into());
    }
    Ok((question, paragraph[s..e].to_owned(), item.clone()))
}

fn validate_text_qa(raw: &str, term: &str, paragraph: &str) -> Result<(String, String), String> {
    let v = extract_json(raw).ok_or("bad_json: the answer holds no JSON object")?;
    let question = question_of(&v)?;
    let answer = json_field(&v, "answer")
        .ok_or("bad_json: no \"answer\"")?
        .trim_end_matches(['.', ',', ';'])
        .to_owned();
    if answer.split_whitespace().count() > 12 {
        return Err("too_long: the answer must be a short phrase (at most 12 words)".into());
    }
    if text::contains_phrase(term, &answer) {
        return Err("bad_answer: the answer must not be the term or part of it".into());
    }
    if !occurs_verbatim(paragraph, &answer) {
        return Err(format!(
            "not_verbatim: \"{answer}\" is not copied word for word from the paragraph"
        ));
    }
    if text::contains_phrase(&question, &answer) {
        return Err("answer_in_question: the question states its own answer".into());
    }
    Ok((question, answer))
}

fn record_question(item: &KvItem, name: &str) -> String {
    let key = base_key(&item.key);
    match (key, item.kind.as_str()) {
        ("begin time", _) => format!("When did {name} begin?"),
        ("end time", _) => format!("When did {name} end?"),
        (_, "date") => format!("What was the {key} of {name}?"),
        ("location", _) => format!("Where did {name} take place?"),
        ("part of", _) => format!("Which larger event was {name} part of?"),
        ("previous event", _) => format!("Which event came just before {name}?"),
        ("next event", _) => format!("Which event came just after {name}?"),
        (k, _) if k.ends_with(" of") => {
            format!("{name} was the {k} what?").replace(" of what?", " of whom or what?")
        }
        (_, "actor") => format!("Who was the {key} of {name}?"),
        _ => format!("What was the {key} of {name}?"),
    }
}

pub fn offline_record_question(
    record: &[KvItem],
    name: &str,
    paragraph: &str,
    rng: &mut impl Rng,
) -> String {
    let stated: Vec<&KvItem> = record
        .iter()
        .filter(|i| {
            !is_fixed(&i.kind)
                && !mentions(paragraph, &i.value, &i.kind).is_empty()
                && mentions(name, &i.value, &i.kind).is_empty()
        })
        .collect();
    let unique: Vec<&KvItem> = stated
        .iter()
        .copied()
        .filter(|i| {
            stated
                .iter()
                .filter(|j| base_key(&j.key) == base_key(&i.key))
                .count()
                == 1
        })
        .collect();
    let pool = if unique.is_empty() { &stated } else { &unique };
    match pool.choose(rng) {
        Some(i) => json!({"key": i.key, "question": record_question(i, name), "answer": i.value})
            .to_string(),
        None => String::new(),
    }
}

pub fn offline_cloze(term: &str, paragraph: &str, rng: &mut impl Rng) -> String {
    let sentences = sentence_spans(paragraph);
    let mut order: Vec<usize> = (0..sentences.len()).collect();
    order.shuffle(rng);
    for si in order {
        let (s0, s1) = sentences[si];
        let sentence = &paragraph[s0..s1];
        // Word spans of the sentence, trailing punctuation left out.
        let words: Vec<(usize, usize)> = word_spans(sentence);
        let mut runs = Vec::new();
        for len in [3usize, 2, 4] {
            for start in 1..words.len().saturating_sub(len) {
                let (a, b) = (words[start].0, words[start + len - 1].1);
                let phrase = &sentence[a..b];
                let ok = phrase
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == ' ' || c == '-')
                    && !text::contains_phrase(phrase, term)
                    && !text::contains_phrase(term, phrase)
                    && content_words(phrase).next().is_some();
                if ok {
                    runs.push((a, b));
                }
            }
            if !runs.is_empty() {
                break;
            }
        }
        if let Some(&(a, b)) = runs.choose(rng) {
            let blanked = format!("{}____{}", &sentence[..a], &sentence[b..]);
            let q = format!(
                "According to the description of {term}, which words fill the blank in: \"{}\"?",
                blanked.trim()
            );
            return json!({"question": q, "answer": &sentence[a..b]}).to_string();
        }
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paraphrase::offline_record_paragraph;
    use crate::recall::fixtures::trial;

    #[test]
    fn record_questions_must_target_one_value_stated_in_the_paragraph() {
        let p = "The Trial of Joan of Arc opened on January 9, 1431 in Rouen, with Pierre Cauchon as judge; it ended on 29 May 1431.";
        let raw = r#"{"key": "begin time", "question": "When did the trial open?", "answer": "9 January 1431"}"#;
        let (_, surface, it) = validate_record_qa(raw, &trial(), p).unwrap();
        assert_eq!(surface, "January 9, 1431");
        assert_eq!(it.key, "begin time");
        let name =
            r#"{"key": "name", "question": "What was it?", "answer": "Trial of Joan of Arc"}"#;
        assert!(validate_record_qa(name, &trial(), p)
            .unwrap_err()
            .starts_with("bad_answer"));
        let wrong = r#"{"key": "location", "question": "Where?", "answer": "Paris"}"#;
        assert!(validate_record_qa(wrong, &trial(), p)
            .unwrap_err()
            .starts_with("bad_answer"));
        let keyless = r#"{"question": "Who judged it?", "answer": "Pierre Cauchon"}"#;
        assert_eq!(
            validate_record_qa(keyless, &trial(), p).unwrap().2.key,
            "judge"
        );
    }

    #[test]
    fn the_offline_question_is_valid() {
        let p = offline_record_paragraph(&trial());
        let mut rng = item_rng(3, "t", "t", "qa");
        let raw = offline_record_question(&trial(), "Trial of Joan of Arc", &p, &mut rng);
        validate_record_qa(&raw, &trial(), &p).unwrap();
    }

    #[test]
    fn text_answers_are_verbatim_phrases() {
        let p = "A hash table maps keys to values. It uses a hash function to pick a bucket.";
        let ok = r#"{"question": "What does a hash table map keys to?", "answer": "values"}"#;
        assert_eq!(validate_text_qa(ok, "hash table", p).unwrap().1, "values");
        let not = r#"{"question": "What does it map?", "answer": "keys onto values"}"#;
        assert!(validate_text_qa(not, "hash table", p)
            .unwrap_err()
            .starts_with("not_verbatim"));
        let term = r#"{"question": "What is this about?", "answer": "hash table"}"#;
        assert!(validate_text_qa(term, "hash table", p).is_err());
        let mut rng = item_rng(1, "t", "t", "qa");
        let cloze = offline_cloze("hash table", p, &mut rng);
        validate_text_qa(&cloze, "hash table", p).unwrap();
    }

    #[test]
    fn an_answer_inside_the_name_is_refused() {
        let mut record = trial();
        record[0].value = "Trial of Rouen".into();
        let p = "The Trial of Rouen took place in Rouen.";
        let raw = r#"{"key": "location", "question": "Where was it held?", "answer": "Rouen"}"#;
        assert!(validate_record_qa(raw, &record, p)
            .unwrap_err()
            .contains("part of the event's name"));
    }
}
