//! The invariants every written RECALL row must keep, checked on a build's output folder
//! by the RECALL end-to-end tests (included with `#[path]`).
#![allow(dead_code)]

use cb_model::recall::{check_edits, QaRow, TextGenRow};
use cb_model::text::{find_word_occurrences, tokens};
use cb_model::KvItem;
use std::path::Path;

pub fn rows<T: serde::de::DeserializeOwned>(path: &Path) -> Vec<T> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: {e}: {l}", path.display())))
        .collect()
}

fn verbatim(text: &str, phrase: &str) -> bool {
    find_word_occurrences(text, phrase)
        .iter()
        .any(|&(s, e)| &text[s..e] == phrase)
}

fn options_ok(r: &QaRow) {
    let mut o = r.options.clone();
    o.sort();
    let mut want = vec![r.answer.clone(), r.edited_answer.clone()];
    want.sort();
    assert_eq!(o, want, "{}: options", r.id);
    let i = cb_model::letter_index(&r.answer_option).expect("a letter");
    assert_eq!(r.options[i], r.answer, "{}: answer_option", r.id);
}

/// Checks every row of `dir`'s three files; returns (qa_a, qa_na, text generation) counts.
pub fn check_dir(dir: &Path) -> (usize, usize, usize) {
    let qa_a: Vec<QaRow> = rows(&dir.join("qa_a.jsonl"));
    let qa_na: Vec<QaRow> = rows(&dir.join("qa_na.jsonl"));
    let tg: Vec<TextGenRow> = rows(&dir.join("text_generation.jsonl"));
    for r in &qa_a {
        assert_eq!((r.task.as_str(), r.edit.as_str()), ("qa_a", "answer"));
        assert!(
            find_word_occurrences(&r.edited_context, &r.answer).is_empty(),
            "{}: the original answer {:?} is still in the edited context",
            r.id,
            r.answer
        );
        assert!(
            verbatim(&r.edited_context, &r.edited_answer),
            "{}: the edited answer {:?} is not in the edited context",
            r.id,
            r.edited_answer
        );
        assert!(
            verbatim(&r.context, &r.answer),
            "{}: answer not in context",
            r.id
        );
        check_edits(&r.context, &r.edited_context, &r.edits)
            .unwrap_or_else(|e| panic!("{}: {e}", r.id));
        assert!(!r.edits.is_empty(), "{}", r.id);
        options_ok(r);
    }
    for r in &qa_na {
        assert_eq!(r.task, "qa_na");
        assert!(
            verbatim(&r.edited_context, &r.answer),
            "{}: the answer {:?} no longer occurs verbatim",
            r.id,
            r.answer
        );
        assert_ne!(r.edited_context, r.context, "{}: context unchanged", r.id);
        check_edits(&r.context, &r.edited_context, &r.edits)
            .unwrap_or_else(|e| panic!("{}: {e}", r.id));
        options_ok(r);
        if r.edit == "sentence" {
            assert_eq!(r.edits.len(), 1, "{}", r.id);
            let inserted = &r.edits[0];
            assert!(inserted.original.is_empty(), "{}", r.id);
            assert!(
                !find_word_occurrences(&inserted.edited, &r.subject).is_empty(),
                "{}: the inserted sentence {:?} does not name {:?}",
                r.id,
                inserted.edited,
                r.subject
            );
            assert!(!r.donor_term.is_empty(), "{}", r.id);
            assert!(
                find_word_occurrences(&inserted.edited, &r.donor_term).is_empty(),
                "{}: the inserted sentence still names {:?}",
                r.id,
                r.donor_term
            );
        } else {
            assert_eq!(r.edit, "word");
            assert!(r.edits.iter().all(|e| !e.original.is_empty()), "{}", r.id);
        }
    }
    for r in &tg {
        if r.aligned {
            let a: Vec<KvItem> = serde_json::from_value(r.source.clone()).unwrap();
            let b: Vec<KvItem> = serde_json::from_value(r.edited_source.clone()).unwrap();
            assert_eq!(a.len(), b.len(), "{}", r.id);
            let changed: Vec<(&KvItem, &KvItem)> =
                a.iter().zip(&b).filter(|(x, y)| x != y).collect();
            assert_eq!(changed.len(), 1, "{}: {changed:?}", r.id);
            let (x, y) = changed[0];
            assert_eq!(
                (x.key.as_str(), x.kind.as_str()),
                (y.key.as_str(), y.kind.as_str())
            );
            assert_eq!(x.key, r.edited_key, "{}", r.id);
            assert_eq!(r.original_words, vec![x.value.clone()], "{}", r.id);
            assert_eq!(r.edited_words, vec![y.value.clone()], "{}", r.id);
        } else {
            let (src, edited) = (
                r.source.as_str().unwrap(),
                r.edited_source.as_str().unwrap(),
            );
            assert_ne!(src, edited, "{}: the edited source is the source", r.id);
            assert!(
                !r.edited_words.is_empty() && !r.original_words.is_empty(),
                "{}: E or O empty",
                r.id
            );
            let (ts, te) = (tokens(src), tokens(edited));
            assert!(
                r.edited_words.iter().all(|w| te.contains(w)),
                "{}: E not in the edited source",
                r.id
            );
            assert!(
                r.original_words.iter().all(|w| ts.contains(w)),
                "{}: O not in the source",
                r.id
            );
            assert!(!r.target.is_empty());
        }
    }
    (qa_a.len(), qa_na.len(), tg.len())
}
