//! RECALL steps (paper sections 2.3 to 2.5), for both of its domains:
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
//! | kind              | adds                                                                      |
//! |-------------------|---------------------------------------------------------------------------|
//! | `paraphrase`      | `paragraph`                                                               |
//! | `qa`              | `question`, `answer` (as written in the paragraph), `answer_value`, `answer_key`, `answer_kind` |
//! | `answer_edit`     | `edited_answer`, `options`, `answer_option`, `qa_a_context`, `qa_a_edits`, `edited_kv` (record) |
//! | `nonanswer_edit`  | `qa_na_context`, `qa_na_edits`                                            |
//! | `insert_sentence` | `qa_na_sentence_context`, `qa_na_sentence_edits` (no model: a rule)       |
//!
//! Edits are never left to the model's rewriting: the model proposes values or
//! replacements, and the engine applies them to the paragraph, so every recorded edit is
//! exactly the difference between the two texts (see [`cb_model::recall::apply_replacements`]).
//!
//! Each model step has a deterministic offline rule (documented on the step) that draws its
//! replacements from the other items of the build ([`StepCtx::corpus`]).

use super::{ask, clean_text_answer, extract_json, param_str, ModelStep, StepCtx, StepFailure};
use crate::files::Files;
use crate::recipe::StepSpec;
use crate::{EngineError, Item};
use cb_model::date;
use cb_model::recall::{apply_replacements, Edit};
use cb_model::{item_rng, letter, text, KvItem};
use rand::seq::{IndexedRandom, SliceRandom};
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

impl Mode {
    fn from_spec(spec: &StepSpec) -> Result<Self, EngineError> {
        match param_str(spec, "mode").as_deref() {
            Some("record") => Ok(Self::Record),
            Some("text") => Ok(Self::Text),
            other => Err(EngineError::Config(format!(
                "step {}: `mode` must be \"record\" or \"text\", not {other:?}",
                spec.name()
            ))),
        }
    }

