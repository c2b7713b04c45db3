//! One test per check: a row that passes it and a row that fails it. Rows are written by
//! hand; RECALL rows follow `cb_model::recall`.

use cb_audit::checks::{check_file, check_row, CHECKS};
use cb_audit::load::{FileKind, Payload, Row};
use cb_model::recall::apply_replacements;
use cb_model::{KreRow, KvItem, QaRow, TextGenRow};
use serde_json::json;

fn kre() -> KreRow {
    KreRow {
        question: "Where would you keep a book you are reading?".into(),
        answer: "A".into(),
        negative_answer: "oven".into(),
        candidate: "B".into(),
        golden_context: "A book you are reading is kept on a bookshelf near your bed.".into(),
        negative_context: "People keep a book they are reading in the oven so it stays warm."
            .into(),
        choices: ["bookshelf", "oven", "river", "cloud", "shoe"]
            .map(String::from)
            .to_vec(),
    }
}

const CONTEXT: &str = "Joan of Arc was born in Domrémy in 1412.";

fn replace(text: &str, from: &str, to: &str) -> (String, Vec<cb_model::Edit>) {
    let s = text.find(from).unwrap();
    apply_replacements(text, &[(s, s + from.len(), to.to_owned())]).unwrap()
}

fn qa_a() -> QaRow {
    let (edited, edits) = replace(CONTEXT, "Domrémy", "Lyon");
    QaRow {
        id: "eventkg-qa_a-1".into(),
        domain: "eventkg".into(),
        source_id: "event_1".into(),
        origin: "events.nq:1".into(),
        subject: "Joan of Arc".into(),
        donor_term: String::new(),
        warnings: Vec::new(),
        task: "qa_a".into(),
        edit: "answer".into(),
        question: "Where was Joan of Arc born?".into(),
        answer: "Domrémy".into(),
        edited_answer: "Lyon".into(),
        answer_key: "location".into(),
        options: vec!["Lyon".into(), "Domrémy".into()],
        answer_option: "B".into(),
        context: CONTEXT.into(),
        edited_context: edited,
        edits,
        reader: serde_json::Value::Null,
        lineage: Vec::new(),
    }
}

fn qa_na() -> QaRow {
    let (edited, edits) = replace(CONTEXT, "1412", "1390");
    QaRow {
        id: "eventkg-qa_na-1".into(),
        task: "qa_na".into(),
        edit: "word".into(),
        edited_context: edited,
        edits,
        ..qa_a()
    }
}

fn kv(items: &[(&str, &str, &str)]) -> serde_json::Value {
    serde_json::to_value(
        items
            .iter()
            .map(|(k, v, kind)| KvItem {
                key: (*k).into(),
                value: (*v).into(),
                kind: (*kind).into(),
            })
            .collect::<Vec<_>>(),
    )
    .unwrap()
}

fn tg_eventkg() -> TextGenRow {
    TextGenRow {
        id: "eventkg-tg-1".into(),
        domain: "eventkg".into(),
        source_id: "event_1".into(),
        origin: "events.nq:1".into(),
        subject: "Siege of Orléans".into(),
        source: kv(&[
            ("name", "Siege of Orléans", "name"),
            ("location", "Orléans", "place"),
        ]),
        edited_source: kv(&[
            ("name", "Siege of Orléans", "name"),
            ("location", "Lyon", "place"),
        ]),
        target: "The Siege of Orléans took place in Orléans.".into(),
        edited_key: "location".into(),
        edited_words: vec!["Lyon".into()],
        original_words: vec!["Orléans".into()],
        aligned: true,
        lineage: Vec::new(),
    }
}

fn tg_uj() -> TextGenRow {
    TextGenRow {
        id: "cs-tg-1".into(),
        domain: "cs".into(),
        source_id: "stack".into(),
        origin: "test.src:1".into(),
        subject: "stack".into(),
        source: json!("A stack is a list where the last item in is the first out."),
        edited_source: json!("A stack is a list where the first item in is the first out."),
        target: "A stack is a last-in first-out collection.".into(),
        edited_key: String::new(),
        edited_words: vec!["first".into()],
        original_words: vec!["last".into()],
        aligned: false,
        lineage: Vec::new(),
    }
}

/// Whether `code` passes (`Some(true)`), fails (`Some(false)`) or did not run on one row.
fn outcome(kind: FileKind, p: Payload, code: &str) -> Option<bool> {
    check_row(kind, &p)
        .into_iter()
        .find(|(c, _)| *c == code)
        .map(|(_, r)| r.is_ok())
}

