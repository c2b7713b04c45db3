//! Each reader on the team's samples in `raw/` and on the real samples in `../shared/data`
//! (skipped when absent, unless `CI=true`), plus malformed inputs.

mod common;

use common::{keys, record_error, strs, write};
use std::path::{Path, PathBuf};

use cb_readers::{open, reader_names, resolve_inputs, ReadError, ReaderOptions, SourceRecord};
use serde_json::{json, Value};

fn raw(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../raw")
        .join(rel)
}

/// A real sample file, or `None` (skip) when it is absent outside CI.
fn shared(rel: &str) -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data")
        .join(rel);
    if path.is_file() {
        Some(path)
    } else if std::env::var("CI").as_deref() == Ok("true") {
        panic!("shared test file {} is missing", path.display());
    } else {
        None
    }
}

macro_rules! shared_or_skip {
    ($rel:expr) => {
        match shared($rel) {
            Some(p) => p,
            None => return,
        }
    };
}

fn no_opts() -> ReaderOptions {
    ReaderOptions::new()
}

fn opts(v: Value) -> ReaderOptions {
    v.as_object().unwrap().clone()
}

fn read_all(
    reader: &str,
    path: &Path,
    options: &ReaderOptions,
) -> (Vec<SourceRecord>, Vec<ReadError>) {
    let mut records = Vec::new();
    let mut errors = Vec::new();
    for item in open(reader, path, options).unwrap() {
        match item {
            Ok(r) => records.push(r),
            Err(e) => errors.push(e),
        }
    }
    (records, errors)
}

/// Reads a file that must have no error.
fn read_clean(reader: &str, path: &Path, options: &ReaderOptions) -> Vec<SourceRecord> {
    let (records, errors) = read_all(reader, path, options);
    assert!(errors.is_empty(), "{}: {errors:?}", path.display());
    records
}

// ---------------------------------------------------------------- CommonsenseQA

#[test]
fn commonsenseqa_raw_sample() {
    let path = raw("commonsenseqa/dev_rand_split.jsonl");
    let records = read_clean("commonsenseqa", &path, &no_opts());
    assert_eq!(records.len(), 12);
    let first = &records[0];
    assert_eq!(
        keys(first),
        [
            "id",
            "question",
            "question_concept",
            "choices",
            "labels",
            "answerKey"
        ]
    );
    assert_eq!(first.id.len(), 32);
    assert_eq!(first.origin.line, 1);
    assert_eq!(first.origin.file, path.display().to_string());
    assert_eq!(first.str("question_concept"), Some("milk"));
    assert_eq!(strs(&first.fields["choices"])[1], "refrigerator");
    assert_eq!(first.str("answerKey"), Some("B"));
    for r in &records {
        assert_eq!(r.fields["choices"].as_array().unwrap().len(), 5);
        assert_eq!(strs(&r.fields["labels"]), ["A", "B", "C", "D", "E"]);
        assert!(r.id.chars().all(|c| c.is_ascii_hexdigit()));
    }
}

#[test]
fn commonsenseqa_shared_hf_layout() {
    let path = shared_or_skip!("commonsenseqa/dev_rand_split.v1.11.hf-layout.jsonl");
    let records = read_clean("commonsenseqa", &path, &no_opts());
    assert_eq!(records.len(), 300);
    let first = &records[0];
    assert_eq!(first.id, "1afa02df02c908a558b4036e80242fac");
    assert_eq!(
        first.str("question"),
        Some("A revolving door is convenient for two direction travel, but it also serves as a security measure at a what?")
    );
    assert_eq!(first.str("question_concept"), Some("revolving door"));
    assert_eq!(
        strs(&first.fields["choices"]),
        ["bank", "library", "department store", "mall", "new york"]
    );
    assert_eq!(first.str("answerKey"), Some("A"));
    assert!(records
        .iter()
        .all(|r| r.fields["choices"].as_array().unwrap().len() == 5));
    assert_eq!(records[299].origin.line, 300);
}

