//! Checks of generated text that the steps' validators and the audit share, so that a built
//! row and a released row are judged by the same rules: prompt echo, a context that only
//! restates the negative answer, an answer in another language than its source, and text
//! copied from the inputs set apart before a refusal or a golden answer is looked for.
//!
//! Each check returns what it found (for the reason's detail); the stable reason codes are
//! the callers' (`prompt_echo`, `restates_negative`, `other_language`).

use cb_model::text::{
    normalize, normalize_into, normalizes_to_empty, tokens, Normalized, TokenCursor,
};

mod copies;

/// The labels the bundled prompt templates put at the start of a line before the material
/// they show the model (`Event: ...`, `Question: ...`). A line of an answer that starts with
/// one of them followed by `:` repeats the prompt back. Kept in step with `prompts/` by a
/// test of the steps crate.
pub const PROMPT_LABELS: &[&str] = &[
    "Answer",
    "Answer, copied from the paragraph",
    "Chosen answer",
    "Chosen cause",
    "Chosen result",
    "Correct answer",
    "Event",
    "For comparison, the reference explanation of the other option reads",
    "Options",
    "Other answers the dataset accepts (do not use them as options either)",
    "Paragraph",
    "Paragraph about an event",
    "Paragraph written from the record",
    "Passage",
    "Question",
    "Record of the event",
    "Reference explanation",
    "Replacement answer",
    "Sentence",
    "Sentences collected about the term",
    "Term",
    "The passage may also write it as",
    "The same answer written in other ways",
];

/// The first line of `answer` that starts with one of `labels` (case-insensitive) followed
/// by `:`; the label is returned. A label is matched on its own words: "Question:" and
/// "question :" match "Question", "Questions:" does not. Labels are compared after
/// stripping a leading list marker (`-`, `*`, `1.`) and quotes from the line. A line that
/// `material` (the text the model was given to work on) already holds is not echo: a passage
/// may have a line "Note: ..." of its own.
pub fn echoed_label<'a>(answer: &str, labels: &[&'a str], material: &str) -> Option<&'a str> {
    let material = material.to_lowercase();
    for line in answer.lines() {
        // No line that has a character is held by an empty material: the line is then not
        // lower-cased.
        if !line.trim().is_empty()
            && !material.is_empty()
            && material.contains(&line.trim().to_lowercase())
        {
            continue;
        }
        let l = line
            .trim()
            .trim_start_matches(|c: char| c.is_ascii_digit() || "-*•.) \"'`>#".contains(c));
        let Some((head, _)) = l.split_once(':') else {
            continue;
        };
        let head = head.trim().trim_end_matches(['"', '\'', ')']);
        // Labels with a parenthesis ("Reference explanation (supports ...)") match on what
        // comes before it.
        let head = head.split(" (").next().unwrap_or(head).trim();
        if let Some(l) = labels.iter().find(|l| l.eq_ignore_ascii_case(head)) {
            return Some(l);
        }
    }
    None
}

/// Names the bundled prompts give their own parts. An answer that uses one talks about the
/// prompt instead of answering it ("as explained by the reference explanation").
pub const PROMPT_TERMS: &[&str] = &[
    "reference explanation",
    "the other option",
    "chosen cause",
    "chosen result",
    "correct answer",
    "replacement answer",
    "accepted forms",
    // Our own repair message ("That answer cannot be used: ... Answer again ...").
    "that answer cannot be used",
];

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

/// The fences the bundled prompts put around the material they show (`<<<` ... `>>>`).
pub const FENCES: &[&str] = &["<<<", ">>>"];

/// The first of [`FENCES`] that `answer` holds and `material` does not: the model copied the
/// prompt's layout ("A new passage would be:\n<<<\n...\n>>>", a real SmolLM2 answer).
pub fn echoed_fence(answer: &str, material: &str) -> Option<&'static str> {
    FENCES
        .iter()
        .copied()
        .find(|f| answer.contains(f) && !material.contains(f))
}

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

/// The first of [`PROMPT_TERMS`] that `answer` uses (whole words, case-insensitive) and
/// `material` does not.
pub fn echoed_term(answer: &str, material: &str) -> Option<&'static str> {
    static TERMS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    first_unshared(
        PROMPT_TERMS,
        normalized(&TERMS, PROMPT_TERMS),
        answer,
        material,
    )
}