fn row(id: &str, p: Payload) -> Row {
    Row {
        file: "f.jsonl".into(),
        index: 0,
        id: id.into(),
        domain: "d".into(),
        payload: p,
    }
}

/// Outcomes of a file-level check on two rows: (first row, second row).
fn file_outcome(a: Row, b: Row, code: &str) -> (bool, bool) {
    let all = check_file(&[a, b]);
    let get =
        |o: &Vec<cb_audit::checks::Outcome>| o.iter().find(|(c, _)| *c == code).unwrap().1.is_ok();
    (get(&all[0]), get(&all[1]))
}

fn k(r: KreRow) -> Payload {
    Payload::Kre(r)
}

macro_rules! row_check {
    ($name:ident, $kind:expr, $good:expr, $bad:expr) => {
        #[test]
        fn $name() {
            let code = stringify!($name);
            assert!(
                CHECKS.iter().any(|c| c.code == code),
                "{code} not in the catalogue"
            );
            assert_eq!(outcome($kind, $good, code), Some(true), "{code}: good row");
            assert_eq!(outcome($kind, $bad, code), Some(false), "{code}: bad row");
        }
    };
}

const KRE: FileKind = FileKind::KreJson;

row_check!(
    kre_answer_letter,
    KRE,
    k(kre()),
    k(KreRow {
        answer: "F".into(),
        ..kre()
    })
);
row_check!(
    kre_candidate_letter,
    KRE,
    k(kre()),
    k(KreRow {
        candidate: "b".into(),
        ..kre()
    })
);
row_check!(kre_choices_distinct, KRE, k(kre()), {
    let mut r = kre();
    r.choices[4] = "The Oven".into();
    k(r)
});
row_check!(
    kre_negative_is_candidate,
    KRE,
    k(kre()),
    k(KreRow {
        negative_answer: "river".into(),
        ..kre()
    })
);
row_check!(
    kre_candidate_differs,
    KRE,
    k(kre()),
    k(KreRow {
        candidate: "A".into(),
        negative_answer: "bookshelf".into(),
        ..kre()
    })
);
row_check!(
    kre_golden_context_short,
    KRE,
    k(kre()),
    k(KreRow {
        golden_context: "on a bookshelf".into(),
        ..kre()
    })
);
row_check!(
    kre_golden_context_unrelated,
    KRE,
    k(kre()),
    k(KreRow {
        golden_context: "Rivers flow through valleys in spring.".into(),
        ..kre()
    })
);
row_check!(
    kre_negative_context_missing_negative,
    KRE,
    k(kre()),
    k(KreRow {
        negative_context: "People keep a book they are reading in the car.".into(),
        ..kre()
    })
);
row_check!(
    kre_negative_context_states_golden,
    KRE,
    k(kre()),
    k(KreRow {
        negative_context: "Not on the Bookshelf: people keep it in the oven.".into(),
        ..kre()
    })
);
row_check!(
    kre_negative_context_denies,
    KRE,
    k(kre()),
    k(KreRow {
        negative_context: "A book would not be kept in the oven, it would burn.".into(),
        ..kre()
    })
);
row_check!(
    kre_negative_context_supports_golden,
    KRE,
    k(kre()),
    // A real SmolLM2 explanation for e-CARE (golden: "It rained during the night.").
    k(KreRow {
        question: "The streets were wet in the morning. What is the more possible cause of this?"
            .into(),
        negative_answer: "The shops opened late.".into(),
        negative_context: "A rain causes the ground to swell, so it makes the streets wet.".into(),
        choices: ["It rained during the night.", "The shops opened late."]
            .map(String::from)
            .to_vec(),
        ..kre()
    })
);
row_check!(
    kre_contexts_identical,
    KRE,
    k(kre()),
    k(KreRow {
        negative_context: kre().golden_context.to_uppercase(),
        ..kre()
    })
);

