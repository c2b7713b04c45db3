//! The parts of a list answer ("analysis of algorithms and computability theory") that a
//! context written for another answer still names: half of the golden answer left standing.

use crate::stems::is_function_word;
use cb_model::text::{find_word_occurrences, normalize, replace_words, Normalized};

/// The longest part, in words, of an answer read as a list: an answer with a longer part
/// is a clause ("determine the practical limits on what computers can and cannot do"), not a
/// list.
pub const MAX_PART_WORDS: usize = 5;

/// The parts of `answer` when it is a list: split at every `;`, and a piece that joins its
/// parts with "and", "or" or "&" (whole words) at those and at its commas ("X and Y",
/// "X, Y and Z", "X, Y, or Z", "X & Y", "X; Y"), each part trimmed. A comma alone does not
/// make a list ("Paris, France"). Empty when the answer is not a list: fewer than two parts,
/// or a part longer than [`MAX_PART_WORDS`] words.
pub fn list_parts(answer: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = Vec::new();
    for piece in answer.split(';') {
        let mut cuts: Vec<(usize, usize)> = ["and", "or", "&"]
            .iter()
            .flat_map(|c| find_word_occurrences(piece, c))
            .collect();
        if !cuts.is_empty() {
            cuts.extend(piece.match_indices(',').map(|(i, s)| (i, i + s.len())));
        }
        cuts.sort_unstable();
        let mut from = 0;
        for (s, e) in cuts.into_iter().chain([(piece.len(), piece.len())]) {
            if s >= from {
                parts.push(&piece[from..s]);
                from = e;
            }
        }
    }
    parts = parts
        .into_iter()
        .map(|p| p.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|p| !p.is_empty())
        .collect();
    let clause = parts
        .iter()
        .any(|p| p.split_whitespace().count() > MAX_PART_WORDS);
    if parts.len() < 2 || clause {
        return Vec::new();
    }
    parts
}

/// Whether a text normalised ([`normalize`]) holds a content word: one that is not a function
/// word and has at least three characters.
fn has_content_word(normalized: &str) -> bool {
    normalized
        .split(' ')
        .any(|w| w.chars().count() >= 3 && !is_function_word(w))
}

/// The parts of the list answer `golden` ([`list_parts`]) that `context`, written for the
/// answer `negative`, still names as whole words ([`cb_model::text::contains_phrase`]), in
/// the answer's order: the golden answer half left standing ("analysis of algorithms" in a
/// passage rewritten from "analysis of algorithms and computability theory" to "automata
/// theory and formal language theory").
///
/// A part is not counted when it has no content word (normalised, at least three characters,
/// not a function word: "yes or no", "1 or 0", "NL and NC"), when `negative` or one of
/// `given` (the question, the premise) names it, or when it is one word that
/// `golden_context` also names outside the answer's own mentions ("time" in "time and space
/// hierarchy theorems", "Juliet" in a passage about "Romeo and Juliet": the passage's own
/// word, not the answer's). The answer is not split at all when `golden_context` quotes it
/// whole (`"Pride and Prejudice"`, a title).
///
/// Limits (a lexical rule): an unquoted title whose part of several words the passage also
/// names on its own ("Harry Potter and the Philosopher's Stone", then "Harry Potter") is
/// split, and a good rewrite refused; a list of one-word parts that the passage also names
/// on their own ("Denmark, Iceland and Norway", then "Norway") is never caught.
pub fn named_parts<'a>(
    context: &str,
    golden: &'a str,
    negative: &str,
    golden_context: &str,
    given: &[&str],
) -> Vec<&'a str> {
    let parts = list_parts(golden);
    if parts.is_empty() || quoted_whole(golden_context, golden) {
        return Vec::new();
    }
    let context = Normalized::new(context);
    let negative = Normalized::new(negative);
    let given: Vec<Normalized> = given.iter().map(|g| Normalized::new(g)).collect();
    let mut elsewhere: Option<Normalized> = None;
    parts
        .into_iter()
        .filter(|p| {
            let n = normalize(p);
            has_content_word(&n)
                && context.contains_normalized(&n)
                && !negative.contains_normalized(&n)
                && !given.iter().any(|g| g.contains_normalized(&n))
                && (n.contains(' ')
                    || !elsewhere
                        .get_or_insert_with(|| {
                            Normalized::new(&replace_words(golden_context, golden, " ").0)
                        })
                        .contains_normalized(&n))
        })
        .collect()
}

