//! Step 4 of RECALL (paper section 2.5, QA-NA): text outside the answer edited, so that the
//! answer stays right. Word-grained here (the model proposes replacements, the step applies
//! them); sentence-grained in [`sentence`] (a rule, kind `insert_sentence`).

pub mod sentence;
use crate::prelude::*;
use crate::recall::{
    answer_spans, content_words, json_field, kv, offline_word, Answer, Mode, Pools,
};
use cb_model::recall::{apply_replacements, name_of, to_replacements, Edit};
use cb_model::spans::{mentions, occurs_verbatim, overlaps, states, word_spans};
use cb_model::{item_rng, text, KvItem};
use rand::seq::{IndexedRandom, SliceRandom};
use serde_json::{json, Value};
use std::collections::HashSet;

/// The parameters of its own (besides the model's and `mode`).
pub const PARAMS: &[Param] = &[Param {
    key: "max_replacements",
    ty: ParamType::Integer(Range::whole(1, 100)),
    default: "4",
    meaning: "Most replacements one answer may list.",
}];

/// The step table's constructor.
pub fn build(spec: &StepSpec, prompts: &Files) -> Result<Box<dyn Step>, StepError> {
    let (mode, model) = Mode::with_model(spec, prompts, "edit_nonanswer", 300)?;
    let max_replacements = spec.int("max_replacements").map_or(4, |x| x as usize);
    let replacement =
        schema::object(&[("original", schema::string()), ("edited", schema::string())]);
    let answer = schema::object(&[(
        "replacements",
        schema::array(replacement, 1, max_replacements),
    )]);
    Ok(Model::boxed(
        model.with_schema(answer),
        NonAnswerEdit {
            mode,
            max_replacements,
        },
    ))
}

/// Word-grained. The model lists replacements (`{"replacements": [{"original",
/// "edited"}]}`) for text outside the answer (record mode: people, places and dates; text
/// mode: words or short phrases); the step replaces every whole-word mention of each
/// original (QA-NA edited context).
///
/// Validated: one to `max_replacements` replacements, each original in the paragraph and
/// different from its edit; no original may touch a mention of the answer (reason
/// `answer_modified`: the paper discards such samples), the event's name or the term
/// (`name_modified`), nor may an edit bring in the answer or the edited answer; the answer
/// still occurs verbatim afterwards.
///
/// Offline rule. Record: up to two items of kind date, place or actor that the paragraph
/// states outside the answer, each replaced by a seeded value of the same kind from the
/// other items. Text: up to two content words outside the answer and the term, each
/// replaced by its opposite or a word of the domain's vocabulary.
#[derive(Debug)]
pub struct NonAnswerEdit {
    mode: Mode,
    max_replacements: usize,
}

/// What the step reads of an item, read once (a field missing stops the build).
#[derive(Debug)]
struct Seen {
    id: String,
    answer: Answer,
    edited_answer: String,
    /// The name (record) or term (text) of the item: never edited.
    subject: String,
    /// Record mode: the key-value record (empty in text mode).
    record: Vec<KvItem>,
    /// Text mode: the item's domain ("" in record mode).
    domain: String,
}

impl NonAnswerEdit {
    fn seen(&self, item: &Item) -> Result<Seen, StepFailure> {
        let (record, subject, domain) = match self.mode {
            Mode::Record => {
                let record = kv(item)?;
                let name = name_of(&record).unwrap_or_default().to_owned();
                (record, name, String::new())
            }
            Mode::Text => (
                Vec::new(),
                item.require(fields::TERM)?.to_owned(),
                item.require(fields::DOMAIN)?.to_owned(),
            ),
        };
        Ok(Seen {
            id: item.id.clone(),
            answer: Answer::of(item)?,
            edited_answer: item.require(fields::EDITED_ANSWER)?.to_owned(),
            subject,
            record,
            domain,
        })
    }