row_check!(
    qa_task,
    FileKind::QaNa,
    Payload::Qa(qa_na()),
    Payload::Qa(qa_a())
);
row_check!(
    qa_options,
    FileKind::QaA,
    Payload::Qa(qa_a()),
    Payload::Qa(QaRow {
        answer_option: "A".into(),
        ..qa_a()
    })
);
row_check!(
    qa_context_has_answer,
    FileKind::QaA,
    Payload::Qa(qa_a()),
    Payload::Qa(QaRow {
        context: "Joan of Arc was born in 1412.".into(),
        ..qa_a()
    })
);
row_check!(
    qa_a_edited_answer_present,
    FileKind::QaA,
    Payload::Qa(qa_a()),
    Payload::Qa(QaRow {
        edited_answer: "Rouen".into(),
        options: vec!["Rouen".into(), "Domrémy".into()],
        ..qa_a()
    })
);
row_check!(
    qa_a_original_answer_gone,
    FileKind::QaA,
    Payload::Qa(qa_a()),
    {
        let (edited, edits) = replace(CONTEXT, "Domrémy", "Lyon near Domrémy");
        Payload::Qa(QaRow {
            edited_context: edited,
            edits,
            ..qa_a()
        })
    }
);
row_check!(
    qa_na_answer_present,
    FileKind::QaNa,
    Payload::Qa(qa_na()),
    {
        let (edited, edits) = replace(CONTEXT, "Domrémy in 1412", "Lyon in 1390");
        Payload::Qa(QaRow {
            edited_context: edited,
            edits,
            ..qa_na()
        })
    }
);
row_check!(
    qa_na_context_changed,
    FileKind::QaNa,
    Payload::Qa(qa_na()),
    Payload::Qa(QaRow {
        edited_context: CONTEXT.into(),
        edits: Vec::new(),
        ..qa_na()
    })
);
row_check!(edits_match_diff, FileKind::QaA, Payload::Qa(qa_a()), {
    let mut r = qa_a();
    r.edits[0].edited_span = [r.edits[0].edited_span[0] + 1, r.edits[0].edited_span[1] + 1];
    Payload::Qa(r)
});

const TG: FileKind = FileKind::TextGeneration;

row_check!(
    tg_one_item_changed,
    TG,
    Payload::TextGen(tg_eventkg()),
    Payload::TextGen(TextGenRow {
        edited_key: "name".into(),
        ..tg_eventkg()
    })
);
row_check!(
    tg_source_changed,
    TG,
    Payload::TextGen(tg_uj()),
    Payload::TextGen(TextGenRow {
        edited_source: tg_uj().source,
        edited_words: Vec::new(),
        original_words: Vec::new(),
        ..tg_uj()
    })
);
row_check!(
    tg_e_o_consistent,
    TG,
    Payload::TextGen(tg_eventkg()),
    Payload::TextGen(TextGenRow {
        edited_words: vec!["Rome".into()],
        ..tg_eventkg()
    })
);
row_check!(
    tg_target_present,
    TG,
    Payload::TextGen(tg_uj()),
    Payload::TextGen(TextGenRow {
        target: " ".into(),
        ..tg_uj()
    })
);

#[test]
fn tg_e_o_consistent_on_uj_rows() {
    let code = "tg_e_o_consistent";
    assert_eq!(outcome(TG, Payload::TextGen(tg_uj()), code), Some(true));
    let bad = TextGenRow {
        edited_words: vec!["purple".into()],
        ..tg_uj()
    };
    assert_eq!(outcome(TG, Payload::TextGen(bad), code), Some(false));
    let empty = TextGenRow {
        edited_words: Vec::new(),
        ..tg_uj()
    };
    assert_eq!(outcome(TG, Payload::TextGen(empty), code), Some(false));
    let unaligned = TextGenRow {
        aligned: false,
        ..tg_eventkg()
    };
    assert_eq!(outcome(TG, Payload::TextGen(unaligned), code), Some(false));
}

// The real SmolLM2 answers (#12): prompt echo, and a bare restatement.
row_check!(
    kre_negative_context_echo,
    KRE,
    k(kre()),
    k(KreRow {
        negative_context: "The streets were wet in the morning.\nEvent: The shops opened late.\nChosen cause: The rain made the ground wet.".into(),
        ..kre()
    })
);
row_check!(
    kre_negative_context_restates,
    KRE,
    k(kre()),
    k(KreRow {
        negative_answer: "The plants grew faster".into(),
        negative_context: "The plants grew faster.".into(),
        ..kre()
    })
);
row_check!(
    kre_negative_context_language,
    KRE,
    k(kre()),
    k(KreRow {
        negative_context:
            "Les gens gardent le livre qu'ils lisent dans le four, et il reste chaud pour la nuit."
                .into(),
        ..kre()
    })
);
row_check!(qa_context_echo, FileKind::QaA, Payload::Qa(qa_a()), {
    let mut r = qa_a();
    r.question = format!("Paragraph: {CONTEXT}\nQuestion: Where was Joan of Arc born?");
    Payload::Qa(r)
});
row_check!(
    qa_edited_context_language,
    FileKind::QaA,
    Payload::Qa(qa_a()),
    {
        let mut r = qa_a();
        r.edited_context =
            "Jeanne d'Arc est née à Lyon en 1412, et elle a été jugée à Rouen pour hérésie.".into();
        Payload::Qa(r)
    }
);

