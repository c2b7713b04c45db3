//! One way of asking a multiple-choice question and reading the letter back, shared by the
//! build's reader check (`reader_check`) and `conflictbench eval`: the options as the
//! templates see them ([`option_views`]), the request ([`call`]), seeded option orders
//! ([`order`]), the extraction of the chosen option from free text ([`extract`]) and the
//! majority over several votes ([`majority`]).
//!
//! Extraction, in order: the options read back one a line (`A: …` then `B: …`) choose none
//! (`list`); an explicit letter (`B`, `(B)`, `B: bank`, `answer is B`, `option
//! B`), unless the answer names exactly one option's text and it is another one
//! (`conflict`); then a non-answer (empty, "None", "I don't know", cannot determine, a
//! refusal) is invalid; then the option texts mentioned as whole words (after
//! `cb_model::text::normalize`): exactly one is the choice (an option whose text lies inside
//! a longer mentioned one does not count), several distinct ones are invalid (`both`), none
//! is invalid (`no_option`). Where the last option is the reader check's none option
//! ([`extract_offering_none`]), "None", "None of these" or "does not answer" pick it.

use cb_llm::{Call, ChatRequest, Message};
use cb_model::text::{contains_phrase, looks_like_refusal, normalize, Normalized};
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

/// An option as a template shows it (`{{ o.letter }}: {{ o.text }}`).
#[derive(Debug, Clone, Serialize)]
pub struct OptionView<'a> {
    pub letter: String,
    pub text: &'a str,
}

/// The options in the order given, lettered from `A`.
pub fn option_views(texts: &[String]) -> Vec<OptionView<'_>> {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| OptionView {
            letter: cb_model::letter(i),
            text: t,
        })
        .collect()
}

/// A seeded order of `n` options: shown position -> option index, from
/// `item_rng(seed, scope, id, purpose)`.
pub fn order(seed: u64, scope: &str, id: &str, purpose: &str, n: usize) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    p.shuffle(&mut cb_model::item_rng(seed, scope, id, purpose));
    p
}

/// How a multiple-choice question is sampled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    pub temperature: f32,
    pub max_tokens: u32,
}

/// The request of one multiple-choice question rendered from `prompt` into `messages`:
/// no response schema (a letter in free text is what every model can give), `offline` what
/// the offline and dry-run backends answer. The template's name and hash go beside the
/// answer in the cache.
pub fn call(
    messages: Vec<Message>,
    (template, template_hash): (&str, &str),
    item: &str,
    seed: Option<u64>,
    sampling: Sampling,
    offline: String,
) -> Call {
    Call {
        request: ChatRequest {
            messages,
            temperature: sampling.temperature,
            top_p: None,
            max_tokens: sampling.max_tokens,
            seed,
            response_schema: None,
            top_logprobs: None,
        },
        template: template.to_owned(),
        template_hash: template_hash.to_owned(),
        item: item.to_owned(),
        offline,
    }
}

/// The option more than half of the `votes` chose (each an option index, `None` for an
/// invalid answer); `None` when no option has that many.
pub fn majority(votes: &[Option<usize>]) -> Option<usize> {
    let mut counts = std::collections::BTreeMap::new();
    for v in votes.iter().flatten() {
        *counts.entry(*v).or_insert(0usize) += 1;
    }
    counts
        .into_iter()
        .find(|(_, n)| 2 * n > votes.len())
        .map(|(v, _)| v)
}

/// What the extraction found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Extracted {
    /// The chosen option's index, `None` when invalid.
    pub choice: Option<usize>,
    /// How it was found (`letter`, `text`) or why it is invalid (`empty`, `unknown`,
    /// `refusal`, `both`, `list`, `no_option`, `conflict`, `error`).
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
    // The answer and the options normalised once, not once an option.
    let text = Normalized::new(t);
    let norm: Vec<String> = options.iter().map(|o| normalize(o)).collect();
    let mentioned: Vec<usize> = (0..options.len())
        .filter(|&i| text.contains_normalized(&norm[i]))
        .collect();
    mentioned
        .iter()
        .copied()
        .filter(|&i| {
            !mentioned.iter().any(|&j| {
                j != i && norm[j].len() > norm[i].len() && contains_phrase(&options[j], &options[i])
            })
        })
        .collect()
}

/// How many distinct option letters open a line of `t` as a label (`A:`, `B.`, `(C)`).
fn listed_letters(t: &str, n: usize) -> usize {
    let mut seen = std::collections::BTreeSet::new();
    for line in t.lines() {
        if let Some(first) = line.split_whitespace().next() {
            if first.ends_with([':', ')', '.']) || first.starts_with('(') {
                if let Some(i) = letter_token(first, n) {
                    seen.insert(i);
                }
            }
        }
    }
    seen.len()
}

