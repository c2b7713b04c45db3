//! What the RECALL steps (paper sections 2.3 to 2.5) share, for both of RECALL's domains:
//!
//! - `mode = "record"` (EventKG): the item carries `kv`, an ordered key-value record
//!   ([`KvItem`]s); the paragraph must state every value, the answer is one item's value,
//!   the answer edit puts a value of the same kind in its place.
//! - `mode = "text"` (UJ): the item carries `term`, `sentences` and `definition`; the
//!   paragraph condenses the sentences, the answer is a phrase copied from it, the answer
//!   edit changes some of its words.
//!
//! Steps, in recipe order, and the fields they add:
//!
//! | kind              | module                     | adds                                                     |
//! |-------------------|----------------------------|----------------------------------------------------------|
//! | `paraphrase`      | [`crate::paraphrase`]      | `paragraph`                                              |
//! | `qa`              | [`crate::qa`]              | `question`, `answer` (as written in the paragraph), `answer_value`, `answer_key`, `answer_kind` |
//! | `answer_edit`     | [`crate::answer_edit`]     | `edited_answer`, `options`, `answer_option`, `qa_a_context`, `qa_a_edits`, `edited_kv` (record) |
//! | `nonanswer_edit`  | [`crate::nonanswer_edit`]  | `qa_na_context`, `qa_na_edits` (text: `tg_edited_source`, `tg_edits`) |
//! | `insert_sentence` | [`crate::nonanswer_edit::sentence`] | `qa_na_sentence_context`, `qa_na_sentence_edits`, `donor_term` (no model: a rule) |
//!
//! Edits are never left to the model's rewriting: the model proposes values or
//! replacements, and the step applies them to the paragraph, so every recorded edit is
//! exactly the difference between the two texts (see [`cb_model::recall::apply_replacements`]).
//!
//! Each model step has a deterministic offline rule (documented on the step) that draws its
//! replacements from the other items of the build ([`Pools`], a view the engine fills in its first pass).

use cb_model::spans::{mentions, merge};
use cb_model::{text, KvItem};
use cb_step::Files;
use cb_step::{fields, Item, ModelStep, Peer, StepError, StepFailure, StepSpec, View};
use rand::seq::IndexedRandom;
use rand::Rng;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet};

/// Which of RECALL's two kinds of source a step works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A key-value record (`kv`), EventKG.
    Record,
    /// A term with sentences (`term`, `sentences`), UJ.
    Text,
}

/// The `mode` parameter of the RECALL steps.
pub const MODE: &[cb_step::params::Param] = &[cb_step::params::Param {
    key: "mode",
    ty: cb_step::params::ParamType::Text,
    default: "(required)",
    meaning: "\"record\" (EventKG key-value records) or \"text\" (UJ terms).",
}];