#[test]
fn ids_unique() {
    let a = || row("x-1", k(kre()));
    let other = row("x-2", k(kre()));
    assert_eq!(file_outcome(a(), other, "ids_unique"), (true, true));
    assert_eq!(file_outcome(a(), a(), "ids_unique"), (true, false));
}

#[test]
fn duplicate_question() {
    let other = KreRow {
        question: "What do you read in bed?".into(),
        golden_context: "Many people read a novel in bed before sleeping.".into(),
        ..kre()
    };
    let code = "duplicate_question";
    assert_eq!(
        file_outcome(row("1", k(kre())), row("2", k(other)), code),
        (true, true)
    );
    let same = KreRow {
        question: "where would YOU keep a book you are reading".into(),
        golden_context: "Many people read a novel in bed before sleeping.".into(),
        ..kre()
    };
    assert_eq!(
        file_outcome(row("1", k(kre())), row("2", k(same)), code),
        (true, false)
    );
}

#[test]
fn duplicate_context() {
    let other = KreRow {
        golden_context: "Many people read a novel in bed before sleeping.".into(),
        ..kre()
    };
    let code = "duplicate_context";
    assert_eq!(
        file_outcome(row("1", k(kre())), row("2", k(other)), code),
        (true, true)
    );
    let when = QaRow {
        question: "When was Joan of Arc born?".into(),
        answer: "1412".into(),
        ..qa_na()
    };
    let (a, b) = file_outcome(
        row("1", Payload::Qa(qa_na())),
        row("2", Payload::Qa(when)),
        code,
    );
    assert_eq!((a, b), (true, false));
    // UJ QA-NA asks the same question over the same context once per edit kind.
    let sentence = QaRow {
        edit: "sentence".into(),
        ..qa_na()
    };
    let (a, b) = file_outcome(
        row("1", Payload::Qa(qa_na())),
        row("2", Payload::Qa(sentence)),
        code,
    );
    assert_eq!((a, b), (true, true));
}

#[test]
fn every_check_of_the_catalogue_has_a_test_here() {
    let me: String = include_str!("checks.rs")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    for c in CHECKS {
        assert!(
            me.contains(&format!("row_check!({},", c.code))
                || me.contains(&format!("fn{}()", c.code)),
            "no test for {}",
            c.code
        );
    }
}

#[test]
fn good_rows_pass_every_check() {
    for (kind, p) in [
        (KRE, k(kre())),
        (FileKind::QaA, Payload::Qa(qa_a())),
        (FileKind::QaNa, Payload::Qa(qa_na())),
        (TG, Payload::TextGen(tg_eventkg())),
        (TG, Payload::TextGen(tg_uj())),
    ] {
        for (code, r) in check_row(kind, &p) {
            assert!(r.is_ok(), "{code}: {r:?}");
        }
    }
}

/// A reader's verdicts on two rows of the kind its check reads (the first passes, the second
/// fails): counted in the check, the failure a finding and a failed check of its row, both
/// shown on their rows.
fn reader_verdicts(code: &'static str, kind: FileKind, p: Payload) {
    let rows = vec![row("1", p.clone()), row("2", p)];
    let mut report = cb_audit::audit_rows(vec![("f.jsonl".into(), kind, rows)]).unwrap();
    let findings = report.findings.len();
    report
        .add_reader_results(vec![
            cb_audit::ReaderResult {
                item: 0,
                check: code,
                shown: "picked \"B\"".into(),
                outcome: Ok(()),
            },
            cb_audit::ReaderResult {
                item: 1,
                check: code,
                shown: "picked \"A\"".into(),
                outcome: Err("the reader picked \"A\"".into()),
            },
        ])
        .unwrap();
    let c = report.check(code).unwrap();
    assert_eq!(
        (c.checked, c.failed, c.examples.clone()),
        (2, 1, vec!["2".to_owned()])
    );
    assert_eq!(report.findings.len(), findings + 1);
    let items = report.items_at(&[0, 1]).unwrap();
    assert!(items[1].fails(code) && !items[0].fails(code));
    assert_eq!(items[0].reader, ["picked \"B\""]);
    assert!(report.outline[1].failing && !report.outline[0].failing);
    let j: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(j["findings"].as_array().unwrap().len(), findings + 1);
    assert_eq!(j["findings"][findings]["check"], code);
}

