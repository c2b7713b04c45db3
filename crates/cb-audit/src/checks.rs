//! The checks: a catalogue (stable code, meaning, severity, threshold) and the functions
//! that run them on one row or on all rows of one file.
//!
//! Text comparisons use `cb_model::text`: "states X" means X occurs as whole words after
//! normalisation (case, punctuation, articles, number words), see
//! [`cb_model::text::contains_phrase`].

use crate::load::{FileKind, Payload, Row};
use cb_model::recall::check_edits;
use cb_model::text::{contains_phrase, find_word_occurrences, normalize};
use cb_model::{letter_index, KvItem};
use cb_quality as quality;
use serde::Serialize;
use std::collections::HashMap;

/// How bad a failure is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The row breaks the benchmark's definition; it should not be used as is.
    Error,
    /// Likely a defect worth a look.
    Warning,
    /// Worth knowing; often legitimate.
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// One check of the catalogue.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct CheckInfo {
    pub code: &'static str,
    /// Which rows it runs on: `kre`, `qa`, `qa_a`, `qa_na`, `text_generation`,
    /// `conflictbank`, `all`.
    pub applies_to: &'static str,
    pub severity: Severity,
    pub meaning: &'static str,
    /// The rule's number, where it has one.
    pub threshold: Option<&'static str>,
}

/// `kre_golden_context_short`: a golden context with fewer words than this is short. Words
/// are the whitespace-separated pieces (`str::split_whitespace`), the rule behind FORMATS.md's
/// count of 137 short golden contexts in the 1,221 released CoS-E rows (11.2%; 17 of the
/// first 150, 11.3%).
pub const SHORT_CONTEXT_WORDS: usize = 4;
/// `kre_golden_context_unrelated`: flagged when less than this share of the content-word
/// stems of question + golden answer occur in the golden context.
pub const RELATED_MIN_OVERLAP: f64 = 0.1;
/// Content words are compared on their first this many characters (a crude stem:
/// "vaccines" and "vaccined" match).
pub const STEM_CHARS: usize = 5;
/// `kre_negative_context_missing_negative`: the negative context supports the negative
/// answer when at least this share of the answer's content-word stems occur in it (stems
/// rather than whole words, so "department stores" supports "department store").
pub const NEGATIVE_MIN_OVERLAP: f64 = 0.5;

/// Words never counted as content in the overlap rule (function words, and the fixed
/// question endings of the e-CARE rows).
pub const STOPWORDS: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "on", "at", "for", "by", "with", "and", "or", "is", "are",
    "was", "were", "be", "been", "being", "it", "its", "this", "that", "these", "those", "what",
    "which", "who", "whom", "whose", "where", "when", "why", "how", "do", "does", "did", "can",
    "could", "would", "should", "will", "shall", "may", "might", "must", "you", "your", "he",
    "she", "they", "them", "his", "her", "their", "we", "our", "i", "me", "my", "not", "no", "as",
    "from", "into", "than", "then", "there", "here", "if", "but", "so", "more", "possible",
    "cause", "result", "happened",
];

macro_rules! check {
    ($code:literal, $applies:literal, $sev:ident, $meaning:literal) => {
        CheckInfo {
            code: $code,
            applies_to: $applies,
            severity: Severity::$sev,
            meaning: $meaning,
            threshold: None,
        }
    };
    ($code:literal, $applies:literal, $sev:ident, $meaning:literal, $thr:literal) => {
        CheckInfo {
            code: $code,
            applies_to: $applies,
            severity: Severity::$sev,
            meaning: $meaning,
            threshold: Some($thr),
        }
    };
}