/// The fields of a RECALL step: `reads` and `writes` as given, and what its `mode` reads
/// from the source (`record`: the key-value record `kv`; `text`: the term and its
/// sentences).
pub fn fields(
    spec: &StepSpec,
    reads: &[&'static str],
    writes: &[&'static str],
) -> cb_step::StepFields {
    let source: &[&'static str] = match spec.str("mode").as_deref() {
        Some("text") => &[fields::TERM, fields::SENTENCES],
        _ => &[fields::KV],
    };
    let mut f = cb_step::StepFields::new(reads, writes);
    f.reads.extend(source.iter().map(|s| (*s).to_owned()));
    f
}

impl Mode {
    fn from_spec(spec: &StepSpec) -> Result<Self, StepError> {
        match spec.str("mode").as_deref() {
            Some("record") => Ok(Self::Record),
            Some("text") => Ok(Self::Text),
            other => Err(StepError::Config(format!(
                "step {}: `mode` must be \"record\" or \"text\", not {other:?}",
                spec.name()
            ))),
        }
    }

    /// The step's mode and model part; the default prompt is `recall/<stem>_record.md` or
    /// `recall/<stem>_text.md` by mode.
    pub(crate) fn with_model(
        spec: &StepSpec,
        prompts: &Files,
        stem: &str,
        default_max_tokens: u32,
    ) -> Result<(Self, ModelStep), StepError> {
        let mode = Self::from_spec(spec)?;
        let suffix = match mode {
            Self::Record => "record",
            Self::Text => "text",
        };
        let default = format!("recall/{stem}_{suffix}.md");
        let model = ModelStep::new(spec, prompts, Some(&default), default_max_tokens)?;
        Ok((mode, model))
    }
}

/// The record as `key: value` lines, as the prompts show it.
pub(crate) fn record_lines(record: &[KvItem]) -> Value {
    json!(record
        .iter()
        .map(|i| format!("{}: {}", i.key, i.value))
        .collect::<Vec<_>>())
}

/// The item's key-value record (record mode: the step declares `kv` read).
pub fn kv(item: &Item) -> Result<Vec<KvItem>, StepFailure> {
    item.require_parsed(fields::KV)
}

/// The answer `qa` wrote, as the later RECALL steps read it: as the paragraph writes it
/// (`answer`), its value (`answer_value`), kind (`answer_kind`) and record key
/// (`answer_key`, "" in text mode).
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    pub(crate) text: String,
    pub(crate) value: String,
    pub(crate) kind: String,
    pub(crate) key: String,
}

impl Answer {
    /// The item's answer; a field missing stops the build ([`Item::require`]).
    pub(crate) fn of(item: &Item) -> Result<Self, StepFailure> {
        Ok(Answer {
            text: item.require(fields::ANSWER)?.to_owned(),
            value: item.require(fields::ANSWER_VALUE)?.to_owned(),
            kind: item.require(fields::ANSWER_KIND)?.to_owned(),
            key: item.require(fields::ANSWER_KEY)?.to_owned(),
        })
    }
}

/// Kinds that are never asked about nor edited.
pub(crate) fn is_fixed(kind: &str) -> bool {
    matches!(kind, "name" | "description")
}

/// The spans of the answer in `paragraph`: the value in any writing and the answer as the
/// paragraph writes it, merged.
pub(crate) fn answer_spans(answer: &Answer, paragraph: &str) -> Vec<(usize, usize)> {
    let mut spans = mentions(paragraph, &answer.value, &answer.kind);
    spans.extend(text::find_word_occurrences(paragraph, &answer.text));
    merge(spans)
}

/// A non-empty string field of a JSON answer, trimmed.
pub(crate) fn json_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// The items of the build, grouped in the first pass (a [`View`]): for the record mode the
/// distinct values of each kind, for the text mode per domain the terms with their sentences
/// and a vocabulary. Source order, so offline draws are deterministic.
///
/// Index size: record mode, one string per distinct (kind, value) (about 20 bytes of text plus
/// a 24-byte `String`; an EventKG event adds a few places, actors and dates, most seen before),
/// and during the pass a set of the normalised pairs of the same size; text mode (UJ, a few
/// thousand terms), each term's id, term and sentences (the donor sentences the sentence
/// insertion draws from, about the size of the term's source record) and each new content
/// word of a domain once.
#[derive(Debug, Default)]
pub(crate) struct Pools {
    /// Kind -> the distinct values of that kind.
    pub(crate) by_kind: BTreeMap<String, Vec<String>>,
    /// Domain -> (item id, term, sentences).
    pub(crate) terms: BTreeMap<String, Vec<(String, String, Vec<String>)>>,
    /// Domain -> content words of its sentences.
    pub(crate) words: BTreeMap<String, Vec<String>>,
    /// (kind, normalised value) and (domain, lower-cased word) already taken (the pass only).
    seen_values: HashSet<(String, String)>,
    seen_words: HashSet<(String, String)>,
}

impl View for Pools {
    fn add(&mut self, peer: Peer<'_>) {
        let items: Vec<KvItem> = cb_step::item::parse_field(peer.fields, fields::KV);
        for i in items.into_iter().filter(|i| !is_fixed(&i.kind)) {
            if self
                .seen_values
                .insert((i.kind.clone(), text::normalize(&i.value)))
            {
                self.by_kind.entry(i.kind).or_default().push(i.value);
            }
        }
        let term = peer.fields.get(fields::TERM).and_then(Value::as_str);
        let sentences = peer.fields.get(fields::SENTENCES).and_then(Value::as_array);
        if let (Some(term), Some(sentences)) = (term, sentences) {
            let domain = peer
                .fields
                .get(fields::DOMAIN)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let sentences: Vec<String> = sentences
                .iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect();
            for s in &sentences {
                for w in content_words(s) {
                    if self.seen_words.insert((domain.clone(), w.to_lowercase())) {
                        self.words
                            .entry(domain.clone())
                            .or_default()
                            .push(w.to_owned());
                    }
                }
            }
            self.terms.entry(domain).or_default().push((
                peer.id.to_owned(),
                term.to_owned(),
                sentences,
            ));
        }
    }

    fn finish(&mut self) {
        self.seen_values = HashSet::new();
        self.seen_words = HashSet::new();
    }
}

const STOPWORDS: &[&str] = &[
    "about", "above", "after", "again", "against", "along", "also", "among", "because", "been",
    "before", "being", "below", "between", "both", "called", "could", "does", "doing", "during",
    "each", "either", "every", "first", "from", "further", "have", "having", "into", "itself",
    "known", "many", "more", "most", "much", "must", "only", "other", "over", "same", "several",
    "should", "since", "some", "such", "than", "that", "their", "them", "then", "there", "these",
    "they", "this", "those", "through", "under", "until", "upon", "used", "uses", "using", "very",
    "what", "when", "where", "which", "while", "whose", "with", "within", "without", "would",
];

/// Words worth changing: alphabetic, at least five letters, not a function word.
pub(crate) fn content_words(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !c.is_alphabetic())
        .filter(|w| w.chars().count() >= 5 && !STOPWORDS.contains(&w.to_lowercase().as_str()))
}