    fn offline(&self, item: &Seen, ctx: &StepCtx<'_>, paragraph: &str) -> String {
        let pools = ctx.corpus.view::<Pools>();
        let mut rng = item_rng(ctx.seed, ctx.recipe, &item.id, "nonanswer_edit");
        let protected = self.protected(item, paragraph);
        let free = |spans: &[(usize, usize)]| {
            !spans.is_empty()
                && spans
                    .iter()
                    .all(|s| protected.iter().all(|p| !overlaps(*s, *p)))
        };
        let avoid = format!("{paragraph} {}", item.edited_answer);
        let mut reps: Vec<Value> = Vec::new();
        match self.mode {
            Mode::Record => {
                let mut items: Vec<&KvItem> = item
                    .record
                    .iter()
                    .filter(|i| {
                        matches!(i.kind.as_str(), "date" | "place" | "actor")
                            && i.key != item.answer.key
                    })
                    .collect();
                items.shuffle(&mut rng);
                let mut used: Vec<(usize, usize)> = Vec::new();
                for i in items {
                    let spans = mentions(paragraph, &i.value, &i.kind);
                    if reps.len() == 2
                        || !free(&spans)
                        || spans.iter().any(|s| used.iter().any(|u| overlaps(*s, *u)))
                    {
                        continue;
                    }
                    used.extend(&spans);
                    let pool = pools.by_kind.get(&i.kind).map_or(&[][..], Vec::as_slice);
                    let fits: Vec<&String> = pool
                        .iter()
                        .filter(|c| {
                            text::normalize(c) != text::normalize(&i.value)
                                && text::find_word_occurrences(&avoid, c).is_empty()
                                && [&item.answer.value, &item.edited_answer]
                                    .iter()
                                    .all(|a| !states(c, a, &item.answer.kind))
                        })
                        .collect();
                    if let Some(new) = fits.choose(&mut rng) {
                        let (s, e) = spans[0];
                        reps.push(json!({"original": &paragraph[s..e], "edited": new}));
                    }
                }
            }
            Mode::Text => {
                let vocab = pools.words.get(&item.domain).map_or(&[][..], Vec::as_slice);
                let mut words: Vec<(usize, usize)> = word_spans(paragraph)
                    .into_iter()
                    .filter(|&(s, e)| {
                        let w = &paragraph[s..e];
                        content_words(w).next() == Some(w)
                            && free(&text::find_word_occurrences(paragraph, w))
                    })
                    .collect();
                words.shuffle(&mut rng);
                let mut used = HashSet::new();
                for (s, e) in words {
                    let w = &paragraph[s..e];
                    if reps.len() == 2 || !used.insert(w.to_lowercase()) {
                        continue;
                    }
                    if let Some(new) = offline_word(w, vocab, &avoid, &mut rng) {
                        reps.push(json!({"original": w, "edited": new}));
                    }
                }
            }
        }
        json!({ "replacements": reps }).to_string()
    }

    /// Spans that no replacement may touch: the answer's mentions and the name or term.
    fn protected(&self, item: &Seen, paragraph: &str) -> Vec<(usize, usize)> {
        let mut p = answer_spans(&item.answer, paragraph);
        p.extend(text::find_word_occurrences(paragraph, &item.subject));
        p
    }