/// Every check, in report order.
pub const CHECKS: &[CheckInfo] = &[
    check!("kre_answer_letter", "kre", Error, "`answer` is a capital letter that indexes `choices`."),
    check!("kre_candidate_letter", "kre", Error, "`candidate` is a capital letter that indexes `choices`."),
    check!("kre_choices_distinct", "kre", Error, "At least two choices, none empty, no two equal after normalisation."),
    check!("kre_negative_is_candidate", "kre", Error, "`negative_answer` is exactly the choice the `candidate` letter names."),
    check!("kre_candidate_differs", "kre", Error, "The candidate (negative) letter differs from the answer letter."),
    check!("kre_golden_context_short", "kre", Warning, "The golden context has fewer than 4 whitespace-separated words.", "< 4 words"),
    check!("kre_golden_context_unrelated", "kre", Warning, "Under 10% of the content-word stems (first 5 characters, stop words left out) of question + golden answer occur in the golden context.", "overlap < 0.10"),
    check!("kre_negative_context_missing_negative", "kre", Warning, "Under half of the negative answer's content-word stems (as in kre_golden_context_unrelated) occur in the negative context: it does not support the negative answer.", "overlap < 0.50"),
    check!("kre_negative_context_states_golden", "kre", Warning, "The negative context states the golden answer `choices[answer]` (whole words, normalised)."),
    check!("kre_negative_context_denies", "kre", Warning, "The negative context argues against the negative answer (\"would not\", \"not the cause\", cb_quality::DENIALS) where the question and the negative answer do not."),
    check!("kre_negative_context_supports_golden", "kre", Warning, "The negative context uses the golden answer's own content words (not the question's, not the negative answer's) at least as much as the negative answer's: it argues for the golden answer (cb_quality::leans_to_golden, a lexical rule)."),
    check!("kre_contexts_identical", "kre", Error, "The negative context is the golden context (after normalisation)."),
    check!("kre_negative_context_echo", "kre", Error, "A line of the negative context starts with a prompt label (`Event:`, `Question:`, `Chosen cause:` ..., cb_quality::PROMPT_LABELS), or it names a part of the prompt (\"the reference explanation\", cb_quality::PROMPT_TERMS) or talks about the task (\"the question\", \"the answer must\", cb_quality::TASK_TALK), or holds the prompt's `<<<`/`>>>` fences, that the question, choices and golden context do not have: the prompt repeated back."),
    check!("kre_negative_context_restates", "kre", Warning, "The negative context adds no content word (function words and task words such as \"answer\", \"question\" left out, first 5 characters compared) to the negative answer and the question: it only restates it.", "0 added words"),
    check!("kre_negative_context_language", "kre", Warning, "The negative context is clearly in another language than the question and golden context (cb_quality::language; unclear texts pass)."),
    check!("qa_task", "qa", Error, "`task` matches the file (qa_a / qa_na) and `edit` fits it (qa_a: answer; qa_na: word or sentence)."),
    check!("qa_options", "qa", Error, "`options` are exactly {answer, edited_answer}, two distinct texts, and `answer_option` is the letter of `answer`."),
    check!("qa_context_has_answer", "qa", Error, "The original context states the answer (whole words, normalised)."),
    check!("qa_a_edited_answer_present", "qa_a", Error, "QA-A: the edited context states the edited answer (whole words, normalised)."),
    check!("qa_a_original_answer_gone", "qa_a", Error, "QA-A: the edited context no longer states the original answer (whole words, normalised)."),
    check!("qa_na_answer_present", "qa_na", Error, "QA-NA: the edited context still holds the answer verbatim (whole words, case-insensitive)."),
    check!("qa_na_context_changed", "qa_na", Error, "QA-NA: the edited context differs from the context."),
    check!("qa_context_echo", "qa", Error, "A line of the context or the question starts with a prompt label (cb_quality::PROMPT_LABELS): the prompt repeated back."),
    check!("qa_edited_context_language", "qa", Warning, "The edited context is clearly in another language than the context (cb_quality::language; unclear texts pass)."),
    check!("edits_match_diff", "qa", Error, "The recorded `edits` turn the context into the edited context exactly (spans, texts, nothing else changed)."),
    check!("tg_one_item_changed", "text_generation", Error, "EventKG: source and edited source have the same keys and differ in exactly one item, whose key is `edited_key`."),
    check!("tg_source_changed", "text_generation", Error, "UJ: the edited source paragraph differs from the source."),
    check!("tg_e_o_consistent", "text_generation", Error, "E/O: EventKG: aligned, non-empty, equal lengths, O[j] the original and E[j] the edited value; UJ: E non-empty, every E word in the edited source, every O word in the source."),
    check!("tg_target_present", "text_generation", Warning, "The target text is not empty."),
    check!("cb_row_shape", "conflictbank", Error, "The row's shape (`CbRow::problems`): misinformation, temporal and semantic conflicts in that order, no empty text, `true_label`, `replaced_label` and `uncertain_label` three different letters A-D, the true option the fact's object and the replaced option the replaced object, four different options, a replaced object other than the object."),
    check!("cb_option_is_true_object", "conflictbank", Error, "No option but the true one is the true object in another form (equal once normalised, or holding it or held by it as whole words)."),
    check!("cb_conflict_names_true_object", "conflictbank", Error, "No conflicting evidence names the true object (whole words, normalised; a code of at most three capitals such as \"US\" only in its capitals; the subject's own name set aside)."),
    check!("cb_conflict_names_replaced", "conflictbank", Warning, "Every conflicting evidence names the replaced object (whole words, normalised)."),
    check!("cb_correct_names_object", "conflictbank", Warning, "The correct evidence names the fact's object (whole words, normalised)."),
    check!("cb_cause_details", "conflictbank", Error, "The temporal conflict has its `time` and its text states it; the semantic conflict has its `description`."),
    check!("ids_unique", "all", Error, "No two rows of a file share an id."),
    check!("reader_negative", "kre", Warning, "With `audit --reader-…`: given the question, the options and the negative context alone, the reader model picks the negative answer (KRE appendix A.4: the negative context misleads)."),
    check!("reader_control", "kre", Warning, "With `audit --reader-…`: given the golden context instead, the reader picks the golden answer (a failure marks an ambiguous question or a weak golden context)."),
    check!("reader_qa_a", "qa_a", Warning, "With `audit --reader-…`: given the answer-edited context alone, the reader picks the edited answer."),
    check!("reader_qa_na", "qa_na", Warning, "With `audit --reader-…`: given the non-answer-edited context alone, the reader still picks the original answer (RECALL discards samples whose answer changed)."),
    check!("reader_rating", "kre", Info, "With `audit --rate`: the reader rates how far the negative context leads to the negative answer on KRE appendix A.4's three levels; it fails below \"highly misleading\"."),
    check!("duplicate_question", "all", Warning, "The question (normalised) already occurs in an earlier row of the same file (QA: with the same `edit`)."),
    check!("duplicate_context", "all", Info, "The context (KRE: golden context; QA: context; text generation: source), normalised, already occurs in an earlier row of the same file (QA: with the same `edit`)."),
];

