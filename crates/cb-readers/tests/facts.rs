//! The fact readers, `popqa` and `mquake`, on the team's samples in `raw/`, on the real
//! samples in `../shared/data` (skipped when absent, unless `CI=true`), and on broken input.

mod common;

use common::{record_error, strs, write};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cb_readers::{open, ReadError, ReaderOptions, SourceRecord};
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

fn opts(v: Value) -> ReaderOptions {
    v.as_object().unwrap().clone()
}

fn read_all(reader: &str, path: &Path, o: &ReaderOptions) -> (Vec<SourceRecord>, Vec<ReadError>) {
    let mut records = Vec::new();
    let mut errors = Vec::new();
    for item in open(reader, path, o).unwrap() {
        match item {
            Ok(r) => records.push(r),
            Err(e) => errors.push(e),
        }
    }
    (records, errors)
}

fn read_clean(reader: &str, path: &Path, o: &ReaderOptions) -> Vec<SourceRecord> {
    let (records, errors) = read_all(reader, path, o);
    assert!(errors.is_empty(), "{}: {errors:?}", path.display());
    records
}

/// The fact fields every fact reader gives, checked on one record.
fn assert_fact(r: &SourceRecord) {
    for key in ["subject", "relation", "object", "question"] {
        assert!(!r.str(key).unwrap_or("").is_empty(), "{} lacks {key}", r.id);
    }
    for key in ["subject_id", "object_id"] {
        let id = r.str(key).unwrap();
        assert!(
            id.starts_with('Q') && id[1..].parse::<u64>().is_ok(),
            "{}: {key} {id}",
            r.id
        );
    }
    assert!(r.str("relation_id").unwrap().starts_with('P'), "{}", r.id);
    for key in ["subject_aliases", "object_aliases"] {
        assert!(r.fields[key]
            .as_array()
            .unwrap()
            .iter()
            .all(Value::is_string));
    }
}

// ---------------------------------------------------------------- PopQA

#[test]
fn popqa_raw_sample_decodes_lists_written_as_text() {
    let records = read_clean("popqa", &raw("popqa/popqa.json"), &ReaderOptions::new());
    assert_eq!(records.len(), 6);
    records.iter().for_each(assert_fact);
    let obama = &records[1];
    assert_eq!(obama.id, "1");
    assert_eq!(obama.origin.line, 1);
    assert_eq!(obama.str("subject_id"), Some("Q76"));
    assert_eq!(obama.str("relation_id"), Some("P106"));
    assert_eq!(
        strs(&obama.fields["subject_aliases"]),
        ["Barack Hussein Obama II", "Obama"]
    );
    assert_eq!(
        strs(&obama.fields["possible_answers"]),
        ["politician", "political leader", "political figure"]
    );
    // This record's paragraphs are a Python literal written as text.
    assert!(obama.fields["paragraphs"][0]["is_supporting"] == json!(true));
    assert!(obama
        .str("subject_paragraph")
        .unwrap()
        .contains("44th president"));
    assert!(obama
        .str("object_paragraph")
        .unwrap()
        .starts_with("A politician"));
    let curie = &records[3];
    assert_eq!(curie.str("relation_id"), Some("P19"));
    assert_eq!(curie.str("object"), Some("Warsaw"));
    assert!(curie
        .str("subject_paragraph")
        .unwrap()
        .contains("Skłodowska"));
    assert_eq!(curie.fields["popularity"], json!(180455));
}

#[test]
fn popqa_shared_sample() {
    let Some(path) = shared("popqa/popqa.sample.json") else {
        return;
    };
    let records = read_clean("popqa", &path, &ReaderOptions::new());
    assert_eq!(records.len(), 200);
    records.iter().for_each(assert_fact);
    let mut by_relation = BTreeMap::new();
    for r in &records {
        *by_relation
            .entry(r.str("relation_id").unwrap())
            .or_insert(0) += 1;
        assert!(!r.fields["possible_answers"].as_array().unwrap().is_empty());
        assert!(r.fields.contains_key("subject_paragraph"), "{}", r.id);
    }
    assert_eq!(by_relation, BTreeMap::from([("P106", 92), ("P19", 108)]));
    let first = &records[0];
    assert_eq!(first.str("subject"), Some("George Rankin"));
    assert_eq!(first.str("subject_id"), Some("Q5543720"));
    assert_eq!(first.str("object_id"), Some("Q82955"));
    assert_eq!(
        strs(&first.fields["object_aliases"]),
        ["political leader", "political figure", "polit.", "pol"]
    );
}

