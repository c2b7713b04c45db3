//! Text helpers shared by steps, validators and the audit: normalisation for answer
//! comparison, phrase search on word boundaries, and a token-level similarity.

/// Lower-cases, drops punctuation and the articles a/an/the, maps number words up to
/// twenty to digits, and collapses whitespace: the comparison key for answers.
pub fn normalize(s: &str) -> String {
    let lowered: String = s
        .chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_lowercase().next().unwrap_or(c)
            } else {
                ' '
            }
        })
        .collect();
    lowered
        .split_whitespace()
        .filter(|w| !matches!(*w, "a" | "an" | "the"))
        .map(|w| number_word(w).unwrap_or(w))
        .collect::<Vec<_>>()
        .join(" ")
}

fn number_word(w: &str) -> Option<&'static str> {
    const WORDS: [&str; 21] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
    ];
    const DIGITS: [&str; 21] = [
        "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16",
        "17", "18", "19", "20",
    ];
    WORDS.iter().position(|x| *x == w).map(|i| DIGITS[i])
}

/// Whether `phrase` occurs in `text` as whole words, after [`normalize`] of both.
/// An empty phrase never occurs.
pub fn contains_phrase(text: &str, phrase: &str) -> bool {
    Normalized::new(text).contains(phrase)
}

/// Whether `text` contains `phrase` as [`contains_phrase`] does, or with its last word in
/// the other number ("umbrellas" for "umbrella", "bus" for "buses"): a model that names the
/// golden answer in the plural still names it.
pub fn contains_phrase_any_number(text: &str, phrase: &str) -> bool {
    let p = normalize(phrase);
    if p.is_empty() {
        return false;
    }
    let mut forms = vec![format!("{p}s"), format!("{p}es")];
    for suffix in ["es", "s"] {
        if let Some(stem) = p.strip_suffix(suffix).filter(|s| s.len() >= 3) {
            forms.push(stem.to_owned());
        }
    }
    let t = Normalized::new(text);
    t.contains(&p) || forms.iter().any(|f| t.contains(f))
}

/// A text [`normalize`]d once, for many [`contains_phrase`] look-ups in it.
pub struct Normalized(String);

impl Normalized {
    pub fn new(text: &str) -> Self {
        Self(format!(" {} ", normalize(text)))
    }

    /// Whether `phrase` occurs in the text as whole words ([`contains_phrase`]).
    pub fn contains(&self, phrase: &str) -> bool {
        self.contains_normalized(&normalize(phrase))
    }

    /// [`Normalized::contains`] of a phrase already [`normalize`]d (`phrase` is
    /// `normalize(p)`): for phrases looked up in many texts, normalised once.
    pub fn contains_normalized(&self, phrase: &str) -> bool {
        !phrase.is_empty() && self.0.contains(&format!(" {phrase} "))
    }
}

/// Byte ranges of the case-insensitive, whole-word occurrences of `needle` in `text`,
/// left to right, not overlapping.
pub fn find_word_occurrences(text: &str, needle: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    if needle.trim().is_empty() {
        return out;
    }
    // Lower-case character by character, keeping a character as it is where its lower case
    // has another byte length (the Kelvin sign, dotted capital I): byte positions in the
    // folded text are then positions in the original.
    let fold = |s: &str| -> String {
        s.chars()
            .map(|c| {
                let mut l = c.to_lowercase();
                match (l.next(), l.next()) {
                    (Some(x), None) if x.len_utf8() == c.len_utf8() => x,
                    _ => c,
                }
            })
            .collect()
    };
    let (lt, ln) = (fold(text), fold(needle));
    let (hay, pat) = (lt.as_str(), ln.as_str());
    let mut start = 0;
    while let Some(pos) = hay[start..].find(pat) {
        let s = start + pos;
        let e = s + pat.len();
        let before_ok = hay[..s]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric());
        let after_ok = hay[e..].chars().next().is_none_or(|c| !c.is_alphanumeric());
        if before_ok && after_ok {
            out.push((s, e));
            start = e;
        } else {
            start = s + hay[s..].chars().next().map_or(1, char::len_utf8);
        }
    }
    out
}

