//! Text helpers shared by steps, validators and the audit: normalisation for answer
//! comparison, phrase search on word boundaries, and a token-level similarity.

/// Lower-cases, drops punctuation and the articles a/an/the, maps number words up to
/// twenty to digits, and collapses whitespace: the comparison key for answers.
pub fn normalize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    normalize_into(s, &mut out);
    out
}

/// Appends [`normalize`]`(s)` to `out` (what `out` held stays): for callers that
/// normalise many texts into one reused buffer.
pub fn normalize_into(s: &str, out: &mut String) {
    let base = out.len();
    for run in AlphanumericRuns::new(s) {
        let start = out.len();
        if start > base {
            out.push(' ');
        }
        let word = out.len();
        if run.is_ascii() {
            out.push_str(run);
            out[word..].make_ascii_lowercase();
        } else {
            out.extend(run.chars().map(normalized_char));
        }
        if is_article(&out[word..]) {
            out.truncate(start);
        } else if let Some(digits) = number_word(&out[word..]) {
            out.truncate(word);
            out.push_str(digits);
        }
    }
}

/// Whether [`normalize`]`(s)` is empty (no word but the articles), without building it.
pub fn normalizes_to_empty(s: &str) -> bool {
    AlphanumericRuns::new(s).all(|run| {
        let lowered = run.chars().map(normalized_char);
        ["a", "an", "the"]
            .iter()
            .any(|a| lowered.clone().eq(a.chars()))
    })
}

/// The lower case [`normalize`] gives one alphanumeric character: the first character of
/// its lower case (one character for one, so that "İ" gives "i", not "i̇").
fn normalized_char(c: char) -> char {
    if c.is_ascii() {
        c.to_ascii_lowercase()
    } else {
        c.to_lowercase().next().unwrap_or(c)
    }
}

fn is_article(w: &str) -> bool {
    matches!(w, "a" | "an" | "the")
}

/// The maximal runs of alphanumeric characters of a text, left to right: the words that
/// [`normalize`] and [`tokens`] see (`s.split(|c| !c.is_alphanumeric())` without the empty
/// pieces), borrowed from it.
#[derive(Debug, Clone)]
pub struct AlphanumericRuns<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> AlphanumericRuns<'a> {
    pub fn new(text: &'a str) -> Self {
        Self { text, at: 0 }
    }

    /// The byte length of the character at `i` when it is alphanumeric, else `Err` with
    /// its length. ASCII is decided from the byte.
    fn char_at(&self, i: usize) -> Result<usize, usize> {
        let b = self.text.as_bytes()[i];
        if b.is_ascii() {
            return if b.is_ascii_alphanumeric() {
                Ok(1)
            } else {
                Err(1)
            };
        }
        let c = self.text[i..].chars().next().unwrap_or(' ');
        if c.is_alphanumeric() {
            Ok(c.len_utf8())
        } else {
            Err(c.len_utf8())
        }
    }
}

impl<'a> Iterator for AlphanumericRuns<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let len = self.text.len();
        let mut i = self.at;
        loop {
            if i >= len {
                self.at = len;
                return None;
            }
            match self.char_at(i) {
                Ok(_) => break,
                Err(n) => i += n,
            }
        }
        let start = i;
        while i < len {
            match self.char_at(i) {
                Ok(n) => i += n,
                Err(_) => break,
            }
        }
        self.at = i;
        Some(&self.text[start..i])
    }
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
    if !(3..=9).contains(&w.len()) {
        return None;
    }
    WORDS.iter().position(|x| *x == w).map(|i| DIGITS[i])
}

/// Whether `phrase` occurs in `text` as whole words, after [`normalize`] of both.
/// An empty phrase never occurs.
pub fn contains_phrase(text: &str, phrase: &str) -> bool {
    Normalized::new(text).contains(phrase)
}

