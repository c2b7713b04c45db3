//! How a step asks the model: [`ModelStep`] holds a step's prompt and sampling parameters,
//! [`ask`] renders the prompt, calls the LLM layer, validates the answer, asks again after an
//! unusable answer (as often as `retries_on_invalid` says, in the way `on_invalid` says) and
//! records every call in the item's lineage.
//!
//! The pieces, each re-exported here (`cb_step::ask::common_checks` and the rest):
//! - `model`: the recipe side of a model step: [`LlmParams`], [`OnInvalid`], [`ModelStep`],
//!   and [`Model`] / [`ModelBacked`], which make a [`Step`](crate::Step) of it;
//! - `checks`: [`common_checks`], what every answer gets before the step's validator, the
//!   reason codes ([`reason_code`]) and the guesses ([`GUESS_CODES`], [`Guesses`]);
//! - `unwrap`: the answer unwrappers every validator starts from ([`extract_json`],
//!   [`clean_text_answer`]).

mod checks;
mod model;
mod unwrap;

pub use checks::{common_checks, reason_code, Guesses, ECHO_WINDOW, GUESS_CODES, WARNINGS_FIELD};
pub use model::{LlmParams, Model, ModelBacked, ModelStep, OnInvalid};
pub use unwrap::{clean_text_answer, extract_json};

use crate::prompt::Prompt;
use crate::{CallRecord, Item, StepCtx, StepError, StepFailure};
use cb_llm::{Call, ChatRequest, Completion, Message};
use serde_json::{Map, Value};

/// One model question of a step.
pub struct Ask<'a> {
    pub step: &'a str,
    pub prompt: &'a Prompt,
    pub params: &'a LlmParams,
    /// The answer's JSON schema, if it has structure.
    pub schema: Option<&'a Value>,
    /// Variables for the template.
    pub vars: Map<String, Value>,
    /// The step's rule-based answer, used by the offline backend.
    pub offline: String,
}

/// Asks the model, validates the answer with `validate`, asks again after an unusable answer
/// (as many times as `retries_on_invalid` says: with the answer and the reason, or afresh
/// with the reason, as [`OnInvalid`] says), and records every call in the item's lineage.
pub async fn ask<T>(
    ctx: &StepCtx<'_>,
    item: &mut Item,
    a: Ask<'_>,
    validate: impl Fn(&str) -> Result<T, String>,
) -> Result<T, StepFailure> {
    let material = material(&a.vars);
    let mut talk = Exchange::new(a.render(ctx)?, a.prompt.instructions());
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let call = a.call(&talk.messages, attempt, &item.id);
        let completion = match ctx.llm_for(a.step).complete(&call).await {
            Ok(c) => c,
            // Requests sent: one per earlier answer, and every retry of this call.
            Err(e) => return Err(StepFailure::from_llm(e, a.step, attempt - 1)),
        };
        item.calls.push(a.record(ctx, &completion, attempt));
        let reason = match verdict(&completion, &talk.said, &material, &validate) {
            Ok(v) => return Ok(v),
            Err(reason) => reason,
        };
        if attempt > a.params.retries_on_invalid {
            return Err(StepFailure::Reject {
                reason: reason_code(&reason).to_owned(),
                detail: format!("{}: {reason}", a.step),
                raw: Some(completion.text),
                attempts: attempt,
            });
        }
        match a.params.on_invalid {
            OnInvalid::Resample => talk.resample(&reason),
            OnInvalid::Repair => talk.repair(completion.text, &reason),
        }
    }
}

impl Ask<'_> {
    /// The conversation the prompt makes of the ask's variables.
    fn render(&self, ctx: &StepCtx<'_>) -> Result<Vec<Message>, StepFailure> {
        let vars = minijinja::Value::from_serialize(&self.vars);
        self.prompt
            .render(ctx.env, &vars)
            .map_err(|e| StepFailure::Fatal(StepError::Config(format!("cannot render prompt {e}"))))
    }

    /// Try `attempt` for item `item`, sending `messages`.
    fn call(&self, messages: &[Message], attempt: u32, item: &str) -> Call {
        Call {
            request: ChatRequest {
                messages: messages.to_vec(),
                temperature: self.params.temperature,
                top_p: self.params.top_p,
                max_tokens: self.params.max_tokens,
                seed: self.params.seed_of(attempt),
                response_schema: self.schema.cloned(),
                top_logprobs: None,
            },
            template: self.prompt.name.clone(),
            template_hash: self.prompt.hash.clone(),
            item: item.to_owned(),
            offline: self.offline.clone(),
        }
    }

    /// The lineage record of try `attempt`, answered with `completion`.
    fn record(&self, ctx: &StepCtx<'_>, completion: &Completion, attempt: u32) -> CallRecord {
        CallRecord {
            step: self.step.to_owned(),
            template: self.prompt.name.clone(),
            template_hash: self.prompt.hash.clone(),
            cache_key: completion.cache_key.clone(),
            attempt,
            prompt_tokens: completion.prompt_tokens,
            completion_tokens: completion.completion_tokens,
            model: ctx.routes.model_of(self.step).map(str::to_owned),
        }
    }
}

