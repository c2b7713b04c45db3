//! Steps: the engine's vocabulary of construction operations. A recipe chains them by
//! `kind`; each reads fields of an [`Item`] and adds its own. Steps that call the model go
//! through [`ask`], which renders the prompt, calls the LLM layer, validates the answer,
//! retries once with the reason when the answer is unusable, and records the lineage. Steps
//! never learn which backend answered: each supplies its own rule-based answer for the
//! offline backend, and the layer decides which one is used.

pub mod kre;
pub mod kre_rc;
pub mod recall;

use crate::files::Files;
use crate::prompt::Prompt;
use crate::recipe::StepSpec;
use crate::{CallRecord, EngineError, Item};
use cb_llm::{Call, ChatRequest, Llm, Message};
use minijinja::Environment;
use serde_json::{Map, Value};
use std::sync::OnceLock;

/// What a step run needs besides the item.
pub struct StepCtx<'a> {
    pub llm: &'a Llm,
    pub env: &'a Environment<'static>,
    pub seed: u64,
    pub recipe: &'a str,
    /// Every item of the build as loaded, for offline rules that draw from the other items.
    pub corpus: &'a Corpus,
}

/// An item of the build as loaded, seen by the steps of the other items.
#[derive(Debug, Clone)]
pub struct Peer {
    pub id: String,
    pub fields: Map<String, Value>,
}

/// Every item of the build as loaded (before any step), in source order, and the views of it
/// that offline rules need, each derived once per build on first use.
#[derive(Debug, Default)]
pub struct Corpus {
    pub peers: Vec<Peer>,
    answers: OnceLock<Vec<String>>,
    recall: OnceLock<recall::Pools>,
}

impl Corpus {
    pub fn new(peers: Vec<Peer>) -> Self {
        Self {
            peers,
            ..Default::default()
        }
    }

    /// The distinct non-empty `answer_text`s, in source order (KRE reading comprehension).
    pub fn answers(&self) -> &[String] {
        self.answers.get_or_init(|| {
            let mut seen = std::collections::HashSet::new();
            self.peers
                .iter()
                .filter_map(|p| p.fields.get("answer_text").and_then(Value::as_str))
                .map(|a| a.trim().to_owned())
                .filter(|a| !a.is_empty() && seen.insert(cb_model::text::normalize(a)))
                .collect()
        })
    }

    /// Same-kind values, terms and vocabularies (RECALL).
    pub(crate) fn recall(&self) -> &recall::Pools {
        self.recall.get_or_init(|| recall::Pools::of(&self.peers))
    }
}

/// Why a step did not produce its output for an item.
#[derive(Debug)]
pub enum StepFailure {
    /// The item goes to `rejects.jsonl`.
    Reject {
        reason: String,
        detail: String,
        raw: Option<String>,
        attempts: u32,
    },
    /// The build stops (budget spent, cache broken, replay miss).
    Fatal(EngineError),
    /// Not run because another item's fatal failure is stopping the build.
    Cancelled,
}

impl StepFailure {
    pub fn reject(reason: &str, detail: impl Into<String>) -> Self {
        Self::Reject {
            reason: reason.into(),
            detail: detail.into(),
            raw: None,
            attempts: 0,
        }
    }
}

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
    fn from_spec(spec: &StepSpec, default_max_tokens: u32) -> Result<Self, EngineError> {
        let p = &spec.params;
        let f = |k: &str| {
            p.get(k)
                .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
        };
        let i = |k: &str| p.get(k).and_then(toml::Value::as_integer);
        Ok(Self {
            temperature: f("temperature").unwrap_or(0.0) as f32,
            max_tokens: i("max_tokens").map_or(default_max_tokens, |x| x as u32),
            top_p: f("top_p").map(|x| x as f32),
            seed: i("seed").map(|x| x as u64),
            retries_on_invalid: i("retries_on_invalid").map_or(1, |x| x as u32),
        })
    }
}

/// A step, ready to run.
#[derive(Debug)]
pub enum Step {
    PickNegative(kre::PickNegative),
    NegativeExplanation(kre::NegativeExplanation),
    Distractors(kre_rc::Distractors),
    NegativeContext(kre_rc::NegativeContext),
    Paraphrase(recall::Paraphrase),
    Qa(recall::Qa),
    AnswerEdit(recall::AnswerEdit),
    NonAnswerEdit(recall::NonAnswerEdit),
    InsertSentence(recall::InsertSentence),
}

