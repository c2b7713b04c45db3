//! A model step's recipe side: its sampling parameters and answer handling ([`LlmParams`],
//! [`OnInvalid`]), what every model step holds ([`ModelStep`]) and the [`Step`] made of it and
//! the step's logic ([`Model`], [`ModelBacked`]).

use super::Ask;
use crate::files::Files;
use crate::prompt::Prompt;
use crate::{Item, Step, StepCtx, StepError, StepFailure, StepFuture, StepSpec};
use serde_json::Value;
use std::future::Future;

/// Sampling parameters and answer handling of a model step, from the recipe.
#[derive(Debug, Clone)]
pub struct LlmParams {
    pub temperature: f32,
    pub max_tokens: u32,
    pub top_p: Option<f32>,
    pub seed: Option<u64>,
    /// How many more times the question is asked after an unusable answer (default 1).
    pub retries_on_invalid: u32,
    /// How it is asked again.
    pub on_invalid: OnInvalid,
}

/// What a step does with an unusable answer while `retries_on_invalid` allows another try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnInvalid {
    /// Send the answer back with the reason it cannot be used, and ask again in the same
    /// conversation (`on_invalid = "repair"`, the default).
    Repair,
    /// Ask the same question afresh, with the next seed: a new draw at the step's
    /// temperature, which must be above 0 (`on_invalid = "resample"`). The refused answer is
    /// not sent back; the reason it was refused is, as a note after the question ("An earlier
    /// answer to this request could not be used: ..."), so that a model knows what to avoid.
    /// Each try is its own cache entry, so a re-run gives the same answers.
    Resample,
}

impl LlmParams {
    fn from_spec(spec: &StepSpec, default_max_tokens: u32) -> Result<Self, StepError> {
        let temperature = spec.f64("temperature").unwrap_or(0.0) as f32;
        let on_invalid = match spec.str("on_invalid").as_deref() {
            None | Some("repair") => OnInvalid::Repair,
            Some("resample") if temperature > 0.0 => OnInvalid::Resample,
            Some("resample") => {
                return Err(StepError::Config(format!(
                    "step {}: `on_invalid = \"resample\"` draws a new answer, which needs `temperature` above 0",
                    spec.name()
                )))
            }
            Some(other) => {
                return Err(StepError::Config(format!(
                    "step {}: unknown `on_invalid = {other:?}`; known: \"repair\", \"resample\"",
                    spec.name()
                )))
            }
        };
        Ok(Self {
            temperature,
            max_tokens: spec
                .int("max_tokens")
                .map_or(default_max_tokens, |x| x as u32),
            top_p: spec.f64("top_p").map(|x| x as f32),
            seed: spec.int("seed").map(|x| x as u64),
            retries_on_invalid: spec.int("retries_on_invalid").map_or(1, |x| x as u32),
            on_invalid,
        })
    }

    /// The seed of try `attempt` (from 1): the recipe's for the first; for a resample, the
    /// next ones after it (from 1 when the recipe sets none), so that every try is a new draw.
    pub(super) fn seed_of(&self, attempt: u32) -> Option<u64> {
        match (self.on_invalid, attempt) {
            (OnInvalid::Resample, 2..) => {
                Some(self.seed.unwrap_or(0).wrapping_add(u64::from(attempt) - 1))
            }
            _ => self.seed,
        }
    }
}

/// What every model step holds: its name, its prompt template, its sampling parameters and,
/// when its answer has structure, the JSON schema of that answer (sent as the request's
/// `response_schema`; free-text steps have none).
#[derive(Debug)]
pub struct ModelStep {
    pub name: String,
    pub prompt: Prompt,
    pub params: LlmParams,
    pub schema: Option<Value>,
}

impl ModelStep {
    /// Reads the recipe entry's `prompt` (or `default_prompt`; without either it is a
    /// configuration error) and its sampling parameters.
    pub fn new(
        spec: &StepSpec,
        prompts: &Files,
        default_prompt: Option<&str>,
        default_max_tokens: u32,
    ) -> Result<Self, StepError> {
        let prompt = spec
            .str("prompt")
            .or_else(|| default_prompt.map(str::to_owned))
            .ok_or_else(|| StepError::Config(format!("step {}: missing `prompt`", spec.name())))?;
        Ok(Self {
            name: spec.name().to_owned(),
            prompt: Prompt::load(prompts, &prompt)?,
            params: LlmParams::from_spec(spec, default_max_tokens)?,
            schema: None,
        })
    }