/// Pairs of words of opposite meaning, used first by the offline word edits.
const OPPOSITES: &[(&str, &str)] = &[
    ("increase", "decrease"),
    ("increases", "decreases"),
    ("larger", "smaller"),
    ("large", "small"),
    ("maximum", "minimum"),
    ("positive", "negative"),
    ("finite", "infinite"),
    ("linear", "nonlinear"),
    ("higher", "lower"),
    ("faster", "slower"),
    ("before", "after"),
    ("always", "never"),
    ("inside", "outside"),
    ("stable", "unstable"),
    ("constant", "variable"),
    ("sorted", "unsorted"),
    ("first", "last"),
    ("upper", "lower"),
    ("attract", "repel"),
    ("absorbs", "emits"),
];

pub(crate) fn opposite(word: &str) -> Option<String> {
    let lower = word.to_lowercase();
    let found = OPPOSITES.iter().find_map(|&(a, b)| {
        if a == lower {
            Some(b)
        } else if b == lower {
            Some(a)
        } else {
            None
        }
    })?;
    let capital = word.chars().next().is_some_and(char::is_uppercase);
    Some(if capital {
        text::ucfirst(found)
    } else {
        found.to_owned()
    })
}

/// A replacement for `word` by the offline rules: its opposite, else a word of the domain's
/// vocabulary (seeded) that the text does not use.
///
/// Vocabulary words with the same ending as `word` (its last two letters: "-ed", "-ly",
/// "-es") come first, so the sentence keeps its grammar more often; the replacement takes
/// the word's capital when it has one.
pub(crate) fn offline_word(
    word: &str,
    vocab: &[String],
    avoid: &str,
    rng: &mut impl Rng,
) -> Option<String> {
    if let Some(o) = opposite(word) {
        return Some(o);
    }
    let candidates: Vec<&String> = vocab
        .iter()
        .filter(|w| !w.eq_ignore_ascii_case(word) && !text::contains_phrase(avoid, w))
        .collect();
    let ending = |w: &str| w.to_lowercase().chars().rev().take(2).collect::<String>();
    let same_ending: Vec<&String> = candidates
        .iter()
        .copied()
        .filter(|w| ending(w) == ending(word))
        .collect();
    let pick = if same_ending.is_empty() {
        candidates.choose(rng)
    } else {
        same_ending.choose(rng)
    }?;
    let lower = pick.to_lowercase();
    Some(if word.chars().next().is_some_and(char::is_uppercase) {
        text::ucfirst(&lower)
    } else {
        lower
    })
}
/// The key without the " 2", " 3" that makes repeated keys unique.
pub(crate) fn base_key(key: &str) -> &str {
    match key.rsplit_once(' ') {
        Some((base, n)) if n.chars().all(|c| c.is_ascii_digit()) => base,
        _ => key,
    }
}

/// Records and items the RECALL steps' unit tests share.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;

    pub(crate) fn kvi(key: &str, value: &str, kind: &str) -> KvItem {
        KvItem {
            key: key.into(),
            value: value.into(),
            kind: kind.into(),
        }
    }

    pub(crate) fn trial() -> Vec<KvItem> {
        vec![
            kvi("name", "Trial of Joan of Arc", "name"),
            kvi(
                "description",
                "Joan of Arc was tried for heresy.",
                "description",
            ),
            kvi("begin time", "9 January 1431", "date"),
            kvi("end time", "29 May 1431", "date"),
            kvi("location", "Rouen", "place"),
            kvi("judge", "Pierre Cauchon", "actor"),
        ]
    }

    pub(crate) fn empty_item() -> Item {
        Item {
            index: 0,
            id: "e".into(),
            origin: cb_model::Origin {
                file: "f".into(),
                line: 1,
            },
            fields: serde_json::Map::new(),
            calls: Vec::new(),
        }
    }

    pub(crate) fn date_item() -> Item {
        let mut item = empty_item();
        item.set(fields::KV, json!(trial()));
        item.set(fields::ANSWER, "May 30, 1431");
        item.set(fields::ANSWER_VALUE, "30 May 1431");
        item.set(fields::ANSWER_KIND, "date");
        item.set(fields::ANSWER_KEY, "");
        item
    }
}