/// `terms` [`normalize`]d, made once into `cell`.
fn normalized<'a>(cell: &'a std::sync::OnceLock<Vec<String>>, terms: &[&str]) -> &'a [String] {
    cell.get_or_init(|| terms.iter().map(|t| normalize(t)).collect())
}

/// The first of `terms` that `answer` uses and `material` does not
/// ([`cb_model::text::contains_phrase`]); `normalized` holds the terms [`normalize`]d, in
/// the same order.
fn first_unshared(
    terms: &[&'static str],
    normalized: &[String],
    answer: &str,
    material: &str,
) -> Option<&'static str> {
    let answer = Normalized::new(answer);
    // The material (often long) is normalised only when the answer uses a term.
    let mut given: Option<Normalized> = None;
    terms.iter().zip(normalized).find_map(|(t, n)| {
        (answer.contains_normalized(n)
            && !given
                .get_or_insert_with(|| Normalized::new(material))
                .contains_normalized(n))
        .then_some(*t)
    })
}

/// A run of `window` consecutive words of `instructions` (the template's own text, without
/// the material it shows) that `answer` repeats, as found; `None` when there is none. A run
/// that `material` also holds is not counted. Words are compared lower-cased, punctuation
/// left out.
pub fn echoed_instructions(
    answer: &str,
    instructions: &str,
    material: &str,
    window: usize,
) -> Option<String> {
    let a = tokens(answer);
    if window == 0 || a.len() < window {
        return None;
    }
    // The instructions are the same for every row of a step: their runs are made once a
    // thread and kept ([`instruction_runs`]); the material is read only when the answer
    // shares a run with them.
    instruction_runs(instructions, window, |runs| {
        let shared: Vec<&[String]> = a.windows(window).filter(|w| runs.contains(*w)).collect();
        if shared.is_empty() {
            return None;
        }
        let m = tokens(material);
        let given: rustc_hash::FxHashSet<&[String]> = m.windows(window).collect();
        shared
            .into_iter()
            .find(|w| !given.contains(w))
            .map(|w| w.join(" "))
    })
}

/// The runs of `window` consecutive words of `instructions` (lower-cased, punctuation left
/// out), handed to `f`. The last few sets made on this thread are kept, keyed by the text
/// and the window: a build asks about the same few templates' words row after row.
fn instruction_runs<T>(
    instructions: &str,
    window: usize,
    f: impl FnOnce(&rustc_hash::FxHashSet<Vec<String>>) -> T,
) -> T {
    type Runs = std::rc::Rc<rustc_hash::FxHashSet<Vec<String>>>;
    /// How many sets a thread keeps.
    const KEPT: usize = 8;
    thread_local! {
        static KEPT_RUNS: std::cell::RefCell<Vec<(String, usize, Runs)>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }
    let found = KEPT_RUNS.with_borrow_mut(|kept| {
        let at = kept
            .iter()
            .position(|(text, w, _)| *w == window && text == instructions)?;
        let entry = kept.remove(at);
        let runs = Runs::clone(&entry.2);
        kept.push(entry);
        Some(runs)
    });
    let runs = found.unwrap_or_else(|| {
        let t = tokens(instructions);
        let runs: Runs = std::rc::Rc::new(t.windows(window).map(<[String]>::to_vec).collect());
        KEPT_RUNS.with_borrow_mut(|kept| {
            if kept.len() == KEPT {
                kept.remove(0);
            }
            kept.push((instructions.to_owned(), window, Runs::clone(&runs)));
        });
        runs
    });
    f(&runs)
}