#[test]
fn commonsenseqa_shared_official_layout() {
    let path = shared_or_skip!("commonsenseqa/dev_rand_split.v1.0.official-layout.jsonl");
    let records = read_clean("commonsenseqa", &path, &no_opts());
    assert_eq!(records.len(), 100);
    let first = &records[0];
    assert_eq!(first.id, "26c8a7165d0ed7250b9328f90d83ba83");
    assert_eq!(
        first.str("question"),
        Some("Why do people who are dying receive social security payments?")
    );
    assert_eq!(first.str("question_concept"), Some(""));
    assert_eq!(
        strs(&first.fields["choices"]),
        ["born again", "unable to work", "no longer exist"]
    );
    assert_eq!(first.str("answerKey"), Some("B"));
    for r in &records {
        assert_eq!(r.fields["choices"].as_array().unwrap().len(), 3);
        assert_eq!(strs(&r.fields["labels"]), ["A", "B", "C"]);
    }
}

#[test]
fn commonsenseqa_layouts_give_identical_fields() {
    let dir = tempfile::tempdir().unwrap();
    let official = json!({"answerKey": "C", "id": "0123456789abcdef0123456789abcdef", "question": {
        "question_concept": "kettle",
        "choices": [{"label": "A", "text": "freezer"}, {"label": "B", "text": "bathtub"},
                    {"label": "C", "text": "kitchen"}, {"label": "D", "text": "garage"},
                    {"label": "E", "text": "library"}],
        "stem": "Where is a kettle usually kept?"}});
    let flat = json!({"id": "0123456789abcdef0123456789abcdef", "question": "Where is a kettle usually kept?",
        "question_concept": "kettle",
        "choices": {"label": ["A", "B", "C", "D", "E"], "text": ["freezer", "bathtub", "kitchen", "garage", "library"]},
        "answerKey": "C"});
    let a = write(dir.path(), "official.jsonl", &format!("{official}\n"));
    let b = write(dir.path(), "flat.jsonl", &format!("{flat}\n"));
    let a = read_clean("commonsenseqa", &a, &no_opts());
    let b = read_clean("commonsenseqa", &b, &no_opts());
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].id, b[0].id);
    assert_eq!(keys(&a[0]), keys(&b[0]));
    assert_eq!(a[0].fields, b[0].fields);
}

#[test]
fn commonsenseqa_answer_key_checks() {
    let dir = tempfile::tempdir().unwrap();
    let choices = json!({"label": ["A", "B", "C"], "text": ["x", "y", "z"]});
    let lines = [
        json!({"id": "no-key", "question": "q?", "question_concept": "c", "choices": choices}),
        json!({"id": "empty-key", "question": "q?", "question_concept": "c", "choices": choices, "answerKey": ""}),
        json!({"id": "bad-key", "question": "q?", "question_concept": "c", "choices": choices, "answerKey": "E"}),
        json!({"id": "uneven", "question": "q?", "choices": {"label": ["A", "B"], "text": ["x"]}, "answerKey": "A"}),
        json!({"id": "no-choices", "question": "q?", "answerKey": "A"}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let path = write(dir.path(), "test.jsonl", &text);
    let items: Vec<_> = open("commonsenseqa", &path, &no_opts()).unwrap().collect();
    assert_eq!(items.len(), 5);
    let r0 = items[0].as_ref().unwrap();
    assert_eq!(r0.fields["answerKey"], Value::Null);
    assert_eq!(r0.str("question_concept"), Some("c"));
    assert_eq!(items[1].as_ref().unwrap().fields["answerKey"], Value::Null);
    let (_, line, code, message) = record_error(items[2].as_ref().unwrap_err());
    assert_eq!((line, code), (3, "bad_value"));
    assert!(message.contains("answerKey `E`"), "{message}");
    let (_, line, code, _) = record_error(items[3].as_ref().unwrap_err());
    assert_eq!((line, code), (4, "bad_value"));
    let (_, line, code, message) = record_error(items[4].as_ref().unwrap_err());
    assert_eq!((line, code), (5, "missing_field"));
    assert!(message.contains("choices"), "{message}");
}

// ---------------------------------------------------------------- CoS-E

#[test]
fn cos_e_raw_sample_joins_with_commonsenseqa() {
    let cose = read_clean("cos_e", &raw("cos_e/cose_dev_v1.11.jsonl"), &no_opts());
    assert_eq!(cose.len(), 10);
    assert_eq!(keys(&cose[0]), ["id", "open_ended", "selected"]);
    let cqa = read_clean(
        "commonsenseqa",
        &raw("commonsenseqa/dev_rand_split.jsonl"),
        &no_opts(),
    );
    let ids: Vec<&str> = cqa.iter().map(|r| r.id.as_str()).collect();
    assert!(cose.iter().all(|r| ids.contains(&r.id.as_str())));
    let misses = ids
        .iter()
        .filter(|id| !cose.iter().any(|r| r.id == **id))
        .count();
    assert_eq!(misses, 2, "two questions have no explanation");
}

#[test]
fn cos_e_shared() {
    let path = shared_or_skip!("cos_e/cose_dev_v1.11.jsonl");
    let records = read_clean("cos_e", &path, &no_opts());
    assert_eq!(records.len(), 300);
    assert_eq!(records[0].id, "080ef6941410139d6869e78122bc741e");
    assert_eq!(
        records[0].str("open_ended"),
        Some("Wooden area is only the place for the beaver supplies.")
    );
    assert_eq!(records[0].str("selected"), Some("their supplies come"));
}

#[test]
fn cos_e_missing_explanation_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "c.jsonl",
        "{\"id\": \"a\", \"explanation\": {\"selected\": \"s\"}}\n{\"id\": \"b\", \"explanation\": {\"open-ended\": \"o\", \"selected\": \"s\"}}\n",
    );
    let (records, errors) = read_all("cos_e", &path, &no_opts());
    assert_eq!(records.len(), 1);
    let (_, line, code, message) = record_error(&errors[0]);
    assert_eq!((line, code), (1, "missing_field"));
    assert!(message.contains("explanation.open-ended"), "{message}");
}

