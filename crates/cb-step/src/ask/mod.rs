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
use cb_llm::{Call, ChatRequest, Message};
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
    let vars = minijinja::Value::from_serialize(&a.vars);
    let mut messages = a
        .prompt
        .render(ctx.env, &vars)
        .map_err(|e| StepFailure::Fatal(StepError::Config(format!("cannot render prompt {e}"))))?;
    // A resample asks these again, with a note.
    let asked = messages.clone();
    // What we said to the model in our own words: the template's, then each repair message
    // or resample note. An answer that repeats any of it is echo.
    let mut said = a.prompt.instructions().to_owned();
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let call = Call {
            request: ChatRequest {
                messages: messages.clone(),
                temperature: a.params.temperature,
                top_p: a.params.top_p,
                max_tokens: a.params.max_tokens,
                seed: a.params.seed_of(attempt),
                response_schema: a.schema.cloned(),
            },
            template: a.prompt.name.clone(),
            template_hash: a.prompt.hash.clone(),
            item: item.id.clone(),
            offline: a.offline.clone(),
        };
        let completion = match ctx.llm_for(a.step).complete(&call).await {
            Ok(c) => c,
            // Requests sent: one per earlier answer, and every retry of this call.
            Err(e) => return Err(StepFailure::from_llm(e, a.step, attempt - 1)),
        };
        item.calls.push(CallRecord {
            step: a.step.to_owned(),
            template: a.prompt.name.clone(),
            template_hash: a.prompt.hash.clone(),
            cache_key: completion.cache_key.clone(),
            attempt,
            prompt_tokens: completion.prompt_tokens,
            completion_tokens: completion.completion_tokens,
            model: ctx.routes.model_of(a.step).map(str::to_owned),
        });
        let checked = if completion.finish_reason == "length" {
            Err("truncated: the answer was cut off (finish_reason length)".to_owned())
        } else {
            common_checks(&completion.text, &said, &material)
                .and_then(|()| validate(&completion.text))
        };
        match checked {
            Ok(v) => return Ok(v),
            Err(reason)
                if attempt <= a.params.retries_on_invalid
                    && a.params.on_invalid == OnInvalid::Resample =>
            {
                // A new draw, without the refused answer (a small model copies it back), told
                // why the last one was refused, so that a model knows what to avoid.
                let note = format!(
                    "An earlier answer to this request could not be used: {reason}. Answer afresh, following the instructions exactly."
                );
                said.push_str(&unquoted(&note));
                said.push('\n');
                messages = asked.clone();
                if let Some(last) = messages.last_mut() {
                    last.content.push_str("\n\n");
                    last.content.push_str(&note);
                }
            }
            Err(reason) if attempt <= a.params.retries_on_invalid => {
                let repair = format!(
                    "That answer cannot be used: {reason}. Answer again, following the instructions exactly."
                );
                // Our words only: a reason quotes the answer it refuses ("\"1087\" is not
                // ..."), and an answer that tries the same again is judged on its own.
                said.push_str(&unquoted(&repair));
                said.push('\n');
                messages.push(Message::assistant(completion.text));
                messages.push(Message::user(repair));
            }
            Err(reason) => {
                return Err(StepFailure::Reject {
                    reason: reason_code(&reason).to_owned(),
                    detail: format!("{}: {reason}", a.step),
                    raw: Some(completion.text),
                    attempts: attempt,
                });
            }
        }
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
