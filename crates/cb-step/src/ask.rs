//! How a step asks the model: [`ModelStep`] holds a step's prompt and sampling parameters,
//! [`ask`] renders the prompt, calls the LLM layer, validates the answer, sends an unusable
//! answer back with the reason (as often as `retries_on_invalid` says) and records every
//! call in the item's lineage. Also the answer unwrappers every validator starts from.

use crate::prompt::Prompt;
use crate::{CallRecord, Item, Step, StepCtx, StepError, StepFailure, StepFuture, StepSpec};
use cb_llm::{Call, ChatRequest, Message};
use serde_json::{Map, Value};
use std::future::Future;
use std::path::Path;

/// Sampling parameters and answer handling of a model step, from the recipe.
#[derive(Debug, Clone)]
pub struct LlmParams {
    pub temperature: f32,
    pub max_tokens: u32,
    pub top_p: Option<f32>,
    pub seed: Option<u64>,
    /// How many times an unusable answer is sent back with the reason (default 1).
    pub retries_on_invalid: u32,
}

impl LlmParams {
    fn from_spec(spec: &StepSpec, default_max_tokens: u32) -> Self {
        Self {
            temperature: spec.f64("temperature").unwrap_or(0.0) as f32,
            max_tokens: spec
                .int("max_tokens")
                .map_or(default_max_tokens, |x| x as u32),
            top_p: spec.f64("top_p").map(|x| x as f32),
            seed: spec.int("seed").map(|x| x as u64),
            retries_on_invalid: spec.int("retries_on_invalid").map_or(1, |x| x as u32),
        }
    }
}

/// What every model step holds: its name, its prompt template and its sampling parameters.
#[derive(Debug)]
pub struct ModelStep {
    pub name: String,
    pub prompt: Prompt,
    pub params: LlmParams,
}

impl ModelStep {
    /// Reads the recipe entry's `prompt` (or `default_prompt`; without either it is a
    /// configuration error) and its sampling parameters.
    pub fn new(
        spec: &StepSpec,
        prompts: &Path,
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
            params: LlmParams::from_spec(spec, default_max_tokens),
        })
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
}

/// One model question of a step.
pub struct Ask<'a> {
    pub step: &'a str,
    pub prompt: &'a Prompt,
    pub params: &'a LlmParams,
    /// Variables for the template.
    pub vars: Map<String, Value>,
    /// The step's rule-based answer, used by the offline backend.
    pub offline: String,
}

/// Asks the model, validates the answer with `validate`, sends an unusable answer back once
/// with the reason (as many times as `retries_on_invalid` says), and records every call in
/// the item's lineage.
pub async fn ask<T>(
    ctx: &StepCtx<'_>,
    item: &mut Item,
    a: Ask<'_>,
    validate: impl Fn(&str) -> Result<T, String>,
) -> Result<T, StepFailure> {
    let vars = minijinja::Value::from_serialize(&a.vars);
    let (system, user) = a
        .prompt
        .render(ctx.env, &vars)
        .map_err(|e| StepFailure::Fatal(StepError::Config(format!("cannot render prompt {e}"))))?;
    let mut messages = Vec::new();
    if !system.is_empty() {
        messages.push(Message::system(system));
    }
    messages.push(Message::user(user));
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let call = Call {
            request: ChatRequest {
                messages: messages.clone(),
                temperature: a.params.temperature,
                top_p: a.params.top_p,
                max_tokens: a.params.max_tokens,
                seed: a.params.seed,
                response_schema: None,
            },
            template: a.prompt.name.clone(),
            template_hash: a.prompt.hash.clone(),
            item: item.id.clone(),
            offline: a.offline.clone(),
        };
        let completion = match ctx.llm.complete(&call).await {
            Ok(c) => c,
            Err(e) if e.is_fatal() => {
                return Err(StepFailure::Fatal(match e {
                    cb_llm::LlmError::Budget(m) => StepError::Budget(m),
                    other => StepError::Llm(other),
                }))
            }
            Err(e) => {
                return Err(StepFailure::Reject {
                    reason: e.reason_code(),
                    detail: format!("{}: {e}", a.step),
                    raw: e.raw().map(str::to_owned),
                    attempts: attempt,
                })
            }
        };
        item.calls.push(CallRecord {
            step: a.step.to_owned(),
            template: a.prompt.name.clone(),
            template_hash: a.prompt.hash.clone(),
            cache_key: completion.cache_key.clone(),
            attempt,
            prompt_tokens: completion.prompt_tokens,
            completion_tokens: completion.completion_tokens,
        });
        let checked = if completion.finish_reason == "length" {
            Err("the answer was cut off (finish_reason length)".to_owned())
        } else {
            validate(&completion.text)
        };
        match checked {
            Ok(v) => return Ok(v),
            Err(reason) if attempt <= a.params.retries_on_invalid => {
                messages.push(Message::assistant(completion.text));
                messages.push(Message::user(format!(
                    "That answer cannot be used: {reason}. Answer again, following the instructions exactly."
                )));
            }
            Err(reason) => {
                let code = reason
                    .split(':')
                    .next()
                    .unwrap_or("invalid")
                    .trim()
                    .replace(' ', "_");
                return Err(StepFailure::Reject {
                    reason: code,
                    detail: format!("{}: {reason}", a.step),
                    raw: Some(completion.text),
                    attempts: attempt,
                });
            }
        }
    }
}

