//! Step 4 of RECALL, sentence-grained (UJ, kind `insert_sentence`): a sentence about another
//! term of the domain, renamed to this one, inserted into the paragraph. No model: in the
//! paper this edit was made by hand.

use crate::prelude::*;
use crate::recall::Pools;
use cb_model::recall::apply_replacements;
use cb_model::spans::sentence_spans;
use cb_model::{item_rng, text};
use rand::seq::{IndexedRandom, SliceRandom};
use serde_json::json;

/// The step table's constructor.
pub fn build(spec: &StepSpec, _prompts: &Files) -> Result<Box<dyn Step>, StepError> {
    Ok(Box::new(InsertSentence {
        name: spec.name().to_owned(),
    }))
}

/// Sentence-grained (text mode only; no model, as in the paper where it was done
/// by hand): a sentence about another term B of the same domain, with B's name replaced by
/// this term A, is inserted between two sentences of the paragraph. B is a seeded pick
/// among the domain's other terms that have a sentence naming B and not A (terms that
/// contain one another are skipped, so that the inserted sentence cannot still name B);
/// the sentence and the place are seeded too. Writes `qa_na_sentence_context` and
/// `qa_na_sentence_edits` (one insertion). Rejects with `no_donor_sentence` when the domain
/// has no such sentence.
#[derive(Debug)]
pub struct InsertSentence {
    pub name: String,
}

impl Step for InsertSentence {
    fn views(&self) -> Vec<cb_step::ViewSpec> {
        vec![cb_step::view::<Pools>()]
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn run<'a>(&'a self, item: &'a mut Item, ctx: &'a StepCtx<'_>) -> StepFuture<'a> {
        Box::pin(std::future::ready(self.apply(item, ctx)))
    }
}

impl InsertSentence {
    fn apply(&self, item: &mut Item, ctx: &StepCtx<'_>) -> Result<(), StepFailure> {
        let pools = ctx.corpus.view::<Pools>();
        let term = item.require(fields::TERM)?.to_owned();
        let answer = item.require(fields::ANSWER)?.to_owned();
        let paragraph = item.require(fields::PARAGRAPH)?.to_owned();
        let domain = item.require(fields::DOMAIN)?;
        let mut rng = item_rng(ctx.seed, ctx.recipe, &item.id, "insert_sentence");
        let mut donors: Vec<&(String, String, Vec<String>)> = pools
            .terms
            .get(domain)
            .map(|v| v.iter().filter(|(id, _, _)| *id != item.id).collect())
            .unwrap_or_default();
        donors.shuffle(&mut rng);
        for (_, b, sentences) in donors {
            if text::contains_phrase(b, &term) || text::contains_phrase(&term, b) {
                continue;
            }
            let usable: Vec<&String> = sentences
                .iter()
                .filter(|s| {
                    !text::find_word_occurrences(s, b).is_empty()
                        && text::find_word_occurrences(s, &term).is_empty()
                })
                .collect();
            let Some(sentence) = usable.choose(&mut rng) else {
                continue;
            };
            let (mut moved, _) = text::replace_words(sentence.trim(), b, &term);
            if sentence.trim().starts_with(|c: char| c.is_uppercase()) {
                moved = text::ucfirst(&moved);
            }
            // The renamed sentence must be about this term only, and must not state the
            // answer or the counterfactual option (renaming can create either).
            // Optional: a recipe may insert sentences without an answer edit.
            let edited_answer = item.get_text(fields::EDITED_ANSWER).unwrap_or("");
            if text::find_word_occurrences(&moved, &term).is_empty()
                || !text::find_word_occurrences(&moved, b).is_empty()
                || text::contains_phrase(&moved, &answer)
                || (!edited_answer.is_empty() && text::contains_phrase(&moved, edited_answer))
            {
                continue;
            }
            // Insertion points: before the first sentence, between two, after the last.
            let bounds = sentence_spans(&paragraph);
            let mut points: Vec<usize> = bounds.iter().map(|&(s, _)| s).collect();
            points.push(paragraph.len());
            let at = *points.choose(&mut rng).expect("at least one point");
            let insert = if at == paragraph.len() {
                format!(" {moved}")
            } else {
                format!("{moved} ")
            };
            let (context, edits) = apply_replacements(&paragraph, &[(at, at, insert)])
                .map_err(|m| StepFailure::reject("bad_replacements", m))?;
            item.set(fields::QA_NA_SENTENCE_CONTEXT, context);
            item.set(fields::QA_NA_SENTENCE_EDITS, json!(edits));
            item.set(fields::DONOR_TERM, b.clone());
            return Ok(());
        }
        Err(StepFailure::reject(
            "no_donor_sentence",
            format!("no other term of domain {domain} has a sentence to lend"),
        ))
    }
}
