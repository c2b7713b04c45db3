//! KRE reading comprehension: the negative context, the golden passage rewritten around the
//! negative answer and changed nowhere else.

use crate::prelude::*;
use crate::reading::usable_aliases;
use cb_model::spans::sentence_spans;
use cb_model::text;
use cb_quality as quality;
use serde_json::json;

/// The parameters of its own (besides the model's).
pub const PARAMS: &[Param] = &[Param {
    key: "min_similarity",
    ty: ParamType::Number(Range::real(0.0, 1.0)),
    default: "0.6",
    meaning:
        "Least token similarity (2 x LCS / total length) of the rewritten passage to the original.",
}];

/// The step table's constructor.
pub fn build(spec: &StepSpec, prompts: &Files) -> Result<Box<dyn Step>, StepError> {
    let model = ModelStep::new(spec, prompts, Some("kre/rewrite_context.md"), 1024)?;
    let min_similarity = spec.f64("min_similarity").unwrap_or(0.6);
    Ok(Model::boxed(model, NegativeContext { min_similarity }))
}

/// Rewrites `golden_context` so that it supports `negative_answer` (field `negative_context`).
///
/// Validation: not empty, not a refusal, no talk about the task the passage does not have
/// (`prompt_echo`, [`cb_quality::talks_about_task`]); mentions the negative answer
/// (`no_mention`: a guess at meaning, a warning where a reader checks the rows, see
/// [`cb_step::GUESS_CODES`]); does not mention the
/// golden answer or one of its aliases (unless the negative answer contains it; the aliases
/// are the recipe's other writings of the answer, for SQuAD the accepted answers that hold
/// it, never a shorter span such as "tidal" for "tidal delta", which the passage may use for
/// other things that the rewrite must keep), nor, where
/// the golden answer is a list ("X and Y"), one of its parts beyond what the question and the
/// negative answer name ([`cb_quality::named_parts`], also `states_golden`); and keeps
/// a token similarity (2·LCS / total length, over word tokens) of at least `min_similarity`
/// (default 0.6) with the original. Swapping the answer's mentions leaves a context well above
/// 0.6 (typically above 0.9), while an answer that drops or rewrites about half of the passage
/// falls below it: the negative context must differ from the golden one only in what it says
/// about the answer, so that the two contexts conflict on the answer and nothing else.
///
/// Offline rule: every whole-word, case-insensitive mention of the answer and its aliases
/// (also without a leading article; longest first, in one pass) is replaced by the
/// negative answer.
#[derive(Debug)]
pub struct NegativeContext {
    min_similarity: f64,
}

impl NegativeContext {
    fn validate(
        &self,
        raw: &str,
        golden: &str,
        question: &str,
        golden_answers: &[String],
        negative: &str,
        mut guesses: Guesses,
    ) -> Result<(String, Guesses), String> {
        let t = clean_text_answer(raw);
        if t.is_empty() {
            return Err("empty: the answer is empty".into());
        }
        // A sentence of the passage kept as it is ("I cannot ...", said someone) is not a
        // refusal.
        let kept: Vec<&str> = sentence_spans(golden)
            .into_iter()
            .map(|(s, e)| &golden[s..e])
            .collect();
        if text::looks_like_refusal(&quality::beyond_copies(&t, &kept)) {
            return Err("refusal: the answer declines the task".into());
        }
        if let Some(w) = quality::talks_about_task(&t, golden) {
            return Err(format!(
                "prompt_echo: it talks about the task (\"{w}\"); reply with the rewritten passage only"
            ));
        }
        if quality::restates(&t, negative, &[]) {
            return Err(format!(
                "restates_negative: it only restates \"{negative}\"; rewrite the passage"
            ));
        }
        if !text::contains_phrase(&t, negative) {
            guesses.flag(format!("no_mention: it must mention \"{negative}\""))?;
        }
        for a in golden_answers {
            if !text::contains_phrase(negative, a) && text::contains_phrase(&t, a) {
                return Err(format!(
                    "states_golden: it still mentions the correct answer \"{a}\""
                ));
            }
        }
        let answer = golden_answers.first().map_or("", String::as_str);
        let parts = quality::named_parts(&t, answer, negative, golden, &[question]);
        if !parts.is_empty() {
            let named = parts
                .iter()
                .map(|p| format!("\"{p}\""))
                .collect::<Vec<_>>()
                .join(" and ");
            let what = if parts.len() == 1 { "a part" } else { "parts" };
            return Err(format!(
                "states_golden: the negative context still names {named}, {what} of the golden answer \"{answer}\"; rewrite what it says about {named} as well"
            ));
        }
        let sim = text::token_similarity(&text::tokens(golden), &text::tokens(&t));
        if sim < self.min_similarity {
            return Err(format!(
                "too_different: token similarity {sim:.2} to the original passage, at least {} required; change only what concerns the answer",
                self.min_similarity
            ));
        }
        Ok((t, guesses))
    }
}