/// The catalogue entry of `code`.
pub fn info(code: &str) -> Option<&'static CheckInfo> {
    CHECKS.iter().find(|c| c.code == code)
}

/// The outcome of one check on one row: `Err(detail)` when it fails.
pub type Outcome = (&'static str, Result<(), String>);

fn ok_if(code: &'static str, cond: bool, detail: impl FnOnce() -> String) -> Outcome {
    (code, if cond { Ok(()) } else { Err(detail()) })
}

/// Words of a context in the sense of [`SHORT_CONTEXT_WORDS`].
pub fn word_count(s: &str) -> usize {
    s.split_whitespace().count()
}

fn stems(s: &str) -> std::collections::BTreeSet<String> {
    cb_model::text::tokens(s)
        .into_iter()
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .map(|w| w.chars().take(STEM_CHARS).collect())
        .collect()
}

/// Share of the content stems of `probe` found in `context` (1.0 when `probe` has none).
pub fn overlap(probe: &str, context: &str) -> f64 {
    let p = stems(probe);
    if p.is_empty() {
        return 1.0;
    }
    let c = stems(context);
    p.intersection(&c).count() as f64 / p.len() as f64
}

fn choice(row: &cb_model::KreRow, letter: &str) -> Option<String> {
    letter_index(letter).and_then(|i| row.choices.get(i).cloned())
}

/// The checks of one row (file-level checks excepted), passes included.
pub fn check_row(kind: FileKind, payload: &Payload) -> Vec<Outcome> {
    match payload {
        Payload::Kre(r) => check_kre(r),
        Payload::Qa(r) => check_qa(kind, r),
        Payload::TextGen(r) => check_text_gen(r),
        Payload::Cb(r) => crate::conflictbank::check(r),
    }
}

fn check_kre(r: &cb_model::KreRow) -> Vec<Outcome> {
    let golden = choice(r, &r.answer);
    let mut out = kre_letters(r, golden.is_some());
    kre_contexts(r, golden.as_deref(), &mut out);
    kre_negative_context(r, &mut out);
    out
}

/// The letters and the choices: `answer` and `candidate` index distinct choices, the
/// negative answer is the candidate's and differs from the answer.
fn kre_letters(r: &cb_model::KreRow, golden_indexed: bool) -> Vec<Outcome> {
    let mut out = Vec::new();
    let cand = choice(r, &r.candidate);
    let n = r.choices.len();
    out.push(ok_if("kre_answer_letter", golden_indexed, || {
        format!("answer \"{}\" does not index the {n} choices", r.answer)
    }));
    out.push(ok_if("kre_candidate_letter", cand.is_some(), || {
        format!(
            "candidate \"{}\" does not index the {n} choices",
            r.candidate
        )
    }));
    let problem = choices_problem(&r.choices);
    out.push(ok_if("kre_choices_distinct", problem.is_none(), || {
        problem.clone().unwrap_or_default()
    }));
    if let Some(c) = &cand {
        out.push(ok_if(
            "kre_negative_is_candidate",
            *c == r.negative_answer,
            || {
                format!(
                    "negative_answer \"{}\" but choice {} is \"{c}\"",
                    r.negative_answer, r.candidate
                )
            },
        ));
    }
    out.push(ok_if(
        "kre_candidate_differs",
        r.candidate != r.answer,
        || format!("candidate and answer are both {}", r.answer),
    ));
    out
}

/// What is wrong with a row's choices: fewer than two, one empty, two equal once normalised.
fn choices_problem(choices: &[String]) -> Option<String> {
    let n = choices.len();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut problem = None;
    if n < 2 {
        problem = Some(format!("{n} choice(s)"));
    }
    for (i, c) in choices.iter().enumerate() {
        let k = normalize(c);
        if k.is_empty() {
            problem.get_or_insert_with(|| format!("choice {} is empty", cb_model::letter(i)));
        } else if let Some(j) = seen.insert(k, i) {
            problem.get_or_insert_with(|| {
                format!(
                    "choices {} and {} are the same: \"{c}\"",
                    cb_model::letter(j),
                    cb_model::letter(i)
                )
            });
        }
    }
    problem
}

/// The golden and the negative context against the question and the answers.
fn kre_contexts(r: &cb_model::KreRow, golden: Option<&str>, out: &mut Vec<Outcome>) {
    let words = word_count(&r.golden_context);
    out.push(ok_if(
        "kre_golden_context_short",
        words >= SHORT_CONTEXT_WORDS,
        || format!("{words} word(s): \"{}\"", r.golden_context),
    ));
    if let Some(g) = golden {
        let ov = overlap(&format!("{} {g}", r.question), &r.golden_context);
        out.push(ok_if(
            "kre_golden_context_unrelated",
            ov >= RELATED_MIN_OVERLAP,
            || format!("overlap {ov:.2}: \"{}\"", r.golden_context),
        ));
        out.push(ok_if(
            "kre_negative_context_states_golden",
            !contains_phrase(&r.negative_context, g),
            || format!("states the golden answer \"{g}\""),
        ));
        out.push(ok_if(
            "kre_negative_context_supports_golden",
            !quality::leans_to_golden(&r.negative_context, &r.negative_answer, g, &[&r.question]),
            || format!("argues for the golden answer \"{g}\""),
        ));
    }
    let neg = overlap(&r.negative_answer, &r.negative_context);
    out.push(ok_if(
        "kre_negative_context_missing_negative",
        neg >= NEGATIVE_MIN_OVERLAP && !r.negative_context.trim().is_empty(),
        || format!("overlap {neg:.2} with \"{}\"", r.negative_answer),
    ));
    out.push(ok_if(
        "kre_contexts_identical",
        normalize(&r.negative_context) != normalize(&r.golden_context),
        || "the negative context is the golden context".into(),
    ));
}

/// The negative context as generated text: the prompt echoed, a bare restatement, another
/// language, a denial of the negative answer.
fn kre_negative_context(r: &cb_model::KreRow, out: &mut Vec<Outcome>) {
    let given = format!(
        "{}\n{}\n{}",
        r.question,
        r.choices.join("\n"),
        r.golden_context
    );
    let echo = quality::echoed_label(&r.negative_context, quality::PROMPT_LABELS, &given)
        .or_else(|| quality::echoed_fence(&r.negative_context, &given))
        .or_else(|| quality::echoed_term(&r.negative_context, &given))
        .or_else(|| quality::talks_about_task(&r.negative_context, &given));
    out.push(ok_if("kre_negative_context_echo", echo.is_none(), || {
        format!("prompt label or term \"{}\"", echo.unwrap_or_default())
    }));
    out.push(ok_if(
        "kre_negative_context_restates",
        !quality::restates(&r.negative_context, &r.negative_answer, &[&r.question]),
        || {
            format!(
                "adds {:?} to \"{}\"",
                quality::added_words(&r.negative_context, &r.negative_answer),
                r.negative_answer
            )
        },
    ));
    let lang = quality::other_language(
        &r.negative_context,
        &format!("{} {}", r.question, r.golden_context),
    );
    out.push(ok_if(
        "kre_negative_context_language",
        lang.is_none(),
        || format!("{lang:?}"),
    ));
    let denial = quality::denies(
        &r.negative_context,
        &format!("{}\n{}", r.question, r.negative_answer),
    );
    out.push(ok_if(
        "kre_negative_context_denies",
        denial.is_none(),
        || format!("\"{}\"", denial.unwrap_or_default()),
    ));
}

fn check_qa(kind: FileKind, r: &cb_model::QaRow) -> Vec<Outcome> {
    let mut out = Vec::new();
    let file_task = match kind {
        FileKind::QaNa => "qa_na",
        _ => "qa_a",
    };
    let edit_ok = match r.task.as_str() {
        "qa_a" => r.edit == "answer",
        "qa_na" => r.edit == "word" || r.edit == "sentence",
        _ => false,
    };
    out.push(ok_if("qa_task", r.task == file_task && edit_ok, || {
        format!(
            "task \"{}\", edit \"{}\" in a {file_task} file",
            r.task, r.edit
        )
    }));
    let idx = letter_index(&r.answer_option);
    let opts_ok = r.options.len() == 2
        && r.options.contains(&r.answer)
        && r.options.contains(&r.edited_answer)
        && r.answer != r.edited_answer
        && idx.and_then(|i| r.options.get(i)) == Some(&r.answer);
    out.push(ok_if("qa_options", opts_ok, || {
        format!(
            "options {:?}, answer_option \"{}\", answer \"{}\", edited answer \"{}\"",
            r.options, r.answer_option, r.answer, r.edited_answer
        )
    }));
    out.push(ok_if(
        "qa_context_has_answer",
        contains_phrase(&r.context, &r.answer),
        || format!("the context does not state \"{}\"", r.answer),
    ));
    if r.task == "qa_a" {
        out.push(ok_if(
            "qa_a_edited_answer_present",
            contains_phrase(&r.edited_context, &r.edited_answer),
            || format!("the edited context does not state \"{}\"", r.edited_answer),
        ));
        out.push(ok_if(
            "qa_a_original_answer_gone",
            !contains_phrase(&r.edited_context, &r.answer),
            || format!("the edited context still states \"{}\"", r.answer),
        ));
    } else if r.task == "qa_na" {
        out.push(ok_if(
            "qa_na_answer_present",
            !find_word_occurrences(&r.edited_context, &r.answer).is_empty(),
            || format!("the edited context lost \"{}\"", r.answer),
        ));
        out.push(ok_if(
            "qa_na_context_changed",
            r.edited_context != r.context,
            || "the edited context equals the context".into(),
        ));
    }
    let edits = check_edits(&r.context, &r.edited_context, &r.edits).and_then(|()| {
        if r.edits.is_empty() && r.context != r.edited_context {
            Err("no edits recorded but the texts differ".into())
        } else {
            Ok(())
        }
    });
    out.push(("edits_match_diff", edits));
    let echo = quality::echoed_label(
        &format!("{}\n{}", r.context, r.question),
        quality::PROMPT_LABELS,
        "",
    );
    out.push(ok_if("qa_context_echo", echo.is_none(), || {
        format!("a line starts with \"{}:\"", echo.unwrap_or_default())
    }));
    let lang = quality::other_language(&r.edited_context, &r.context);
    out.push(ok_if("qa_edited_context_language", lang.is_none(), || {
        format!("{lang:?}")
    }));
    out
}

fn kv(v: &serde_json::Value) -> Option<Vec<KvItem>> {
    serde_json::from_value(v.clone()).ok()
}

fn check_text_gen(r: &cb_model::TextGenRow) -> Vec<Outcome> {
    let mut out = Vec::new();
    let (e, o) = (&r.edited_words, &r.original_words);
    if let (Some(src), Some(edited)) = (kv(&r.source), kv(&r.edited_source)) {
        let changed: Vec<(&KvItem, &KvItem)> = src
            .iter()
            .zip(&edited)
            .filter(|(a, b)| a.value != b.value)
            .collect();
        let same_keys =
            src.len() == edited.len() && src.iter().zip(&edited).all(|(a, b)| a.key == b.key);
        let one = same_keys && changed.len() == 1 && changed[0].0.key == r.edited_key;
        out.push(ok_if("tg_one_item_changed", one, || {
            if !same_keys {
                "the two records do not have the same keys in the same order".into()
            } else {
                format!(
                    "{} item(s) changed ({}), edited_key \"{}\"",
                    changed.len(),
                    changed
                        .iter()
                        .map(|c| c.0.key.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    r.edited_key
                )
            }
        }));
        let consistent = match changed.as_slice() {
            [(before, after)] => {
                r.aligned
                    && !e.is_empty()
                    && e.len() == o.len()
                    && o.iter().all(|w| *w == before.value)
                    && e.iter().all(|w| *w == after.value)
            }
            _ => false,
        };
        out.push(ok_if("tg_e_o_consistent", consistent, || {
            format!("aligned {}, E {e:?}, O {o:?}", r.aligned)
        }));
    } else if let (Some(src), Some(edited)) = (r.source.as_str(), r.edited_source.as_str()) {
        out.push(ok_if("tg_source_changed", src != edited, || {
            "the edited source equals the source".into()
        }));
        let missing_e: Vec<&String> = e.iter().filter(|w| !contains_phrase(edited, w)).collect();
        let missing_o: Vec<&String> = o.iter().filter(|w| !contains_phrase(src, w)).collect();
        let consistent =
            (src == edited || !e.is_empty()) && missing_e.is_empty() && missing_o.is_empty();
        out.push(ok_if("tg_e_o_consistent", consistent, || {
            if e.is_empty() {
                "E is empty though the source was edited".into()
            } else {
                format!("E words not in the edited source: {missing_e:?}; O words not in the source: {missing_o:?}")
            }
        }));
    } else {
        out.push((
            "tg_one_item_changed",
            Err("source / edited_source are neither two key-value lists nor two strings".into()),
        ));
    }
    out.push(ok_if(
        "tg_target_present",
        !r.target.trim().is_empty(),
        || "empty target".into(),
    ));
    out
}

/// The question and the context a row is compared on by the duplicate checks, and the
/// variant they are compared within: a QA row's `edit`, since RECALL asks the same question
/// over the same context once per edit kind (UJ QA-NA: `word` and `sentence`) on purpose.
fn question_and_context(p: &Payload) -> (String, String, &str) {
    match p {
        Payload::Kre(r) => (r.question.clone(), r.golden_context.clone(), ""),
        Payload::Qa(r) => (r.question.clone(), r.context.clone(), r.edit.as_str()),
        Payload::TextGen(r) => (String::new(), source_text(&r.source), ""),
        Payload::Cb(r) => (r.qa.question.clone(), r.correct.text.clone(), ""),
    }
}

/// A text-generation source as text: the paragraph, or `key: value` lines of a record.
pub fn source_text(v: &serde_json::Value) -> String {
    match (v.as_str(), kv(v)) {
        (Some(s), _) => s.to_owned(),
        (None, Some(items)) => items
            .iter()
            .map(|i| format!("{}: {}", i.key, i.value))
            .collect::<Vec<_>>()
            .join("\n"),
        (None, None) => v.to_string(),
    }
}

/// The checks over all rows of one file: ids, repeated questions and contexts. Returns,
/// per row (same order), its outcomes.
pub fn check_file(rows: &[Row]) -> Vec<Vec<Outcome>> {
    let mut seen = FileChecks::default();
    rows.iter().map(|r| seen.check(r)).collect()
}

/// What the checks over the rows of one file keep of the rows before: a 128-bit hash of each
/// id, and of each distinct normalised question and context with the id of the row that had
/// it first. About 30 bytes a row for the ids, and 60 bytes and the first id's length a
/// distinct question or context; the texts themselves are not kept.
///
/// Two different keys with the same hash would read as repeated; at 128 bits that takes
/// about 2^64 keys.
#[derive(Default)]
pub struct FileChecks {
    ids: std::collections::HashSet<u128>,
    questions: HashMap<u128, Box<str>>,
    contexts: HashMap<u128, Box<str>>,
}

impl FileChecks {
    /// The file-level outcomes of the next row of the file.
    pub fn check(&mut self, r: &Row) -> Vec<Outcome> {
        let mut o = Vec::new();
        let dup_id = !self.ids.insert(hash128(&r.id));
        o.push(ok_if("ids_unique", !dup_id, || {
            format!("id \"{}\" repeated", r.id)
        }));
        let (q, c, variant) = question_and_context(&r.payload);
        for (code, text, seen) in [
            ("duplicate_question", q, &mut self.questions),
            ("duplicate_context", c, &mut self.contexts),
        ] {
            let norm = normalize(&text);
            if norm.is_empty() {
                continue;
            }
            let key = hash128(&format!("{variant}\u{1f}{norm}"));
            match seen.get(&key) {
                Some(first) => o.push((code, Err(format!("same as {first}")))),
                None => {
                    seen.insert(key, r.id.as_str().into());
                    o.push((code, Ok(())));
                }
            }
        }
        o
    }
}

/// A 128-bit hash of `s`: two SipHash runs (the standard library's, with its fixed keys)
/// told apart by a leading byte.
fn hash128(s: &str) -> u128 {
    use std::hash::{Hash, Hasher};
    let half = |salt: u8| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        salt.hash(&mut h);
        s.hash(&mut h);
        h.finish()
    };
    (u128::from(half(0)) << 64) | u128::from(half(1))
}
