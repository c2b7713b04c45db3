//! Prompt echo: an answer that repeats the prompt back (its labels, terms, fences, runs of
//! its instructions, its placeholder examples) rather than material the model was shown.

use crate::terms::{first_unshared, normalized};
use cb_model::text::tokens;

/// The labels the bundled prompt templates put at the start of a line before the material
/// they show the model (`Event: ...`, `Question: ...`). A line of an answer that starts with
/// one of them followed by `:` repeats the prompt back. Kept in step with `prompts/` by a
/// test of the steps crate.
pub const PROMPT_LABELS: &[&str] = &[
    "Answer",
    "Answer, copied from the paragraph",
    "Chosen answer",
    "Chosen cause",
    "Chosen result",
    "Correct answer",
    "Event",
    "For comparison, the reference explanation of the other option reads",
    "Options",
    "Other answers the dataset accepts (do not use them as options either)",
    "Paragraph",
    "Paragraph about an event",
    "Paragraph written from the record",
    "Passage",
    "Question",
    "Record of the event",
    "Reference explanation",
    "Replacement answer",
    "Sentence",
    "Sentences collected about the term",
    "Term",
    "The passage may also write it as",
    "The same answer written in other ways",
];

/// The first line of `answer` that starts with one of `labels` (case-insensitive) followed
/// by `:`; the label is returned. A label is matched on its own words: "Question:" and
/// "question :" match "Question", "Questions:" does not. Labels are compared after
/// stripping a leading list marker (`-`, `*`, `1.`) and quotes from the line. A line that
/// `material` (the text the model was given to work on) already holds is not echo: a passage
/// may have a line "Note: ..." of its own.
pub fn echoed_label<'a>(answer: &str, labels: &[&'a str], material: &str) -> Option<&'a str> {
    let material = material.to_lowercase();
    for line in answer.lines() {
        // No line that has a character is held by an empty material: the line is then not
        // lower-cased.
        if !line.trim().is_empty()
            && !material.is_empty()
            && material.contains(&line.trim().to_lowercase())
        {
            continue;
        }
        let l = line
            .trim()
            .trim_start_matches(|c: char| c.is_ascii_digit() || "-*•.) \"'`>#".contains(c));
        let Some((head, _)) = l.split_once(':') else {
            continue;
        };
        let head = head.trim().trim_end_matches(['"', '\'', ')']);
        // Labels with a parenthesis ("Reference explanation (supports ...)") match on what
        // comes before it.
        let head = head.split(" (").next().unwrap_or(head).trim();
        if let Some(l) = labels.iter().find(|l| l.eq_ignore_ascii_case(head)) {
            return Some(l);
        }
    }
    None
}

/// Names the bundled prompts give their own parts. An answer that uses one talks about the
/// prompt instead of answering it ("as explained by the reference explanation").
pub const PROMPT_TERMS: &[&str] = &[
    "reference explanation",
    "the other option",
    "chosen cause",
    "chosen result",
    "correct answer",
    "replacement answer",
    "accepted forms",
    // Our own repair message ("That answer cannot be used: ... Answer again ...").
    "that answer cannot be used",
];

/// The fences the bundled prompts put around the material they show (`<<<` ... `>>>`).
pub const FENCES: &[&str] = &["<<<", ">>>"];

/// The first of [`FENCES`] that `answer` holds and `material` does not: the model copied the
/// prompt's layout ("A new passage would be:\n<<<\n...\n>>>", a real SmolLM2 answer).
pub fn echoed_fence(answer: &str, material: &str) -> Option<&'static str> {
    FENCES
        .iter()
        .copied()
        .find(|f| answer.contains(f) && !material.contains(f))
}

/// The first of [`PROMPT_TERMS`] that `answer` uses (whole words, case-insensitive) and
/// `material` does not.
pub fn echoed_term(answer: &str, material: &str) -> Option<&'static str> {
    static TERMS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    first_unshared(
        PROMPT_TERMS,
        normalized(&TERMS, PROMPT_TERMS),
        answer,
        material,
    )
}

/// A run of `window` consecutive words of `instructions` (the template's own text, without
/// the material it shows) that `answer` repeats, as found; `None` when there is none. A run
/// that `material` also holds is not counted. Words are compared lower-cased, punctuation
/// left out.
pub fn echoed_instructions(
    answer: &str,
    instructions: &str,
    material: &str,
    window: usize,
) -> Option<String> {
    let a = tokens(answer);
    if window == 0 || a.len() < window {
        return None;
    }
    // The instructions are the same for every row of a step: their runs are made once a
    // thread and kept ([`instruction_runs`]); the material is read only when the answer
    // shares a run with them.
    instruction_runs(instructions, window, |runs| {
        let shared: Vec<&[String]> = a.windows(window).filter(|w| runs.contains(*w)).collect();
        if shared.is_empty() {
            return None;
        }
        let m = tokens(material);
        let given: rustc_hash::FxHashSet<&[String]> = m.windows(window).collect();
        shared
            .into_iter()
            .find(|w| !given.contains(w))
            .map(|w| w.join(" "))
    })
}