impl ModelBacked for NegativeContext {
    async fn apply<'a>(
        &'a self,
        model: &'a ModelStep,
        item: &'a mut Item,
        ctx: &'a StepCtx<'_>,
    ) -> Result<(), StepFailure> {
        let answer = item.require(fields::ANSWER_TEXT)?.trim().to_owned();
        let negative = item.require(fields::NEGATIVE_ANSWER)?.to_owned();
        let golden = item.require(fields::GOLDEN_CONTEXT)?.to_owned();
        let question = item.require(fields::QUESTION)?.to_owned();
        // Optional: a source may give no aliases.
        let aliases = usable_aliases(&answer, item.texts(fields::ALIASES));
        let golden_answers: Vec<String> = std::iter::once(answer.clone())
            .chain(aliases.iter().cloned())
            .collect();
        let offline = replace_mentions(&golden, &golden_answers, &negative);
        let a = model.ask(item, &answer, [("aliases", json!(aliases))], offline);
        let guesses = Guesses::for_ctx(ctx);
        let (context, guesses) = ask(ctx, item, a, |raw| {
            self.validate(
                raw,
                &golden,
                &question,
                &golden_answers,
                &negative,
                guesses.fresh(),
            )
        })
        .await?;
        item.set(fields::NEGATIVE_CONTEXT, context);
        guesses.record(item);
        Ok(())
    }
}

/// Replaces every whole-word, case-insensitive mention of any of `answers` (and of each
/// without a leading article) in `text` by `to`, longest first, in one pass (so a
/// replacement is never replaced again).
pub fn replace_mentions(text: &str, answers: &[String], to: &str) -> String {
    let mut needles: Vec<String> = Vec::new();
    for a in answers {
        let a = a.trim();
        needles.push(a.to_owned());
        let lower = a.to_lowercase();
        for article in ["the ", "a ", "an "] {
            if lower.starts_with(article) {
                needles.push(a[article.len()..].trim().to_owned());
            }
        }
    }
    needles.retain(|n| !n.is_empty());
    needles.sort_by_key(|n| std::cmp::Reverse(n.len()));
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for n in &needles {
        for (s, e) in text::find_word_occurrences(text, n) {
            if spans.iter().all(|&(a, b)| e <= a || s >= b) {
                spans.push((s, e));
            }
        }
    }
    spans.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (s, e) in spans {
        out.push_str(&text[last..s]);
        out.push_str(to);
        last = e;
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A list answer's part left in the rewrite is `states_golden`, the part named in the
    /// reason (what a resample sends back); a part the question names is not.
    #[test]
    fn a_part_of_a_list_answer_left_standing_is_refused_by_name() {
        let answer = "analysis of algorithms and computability theory";
        let negative = "automata theory and formal language theory";
        let golden = format!("Related fields are {answer}. Unlike analysis of algorithms, complexity theory asks about all algorithms.");
        let step = NegativeContext {
            min_similarity: 0.6,
        };
        let check = |rewrite: &str, question: &str| {
            step.validate(
                rewrite,
                &golden,
                question,
                &[answer.to_owned()],
                negative,
                Guesses::new(false),
            )
            .map(|(t, _)| t)
        };
        let question = "What two fields mirror complexity theory?";
        let rewrite = golden.replace(answer, negative);
        assert_eq!(
            check(&rewrite, question).unwrap_err(),
            format!("states_golden: the negative context still names \"analysis of algorithms\", a part of the golden answer \"{answer}\"; rewrite what it says about \"analysis of algorithms\" as well")
        );
        let question = "Besides analysis of algorithms, what field mirrors complexity theory?";
        assert_eq!(check(&rewrite, question).unwrap(), rewrite);
        let good = rewrite.replace("analysis of algorithms", "automata theory");
        assert_eq!(check(&good, "What two fields?").unwrap(), good);
    }

    #[test]
    fn mentions_are_replaced_once_longest_first() {
        let t = "The Danube River is long; the Danube flows east. Danubes differ.";
        let r = replace_mentions(t, &["Danube".into(), "Danube River".into()], "Danube Delta");
        assert_eq!(
            r,
            "The Danube Delta is long; the Danube Delta flows east. Danubes differ."
        );
        let r = replace_mentions(
            "It was the Anglican Communion; Anglican Communion grew.",
            &["the Anglican Communion".into()],
            "X",
        );
        assert_eq!(r, "It was X; X grew.");
    }
}
