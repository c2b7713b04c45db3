//! KRE steps for the commonsense part: the negative answer is a seeded pick among the
//! dataset's wrong options, the negative context a brief explanation that supports it.

use super::{ask, clean_text_answer, param_bool, param_str, ModelStep, StepCtx, StepFailure};
use crate::files::Files;
use crate::recipe::StepSpec;
use crate::{EngineError, Item};
use cb_model::{item_rng, letter, letter_index, text};
use rand::Rng;
use serde_json::json;

/// Picks the negative answer uniformly among the wrong choices, with the item's own
/// generator (purpose `negative_answer`). Writes `candidate` (letter) and `negative_answer`.
#[derive(Debug)]
pub struct PickNegative {
    pub name: String,
}

impl PickNegative {
    pub fn new(spec: &StepSpec) -> Self {
        Self {
            name: spec.name().to_owned(),
        }
    }

    pub fn run(&self, item: &mut Item, ctx: &StepCtx<'_>) -> Result<(), StepFailure> {
        let choices = item.texts("choices");
        let answer = letter_index(item.text("answer"))
            .ok_or_else(|| StepFailure::reject("bad_answer", "answer is not a letter"))?;
        let wrong: Vec<usize> = (0..choices.len()).filter(|&i| i != answer).collect();
        if wrong.is_empty() {
            return Err(StepFailure::reject(
                "no_wrong_choice",
                "no wrong choice to pick",
            ));
        }
        let mut rng = item_rng(ctx.seed, ctx.recipe, &item.id, "negative_answer");
        let pick = wrong[rng.random_range(0..wrong.len())];
        item.set("candidate", letter(pick));
        item.set("negative_answer", choices[pick].clone());
        Ok(())
    }
}

/// Writes `negative_context`: a brief explanation that supports the negative answer.
///
/// Validation: not empty, not a refusal, at most `max_words` words, does not state the
/// golden answer (unless the negative answer itself contains it), and, when
/// `require_mention` is set, mentions the negative answer.
///
/// Offline rule: the golden context with every mention of the golden answer replaced by the
/// negative answer when it mentions it; otherwise the recipe's `offline_template`
/// (a minijinja template over the item's fields).
#[derive(Debug)]
pub struct NegativeExplanation {
    pub model: ModelStep,
    require_mention: bool,
    max_words: usize,
    offline_template: String,
}

impl NegativeExplanation {
    pub fn new(spec: &StepSpec, prompts: &Files) -> Result<Self, EngineError> {
        Ok(Self {
            model: ModelStep::new(spec, prompts, None, 160)?,
            require_mention: param_bool(spec, "require_mention", false),
            max_words: spec
                .params
                .get("max_words")
                .and_then(toml::Value::as_integer)
                .map_or(80, |x| x as usize),
            offline_template: param_str(spec, "offline_template").unwrap_or_else(|| {
                "{{ negative_answer }} is the most fitting answer here.".to_owned()
            }),
        })
    }

    fn offline(&self, item: &Item, ctx: &StepCtx<'_>) -> String {
        let golden = item.text("golden_context");
        let (answer, negative) = (answer_text(item), item.text("negative_answer"));
        let (replaced, n) = text::replace_words(golden, &answer, negative);
        if n > 0 && !answer.is_empty() {
            return replaced;
        }
        let vars = minijinja::Value::from_serialize(&item.fields);
        ctx.env
            .render_str(&self.offline_template, vars)
            .unwrap_or_default()
            .trim()
            .to_owned()
    }

    fn validate(&self, raw: &str, answer: &str, negative: &str) -> Result<String, String> {
        let t = clean_text_answer(raw);
        if t.is_empty() {
            return Err("empty: the answer is empty".into());
        }
        if text::looks_like_refusal(&t) {
            return Err("refusal: the answer declines the task".into());
        }
        let words = t.split_whitespace().count();
        if words > self.max_words {
            return Err(format!(
                "too_long: {words} words, at most {} allowed",
                self.max_words
            ));
        }
        if !text::contains_phrase(negative, answer) && text::contains_phrase(&t, answer) {
            return Err(format!(
                "states_golden: it mentions the correct answer \"{answer}\""
            ));
        }
        if self.require_mention && !text::contains_phrase(&t, negative) {
            return Err(format!("no_mention: it must mention \"{negative}\""));
        }
        Ok(t)
    }

    pub async fn run(&self, item: &mut Item, ctx: &StepCtx<'_>) -> Result<(), StepFailure> {
        let answer = answer_text(item);
        let negative = item.text("negative_answer").to_owned();
        let options = json!(lettered(&item.texts("choices")));
        let offline = self.offline(item, ctx);
        let a = self
            .model
            .ask(item, &answer, [("options", options)], offline);
        let context = ask(ctx, item, a, |raw| self.validate(raw, &answer, &negative)).await?;
        item.set("negative_context", context);
        Ok(())
    }
}

/// The golden answer's text (`choices[answer]`).
pub fn answer_text(item: &Item) -> String {
    let choices = item.texts("choices");
    letter_index(item.text("answer"))
        .and_then(|i| choices.get(i).cloned())
        .unwrap_or_default()
}

/// `["A: bank", "B: library", ...]`
fn lettered(choices: &[String]) -> Vec<String> {
    choices
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{}: {c}", letter(i)))
        .collect()
}
