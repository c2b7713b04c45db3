//! Step 3 of RECALL (paper section 2.5, QA-A): the answer edited. The model proposes the
//! counterfactual answer; the step puts it in place of every mention of the answer.

use crate::prelude::*;
use crate::recall::{answer_spans, json_field, kv, offline_word, opposite, Answer, Mode, Pools};
use cb_model::recall::apply_replacements;
use cb_model::spans::{states, word_spans};
use cb_model::{date, item_rng, letter, text, KvItem};
use rand::seq::{IndexedRandom, SliceRandom};
use serde_json::json;

/// The step table's constructor.
pub fn build(spec: &StepSpec, prompts: &Files) -> Result<Box<dyn Step>, StepError> {
    let (mode, model) = Mode::with_model(spec, prompts, "edit_answer", 100)?;
    let answer = schema::object(&[("edited_answer", schema::string())]);
    Ok(Model::boxed(model.with_schema(answer), AnswerEdit { mode }))
}

/// The model proposes the counterfactual answer (`{"edited_answer": ...}`); the
/// step replaces every mention of the answer in the paragraph by it (QA-A edited context)
/// and, in record mode, the item's value in the record (the edited record of text
/// generation). Also writes the two options (answer and edited answer, seeded order,
/// purpose `options`) and the letter of the right one.
///
/// Validated: not empty, different from the answer, not already in the paragraph; record
/// mode: of the answer's kind (a date for a date, not a date otherwise); text mode: at most
/// twice as many words as the answer, plus three.
///
/// Offline rule. Record: a seeded value of the same kind from the other items of the build
/// (for a date, one with the same granularity first) that the paragraph does not mention.
/// Text: one word of the answer changed: its opposite from a small list when it has one,
/// else a word of the same domain's vocabulary.
#[derive(Debug)]
pub struct AnswerEdit {
    mode: Mode,
}

impl AnswerEdit {
    fn offline(
        &self,
        item: &Item,
        ctx: &StepCtx<'_>,
        paragraph: &str,
        ans: &Answer,
        domain: &str,
    ) -> String {
        let pools = ctx.corpus.view::<Pools>();
        let answer = ans.text.as_str();
        let mut rng = item_rng(ctx.seed, ctx.recipe, &item.id, "answer_edit");
        let edited = match self.mode {
            Mode::Record => {
                let (kind, value) = (ans.kind.as_str(), ans.value.as_str());
                let granularity = date::parse_rendered(value).map(|d| d.granularity);
                let candidates: Vec<&String> = pools
                    .by_kind
                    .get(kind)
                    .map(|v| v.iter().collect())
                    .unwrap_or_default();
                let fits = |c: &&String| {
                    (kind == "date" || !is_name(answer) || is_name(c))
                        && text::normalize(c) != text::normalize(value)
                        && text::find_word_occurrences(paragraph, c).is_empty()
                        && !text::contains_phrase(c, answer)
                };
                let same_grain: Vec<&String> = candidates
                    .iter()
                    .copied()
                    .filter(|c| fits(c))
                    .filter(|c| date::parse_rendered(c).map(|d| d.granularity) == granularity)
                    .collect();
                let any: Vec<&String> = candidates.iter().copied().filter(|c| fits(c)).collect();
                let pick = if same_grain.is_empty() {
                    any
                } else {
                    same_grain
                };
                pick.choose(&mut rng).map(|s| (*s).clone())
            }
            Mode::Text => {
                let vocab = pools.words.get(domain).map_or(&[][..], Vec::as_slice);
                let spans = word_spans(answer);
                let mut order: Vec<usize> = (0..spans.len()).collect();
                order.shuffle(&mut rng);
                // Opposites first, then the longest word.
                order.sort_by_key(|&i| {
                    let w = &answer[spans[i].0..spans[i].1];
                    (opposite(w).is_none(), std::cmp::Reverse(w.len()))
                });
                order.iter().find_map(|&i| {
                    let (s, e) = spans[i];
                    let w = &answer[s..e];
                    if w.chars().count() < 4 && opposite(w).is_none() {
                        return None;
                    }
                    let new = offline_word(w, vocab, paragraph, &mut rng)?;
                    Some(format!("{}{new}{}", &answer[..s], &answer[e..]))
                })
            }
        };
        edited.map_or_else(String::new, |e| json!({ "edited_answer": e }).to_string())
    }