/// Strips what models wrap text answers in: code fences, surrounding quotes, a leading
/// label such as `Explanation:`.
pub fn clean_text_answer(s: &str) -> String {
    let mut t = s.trim();
    if let Some(inner) = t.strip_prefix("```") {
        let inner = inner.split_once('\n').map_or(inner, |(_, rest)| rest);
        t = inner.trim_end().strip_suffix("```").unwrap_or(inner).trim();
    }
    for label in ["Explanation:", "Context:", "Answer:", "Negative context:"] {
        // `get`: the label's length may fall inside a multi-byte character of the answer.
        if t.get(..label.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(label))
        {
            t = t[label.len()..].trim();
        }
    }
    let t = t.trim();
    let unquoted = t
        .strip_prefix('"')
        .and_then(|x| x.strip_suffix('"'))
        .filter(|x| !x.contains('"'))
        .unwrap_or(t);
    unquoted.trim().to_owned()
}

/// Finds the JSON object in an answer: the whole text, inside a code fence, or the first
/// balanced `{...}` in prose.
pub fn extract_json(s: &str) -> Option<Value> {
    let t = s.trim();
    if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(t) {
        return Some(v);
    }
    let bytes = t.as_bytes();
    let mut start = 0;
    while let Some(open) = t[start..].find('{').map(|i| i + start) {
        let mut depth = 0i32;
        let mut in_str = false;
        let mut escaped = false;
        for (i, &b) in bytes.iter().enumerate().skip(open) {
            if in_str {
                match b {
                    _ if escaped => escaped = false,
                    b'\\' => escaped = true,
                    b'"' => in_str = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_str = true,
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        if let Ok(v @ Value::Object(_)) =
                            serde_json::from_str::<Value>(&t[open..=i])
                        {
                            return Some(v);
                        }
                        break;
                    }
                }
                _ => {}
            }
        }
        start = open + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_found_in_fences_and_prose() {
        assert_eq!(extract_json(r#"{"a":1}"#).unwrap()["a"], 1);
        assert_eq!(extract_json("```json\n{\"a\": 2}\n```").unwrap()["a"], 2);
        assert_eq!(
            extract_json("Sure! Here it is: {\"a\": \"}{\"} hope it helps {x}").unwrap()["a"],
            "}{"
        );
        assert!(extract_json("no json here").is_none());
    }

    #[test]
    fn text_answers_are_unwrapped() {
        assert_eq!(
            clean_text_answer("Explanation: \"Banks have doors.\""),
            "Banks have doors."
        );
        assert_eq!(
            clean_text_answer("```\nBanks have doors.\n```"),
            "Banks have doors."
        );
        assert_eq!(clean_text_answer("  plain  "), "plain");
        assert_eq!(clean_text_answer("Akinoshū Kenji"), "Akinoshū Kenji");
    }
}