/// The first of `values` (the strings of a structured answer) that is one of the example
/// values the template shows in quotes (`"first option"`, `"<text copied from the
/// paragraph>"`) and that `material` does not hold: the model filled the shape with the
/// prompt's own placeholders.
pub fn echoed_example<'a>(
    values: &[&'a str],
    instructions: &str,
    material: &str,
) -> Option<&'a str> {
    let material = material.to_lowercase();
    values.iter().copied().find(|v| {
        let v = v.trim();
        !v.is_empty()
            && instructions.contains(&format!("\"{v}\""))
            && !material.contains(&v.to_lowercase())
    })
}

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
fn is_function_word(w: &str) -> bool {
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
fn count_added(context: &str, known: impl Fn(&Stem) -> bool, enough: usize) -> usize {
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
struct Stem {
    len: u8,
    bytes: [u8; Stem::MAX],
}

impl Stem {
    /// Five characters of at most four bytes each.
    const MAX: usize = 20;

    #[cfg(test)]
    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }
}

/// A word's crude stem: the first five characters of what is left once a final "ing", "ed"
/// or "s" is cut off (when at least three letters remain), so that "rained" and "rain",
/// "withered" and "wither" meet.
fn stem(word: &str) -> Stem {
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
fn each_content_stem(text: &str, mut f: impl FnMut(Stem)) {
    let mut words = TokenCursor::new(text);
    while let Some(w) = words.next_token() {
        if !is_function_word(w) {
            f(stem(w));
        }
    }
}

/// The stems of the content words of `text` (lower-cased, function words left out).
fn content_stems(text: &str) -> rustc_hash::FxHashSet<Stem> {
    let mut out = rustc_hash::FxHashSet::default();
    each_content_stem(text, |s| {
        out.insert(s);
    });
    out
}

/// The distinct content-word stems of `text`, in the order met: for the short texts (an
/// answer) whose stems are compared with a few others.
fn distinct_stems(text: &str) -> Vec<Stem> {
    let mut out = Vec::new();
    each_content_stem(text, |s| {
        if !out.contains(&s) {
            out.push(s);
        }
    });
    out
}

/// Fewer than this many content words beyond the negative answer's: the context only
/// restates it. One added word is enough to pass ("It is kept in the oven." for "oven"):
/// the rule is there for bare restatements, and a weak context is the audit's and the
/// reviewers' call.
pub const RESTATE_MIN_ADDED: usize = 1;

/// Words about the task rather than the situation ("The answer to the question is ...",
/// "... provide another reason that supports it", our own repair message reworded), and
/// modal verbs; never counted as what a negative context adds.
const TASK_WORDS: &[&str] = &[
    "answer",
    "answers",
    "question",
    "correct",
    "option",
    "choice",
    "must",
    "should",
    "might",
    "may",
    "reason",
    "reasons",
    "support",
    "provide",
    "another",
    "explain",
    "explanation",
];

/// Whether a negative context (or explanation) only restates the negative answer: it adds
/// fewer than [`RESTATE_MIN_ADDED`] content words (none) to it and to `given`, the texts the
/// model was shown and may copy (the question, the premise), task words ([`TASK_WORDS`])
/// left out. "The plants grew faster." for "The plants grew faster", or, real SmolLM2
/// answers, "The answer is: A cupboard" for "cupboard" and "The dog barked loudly at the
/// door. The dog was asleep." (the premise, then the negative answer). An empty context
/// restates nothing (other checks catch it).
pub fn restates(context: &str, negative_answer: &str, given: &[&str]) -> bool {
    if normalizes_to_empty(context) || normalizes_to_empty(negative_answer) {
        return false;
    }
    // The task words' stems are made once; the negative answer's and `given`'s per call.
    static TASK_STEMS: std::sync::OnceLock<rustc_hash::FxHashSet<Stem>> =
        std::sync::OnceLock::new();
    let task = TASK_STEMS.get_or_init(|| content_stems(&TASK_WORDS.join(" ")));
    let mut known = rustc_hash::FxHashSet::default();
    for text in std::iter::once(negative_answer).chain(given.iter().copied()) {
        each_content_stem(text, |s| {
            known.insert(s);
        });
    }
    count_added(
        context,
        |s| task.contains(s) || known.contains(s),
        RESTATE_MIN_ADDED,
    ) < RESTATE_MIN_ADDED
}

/// Whether a context written for the negative answer speaks of the golden answer at least as
/// much as of the negative one: it uses at least one content-word stem ([`stem`]) of the
/// golden answer that the negative answer lacks, and at least as many of those as of the
/// negative answer's own (function words and the words of `given`, the question and premise,
/// left out). Real SmolLM2 explanations for e-CARE: "A car's battery is dead, so it needs to
/// be replaced." for the negative "The car had been washed." (golden: the battery was dead);
/// "A rain causes the ground to swell, so it makes the streets wet." for "The shops opened
/// late." (golden: it rained during the night). A general-knowledge reason that names
/// neither passes; 9 of the 150 sampled released e-CARE explanations lean this way too (a
/// lexical rule, not a judgement of meaning).
pub fn leans_to_golden(context: &str, negative: &str, golden: &str, given: &[&str]) -> bool {
    /// A stem of one answer that the other lacks: whose it is, whether the context uses
    /// it, whether `given` holds it.
    struct Own {
        stem: Stem,
        golden: bool,
        said: bool,
        known: bool,
    }
    let (g_stems, n_stems) = (distinct_stems(golden), distinct_stems(negative));
    let mut own: Vec<Own> = Vec::new();
    for (mine, other, golden) in [(&g_stems, &n_stems, true), (&n_stems, &g_stems, false)] {
        own.extend(mine.iter().filter(|s| !other.contains(s)).map(|&stem| Own {
            stem,
            golden,
            said: false,
            known: false,
        }));
    }
    // Without a stem of the golden answer's own that the context uses, it does not lean
    // (the context and `given` are read only as far as that needs).
    if !own.iter().any(|o| o.golden) {
        return false;
    }
    each_content_stem(context, |s| {
        own.iter_mut()
            .filter(|o| o.stem == s)
            .for_each(|o| o.said = true);
    });
    if !own.iter().any(|o| o.golden && o.said) {
        return false;
    }
    for g in given {
        each_content_stem(g, |s| {
            own.iter_mut()
                .filter(|o| o.stem == s)
                .for_each(|o| o.known = true);
        });
    }
    let used = |golden: bool| {
        own.iter()
            .filter(|o| o.golden == golden && o.said && !o.known)
            .count()
    };
    let (g, n) = (used(true), used(false));
    g > 0 && g >= n
}

pub use copies::beyond_copies;

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
const STOPWORDS: &[(Language, &[&str])] = &[
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
fn script(c: char) -> Option<&'static str> {
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
fn stopword_lists() -> &'static rustc_hash::FxHashMap<&'static str, u32> {
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

    /// The checks as they were, compared with these on the shared samples.
    mod sameness;

    /// A real answer of SmolLM2-135M-Instruct to the e-CARE explanation prompt (issue #12).
    const SMOLLM_ECHO: &str = "The streets were wet in the morning.\nEvent: The shops opened late.\nChosen cause: The rain made the ground wet.";

    #[test]
    fn template_labels_repeated_in_an_answer_are_echo() {
        assert_eq!(echoed_label(SMOLLM_ECHO, PROMPT_LABELS, ""), Some("Event"));
        // A line the material itself has is the material, not echo.
        let passage = "Answer: forty-two, said the computer.";
        assert_eq!(echoed_label(passage, PROMPT_LABELS, passage), None);
        assert_eq!(
            echoed_label("- question : what is it?", PROMPT_LABELS, ""),
            Some("Question")
        );
        assert_eq!(
            echoed_label(
                "Reference explanation (supports \"x\"): y",
                PROMPT_LABELS,
                ""
            ),
            Some("Reference explanation")
        );
        assert_eq!(
            echoed_label("Rain wets streets: a fact of weather.", PROMPT_LABELS, ""),
            None
        );
        assert_eq!(echoed_label("Questions: none", PROMPT_LABELS, ""), None);
        assert_eq!(
            echoed_label("location: Rouen", &["location"], ""),
            Some("location")
        );
    }

    #[test]
    fn contexts_that_argue_for_the_golden_answer_are_found() {
        // Real SmolLM2 explanations accepted for e-CARE before this rule.
        let q = "The car would not start. What is the more possible cause of this?";
        assert!(leans_to_golden(
            "A car's battery is dead, so it needs to be replaced.",
            "The car had been washed.",
            "The battery was dead.",
            &[q]
        ));
        let q = "The dog barked loudly at the door. What is the more possible cause of this?";
        assert!(leans_to_golden(
            "A dog's owner knocked on the door, causing the dog to bark.",
            "The dog was asleep.",
            "Someone knocked on the door.",
            &[q]
        ));
        // Accepted before stems met across "rained"/"rain" and before a tie counted: the
        // golden answer's word as often as the negative's own.
        let q = "The streets were wet in the morning. What is the more possible cause of this?";
        assert!(leans_to_golden(
            "A rain causes the ground to swell, so it makes the streets wet.",
            "The shops opened late.",
            "It rained during the night.",
            &[q]
        ));
        let q =
            "Tom forgot to water his plants for a month. What happened as a more possible result?";
        assert!(leans_to_golden(
            "A plant withered faster than the plants could grow, so it was likely that the water had a negative effect on their growth.",
            "The plants grew faster.",
            "The plants withered.",
            &[q]
        ));
        let q = "The car would not start. What is the more possible cause of this?";
        assert!(leans_to_golden(
            "The car had been washed, but it was actually a malfunctioning battery that could not be repaired.",
            "The car had been washed.",
            "The battery was dead.",
            &[q]
        ));
        // A reason for the negative answer, or general knowledge naming neither, passes.
        let q = "The boy had a high fever. What is the more possible cause of this?";
        assert!(!leans_to_golden(
            "The boy ate an apple, which is a common ingredient in flu vaccines.",
            "He ate an apple.",
            "He caught the flu.",
            &[q]
        ));
        let q = "Lily took sulfonamides. What happened as a more possible result?";
        assert!(!leans_to_golden(
            "Sulfonamides can cause severe hemolysis, leading to fatal outcomes.",
            "Lily has been killed.",
            "Lily recovered.",
            &[q]
        ));
    }

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

    #[test]
    fn the_prompts_fences_in_an_answer_are_echo() {
        let real = "A new passage would be:\n<<<\nThe first confirmed ascent of Everest was made by Edmund Hillary.\n>>>\n";
        assert_eq!(
            echoed_fence(real, "Edmund Hillary of New Zealand"),
            Some("<<<")
        );
        assert_eq!(echoed_fence(real, "a <<< b >>> c"), None);
        assert_eq!(echoed_fence("Hillary climbed it.", ""), None);
    }

    #[test]
    fn answers_about_the_prompt_are_found() {
        // Real accepted answers of SmolLM2 to the e-CARE explanation prompt before this check.
        let meta =
            "The boy ate an apple and caught the flu, as explained by the reference explanation.";
        assert_eq!(
            echoed_term(meta, "The boy caught the flu."),
            Some("reference explanation")
        );
        let other = "The dog barked loudly at the door, and the other option was a stranger who knocked on the door.";
        assert_eq!(echoed_term(other, ""), Some("the other option"));
        assert_eq!(echoed_term("Metal spoons conduct heat quickly.", ""), None);
        // Our repair message, reworded and sent back (accepted for e-CARE before this term).
        let parrot = "That answer cannot be used: \"The answer is not possible to provide.\"; Provide a reason for \"She forgot how to read music.\"";
        assert_eq!(echoed_term(parrot, ""), Some("that answer cannot be used"));
        // The material's own words are not echo.
        assert_eq!(
            echoed_term("the correct answer", "Which is the correct answer?"),
            None
        );
    }

    #[test]
    fn instructions_repeated_are_found_and_material_is_not() {
        let instructions = "Write one sentence (at most 40 words) of general knowledge that explains why the event happened.";
        assert_eq!(
            echoed_instructions(
                "Sure. Write one sentence at most 40 words of general knowledge: rain.",
                instructions,
                "",
                8
            )
            .as_deref(),
            Some("write one sentence at most 40 words of")
        );
        assert!(echoed_instructions(
            "Rain makes the ground wet and slippery.",
            instructions,
            "",
            8
        )
        .is_none());
    }

    #[test]
    fn placeholders_of_the_prompt_are_echo() {
        // A real answer of SmolLM2 to the distractors prompt under a JSON schema (llama-cpp-
        // python, response_format json_object): the shape filled with its own example.
        let shape = r#"Reply with JSON only, in exactly this shape: {"options": ["first option", "second option", "third option"]}"#;
        let answer = ["first option", "second option", "third option"];
        assert_eq!(
            echoed_example(&answer, shape, "Normandy"),
            Some("first option")
        );
        assert_eq!(echoed_example(&["Germany", "Spain"], shape, ""), None);
    }

    #[test]
    fn a_bare_restatement_of_the_negative_answer_is_found() {
        // A real SmolLM2 answer (issue #12) for the negative answer "The plants grew faster".
        assert!(restates(
            "The plants grew faster.",
            "The plants grew faster",
            &[]
        ));
        assert!(restates(
            "Yes, the plant grew faster.",
            "The plants grew faster",
            &[]
        ));
        assert!(!restates(
            "Water and sunlight help plants grow faster.",
            "The plants grew faster",
            &[]
        ));
        assert!(!restates("It is kept in the oven.", "oven", &[]));
        assert!(!restates("", "x", &[]));
    }

    #[test]
    fn a_restatement_wrapped_in_task_words_or_the_question_is_found() {
        // Real SmolLM2 answers (QUALITY.md run) that the rule above let through.
        let q = "Where would you most likely keep milk so that it stays cold?";
        assert!(restates("The answer is: A cupboard", "cupboard", &[q]));
        let q = "A person who is very thirsty would most likely want to do what?";
        assert!(restates(
            "The answer to the question \"What a thirsty person would most likely want to do is run outside\" must be \"run outside\".",
            "run outside",
            &[q]
        ));
        // The same answer as it was accepted at the repair attempt: it rewords the repair
        // message ("... give a reason that supports it") instead of giving a reason.
        assert!(restates(
            "The answer to the question \"What a thirsty person would most likely want to do is run outside\" must be \"run outside\"; provide another reason that supports it.",
            "run outside",
            &[q]
        ));
        let premise = "The dog barked loudly at the door.";
        let q = "The dog barked loudly at the door. What is the more possible cause of this?";
        assert!(restates(
            "The dog barked loudly at the door. The dog was asleep.",
            "The dog was asleep.",
            &[premise, q]
        ));
        // A reason, however weak, is not a restatement.
        let q = "The boy had a high fever. What is the more possible cause of this?";
        assert!(!restates(
            "The boy had a high fever and ate an apple, which is the primary cause of the flu.",
            "He ate an apple.",
            &[q]
        ));
    }

    #[test]
    fn copied_inputs_are_set_apart() {
        let t = "Something is wrong with my camera flash, and that is what brought this about: I cannot take new Photos now.";
        let rest = beyond_copies(t, &["I cannot take new Photos now."]);
        assert!(!cb_model::text::looks_like_refusal(&rest), "{rest}");
        assert!(cb_model::text::looks_like_refusal(t));
        assert!(rest.contains("camera flash"));
    }

    /// `beyond_copies` as it was before it became linear (issue 22), the reference of the
    /// tests below: every copy lower-cases and searches the whole text again.
    fn beyond_copies_reference(text: &str, copied: &[&str]) -> String {
        // The old loop, kept in `copies` for the texts the automaton cannot cut.
        crate::copies::cut_each_in_turn(text, &crate::copies::needles(copied))
    }

    #[test]
    fn copies_are_cut_as_the_one_by_one_rule_cut_them() {
        let cases: &[(&str, &[&str], &str)] = &[
            // Case, a copied sentence inside a longer answer, twice, and a final period.
            (
                "He said: I CANNOT take new photos now. Then i cannot take new photos now!",
                &["I cannot take new photos now."],
                "He said:  . Then  !",
            ),
            // Longest first: the shorter copy inside the longer one is not cut again.
            (
                "The duke crossed the sea in 1066, and the duke crossed the sea.",
                &["the duke crossed", "The duke crossed the sea in 1066"],
                " , and   the sea.",
            ),
            // Overlapping occurrences of one copy: leftmost first, not overlapping.
            ("abababababab", &["abababab"], " abab"),
            // A cut joins a shorter copy across the space it leaves.
            (
                "left side XXXXXXXXXXXX right side",
                &["XXXXXXXXXXXX", "side   right"],
                "left   side",
            ),
            // Multibyte characters that keep their length lower-cased.
            (
                "Ça coûte ÉNORMÉMENT, dit Zoë. Ça coûte énormément.",
                &["ça coûte énormément"],
                " , dit Zoë.  .",
            ),
            // "Σ" lower-cases by its surroundings, and a cut changes them: "ΚΑΛΟΣ.ΑΛΦΑ" has
            // "σ", and once "ΑΛΦΑ ..." is cut, "ς" (the copy then matches); ".Σ" after
            // "ΓΑΜΜΑ" has "ς", and once "ΑΛΦΑ ... ΓΑΜΜΑ" is cut, "σ".
            (
                "ΜΕΓΑΛΟΣ ΚΑΛΟΣ.ΑΛΦΑ ΒΗΤΑ ΓΑΜΜΑ",
                &["αλφα βητα γαμμα", "μεγαλος καλος"],
                " . ",
            ),
            (
                "ΑΛΦΑ ΒΗΤΑ ΓΑΜΜΑ.Σ ΩΡΑΙΟ",
                &["αλφα βητα γαμμα", ".σ ωραιο"],
                "  ",
            ),
            // A text whose lower case is longer ("İ" is "i̇") is left as it is.
            (
                "İstanbul: I cannot take new photos now.",
                &["I cannot take new photos now."],
                "İstanbul: I cannot take new photos now.",
            ),
            // Short copies and no copies cut nothing.
            ("Short one here.", &["Short", ""], "Short one here."),
            ("", &["anything at all"], ""),
        ];
        for &(text, copied, want) in cases {
            let reference = beyond_copies_reference(text, copied);
            assert_eq!(reference, want, "reference on {text:?}");
            assert_eq!(beyond_copies(text, copied), want, "on {text:?}");
        }
        // "İ" (one byte longer lower-cased) and the Kelvin sign (two shorter) in equal
        // measure: the offsets no longer line up, and the copies are cut one by one as before.
        let text = "İİ\u{212A} abcdefghij and more abcdefghij";
        assert_eq!(
            beyond_copies(text, &["abcdefghij"]),
            beyond_copies_reference(text, &["abcdefghij"])
        );
    }

    #[test]
    fn copies_are_cut_as_before_on_random_texts() {
        // Few letters, so that copies overlap, repeat and meet across cuts; cased and
        // case-ignorable neighbours of "Σ".
        const CHARS: &[char] = &[
            'a', 'b', 'A', 'B', ' ', ' ', '.', '\'', 'Σ', 'σ', 'ς', 'é', 'É', 'ß', 'x', 'Ω',
        ];
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for _ in 0..20_000 {
            let len = next(60);
            let text: String = (0..len).map(|_| CHARS[next(CHARS.len())]).collect();
            let chars: Vec<char> = text.chars().collect();
            let mut copied: Vec<String> = Vec::new();
            for _ in 0..next(6) {
                let n = 8 + next(10);
                if chars.len() > n + 8 && next(3) == 0 {
                    // A piece of the text, and a shorter copy of what its cut joins: the
                    // characters before it, a space, the characters after it.
                    let s = 1 + next(chars.len() - n - 2);
                    copied.push(chars[s..s + n].iter().collect());
                    let before = 1 + next(s.min(6));
                    let after = 1 + next((chars.len() - s - n).min(6));
                    let joined: String = chars[s - before..s]
                        .iter()
                        .chain([' '].iter())
                        .chain(&chars[s + n..s + n + after])
                        .collect();
                    copied.push(joined);
                } else if chars.len() > n && next(3) > 0 {
                    // A piece of the text, its case changed here and there.
                    let s = next(chars.len() - n);
                    copied.push(
                        chars[s..s + n]
                            .iter()
                            .map(|&c| match next(3) {
                                0 => c.to_uppercase().next().unwrap_or(c),
                                1 => c.to_lowercase().next().unwrap_or(c),
                                _ => c,
                            })
                            .collect(),
                    );
                } else {
                    copied.push((0..n).map(|_| CHARS[next(CHARS.len())]).collect());
                }
            }
            let copied: Vec<&str> = copied.iter().map(String::as_str).collect();
            assert_eq!(
                beyond_copies(&text, &copied),
                beyond_copies_reference(&text, &copied),
                "{text:?} {copied:?}"
            );
        }
    }

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