/// The runs of `window` consecutive words of `instructions` (lower-cased, punctuation left
/// out), handed to `f`. The last few sets made on this thread are kept, keyed by the text
/// and the window: a build asks about the same few templates' words row after row.
fn instruction_runs<T>(
    instructions: &str,
    window: usize,
    f: impl FnOnce(&rustc_hash::FxHashSet<Vec<String>>) -> T,
) -> T {
    type Runs = std::rc::Rc<rustc_hash::FxHashSet<Vec<String>>>;
    /// How many sets a thread keeps.
    const KEPT: usize = 8;
    thread_local! {
        static KEPT_RUNS: std::cell::RefCell<Vec<(String, usize, Runs)>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }
    let found = KEPT_RUNS.with_borrow_mut(|kept| {
        let at = kept
            .iter()
            .position(|(text, w, _)| *w == window && text == instructions)?;
        let entry = kept.remove(at);
        let runs = Runs::clone(&entry.2);
        kept.push(entry);
        Some(runs)
    });
    let runs = found.unwrap_or_else(|| {
        let t = tokens(instructions);
        let runs: Runs = std::rc::Rc::new(t.windows(window).map(<[String]>::to_vec).collect());
        KEPT_RUNS.with_borrow_mut(|kept| {
            if kept.len() == KEPT {
                kept.remove(0);
            }
            kept.push((instructions.to_owned(), window, Runs::clone(&runs)));
        });
        runs
    });
    f(&runs)
}

/// The first of `values` (the strings of a structured answer) that is one of the example
/// values the template shows in quotes (`"first option"`, `"<text copied from the
/// paragraph>"`) and that `material` does not hold: the model filled the shape with the
/// prompt's own placeholders.
pub fn echoed_example<'a>(
    values: &[&'a str],
    instructions: &str,
    material: &str,
) -> Option<&'a str> {
    let material = material.to_lowercase();
    values.iter().copied().find(|v| {
        let v = v.trim();
        !v.is_empty()
            && instructions.contains(&format!("\"{v}\""))
            && !material.contains(&v.to_lowercase())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real answer of SmolLM2-135M-Instruct to the e-CARE explanation prompt (issue #12).
    const SMOLLM_ECHO: &str = "The streets were wet in the morning.\nEvent: The shops opened late.\nChosen cause: The rain made the ground wet.";

    #[test]
    fn template_labels_repeated_in_an_answer_are_echo() {
        assert_eq!(echoed_label(SMOLLM_ECHO, PROMPT_LABELS, ""), Some("Event"));
        // A line the material itself has is the material, not echo.
        let passage = "Answer: forty-two, said the computer.";
        assert_eq!(echoed_label(passage, PROMPT_LABELS, passage), None);
        assert_eq!(
            echoed_label("- question : what is it?", PROMPT_LABELS, ""),
            Some("Question")
        );
        assert_eq!(
            echoed_label(
                "Reference explanation (supports \"x\"): y",
                PROMPT_LABELS,
                ""
            ),
            Some("Reference explanation")
        );
        assert_eq!(
            echoed_label("Rain wets streets: a fact of weather.", PROMPT_LABELS, ""),
            None
        );
        assert_eq!(echoed_label("Questions: none", PROMPT_LABELS, ""), None);
        assert_eq!(
            echoed_label("location: Rouen", &["location"], ""),
            Some("location")
        );
    }

    #[test]
    fn the_prompts_fences_in_an_answer_are_echo() {
        let real = "A new passage would be:\n<<<\nThe first confirmed ascent of Everest was made by Edmund Hillary.\n>>>\n";
        assert_eq!(
            echoed_fence(real, "Edmund Hillary of New Zealand"),
            Some("<<<")
        );
        assert_eq!(echoed_fence(real, "a <<< b >>> c"), None);
        assert_eq!(echoed_fence("Hillary climbed it.", ""), None);
    }

    #[test]
    fn answers_about_the_prompt_are_found() {
        // Real accepted answers of SmolLM2 to the e-CARE explanation prompt before this check.
        let meta =
            "The boy ate an apple and caught the flu, as explained by the reference explanation.";
        assert_eq!(
            echoed_term(meta, "The boy caught the flu."),
            Some("reference explanation")
        );
        let other = "The dog barked loudly at the door, and the other option was a stranger who knocked on the door.";
        assert_eq!(echoed_term(other, ""), Some("the other option"));
        assert_eq!(echoed_term("Metal spoons conduct heat quickly.", ""), None);
        // Our repair message, reworded and sent back (accepted for e-CARE before this term).
        let parrot = "That answer cannot be used: \"The answer is not possible to provide.\"; Provide a reason for \"She forgot how to read music.\"";
        assert_eq!(echoed_term(parrot, ""), Some("that answer cannot be used"));
        // The material's own words are not echo.
        assert_eq!(
            echoed_term("the correct answer", "Which is the correct answer?"),
            None
        );
    }

    #[test]
    fn instructions_repeated_are_found_and_material_is_not() {
        let instructions = "Write one sentence (at most 40 words) of general knowledge that explains why the event happened.";
        assert_eq!(
            echoed_instructions(
                "Sure. Write one sentence at most 40 words of general knowledge: rain.",
                instructions,
                "",
                8
            )
            .as_deref(),
            Some("write one sentence at most 40 words of")
        );
        assert!(echoed_instructions(
            "Rain makes the ground wet and slippery.",
            instructions,
            "",
            8
        )
        .is_none());
    }

    #[test]
    fn placeholders_of_the_prompt_are_echo() {
        // A real answer of SmolLM2 to the distractors prompt under a JSON schema (llama-cpp-
        // python, response_format json_object): the shape filled with its own example.
        let shape = r#"Reply with JSON only, in exactly this shape: {"options": ["first option", "second option", "third option"]}"#;
        let answer = ["first option", "second option", "third option"];
        assert_eq!(
            echoed_example(&answer, shape, "Normandy"),
            Some("first option")
        );
        assert_eq!(echoed_example(&["Germany", "Spain"], shape, ""), None);
    }
}