/// The answer `validate` makes of `completion`, or why it cannot be used: cut off, refused by
/// the checks every answer gets (an echo of what we `said`, of the `material`, ...), or by
/// `validate`.
fn verdict<T>(
    completion: &Completion,
    said: &str,
    material: &str,
    validate: impl Fn(&str) -> Result<T, String>,
) -> Result<T, String> {
    if completion.finish_reason == "length" {
        return Err("truncated: the answer was cut off (finish_reason length)".to_owned());
    }
    common_checks(&completion.text, said, material).and_then(|()| validate(&completion.text))
}

/// The conversation of one ask: the messages of its next try, and what we said in it.
struct Exchange {
    /// The rendered prompt: a resample asks it again, with a note.
    asked: Vec<Message>,
    /// What the next try sends.
    messages: Vec<Message>,
    /// What we said to the model in our own words: the template's, then each repair message
    /// or resample note. An answer that repeats any of it is echo.
    said: String,
}

impl Exchange {
    fn new(asked: Vec<Message>, instructions: &str) -> Self {
        Self {
            messages: asked.clone(),
            asked,
            said: instructions.to_owned(),
        }
    }

    /// Adds `words` to what we said, without their double-quoted parts: a reason quotes the
    /// answer it refuses ("\"1087\" is not ..."), and an answer that tries the same again is
    /// judged on its own.
    fn say(&mut self, words: &str) {
        self.said.push_str(&unquoted(words));
        self.said.push('\n');
    }

    /// Makes the next try a new draw of the question, without the refused answer (a small
    /// model copies it back), told why the last one was refused (`reason`), so that a model
    /// knows what to avoid.
    fn resample(&mut self, reason: &str) {
        let note = format!(
            "An earlier answer to this request could not be used: {reason}. Answer afresh, following the instructions exactly."
        );
        self.say(&note);
        self.messages = self.asked.clone();
        if let Some(last) = self.messages.last_mut() {
            last.content.push_str("\n\n");
            last.content.push_str(&note);
        }
    }

    /// Makes the next try go on with the conversation: the refused `answer`, then why it
    /// cannot be used (`reason`).
    fn repair(&mut self, answer: String, reason: &str) {
        let repair = format!(
            "That answer cannot be used: {reason}. Answer again, following the instructions exactly."
        );
        self.say(&repair);
        self.messages.push(Message::assistant(answer));
        self.messages.push(Message::user(repair));
    }
}

/// `s` without its double-quoted parts.
fn unquoted(s: &str) -> String {
    s.split('"').step_by(2).collect::<Vec<_>>().join(" ")
}

/// The text the model was given to work on: every string among the template's variables
/// (in lists too), one per line.
fn material(vars: &Map<String, Value>) -> String {
    fn collect(v: &Value, out: &mut String) {
        match v {
            Value::String(s) => {
                out.push_str(s);
                out.push('\n');
            }
            Value::Array(a) => a.iter().for_each(|x| collect(x, out)),
            Value::Object(o) => o.values().for_each(|x| collect(x, out)),
            _ => {}
        }
    }
    let mut out = String::new();
    vars.values().for_each(|v| collect(v, &mut out));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repair_is_our_words_but_its_quotes_are_not() {
        // A real exchange with SmolLM2 (QUALITY.md run): the repair quoted the refused answer,
        // the model sent it again, and the echo check took it for our words.
        let repair = "That answer cannot be used: bad_answer: \"Lysander the First\" is not the value of \"begin time\". Answer again, following the instructions exactly.";
        let said = unquoted(repair);
        let again = r#"{"key": "begin time", "question": "Who was the first to invade Greece?", "answer": "Lysander the First"}"#;
        assert!(common_checks(again, &said, "").is_ok());
        let e = common_checks(
            "Answer again, following the instructions exactly.",
            &said,
            "",
        )
        .unwrap_err();
        assert_eq!(reason_code(&e), "prompt_echo", "{e}");
    }
}