// ---------------------------------------------------------------- ECQA

#[test]
fn ecqa_csv_raw_sample() {
    let path = raw("ecqa/cqa_data_val.csv");
    let records = read_clean("ecqa_csv", &path, &no_opts());
    assert_eq!(records.len(), 6);
    let first = &records[0];
    assert_eq!(
        keys(first),
        [
            "id",
            "question",
            "question_concept",
            "choices",
            "labels",
            "answerKey",
            "answer_text",
            "positives",
            "negatives",
            "explanation"
        ]
    );
    assert_eq!(first.origin.line, 2);
    assert_eq!(first.str("answerKey"), Some("B"));
    assert_eq!(first.str("answer_text"), Some("refrigerator"));
    assert_eq!(first.fields["positives"].as_array().unwrap().len(), 3);
    assert_eq!(first.fields["negatives"].as_array().unwrap().len(), 4);
    // The first record spans lines 2-7 (quoted cells with newlines): the second starts at 8.
    assert_eq!(records[1].origin.line, 8);

    // Same ids, questions and explanations as CommonsenseQA and ecqa.jsonl.
    let cqa = read_clean(
        "commonsenseqa",
        &raw("commonsenseqa/dev_rand_split.jsonl"),
        &no_opts(),
    );
    let jsonl = read_clean("ecqa_jsonl", &raw("ecqa/ecqa.jsonl"), &no_opts());
    assert_eq!(jsonl.len(), records.len());
    for (r, j) in records.iter().zip(&jsonl) {
        assert_eq!(r.id, j.id);
        assert_eq!(r.fields["positives"], j.fields["positives"]);
        assert_eq!(r.fields["negatives"], j.fields["negatives"]);
        assert_eq!(r.fields["explanation"], j.fields["explanation"]);
        let q = cqa
            .iter()
            .find(|q| q.id == r.id)
            .expect("id in CommonsenseQA");
        for key in [
            "question",
            "question_concept",
            "choices",
            "labels",
            "answerKey",
        ] {
            assert_eq!(r.fields[key], q.fields[key], "{key} of {}", r.id);
        }
    }
}

#[test]
fn ecqa_jsonl_fields() {
    let records = read_clean("ecqa_jsonl", &raw("ecqa/ecqa.jsonl"), &no_opts());
    assert_eq!(
        keys(&records[0]),
        ["id", "positives", "negatives", "explanation"]
    );
}

const ECQA_HEADER: &str =
    ",q_no,q_concept,q_text,q_op1,q_op2,q_op3,q_op4,q_op5,q_ans,taskA_pos,taskA_neg,taskB\n";