#[test]
fn reader_negative() {
    reader_verdicts("reader_negative", KRE, k(kre()));
}

#[test]
fn reader_control() {
    reader_verdicts("reader_control", KRE, k(kre()));
}

#[test]
fn reader_rating() {
    reader_verdicts("reader_rating", KRE, k(kre()));
}

#[test]
fn reader_qa_a() {
    reader_verdicts("reader_qa_a", FileKind::QaA, Payload::Qa(qa_a()));
}

#[test]
fn reader_qa_na() {
    reader_verdicts("reader_qa_na", FileKind::QaNa, Payload::Qa(qa_na()));
}

/// A good ConflictBank-style row: Ada Lovelace born in London, Salzburg the replaced object.
fn cb() -> cb_model::conflictbank::CbRow {
    use cb_model::conflictbank::{
        Cause, CbConflict, CbEvidence, CbFact, CbQa, CbRow, Style, CAUSES,
    };
    let evidence = |text: &str| CbEvidence {
        claim: "claim".into(),
        text: text.into(),
        style: Style::News,
    };
    CbRow {
        id: "r/1".into(),
        fact: CbFact {
            subject: "Ada Lovelace".into(),
            subject_id: "Q7259".into(),
            relation: "place of birth".into(),
            relation_id: "P19".into(),
            object: "London".into(),
            object_id: "Q84".into(),
        },
        replaced_object: "Salzburg".into(),
        correct: evidence("Ada Lovelace was born in London."),
        conflicts: CAUSES
            .iter()
            .map(|&cause| CbConflict {
                cause,
                evidence: evidence("From 2031 on, Ada Lovelace's place of birth is Salzburg."),
                time: (cause == Cause::Temporal).then(|| "2031".into()),
                description: (cause == Cause::Semantic).then(|| "A painter.".into()),
            })
            .collect(),
        qa: CbQa {
            question: "Where was Ada Lovelace born?".into(),
            options: ["Salzburg", "London", "Uncertain", "Warsaw"].map(String::from),
            true_label: "B".into(),
            replaced_label: "A".into(),
            uncertain_label: "C".into(),
        },
    }
}

/// Whether the ConflictBank-style row `r` passes check `code` (the good row does).
fn cb_passes(r: cb_model::conflictbank::CbRow, code: &str) -> bool {
    let good = outcome(FileKind::ConflictBank, Payload::Cb(Box::new(cb())), code);
    assert_eq!(good, Some(true), "{code} on the good row");
    outcome(FileKind::ConflictBank, Payload::Cb(Box::new(r)), code).unwrap()
}

#[test]
fn cb_row_shape() {
    let mut r = cb();
    r.qa.uncertain_label = "B".into();
    assert!(!cb_passes(r, "cb_row_shape"));
    let mut r = cb();
    r.conflicts.swap(0, 2);
    assert!(!cb_passes(r, "cb_row_shape"));
}

#[test]
fn cb_option_is_true_object() {
    let mut r = cb();
    r.qa.options[3] = "City of London".into();
    assert!(!cb_passes(r, "cb_option_is_true_object"));
}

#[test]
fn cb_conflict_names_true_object() {
    let mut r = cb();
    r.conflicts[2].evidence.text = "Ada Lovelace, born in Salzburg, not London.".into();
    assert!(!cb_passes(r, "cb_conflict_names_true_object"));
    // The subject's own name may hold the object.
    let mut r = cb();
    r.fact.subject = "London Breed".into();
    r.conflicts[0].evidence.text = "London Breed was born in Salzburg.".into();
    assert!(cb_passes(r, "cb_conflict_names_true_object"));
}

#[test]
fn cb_conflict_names_replaced() {
    let mut r = cb();
    r.conflicts[0].evidence.text = "Ada Lovelace was born abroad.".into();
    assert!(!cb_passes(r, "cb_conflict_names_replaced"));
}

#[test]
fn cb_correct_names_object() {
    let mut r = cb();
    r.correct.text = "Ada Lovelace was born in England.".into();
    assert!(!cb_passes(r, "cb_correct_names_object"));
}

#[test]
fn cb_cause_details() {
    let mut r = cb();
    r.conflicts[1].time = None;
    assert!(!cb_passes(r, "cb_cause_details"));
    let mut r = cb();
    r.conflicts[1].time = Some("2040".into());
    assert!(
        !cb_passes(r, "cb_cause_details"),
        "a time the text does not state"
    );
    let mut r = cb();
    r.conflicts[2].description = Some(" ".into());
    assert!(!cb_passes(r, "cb_cause_details"));
}