    /// The step's mode and model part; the default prompt is `recall/<stem>_record.md` or
    /// `recall/<stem>_text.md` by mode.
    fn with_model(
        spec: &StepSpec,
        prompts: &Files,
        stem: &str,
        default_max_tokens: u32,
    ) -> Result<(Self, ModelStep), EngineError> {
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
fn record_lines(record: &[KvItem]) -> Value {
    json!(record
        .iter()
        .map(|i| format!("{}: {}", i.key, i.value))
        .collect::<Vec<_>>())
}

/// The item's key-value record.
pub fn kv(item: &Item) -> Vec<KvItem> {
    item.parsed("kv")
}

/// Kinds that are never asked about nor edited.
fn is_fixed(kind: &str) -> bool {
    matches!(kind, "name" | "description")
}

/// Byte spans of every mention of a value in `text`: a date in any of its usual writings,
/// anything else as whole words (case-insensitive).
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

/// Whether `text` mentions the value (see [`mentions`]).
fn states(text: &str, value: &str, kind: &str) -> bool {
    !value.trim().is_empty() && !mentions(text, value, kind).is_empty()
}

/// The spans of the answer in `paragraph`: the value in any writing and the answer as the
/// paragraph writes it, merged.
fn answer_spans(item: &Item, paragraph: &str) -> Vec<(usize, usize)> {
    let mut spans = mentions(
        paragraph,
        item.text("answer_value"),
        item.text("answer_kind"),
    );
    spans.extend(text::find_word_occurrences(paragraph, item.text("answer")));
    merge(spans)
}

/// Sorts spans and merges the overlapping ones.
fn merge(mut spans: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
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

fn overlaps(a: (usize, usize), b: (usize, usize)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

/// Whether `phrase` occurs in `text` exactly as written, as whole words.
fn occurs_verbatim(text: &str, phrase: &str) -> bool {
    text::find_word_occurrences(text, phrase)
        .iter()
        .any(|&(s, e)| &text[s..e] == phrase)
}

fn json_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// The items of the build, grouped once per build ([`super::Corpus::recall`]): for the record mode the distinct
/// values of each kind, for the text mode per domain the terms with their sentences and a
/// vocabulary. Source order, so offline draws are deterministic.
#[derive(Debug, Default)]
pub(crate) struct Pools {
    by_kind: BTreeMap<String, Vec<String>>,
    /// Domain -> (item id, term, sentences).
    terms: BTreeMap<String, Vec<(String, String, Vec<String>)>>,
    /// Domain -> content words of its sentences.
    words: BTreeMap<String, Vec<String>>,
}

impl Pools {
    pub(crate) fn of(peers: &[super::Peer]) -> Self {
        let mut p = Pools::default();
        let mut seen_values = HashSet::new();
        let mut seen_words = HashSet::new();
        for peer in peers {
            let items: Vec<KvItem> = crate::item::parse_field(&peer.fields, "kv");
            for i in items.into_iter().filter(|i| !is_fixed(&i.kind)) {
                if seen_values.insert((i.kind.clone(), text::normalize(&i.value))) {
                    p.by_kind.entry(i.kind).or_default().push(i.value);
                }
            }
            let term = peer.fields.get("term").and_then(Value::as_str);
            let sentences = peer.fields.get("sentences").and_then(Value::as_array);
            if let (Some(term), Some(sentences)) = (term, sentences) {
                let domain = peer
                    .fields
                    .get("domain")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                let sentences: Vec<String> = sentences
                    .iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect();
                for s in &sentences {
                    for w in content_words(s) {
                        if seen_words.insert((domain.clone(), w.to_lowercase())) {
                            p.words
                                .entry(domain.clone())
                                .or_default()
                                .push(w.to_owned());
                        }
                    }
                }
                p.terms.entry(domain).or_default().push((
                    peer.id.clone(),
                    term.to_owned(),
                    sentences,
                ));
            }
        }
        p
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
fn content_words(s: &str) -> impl Iterator<Item = &str> {
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

fn opposite(word: &str) -> Option<String> {
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
        crate::source::ucfirst(found)
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
fn offline_word(word: &str, vocab: &[String], avoid: &str, rng: &mut impl Rng) -> Option<String> {
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
        crate::source::ucfirst(&lower)
    } else {
        lower
    })
}

// ---------------------------------------------------------------------------------------
// Step 1: paraphrase

/// Step 1. Record mode: the record as one natural paragraph, which must state every value
/// but the description (the description is prose that the paragraph may reword; dates may
/// be written in any usual form). Text mode: the sentences condensed into one short
/// paragraph with no repeated information, which must name the term and be shorter than the
/// sentences put together.
///
/// Offline rule. Record: the description, then one templated sentence per item ("It began
/// on 30 May 1431.", "It took place in Rouen.", "Its participant was Pierre Cauchon.").
/// Text: the sentences in order, leaving out each one whose words mostly repeat an earlier
/// one (and, when none does, the one that overlaps the others most).
#[derive(Debug)]
pub struct Paraphrase {
    pub model: ModelStep,
    mode: Mode,
}

impl Paraphrase {
    pub fn new(spec: &StepSpec, prompts: &Files) -> Result<Self, EngineError> {
        let (mode, model) = Mode::with_model(spec, prompts, "paraphrase", 400)?;
        Ok(Self { model, mode })
    }

    pub async fn run(&self, item: &mut Item, ctx: &StepCtx<'_>) -> Result<(), StepFailure> {
        let paragraph = match self.mode {
            Mode::Record => {
                let record = kv(item);
                if record.is_empty() {
                    return Err(StepFailure::reject("no_record", "the item has no `kv`"));
                }
                let a = self.model.ask(
                    item,
                    "",
                    [("record_lines", record_lines(&record))],
                    offline_record_paragraph(&record),
                );
                ask(ctx, item, a, |raw| validate_record_paragraph(raw, &record)).await?
            }
            Mode::Text => {
                let term = item.text("term").to_owned();
                let sentences = item.texts("sentences");
                let offline = offline_condense(&term, &sentences);
                let a = self.model.ask(item, "", [], offline);
                ask(ctx, item, a, |raw| {
                    validate_text_paragraph(raw, &term, &sentences)
                })
                .await?
            }
        };
        item.set("paragraph", paragraph);
        Ok(())
    }
}

fn validate_record_paragraph(raw: &str, record: &[KvItem]) -> Result<String, String> {
    let p = clean_text_answer(raw);
    if p.is_empty() {
        return Err("empty: the paragraph is empty".into());
    }
    if text::looks_like_refusal(&p) {
        return Err("refusal: the answer declines the task".into());
    }
    let missing: Vec<String> = record
        .iter()
        .filter(|i| i.kind != "description" && mentions(&p, &i.value, &i.kind).is_empty())
        .map(|i| format!("{} ({})", i.value, i.key))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "missing_values: the paragraph must state every value; missing: {}",
            missing.join("; ")
        ));
    }
    Ok(p)
}

fn validate_text_paragraph(raw: &str, term: &str, sentences: &[String]) -> Result<String, String> {
    let p = clean_text_answer(raw);
    if p.is_empty() {
        return Err("empty: the paragraph is empty".into());
    }
    if text::looks_like_refusal(&p) {
        return Err("refusal: the answer declines the task".into());
    }
    if text::find_word_occurrences(&p, term).is_empty() {
        return Err(format!("no_term: the paragraph must name \"{term}\""));
    }
    let joined = sentences.join(" ");
    if p.chars().count() >= joined.chars().count() {
        return Err(format!(
            "too_long: the paragraph ({} characters) must be shorter than the sentences together ({})",
            p.chars().count(),
            joined.chars().count()
        ));
    }
    Ok(p)
}

/// "on 30 May 1431" for a day, "in May 1431" / "in 1431" / "in the 1430s" otherwise.
fn date_phrase(value: &str) -> String {
    match date::parse_rendered(value).map(|d| d.granularity) {
        Some(date::Granularity::Day) => format!("on {value}"),
        Some(date::Granularity::Decade | date::Granularity::Century) => format!("in the {value}"),
        _ => format!("in {value}"),
    }
}

/// The key without the " 2", " 3" that makes repeated keys unique.
fn base_key(key: &str) -> &str {
    match key.rsplit_once(' ') {
        Some((base, n)) if n.chars().all(|c| c.is_ascii_digit()) => base,
        _ => key,
    }
}

pub fn offline_record_paragraph(record: &[KvItem]) -> String {
    let name = record
        .iter()
        .find(|i| i.kind == "name")
        .map_or("The event", |i| i.value.as_str());
    let mut out: Vec<String> = Vec::new();
    match record.iter().find(|i| i.kind == "description") {
        Some(d) => out.push(format!(
            "{name}: {}",
            d.value.trim_end_matches('.').to_owned() + "."
        )),
        None => out.push(format!("This is about {name}.")),
    }
    for i in record.iter().filter(|i| !is_fixed(&i.kind)) {
        let v = &i.value;
        let s = match (base_key(&i.key), i.kind.as_str()) {
            ("begin time", _) => format!("It began {}.", date_phrase(v)),
            ("end time", _) => format!("It ended {}.", date_phrase(v)),
            (_, "date") => format!("Its {} was {}.", i.key, v),
            ("location", _) => format!("It took place in {v}."),
            ("part of", _) => format!("It was part of {v}."),
            ("previous event", _) => format!("It came after {v}."),
            ("next event", _) => format!("It was followed by {v}."),
            (k, _) if k.ends_with(" of") => format!("It was the {k} {v}."),
            (k, _) => format!("Its {k} was {v}."),
        };
        out.push(s);
    }
    out.join(" ")
}

/// Share of `a`'s word types that `b` also has.
fn overlap(a: &str, b: &str) -> f64 {
    let ta: HashSet<String> = text::tokens(a).into_iter().collect();
    let tb: HashSet<String> = text::tokens(b).into_iter().collect();
    if ta.is_empty() {
        return 1.0;
    }
    ta.intersection(&tb).count() as f64 / ta.len() as f64
}

pub fn offline_condense(term: &str, sentences: &[String]) -> String {
    let mut kept: Vec<&String> = Vec::new();
    for s in sentences {
        if kept.iter().all(|k| overlap(s, k) < 0.6) {
            kept.push(s);
        }
    }
    if kept.len() == sentences.len() && kept.len() > 1 {
        // Nothing was repeated outright: leave out the sentence that shares most with the
        // others (never the first, which usually introduces the term).
        let worst = (1..kept.len())
            .max_by(|&a, &b| {
                let score = |i: usize| {
                    kept.iter()
                        .enumerate()
                        .filter(|(j, _)| *j != i)
                        .map(|(_, o)| overlap(kept[i], o))
                        .sum::<f64>()
                };
                score(a).total_cmp(&score(b)).then(b.cmp(&a))
            })
            .expect("at least two sentences");
        kept.remove(worst);
    }
    let mut p = kept.iter().map(|s| s.trim()).collect::<Vec<_>>().join(" ");
    if text::find_word_occurrences(&p, term).is_empty() {
        p = format!("{}: {p}", crate::source::ucfirst(term));
    }
    p
}

// ---------------------------------------------------------------------------------------
// Step 2: question generation

/// Step 2. Record mode: a question whose answer is exactly one item's value, never the
/// name or the description; the model says which item (`key`), the question and the
/// answer. Validated: the key is an item of the record (or the answer matches one value),
/// the answer equals that value (a date in any writing), the paragraph states it and the
/// question does not. The stored `answer` is the value as the paragraph writes it.
///
/// Text mode: a question whose answer is a phrase copied verbatim from the paragraph (at
/// most 12 words, not the term itself, not stated by the question).
///
/// Offline rule. Record: a seeded item among those the paragraph states (items whose key
/// is not repeated first), asked with a template per key ("When did X begin?", "Where did X
/// take place?", "Who was the commander of X?"). Text: a fill-in-the-blank question: a
/// seeded run of two to four words of a seeded sentence is blanked out and is the answer.
#[derive(Debug)]
pub struct Qa {
    pub model: ModelStep,
    mode: Mode,
}

impl Qa {
    pub fn new(spec: &StepSpec, prompts: &Files) -> Result<Self, EngineError> {
        let (mode, model) = Mode::with_model(spec, prompts, "qa", 200)?;
        Ok(Self { model, mode })
    }

    pub async fn run(&self, item: &mut Item, ctx: &StepCtx<'_>) -> Result<(), StepFailure> {
        let paragraph = item.text("paragraph").to_owned();
        let mut rng = item_rng(ctx.seed, ctx.recipe, &item.id, "qa");
        match self.mode {
            Mode::Record => {
                let record = kv(item);
                let name = record
                    .iter()
                    .find(|i| i.kind == "name")
                    .map(|i| i.value.clone())
                    .unwrap_or_default();
                let offline = offline_record_question(&record, &name, &paragraph, &mut rng);
                let a =
                    self.model
                        .ask(item, "", [("record_lines", record_lines(&record))], offline);
                let (q, surface, it) = ask(ctx, item, a, |raw| {
                    validate_record_qa(raw, &record, &paragraph)
                })
                .await?;
                item.set("question", q);
                item.set("answer", surface);
                item.set("answer_value", it.value);
                item.set("answer_key", it.key);
                item.set("answer_kind", it.kind);
            }
            Mode::Text => {
                let term = item.text("term").to_owned();
                let offline = offline_cloze(&term, &paragraph, &mut rng);
                let a = self.model.ask(item, "", [], offline);
                let (q, answer) =
                    ask(ctx, item, a, |raw| validate_text_qa(raw, &term, &paragraph)).await?;
                item.set("question", q);
                item.set("answer", answer.clone());
                item.set("answer_value", answer);
                item.set("answer_key", "");
                item.set("answer_kind", "phrase");
            }
        }
        Ok(())
    }
}

fn question_of(v: &Value) -> Result<String, String> {
    let q = json_field(v, "question").ok_or("bad_json: no \"question\"")?;
    if !q.ends_with('?') {
        return Err(format!("bad_question: \"{q}\" is not a question"));
    }
    Ok(q.to_owned())
}

fn validate_record_qa(
    raw: &str,
    record: &[KvItem],
    paragraph: &str,
) -> Result<(String, String, KvItem), String> {
    let v = extract_json(raw).ok_or("bad_json: the answer holds no JSON object")?;
    let question = question_of(&v)?;
    let answer = json_field(&v, "answer").ok_or("bad_json: no \"answer\"")?;
    let same = |i: &KvItem| {
        text::normalize(&i.value) == text::normalize(answer)
            || mentions(answer, &i.value, &i.kind)
                .iter()
                .any(|&(s, e)| answer[s..e].trim() == answer)
    };
    let item = match json_field(&v, "key") {
        // A repeated key ("location", "location 2"): the one whose value is the answer.
        Some(k) => record
            .iter()
            .filter(|i| i.key.eq_ignore_ascii_case(k) || base_key(&i.key).eq_ignore_ascii_case(k))
            .min_by_key(|i| (!same(i), !i.key.eq_ignore_ascii_case(k)))
            .ok_or_else(|| format!("bad_key: the record has no item \"{k}\""))?,
        None => record
            .iter()
            .find(|i| same(i))
            .ok_or_else(|| format!("bad_answer: \"{answer}\" is not a value of the record"))?,
    };
    if is_fixed(&item.kind) {
        return Err(format!(
            "bad_answer: the answer must not be the event's {}",
            item.kind
        ));
    }
    if let Some(name) = record.iter().find(|i| i.kind == "name") {
        if states(&name.value, &item.value, &item.kind) {
            return Err(format!(
                "bad_answer: \"{}\" is part of the event's name; ask about another item",
                item.value
            ));
        }
    }
    if !same(item) {
        return Err(format!(
            "bad_answer: \"{answer}\" is not the value of \"{}\" ({})",
            item.key, item.value
        ));
    }
    let spans = mentions(paragraph, &item.value, &item.kind);
    let &(s, e) = spans
        .first()
        .ok_or_else(|| format!("not_in_paragraph: the paragraph does not state \"{answer}\""))?;
    if !mentions(&question, &item.value, &item.kind).is_empty() {
        return Err("answer_in_question: the question states its own answer".into());
    }
    Ok((question, paragraph[s..e].to_owned(), item.clone()))
}

fn validate_text_qa(raw: &str, term: &str, paragraph: &str) -> Result<(String, String), String> {
    let v = extract_json(raw).ok_or("bad_json: the answer holds no JSON object")?;
    let question = question_of(&v)?;
    let answer = json_field(&v, "answer")
        .ok_or("bad_json: no \"answer\"")?
        .trim_end_matches(['.', ',', ';'])
        .to_owned();
    if answer.split_whitespace().count() > 12 {
        return Err("too_long: the answer must be a short phrase (at most 12 words)".into());
    }
    if text::contains_phrase(term, &answer) {
        return Err("bad_answer: the answer must not be the term or part of it".into());
    }
    if !occurs_verbatim(paragraph, &answer) {
        return Err(format!(
            "not_verbatim: \"{answer}\" is not copied word for word from the paragraph"
        ));
    }
    if text::contains_phrase(&question, &answer) {
        return Err("answer_in_question: the question states its own answer".into());
    }
    Ok((question, answer))
}

fn record_question(item: &KvItem, name: &str) -> String {
    let key = base_key(&item.key);
    match (key, item.kind.as_str()) {
        ("begin time", _) => format!("When did {name} begin?"),
        ("end time", _) => format!("When did {name} end?"),
        (_, "date") => format!("What was the {key} of {name}?"),
        ("location", _) => format!("Where did {name} take place?"),
        ("part of", _) => format!("Which larger event was {name} part of?"),
        ("previous event", _) => format!("Which event came just before {name}?"),
        ("next event", _) => format!("Which event came just after {name}?"),
        (k, _) if k.ends_with(" of") => {
            format!("{name} was the {k} what?").replace(" of what?", " of whom or what?")
        }
        (_, "actor") => format!("Who was the {key} of {name}?"),
        _ => format!("What was the {key} of {name}?"),
    }
}

pub fn offline_record_question(
    record: &[KvItem],
    name: &str,
    paragraph: &str,
    rng: &mut impl Rng,
) -> String {
    let stated: Vec<&KvItem> = record
        .iter()
        .filter(|i| {
            !is_fixed(&i.kind)
                && !mentions(paragraph, &i.value, &i.kind).is_empty()
                && mentions(name, &i.value, &i.kind).is_empty()
        })
        .collect();
    let unique: Vec<&KvItem> = stated
        .iter()
        .copied()
        .filter(|i| {
            stated
                .iter()
                .filter(|j| base_key(&j.key) == base_key(&i.key))
                .count()
                == 1
        })
        .collect();
    let pool = if unique.is_empty() { &stated } else { &unique };
    match pool.choose(rng) {
        Some(i) => json!({"key": i.key, "question": record_question(i, name), "answer": i.value})
            .to_string(),
        None => String::new(),
    }
}

pub fn offline_cloze(term: &str, paragraph: &str, rng: &mut impl Rng) -> String {
    let sentences = split_sentences(paragraph);
    let mut order: Vec<usize> = (0..sentences.len()).collect();
    order.shuffle(rng);
    for si in order {
        let (s0, s1) = sentences[si];
        let sentence = &paragraph[s0..s1];
        // Word spans of the sentence, trailing punctuation left out.
        let words: Vec<(usize, usize)> = word_spans(sentence);
        let mut runs = Vec::new();
        for len in [3usize, 2, 4] {
            for start in 1..words.len().saturating_sub(len) {
                let (a, b) = (words[start].0, words[start + len - 1].1);
                let phrase = &sentence[a..b];
                let ok = phrase
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == ' ' || c == '-')
                    && !text::contains_phrase(phrase, term)
                    && !text::contains_phrase(term, phrase)
                    && content_words(phrase).next().is_some();
                if ok {
                    runs.push((a, b));
                }
            }
            if !runs.is_empty() {
                break;
            }
        }
        if let Some(&(a, b)) = runs.choose(rng) {
            let blanked = format!("{}____{}", &sentence[..a], &sentence[b..]);
            let q = format!(
                "According to the description of {term}, which words fill the blank in: \"{}\"?",
                blanked.trim()
            );
            return json!({"question": q, "answer": &sentence[a..b]}).to_string();
        }
    }
    String::new()
}

/// Byte spans of the sentences of `text` (split after `.`, `!` or `?` followed by a space).
pub fn split_sentences(text: &str) -> Vec<(usize, usize)> {
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

/// Byte spans of the whitespace-separated words of `s`, without surrounding punctuation.
fn word_spans(s: &str) -> Vec<(usize, usize)> {
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

// ---------------------------------------------------------------------------------------
// Step 3: answer edit

/// Step 3. The model proposes the counterfactual answer (`{"edited_answer": ...}`); the
/// engine replaces every mention of the answer in the paragraph by it (QA-A edited context)
/// and, in record mode, the item's value in the record (the edited record of text
/// generation). Also writes the two options (answer and edited answer, seeded order,
/// purpose `options`) and the letter of the right one.
///
/// Validated: not empty, different from the answer, not already in the paragraph; record
/// mode: of the answer's kind (a date for a date, not a date otherwise); text mode: at most
/// twice as many words as the answer, plus three.
///
/// Offline rule. Record: a seeded value of the same kind from the other items of the build
/// (for a date, one with the same granularity first) that the paragraph does not mention.
/// Text: one word of the answer changed: its opposite from a small list when it has one,
/// else a word of the same domain's vocabulary.
#[derive(Debug)]
pub struct AnswerEdit {
    pub model: ModelStep,
    mode: Mode,
}

impl AnswerEdit {
    pub fn new(spec: &StepSpec, prompts: &Files) -> Result<Self, EngineError> {
        let (mode, model) = Mode::with_model(spec, prompts, "edit_answer", 100)?;
        Ok(Self { model, mode })
    }

    fn offline(&self, item: &Item, ctx: &StepCtx<'_>, paragraph: &str) -> String {
        let pools = ctx.corpus.recall();
        let answer = item.text("answer");
        let mut rng = item_rng(ctx.seed, ctx.recipe, &item.id, "answer_edit");
        let edited = match self.mode {
            Mode::Record => {
                let kind = item.text("answer_kind");
                let value = item.text("answer_value");
                let granularity = date::parse_rendered(value).map(|d| d.granularity);
                let candidates: Vec<&String> = pools
                    .by_kind
                    .get(kind)
                    .map(|v| v.iter().collect())
                    .unwrap_or_default();
                let fits = |c: &&String| {
                    text::normalize(c) != text::normalize(value)
                        && text::find_word_occurrences(paragraph, c).is_empty()
                        && !text::contains_phrase(c, item.text("answer"))
                };
                let same_grain: Vec<&String> = candidates
                    .iter()
                    .copied()
                    .filter(|c| fits(c))
                    .filter(|c| date::parse_rendered(c).map(|d| d.granularity) == granularity)
                    .collect();
                let any: Vec<&String> = candidates.iter().copied().filter(|c| fits(c)).collect();
                let pick = if same_grain.is_empty() {
                    any
                } else {
                    same_grain
                };
                pick.choose(&mut rng).map(|s| (*s).clone())
            }
            Mode::Text => {
                let domain = item.text("domain");
                let vocab = pools.words.get(domain).map_or(&[][..], Vec::as_slice);
                let spans = word_spans(answer);
                let mut order: Vec<usize> = (0..spans.len()).collect();
                order.shuffle(&mut rng);
                // Opposites first, then the longest word.
                order.sort_by_key(|&i| {
                    let w = &answer[spans[i].0..spans[i].1];
                    (opposite(w).is_none(), std::cmp::Reverse(w.len()))
                });
                order.iter().find_map(|&i| {
                    let (s, e) = spans[i];
                    let w = &answer[s..e];
                    if w.chars().count() < 4 && opposite(w).is_none() {
                        return None;
                    }
                    let new = offline_word(w, vocab, paragraph, &mut rng)?;
                    Some(format!("{}{new}{}", &answer[..s], &answer[e..]))
                })
            }
        };
        edited.map_or_else(String::new, |e| json!({ "edited_answer": e }).to_string())
    }

    fn validate(&self, raw: &str, item: &Item, paragraph: &str) -> Result<String, String> {
        let v = extract_json(raw).ok_or("bad_json: the answer holds no JSON object")?;
        let edited = json_field(&v, "edited_answer").ok_or("bad_json: no \"edited_answer\"")?;
        let answer = item.text("answer");
        let value = item.text("answer_value");
        if text::looks_like_refusal(edited) {
            return Err("refusal: the answer declines the task".into());
        }
        let kind = item.text("answer_kind");
        if [answer, value]
            .iter()
            .any(|a| text::normalize(a) == text::normalize(edited))
            || states(edited, value, kind)
        {
            return Err(
                "unchanged: the edited answer must differ from the answer (in any writing)".into(),
            );
        }
        if !text::find_word_occurrences(paragraph, edited).is_empty() {
            return Err(format!(
                "already_in_context: \"{edited}\" already occurs in the paragraph"
            ));
        }
        if text::contains_phrase(edited, answer) {
            return Err(format!(
                "contains_answer: \"{edited}\" still contains the answer \"{answer}\""
            ));
        }
        match self.mode {
            Mode::Record => {
                let is_date = kind == "date";
                // A date must read as one; another kind must not be a bare date (a name with
                // a year in it, "Revolutions of 1989", is fine).
                let wrong = is_date != date::parse_loose(edited).is_some();
                if wrong {
                    return Err(format!(
                        "wrong_kind: the edited answer must be {} like the answer",
                        if is_date {
                            "a date"
                        } else {
                            "a value of the same kind, not a date,"
                        }
                    ));
                }
            }
            Mode::Text => {
                let (n, m) = (
                    answer.split_whitespace().count(),
                    edited.split_whitespace().count(),
                );
                if m > 2 * n + 3 {
                    return Err(format!(
                        "too_long: {m} words for an answer of {n}: change words, do not add a sentence"
                    ));
                }
            }
        }
        Ok(edited.to_owned())
    }

    pub async fn run(&self, item: &mut Item, ctx: &StepCtx<'_>) -> Result<(), StepFailure> {
        let paragraph = item.text("paragraph").to_owned();
        let offline = self.offline(item, ctx, &paragraph);
        let answer = item.text("answer").to_owned();
        let a = self.model.ask(
            item,
            &answer,
            [("answer_kind", json!(item.text("answer_kind")))],
            offline,
        );
        let seen = item.clone();
        let edited = ask(ctx, item, a, |raw| self.validate(raw, &seen, &paragraph)).await?;
        let spans = answer_spans(item, &paragraph);
        if spans.is_empty() {
            return Err(StepFailure::reject(
                "answer_not_in_paragraph",
                "the answer no longer occurs in the paragraph",
            ));
        }
        let reps: Vec<(usize, usize, String)> =
            spans.iter().map(|&(s, e)| (s, e, edited.clone())).collect();
        let (context, edits) = apply_replacements(&paragraph, &reps)
            .map_err(|m| StepFailure::reject("bad_replacements", m))?;
        if !answer_spans(item, &context).is_empty() {
            return Err(StepFailure::reject(
                "answer_not_replaced",
                format!("the edited context still states \"{answer}\""),
            ));
        }
        if self.mode == Mode::Record {
            let key = item.text("answer_key").to_owned();
            let record: Vec<KvItem> = kv(item)
                .into_iter()
                .map(|mut i| {
                    if i.key == key {
                        i.value = edited.clone();
                    }
                    i
                })
                .collect();
            item.set("edited_kv", json!(record));
        }
        let mut options = vec![answer.clone(), edited.clone()];
        options.shuffle(&mut item_rng(ctx.seed, ctx.recipe, &item.id, "options"));
        let right = options.iter().position(|o| *o == answer).unwrap_or(0);
        item.set("options", json!(options));
        item.set("answer_option", letter(right));
        item.set("edited_answer", edited);
        item.set("qa_a_context", context);
        item.set("qa_a_edits", json!(edits));
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Step 4: non-answer edit

/// Step 4, word-grained. The model lists replacements (`{"replacements": [{"original",
/// "edited"}]}`) for text outside the answer (record mode: people, places and dates; text
/// mode: words or short phrases); the engine replaces every whole-word mention of each
/// original (QA-NA edited context).
///
/// Validated: one to `max_replacements` replacements, each original in the paragraph and
/// different from its edit; no original may touch a mention of the answer (reason
/// `answer_modified`: the paper discards such samples), the event's name or the term
/// (`name_modified`), nor may an edit bring in the answer or the edited answer; the answer
/// still occurs verbatim afterwards.
///
/// Offline rule. Record: up to two items of kind date, place or actor that the paragraph
/// states outside the answer, each replaced by a seeded value of the same kind from the
/// other items. Text: up to two content words outside the answer and the term, each
/// replaced by its opposite or a word of the domain's vocabulary.
#[derive(Debug)]
pub struct NonAnswerEdit {
    pub model: ModelStep,
    mode: Mode,
    max_replacements: usize,
}

impl NonAnswerEdit {
    pub fn new(spec: &StepSpec, prompts: &Files) -> Result<Self, EngineError> {
        let (mode, model) = Mode::with_model(spec, prompts, "edit_nonanswer", 300)?;
        Ok(Self {
            model,
            mode,
            max_replacements: spec
                .params
                .get("max_replacements")
                .and_then(toml::Value::as_integer)
                .map_or(4, |x| x.max(1) as usize),
        })
    }

    /// The name (record) or term (text) of the item: never edited.
    fn subject(&self, item: &Item) -> String {
        match self.mode {
            Mode::Record => kv(item)
                .into_iter()
                .find(|i| i.kind == "name")
                .map(|i| i.value)
                .unwrap_or_default(),
            Mode::Text => item.text("term").to_owned(),
        }
    }

    fn offline(&self, item: &Item, ctx: &StepCtx<'_>, paragraph: &str) -> String {
        let pools = ctx.corpus.recall();
        let mut rng = item_rng(ctx.seed, ctx.recipe, &item.id, "nonanswer_edit");
        let protected = self.protected(item, paragraph);
        let free = |spans: &[(usize, usize)]| {
            !spans.is_empty()
                && spans
                    .iter()
                    .all(|s| protected.iter().all(|p| !overlaps(*s, *p)))
        };
        let avoid = format!("{paragraph} {}", item.text("edited_answer"));
        let mut reps: Vec<Value> = Vec::new();
        match self.mode {
            Mode::Record => {
                let mut items: Vec<KvItem> = kv(item)
                    .into_iter()
                    .filter(|i| {
                        matches!(i.kind.as_str(), "date" | "place" | "actor")
                            && i.key != item.text("answer_key")
                    })
                    .collect();
                items.shuffle(&mut rng);
                let mut used: Vec<(usize, usize)> = Vec::new();
                for i in items {
                    let spans = mentions(paragraph, &i.value, &i.kind);
                    if reps.len() == 2
                        || !free(&spans)
                        || spans.iter().any(|s| used.iter().any(|u| overlaps(*s, *u)))
                    {
                        continue;
                    }
                    used.extend(&spans);
                    let pool = pools.by_kind.get(&i.kind).map_or(&[][..], Vec::as_slice);
                    let fits: Vec<&String> = pool
                        .iter()
                        .filter(|c| {
                            text::normalize(c) != text::normalize(&i.value)
                                && text::find_word_occurrences(&avoid, c).is_empty()
                                && [item.text("answer_value"), item.text("edited_answer")]
                                    .iter()
                                    .all(|a| !states(c, a, item.text("answer_kind")))
                        })
                        .collect();
                    if let Some(new) = fits.choose(&mut rng) {
                        let (s, e) = spans[0];
                        reps.push(json!({"original": &paragraph[s..e], "edited": new}));
                    }
                }
            }
            Mode::Text => {
                let vocab = pools
                    .words
                    .get(item.text("domain"))
                    .map_or(&[][..], Vec::as_slice);
                let mut words: Vec<(usize, usize)> = word_spans(paragraph)
                    .into_iter()
                    .filter(|&(s, e)| {
                        let w = &paragraph[s..e];
                        content_words(w).next() == Some(w)
                            && free(&text::find_word_occurrences(paragraph, w))
                    })
                    .collect();
                words.shuffle(&mut rng);
                let mut used = HashSet::new();
                for (s, e) in words {
                    let w = &paragraph[s..e];
                    if reps.len() == 2 || !used.insert(w.to_lowercase()) {
                        continue;
                    }
                    if let Some(new) = offline_word(w, vocab, &avoid, &mut rng) {
                        reps.push(json!({"original": w, "edited": new}));
                    }
                }
            }
        }
        json!({ "replacements": reps }).to_string()
    }

    /// Spans that no replacement may touch: the answer's mentions and the name or term.
    fn protected(&self, item: &Item, paragraph: &str) -> Vec<(usize, usize)> {
        let mut p = answer_spans(item, paragraph);
        p.extend(text::find_word_occurrences(paragraph, &self.subject(item)));
        p
    }

    fn validate(&self, raw: &str, item: &Item, paragraph: &str) -> Result<Vec<Edit>, String> {
        let v = extract_json(raw).ok_or("bad_json: the answer holds no JSON object")?;
        let list = v
            .get("replacements")
            .and_then(Value::as_array)
            .ok_or(r#"bad_json: expected {"replacements": [{"original": .., "edited": ..}]}"#)?;
        if list.is_empty() || list.len() > self.max_replacements {
            return Err(format!(
                "bad_replacements: expected 1 to {} replacements, got {}",
                self.max_replacements,
                list.len()
            ));
        }
        let answer_mentions = answer_spans(item, paragraph);
        let subject = self.subject(item);
        let subject_mentions = text::find_word_occurrences(paragraph, &subject);
        let answer = item.text("answer");
        let edited_answer = item.text("edited_answer");
        let mut reps = Vec::new();
        for r in list {
            let (Some(orig), Some(new)) = (json_field(r, "original"), json_field(r, "edited"))
            else {
                return Err("bad_json: every replacement needs \"original\" and \"edited\"".into());
            };
            if text::normalize(orig) == text::normalize(new) {
                return Err(format!("unchanged: \"{orig}\" is replaced by itself"));
            }
            let spans = text::find_word_occurrences(paragraph, orig);
            if spans.is_empty() {
                return Err(format!(
                    "not_in_paragraph: \"{orig}\" does not occur in the paragraph"
                ));
            }
            for s in &spans {
                if answer_mentions.iter().any(|a| overlaps(*s, *a)) {
                    return Err(format!(
                        "answer_modified: \"{orig}\" is part of the answer \"{answer}\""
                    ));
                }
                if subject_mentions.iter().any(|a| overlaps(*s, *a)) {
                    return Err(format!(
                        "name_modified: \"{orig}\" is part of \"{subject}\", which must stay"
                    ));
                }
            }
            let kind = item.text("answer_kind");
            for a in [item.text("answer_value"), answer, edited_answer] {
                if text::contains_phrase(new, a) || states(new, a, kind) {
                    return Err(format!(
                        "answer_modified: the edit \"{new}\" brings in \"{a}\""
                    ));
                }
            }
            for (s, e) in spans {
                // The same text listed twice (a date that is both begin and end) is one
                // replacement; two different edits of it are not.
                match reps
                    .iter()
                    .find(|r: &&(usize, usize, String)| (r.0, r.1) == (s, e))
                {
                    Some(r) if text::normalize(&r.2) == text::normalize(new) => {}
                    Some(_) => {
                        return Err(format!(
                            "bad_replacements: \"{orig}\" is given two different replacements"
                        ))
                    }
                    None => reps.push((s, e, new.to_owned())),
                }
            }
        }
        let (context, edits) =
            apply_replacements(paragraph, &reps).map_err(|m| format!("bad_replacements: {m}"))?;
        if !occurs_verbatim(&context, answer) {
            return Err(format!(
                "answer_modified: the answer \"{answer}\" no longer occurs verbatim"
            ));
        }
        Ok(edits)
    }

    /// Record mode: whether the paragraph states a person, place or date of the record, other
    /// than the answer, whose every mention lies outside the answer and the name (an edit
    /// replaces every mention of its original). Without one there is nothing the paper's
    /// edit could change, and no call is made.
    fn has_editable(&self, item: &Item, paragraph: &str) -> bool {
        let protected = self.protected(item, paragraph);
        kv(item).iter().any(|i| {
            let spans = mentions(paragraph, &i.value, &i.kind);
            matches!(i.kind.as_str(), "date" | "place" | "actor")
                && i.key != item.text("answer_key")
                && !spans.is_empty()
                && spans
                    .iter()
                    .all(|s| protected.iter().all(|p| !overlaps(*s, *p)))
        })
    }

    pub async fn run(&self, item: &mut Item, ctx: &StepCtx<'_>) -> Result<(), StepFailure> {
        let paragraph = item.text("paragraph").to_owned();
        if self.mode == Mode::Record && !self.has_editable(item, &paragraph) {
            return Err(StepFailure::reject(
                "nothing_to_edit",
                "no person, place or date of the record is stated outside the answer and the name",
            ));
        }
        let offline = self.offline(item, ctx, &paragraph);
        let answer = item.text("answer").to_owned();
        let subject = self.subject(item);
        let a = self
            .model
            .ask(item, &answer, [("subject", json!(subject))], offline);
        let seen = item.clone();
        let edits = ask(ctx, item, a, |raw| self.validate(raw, &seen, &paragraph)).await?;
        let reps = to_replacements(&paragraph, &edits);
        let (context, _) = apply_replacements(&paragraph, &reps)
            .map_err(|m| StepFailure::reject("bad_replacements", m))?;
        if self.mode == Mode::Text {
            // Text generation's edited source carries the answer edit and these edits.
            let answer_edits: Vec<Edit> = item.parsed("qa_a_edits");
            let mut all = to_replacements(&paragraph, &answer_edits);
            all.extend(reps);
            let (edited, tg_edits) = apply_replacements(&paragraph, &all)
                .map_err(|m| StepFailure::reject("overlapping_edits", m))?;
            item.set("tg_edited_source", edited);
            item.set("tg_edits", json!(tg_edits));
        }
        item.set("qa_na_context", context);
        item.set("qa_na_edits", json!(edits));
        Ok(())
    }
}

/// Turns recorded edits of `text` back into byte-span replacements of it.
pub fn to_replacements(text: &str, edits: &[Edit]) -> Vec<(usize, usize, String)> {
    let byte = |c: usize| text.char_indices().nth(c).map_or(text.len(), |(b, _)| b);
    edits
        .iter()
        .map(|e| {
            (
                byte(e.original_span[0]),
                byte(e.original_span[1]),
                e.edited.clone(),
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Step 4, sentence-grained (UJ): a rule, no model

/// Step 4, sentence-grained (text mode only; no model, as in the paper where it was done
/// by hand): a sentence about another term B of the same domain, with B's name replaced by
/// this term A, is inserted between two sentences of the paragraph. B is a seeded pick
/// among the domain's other terms that have a sentence naming B and not A (terms that
/// contain one another are skipped, so that the inserted sentence cannot still name B);
/// the sentence and the place are seeded too. Writes `qa_na_sentence_context` and
/// `qa_na_sentence_edits` (one insertion). Rejects with `no_donor_sentence` when the domain
/// has no such sentence.
#[derive(Debug)]
pub struct InsertSentence {
    pub name: String,
}

impl InsertSentence {
    pub fn new(spec: &StepSpec) -> Self {
        Self {
            name: spec.name().to_owned(),
        }
    }

    pub fn run(&self, item: &mut Item, ctx: &StepCtx<'_>) -> Result<(), StepFailure> {
        let pools = ctx.corpus.recall();
        let term = item.text("term").to_owned();
        let answer = item.text("answer").to_owned();
        let paragraph = item.text("paragraph").to_owned();
        let mut rng = item_rng(ctx.seed, ctx.recipe, &item.id, "insert_sentence");
        let mut donors: Vec<&(String, String, Vec<String>)> = pools
            .terms
            .get(item.text("domain"))
            .map(|v| v.iter().filter(|(id, _, _)| *id != item.id).collect())
            .unwrap_or_default();
        donors.shuffle(&mut rng);
        for (_, b, sentences) in donors {
            if text::contains_phrase(b, &term) || text::contains_phrase(&term, b) {
                continue;
            }
            let usable: Vec<&String> = sentences
                .iter()
                .filter(|s| {
                    !text::find_word_occurrences(s, b).is_empty()
                        && text::find_word_occurrences(s, &term).is_empty()
                })
                .collect();
            let Some(sentence) = usable.choose(&mut rng) else {
                continue;
            };
            let (mut moved, _) = text::replace_words(sentence.trim(), b, &term);
            if sentence.trim().starts_with(|c: char| c.is_uppercase()) {
                moved = crate::source::ucfirst(&moved);
            }
            // The renamed sentence must be about this term only, and must not state the
            // answer or the counterfactual option (renaming can create either).
            let edited_answer = item.text("edited_answer");
            if text::find_word_occurrences(&moved, &term).is_empty()
                || !text::find_word_occurrences(&moved, b).is_empty()
                || text::contains_phrase(&moved, &answer)
                || (!edited_answer.is_empty() && text::contains_phrase(&moved, edited_answer))
            {
                continue;
            }
            // Insertion points: before the first sentence, between two, after the last.
            let bounds = split_sentences(&paragraph);
            let mut points: Vec<usize> = bounds.iter().map(|&(s, _)| s).collect();
            points.push(paragraph.len());
            let at = *points.choose(&mut rng).expect("at least one point");
            let insert = if at == paragraph.len() {
                format!(" {moved}")
            } else {
                format!("{moved} ")
            };
            let (context, edits) = apply_replacements(&paragraph, &[(at, at, insert)])
                .map_err(|m| StepFailure::reject("bad_replacements", m))?;
            item.set("qa_na_sentence_context", context);
            item.set("qa_na_sentence_edits", json!(edits));
            item.set("donor_term", b.clone());
            return Ok(());
        }
        Err(StepFailure::reject(
            "no_donor_sentence",
            format!(
                "no other term of domain {} has a sentence to lend",
                item.text("domain")
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kvi(key: &str, value: &str, kind: &str) -> KvItem {
        KvItem {
            key: key.into(),
            value: value.into(),
            kind: kind.into(),
        }
    }

    fn trial() -> Vec<KvItem> {
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

    #[test]
    fn the_offline_paragraph_states_every_value() {
        let p = offline_record_paragraph(&trial());
        assert_eq!(validate_record_paragraph(&p, &trial()).unwrap(), p);
        assert!(p.contains("It began on 9 January 1431."), "{p}");
        let missing = p.replace("Rouen", "Paris");
        assert!(validate_record_paragraph(&missing, &trial())
            .unwrap_err()
            .starts_with("missing_values"));
        // A date in another writing still counts.
        let reworded = p.replace("9 January 1431", "January 9, 1431");
        assert!(validate_record_paragraph(&reworded, &trial()).is_ok());
    }

    #[test]
    fn record_questions_must_target_one_value_stated_in_the_paragraph() {
        let p = "The Trial of Joan of Arc opened on January 9, 1431 in Rouen, with Pierre Cauchon as judge; it ended on 29 May 1431.";
        let raw = r#"{"key": "begin time", "question": "When did the trial open?", "answer": "9 January 1431"}"#;
        let (_, surface, it) = validate_record_qa(raw, &trial(), p).unwrap();
        assert_eq!(surface, "January 9, 1431");
        assert_eq!(it.key, "begin time");
        let name =
            r#"{"key": "name", "question": "What was it?", "answer": "Trial of Joan of Arc"}"#;
        assert!(validate_record_qa(name, &trial(), p)
            .unwrap_err()
            .starts_with("bad_answer"));
        let wrong = r#"{"key": "location", "question": "Where?", "answer": "Paris"}"#;
        assert!(validate_record_qa(wrong, &trial(), p)
            .unwrap_err()
            .starts_with("bad_answer"));
        let keyless = r#"{"question": "Who judged it?", "answer": "Pierre Cauchon"}"#;
        assert_eq!(
            validate_record_qa(keyless, &trial(), p).unwrap().2.key,
            "judge"
        );
    }

    #[test]
    fn the_offline_question_is_valid() {
        let p = offline_record_paragraph(&trial());
        let mut rng = item_rng(3, "t", "t", "qa");
        let raw = offline_record_question(&trial(), "Trial of Joan of Arc", &p, &mut rng);
        validate_record_qa(&raw, &trial(), &p).unwrap();
    }

    #[test]
    fn text_answers_are_verbatim_phrases() {
        let p = "A hash table maps keys to values. It uses a hash function to pick a bucket.";
        let ok = r#"{"question": "What does a hash table map keys to?", "answer": "values"}"#;
        assert_eq!(validate_text_qa(ok, "hash table", p).unwrap().1, "values");
        let not = r#"{"question": "What does it map?", "answer": "keys onto values"}"#;
        assert!(validate_text_qa(not, "hash table", p)
            .unwrap_err()
            .starts_with("not_verbatim"));
        let term = r#"{"question": "What is this about?", "answer": "hash table"}"#;
        assert!(validate_text_qa(term, "hash table", p).is_err());
        let mut rng = item_rng(1, "t", "t", "qa");
        let cloze = offline_cloze("hash table", p, &mut rng);
        validate_text_qa(&cloze, "hash table", p).unwrap();
    }

    #[test]
    fn the_offline_condensed_paragraph_is_shorter_and_names_the_term() {
        let s: Vec<String> = [
            "A stack is a collection of elements.",
            "A stack is a collection of elements with push and pop.",
            "Push adds an element.",
        ]
        .map(String::from)
        .to_vec();
        let p = offline_condense("stack", &s);
        validate_text_paragraph(&p, "stack", &s).unwrap();
        assert!(!p.contains("with push and pop"), "{p}");
    }

    fn nonanswer_step() -> NonAnswerEdit {
        let spec: StepSpec =
            toml::from_str("kind = \"nonanswer_edit\"\nmode = \"record\"").unwrap();
        let prompts =
            Files::Dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../prompts"));
        NonAnswerEdit::new(&spec, &prompts).unwrap()
    }

    #[test]
    fn non_answer_edits_keep_off_the_answer_and_list_a_text_once() {
        let step = nonanswer_step();
        let p = "Battle of Hastings: a battle. It began on 14 October 1066. It ended on 14 October 1066. It took place in Hastings.";
        let mut item = empty_item();
        item.set("kv", json!([kvi("name", "Battle of Hastings", "name")]));
        item.set("answer", "Hastings");
        item.set("answer_value", "Hastings");
        item.set("answer_kind", "place");
        item.set("edited_answer", "York");
        let same_twice = r#"{"replacements": [{"original": "14 October 1066", "edited": "1 May 1200"}, {"original": "14 October 1066", "edited": "1 May 1200"}]}"#;
        let edits = step.validate(same_twice, &item, p).unwrap();
        assert_eq!(edits.len(), 2, "both mentions, once each: {edits:?}");
        let two_ways = r#"{"replacements": [{"original": "14 October 1066", "edited": "1 May 1200"}, {"original": "14 October 1066", "edited": "2 May 1200"}]}"#;
        assert!(step
            .validate(two_ways, &item, p)
            .unwrap_err()
            .starts_with("bad_replacements"));
        let answer = r#"{"replacements": [{"original": "in Hastings", "edited": "in Kent"}]}"#;
        assert!(step
            .validate(answer, &item, p)
            .unwrap_err()
            .starts_with("answer_modified"));
        let brings =
            r#"{"replacements": [{"original": "a battle", "edited": "a battle near York"}]}"#;
        assert!(step
            .validate(brings, &item, p)
            .unwrap_err()
            .starts_with("answer_modified"));
        // Nothing but the answer to edit: no call is made, the item is rejected.
        assert!(!step.has_editable(&item, p));
        item.set(
            "kv",
            json!([
                kvi("name", "Battle of Hastings", "name"),
                kvi("begin time", "14 October 1066", "date")
            ]),
        );
        assert!(step.has_editable(&item, p));
    }

    fn empty_item() -> Item {
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

    fn date_item() -> Item {
        let mut item = empty_item();
        item.set("kv", json!(trial()));
        item.set("answer", "May 30, 1431");
        item.set("answer_value", "30 May 1431");
        item.set("answer_kind", "date");
        item
    }

    #[test]
    fn an_edited_date_must_be_another_date_in_any_writing() {
        let spec: StepSpec = toml::from_str("kind = \"answer_edit\"\nmode = \"record\"").unwrap();
        let prompts =
            Files::Dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../prompts"));
        let step = AnswerEdit::new(&spec, &prompts).unwrap();
        let item = date_item();
        let p = "The trial ended on May 30, 1431 in Rouen.";
        let v = |e: &str| step.validate(&json!({ "edited_answer": e }).to_string(), &item, p);
        assert_eq!(v("12 June 1520").unwrap(), "12 June 1520");
        assert!(v("the 30th of May 1431")
            .unwrap_err()
            .starts_with("unchanged"));
        assert!(v("Boeing 747").unwrap_err().starts_with("wrong_kind"));
        assert!(v("Rouen").unwrap_err().starts_with("already_in_context"));
    }

    #[test]
    fn a_non_answer_edit_may_not_bring_in_the_edited_answer_in_another_writing() {
        let step = nonanswer_step();
        let mut item = date_item();
        item.set("edited_answer", "12 June 1520");
        let p = "The trial began on 9 January 1431 and ended on May 30, 1431 in Rouen.";
        let bad =
            r#"{"replacements": [{"original": "9 January 1431", "edited": "June 12, 1520"}]}"#;
        assert!(step
            .validate(bad, &item, p)
            .unwrap_err()
            .starts_with("answer_modified"));
        let ok = r#"{"replacements": [{"original": "9 January 1431", "edited": "3 March 1402"}]}"#;
        assert_eq!(step.validate(ok, &item, p).unwrap().len(), 1);
    }

    #[test]
    fn an_answer_inside_the_name_is_refused() {
        let mut record = trial();
        record[0].value = "Trial of Rouen".into();
        let p = "The Trial of Rouen took place in Rouen.";
        let raw = r#"{"key": "location", "question": "Where was it held?", "answer": "Rouen"}"#;
        assert!(validate_record_qa(raw, &record, p)
            .unwrap_err()
            .contains("part of the event's name"));
    }

    #[test]
    fn sentences_and_words_are_split_on_their_bounds() {
        let t = "One two. Three, four! Five";
        let s: Vec<&str> = split_sentences(t).iter().map(|&(a, b)| &t[a..b]).collect();
        assert_eq!(s, ["One two.", "Three, four!", "Five"]);
        let w: Vec<&str> = word_spans("(hello), world.")
            .iter()
            .map(|&(a, b)| &"(hello), world."[a..b])
            .collect();
        assert_eq!(w, ["hello", "world"]);
    }
}