#[test]
fn ecqa_csv_short_row_is_missing_field_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let content = format!(
        "{ECQA_HEADER}0,id0,c,q?,a,b,c,d,e,b,\"p1\np2\",n1,expl\n1,id1,c,q?,a,b,c,d,e,b\n2,id2,c,q?,a,b,c,d,e,e,p,\"n1\nn2\",x\n3,id3,c,q?,a,b,c,d,e,zzz,p,n,x\n"
    );
    let path = write(dir.path(), "cqa_data_val.csv", &content);
    let items: Vec<_> = open("ecqa_csv", &path, &no_opts()).unwrap().collect();
    assert_eq!(items.len(), 4);
    let r0 = items[0].as_ref().unwrap();
    assert_eq!(strs(&r0.fields["positives"]), ["p1", "p2"]);
    assert_eq!(r0.origin.line, 2);
    let (file, line, code, message) = record_error(items[1].as_ref().unwrap_err());
    assert_eq!(file, path.display().to_string());
    assert_eq!((line, code), (4, "missing_field"));
    assert!(message.contains("taskA_pos"), "{message}");
    let r2 = items[2].as_ref().unwrap();
    assert_eq!(r2.origin.line, 5);
    assert_eq!(r2.str("answerKey"), Some("E"));
    let (_, line, code, _) = record_error(items[3].as_ref().unwrap_err());
    assert_eq!((line, code), (7, "bad_value"));
}

#[test]
fn ecqa_csv_bad_header_is_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "x.csv", "a,b,c\n1,2,3\n");
    let err = match open("ecqa_csv", &path, &no_opts()) {
        Err(e) => e,
        Ok(_) => panic!("a CSV without the ECQA columns must not open"),
    };
    assert!(err.is_fatal());
    assert!(err.to_string().contains("q_no"), "{err}");
}

// ---------------------------------------------------------------- e-CARE through `jsonl`

#[test]
fn ecare_raw_sample() {
    let path = raw("ecare/dev_full.jsonl");
    let bytes = std::fs::read(&path).unwrap();
    assert_ne!(
        bytes.last(),
        Some(&b'\n'),
        "e-CARE files end without a newline"
    );
    let records = read_clean("jsonl", &path, &opts(json!({"id_field": "index"})));
    assert_eq!(records.len(), 12);
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.id, format!("dev-{i}"));
        assert_eq!(r.origin.line, i as u64 + 1);
        assert_eq!(
            keys(r),
            [
                "index",
                "premise",
                "ask-for",
                "hypothesis1",
                "hypothesis2",
                "label",
                "conceptual_explanation"
            ]
        );
    }
    let asks: Vec<&str> = records.iter().map(|r| r.str("ask-for").unwrap()).collect();
    assert!(asks.contains(&"cause") && asks.contains(&"effect"));
}

#[test]
fn ecare_shared() {
    let path = shared_or_skip!("ecare/dev_full.jsonl");
    let options = opts(
        json!({"id_field": "index", "required": ["premise", "ask-for", "hypothesis1", "hypothesis2", "label", "conceptual_explanation"]}),
    );
    let records = read_clean("jsonl", &path, &options);
    assert_eq!(records.len(), 300);
    let first = &records[0];
    assert_eq!(first.id, "dev-0");
    assert_eq!(
        first.str("premise"),
        Some("The child brought psycho-physical phenomena on a new life.")
    );
    assert_eq!(first.str("ask-for"), Some("cause"));
    assert_eq!(first.fields["label"], json!(0));
    assert_eq!(
        first.str("conceptual_explanation"),
        Some("Birth is the arising of the psycho-physical phenomena.")
    );
    for (name, key) in [
        ("ecare/Causal_Reasoning_dev.jsonl", "hypothesis1"),
        ("ecare/Explanation_Generation_dev.jsonl", "cause"),
    ] {
        let path = shared_or_skip!(name);
        let records = read_clean(
            "jsonl",
            &path,
            &opts(json!({"id_field": "index", "required": [key]})),
        );
        assert_eq!(records.len(), 300);
        assert_eq!(records[0].id, "dev-0");
    }
}