    fn validate(&self, raw: &str, ans: &Answer, paragraph: &str) -> Result<String, String> {
        let v = extract_json(raw).ok_or("bad_json: the answer holds no JSON object")?;
        let edited = json_field(&v, "edited_answer").ok_or("bad_json: no \"edited_answer\"")?;
        let (answer, value) = (ans.text.as_str(), ans.value.as_str());
        if text::looks_like_refusal(edited) {
            return Err("refusal: the answer declines the task".into());
        }
        let kind = ans.kind.as_str();
        if [answer, value]
            .iter()
            .any(|a| text::normalize(a) == text::normalize(edited))
            || states(edited, value, kind)
        {
            return Err(
                "unchanged: the edited answer must differ from the answer (in any writing)".into(),
            );
        }
        if !text::find_word_occurrences(paragraph, edited).is_empty() {
            return Err(format!(
                "already_in_context: \"{edited}\" already occurs in the paragraph"
            ));
        }
        if text::contains_phrase(edited, answer) {
            return Err(format!(
                "contains_answer: \"{edited}\" still contains the answer \"{answer}\""
            ));
        }
        match self.mode {
            Mode::Record => {
                let is_date = kind == "date";
                // A date must read as one; another kind must not be a bare date (a name with
                // a year in it, "Revolutions of 1989", is fine).
                let wrong = is_date != date::parse_loose(edited).is_some();
                if wrong {
                    return Err(format!(
                        "wrong_kind: the edited answer must be {} like the answer",
                        if is_date {
                            "a date"
                        } else {
                            "a value of the same kind, not a date,"
                        }
                    ));
                }
                if !is_date && is_name(answer) && !is_name(edited) {
                    return Err(format!(
                        "wrong_kind: \"{answer}\" is a name (a person, a place, an event), so its replacement must be one too, not \"{edited}\""
                    ));
                }
            }
            Mode::Text => {
                let (n, m) = (
                    answer.split_whitespace().count(),
                    edited.split_whitespace().count(),
                );
                if m > 2 * n + 3 {
                    return Err(format!(
                        "too_long: {m} words for an answer of {n}: change words, do not add a sentence"
                    ));
                }
            }
        }
        Ok(edited.to_owned())
    }
}

/// The paragraph with `edited` put in place of every mention of the answer (`spans`) and
/// the edits made; `None` when the paragraph has no mention (nothing of the edit's doing).
/// The reason says what is wrong with the edit: its replacements do not apply
/// (`bad_replacements`), or the edited paragraph still states the answer
/// (`answer_not_replaced`).
fn put_in_place(
    paragraph: &str,
    spans: &[(usize, usize)],
    edited: &str,
    ans: &Answer,
) -> Result<Option<(String, Vec<cb_model::recall::Edit>)>, String> {
    if spans.is_empty() {
        return Ok(None);
    }
    let reps: Vec<(usize, usize, String)> = spans
        .iter()
        .map(|&(s, e)| (s, e, edited.to_owned()))
        .collect();
    let (context, edits) =
        apply_replacements(paragraph, &reps).map_err(|m| format!("bad_replacements: {m}"))?;
    if !answer_spans(ans, &context).is_empty() {
        return Err(format!(
            "answer_not_replaced: the edited context still states \"{}\"; the edited answer must not bring the answer back",
            ans.text
        ));
    }
    Ok(Some((context, edits)))
}

/// Whether `value` is written as a name: its first word, an article aside, starts with a
/// capital letter ("the Battle of Hastings", "Rouen", "UN").
fn is_name(value: &str) -> bool {
    let words: Vec<&str> = value.split_whitespace().collect();
    let first = match words.as_slice() {
        [a, next, ..] if ["the", "a", "an"].contains(&a.to_lowercase().as_str()) => *next,
        [w, ..] => *w,
        [] => return false,
    };
    first
        .chars()
        .find(|c| c.is_alphanumeric())
        .is_some_and(char::is_uppercase)
}