#[test]
fn popqa_bad_records_are_rejects_naming_file_and_index() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(raw("popqa/popqa.json")).unwrap();
    let rows: Vec<Value> = serde_json::from_str(&good).unwrap();
    let mut bad = vec![rows[0].clone(), json!("not an object")];
    let mut no_subj = rows[1].clone();
    no_subj.as_object_mut().unwrap().remove("subj");
    let mut bad_uri = rows[2].clone();
    bad_uri["s_uri"] = json!("https://example.org/Douglas");
    let mut bad_aliases = rows[3].clone();
    bad_aliases["o_aliases"] = json!("{\"a\": 1}");
    let mut bad_literal = rows[4].clone();
    bad_literal["paragraphs"] = json!("[{'title': 'x', 'text': open('y')}]");
    bad.extend([no_subj, bad_uri, bad_aliases, bad_literal, rows[5].clone()]);
    let path = write(dir.path(), "p.json", &serde_json::to_string(&bad).unwrap());
    let (records, errors) = read_all("popqa", &path, &ReaderOptions::new());
    assert_eq!(
        records.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["0", "5"]
    );
    let seen: Vec<_> = errors.iter().map(record_error).collect();
    let file = path.display().to_string();
    assert!(seen.iter().all(|(f, ..)| *f == file));
    assert_eq!(
        seen.iter()
            .map(|(_, line, code, _)| (*line, *code))
            .collect::<Vec<_>>(),
        [
            (1, "bad_value"),
            (2, "missing_field"),
            (3, "bad_value"),
            (4, "bad_value"),
            (5, "bad_value")
        ]
    );
    assert!(seen[0].3.contains("record [1]"));
    assert!(seen[2].3.contains("s_uri"), "{}", seen[2].3);
    assert!(seen[3].3.contains("o_aliases"), "{}", seen[3].3);
    assert!(seen[4].3.contains("open"), "{}", seen[4].3);
}

#[test]
fn a_broken_array_is_a_file_error_after_the_records_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(raw("popqa/popqa.json")).unwrap();
    let cut = good.find("\"id\": 2").unwrap();
    let path = write(dir.path(), "cut.json", &good[..cut]);
    let (records, errors) = read_all("popqa", &path, &ReaderOptions::new());
    assert_eq!(records.len(), 2);
    assert_eq!(errors.len(), 1);
    assert!(errors[0].is_fatal());
    let path = write(dir.path(), "obj.json", "{\"id\": 1}");
    let (records, errors) = read_all("popqa", &path, &ReaderOptions::new());
    assert!(records.is_empty());
    assert!(
        errors[0].is_fatal() && errors[0].to_string().contains("array"),
        "{}",
        errors[0]
    );
    let err = open("popqa", &path, &opts(json!({"x": 1}))).err().unwrap();
    assert!(err.to_string().contains("takes no option"));
}

// ---------------------------------------------------------------- MQuAKE

#[test]
fn mquake_cf_raw_sample_gives_facts_with_their_edits() {
    let records = read_clean(
        "mquake",
        &raw("mquake/MQuAKE-CF.json"),
        &ReaderOptions::new(),
    );
    let ids: Vec<_> = records.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "1-0", "1-1", "2-0", "2-1", "2-new1", "3-0", "3-1", "4-0", "4-1", "5-0", "5-1", "5-2",
            "6-0", "6-1", "6-new1"
        ]
    );
    records.iter().for_each(assert_fact);
    let adams = &records[0];
    assert_eq!(adams.fields["edited"], json!(true));
    assert_eq!(adams.str("object"), Some("United Kingdom"));
    assert_eq!(adams.str("new_object"), Some("France"));
    assert_eq!(
        strs(&adams.fields["new_object_aliases"]),
        ["French Republic"]
    );
    assert!(adams.fields["rewrite"]["fact_new_uns"]
        .as_str()
        .unwrap()
        .contains("French citizenship"));
    let capital = &records[1];
    assert_eq!(capital.fields["edited"], json!(false));
    assert!(!capital.fields.contains_key("new_object"));
    // The subject of a later hop is the answer of the hop before: its aliases are those.
    assert_eq!(
        strs(&capital.fields["subject_aliases"]),
        ["UK", "Britain", "U.K."]
    );
    // An edit of the edited chain: Berlin's country, a fact the original chain lacks.
    let berlin = &records[4];
    assert_eq!(
        (
            berlin.str("subject"),
            berlin.str("object"),
            berlin.str("new_object")
        ),
        (Some("Berlin"), Some("Germany"), Some("Denmark"))
    );
    assert_eq!(berlin.str("object_id"), Some("Q183"));
    assert_eq!(berlin.str("chain"), Some("new"));
    assert_eq!(
        berlin.str("cloze"),
        Some("Berlin is located in the country of")
    );
    let edited = read_clean(
        "mquake",
        &raw("mquake/MQuAKE-CF.json"),
        &opts(json!({"facts": "edited"})),
    );
    let ids: Vec<_> = edited.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        ["1-0", "2-0", "2-new1", "3-0", "4-0", "5-1", "6-0", "6-new1"]
    );
    // A chain of three hops edited in its middle: the fact after the edit is the case's own,
    // unedited, its subject the edited hop's true answer.
    let rome = &records[11];
    assert_eq!(
        (rome.str("subject"), rome.str("object")),
        (Some("Italy"), Some("Rome"))
    );
    assert_eq!(
        (rome.fields["hop"].clone(), rome.fields["hops"].clone()),
        (json!(2), json!(3))
    );
    assert_eq!(rome.fields["edited"], json!(false));
    assert_eq!(
        strs(&rome.fields["subject_aliases"]),
        ["Italian Republic", "IT"]
    );
    let pisa = &records[10];
    assert_eq!(
        (
            pisa.str("object"),
            pisa.str("new_object"),
            pisa.str("chain")
        ),
        (Some("Italy"), Some("France"), Some("orig"))
    );
}