#[test]
fn jsonl_truncated_line_is_reported_and_reading_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "dev.jsonl",
        "{\"index\": \"dev-0\", \"premise\": \"a\"}\n{\"index\": \"dev-1\", \"prem\n\n{\"index\": 7, \"premise\": \"c\"}\n[1, 2]\n{\"premise\": \"no id\"}\n{\"index\": \"dev-5\"}",
    );
    let items: Vec<_> = open("jsonl", &path, &opts(json!({"id_field": "index"})))
        .unwrap()
        .collect();
    assert_eq!(items.len(), 6);
    assert_eq!(items[0].as_ref().unwrap().id, "dev-0");
    let err = items[1].as_ref().unwrap_err();
    let (file, line, code, _) = record_error(err);
    assert_eq!(
        (file, line, code),
        (path.display().to_string().as_str(), 2, "malformed_json")
    );
    assert!(!err.is_fatal());
    assert_eq!(err.code(), "malformed_json");
    assert!(
        err.to_string()
            .starts_with(&format!("{}:2: ", path.display())),
        "{err}"
    );
    // Line 3 is blank; line 4 has a numeric id.
    let r = items[2].as_ref().unwrap();
    assert_eq!((r.id.as_str(), r.origin.line), ("7", 4));
    assert_eq!(record_error(items[3].as_ref().unwrap_err()).1, 5);
    assert_eq!(record_error(items[3].as_ref().unwrap_err()).2, "bad_value");
    assert_eq!(
        record_error(items[4].as_ref().unwrap_err()).2,
        "missing_field"
    );
    // The last line has no newline.
    assert_eq!(items[5].as_ref().unwrap().origin.line, 7);
}

#[test]
fn jsonl_required_and_options() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "x.jsonl",
        "{\"id\": \"a\", \"k\": 1}\n{\"id\": \"b\"}\n",
    );
    let (records, errors) = read_all("jsonl", &path, &opts(json!({"required": ["k"]})));
    assert_eq!(records.len(), 1);
    let (_, line, code, message) = record_error(&errors[0]);
    assert_eq!((line, code), (2, "missing_field"));
    assert!(message.contains("`k`"), "{message}");

    for bad in [
        json!({"id_field": 3}),
        json!({"required": "k"}),
        json!({"idfield": "x"}),
    ] {
        match open("jsonl", &path, &opts(bad)) {
            Err(e @ ReadError::Config(_)) => assert!(e.to_string().contains("jsonl"), "{e}"),
            other => panic!("expected a config error, got {:?}", other.err()),
        }
    }
    match open("cos_e", &path, &opts(json!({"id_field": "x"}))) {
        Err(ReadError::Config(m)) => assert!(m.contains("cos_e") && m.contains("id_field"), "{m}"),
        other => panic!("expected a config error, got {:?}", other.err()),
    }
}

#[test]
fn a_faulty_record_whose_id_can_be_read_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "x.jsonl",
        "{\"index\": \"dev-7\", \"k\": 1}\n{\"index\": 12}\n{\"k\": 2}\n",
    );
    let options = opts(json!({"id_field": "index", "required": ["k"]}));
    let (records, errors) = read_all("jsonl", &path, &options);
    assert_eq!(records.len(), 1);
    let ids: Vec<Option<&str>> = errors
        .iter()
        .map(|e| match e {
            ReadError::Record { id, .. } => id.as_deref(),
            other => panic!("{other:?}"),
        })
        .collect();
    // Line 2 misses `k` but has its id; line 3 has no id at all.
    assert_eq!(ids, [Some("12"), None]);
}

// ---------------------------------------------------------------- SQuAD v2.0

#[test]
fn squad_accepts_a_byte_order_mark() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend(std::fs::read(raw("squad_v2/dev-v2.0.json")).unwrap());
    let path = dir.path().join("bom.json");
    std::fs::write(&path, bytes).unwrap();
    let with_bom = read_clean("squad_v2", &path, &no_opts());
    let without = read_clean("squad_v2", &raw("squad_v2/dev-v2.0.json"), &no_opts());
    assert_eq!(with_bom.len(), without.len());
    assert_eq!(with_bom[0].fields, without[0].fields);
}

/// `text` at `start` code points into `context`.
fn span_at(context: &str, start: u64, text: &str) -> bool {
    context
        .chars()
        .skip(start as usize)
        .take(text.chars().count())
        .collect::<String>()
        == text
}

fn check_spans(r: &SourceRecord) {
    let context = r.str("context").unwrap();
    for (texts, starts) in [
        ("answers", "answer_starts"),
        ("plausible_answers", "plausible_answer_starts"),
    ] {
        let texts = strs(&r.fields[texts]);
        let starts = r.fields[starts].as_array().unwrap();
        assert_eq!(texts.len(), starts.len());
        for (t, s) in texts.iter().zip(starts) {
            assert!(
                span_at(context, s.as_u64().unwrap(), t),
                "{}: `{t}` at {s}",
                r.id
            );
        }
    }
}