    fn validate(&self, raw: &str, item: &Seen, paragraph: &str) -> Result<Vec<Edit>, String> {
        let v = extract_json(raw).ok_or("bad_json: the answer holds no JSON object")?;
        let list = v
            .get("replacements")
            .and_then(Value::as_array)
            .ok_or(r#"bad_json: expected {"replacements": [{"original": .., "edited": ..}]}"#)?;
        if list.is_empty() || list.len() > self.max_replacements {
            return Err(format!(
                "bad_replacements: expected 1 to {} replacements, got {}",
                self.max_replacements,
                list.len()
            ));
        }
        let answer_mentions = answer_spans(&item.answer, paragraph);
        let subject = &item.subject;
        let subject_mentions = text::find_word_occurrences(paragraph, subject);
        let answer = item.answer.text.as_str();
        let edited_answer = item.edited_answer.as_str();
        let mut reps = Vec::new();
        for r in list {
            let (Some(orig), Some(new)) = (json_field(r, "original"), json_field(r, "edited"))
            else {
                return Err("bad_json: every replacement needs \"original\" and \"edited\"".into());
            };
            if text::normalize(orig) == text::normalize(new) {
                return Err(format!("unchanged: \"{orig}\" is replaced by itself"));
            }
            let spans = text::find_word_occurrences(paragraph, orig);
            if spans.is_empty() {
                return Err(format!(
                    "not_in_paragraph: \"{orig}\" does not occur in the paragraph"
                ));
            }
            for s in &spans {
                if answer_mentions.iter().any(|a| overlaps(*s, *a)) {
                    return Err(format!(
                        "answer_modified: \"{orig}\" is part of the answer \"{answer}\""
                    ));
                }
                if subject_mentions.iter().any(|a| overlaps(*s, *a)) {
                    return Err(format!(
                        "name_modified: \"{orig}\" is part of \"{subject}\", which must stay"
                    ));
                }
            }
            let kind = item.answer.kind.as_str();
            for a in [item.answer.value.as_str(), answer, edited_answer] {
                if text::contains_phrase(new, a) || states(new, a, kind) {
                    return Err(format!(
                        "answer_modified: the edit \"{new}\" brings in \"{a}\""
                    ));
                }
            }
            for (s, e) in spans {
                // The same text listed twice (a date that is both begin and end) is one
                // replacement; two different edits of it are not.
                match reps
                    .iter()
                    .find(|r: &&(usize, usize, String)| (r.0, r.1) == (s, e))
                {
                    Some(r) if text::normalize(&r.2) == text::normalize(new) => {}
                    Some(_) => {
                        return Err(format!(
                            "bad_replacements: \"{orig}\" is given two different replacements"
                        ))
                    }
                    None => reps.push((s, e, new.to_owned())),
                }
            }
        }
        let (context, edits) =
            apply_replacements(paragraph, &reps).map_err(|m| format!("bad_replacements: {m}"))?;
        if !occurs_verbatim(&context, answer) {
            return Err(format!(
                "answer_modified: the answer \"{answer}\" no longer occurs verbatim"
            ));
        }
        Ok(edits)
    }

    /// Record mode: whether the paragraph states a person, place or date of the record, other
    /// than the answer, whose every mention lies outside the answer and the name (an edit
    /// replaces every mention of its original). Without one there is nothing the paper's
    /// edit could change, and no call is made.
    fn has_editable(&self, item: &Seen, paragraph: &str) -> bool {
        let protected = self.protected(item, paragraph);
        item.record.iter().any(|i| {
            let spans = mentions(paragraph, &i.value, &i.kind);
            matches!(i.kind.as_str(), "date" | "place" | "actor")
                && i.key != item.answer.key
                && !spans.is_empty()
                && spans
                    .iter()
                    .all(|s| protected.iter().all(|p| !overlaps(*s, *p)))
        })
    }
}

/// The paragraph with the answer edit and the non-answer `edits` both made, and every edit;
/// the reason says they overlap (`overlapping_edits`).
fn with_answer_edit(
    paragraph: &str,
    answer_edits: &[Edit],
    edits: &[Edit],
) -> Result<(String, Vec<Edit>), String> {
    let mut all = to_replacements(paragraph, answer_edits);
    all.extend(to_replacements(paragraph, edits));
    apply_replacements(paragraph, &all)
        .map_err(|m| format!("overlapping_edits: {m}; edit only words outside the answer"))
}

impl ModelBacked for NonAnswerEdit {
    fn views(&self) -> Vec<cb_step::ViewSpec> {
        vec![cb_step::view::<Pools>()]
    }