/// Whether `text` names `value`: as whole words once normalised ([`contains_phrase`]), or,
/// for a code of at most three capitals (MQuAKE's alias "IN" for India, "US"), as the same
/// capitals standing alone: "in" and "us" are words.
pub fn names(text: &str, value: &str) -> bool {
    let code = value.chars().count() <= 3 && value.chars().all(|c| c.is_ascii_uppercase());
    if code {
        text.split(|c: char| !c.is_alphanumeric())
            .any(|w| w == value)
    } else {
        contains_phrase(text, value)
    }
}

/// Whether `text` contains `phrase` as [`contains_phrase`] does, or with its last word in
/// the other number ("umbrellas" for "umbrella", "bus" for "buses"): a model that names the
/// golden answer in the plural still names it.
pub fn contains_phrase_any_number(text: &str, phrase: &str) -> bool {
    Normalized::new(text).contains_any_number(phrase)
}

/// A text [`normalize`]d once, for many [`contains_phrase`] look-ups in it.
#[derive(Debug, Clone)]
pub struct Normalized(String);

impl Normalized {
    pub fn new(text: &str) -> Self {
        // The normalised words between two spaces, so that every word of it has a space on
        // either side.
        let mut padded = String::with_capacity(text.len() + 2);
        padded.push(' ');
        normalize_into(text, &mut padded);
        padded.push(' ');
        Self(padded)
    }

    /// The normalised text ([`normalize`] of what it was made from).
    pub fn as_str(&self) -> &str {
        &self.0[1..self.0.len() - 1]
    }

    /// Whether `phrase` occurs in the text as whole words ([`contains_phrase`]).
    pub fn contains(&self, phrase: &str) -> bool {
        self.contains_normalized(&normalize(phrase))
    }

    /// [`Normalized::contains`] of a phrase already [`normalize`]d (`phrase` is
    /// `normalize(p)`): for phrases looked up in many texts, normalised once.
    pub fn contains_normalized(&self, phrase: &str) -> bool {
        self.contains_words(phrase, "")
    }

    /// Whether the text holds `phrase` followed at once by `suffix` (both normalised, the
    /// suffix glued to the phrase's last word) as whole words: the look-up of
    /// `format!("{phrase}{suffix}")` without making it. An empty phrase never occurs.
    fn contains_words(&self, phrase: &str, suffix: &str) -> bool {
        if phrase.is_empty() {
            return false;
        }
        let (t, p, s) = (self.0.as_bytes(), phrase.as_bytes(), suffix.as_bytes());
        // An occurrence starts where a word does, after a space: each such place is tried
        // (no searcher to set up for a phrase looked up once, and no overlapping occurrence
        // missed).
        (1..t.len()).any(|i| {
            t[i - 1] == b' '
                && t[i..].starts_with(p)
                && t[i + p.len()..].starts_with(s)
                && t.get(i + p.len() + s.len()) == Some(&b' ')
        })
    }

    /// [`contains_phrase_any_number`] of `phrase` in this text.
    pub fn contains_any_number(&self, phrase: &str) -> bool {
        let p = normalize(phrase);
        if p.is_empty() {
            return false;
        }
        // An ASCII phrase normalised is its own normal form.
        if p.is_ascii() && self.contains_normalized(&p) || !p.is_ascii() && self.contains(&p) {
            return true;
        }
        // An ASCII phrase is its own normal form, and so is it with "s" or "es" glued to
        // its last word (no article nor number word ends so): those two are looked up
        // without being made. The singular forms can end in a number word or an article
        // ("ones", "thes"), and are normalised as they were.
        let plural = |suffix: &str| {
            if p.is_ascii() {
                self.contains_words(&p, suffix)
            } else {
                self.contains(&format!("{p}{suffix}"))
            }
        };
        if plural("s") || plural("es") {
            return true;
        }
        ["es", "s"].iter().any(|suffix| {
            p.strip_suffix(suffix)
                .filter(|s| s.len() >= 3)
                .is_some_and(|stem| self.contains(stem))
        })
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
    let mut out = Vec::new();
    let mut words = TokenCursor::new(s);
    while let Some(w) = words.next_token() {
        out.push(w.to_owned());
    }
    out
}

/// The words of [`tokens`]`(s)` one at a time, without a `String` each: a word already in
/// lower case is lent from the text, another is lower-cased into a buffer the cursor
/// reuses (ASCII in place; other text with `str::to_lowercase` of the whole word, as
/// [`tokens`] does, so that a final sigma stays final).
#[derive(Debug, Clone)]
pub struct TokenCursor<'a> {
    runs: AlphanumericRuns<'a>,
    buffer: String,
}