impl Step {
    /// Builds a step from its recipe entry; prompts are read from `prompts`.
    pub fn from_spec(spec: &StepSpec, prompts: &Files) -> Result<Self, EngineError> {
        match spec.kind.as_str() {
            "pick_negative" => Ok(Self::PickNegative(kre::PickNegative::new(spec))),
            "negative_explanation" => Ok(Self::NegativeExplanation(kre::NegativeExplanation::new(
                spec, prompts,
            )?)),
            "distractors" => Ok(Self::Distractors(kre_rc::Distractors::new(spec, prompts)?)),
            "negative_context" => Ok(Self::NegativeContext(kre_rc::NegativeContext::new(
                spec, prompts,
            )?)),
            "paraphrase" => Ok(Self::Paraphrase(recall::Paraphrase::new(spec, prompts)?)),
            "qa" => Ok(Self::Qa(recall::Qa::new(spec, prompts)?)),
            "answer_edit" => Ok(Self::AnswerEdit(recall::AnswerEdit::new(spec, prompts)?)),
            "nonanswer_edit" => Ok(Self::NonAnswerEdit(recall::NonAnswerEdit::new(
                spec, prompts,
            )?)),
            "insert_sentence" => Ok(Self::InsertSentence(recall::InsertSentence::new(spec))),
            other => Err(EngineError::Config(format!(
                "unknown step kind '{other}'; known: pick_negative, negative_explanation, distractors, negative_context, paraphrase, qa, answer_edit, nonanswer_edit, insert_sentence"
            ))),
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Self::PickNegative(s) => &s.name,
            Self::NegativeExplanation(s) => &s.model.name,
            Self::Distractors(s) => &s.model.name,
            Self::NegativeContext(s) => &s.model.name,
            Self::Paraphrase(s) => &s.model.name,
            Self::Qa(s) => &s.model.name,
            Self::AnswerEdit(s) => &s.model.name,
            Self::NonAnswerEdit(s) => &s.model.name,
            Self::InsertSentence(s) => &s.name,
        }
    }

    /// The prompt template this step renders, if it calls the model.
    pub fn prompt(&self) -> Option<&Prompt> {
        match self {
            Self::PickNegative(_) | Self::InsertSentence(_) => None,
            Self::NegativeExplanation(s) => Some(&s.model.prompt),
            Self::Distractors(s) => Some(&s.model.prompt),
            Self::NegativeContext(s) => Some(&s.model.prompt),
            Self::Paraphrase(s) => Some(&s.model.prompt),
            Self::Qa(s) => Some(&s.model.prompt),
            Self::AnswerEdit(s) => Some(&s.model.prompt),
            Self::NonAnswerEdit(s) => Some(&s.model.prompt),
        }
    }

    pub async fn run(&self, item: &mut Item, ctx: &StepCtx<'_>) -> Result<(), StepFailure> {
        match self {
            Self::PickNegative(s) => s.run(item, ctx),
            Self::NegativeExplanation(s) => s.run(item, ctx).await,
            Self::Distractors(s) => s.run(item, ctx).await,
            Self::NegativeContext(s) => s.run(item, ctx).await,
            Self::Paraphrase(s) => s.run(item, ctx).await,
            Self::Qa(s) => s.run(item, ctx).await,
            Self::AnswerEdit(s) => s.run(item, ctx).await,
            Self::NonAnswerEdit(s) => s.run(item, ctx).await,
            Self::InsertSentence(s) => s.run(item, ctx),
        }
    }
}

/// Reads a string parameter of a step.
pub(crate) fn param_str(spec: &StepSpec, key: &str) -> Option<String> {
    spec.params
        .get(key)
        .and_then(toml::Value::as_str)
        .map(str::to_owned)
}

pub(crate) fn param_bool(spec: &StepSpec, key: &str, default: bool) -> bool {
    spec.params
        .get(key)
        .and_then(toml::Value::as_bool)
        .unwrap_or(default)
}

/// A number parameter of a step (integers accepted).
pub(crate) fn param_f64(spec: &StepSpec, key: &str) -> Option<f64> {
    spec.params
        .get(key)
        .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
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
    pub(crate) fn new(
        spec: &StepSpec,
        prompts: &Files,
        default_prompt: Option<&str>,
        default_max_tokens: u32,
    ) -> Result<Self, EngineError> {
        let prompt = param_str(spec, "prompt")
            .or_else(|| default_prompt.map(str::to_owned))
            .ok_or_else(|| {
                EngineError::Config(format!("step {}: missing `prompt`", spec.name()))
            })?;
        Ok(Self {
            name: spec.name().to_owned(),
            prompt: Prompt::load(prompts, &prompt)?,
            params: LlmParams::from_spec(spec, default_max_tokens)?,
        })
    }

    /// The question for `item`: the template sees the item's fields, `answer_text` and
    /// `extra`; `offline` is the step's rule-based answer.
    pub(crate) fn ask<const N: usize>(
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
    let (system, user) = a.prompt.render(ctx.env, &vars).map_err(|e| {
        StepFailure::Fatal(EngineError::Config(format!("cannot render prompt {e}")))
    })?;
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
                    cb_llm::LlmError::Budget(m) => EngineError::Budget(m),
                    other => EngineError::Llm(other),
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
