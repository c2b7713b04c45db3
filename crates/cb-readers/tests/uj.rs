//! Reader `uj`: the parallel `.src`/`.tgt` form and the JSONL form on the samples in
//! `raw/uj`, the separator options, and malformed inputs.

mod common;

use common::{keys, record_error, strs, write};
use std::path::{Path, PathBuf};

use cb_readers::{open, ReadError, ReaderOptions, SourceRecord};
use serde_json::{json, Value};

fn raw(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../raw/uj")
        .join(rel)
}

fn opts(v: Value) -> ReaderOptions {
    v.as_object().unwrap().clone()
}

fn read_all(path: &Path, options: &ReaderOptions) -> (Vec<SourceRecord>, Vec<ReadError>) {
    let mut records = Vec::new();
    let mut errors = Vec::new();
    for item in open("uj", path, options).unwrap() {
        match item {
            Ok(r) => records.push(r),
            Err(e) => errors.push(e),
        }
    }
    (records, errors)
}

fn read_clean(path: &Path, options: &ReaderOptions) -> Vec<SourceRecord> {
    let (records, errors) = read_all(path, options);
    assert!(errors.is_empty(), "{}: {errors:?}", path.display());
    records
}

fn items(path: &Path, options: &ReaderOptions) -> Vec<Result<SourceRecord, ReadError>> {
    open("uj", path, options).unwrap().collect()
}

fn sentences(r: &SourceRecord) -> Vec<&str> {
    strs(&r.fields["sentences"])
}

#[test]
fn parallel_samples() {
    let none = ReaderOptions::new();
    let cs = read_clean(&raw("cs-top5/test.src"), &none);
    assert_eq!(cs.len(), 6);
    let first = &cs[0];
    assert_eq!(first.id, "cs/test/1");
    assert_eq!(first.origin.line, 1);
    assert!(first.origin.file.ends_with("test.src"));
    assert_eq!(keys(first), ["term", "sentences", "definition", "domain"]);
    assert_eq!(first.str("term"), Some("hash table"));
    assert_eq!(first.str("domain"), Some("cs"));
    assert_eq!(sentences(first).len(), 5);
    assert_eq!(
        sentences(first)[0],
        "A hash table is a data structure that maps keys to values."
    );
    assert!(first
        .str("definition")
        .unwrap()
        .starts_with("A hash table is"));
    // The term with four sentences is kept as it is: filtering is the recipe's job.
    let counts: Vec<usize> = cs.iter().map(|r| sentences(r).len()).collect();
    assert_eq!(counts, [5, 5, 5, 5, 4, 5]);
    assert_eq!(cs[4].str("term"), Some("deadlock"));

    let math = read_clean(&raw("math-top5/test.src"), &none);
    let phy = read_clean(&raw("phy-top5/test.src"), &none);
    assert_eq!((math.len(), phy.len()), (5, 5));
    assert!(math.iter().all(|r| r.str("domain") == Some("math")));
    assert!(phy.iter().all(|r| r.str("domain") == Some("phy")));
    assert_eq!(phy[4].id, "phy/test/5");
}

#[test]
fn both_forms_give_the_same_records() {
    let none = ReaderOptions::new();
    let mut parallel = Vec::new();
    for domain in ["cs", "math", "phy"] {
        parallel.extend(read_clean(&raw(&format!("{domain}-top5/test.src")), &none));
    }
    let jsonl = read_clean(&raw("uj.jsonl"), &none);
    assert_eq!(parallel.len(), 16);
    assert_eq!(jsonl.len(), 16);
    for (p, j) in parallel.iter().zip(&jsonl) {
        assert_eq!(p.id, j.id);
        assert_eq!(p.fields, j.fields, "{}", p.id);
        assert_eq!(keys(j), ["term", "sentences", "definition", "domain"]);
    }
}