impl<'a> TokenCursor<'a> {
    pub fn new(text: &'a str) -> Self {
        Self {
            runs: AlphanumericRuns::new(text),
            buffer: String::new(),
        }
    }

    /// The next word, lower-cased; `None` after the last.
    pub fn next_token(&mut self) -> Option<&str> {
        let run = self.runs.next()?;
        if run.is_ascii() {
            if !run.bytes().any(|b| b.is_ascii_uppercase()) {
                return Some(run);
            }
            self.buffer.clear();
            self.buffer.push_str(run);
            self.buffer.make_ascii_lowercase();
        } else {
            self.buffer = run.to_lowercase();
        }
        Some(&self.buffer)
    }
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

    /// The helpers as they were before they stopped allocating per word (issue 37): the
    /// references of the sameness tests below.
    mod reference {
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
                .map(|w| super::number_word(w).unwrap_or(w))
                .collect::<Vec<_>>()
                .join(" ")
        }

        pub struct Normalized(String);

        impl Normalized {
            pub fn new(text: &str) -> Self {
                Self(format!(" {} ", normalize(text)))
            }

            pub fn contains(&self, phrase: &str) -> bool {
                self.contains_normalized(&normalize(phrase))
            }

            pub fn contains_normalized(&self, phrase: &str) -> bool {
                !phrase.is_empty() && self.0.contains(&format!(" {phrase} "))
            }
        }

        pub fn contains_phrase(text: &str, phrase: &str) -> bool {
            Normalized::new(text).contains(phrase)
        }

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

