//! The KRE row, in the released format.
//!
//! The released files spell the golden-context key with a leading space (`" golden_context"`),
//! and the released evaluation scripts read it that way, so the release format keeps it.
//! The clean JSONL (see the engine) uses `golden_context`.

use serde::{Deserialize, Serialize};

/// One element of a released KRE file, fields in the released order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KreRow {
    pub question: String,
    pub answer: String,
    pub negative_answer: String,
    pub candidate: String,
    #[serde(rename = " golden_context", alias = "golden_context")]
    pub golden_context: String,
    pub negative_context: String,
    pub choices: Vec<String>,
}

/// `0 -> "A"`, `1 -> "B"`, ...
pub fn letter(index: usize) -> String {
    char::from(b'A' + u8::try_from(index).unwrap_or(u8::MAX - b'A')).to_string()
}

/// `"A" -> Some(0)`; anything that is not a single capital letter gives `None`.
pub fn letter_index(letter: &str) -> Option<usize> {
    let mut chars = letter.chars();
    match (chars.next(), chars.next()) {
        (Some(c @ 'A'..='Z'), None) => Some(c as usize - 'A' as usize),
        _ => None,
    }
}

/// The option a reader check with `none_option` shows last, after the row's options in any
/// order: a reader that picks it found no answer in the passage. A pick of it is stored as
/// the letter after the row's last option ([`picked_option`]).
pub const NONE_OPTION: &str = "none of these: the passage does not state what the question asks";

/// The text of the option a reader's pick `i` names among the row's `choices`: the option,
/// or [`NONE_OPTION`] one past the last (the only pick stored there); `None` beyond.
pub fn picked_option(choices: &[String], i: usize) -> Option<&str> {
    match choices.get(i) {
        Some(c) => Some(c),
        None => (i == choices.len()).then_some(NONE_OPTION),
    }
}

/// The negative answer's option: the `candidate` letter when it names the negative answer,
/// else the first choice that is the negative answer (CommonsenseQA repeats a choice now and
/// then, so the letter decides between two equal texts).
pub fn negative_option(choices: &[String], candidate: &str, negative: &str) -> Option<usize> {
    letter_index(candidate)
        .filter(|i| choices.get(*i).is_some_and(|c| c == negative))
        .or_else(|| choices.iter().position(|c| c == negative))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_key_has_leading_space_and_both_spellings_read() {
        let row = KreRow {
            question: "q".into(),
            answer: "A".into(),
            negative_answer: "b".into(),
            candidate: "B".into(),
            golden_context: "g".into(),
            negative_context: "n".into(),
            choices: vec!["a".into(), "b".into()],
        };
        let s = serde_json::to_string(&row).unwrap();
        assert!(s.contains("\" golden_context\":\"g\""), "{s}");
        let clean = s.replace("\" golden_context\"", "\"golden_context\"");
        assert_eq!(serde_json::from_str::<KreRow>(&clean).unwrap(), row);
    }

    #[test]
    fn letters_round_trip() {
        for i in 0..5 {
            assert_eq!(letter_index(&letter(i)), Some(i));
        }
        assert_eq!(letter_index("a"), None);
        assert_eq!(letter_index("AB"), None);
    }

    /// A pick one past the row's options is the none option; further ones name nothing.
    #[test]
    fn a_pick_after_the_last_option_is_the_none_option() {
        let choices = ["Lyon".to_owned(), "Paris".to_owned()];
        assert_eq!(picked_option(&choices, 1), Some("Paris"));
        assert_eq!(picked_option(&choices, 2), Some(NONE_OPTION));
        assert_eq!(picked_option(&choices, 3), None);
    }
}