#[test]
fn squad_raw_sample() {
    let records = read_clean("squad_v2", &raw("squad_v2/dev-v2.0.json"), &no_opts());
    assert!((10..=16).contains(&records.len()), "{}", records.len());
    assert_eq!(
        keys(&records[0]),
        [
            "id",
            "title",
            "context",
            "question",
            "answers",
            "answer_starts",
            "is_impossible",
            "plausible_answers",
            "plausible_answer_starts"
        ]
    );
    let mut impossible = 0;
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.origin.line, i as u64);
        check_spans(r);
        let is_impossible = r.fields["is_impossible"].as_bool().unwrap();
        let answers = r.fields["answers"].as_array().unwrap().len();
        let plausible = r.fields["plausible_answers"].as_array().unwrap().len();
        if is_impossible {
            impossible += 1;
            assert!(answers == 0 && plausible > 0, "{}", r.id);
        } else {
            assert!(answers > 0 && plausible == 0, "{}", r.id);
        }
    }
    assert!(impossible >= 3);
    let titles: Vec<&str> = records.iter().map(|r| r.str("title").unwrap()).collect();
    assert!(titles.contains(&"Mount_Everest") && titles.contains(&"Honey_bee"));
}

#[test]
fn squad_shared_normans() {
    let path = shared_or_skip!("squad_v2/dev-v2.0.normans.json");
    let records = read_clean("squad_v2", &path, &no_opts());
    assert_eq!(records.len(), 208);
    let first = &records[0];
    assert_eq!(first.id, "56ddde6b9a695914005b9628");
    assert_eq!(first.str("title"), Some("Normans"));
    assert_eq!(
        first.str("question"),
        Some("In what country is Normandy located?")
    );
    assert!(first
        .str("context")
        .unwrap()
        .starts_with("The Normans (Norman: Nourmands;"));
    assert_eq!(strs(&first.fields["answers"])[0], "France");
    assert_eq!(first.fields["answer_starts"][0], json!(159));
    assert_eq!(first.fields["is_impossible"], json!(false));
    let impossible: Vec<&SourceRecord> = records
        .iter()
        .filter(|r| r.fields["is_impossible"] == json!(true))
        .collect();
    assert_eq!(impossible.len(), 112);
    assert!(impossible
        .iter()
        .all(|r| !r.fields["plausible_answers"].as_array().unwrap().is_empty()));
    records.iter().for_each(check_spans);
    let ids: std::collections::HashSet<&str> = records.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids.len(), 208);
}

#[test]
fn squad_bad_question_is_a_record_error_and_broken_document_is_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let doc = json!({"version": "v2.0", "data": [{"paragraphs": [
        {"qas": [
            {"question": "Q0?", "id": "q0", "answers": [{"text": "cat", "answer_start": 4}], "is_impossible": false},
            {"id": "q1", "answers": []},
            {"question": "Q2?", "id": "q2", "answers": [], "is_impossible": true,
             "plausible_answers": [{"text": "dog", "answer_start": 12}]}
        ], "context": "The cat chased a dog."}
    ], "title": "Late_title"}]});
    let path = write(dir.path(), "ok.json", &doc.to_string());
    let items: Vec<_> = open("squad_v2", &path, &no_opts()).unwrap().collect();
    assert_eq!(items.len(), 3);
    let q0 = items[0].as_ref().unwrap();
    assert_eq!(q0.str("title"), Some("Late_title"));
    assert_eq!((q0.id.as_str(), q0.origin.line), ("q0", 0));
    let (_, line, code, message) = record_error(items[1].as_ref().unwrap_err());
    assert_eq!((line, code), (1, "missing_field"));
    assert!(
        message.starts_with("data[0].paragraphs[0].qas[1]: "),
        "{message}"
    );
    let q2 = items[2].as_ref().unwrap();
    assert_eq!(q2.origin.line, 2);
    assert_eq!(strs(&q2.fields["plausible_answers"]), ["dog"]);

    // A truncated document: the records of the complete paragraph, then a fatal error.
    let good = json!({"qas": [{"question": "Q?", "id": "a", "answers": [{"text": "x", "answer_start": 0}]}], "context": "x y"});
    let text = format!("{{\"version\": \"v2.0\", \"data\": [{{\"title\": \"T\", \"paragraphs\": [{good},\n {{\"qas\": [{{\"question\": \"Q");
    let path = write(dir.path(), "broken.json", &text);
    let items: Vec<_> = open("squad_v2", &path, &no_opts()).unwrap().collect();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0].as_ref().unwrap().id, "a");
    let err = items[1].as_ref().unwrap_err();
    assert!(err.is_fatal());
    assert!(matches!(err, ReadError::File { .. }));
    let message = err.to_string();
    assert!(
        message.contains("broken.json") && message.contains("line 2 column"),
        "{message}"
    );

    // `data` that is not an array.
    let path = write(
        dir.path(),
        "nodata.json",
        "{\"version\": \"v2.0\", \"data\": 3}",
    );
    let items: Vec<_> = open("squad_v2", &path, &no_opts()).unwrap().collect();
    assert_eq!(items.len(), 1);
    assert!(items[0].as_ref().unwrap_err().is_fatal());
}

