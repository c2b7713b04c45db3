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

/// Picks the negative answer uniformly among the wrong choices (those that are not the
/// golden one written again), with the item's own generator (purpose `negative_answer`). Writes `candidate` (letter) and `negative_answer`.
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
        let choices = item.require_texts(fields::CHOICES)?;
        let answer = letter_index(item.require(fields::ANSWER)?)
            .ok_or_else(|| StepFailure::reject("bad_answer", "answer is not a letter"))?;
        // A wrong choice that is the golden one again (CommonsenseQA repeats a choice now and
        // then: "clumsy" as A and D) cannot be the negative answer: the conflict would be
        // none. Compared case-insensitively, nothing more: e-CARE dev-723's "a artiodactyl"
        // and "an artiodactyl" stay two choices, as KRE released them.
        let wrong = wrong_choices(&choices, answer);
        if wrong.is_empty() {
            return Err(StepFailure::reject(
                "no_wrong_choice",
                "no wrong choice to pick",
            ));
        }
        let mut rng = item_rng(ctx.seed, ctx.recipe, &item.id, "negative_answer");
        let pick = wrong[rng.random_range(0..wrong.len())];
        item.set(fields::CANDIDATE, letter(pick));
        item.set(fields::NEGATIVE_ANSWER, choices[pick].clone());
        Ok(())
    }
}

/// The choices the negative answer may be: not the golden one, nor the golden one written
/// again (compared case-insensitively).
fn wrong_choices(choices: &[String], answer: usize) -> Vec<usize> {
    let golden = choices.get(answer).map(|g| g.trim().to_lowercase());
    (0..choices.len())
        .filter(|&i| i != answer && Some(choices[i].trim().to_lowercase()) != golden)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_choice_that_repeats_the_golden_one_is_never_the_negative_answer() {
        // KRE's released cose.json row 24: CommonsenseQA repeats "clumsy" as A and D.
        let c = texts(&["clumsy", "ineffectual", "dull", "clumsy", "stupid"]);
        assert_eq!(wrong_choices(&c, 3), [1, 2, 4]);
        // e-CARE dev-723: two writings of one answer stay two choices, as released.
        let c = texts(&[
            "this mammal is a artiodactyl.",
            "this mammal is an artiodactyl.",
        ]);
        assert_eq!(wrong_choices(&c, 1), [0]);
        assert!(wrong_choices(&texts(&["x", "X "]), 0).is_empty());
    }
}

#[cfg(test)]
mod missing_field {
    use super::*;
    use serde_json::json;

    /// A finished chain that still lacks a field the step reads (a wrong declaration) stops
    /// the build, naming the field and the item, instead of writing an empty column.
    #[test]
    fn an_item_without_its_choices_stops_the_build_naming_the_field() {
        let llm = cb_llm::Llm::new(cb_llm::LlmConfig::offline()).unwrap();
        let env = minijinja::Environment::new();
        let corpus = cb_step::Corpus::default();
        let routes = cb_step::Routes::new(llm);
        let ctx = StepCtx {
            routes: &routes,
            env: &env,
            seed: 1,
            recipe: "t",
            corpus: &corpus,
        };
        let mut item = Item {
            index: 0,
            id: "q-3".into(),
            origin: cb_model::Origin {
                file: "t".into(),
                line: 1,
            },
            fields: json!({ "question": "Where?", "answer": "A" })
                .as_object()
                .unwrap()
                .clone(),
            calls: Vec::new(),
        };
        let step = PickNegative {
            name: "pick_negative".into(),
        };
        let Err(StepFailure::Fatal(StepError::Config(m))) = step.apply(&mut item, &ctx) else {
            panic!("expected a fatal config error");
        };
        assert_eq!(
            m,
            "step reads the field `choices` of item q-3, which it does not have"
        );
        assert!(!item.fields.contains_key(fields::NEGATIVE_ANSWER));
        // With the field, the step writes its own.
        item.set(fields::CHOICES, json!(["bank", "library"]));
        step.apply(&mut item, &ctx).unwrap();
        assert_eq!(item.require(fields::NEGATIVE_ANSWER).unwrap(), "library");
    }
}
