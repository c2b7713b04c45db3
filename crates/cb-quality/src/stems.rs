//! Content words and their crude stems: what a text adds beyond the texts it was given, as
//! the restatement and golden-answer checks count it.

use cb_model::text::TokenCursor;

/// Function words, never counted as what a text adds.
const FUNCTION_WORDS: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "on", "at", "for", "by", "with", "and", "or", "is", "are",
    "was", "were", "be", "been", "being", "it", "its", "this", "that", "these", "those", "so",
    "as", "from", "into", "than", "then", "there", "here", "if", "but", "not", "no", "yes", "very",
    "can", "could", "would", "will", "do", "does", "did", "has", "have", "had", "he", "she",
    "they", "them", "his", "her", "their", "we", "our", "i", "me", "my", "you", "your", "also",
    "just",
];

/// Whether `w` (lower-cased) is one of [`FUNCTION_WORDS`] (a set made once).
pub(crate) fn is_function_word(w: &str) -> bool {
    static SET: std::sync::OnceLock<rustc_hash::FxHashSet<&'static str>> =
        std::sync::OnceLock::new();
    SET.get_or_init(|| FUNCTION_WORDS.iter().copied().collect())
        .contains(w)
}

/// The content words of `context` (lower-cased, function words left out) that `given` does
/// not hold, compared on their crude stems ([`stem`]: "grew"/"grow" differ, "plants"/"plant"
/// and "rained"/"rain" do not).
pub fn added_words(context: &str, given: &str) -> Vec<String> {
    let have = content_stems(given);
    let mut out: Vec<String> = Vec::new();
    let mut words = TokenCursor::new(context);
    while let Some(w) = words.next_token() {
        if !is_function_word(w) && !have.contains(&stem(w)) && !out.iter().any(|o| o == w) {
            out.push(w.to_owned());
        }
    }
    out
}

/// How many distinct content words of `context` (lower-cased, function words left out) have
/// a stem that `known` does not hold, counted up to `enough`: the count of [`added_words`]
/// where only whether it reaches `enough` matters, decided at the word that reaches it.
pub(crate) fn count_added(context: &str, known: impl Fn(&Stem) -> bool, enough: usize) -> usize {
    if enough == 0 {
        return 0;
    }
    // The added words met so far (fewer than `enough - 1`, none while `enough` is 1).
    let mut seen: Vec<String> = Vec::new();
    let mut words = TokenCursor::new(context);
    while let Some(w) = words.next_token() {
        if is_function_word(w) || known(&stem(w)) || seen.iter().any(|s| s == w) {
            continue;
        }
        if seen.len() + 1 == enough {
            return enough;
        }
        seen.push(w.to_owned());
    }
    seen.len()
}

/// A word's crude stem ([`stem`]) as a value: at most five characters, so at most 20 bytes,
/// kept inline and compared byte for byte. Two stems are equal when their texts are.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) struct Stem {
    len: u8,
    bytes: [u8; Stem::MAX],
}

impl Stem {
    /// Five characters of at most four bytes each.
    const MAX: usize = 20;

    #[cfg(test)]
    pub(crate) fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }
}

/// A word's crude stem: the first five characters of what is left once a final "ing", "ed"
/// or "s" is cut off (when at least three letters remain), so that "rained" and "rain",
/// "withered" and "wither" meet.
pub(crate) fn stem(word: &str) -> Stem {
    let root = ["ing", "ed", "s"]
        .iter()
        .find_map(|suffix| word.strip_suffix(suffix).filter(|r| r.chars().count() >= 3))
        .unwrap_or(word);
    let end = root.char_indices().nth(5).map_or(root.len(), |(i, _)| i);
    let mut bytes = [0u8; Stem::MAX];
    bytes[..end].copy_from_slice(&root.as_bytes()[..end]);
    Stem {
        // At most 20 (five characters of at most four bytes).
        len: end as u8,
        bytes,
    }
}

/// `f` on the stem of each content word of `text` (lower-cased, function words left out),
/// in order, repeats included.
pub(crate) fn each_content_stem(text: &str, mut f: impl FnMut(Stem)) {
    let mut words = TokenCursor::new(text);
    while let Some(w) = words.next_token() {
        if !is_function_word(w) {
            f(stem(w));
        }
    }
}

/// The stems of the content words of `text` (lower-cased, function words left out).
pub(crate) fn content_stems(text: &str) -> rustc_hash::FxHashSet<Stem> {
    let mut out = rustc_hash::FxHashSet::default();
    each_content_stem(text, |s| {
        out.insert(s);
    });
    out
}

/// The distinct content-word stems of `text`, in the order met: for the short texts (an
/// answer) whose stems are compared with a few others.
pub(crate) fn distinct_stems(text: &str) -> Vec<Stem> {
    let mut out = Vec::new();
    each_content_stem(text, |s| {
        if !out.contains(&s) {
            out.push(s);
        }
    });
    out
}
