//! Byte spans in text, shared by the steps that edit text and by the writers: whole words,
//! sentences, the mentions of a value (a date in any of its usual writings), and the
//! merging of overlapping spans. Spans are `(start, end)` byte offsets, end exclusive.

use crate::{date, text};

/// Byte spans of every mention of a value in `text`: a date (`kind` `date`) in any of its
/// usual writings, anything else as whole words (case-insensitive).
pub fn mentions(text: &str, value: &str, kind: &str) -> Vec<(usize, usize)> {
    if kind == "date" {
        if let Some(d) = date::parse_loose(value) {
            let found = date::find_all(text, &d);
            if !found.is_empty() {
                return found;
            }
        }
    }
    text::find_word_occurrences(text, value)
}

/// Whether `text` mentions the value (see [`mentions`]); an empty value is never mentioned.
pub fn states(text: &str, value: &str, kind: &str) -> bool {
    !value.trim().is_empty() && !mentions(text, value, kind).is_empty()
}

/// Sorts spans and merges the overlapping ones.
pub fn merge(mut spans: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    spans.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (s, e) in spans {
        match out.last_mut() {
            Some(last) if s < last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Whether two spans share at least one byte.
pub fn overlaps(a: (usize, usize), b: (usize, usize)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

/// Whether `phrase` occurs in `text` exactly as written, as whole words.
pub fn occurs_verbatim(text: &str, phrase: &str) -> bool {
    text::find_word_occurrences(text, phrase)
        .iter()
        .any(|&(s, e)| &text[s..e] == phrase)
}

/// Byte spans of the sentences of `text` (split after `.`, `!` or `?` followed by a space).
pub fn sentence_spans(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    let b = text.as_bytes();
    for i in 0..b.len() {
        if matches!(b[i], b'.' | b'!' | b'?') && b.get(i + 1) == Some(&b' ') {
            out.push((start, i + 1));
            start = i + 2;
        }
    }
    if start < text.len() && !text[start..].trim().is_empty() {
        out.push((start, text.len()));
    }
    out
}

/// Byte spans of the space-separated words of `s`, without surrounding punctuation.
pub fn word_spans(s: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut pos = 0;
    for w in s.split(' ') {
        let lead = w.len() - w.trim_start_matches(|c: char| !c.is_alphanumeric()).len();
        let core = w.trim_matches(|c: char| !c.is_alphanumeric());
        if !core.is_empty() {
            out.push((pos + lead, pos + lead + core.len()));
        }
        pos += w.len() + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_and_words_are_split_on_their_bounds() {
        let t = "One two. Three, four! Five";
        let s: Vec<&str> = sentence_spans(t).iter().map(|&(a, b)| &t[a..b]).collect();
        assert_eq!(s, ["One two.", "Three, four!", "Five"]);
        let w: Vec<&str> = word_spans("(hello), world.")
            .iter()
            .map(|&(a, b)| &"(hello), world."[a..b])
            .collect();
        assert_eq!(w, ["hello", "world"]);
    }

    #[test]
    fn a_date_is_found_in_another_writing_and_spans_merge() {
        let t = "It ended on May 30, 1431 in Rouen.";
        assert_eq!(mentions(t, "30 May 1431", "date").len(), 1);
        assert!(states(t, "rouen", "place"));
        assert!(!states(t, " ", "place"));
        assert_eq!(merge(vec![(5, 9), (0, 3), (2, 6)]), [(0, 9)]);
        assert!(overlaps((0, 3), (2, 5)) && !overlaps((0, 3), (3, 5)));
        assert!(occurs_verbatim(t, "Rouen") && !occurs_verbatim(t, "rouen"));
    }
}