    /// The step's answer follows `schema` (see [`crate::schema`]).
    pub fn with_schema(mut self, schema: Value) -> Self {
        self.schema = Some(schema);
        self
    }

    /// The question for `item`: the template sees the item's fields, `answer_text` and
    /// `extra`; `offline` is the step's rule-based answer.
    pub fn ask<const N: usize>(
        &self,
        item: &Item,
        answer: &str,
        extra: [(&str, Value); N],
        offline: String,
    ) -> Ask<'_> {
        let mut vars = item.fields.clone();
        vars.insert("answer_text".into(), Value::from(answer));
        for (k, v) in extra {
            vars.insert(k.to_owned(), v);
        }
        Ask {
            step: &self.name,
            prompt: &self.prompt,
            params: &self.params,
            schema: self.schema.as_ref(),
            vars,
            offline,
        }
    }
}

/// The logic of a step that asks the model; [`Model`] pairs it with its [`ModelStep`]
/// (name, prompt, sampling) to make a [`Step`].
pub trait ModelBacked: Send + Sync + std::fmt::Debug {
    /// Runs the step on `item` (see [`Step::run`]), asking through `model`.
    fn apply<'a>(
        &'a self,
        model: &'a ModelStep,
        item: &'a mut Item,
        ctx: &'a StepCtx<'_>,
    ) -> impl Future<Output = Result<(), StepFailure>> + Send + 'a;

    /// The views of the build the step reads ([`crate::Step::views`]).
    fn views(&self) -> Vec<crate::ViewSpec> {
        Vec::new()
    }
}

/// A model step: its prompt and parameters, and its logic.
#[derive(Debug)]
pub struct Model<T> {
    pub model: ModelStep,
    pub step: T,
}

impl<T: ModelBacked + 'static> Model<T> {
    /// The step, ready for the step table.
    pub fn boxed(model: ModelStep, step: T) -> Box<dyn Step> {
        Box::new(Self { model, step })
    }
}

impl<T: ModelBacked> Step for Model<T> {
    fn name(&self) -> &str {
        &self.model.name
    }

    fn prompt(&self) -> Option<&Prompt> {
        Some(&self.model.prompt)
    }

    fn run<'a>(&'a self, item: &'a mut Item, ctx: &'a StepCtx<'_>) -> StepFuture<'a> {
        Box::pin(self.step.apply(&self.model, item, ctx))
    }

    fn views(&self) -> Vec<crate::ViewSpec> {
        self.step.views()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(toml: &str) -> Result<LlmParams, StepError> {
        let spec: StepSpec = toml::from_str(&format!("kind = \"qa\"\n{toml}")).unwrap();
        LlmParams::from_spec(&spec, 100)
    }

    #[test]
    fn a_resample_draws_with_the_next_seeds_and_a_repair_keeps_the_recipes() {
        let resample = params("temperature = 0.7\non_invalid = \"resample\"").unwrap();
        let seeds: Vec<_> = (1..=3).map(|a| resample.seed_of(a)).collect();
        assert_eq!(seeds, [None, Some(1), Some(2)]);
        let seeded = params("temperature = 0.7\nseed = 7\non_invalid = \"resample\"").unwrap();
        let seeds: Vec<_> = (1..=3).map(|a| seeded.seed_of(a)).collect();
        assert_eq!(seeds, [Some(7), Some(8), Some(9)]);
        let repair = params("temperature = 0.7\nseed = 7").unwrap();
        assert_eq!(repair.on_invalid, OnInvalid::Repair);
        assert_eq!(repair.seed_of(2), Some(7));
    }

    #[test]
    fn a_resample_at_temperature_0_or_an_unknown_mode_is_a_configuration_error() {
        let e = params("on_invalid = \"resample\"").unwrap_err().to_string();
        assert!(e.contains("step qa") && e.contains("temperature"), "{e}");
        let e = params("temperature = 0.5\non_invalid = \"retry\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"retry\"") && e.contains("\"resample\""), "{e}");
    }
}