/// Replaces every whole-word, case-insensitive occurrence of `from` in `text` by `to`.
/// Returns the new text and the number of replacements.
pub fn replace_words(text: &str, from: &str, to: &str) -> (String, usize) {
    let spans = find_word_occurrences(text, from);
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (s, e) in &spans {
        out.push_str(&text[last..*s]);
        out.push_str(to);
        last = *e;
    }
    out.push_str(&text[last..]);
    (out, spans.len())
}

/// Word tokens (alphanumeric runs), lower-cased.
pub fn tokens(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Similarity of two token sequences: 2·LCS / (|a| + |b|), in [0, 1] (1 for two empty
/// sequences), LCS being the length of their longest common subsequence.
///
/// Time and memory are linear in the length of the sequences (module `lcs`): the
/// value is exact for sequences of up to about 2,000 tokens each and for longer ones that
/// differ by at most 512 inserted or deleted tokens; for long sequences that differ more,
/// it is a lower bound (the LCS along a band of 256 tokens around the diagonal).
pub fn token_similarity(a: &[String], b: &[String]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let lcs = crate::lcs::lcs_len(a, b);
    2.0 * lcs as f64 / (a.len() + b.len()) as f64
}

/// Whether a model answer reads as a refusal or a non-answer rather than content.
pub fn looks_like_refusal(s: &str) -> bool {
    let l = s.trim().to_lowercase();
    const MARKERS: [&str; 9] = [
        "i'm sorry",
        "i am sorry",
        "i cannot",
        "i can't",
        "as an ai",
        "i won't",
        "i am unable",
        "i'm unable",
        "cannot help with",
    ];
    MARKERS
        .iter()
        .any(|m| l.starts_with(m) || l.contains(&format!(" {m}")))
}

/// The text with its first letter upper-cased.
pub fn ucfirst(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_drops_case_punctuation_articles_and_number_words() {
        assert_eq!(normalize("The Three  Musketeers!"), "3 musketeers");
        assert_eq!(normalize("an Apple, a day"), "apple day");
    }

    #[test]
    fn phrase_search_is_word_bounded() {
        assert!(contains_phrase("He lived in New York City.", "new york"));
        assert!(!contains_phrase("He played bankrupt.", "bank"));
        assert!(!contains_phrase("anything", ""));
        // A real SmolLM2 explanation for the negative answer "sunglasses", golden "umbrella".
        let said = "People carry umbrellas to keep the rain off, and sunglasses are a great choice for people who love sunbathing.";
        assert!(!contains_phrase(said, "umbrella"));
        assert!(contains_phrase_any_number(said, "umbrella"));
        assert!(contains_phrase_any_number("Two buses came.", "bus"));
        assert!(contains_phrase_any_number("A bus came.", "buses"));
        assert!(!contains_phrase_any_number("The business grew.", "bus"));
    }

    #[test]
    fn replace_words_is_case_insensitive_and_word_bounded() {
        let (s, n) = replace_words("Bank and bank, not banker.", "bank", "mall");
        assert_eq!(s, "mall and mall, not banker.");
        assert_eq!(n, 2);
    }

    #[test]
    fn word_search_never_splits_a_character() {
        // The Kelvin sign lower-cases to a one-byte k and dotted capital I to two characters.
        let t = "\u{212A} İİ k";
        for (s, e) in find_word_occurrences(t, "K") {
            assert!(t.is_char_boundary(s) && t.is_char_boundary(e));
            assert_eq!(&t[s..e], "k");
        }
        assert_eq!(find_word_occurrences("Ångström units", "ångström").len(), 1);
    }

    #[test]
    fn similarity_bounds() {
        let a = tokens("the cat sat on the mat");
        let b = tokens("the dog sat on the mat");
        let s = token_similarity(&a, &b);
        assert!(s > 0.8 && s < 1.0, "{s}");
        assert_eq!(token_similarity(&a, &a), 1.0);
        assert_eq!(token_similarity(&a, &[]), 0.0);
    }

    #[test]
    fn refusals_are_recognised() {
        assert!(looks_like_refusal("I'm sorry, but I can't help with that."));
        assert!(looks_like_refusal("As an AI language model, I cannot"));
        assert!(!looks_like_refusal(
            "Banks use revolving doors to slow people down."
        ));
    }
}
