//! How a step asks the model: [`ModelStep`] holds a step's prompt and sampling parameters,
//! [`ask`] renders the prompt, calls the LLM layer, validates the answer, asks again after an
//! unusable answer (as often as `retries_on_invalid` says, in the way `on_invalid` says) and
//! records every call in the item's lineage. Also the answer unwrappers every validator
//! starts from.

use crate::files::Files;
use crate::prompt::Prompt;
use crate::{CallRecord, Item, Step, StepCtx, StepError, StepFailure, StepFuture, StepSpec};
use cb_llm::{Call, ChatRequest, Message};
use serde_json::{Map, Value};
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
    /// temperature, which must be above 0 (`on_invalid = "resample"`). Each try is its own
    /// cache entry, so a re-run gives the same answers.
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
    fn seed_of(&self, attempt: u32) -> Option<u64> {
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
    /// The answer's JSON schema, if it has structure.
    pub schema: Option<&'a Value>,
    /// Variables for the template.
    pub vars: Map<String, Value>,
    /// The step's rule-based answer, used by the offline backend.
    pub offline: String,
}

/// Asks the model, validates the answer with `validate`, asks again after an unusable answer
/// (as many times as `retries_on_invalid` says: with the reason, or afresh, as
/// [`OnInvalid`] says), and records every call in the item's lineage.
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
    // What we said to the model in our own words: the template's, then each repair message.
    // An answer that repeats any of it is echo.
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
                    // Requests sent: one per earlier answer, and every retry of this call.
                    attempts: attempt - 1 + e.attempts(),
                });
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
            Err("truncated: the answer was cut off (finish_reason length)".to_owned())
        } else {
            common_checks(&completion.text, &said, &material)
                .and_then(|()| validate(&completion.text))
        };
        match checked {
            Ok(v) => return Ok(v),
            Err(_)
                if attempt <= a.params.retries_on_invalid
                    && a.params.on_invalid == OnInvalid::Resample => {}
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

/// The item field that holds the lexical warnings of its answers (`code: detail` each).
pub const WARNINGS_FIELD: &str = "lexical_warnings";

/// The reason codes of rules that guess at meaning from words: an explanation that seems to
/// argue for the golden answer (`supports_golden`) or against the negative one
/// (`denies_negative`), that does not name the negative answer (`no_mention`), or that says
/// nothing beyond the negative answer and the question's own words (`restates_question`).
/// Where a reader checks the rows they are warnings kept on the row (the reader decides);
/// where nobody reads, they stay rejects.
pub const GUESS_CODES: [&str; 4] = [
    "supports_golden",
    "denies_negative",
    "no_mention",
    "restates_question",
];

/// What a validator found by rules of [`GUESS_CODES`]: rejects when `reject` (no reader),
/// else warnings.
#[derive(Debug, Default)]
pub struct Guesses {
    reject: bool,
    found: Vec<String>,
}

impl Guesses {
    /// Guesses reject when nobody reads the rows back.
    pub fn for_ctx(ctx: &StepCtx<'_>) -> Self {
        Self::new(ctx.reader.is_none())
    }

    pub fn new(reject: bool) -> Self {
        Guesses {
            reject,
            found: Vec::new(),
        }
    }

    /// A guess's reason (`code: detail`): an error when guesses reject, else a warning.
    pub fn flag(&mut self, reason: String) -> Result<(), String> {
        debug_assert!(GUESS_CODES.contains(&reason_code(&reason)), "{reason}");
        if self.reject {
            return Err(reason);
        }
        self.found.push(reason);
        Ok(())
    }

    /// A fresh set for the next answer, with the same rule.
    pub fn fresh(&self) -> Self {
        Self::new(self.reject)
    }

    /// Adds the warnings to the item's [`WARNINGS_FIELD`].
    pub fn record(self, item: &mut Item) {
        let mut all = item.texts(WARNINGS_FIELD);
        all.extend(self.found);
        item.set(WARNINGS_FIELD, all);
    }
}

/// Consecutive words of the template's own text that an answer may not repeat.
pub const ECHO_WINDOW: usize = 6;

/// The checks every model answer gets before the step's own validator, each with its stable
/// reason code:
/// - `prompt_echo`: a line of the answer starts with one of the prompt labels
///   ([`cb_model::quality::PROMPT_LABELS`], `Event:`, `Question:` ...) or the answer repeats
///   [`ECHO_WINDOW`] consecutive words of `said`, what we told the model in our own words
///   (the template's instructions and worked examples, [`Prompt::instructions`], and the
///   repair messages sent so far; a structured answer is read on its values, not its keys),
///   unless the material the model was given holds that line or those words.
///   An answer that holds the prompt's `<<<`/`>>>` fences, or names the prompt's parts
///   ([`cb_model::quality::PROMPT_TERMS`], "the reference explanation"), is echo as well.
///   A structured answer whose values are quoted examples of `said` (`"first option"`, or
///   a worked example's answer) is echo too;
/// - `other_language`: the answer is clearly in another language than that material
///   ([`cb_model::quality::other_language`]; unclear cases pass).
///
/// (`truncated`, an answer cut off by `finish_reason: length`, is decided before these.)
pub fn common_checks(answer: &str, said: &str, material: &str) -> Result<(), String> {
    use cb_model::quality;
    if let Some(label) = quality::echoed_label(answer, quality::PROMPT_LABELS, material) {
        return Err(format!(
            "prompt_echo: the answer repeats the prompt's \"{label}:\" line; reply with the answer only"
        ));
    }
    if let Some(fence) = quality::echoed_fence(answer, material) {
        return Err(format!(
            "prompt_echo: the answer repeats the prompt's \"{fence}\" fence; reply with the answer only"
        ));
    }
    if let Some(term) = quality::echoed_term(answer, material) {
        return Err(format!(
            "prompt_echo: the answer talks about the prompt (\"{term}\"); answer the task itself"
        ));
    }
    let json = extract_json(answer);
    let mut values = Vec::new();
    if let Some(v) = &json {
        string_leaves(v, &mut values);
    }
    // An answer that is one JSON object and nothing else is read on its values: its keys are
    // the schema's words, which a worked example shows too (`{"replacements": [{"original":
    // "13 December 1545", ...` is not echo when the record holds that date).
    let bare = clean_text_answer(answer);
    let words = if json.is_some() && bare.starts_with('{') && bare.ends_with('}') {
        std::borrow::Cow::Owned(values.join("\n"))
    } else {
        std::borrow::Cow::Borrowed(answer)
    };
    if let Some(run) = quality::echoed_instructions(&words, said, material, ECHO_WINDOW) {
        return Err(format!(
            "prompt_echo: the answer repeats the instructions (\"{run}\"); reply with the answer only"
        ));
    }
    if let Some(x) = quality::echoed_example(&values, said, material) {
        return Err(format!(
            "prompt_echo: \"{x}\" is the prompt's example, not an answer"
        ));
    }
    if let Some((got, want)) = quality::other_language(answer, material) {
        return Err(format!(
            "other_language: the answer is in {got:?}, the source in {want:?}; answer in the source's language"
        ));
    }
    Ok(())
}

/// `s` without its double-quoted parts.
fn unquoted(s: &str) -> String {
    s.split('"').step_by(2).collect::<Vec<_>>().join(" ")
}

/// Every string inside a JSON value.
fn string_leaves<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| string_leaves(x, out)),
        Value::Object(o) => o.values().for_each(|x| string_leaves(x, out)),
        _ => {}
    }
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