#[test]
fn mquake_t_raw_sample_gives_the_later_object() {
    let o = opts(json!({"facts": "edited"}));
    let records = read_clean("mquake", &raw("mquake/MQuAKE-T.json"), &o);
    let got: Vec<_> = records
        .iter()
        .map(|r| {
            (
                r.str("subject").unwrap(),
                r.str("object").unwrap(),
                r.str("new_object").unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("Germany", "Angela Merkel", "Olaf Scholz"),
            ("France", "François Hollande", "Emmanuel Macron"),
            ("Canada", "Stephen Harper", "Justin Trudeau"),
            ("United States of America", "Donald Trump", "Joe Biden")
        ]
    );
    assert_eq!(records[0].str("relation"), Some("head of government"));
}

#[test]
fn mquake_shared_samples() {
    let Some(cf) = shared("mquake/MQuAKE-CF.sample.json") else {
        return;
    };
    let Some(t) = shared("mquake/MQuAKE-T.sample.json") else {
        return;
    };
    // Every edit of the sample (147) is one record when repeats are kept.
    let all = opts(json!({"facts": "edited", "distinct": false}));
    let records = read_clean("mquake", &cf, &all);
    assert_eq!(records.len(), 147);
    records.iter().for_each(assert_fact);
    assert!(records.iter().all(|r| r.fields["rewrite"]["fact_new_uns"]
        .as_str()
        .is_some_and(|s| s.len() > 50)));
    let relations: std::collections::BTreeSet<_> = records
        .iter()
        .map(|r| r.str("relation_id").unwrap())
        .collect();
    assert_eq!(relations.len(), 23);
    // The facts of every chain: the same facts recur across cases, and are given once.
    let kept = read_clean("mquake", &cf, &opts(json!({"distinct": false}))).len();
    let distinct = read_clean("mquake", &cf, &ReaderOptions::new());
    assert!(distinct.len() < kept, "{} !< {kept}", distinct.len());
    let mut keys = std::collections::HashSet::new();
    for r in &distinct {
        let key = ["subject_id", "relation_id", "object_id", "new_object_id"].map(|k| r.str(k));
        assert!(keys.insert(key), "{} repeats a fact", r.id);
    }
    // MQuAKE-T's 20 cases hold 6 distinct real changes (New York City's mayor in several).
    let every = read_clean("mquake", &t, &all);
    assert_eq!(every.len(), 20);
    let later = read_clean("mquake", &t, &opts(json!({"facts": "edited"})));
    assert_eq!(later.len(), 6);
    assert_eq!(
        (
            later[0].str("subject"),
            later[0].str("object"),
            later[0].str("new_object")
        ),
        (
            Some("New York City"),
            Some("Bill de Blasio"),
            Some("Eric Adams")
        )
    );
}

#[test]
fn mquake_bad_cases_and_options() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(raw("mquake/MQuAKE-CF.json")).unwrap();
    let cases: Vec<Value> = serde_json::from_str(&text).unwrap();
    let mut off_chain = cases[0].clone();
    off_chain["requested_rewrite"][0]["subject"] = json!("Someone Else");
    let mut short = cases[1].clone();
    short["single_hops"].as_array_mut().unwrap().pop();
    let mut bad_target = cases[1].clone();
    bad_target["requested_rewrite"][1]["target_new"] = json!("Denmark");
    let body = json!([off_chain, short, bad_target, cases[0]]);
    let path = write(dir.path(), "cf.json", &body.to_string());
    let (records, errors) = read_all("mquake", &path, &ReaderOptions::new());
    assert_eq!(
        records.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["1-0", "1-1"]
    );
    let seen: Vec<_> = errors.iter().map(record_error).collect();
    assert_eq!(seen.iter().map(|e| e.1).collect::<Vec<_>>(), [0, 1, 2]);
    assert!(seen[0].3.contains("neither chain"), "{}", seen[0].3);
    assert!(seen[1].3.contains("single_hops"), "{}", seen[1].3);
    assert!(seen[2].3.contains("target_new"), "{}", seen[2].3);
    if let ReadError::Record { id, .. } = &errors[0] {
        assert_eq!(id.as_deref(), Some("1"));
    }
    // With `file_in_id`, the ids name their file.
    let (records, _) = read_all("mquake", &path, &opts(json!({"file_in_id": true})));
    assert_eq!(
        records.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["cf:1-0", "cf:1-1"]
    );
    for bad in [
        json!({"facts": "some"}),
        json!({"distinct": "yes"}),
        json!({"hops": 2}),
        json!({"file_in_id": "yes"}),
    ] {
        let err = open("mquake", &path, &opts(bad.clone())).err().unwrap();
        assert!(matches!(err, ReadError::Config(_)), "{bad}: {err}");
    }
}
