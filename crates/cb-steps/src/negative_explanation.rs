//! KRE commonsense: the negative context, a brief explanation that supports the negative
//! answer (the paper's "explanation" for CoS-E, ECQA and e-CARE).

use crate::prelude::*;
use cb_model::{letter, letter_index, text};
use serde_json::json;
use std::path::Path;

/// The step table's constructor.
pub fn build(spec: &StepSpec, prompts: &Path) -> Result<Box<dyn Step>, StepError> {
    let model = ModelStep::new(spec, prompts, None, 160)?;
    let step = NegativeExplanation {
        require_mention: spec.bool("require_mention", false),
        max_words: spec.int("max_words").map_or(80, |x| x as usize),
        offline_template: spec
            .str("offline_template")
            .unwrap_or_else(|| "{{ negative_answer }} is the most fitting answer here.".to_owned()),
    };
    Ok(Model::boxed(model, step))
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
    require_mention: bool,
    max_words: usize,
    offline_template: String,
}

impl NegativeExplanation {
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
}

impl ModelBacked for NegativeExplanation {
    async fn apply<'a>(
        &'a self,
        model: &'a ModelStep,
        item: &'a mut Item,
        ctx: &'a StepCtx<'_>,
    ) -> Result<(), StepFailure> {
        let answer = answer_text(item);
        let negative = item.text("negative_answer").to_owned();
        let options = json!(lettered(&item.texts("choices")));
        let offline = self.offline(item, ctx);
        let a = model.ask(item, &answer, [("options", options)], offline);
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
