//! Language: an answer clearly in another language or script than its source.

use cb_model::text::TokenCursor;

/// A language or writing system, as far as [`language`] tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    English,
    French,
    German,
    Spanish,
    Italian,
    Portuguese,
    Dutch,
    /// Mostly letters of a script other than Latin (Cyrillic, Greek, Arabic, Hebrew,
    /// Devanagari, Thai, Hangul, kana, Han), named.
    Script(&'static str),
}

/// Words frequent in one language and rare in the others of the list (no word is listed
/// twice, so "de", "la", "en", "a" count for none).
pub(crate) const STOPWORDS: &[(Language, &[&str])] = &[
    (
        Language::English,
        &[
            "the", "and", "of", "to", "is", "was", "that", "it", "with", "for", "as", "are", "by",
            "this", "be", "from", "which", "were", "has", "have", "not", "they", "their", "its",
            "or", "but", "at", "can", "because", "when", "more", "into", "than", "also", "been",
            "would", "will", "there", "these", "an", "on", "he", "she", "his", "her", "what",
            "who", "how", "if", "so", "you", "we", "our", "in",
        ],
    ),
    (
        Language::French,
        &[
            "le", "les", "des", "est", "et", "une", "du", "dans", "qui", "pour", "pas", "sur",
            "au", "avec", "ce", "sont", "il", "elle", "aux", "ont", "était", "cette", "mais", "ou",
            "leur", "nous", "vous", "été", "être", "très", "sa", "ses", "ne",
        ],
    ),
    (
        Language::German,
        &[
            "der", "die", "das", "und", "ist", "nicht", "ein", "eine", "zu", "den", "von", "mit",
            "sich", "auf", "für", "im", "dem", "auch", "wird", "wurde", "sind", "bei", "oder",
            "nach", "aus", "werden", "wie", "einem", "einer", "über", "durch", "ich", "war",
        ],
    ),
    (
        Language::Spanish,
        &[
            "el", "los", "las", "y", "es", "del", "se", "por", "una", "con", "para", "su", "al",
            "lo", "como", "más", "pero", "sus", "fue", "este", "entre", "cuando", "muy", "sin",
            "sobre", "también", "hasta", "donde", "porque", "esta",
        ],
    ),
    (
        Language::Italian,
        &[
            "il", "di", "che", "è", "per", "non", "sono", "della", "gli", "nel", "alla", "dei",
            "delle", "anche", "questo", "come", "più", "ma", "ha", "dalla", "degli", "nella", "ad",
            "essere", "stato", "già",
        ],
    ),
    (
        Language::Portuguese,
        &[
            "os", "da", "do", "em", "um", "uma", "não", "na", "no", "com", "dos", "das", "ao",
            "pelo", "pela", "mais", "foi", "são", "também", "ser", "seu", "sua", "muito", "isso",
            "quando", "já", "está",
        ],
    ),
    (
        Language::Dutch,
        &[
            "het", "een", "van", "dat", "niet", "zijn", "op", "te", "met", "voor", "er", "maar",
            "ook", "aan", "bij", "naar", "werd", "wordt", "deze", "nog", "dan", "kan", "heeft",
            "hij", "ze", "wat", "wel",
        ],
    ),
];

/// The script of a letter outside Latin, when it is one of those [`Language::Script`] names.
pub(crate) fn script(c: char) -> Option<&'static str> {
    Some(match c as u32 {
        0x0370..=0x03FF => "Greek",
        0x0400..=0x04FF => "Cyrillic",
        0x0590..=0x05FF => "Hebrew",
        0x0600..=0x06FF => "Arabic",
        0x0900..=0x097F => "Devanagari",
        0x0E00..=0x0E7F => "Thai",
        0x3040..=0x30FF => "Japanese kana",
        0x4E00..=0x9FFF => "Han",
        0xAC00..=0xD7AF => "Hangul",
        _ => return None,
    })
}