#[test]
fn domain_option_and_jsonl_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("phy-top5");
    std::fs::create_dir(&folder).unwrap();
    let path = write(
        &folder,
        "dev.jsonl",
        concat!(
            r#"{"term": "a", "sentences": ["s1", " ", "s2"], "definition": "d"}"#,
            "\n",
            r#"{"term": "b", "sentences": ["s"], "definition": "d", "domain": "x", "id": 7}"#,
            "\n",
        ),
    );
    let records = read_clean(&path, &ReaderOptions::new());
    assert_eq!(records[0].id, "phy/dev/1");
    assert_eq!(records[0].str("domain"), Some("phy"));
    assert_eq!(sentences(&records[0]), ["s1", "s2"]);
    assert_eq!(records[1].id, "7");
    assert_eq!(records[1].str("domain"), Some("x"));

    let records = read_clean(&path, &opts(json!({"domain": "physics"})));
    assert!(records.iter().all(|r| r.str("domain") == Some("physics")));
    assert_eq!(records[0].id, "physics/dev/1");

    let records = read_clean(&raw("cs-top5/test.src"), &opts(json!({"domain": "CS"})));
    assert_eq!(records[0].id, "CS/test/1");
    assert_eq!(records[0].str("domain"), Some("CS"));
}

#[test]
fn custom_separator() {
    let dir = tempfile::tempdir().unwrap();
    let src = write(
        dir.path(),
        "test.src",
        "hash table ||| Maps keys to values. ||| Uses a hash function.\n\
         stack ||| Last in, first out. |||  ||| Push and pop.\r\n",
    );
    write(
        dir.path(),
        "test.tgt",
        "A key-value structure.\nA LIFO collection.\r\n",
    );
    let options = opts(json!({"separator": " ||| ", "domain": "cs"}));
    let records = read_clean(&src, &options);
    assert_eq!(records.len(), 2);
    assert_eq!(records[0].str("term"), Some("hash table"));
    assert_eq!(
        sentences(&records[0]),
        ["Maps keys to values.", "Uses a hash function."]
    );
    assert_eq!(records[1].str("term"), Some("stack"));
    assert_eq!(
        sentences(&records[1]),
        ["Last in, first out.", "Push and pop."]
    );
    assert_eq!(records[1].str("definition"), Some("A LIFO collection."));
    assert_eq!(records[1].id, "cs/test/2");

    // A separate term separator.
    write(
        dir.path(),
        "t2.src",
        "stack: Last in, first out.|Push and pop.\n",
    );
    write(dir.path(), "t2.tgt", "A LIFO collection.\n");
    let options = opts(json!({"separator": "|", "term_separator": ":", "domain": "cs"}));
    let records = read_clean(&dir.path().join("t2.src"), &options);
    assert_eq!(records[0].str("term"), Some("stack"));
    assert_eq!(
        sentences(&records[0]),
        ["Last in, first out.", "Push and pop."]
    );

    // With the default (TAB) separator, the same line has no sentence.
    let (records, errors) = read_all(&src, &opts(json!({"domain": "cs"})));
    assert!(records.is_empty());
    assert_eq!(errors.len(), 2);
    assert_eq!(record_error(&errors[0]).2, "missing_field");
}

#[test]
fn bad_parallel_line_is_reported_and_reading_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let src = write(
        dir.path(),
        "test.src",
        "stack\tA.\tB.\n\tNo term here.\nqueue\tFirst in, first out.\nheap\tC.\n",
    );
    let tgt = write(dir.path(), "test.tgt", "def 1\ndef 2\ndef 3\n \n");
    let all = items(&src, &opts(json!({"domain": "cs"})));
    assert_eq!(all.len(), 4);
    assert_eq!(all[0].as_ref().unwrap().str("term"), Some("stack"));
    let (file, line, code, message) = record_error(all[1].as_ref().unwrap_err());
    assert_eq!((line, code), (2, "missing_field"));
    assert_eq!(file, src.display().to_string());
    assert!(message.contains("empty term"), "{message}");
    let r = all[2].as_ref().unwrap();
    assert_eq!((r.id.as_str(), r.origin.line), ("cs/test/3", 3));
    assert_eq!(r.str("definition"), Some("def 3"));
    let (file, line, code, message) = record_error(all[3].as_ref().unwrap_err());
    assert_eq!((line, code), (4, "missing_field"));
    assert_eq!(file, tgt.display().to_string());
    assert!(message.contains("empty definition"), "{message}");
}