        pub fn tokens(s: &str) -> Vec<String> {
            s.split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(str::to_lowercase)
                .collect()
        }
    }

    /// Hand-made texts that the real ones may lack: case, digits, articles and number words,
    /// characters whose lower case is longer or shorter or depends on the neighbours.
    pub(crate) const TRICKY: &[&str] = &[
        "",
        " ",
        "...!?",
        "-- , ; :",
        "The",
        "THE AN A",
        "the an a",
        "a",
        "An apple",
        "The Three  Musketeers!",
        "One, two, THREE, twenty-one; Twenty",
        "ones twos thes ans",
        "sevens sixes tens",
        "ÉCOLE école Écoles",
        "İstanbul İİ istanbul",
        "ΟΔΟΣ οδος ΟΔΟΣ. ΣΟΦΟΣ ΚΑΛΟΣ.ΑΛΦΑ",
        "Σ σ ς ΌΣΟΣ",
        "\u{212A}elvin \u{212A} K k",
        "Ångström \u{212B}ngström",
        "東京 北京 漢字です",
        "emoji 😀 🎉 smile😀face",
        "ß STRASSE straße ẞ",
        "ǅemal Ǆ ǆ",
        "a\u{0301}b e\u{0301}cole",
        "42 3.14 1,000 x2 2x",
        "umbrella umbrellas buses bus business",
        "The answer is: A cupboard",
        "  leading and   trailing   ",
        "tab\tnew\nline\r\nend",
        "\u{00A0}nbsp\u{2003}em\u{3000}ideographic",
        "Ⅻ roman Ⅳ ⅳ",
        "Ⓐ circled ⓐ",
        "ﬁne ﬂour",
        "x",
        "xa a a",
        "a a a a",
    ];

    /// Every string value of the shared CommonsenseQA, CoS-E and e-CARE samples
    /// (`../shared/data`), and the tricky ones above. A missing file fails under `CI=true`
    /// and is skipped otherwise.
    pub(crate) fn sample_texts() -> Vec<String> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data");
        let mut out: Vec<String> = TRICKY.iter().map(|s| (*s).to_owned()).collect();
        for dir in ["commonsenseqa", "cos_e", "ecare"] {
            let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
                assert!(
                    std::env::var("CI").as_deref() != Ok("true"),
                    "shared data folder {} is missing",
                    root.join(dir).display()
                );
                continue;
            };
            let mut paths: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
            paths.sort();
            for path in paths
                .iter()
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            {
                for line in std::fs::read_to_string(path).unwrap().lines() {
                    if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                        collect_strings(&v, &mut out);
                    }
                }
            }
        }
        out
    }

    fn collect_strings(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::String(s) => out.push(s.clone()),
            serde_json::Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
            serde_json::Value::Object(o) => o.values().for_each(|x| collect_strings(x, out)),
            _ => {}
        }
    }

    /// Phrases to look up in `text`: its own words alone, in pairs and in threes, with a
    /// plural ending added or taken off, and a few other texts.
    fn phrases_for(text: &str, others: &[&str]) -> Vec<String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let mut out: Vec<String> = others.iter().map(|s| (*s).to_owned()).collect();
        for n in 1..=3 {
            for w in words.windows(n) {
                let p = w.join(" ");
                out.push(format!("{p}s"));
                out.push(format!("{p}es"));
                if let Some(s) = p.strip_suffix('s') {
                    out.push(s.to_owned());
                }
                out.push(p.to_uppercase());
                out.push(p);
            }
        }
        out
    }

    #[test]
    #[allow(clippy::print_stderr)]
    fn text_helpers_give_what_they_gave_before() {
        let texts = sample_texts();
        assert!(texts.len() > TRICKY.len());
        let (mut compared, mut lookups) = (0usize, 0usize);
        for (i, t) in texts.iter().enumerate() {
            assert_eq!(normalize(t), reference::normalize(t), "normalize {t:?}");
            assert_eq!(
                normalizes_to_empty(t),
                reference::normalize(t).is_empty(),
                "normalizes_to_empty {t:?}"
            );
            let mut into = String::from("kept ");
            normalize_into(t, &mut into);
            assert_eq!(into, format!("kept {}", reference::normalize(t)), "{t:?}");
            assert_eq!(tokens(t), reference::tokens(t), "tokens {t:?}");
            assert_eq!(
                Normalized::new(t).as_str(),
                reference::normalize(t),
                "as_str {t:?}"
            );
            compared += 1;
            let others = [
                texts[(i + 1) % texts.len()].as_str(),
                texts[(i * 7 + 3) % texts.len()].as_str(),
                TRICKY[i % TRICKY.len()],
            ];
            let n = Normalized::new(t);
            let r = reference::Normalized::new(t);
            for p in phrases_for(t, &others) {
                assert_eq!(
                    contains_phrase(t, &p),
                    reference::contains_phrase(t, &p),
                    "contains_phrase {t:?} {p:?}"
                );
                assert_eq!(
                    contains_phrase_any_number(t, &p),
                    reference::contains_phrase_any_number(t, &p),
                    "contains_phrase_any_number {t:?} {p:?}"
                );
                let np = reference::normalize(&p);
                assert_eq!(
                    n.contains_normalized(&np),
                    r.contains_normalized(&np),
                    "contains_normalized {t:?} {np:?}"
                );
                lookups += 1;
            }
        }
        // The number of texts and look-ups compared, for the record (`--nocapture`).
        eprintln!("text helpers: {compared} texts, {lookups} phrase look-ups compared");
    }

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