/// Extracts the chosen option among `options` (in the order shown to the model).
pub fn extract(raw: &str, options: &[String]) -> Extracted {
    let t = raw.trim();
    if t.is_empty() {
        return Extracted::invalid("empty");
    }
    // "A: Not misleading\nB: Somewhat misleading ...": the options read back, one a line,
    // choose none (a real SmolLM2 answer, QUALITY.md).
    if listed_letters(t, options.len()) >= 2 {
        return Extracted::invalid("list");
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

/// As [`extract`], where the last of `options` is [`cb_model::NONE_OPTION`] (a reader check
/// with `none_option`): an answer that says it in words rather than by its letter ("None",
/// "None of these", "The passage does not answer") picks it. Any other answer reads as
/// [`extract`] reads it ("I don't know" stays invalid).
pub fn extract_offering_none(raw: &str, options: &[String]) -> Extracted {
    let x = extract(raw, options);
    let norm = normalize(raw);
    let says_none = norm == "none"
        || norm.starts_with("none ")
        || [
            "does not answer",
            "doesn t answer",
            "does not state",
            "doesn t state",
        ]
        .iter()
        .any(|p| contains_phrase(raw, p));
    if matches!(x.how, "unknown" | "no_option") && says_none && !options.is_empty() {
        return Extracted {
            choice: Some(options.len() - 1),
            how: "text",
        };
    }
    x
}

/// What the reader answered to one check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub check: String,
    /// The intended option, as a letter of the row's order.
    pub expected: String,
    /// Each vote's pick (a letter of the row's order; `null` for an answer that names no
    /// option) and how it was read (`letter`, `text`, or why it is invalid).
    pub picks: Vec<Option<String>>,
    pub how: Vec<String>,
    /// The majority's pick, if any.
    pub pick: Option<String>,
    pub passed: bool,
    /// The majority picked the reader check's "none of these" (its `none_option`): the
    /// reader found no answer in the passage. Absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub none: bool,
    /// A failed control of a row noted `golden_unrelated` (its golden context shares no
    /// content word with the question or the golden answer, so it supports no option): the
    /// data's failure, not the reader's, set aside from the reader's measure
    /// (`cb_model::manifest::ReaderTrust`). Absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unrelated: bool,
    /// The calls behind it (in the row's lineage, not here).
    #[serde(skip)]
    pub calls: Vec<crate::CallRecord>,
}

impl Verdict {
    /// `"A" (bank)`, or `nothing` when no option has a majority; with several votes, the
    /// votes follow.
    pub fn pick_named(&self, choices: &[String]) -> String {
        let name = |l: &Option<String>| match l {
            Some(l) => {
                let text = cb_model::letter_index(l)
                    .and_then(|i| cb_model::picked_option(choices, i))
                    .unwrap_or("");
                format!("\"{l}\" ({text})")
            }
            None => "no option".to_owned(),
        };
        let mut s = name(&self.pick);
        if self.picks.len() > 1 {
            let votes: Vec<String> = self
                .picks
                .iter()
                .map(|p| p.clone().unwrap_or_else(|| "-".into()))
                .collect();
            s.push_str(&format!(" (votes {})", votes.join(", ")));
        }
        s
    }

    /// Share of the votes that picked the intended option.
    pub fn share(&self) -> f64 {
        let hits = self
            .picks
            .iter()
            .flatten()
            .filter(|p| **p == self.expected)
            .count();
        hits as f64 / self.picks.len().max(1) as f64
    }
}

/// What a row's `reader` column holds: who read it and its verdicts, check by check (the
/// reader check writes it, the engine counts it for the manifest).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReaderRecord {
    pub model: String,
    pub endpoint: String,
    pub votes: u32,
    pub checks: Vec<Verdict>,
    /// With several readers (`readers = [...]`; the fields above are then the first one's):
    /// every reader, in the recipe's order, with its verdicts and whether it let the row
    /// stand. Empty (and not written) with one reader.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub panel: Vec<PanelRecord>,
}

/// One reader of several: who, whether its checks let the row stand, and its verdicts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PanelRecord {
    pub model: String,
    pub endpoint: String,
    pub stands: bool,
    pub checks: Vec<Verdict>,
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
        // The options read back one a line choose none (real SmolLM2 answers).
        assert_eq!(
            extract("A: bank\nB: library\nC: department", &o).how,
            "list"
        );
        assert_eq!(extract("A: bank\nB: library", &o).choice, None);
        assert_eq!(extract("A: bank\nIt keeps money.", &o).choice, Some(0));
    }

    #[test]
    fn a_majority_is_more_than_half_of_the_votes() {
        assert_eq!(majority(&[Some(1)]), Some(1));
        assert_eq!(majority(&[Some(1), Some(1), Some(0)]), Some(1));
        assert_eq!(majority(&[Some(1), None, Some(0)]), None);
        assert_eq!(majority(&[Some(1), Some(0)]), None);
        assert_eq!(majority(&[None]), None);
        assert_eq!(majority(&[]), None);
    }

    #[test]
    fn a_seeded_order_is_a_permutation_that_depends_on_the_purpose() {
        let a = order(42, "r", "id-1", "vote-2", 5);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [0, 1, 2, 3, 4]);
        assert_eq!(a, order(42, "r", "id-1", "vote-2", 5));
        let others: Vec<_> = (3..8)
            .map(|v| order(42, "r", "id-1", &format!("vote-{v}"), 5))
            .collect();
        assert!(others.iter().any(|o| *o != a));
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

    /// Where the none option is offered (last), saying it in words picks it; a letter, an
    /// option named, or "I don't know" read as without it; without it "None" stays invalid.
    #[test]
    fn the_none_option_said_in_words_is_picked_where_offered() {
        let o = opts(&["bank", "library", cb_model::NONE_OPTION]);
        for said in [
            "None",
            "None of these.",
            "none of the above",
            "The passage does not answer the question.",
            "The passage does not state it.",
            "It doesn't answer that.",
            cb_model::NONE_OPTION,
        ] {
            assert_eq!(extract_offering_none(said, &o).choice, Some(2), "{said}");
        }
        assert_eq!(extract_offering_none("B", &o).choice, Some(1));
        assert_eq!(extract_offering_none("The library.", &o).choice, Some(1));
        assert_eq!(extract_offering_none("I don't know.", &o).how, "unknown");
        assert_eq!(extract_offering_none("A museum.", &o).how, "no_option");
        let without = opts(&["bank", "library"]);
        assert_eq!(extract("None of these.", &without).how, "unknown");
        assert_eq!(
            extract("The passage does not answer.", &without).how,
            "no_option"
        );
    }
}