impl ModelBacked for AnswerEdit {
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
        let ans = Answer::of(item)?;
        let domain = item.require(fields::DOMAIN)?;
        let offline = if ctx.needs_rule_answer() {
            self.offline(item, ctx, &paragraph, &ans, domain)
        } else {
            String::new()
        };
        let answer = ans.text.clone();
        let a = model.ask(item, &answer, [("answer_kind", json!(ans.kind))], offline);
        let spans = answer_spans(&ans, &paragraph);
        // What the edit makes of the paragraph is judged with the answer, so that a refusal
        // is asked again with its reason (`bad_replacements`, `answer_not_replaced`).
        let (edited, placed) = ask(ctx, item, a, |raw| {
            let edited = self.validate(raw, &ans, &paragraph)?;
            let placed = put_in_place(&paragraph, &spans, &edited, &ans)?;
            Ok((edited, placed))
        })
        .await?;
        // No mention to put it in: the paragraph's, not the answer's fault.
        let Some((context, edits)) = placed else {
            return Err(StepFailure::reject(
                "answer_not_in_paragraph",
                "the answer no longer occurs in the paragraph",
            ));
        };
        if self.mode == Mode::Record {
            let key = &ans.key;
            let record: Vec<KvItem> = kv(item)?
                .into_iter()
                .map(|mut i| {
                    if i.key == *key {
                        i.value = edited.clone();
                    }
                    i
                })
                .collect();
            item.set(fields::EDITED_KV, json!(record));
        }
        let mut options = vec![answer.clone(), edited.clone()];
        options.shuffle(&mut item_rng(ctx.seed, ctx.recipe, &item.id, "options"));
        let right = options.iter().position(|o| *o == answer).unwrap_or(0);
        item.set(fields::OPTIONS, json!(options));
        item.set(fields::ANSWER_OPTION, letter(right));
        item.set(fields::EDITED_ANSWER, edited);
        item.set(fields::QA_A_CONTEXT, context);
        item.set(fields::QA_A_EDITS, json!(edits));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recall::fixtures::date_item;

    #[test]
    fn an_edited_date_must_be_another_date_in_any_writing() {
        let step = AnswerEdit { mode: Mode::Record };
        let ans = Answer::of(&date_item()).unwrap();
        let p = "The trial ended on May 30, 1431 in Rouen.";
        let v = |e: &str| step.validate(&json!({ "edited_answer": e }).to_string(), &ans, p);
        assert_eq!(v("12 June 1520").unwrap(), "12 June 1520");
        assert!(v("the 30th of May 1431")
            .unwrap_err()
            .starts_with("unchanged"));
        assert!(v("Boeing 747").unwrap_err().starts_with("wrong_kind"));
        assert!(v("Rouen").unwrap_err().starts_with("already_in_context"));
    }

    /// A name stays a name: a place, a person or an event replaced by a common noun is of
    /// another kind ("the referee" for "Pierre Cauchon").
    #[test]
    fn a_name_is_replaced_by_a_name() {
        let step = AnswerEdit { mode: Mode::Record };
        let mut item = date_item();
        item.set(fields::ANSWER, "Pierre Cauchon");
        item.set(fields::ANSWER_VALUE, "Pierre Cauchon");
        item.set(fields::ANSWER_KIND, "actor");
        item.set(fields::ANSWER_KEY, "judge");
        let ans = Answer::of(&item).unwrap();
        let p = "The trial of Joan of Arc was judged by Pierre Cauchon in Rouen.";
        let v = |e: &str| step.validate(&json!({ "edited_answer": e }).to_string(), &ans, p);
        assert_eq!(v("Thomas Cromwell").unwrap(), "Thomas Cromwell");
        assert_eq!(v("the Holy Inquisition").unwrap(), "the Holy Inquisition");
        let e = v("a referee").unwrap_err();
        assert!(
            e.starts_with("wrong_kind") && e.contains("is a name"),
            "{e}"
        );
        assert!(is_name("UN") && is_name("the Battle of Hastings") && !is_name("the referee"));
    }
}
