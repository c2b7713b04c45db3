//! Restatement: a negative context that only restates the negative answer.

use crate::stems::{content_stems, count_added, each_content_stem, Stem};
use cb_model::text::normalizes_to_empty;

/// Fewer than this many content words beyond the negative answer's: the context only
/// restates it. One added word is enough to pass ("It is kept in the oven." for "oven"):
/// the rule is there for bare restatements, and a weak context is the audit's and the
/// reviewers' call.
pub const RESTATE_MIN_ADDED: usize = 1;

/// Words about the task rather than the situation ("The answer to the question is ...",
/// "... provide another reason that supports it", our own repair message reworded), and
/// modal verbs; never counted as what a negative context adds.
pub(crate) const TASK_WORDS: &[&str] = &[
    "answer",
    "answers",
    "question",
    "correct",
    "option",
    "choice",
    "must",
    "should",
    "might",
    "may",
    "reason",
    "reasons",
    "support",
    "provide",
    "another",
    "explain",
    "explanation",
];

/// Whether a negative context (or explanation) only restates the negative answer: it adds
/// fewer than [`RESTATE_MIN_ADDED`] content words (none) to it and to `given`, the texts the
/// model was shown and may copy (the question, the premise), task words ([`TASK_WORDS`])
/// left out. "The plants grew faster." for "The plants grew faster", or, real SmolLM2
/// answers, "The answer is: A cupboard" for "cupboard" and "The dog barked loudly at the
/// door. The dog was asleep." (the premise, then the negative answer). An empty context
/// restates nothing (other checks catch it).
pub fn restates(context: &str, negative_answer: &str, given: &[&str]) -> bool {
    if normalizes_to_empty(context) || normalizes_to_empty(negative_answer) {
        return false;
    }
    // The task words' stems are made once; the negative answer's and `given`'s per call.
    static TASK_STEMS: std::sync::OnceLock<rustc_hash::FxHashSet<Stem>> =
        std::sync::OnceLock::new();
    let task = TASK_STEMS.get_or_init(|| content_stems(&TASK_WORDS.join(" ")));
    let mut known = rustc_hash::FxHashSet::default();
    for text in std::iter::once(negative_answer).chain(given.iter().copied()) {
        each_content_stem(text, |s| {
            known.insert(s);
        });
    }
    count_added(
        context,
        |s| task.contains(s) || known.contains(s),
        RESTATE_MIN_ADDED,
    ) < RESTATE_MIN_ADDED
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_restatement_of_the_negative_answer_is_found() {
        // A real SmolLM2 answer (issue #12) for the negative answer "The plants grew faster".
        assert!(restates(
            "The plants grew faster.",
            "The plants grew faster",
            &[]
        ));
        assert!(restates(
            "Yes, the plant grew faster.",
            "The plants grew faster",
            &[]
        ));
        assert!(!restates(
            "Water and sunlight help plants grow faster.",
            "The plants grew faster",
            &[]
        ));
        assert!(!restates("It is kept in the oven.", "oven", &[]));
        assert!(!restates("", "x", &[]));
    }

    #[test]
    fn a_restatement_wrapped_in_task_words_or_the_question_is_found() {
        // Real SmolLM2 answers (QUALITY.md run) that the rule above let through.
        let q = "Where would you most likely keep milk so that it stays cold?";
        assert!(restates("The answer is: A cupboard", "cupboard", &[q]));
        let q = "A person who is very thirsty would most likely want to do what?";
        assert!(restates(
            "The answer to the question \"What a thirsty person would most likely want to do is run outside\" must be \"run outside\".",
            "run outside",
            &[q]
        ));
        // The same answer as it was accepted at the repair attempt: it rewords the repair
        // message ("... give a reason that supports it") instead of giving a reason.
        assert!(restates(
            "The answer to the question \"What a thirsty person would most likely want to do is run outside\" must be \"run outside\"; provide another reason that supports it.",
            "run outside",
            &[q]
        ));
        let premise = "The dog barked loudly at the door.";
        let q = "The dog barked loudly at the door. What is the more possible cause of this?";
        assert!(restates(
            "The dog barked loudly at the door. The dog was asleep.",
            "The dog was asleep.",
            &[premise, q]
        ));
        // A reason, however weak, is not a restatement.
        let q = "The boy had a high fever. What is the more possible cause of this?";
        assert!(!restates(
            "The boy had a high fever and ate an apple, which is the primary cause of the flu.",
            "He ate an apple.",
            &[q]
        ));
    }
}
