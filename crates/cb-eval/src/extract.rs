//! Answer extraction: which option a free-text answer chose, or why it counts as invalid.
//!
//! In order: an explicit letter (`B`, `(B)`, `B: bank`, `answer is B`, `option B`), unless
//! the answer names exactly one option's text and it is another one (`conflict`); then a
//! non-answer (empty, "None", "I don't know", cannot determine, a refusal) is invalid; then the
//! option texts mentioned as whole words (after `cb_model::text::normalize`): exactly one
//! is the choice (an option whose text lies inside a longer mentioned one does not count),
//! several distinct ones are invalid (`both`), none is invalid (`no_option`).

use cb_model::text::{contains_phrase, looks_like_refusal, normalize};
use serde::Serialize;

/// What the extraction found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Extracted {
    /// The chosen option's index, `None` when invalid.
    pub choice: Option<usize>,
    /// How it was found (`letter`, `text`) or why it is invalid (`empty`, `unknown`,
    /// `refusal`, `both`, `no_option`, `conflict`, `error`).
    pub how: &'static str,
}

impl Extracted {
    fn invalid(how: &'static str) -> Self {
        Extracted { choice: None, how }
    }
}

const UNKNOWN: [&str; 9] = [
    "i don't know",
    "i do not know",
    "i dont know",
    "cannot determine",
    "can't determine",
    "cannot be determined",
    "not sure",
    "no answer",
    "unable to determine",
];

/// A letter token within range, stripped of brackets, quotes and a trailing `:` `.` `)`.
fn letter_token(tok: &str, n: usize) -> Option<usize> {
    let t = tok.trim_matches(|c: char| "()[]{}*\"'`".contains(c));
    let t = t.trim_end_matches([':', '.', ')', ',']);
    let mut cs = t.chars();
    match (cs.next(), cs.next()) {
        (Some(c @ 'A'..='Z'), None) => {
            let i = c as usize - 'A' as usize;
            (i < n).then_some(i)
        }
        _ => None,
    }
}

fn explicit_letter(text: &str, n: usize) -> Option<usize> {
    let toks: Vec<&str> = text.split_whitespace().collect();
    let first = toks.first()?;
    // The whole answer is a letter, or opens with one marked as a letter ("B:", "(B)", "B.")
    // — a bare leading "A" is the article, not an option.
    if toks.len() == 1 || first.ends_with([':', ')', '.']) || first.starts_with('(') {
        if let Some(i) = letter_token(first, n) {
            return Some(i);
        }
    }
    let lower: Vec<String> = toks.iter().map(|t| t.to_lowercase()).collect();
    for (k, t) in lower.iter().enumerate() {
        let t = t.trim_end_matches([':', ',']);
        let marker = matches!(t, "answer" | "option" | "choice")
            || (t == "is" && k > 0 && lower[k - 1].starts_with("answer"));
        if !marker {
            continue;
        }
        // "answer: B", "answer is B", "the answer is option (B)"
        for next in toks.iter().skip(k + 1).take(3) {
            if let Some(i) = letter_token(next, n) {
                return Some(i);
            }
            if !matches!(
                next.to_lowercase().as_str(),
                "is" | "option" | "choice" | ":"
            ) {
                break;
            }
        }
    }
    None
}

/// The options whose text the answer mentions as whole words, without an option whose text
/// only occurs inside a longer mentioned one.
fn named_options(t: &str, options: &[String]) -> Vec<usize> {
    let mentioned: Vec<usize> = (0..options.len())
        .filter(|&i| contains_phrase(t, &options[i]))
        .collect();
    mentioned
        .iter()
        .copied()
        .filter(|&i| {
            !mentioned.iter().any(|&j| {
                j != i
                    && normalize(&options[j]).len() > normalize(&options[i]).len()
                    && contains_phrase(&options[j], &options[i])
            })
        })
        .collect()
}

/// Extracts the chosen option among `options` (in the order shown to the model).
pub fn extract(raw: &str, options: &[String]) -> Extracted {
    let t = raw.trim();
    if t.is_empty() {
        return Extracted::invalid("empty");
    }
    let letter = explicit_letter(t, options.len());
    let named = named_options(t, options);
    if let Some(i) = letter {
        // "A: bookstore" where bookstore is option B: the answer contradicts itself.
        if let [j] = named.as_slice() {
            if *j != i {
                return Extracted::invalid("conflict");
            }
        }
        return Extracted {
            choice: Some(i),
            how: "letter",
        };
    }
    let low = t.to_lowercase();
    let norm = normalize(t);
    if norm == "none" || norm.starts_with("none ") || UNKNOWN.iter().any(|m| low.contains(m)) {
        return Extracted::invalid("unknown");
    }
    if looks_like_refusal(t) {
        return Extracted::invalid("refusal");
    }
    match named.as_slice() {
        [i] => Extracted {
            choice: Some(*i),
            how: "text",
        },
        [] => Extracted::invalid("no_option"),
        _ => Extracted::invalid("both"),
    }
}

/// Extracts the choice of a model reply; a call that failed for good is invalid (`error`).
pub fn extract_reply(reply: &crate::run::Reply, options: &[String]) -> Extracted {
    if reply.error.is_some() {
        Extracted::invalid("error")
    } else {
        extract(&reply.raw, options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn letters_in_their_usual_writings() {
        let o = opts(&["bank", "library", "department store"]);
        for (raw, want) in [
            ("B", 1),
            ("(C)", 2),
            ("C: department store", 2),
            ("A.", 0),
            ("The answer is B.", 1),
            ("Answer: C", 2),
            ("I would pick option (A) here", 0),
        ] {
            assert_eq!(extract(raw, &o).choice, Some(want), "{raw}");
        }
        // A letter that names another option's text contradicts itself.
        assert_eq!(extract("A: library", &o).how, "conflict");
        // Out of range letters are not letters.
        assert_eq!(extract("D", &o).choice, None);
    }

    #[test]
    fn option_texts_and_invalid_answers() {
        let o = opts(&["bank", "bank vault", "library"]);
        assert_eq!(
            extract("Probably the bank vault.", &o),
            Extracted {
                choice: Some(1),
                how: "text"
            }
        );
        assert_eq!(extract("A library, I think", &o).choice, Some(2));
        assert_eq!(extract("Either the bank or the library.", &o).how, "both");
        assert_eq!(extract("I don't know.", &o).how, "unknown");
        assert_eq!(extract("None", &o).how, "unknown");
        assert_eq!(
            extract("I'm sorry, I can't help with that.", &o).how,
            "refusal"
        );
        assert_eq!(extract("   ", &o).how, "empty");
        assert_eq!(extract("A museum.", &o).how, "no_option");
    }
}