/// The language of `text`, when it is clear; `None` when the text is too short or mixed.
///
/// Rule: a text whose letters are more than half of one non-Latin script is that script
/// (at least 4 such letters). Otherwise the words are counted against short lists of
/// function words; a language wins with at least 3 hits, a tenth of the words, and twice
/// the hits of the runner-up.
///
/// Limits: only the languages and scripts of [`Language`]; Latin-script languages not in the
/// list (Swedish, Turkish, Vietnamese, ...) give `None` or, rarely, a near neighbour; Han
/// text is not split into Chinese and Japanese unless it has kana; a short answer (a name,
/// a date, a phrase of a few words) usually gives `None`, and then nothing is concluded.
pub fn language(text: &str) -> Option<Language> {
    let mut letters = 0usize;
    let mut scripts: Vec<(&'static str, usize)> = Vec::new();
    for c in text.chars().filter(|c| c.is_alphabetic()) {
        letters += 1;
        if let Some(s) = script(c) {
            match scripts.iter_mut().find(|(n, _)| *n == s) {
                Some(e) => e.1 += 1,
                None => scripts.push((s, 1)),
            }
        }
    }
    if let Some(&(s, n)) = scripts.iter().max_by_key(|(_, n)| *n) {
        if n >= 4 && 2 * n > letters {
            return Some(Language::Script(s));
        }
    }
    // Each word's lists, looked up once (a bit per list of `STOPWORDS`).
    let mut counts = [0usize; STOPWORDS.len()];
    let mut word_count = 0usize;
    let lists = stopword_lists();
    let mut words = TokenCursor::new(text);
    while let Some(w) = words.next_token() {
        word_count += 1;
        if let Some(&bits) = lists.get(w) {
            for (i, n) in counts.iter_mut().enumerate() {
                *n += usize::from(bits & (1 << i) != 0);
            }
        }
    }
    let mut hits: Vec<(Language, usize)> = STOPWORDS
        .iter()
        .zip(counts)
        .map(|((lang, _), n)| (*lang, n))
        .collect();
    hits.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    let (best, n) = hits[0];
    let second = hits[1].1;
    (n >= 3 && n * 10 >= word_count && n >= 2 * second.max(1)).then_some(best)
}

/// Which lists of [`STOPWORDS`] hold each word: bit `i` for the `i`th list. Made once.
pub(crate) fn stopword_lists() -> &'static rustc_hash::FxHashMap<&'static str, u32> {
    static LISTS: std::sync::OnceLock<rustc_hash::FxHashMap<&'static str, u32>> =
        std::sync::OnceLock::new();
    LISTS.get_or_init(|| {
        let mut lists = rustc_hash::FxHashMap::default();
        for (i, (_, list)) in STOPWORDS.iter().enumerate() {
            for w in *list {
                *lists.entry(*w).or_insert(0) |= 1u32 << i;
            }
        }
        lists
    })
}

/// The two languages when `answer` is clearly in another language than `source` (both
/// recognised, and different); `None` otherwise, including when either is unclear.
pub fn other_language(answer: &str, source: &str) -> Option<(Language, Language)> {
    let a = language(answer)?;
    let s = language(source)?;
    (a != s).then_some((a, s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_are_told_apart_only_when_clear() {
        let en = "The rain made the ground wet, and the shops opened late because of it.";
        let fr = "La pluie a mouillé le sol, et les magasins ont ouvert tard à cause de cela.";
        let de = "Der Regen hat den Boden nass gemacht, und die Läden haben spät geöffnet.";
        let ru = "Дождь намочил землю, и магазины открылись поздно.";
        assert_eq!(language(en), Some(Language::English));
        assert_eq!(language(fr), Some(Language::French));
        assert_eq!(language(de), Some(Language::German));
        assert_eq!(language(ru), Some(Language::Script("Cyrillic")));
        assert_eq!(
            other_language(fr, en),
            Some((Language::French, Language::English))
        );
        assert_eq!(other_language(en, en), None);
        // Too short to tell: nothing is concluded.
        assert_eq!(language("16 December 1775"), None);
        assert_eq!(other_language("Paris", en), None);
    }
}
