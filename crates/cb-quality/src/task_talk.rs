//! Task talk: a context that speaks about the task (the answer, the question, the options)
//! or denies what it should support, instead of giving a reason.

use crate::terms::{first_unshared, normalized};
use cb_model::text::{normalize, normalize_into};

/// Words of a context that talks about the task instead of the world (real SmolLM2 negative
/// contexts: "The answer must be \"bookstore\" to the question.", "... not mentioned as an
/// option in this passage", "Chris Hanna is not named in the passage", "This answer is
/// correct but not in the original text."), compared as [`cb_model::text::contains_phrase`]
/// does (articles dropped, so "the question" is "question"). "The passage of time" is not
/// task talk, nor is a term the material itself uses. For prose answers only: a
/// structured answer has a `"question"` key. One of the 300 sampled released KRE contexts
/// uses one ("Limestone is a possible answer to a question or problem ..."), and it is task
/// talk too.
pub const TASK_TALK: &[&str] = &[
    "question",
    "the answer must",
    "this answer",
    "this passage",
    "in the passage",
    "new passage",
    "rewritten passage",
    "original text",
    "must name",
    "the event would",
    "cause the event",
    "caused the event",
    "causes the event",
    "wrong choice",
    "right choice",
];

/// Phrases by which an explanation denies what it was asked to support (real SmolLM2
/// explanations: "... so eating an apple would not be the cause of his high fever.", "The
/// dog was asleep, so the event would not occur."), compared as
/// [`cb_model::text::contains_phrase`] does. None of the 300 sampled released KRE contexts uses
/// one.
pub const DENIALS: &[&str] = &[
    "would not",
    "wouldn't",
    "could not be",
    "cannot be",
    "not the cause",
    "not be the cause",
    "not the reason",
    "unlikely",
];

/// The first of [`DENIALS`] that `answer` uses and `material` does not.
pub fn denies(answer: &str, material: &str) -> Option<&'static str> {
    static TERMS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    first_unshared(DENIALS, normalized(&TERMS, DENIALS), answer, material)
}

/// How a context that announces an answer instead of giving a reason starts ("The answer is
/// \"read a book\" - ..."); elsewhere in a sentence ("the usual answer is") it may be prose.
pub const TASK_TALK_OPENINGS: &[&str] = &["the answer is", "the answer to"];

/// The first of [`TASK_TALK`] that a prose `answer` uses and `material` does not, or the
/// [`TASK_TALK_OPENINGS`] one of its sentences starts with.
pub fn talks_about_task(answer: &str, material: &str) -> Option<&'static str> {
    // The openings normalised once, each with the space that ends its last word.
    static OPENINGS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let openings = OPENINGS.get_or_init(|| {
        TASK_TALK_OPENINGS
            .iter()
            .map(|o| format!("{} ", normalize(o)))
            .collect()
    });
    // Which openings some sentence starts with; each sentence is normalised into one
    // buffer.
    let mut opens = [false; TASK_TALK_OPENINGS.len()];
    let mut sentence = String::new();
    for s in answer.split(['.', '!', '?', '\n']) {
        sentence.clear();
        normalize_into(s, &mut sentence);
        for (open, o) in opens.iter_mut().zip(openings) {
            *open |= sentence.starts_with(o.as_str());
        }
    }
    TASK_TALK_OPENINGS
        .iter()
        .zip(opens)
        .find(|(_, open)| *open)
        .map(|(o, _)| *o)
        .or_else(|| {
            static TERMS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
            first_unshared(TASK_TALK, normalized(&TERMS, TASK_TALK), answer, material)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts_that_talk_about_the_task_are_found() {
        // Accepted cose contexts of the worked-example prompts (QUALITY.md run), before this
        // check.
        let q = "Where do people usually go to borrow books without paying?";
        let bookstore = "The answer must be \"bookstore\" to the question.\n\nD: A bakery is a popular choice for food and drinks at the local grocery stores, but it's not mentioned as an option in this passage.";
        assert_eq!(talks_about_task(bookstore, q), Some("question"));
        let blue = "A plant that has no water will likely turn blue. The answer must be \"it will turn blue\" and must avoid any reference to diseases.";
        assert_eq!(talks_about_task(blue, ""), Some("the answer must"));
        // The world, not the task: "the passage of time" (a released KRE context), and the
        // offline rule's "the usual answer is".
        assert_eq!(
            talks_about_task("The passage of time can lead to changes.", ""),
            None
        );
        let offline =
            "When people ask \"Where is a good place to keep a pen?\", the usual answer is desk.";
        assert_eq!(
            talks_about_task(offline, "Where is a good place to keep a pen?"),
            None
        );
        // Announcing the negative answer is not a reason (accepted with structured output
        // off before the openings were added).
        let read = "The answer is \"Read a book\" - A person who drinks water would most likely want to do what?";
        assert_eq!(talks_about_task(read, ""), Some("the answer is"));
        // ... also after a first sentence that reads well (accepted with structured output on).
        let press = "Most people go to the printing press, where they can buy books. Printing presses print documents on paper.\n\nThe answer is \"printing press\" because it's a device that allows for the copying of books.";
        assert_eq!(talks_about_task(press, ""), Some("the answer is"));
        // A question the material itself asks about may be named.
        assert_eq!(
            talks_about_task(
                "That question has a long history.",
                "Which question is older?"
            ),
            None
        );
        // SQuAD passages rewritten for a negative answer that name it only in a remark
        // about the task (accepted with a resample, before these terms).
        let hillary = "The first confirmed ascent of Everest was made by Edmund Hillary and Tenzing Norgay, a member of the ninth British expedition to the mountain.\n\nChris Hanna is not named in the passage";
        assert_eq!(talks_about_task(hillary, ""), Some("in the passage"));
        let remark = "This answer is correct but not in the original text. The rewritten passage must name \"Kosmalyn Komor\".";
        assert_eq!(talks_about_task(remark, ""), Some("this answer"));
        // e-CARE explanations that speak of "the event" of the prompt, or of the choice.
        let tom = "Tom's plants grew faster due to a lack of water, so it was the wrong choice.";
        assert_eq!(talks_about_task(tom, ""), Some("wrong choice"));
        let fish = "A pond is teeming with fish, so the event would be caused by a lack of food or predators.";
        assert_eq!(
            talks_about_task(fish, "The ice on the pond melted."),
            Some("the event would")
        );
        assert_eq!(talks_about_task("Crowds came to the event.", ""), None);
    }

    #[test]
    fn explanations_that_deny_what_they_support_are_found() {
        // Real SmolLM2 explanations for e-CARE (negative answers "He ate an apple.", "The
        // dog was asleep.").
        let apple = "A high fever is a medical condition, so eating an apple would not be the cause of his high fever.";
        assert_eq!(
            denies(apple, "The boy had a high fever."),
            Some("would not")
        );
        let dog = "The dog was asleep, so the event wouldn't occur.";
        assert_eq!(denies(dog, ""), Some("wouldn't"));
        let spoon =
            "The spoon became cold because the heat of the soup caused a drop in temperature.";
        assert_eq!(denies(spoon, ""), None);
        // A negation the material makes is the material's.
        assert_eq!(
            denies(
                "It would not start, so the battery was flat.",
                "The car would not start."
            ),
            None
        );
    }
}