    async fn apply<'a>(
        &'a self,
        model: &'a ModelStep,
        item: &'a mut Item,
        ctx: &'a StepCtx<'_>,
    ) -> Result<(), StepFailure> {
        let paragraph = item.require(fields::PARAGRAPH)?.to_owned();
        let seen = self.seen(item)?;
        if self.mode == Mode::Record && !self.has_editable(&seen, &paragraph) {
            return Err(StepFailure::reject(
                "nothing_to_edit",
                "no person, place or date of the record is stated outside the answer and the name",
            ));
        }
        let offline = if ctx.needs_rule_answer() {
            self.offline(&seen, ctx, &paragraph)
        } else {
            String::new()
        };
        let answer = seen.answer.text.clone();
        let a = model.ask(item, &answer, [("subject", json!(seen.subject))], offline);
        // Text generation's edited source carries the answer edit and these edits: judged
        // with the answer, so that edits overlapping the answer edit are asked again with
        // the reason (`overlapping_edits`).
        let answer_edits: Option<Vec<Edit>> = match self.mode {
            Mode::Text => Some(item.require_parsed(fields::QA_A_EDITS)?),
            Mode::Record => None,
        };
        let (edits, generated) = ask(ctx, item, a, |raw| {
            let edits = self.validate(raw, &seen, &paragraph)?;
            let generated = match &answer_edits {
                Some(answer_edits) => Some(with_answer_edit(&paragraph, answer_edits, &edits)?),
                None => None,
            };
            Ok((edits, generated))
        })
        .await?;
        let reps = to_replacements(&paragraph, &edits);
        let (context, _) = apply_replacements(&paragraph, &reps)
            .map_err(|m| StepFailure::reject("bad_replacements", m))?;
        if let Some((edited, tg_edits)) = generated {
            item.set(fields::TG_EDITED_SOURCE, edited);
            item.set(fields::TG_EDITS, json!(tg_edits));
        }
        item.set(fields::QA_NA_CONTEXT, context);
        item.set(fields::QA_NA_EDITS, json!(edits));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recall::fixtures::{date_item, empty_item, kvi};

    fn nonanswer_step() -> NonAnswerEdit {
        NonAnswerEdit {
            mode: Mode::Record,
            max_replacements: 4,
        }
    }

    #[test]
    fn non_answer_edits_keep_off_the_answer_and_list_a_text_once() {
        let step = nonanswer_step();
        let p = "Battle of Hastings: a battle. It began on 14 October 1066. It ended on 14 October 1066. It took place in Hastings.";
        let mut item = empty_item();
        item.set(
            fields::KV,
            json!([kvi("name", "Battle of Hastings", "name")]),
        );
        item.set(fields::ANSWER, "Hastings");
        item.set(fields::ANSWER_VALUE, "Hastings");
        item.set(fields::ANSWER_KIND, "place");
        item.set(fields::ANSWER_KEY, "location");
        item.set(fields::EDITED_ANSWER, "York");
        let seen = step.seen(&item).unwrap();
        let same_twice = r#"{"replacements": [{"original": "14 October 1066", "edited": "1 May 1200"}, {"original": "14 October 1066", "edited": "1 May 1200"}]}"#;
        let edits = step.validate(same_twice, &seen, p).unwrap();
        assert_eq!(edits.len(), 2, "both mentions, once each: {edits:?}");
        let two_ways = r#"{"replacements": [{"original": "14 October 1066", "edited": "1 May 1200"}, {"original": "14 October 1066", "edited": "2 May 1200"}]}"#;
        assert!(step
            .validate(two_ways, &seen, p)
            .unwrap_err()
            .starts_with("bad_replacements"));
        let answer = r#"{"replacements": [{"original": "in Hastings", "edited": "in Kent"}]}"#;
        assert!(step
            .validate(answer, &seen, p)
            .unwrap_err()
            .starts_with("answer_modified"));
        let brings =
            r#"{"replacements": [{"original": "a battle", "edited": "a battle near York"}]}"#;
        assert!(step
            .validate(brings, &seen, p)
            .unwrap_err()
            .starts_with("answer_modified"));
        // Nothing but the answer to edit: no call is made, the item is rejected.
        assert!(!step.has_editable(&seen, p));
        item.set(
            fields::KV,
            json!([
                kvi("name", "Battle of Hastings", "name"),
                kvi("begin time", "14 October 1066", "date")
            ]),
        );
        assert!(step.has_editable(&step.seen(&item).unwrap(), p));
    }

    #[test]
    fn a_non_answer_edit_may_not_bring_in_the_edited_answer_in_another_writing() {
        let step = nonanswer_step();
        let mut item = date_item();
        item.set(fields::EDITED_ANSWER, "12 June 1520");
        let item = step.seen(&item).unwrap();
        let p = "The trial began on 9 January 1431 and ended on May 30, 1431 in Rouen.";
        let bad =
            r#"{"replacements": [{"original": "9 January 1431", "edited": "June 12, 1520"}]}"#;
        assert!(step
            .validate(bad, &item, p)
            .unwrap_err()
            .starts_with("answer_modified"));
        let ok = r#"{"replacements": [{"original": "9 January 1431", "edited": "3 March 1402"}]}"#;
        assert_eq!(step.validate(ok, &item, p).unwrap().len(), 1);
    }
}