#[test]
fn bad_json_line_is_reported_and_reading_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "uj.jsonl",
        concat!(
            r#"{"term": "a", "sentences": ["s"], "definition": "d", "domain": "cs"}"#,
            "\n",
            r#"{"term": "b", "sentences": ["s"], "defin"#,
            "\n",
            r#"{"term": "c", "sentences": "s", "definition": "d", "domain": "cs"}"#,
            "\n",
            r#"{"term": "d", "sentences": ["s"], "domain": "cs"}"#,
            "\n",
            r#"{"term": "e", "sentences": ["s"], "definition": "d", "domain": "cs"}"#,
            "\n",
        ),
    );
    let all = items(&path, &ReaderOptions::new());
    assert_eq!(all.len(), 5);
    assert_eq!(all[0].as_ref().unwrap().id, "cs/uj/1");
    let (_, line, code, _) = record_error(all[1].as_ref().unwrap_err());
    assert_eq!((line, code), (2, "malformed_json"));
    let (_, line, code, message) = record_error(all[2].as_ref().unwrap_err());
    assert_eq!((line, code), (3, "bad_value"));
    assert!(message.contains("sentences"), "{message}");
    let (_, line, code, message) = record_error(all[3].as_ref().unwrap_err());
    assert_eq!((line, code), (4, "missing_field"));
    assert!(message.contains("definition"), "{message}");
    let r = all[4].as_ref().unwrap();
    assert_eq!((r.id.as_str(), r.origin.line), ("cs/uj/5", 5));
}

#[test]
fn short_tgt_is_a_record_error_at_the_first_extra_line() {
    let dir = tempfile::tempdir().unwrap();
    let src = write(dir.path(), "test.src", "a\tA.\nb\tB.\nc\tC.\nd\tD.\n");
    write(dir.path(), "test.tgt", "def a\ndef b\n");
    let all = items(&src, &opts(json!({"domain": "cs"})));
    assert_eq!(all.len(), 3, "the reader stops after the mismatch");
    assert!(all[0].is_ok() && all[1].is_ok());
    let (file, line, code, message) = record_error(all[2].as_ref().unwrap_err());
    assert_eq!((line, code), (3, "missing_field"));
    assert_eq!(file, src.display().to_string());
    assert!(message.contains("test.tgt"), "{message}");

    // A longer .tgt: the error names the .tgt file; trailing blank lines do not count.
    let src = write(dir.path(), "t2.src", "a\tA.\n\n");
    let tgt = write(dir.path(), "t2.tgt", "def a\n\n\ndef c\n");
    let all = items(&src, &opts(json!({"domain": "cs"})));
    assert_eq!(all.len(), 2);
    let (file, line, code, _) = record_error(all[1].as_ref().unwrap_err());
    assert_eq!(
        (file, line, code),
        (tgt.display().to_string().as_str(), 4, "missing_field")
    );

    let src = write(dir.path(), "t3.src", "a\tA.\n\n\n");
    write(dir.path(), "t3.tgt", "def a");
    assert_eq!(read_clean(&src, &opts(json!({"domain": "cs"}))).len(), 1);
}

#[test]
fn missing_tgt_is_a_file_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let src = write(dir.path(), "test.src", "a\tA.\n");
    let err = match open("uj", &src, &ReaderOptions::new()) {
        Err(e) => e,
        Ok(_) => panic!("opened a .src without its .tgt"),
    };
    let tgt = dir.path().join("test.tgt").display().to_string();
    match &err {
        ReadError::File { file, .. } => assert_eq!(file, &tgt),
        other => panic!("expected a file error, got {other:?}"),
    }
    assert!(err.is_fatal());
    assert!(err.to_string().contains("test.tgt"));
}

#[test]
fn bad_extension_and_options_are_config_errors() {
    let dir = tempfile::tempdir().unwrap();
    let txt = write(dir.path(), "test.txt", "a\tA.\n");
    let jsonl = write(dir.path(), "x.jsonl", "");
    let cases = [
        (&txt, json!({})),
        (&jsonl, json!({"separator": ""})),
        (&jsonl, json!({"separator": 1})),
        (&jsonl, json!({"domain": ""})),
        (&jsonl, json!({"sep": "|"})),
    ];
    for (path, options) in cases {
        match open("uj", path, &opts(options.clone())) {
            Err(ReadError::Config(message)) => assert!(message.contains("uj"), "{message}"),
            Err(other) => panic!("{options}: expected a config error, got {other:?}"),
            Ok(_) => panic!("{options}: accepted"),
        }
    }
}