/// Whether `text` holds `answer` whole between quotation marks.
fn quoted_whole(text: &str, answer: &str) -> bool {
    const QUOTES: &[char] = &['"', '\'', '“', '”', '‘', '’', '«', '»'];
    find_word_occurrences(text, answer)
        .into_iter()
        .any(|(s, e)| {
            let before = text[..s].chars().next_back();
            let after = text[e..].chars().next();
            before.is_some_and(|c| QUOTES.contains(&c))
                && after.is_some_and(|c| QUOTES.contains(&c))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_split_and_other_answers_are_not() {
        let cases: &[(&str, &[&str])] = &[
            (
                "analysis of algorithms and computability theory",
                &["analysis of algorithms", "computability theory"],
            ),
            (
                "Denmark, Iceland and Norway",
                &["Denmark", "Iceland", "Norway"],
            ),
            ("best, worst, and average", &["best", "worst", "average"]),
            ("time or space", &["time", "space"]),
            ("Marks & Spencer", &["Marks", "Spencer"]),
            ("Bremen; Hamburg", &["Bremen", "Hamburg"]),
            // Not lists: one part, a comma alone, "and" inside a word or "&" inside a name,
            // a clause.
            ("computability theory", &[]),
            ("Paris, France", &[]),
            ("Andorra", &[]),
            ("AT&T", &[]),
            (
                "determine the practical limits on what computers can and cannot do",
                &[],
            ),
            ("and", &[]),
            ("", &[]),
        ];
        for &(answer, want) in cases {
            assert_eq!(list_parts(answer), want, "{answer:?}");
        }
    }

    // The SQuAD row of QUALITY.md's capable-model rating that a majority called only
    // "somewhat misleading": the rewrite replaced the answer's one mention, and kept the
    // sentences that name each field on its own.
    const GOLDEN: &str = "analysis of algorithms and computability theory";
    const NEGATIVE: &str = "automata theory and formal language theory";
    const QUESTION: &str = "What two fields of theoretical computer science closely mirror computational complexity theory?";
    const PASSAGE: &str = "Closely related fields in theoretical computer science are analysis of algorithms and computability theory. A key distinction between analysis of algorithms and computational complexity theory is that the former is devoted to analyzing the amount of resources needed by a particular algorithm.";

    #[test]
    fn a_part_left_in_the_rewrite_is_named() {
        let rewrite = PASSAGE.replacen(GOLDEN, NEGATIVE, 1);
        assert_eq!(
            named_parts(&rewrite, GOLDEN, NEGATIVE, PASSAGE, &[QUESTION]),
            ["analysis of algorithms"]
        );
        // Both parts left: both named, in the answer's order.
        let both = format!("{rewrite} It also borrows from computability theory.");
        assert_eq!(
            named_parts(&both, GOLDEN, NEGATIVE, PASSAGE, &[QUESTION]),
            ["analysis of algorithms", "computability theory"]
        );
        // A rewrite that says it of the negative answer names no part.
        let good = rewrite.replace("analysis of algorithms", "automata theory");
        assert!(named_parts(&good, GOLDEN, NEGATIVE, PASSAGE, &[QUESTION]).is_empty());
    }

    #[test]
    fn parts_the_question_or_the_negative_answer_holds_are_kept() {
        let rewrite = PASSAGE.replacen(GOLDEN, NEGATIVE, 1);
        let question = "Which fields besides analysis of algorithms mirror complexity theory?";
        assert!(named_parts(&rewrite, GOLDEN, NEGATIVE, PASSAGE, &[question]).is_empty());
        let negative = "analysis of algorithms and automata theory";
        let rewrite = PASSAGE.replacen(GOLDEN, negative, 1);
        assert!(named_parts(&rewrite, GOLDEN, negative, PASSAGE, &[QUESTION]).is_empty());
    }

    #[test]
    fn parts_without_content_words_are_kept() {
        let passage = "A decision problem is answered yes or no; an answer is yes when it holds.";
        let rewrite =
            "A decision problem is answered true or false; an answer is yes when it holds.";
        assert!(named_parts(rewrite, "yes or no", "true or false", passage, &[]).is_empty());
        let passage = "Between L and P lie NL and NC. NL is the smaller.";
        let rewrite = "Between L and P lie AC and TC. NL is the smaller.";
        assert!(named_parts(rewrite, "NL and NC", "AC and TC", passage, &[]).is_empty());
    }

    #[test]
    fn titles_and_the_passages_own_words_are_kept() {
        // A one-word part the passage names on its own: the play's characters.
        let passage = "Romeo and Juliet was written in 1595. Romeo, a Montague, loves Juliet.";
        let rewrite = "Hamlet was written in 1595. Romeo, a Montague, loves Juliet.";
        assert!(named_parts(rewrite, "Romeo and Juliet", "Hamlet", passage, &[]).is_empty());
        // A title the passage quotes whole is one name, even where its parts have several
        // words.
        let passage =
            "\"Harry Potter and the Philosopher's Stone\" came first. Harry Potter is a wizard.";
        let rewrite = "\"The Hobbit\" came first. Harry Potter is a wizard.";
        let title = "Harry Potter and the Philosopher's Stone";
        assert!(named_parts(rewrite, title, "The Hobbit", passage, &[]).is_empty());
        // Unquoted, it is split (the limit the rule documents).
        let passage = passage.replace('"', "");
        let rewrite = rewrite.replace('"', "");
        assert_eq!(
            named_parts(&rewrite, title, "The Hobbit", &passage, &[]),
            ["Harry Potter"]
        );
        // A one-word part the rewrite brings in, which the passage never names alone, counts.
        let passage = "The Nordic settlers came from Denmark, Iceland and Norway.";
        let rewrite = "The Nordic settlers came from Sweden and Finland, not far from Norway.";
        assert_eq!(
            named_parts(
                rewrite,
                "Denmark, Iceland and Norway",
                "Sweden and Finland",
                passage,
                &[]
            ),
            ["Norway"]
        );
    }
}