#[test]
fn squad_consumer_may_stop_early() {
    let path = shared_or_skip!("squad_v2/dev-v2.0.normans.json");
    let first: Vec<_> = open("squad_v2", &path, &no_opts())
        .unwrap()
        .take(3)
        .collect();
    assert_eq!(first.len(), 3);
}

// ---------------------------------------------------------------- MuSiQue

#[test]
fn musique_raw_sample() {
    let records = read_clean(
        "musique",
        &raw("musique/musique_ans_v1.0_dev.jsonl"),
        &no_opts(),
    );
    assert_eq!(records.len(), 5);
    assert_eq!(
        keys(&records[0]),
        [
            "id",
            "paragraphs",
            "question",
            "question_decomposition",
            "answer",
            "answer_aliases",
            "answerable",
            "supporting_context",
            "supporting_titles"
        ]
    );
    assert!(records.iter().any(|r| r.id.starts_with("2hop__")));
    assert!(records.iter().any(|r| r.id.starts_with("3hop1__")));
    assert!(records
        .iter()
        .any(|r| r.fields["answerable"] == json!(false)));
    // Reasoning order, not idx order: The Magic Flute (idx 3), Mozart (0), Salzburg (2).
    let mozart = records
        .iter()
        .find(|r| r.str("answer") == Some("Austria"))
        .unwrap();
    assert_eq!(
        strs(&mozart.fields["supporting_titles"]),
        ["The Magic Flute", "Wolfgang Amadeus Mozart", "Salzburg"]
    );
    let context = mozart.str("supporting_context").unwrap();
    assert_eq!(context.lines().count(), 3);
    assert!(context.starts_with("The Magic Flute is an opera"));
    for r in &records {
        let paragraphs = r.fields["paragraphs"].as_array().unwrap();
        assert!((4..=6).contains(&paragraphs.len()));
        let supporting = paragraphs
            .iter()
            .filter(|p| p["is_supporting"] == json!(true))
            .count();
        assert_eq!(
            r.fields["supporting_titles"].as_array().unwrap().len(),
            supporting
        );
    }
}

#[test]
fn musique_shared() {
    let path = shared_or_skip!("musique/musique_ans_v1.0_train.sample.jsonl");
    let records = read_clean("musique", &path, &no_opts());
    assert_eq!(records.len(), 60);
    let first = &records[0];
    assert_eq!(first.id, "2hop__150763_14904");
    assert_eq!(first.fields["paragraphs"].as_array().unwrap().len(), 20);
    assert_eq!(
        first.fields["supporting_titles"].as_array().unwrap().len(),
        2
    );
    assert_eq!(first.fields["answerable"], json!(true));
    // The 4-hop record cites paragraphs 15, 14, 6, 16 in that order.
    let four = &records[1];
    assert_eq!(four.id, "4hop1__709382_146811_31223_91015");
    let paragraphs = four.fields["paragraphs"].as_array().unwrap();
    let expected: Vec<&str> = [15, 14, 6, 16]
        .iter()
        .map(|i| paragraphs[*i]["paragraph_text"].as_str().unwrap())
        .collect();
    assert_eq!(four.str("supporting_context").unwrap(), expected.join("\n"));
}

