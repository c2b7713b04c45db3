//! The checks every model answer gets before the step's own validator ([`common_checks`]),
//! the reason codes of validators ([`reason_code`]) and the rules that only guess at meaning
//! from words ([`GUESS_CODES`], [`Guesses`]).

use super::{clean_text_answer, extract_json};
use crate::{Item, StepCtx};
use serde_json::Value;

/// The item field that holds the lexical warnings of its answers (`code: detail` each);
/// the old name of [`crate::fields::WARNINGS`].
pub use crate::fields::WARNINGS as WARNINGS_FIELD;

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
        Self::new(ctx.routes.reader().is_none())
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
///   ([`cb_quality::PROMPT_LABELS`], `Event:`, `Question:` ...) or the answer repeats
///   [`ECHO_WINDOW`] consecutive words of `said`, what we told the model in our own words
///   (the template's instructions and worked examples,
///   [`Prompt::instructions`](crate::Prompt::instructions), and the repair messages sent so
///   far; a structured answer is read on its values, not its keys),
///   unless the material the model was given holds that line or those words.
///   An answer that holds the prompt's `<<<`/`>>>` fences, or names the prompt's parts
///   ([`cb_quality::PROMPT_TERMS`], "the reference explanation"), is echo as well.
///   A structured answer whose values are quoted examples of `said` (`"first option"`, or
///   a worked example's answer) is echo too;
/// - `other_language`: the answer is clearly in another language than that material
///   ([`cb_quality::other_language`]; unclear cases pass).
///
/// (`truncated`, an answer cut off by `finish_reason: length`, is decided before these.)
pub fn common_checks(answer: &str, said: &str, material: &str) -> Result<(), String> {
    use cb_quality as quality;
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

/// Every string inside a JSON value.
fn string_leaves<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| string_leaves(x, out)),
        Value::Object(o) => o.values().for_each(|x| string_leaves(x, out)),
        _ => {}
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::Prompt;

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
    fn reason_codes_are_the_snake_case_head() {
        assert_eq!(reason_code("bad_json: no object"), "bad_json");
        assert_eq!(reason_code("truncated: cut off"), "truncated");
        assert_eq!(reason_code("the answer was cut off (x): y"), "invalid");
        assert_eq!(reason_code("no colon"), "invalid");
    }
}
