//! The judged checks of the reader check: an editor's questions about an edit, asked with
//! the judge prompt (`reader/judge.md`) and their own options, the first of which passes.
//! `kind` (`kind_check`, RECALL): is the edited answer the same kind of thing as the answer?
//! `coherent` (`coherence_check`): does the edited context (RECALL's non-answer-edited one,
//! KRE's negative one) contradict itself?

use super::{Mode, Planned};
use crate::prelude::*;

/// Which judged checks a recipe asks for: (`kind_check`, `coherence_check`).
pub(super) fn checks(spec: &StepSpec, mode: Mode) -> Result<(bool, bool), String> {
    let kind_check = spec.bool("kind_check", false);
    let coherence_check = spec.bool("coherence_check", false);
    if kind_check && mode == Mode::Kre {
        return Err("`kind_check` is a check of RECALL's answer edits (mode \"recall\")".into());
    }
    if spec.str("judge_prompt").is_some() && !(kind_check || coherence_check) {
        return Err("`judge_prompt` needs `kind_check = true` or `coherence_check = true`".into());
    }
    Ok((kind_check, coherence_check))
}

/// The kind check of an answer edit: `answer` replaced by `edited` in a passage that
/// `question` asks about (else `reader_wrong_kind`).
pub(super) fn kind(question: &str, answer: &str, edited: &str) -> Planned {
    judged(
        "kind",
        None,
        kind_question(question, answer, edited),
        KIND_OPTIONS,
        "reader_wrong_kind",
    )
}

/// The coherence check of an edited `context` (RECALL's non-answer-edited context, KRE's
/// negative context; else `reader_contradiction`).
pub(super) fn coherent(context: &str) -> Planned {
    judged(
        "coherent",
        Some(context),
        COHERENCE_QUESTION.to_owned(),
        COHERENCE_OPTIONS,
        "reader_contradiction",
    )
}

/// A judged check: the editor's `question` with `options`, about `context` (none: the
/// question alone); the first option passes.
fn judged(
    name: &'static str,
    context: Option<&str>,
    question: String,
    options: [&str; 2],
    reject: &'static str,
) -> Planned {
    Planned {
        name,
        context: context.map(str::to_owned),
        expected: 0,
        reject: Some(reject),
        always: false,
        ask: Some((question, options.map(str::to_owned).to_vec())),
    }
}

/// The options of the kind check: the first passes.
const KIND_OPTIONS: [&str; 2] = ["yes: the same kind of thing", "no: another kind of thing"];

/// The coherence check's question about the edited context.
const COHERENCE_QUESTION: &str =
    "Does any statement of this passage contradict another statement of the same passage?";

/// The options of the coherence check: the first passes.
const COHERENCE_OPTIONS: [&str; 2] = ["no: it agrees with itself", "yes: it contradicts itself"];

/// The kind check's question: is `edited` an answer of the sort `question` asks for, like
/// `answer` (whether or not it is true)?
fn kind_question(question: &str, answer: &str, edited: &str) -> String {
    format!(
        "A test asks \"{question}\" about a passage whose answer is \"{answer}\"; the test's writer replaced that answer with \"{edited}\". Whether or not it is true, is \"{edited}\" the same kind of thing as \"{answer}\", an answer of the sort the question asks for?"
    )
}