#[test]
fn musique_falls_back_to_idx_order() {
    let dir = tempfile::tempdir().unwrap();
    let line = json!({"id": "2hop__1_2", "paragraphs": [
        {"idx": 0, "title": "A", "paragraph_text": "a", "is_supporting": false},
        {"idx": 1, "title": "B", "paragraph_text": "b", "is_supporting": true},
        {"idx": 2, "title": "C", "paragraph_text": "c", "is_supporting": true}],
      "question": "q", "question_decomposition": [
        {"id": 1, "question": "x", "answer": "y", "paragraph_support_idx": 2},
        {"id": 2, "question": "z", "answer": "w", "paragraph_support_idx": null}],
      "answer": "w", "answer_aliases": [], "answerable": false});
    let bad = json!({"id": "2hop__3_4", "paragraphs": [{"idx": "0", "title": "A", "paragraph_text": "a", "is_supporting": true}],
      "question": "q", "question_decomposition": [], "answer": "w", "answer_aliases": [], "answerable": true});
    let path = write(dir.path(), "m.jsonl", &format!("{line}\n{bad}\n"));
    let items: Vec<_> = open("musique", &path, &no_opts()).unwrap().collect();
    let r = items[0].as_ref().unwrap();
    assert_eq!(strs(&r.fields["supporting_titles"]), ["B", "C"]);
    assert_eq!(r.str("supporting_context"), Some("b\nc"));
    let (_, line, code, message) = record_error(items[1].as_ref().unwrap_err());
    assert_eq!((line, code), (2, "bad_value"));
    assert!(message.contains("paragraphs[0].idx"), "{message}");
}

// ---------------------------------------------------------------- open, errors, inputs

#[test]
fn missing_file_is_a_file_error_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.jsonl");
    for reader in reader_names() {
        let err = match open(reader, &path, &no_opts()) {
            Err(e) => e,
            Ok(_) => panic!("{reader} opened a missing file"),
        };
        match &err {
            ReadError::File { file, .. } => assert_eq!(file, &path.display().to_string()),
            other => panic!("{reader}: expected a file error, got {other:?}"),
        }
        assert!(err.is_fatal());
        assert_eq!(err.code(), "file_error");
        assert!(err.to_string().contains("absent.jsonl"));
    }
}

#[test]
fn unknown_reader_is_a_config_error() {
    let err = match open("nope", Path::new("x"), &no_opts()) {
        Err(e) => e,
        Ok(_) => panic!("unknown reader accepted"),
    };
    assert!(matches!(err, ReadError::Config(_)));
    assert!(err.is_fatal());
    assert_eq!(err.code(), "config_error");
    assert!(err.to_string().contains("nope") && err.to_string().contains("squad_v2"));
}

#[test]
fn resolve_inputs_first_matching_pattern_wins() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["b.jsonl", "a.jsonl", "c.csv"] {
        write(dir.path(), name, "");
    }
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::create_dir(dir.path().join("dir.jsonl")).unwrap();
    write(&dir.path().join("sub"), "x.jsonl", "");
    let patterns = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();

    let found = resolve_inputs(dir.path(), &patterns(&["*.json", "*.jsonl", "*.csv"])).unwrap();
    assert_eq!(
        found,
        [dir.path().join("a.jsonl"), dir.path().join("b.jsonl")]
    );
    let found = resolve_inputs(dir.path(), &patterns(&["*.csv", "*.jsonl"])).unwrap();
    assert_eq!(found, [dir.path().join("c.csv")]);
    let found = resolve_inputs(dir.path(), &patterns(&["sub/*.jsonl"])).unwrap();
    assert_eq!(found, [dir.path().join("sub/x.jsonl")]);
    let absolute = dir.path().join("c.csv").display().to_string();
    let found = resolve_inputs(Path::new("/nonexistent"), std::slice::from_ref(&absolute)).unwrap();
    assert_eq!(found, [PathBuf::from(absolute)]);

    let err = resolve_inputs(dir.path(), &patterns(&["*.tsv", "full/*.jsonl"])).unwrap_err();
    assert!(matches!(err, ReadError::Config(_)));
    let message = err.to_string();
    assert!(
        message.contains(&dir.path().display().to_string()),
        "{message}"
    );
    assert!(
        message.contains("*.tsv") && message.contains("full/*.jsonl"),
        "{message}"
    );
    assert!(resolve_inputs(dir.path(), &[]).is_err());
}

#[test]
fn raw_samples_are_found_by_their_patterns() {
    let found = resolve_inputs(
        &raw("ecare"),
        &["full/dev_full.jsonl".into(), "dev_full.jsonl".into()],
    )
    .unwrap();
    assert_eq!(found.len(), 1);
    assert!(found[0].ends_with("dev_full.jsonl"));
}