/// The stable code of a validator's reason: the `snake_case` word before its first `:`
/// (`"bad_json: ..."` -> `bad_json`); `invalid` when a reason does not start with one.
pub fn reason_code(reason: &str) -> &str {
    match reason.split_once(':') {
        Some((code, _))
            if !code.is_empty() && code.chars().all(|c| c.is_ascii_lowercase() || c == '_') =>
        {
            code
        }
        _ => "invalid",
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
/// balanced `{...}` in prose. A raw line break or tab inside a string, which JSON forbids but
/// grammar-constrained servers send (llama-cpp-python's `json_object` with SmolLM2, see
/// QUALITY.md), is read as its escape, so the answer is judged on its values.
pub fn extract_json(s: &str) -> Option<Value> {
    find_json(s.trim()).or_else(|| find_json(&escape_controls_in_strings(s.trim())))
}

/// `s` with every control character inside a double-quoted string written as its JSON escape.
fn escape_controls_in_strings(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let (mut in_str, mut escaped) = (false, false);
    for c in s.chars() {
        if in_str && !escaped && c.is_control() {
            match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                _ => out.push_str(&format!("\\u{:04x}", c as u32)),
            }
            continue;
        }
        out.push(c);
        match c {
            _ if escaped => escaped = false,
            '\\' if in_str => escaped = true,
            '"' => in_str = !in_str,
            _ => {}
        }
    }
    out
}

fn find_json(t: &str) -> Option<Value> {
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

    #[test]
    fn raw_line_breaks_inside_strings_are_read_as_escapes() {
        // A real SmolLM2 answer under llama-cpp-python's json_object schema (QUALITY.md run):
        // a line break inside a string value.
        let raw = "{ \"options\": [\"first option\" , \"] }\nThe answer to this question should be a string (either either \",\" or \"] }";
        let v = extract_json(raw).expect("parsed");
        let options = v["options"].as_array().unwrap();
        assert_eq!(options[0], "first option");
        assert!(options[1].as_str().unwrap().contains('\n'));
        // Valid JSON and JSON in prose read as before.
        assert_eq!(extract_json("{\"a\": \"x\\ny\"}").unwrap()["a"], "x\ny");
        assert_eq!(extract_json("He said \"hi.\n{\"a\": 1}").unwrap()["a"], 1);
    }

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

    fn bundled_prompt(name: &str) -> Prompt {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../prompts");
        Prompt::load(&crate::Files::Dir(dir), name).unwrap()
    }

    fn causal_prompt() -> Prompt {
        bundled_prompt("kre/negative_explanation_causal.md")
    }

    #[test]
    fn real_echoing_answers_are_refused_with_stable_codes() {
        let p = causal_prompt();
        let material = "Otters enter their new habitat.\nThey always live by the water so that they can drink water easily.\nOtters start looking for abalone for food.\n";
        // Real answers of SmolLM2-135M-Instruct (llama-cpp-python, 127.0.0.1:8088) to this
        // template: the issue's, and one collected for e-CARE dev-1.
        let issue = "The streets were wet in the morning.\nEvent: The shops opened late.\nChosen cause: The rain made the ground wet.";
        let dev1 = "Here is a possible response:\nThe event \"They always live by the water so that they can drink water easily\" could be explained as follows: The reference explanation of the other option, which mentions abalone are one of the first food items taken by otters and their behavior towards them provides evidence for this.";
        for raw in [issue, dev1] {
            let e = common_checks(raw, p.instructions(), material).unwrap_err();
            assert_eq!(reason_code(&e), "prompt_echo", "{e}");
        }
        let good =
            "Animals that live near water choose homes where fresh water is always close at hand.";
        assert!(common_checks(good, p.instructions(), material).is_ok());
        let french = "Les loutres vivent toujours près de l'eau, et elles ont besoin de boire souvent pour vivre dans leur habitat.";
        assert_eq!(
            reason_code(&common_checks(french, p.instructions(), material).unwrap_err()),
            "other_language"
        );
    }

    #[test]
    fn a_real_structured_answer_that_fills_the_shape_with_its_example_is_echo() {
        // The distractors template as it was when SmolLM2-135M-Instruct (under
        // `response_format: json_object` with the step's schema) answered this: it showed the
        // shape with example values, and the model sent them back.
        let old = Prompt::parse(
            "kre/distractors.md",
            "=== user ===\nQuestion: {{ question }}\nReply with JSON only, in exactly this shape:\n{\"options\": [\"first option\", \"second option\", \"third option\"]}\n",
        )
        .unwrap();
        let raw = r#"{ "options": ["first option", "second option", "third option"] }"#;
        let material = "The Normans gave their name to Normandy, a region in France.\nFrance\n";
        let e = common_checks(raw, old.instructions(), material).unwrap_err();
        assert_eq!(reason_code(&e), "prompt_echo", "{e}");
        let ok = r#"{"options": ["Germany", "Spain", "Italy"]}"#;
        assert!(common_checks(ok, old.instructions(), material).is_ok());
        // The bundled template shows a worked example instead; its answer sent back is echo.
        let now = bundled_prompt("kre/distractors.md");
        let copied = r#"{"options": ["Auguste Rodin", "Charles Garnier", "Louis Pasteur"]}"#;
        let e = common_checks(copied, now.instructions(), material).unwrap_err();
        assert_eq!(reason_code(&e), "prompt_echo", "{e}");
        assert!(common_checks(ok, now.instructions(), material).is_ok());
    }

    #[test]
    fn a_structured_answer_is_not_echo_for_the_keys_it_shares_with_the_example() {
        // An event whose record holds a value the worked example also edits: an edit of that
        // value shares a run of words with the example's answer (`replacements original 13
        // december 1545 edited`) only through the JSON keys. (A real SmolLM2 answer hit this
        // while the example showed the Siege of Orléans, which the bundled sample has too.)
        let p = bundled_prompt("recall/edit_nonanswer_record.md");
        let material =
            "begin time: 13 December 1545\nThe council answered the Protestant Reformation.\n";
        let own =
            r#"{"replacements": [{"original": "13 December 1545", "edited": "5 June 1530"}]}"#;
        assert!(common_checks(own, p.instructions(), material).is_ok());
        let fenced = format!("```json\n{own}\n```");
        assert!(common_checks(&fenced, p.instructions(), material).is_ok());
        // Copying the example's edits is echo.
        let copied = r#"{"replacements": [{"original": "13 December 1545", "edited": "2 February 1541"}, {"original": "the Protestant Reformation", "edited": "the Great Schism"}]}"#;
        let e = common_checks(copied, p.instructions(), material).unwrap_err();
        assert_eq!(reason_code(&e), "prompt_echo", "{e}");
    }

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

    #[test]
    fn reason_codes_are_the_snake_case_head() {
        assert_eq!(reason_code("bad_json: no object"), "bad_json");
        assert_eq!(reason_code("truncated: cut off"), "truncated");
        assert_eq!(reason_code("the answer was cut off (x): y"), "invalid");
        assert_eq!(reason_code("no colon"), "invalid");
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
