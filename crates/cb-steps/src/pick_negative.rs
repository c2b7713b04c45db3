//! KRE commonsense (MRC with a negative answer): the negative answer is a seeded pick among
//! the dataset's wrong options. No model.

use crate::prelude::*;
use cb_model::{item_rng, letter, letter_index};
use rand::Rng;

/// The step table's constructor.
pub fn build(spec: &StepSpec, _prompts: &Files) -> Result<Box<dyn Step>, StepError> {
    Ok(Box::new(PickNegative {
        name: spec.name().to_owned(),
    }))
}

/// Picks the negative answer uniformly among the wrong choices (those that do not read as
/// the golden one), with the item's own generator (purpose `negative_answer`). Writes `candidate` (letter) and `negative_answer`.
#[derive(Debug)]
pub struct PickNegative {
    pub name: String,
}

impl Step for PickNegative {
    fn name(&self) -> &str {
        &self.name
    }

    fn run<'a>(&'a self, item: &'a mut Item, ctx: &'a StepCtx<'_>) -> StepFuture<'a> {
        Box::pin(std::future::ready(self.apply(item, ctx)))
    }
}

impl PickNegative {
    fn apply(&self, item: &mut Item, ctx: &StepCtx<'_>) -> Result<(), StepFailure> {
        let choices = item.texts("choices");
        let answer = letter_index(item.text("answer"))
            .ok_or_else(|| StepFailure::reject("bad_answer", "answer is not a letter"))?;
        // A wrong choice that reads as the golden one (CommonsenseQA repeats a choice now and
        // then: "clumsy" as A and D) cannot be the negative answer: the conflict would be none.
        let golden = choices.get(answer).map(|g| cb_model::text::normalize(g));
        let wrong: Vec<usize> = (0..choices.len())
            .filter(|&i| i != answer && Some(cb_model::text::normalize(&choices[i])) != golden)
            .collect();
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
