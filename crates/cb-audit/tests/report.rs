//! Reading files (released and clean KRE, RECALL), the report, the sample, the HTML page,
//! the sheet and the agreement.

use cb_audit::sheet::{
    agreement, read_ratings, read_sheet, sheet_agreement, write_sheet, Plausibility, Rating,
};
use cb_audit::{audit_paths, html, sample, AuditError};
use serde_json::json;
use std::path::Path;

fn kre_json(question: &str, golden: &str, negative: &str) -> serde_json::Value {
    json!({
        "question": question, "answer": "A", "negative_answer": "oven", "candidate": "B",
        " golden_context": golden, "negative_context": negative,
        "choices": ["bookshelf", "oven", "river"]
    })
}

fn write(p: &Path, s: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, s).unwrap();
}

#[test]
fn released_layout_and_clean_jsonl_are_read_and_ids_follow_the_file() {
    let d = tempfile::tempdir().unwrap();
    let rows = json!([
        kre_json(
            "Where is a book kept?",
            "A book is kept on a bookshelf.",
            "A book is kept in the oven."
        ),
        kre_json(
            "Where is a pan kept?",
            "bookshelf",
            "The oven keeps the bookshelf warm."
        )
    ]);
    write(
        &d.path().join("rel/cose.json"),
        &serde_json::to_string_pretty(&rows).unwrap(),
    );
    let mut clean = kre_json(
        "Where is a cup kept?",
        "A cup is kept on a bookshelf.",
        "In the oven.",
    );
    let o = clean.as_object_mut().unwrap();
    let g = o.remove(" golden_context").unwrap();
    o.insert("golden_context".into(), g);
    o.insert("id".into(), json!("kre-cose/q1"));
    write(
        &d.path().join("gen/kre/cose/cose.jsonl"),
        &format!("{clean}\n"),
    );
    // The same rows in the released layout beside it, and files never audited.
    write(
        &d.path().join("gen/kre/cose/cose.json"),
        &serde_json::to_string(&rows).unwrap(),
    );
    write(
        &d.path().join("gen/kre/cose/manifest.json"),
        "{\"rows\": 1}",
    );
    write(
        &d.path().join("gen/kre/cose/rejects.jsonl"),
        "{\"reason\": \"x\"}\n",
    );
    write(
        &d.path().join("gen/kre/cose/runs.jsonl"),
        "not json at all\n",
    );
    write(&d.path().join("gen/other.json"), "{\"not\": \"kre\"}");

    let r = audit_paths(&[d.path().join("rel/cose.json"), d.path().join("gen")]).unwrap();
    assert_eq!(r.files.len(), 2, "{:?}", r.files);
    assert_eq!(r.rows, 3);
    let items = r.items_at(&[0, 1, 2]).unwrap();
    assert_eq!(items[0].id, "cose.json#0");
    assert_eq!(items[1].id, "cose.json#1");
    assert_eq!(items[2].id, "kre-cose/q1");
    assert_eq!(items[2].item_id, "cose.jsonl#kre-cose/q1");
    assert!(items.iter().all(|i| i.domain == "cose"));
    assert_eq!(items[0].original, "A book is kept on a bookshelf.");
    assert!(
        items[1].fails("kre_golden_context_short") && !items[0].fails("kre_golden_context_short")
    );
    let short = r.check("kre_golden_context_short").unwrap();
    assert_eq!((short.failed, short.checked), (1, 3));
    assert_eq!(short.examples, vec!["cose.json#1".to_owned()]);
    let states = r.check("kre_negative_context_states_golden").unwrap();
    assert_eq!(states.failed, 1);
    let j: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert!(j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["id"] == "cose.json#1" && f["check"] == "kre_golden_context_short"));
    assert_eq!(j["checks"][0]["code"], "kre_answer_letter");
    assert!(r.summary().contains("kre_golden_context_short"));
}

#[test]
fn a_bad_record_names_the_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    let good = json!({"golden_context": "g", "question": "q", "answer": "A", "negative_answer": "b",
        "candidate": "B", "negative_context": "n", "choices": ["a", "b"]});
    let p = d.path().join("cose.jsonl");
    write(
        &p,
        &format!("{good}\n{{\"question\": \"q\", \"choices\": []}}\n"),
    );
    let e = audit_paths(std::slice::from_ref(&p)).unwrap_err();
    assert!(matches!(e, AuditError::Parse { .. }));
    let msg = e.to_string();
    assert!(
        msg.contains("cose.jsonl") && msg.contains("line 2"),
        "{msg}"
    );
    let q = d.path().join("qa_a.jsonl");
    write(&q, "{oops\n");
    let msg = audit_paths(&[q]).unwrap_err().to_string();
    assert!(msg.contains("qa_a.jsonl: line 1"), "{msg}");
    let missing = audit_paths(&[d.path().join("nope.json")])
        .unwrap_err()
        .to_string();
    assert!(missing.contains("nope.json"), "{missing}");
}

/// The report of two files of `n` rows each, and the folder that holds them (the report
/// reads its rows again from there).
fn report_of(n: usize) -> (tempfile::TempDir, cb_audit::Report) {
    let d = tempfile::tempdir().unwrap();
    for (file, dom) in [("a/cose.json", "cose"), ("b/ecare.json", "ecare")] {
        let rows: Vec<_> = (0..n)
            .map(|i| {
                let golden = if i % 3 == 0 {
                    "bookshelf".to_owned()
                } else {
                    format!("Book {i} is kept on a bookshelf.")
                };
                kre_json(
                    &format!("Where is book {i} of {dom} kept?"),
                    &golden,
                    "It is kept in the oven, away from damp.",
                )
            })
            .collect();
        write(&d.path().join(file), &serde_json::to_string(&rows).unwrap());
    }
    let r = audit_paths(&[d.path().to_path_buf()]).unwrap();
    (d, r)
}

#[test]
fn the_sample_is_seeded_and_covers_every_stratum() {
    let (_d, r) = report_of(30);
    let a = sample::stratified_sample(&r, 10, 7);
    assert_eq!(a.len(), 10);
    assert_eq!(a, sample::stratified_sample(&r, 10, 7));
    assert_ne!(a, sample::stratified_sample(&r, 10, 8));
    assert!(a.windows(2).all(|w| w[0] < w[1]));
    let items = r.items_at(&a).unwrap();
    for dom in ["cose", "ecare"] {
        for failing in [false, true] {
            assert!(
                items
                    .iter()
                    .any(|it| it.domain == dom && it.failed.is_empty() != failing),
                "no {dom}/{failing} row in the sample"
            );
        }
    }
    // 60 rows: 20 failing (short), 40 passing; proportional shares of 10 are 5 + 5 passing
    // ... per domain: 10 failing + 20 passing each -> 2 (or 1) failing and 3 (or 4) passing.
    let failing = items.iter().filter(|it| !it.failed.is_empty()).count();
    assert!((3..=4).contains(&failing), "{failing}");
    assert_eq!(sample::stratified_sample(&r, 1000, 7).len(), 60);
}

#[test]
fn the_sheet_has_the_columns_and_the_same_seed_gives_the_same_sheet() {
    let (_d, r) = report_of(10);
    let rows = sample::stratified_sample(&r, 6, 3);
    let mut a = Vec::new();
    write_sheet(&mut a, &r.items_at(&rows).unwrap()).unwrap();
    let mut b = Vec::new();
    let again = sample::stratified_sample(&r, 6, 3);
    write_sheet(&mut b, &r.items_at(&again).unwrap()).unwrap();
    assert_eq!(a, b);
    let text = String::from_utf8(a).unwrap();
    let header = text.lines().next().unwrap();
    assert!(header.starts_with("item_id,domain,file,kind,question,options,answer,"));
    assert!(header.ends_with("failed_checks,rating,plausible,comment"));
    assert_eq!(text.lines().count(), 7);
}

#[test]
fn html_escapes_data_and_holds_no_external_url() {
    let d = tempfile::tempdir().unwrap();
    let rows = json!([kre_json(
        "Where is <script>alert('x')</script> kept?",
        "bookshelf <b>bold</b>",
        "It is kept in the oven & \"quoted\" <img src=x onerror=alert(1)>."
    )]);
    write(&d.path().join("cose.json"), &rows.to_string());
    let r = audit_paths(&[d.path().join("cose.json")]).unwrap();
    let page = html::render(&r, &r.items_at(&[0]).unwrap(), "audit <of> things", None);
    assert_eq!(
        page.matches("<script").count(),
        1,
        "only the page's own script"
    );
    assert!(page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
    assert!(!page.contains("<img"));
    assert!(!page.contains("<b>bold"));
    assert!(page.contains("audit &lt;of&gt; things"));
    for bad in ["http://", "https://", "src=\"", "@import", "url("] {
        assert!(!page.contains(bad), "{bad}");
    }
    // The two contexts share no word: side by side, unmarked, labelled.
    assert!(page.contains("class=\"cb-text cb-original\">bookshelf &lt;b&gt;bold&lt;/b&gt;</div>"));
    assert!(page.contains("rewritten: 0% of the words shared"));
    assert!(page.contains("data-check=\"kre_golden_context_short\""));
}

fn sheet(dir: &Path, name: &str, ratings: &[&str]) -> std::path::PathBuf {
    let p = dir.join(name);
    let mut s = String::from("item_id,question,rating,comment\n");
    for (i, r) in ratings.iter().enumerate() {
        s.push_str(&format!("cose.json#{i},\"Q, {i}\",{r},\n"));
    }
    write(&p, &s);
    p
}

#[test]
fn fleiss_kappa_of_a_hand_computed_example() {
    // 4 items, 3 raters, categories (not, somewhat, highly):
    //   item 0: not, not, not                -> counts (3,0,0), P_0 = (3·2)/(3·2) = 1
    //   item 1: not, not, somewhat           -> (2,1,0),        P_1 = (2·1)/6     = 1/3
    //   item 2: somewhat, highly, highly     -> (0,1,2),        P_2 = (2·1)/6     = 1/3
    //   item 3: highly, highly, highly       -> (0,0,3),        P_3 = 1
    // P̄ = (1 + 1/3 + 1/3 + 1) / 4 = 2/3 (the percent agreement).
    // Shares over the 12 ratings: not 5/12, somewhat 2/12, highly 5/12;
    // P_e = (25 + 4 + 25) / 144 = 3/8.
    // kappa = (2/3 - 3/8) / (1 - 3/8) = (7/24) / (5/8) = 7/15.
    let d = tempfile::tempdir().unwrap();
    let a = sheet(d.path(), "a.csv", &["not", "not", "somewhat", "highly"]);
    let b = sheet(
        d.path(),
        "b.csv",
        &["Not", "not", "highly", "highly misleading"],
    );
    let c = sheet(d.path(), "c.csv", &["not", "somewhat", "highly", "HIGHLY"]);
    let sheets: Vec<_> = [a, b, c]
        .iter()
        .map(|p| (p.display().to_string(), read_ratings(p).unwrap()))
        .collect();
    let g = agreement(&sheets).unwrap();
    assert!(
        (g.fleiss_kappa.unwrap() - 7.0 / 15.0).abs() < 1e-12,
        "{:?}",
        g.fleiss_kappa
    );
    assert!((g.percent_agreement - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(g.items[1].counts, [2, 1, 0]);
    assert_eq!(g.items[1].majority, Some(Rating::Not));
    assert_eq!(g.items[2].majority, Some(Rating::Highly));
    assert!(g.summary().contains("0.4667"), "{}", g.summary());
}

/// A sheet with both scales: (A.4 rating, plausibility) per item, an empty plausibility cell
/// for "not rated on it".
fn sheet_of_both(dir: &Path, name: &str, ratings: &[(&str, &str)]) -> std::path::PathBuf {
    let p = dir.join(name);
    let mut s = String::from("item_id,rating,plausible,comment\n");
    for (i, (r, q)) in ratings.iter().enumerate() {
        s.push_str(&format!("cose.json#{i},{r},{q},\n"));
    }
    write(&p, &s);
    p
}

#[test]
fn both_scales_agree_as_by_hand_and_a_sheet_of_a4_alone_still_reads() {
    // A.4 as in the example above (kappa 7/15). Plausibility, 4 items, 3 raters,
    // levels (implausible, somewhat, plausible):
    //   item 0: plausible x3                       -> (0,0,3), P_0 = 1
    //   item 1: implausible, somewhat, plausible   -> (1,1,1), P_1 = 0, a tie
    //   item 2: implausible, implausible, somewhat -> (2,1,0), P_2 = 1/3
    //   item 3: plausible, somewhat, plausible     -> (0,1,2), P_3 = 1/3
    // P̄ = (1 + 0 + 1/3 + 1/3) / 4 = 5/12. Shares over 12: 3/12, 3/12, 6/12;
    // P_e = 1/16 + 1/16 + 1/4 = 3/8. kappa = (5/12 - 3/8) / (5/8) = 1/15.
    let d = tempfile::tempdir().unwrap();
    let a = sheet_of_both(
        d.path(),
        "a.csv",
        &[
            ("not", "plausible"),
            ("not", "implausible"),
            ("somewhat", "implausible"),
            ("highly", "plausible"),
        ],
    );
    let b = sheet_of_both(
        d.path(),
        "b.csv",
        &[
            ("not", "Plausible"),
            ("not", "somewhat"),
            ("highly", "implausible"),
            ("highly", "somewhat plausible"),
        ],
    );
    let c = sheet_of_both(
        d.path(),
        "c.csv",
        &[
            ("not", "plausible"),
            ("somewhat", "plausible"),
            ("highly", "somewhat"),
            ("highly", "plausible"),
        ],
    );
    let read = |ps: &[&std::path::PathBuf]| -> Vec<_> {
        ps.iter()
            .map(|p| (p.display().to_string(), read_sheet(p).unwrap()))
            .collect()
    };
    let g = sheet_agreement(&read(&[&a, &b, &c])).unwrap();
    assert!((g.misleading.fleiss_kappa.unwrap() - 7.0 / 15.0).abs() < 1e-12);
    let p = g.plausible.as_ref().unwrap();
    assert!(
        (p.fleiss_kappa.unwrap() - 1.0 / 15.0).abs() < 1e-12,
        "{p:?}"
    );
    assert!((p.percent_agreement - 5.0 / 12.0).abs() < 1e-12);
    assert_eq!(p.category_shares, [0.25, 0.25, 0.5]);
    let majorities: Vec<_> = p.items.iter().map(|i| i.majority).collect();
    use Plausibility::*;
    assert_eq!(
        majorities,
        [Some(Plausible), None, Some(Implausible), Some(Plausible)]
    );
    assert_eq!(p.items[1].tied, [Implausible, Somewhat, Plausible]);
    let text = g.summary();
    assert!(text.contains("Fleiss' kappa: 0.4667"), "{text}");
    assert!(
        text.contains("plausible, over the 4 of 4 items every sheet rated on it:"),
        "{text}"
    );
    assert!(
        text.contains("implausible  somewhat  plausible") && text.contains("Fleiss' kappa: 0.0667"),
        "{text}"
    );
    // The JSON keeps A.4's fields where they were and adds `plausible`.
    let v = serde_json::to_value(&g).unwrap();
    assert!((v["fleiss_kappa"].as_f64().unwrap() - 7.0 / 15.0).abs() < 1e-12);
    assert_eq!(v["plausible"]["items"][0]["majority"], "plausible");
    // One rater left item 3's plausibility empty: plausibility is over items 0 to 2:
    // P̄ = (1 + 0 + 1/3) / 3 = 4/9; shares over 9: 3/9, 2/9, 4/9, P_e = 29/81;
    // kappa = (36/81 - 29/81) / (52/81) = 7/52. A.4's figures are unchanged.
    let c2 = sheet_of_both(
        d.path(),
        "c2.csv",
        &[
            ("not", "plausible"),
            ("somewhat", "plausible"),
            ("highly", "somewhat"),
            ("highly", ""),
        ],
    );
    let g = sheet_agreement(&read(&[&a, &b, &c2])).unwrap();
    assert!((g.misleading.fleiss_kappa.unwrap() - 7.0 / 15.0).abs() < 1e-12);
    let p = g.plausible.as_ref().unwrap();
    assert!((p.fleiss_kappa.unwrap() - 7.0 / 52.0).abs() < 1e-12);
    assert!(
        g.summary().contains("over the 3 of 4 items"),
        "{}",
        g.summary()
    );
    // A sheet written before the plausibility scale (no such column) still reads; the
    // plausibility is then not measured, and said so.
    let old = sheet(
        d.path(),
        "old.csv",
        &["not", "somewhat", "highly", "HIGHLY"],
    );
    assert!(read_sheet(&old)
        .unwrap()
        .iter()
        .all(|r| r.plausibility.is_none()));
    let g = sheet_agreement(&read(&[&a, &b, &old])).unwrap();
    assert!((g.misleading.fleiss_kappa.unwrap() - 7.0 / 15.0).abs() < 1e-12);
    assert!(g.plausible.is_none());
    assert!(
        g.summary().contains("plausible: not measured"),
        "{}",
        g.summary()
    );
    // A level that is not one of the scale's is an error naming the file and line.
    let bad = sheet_of_both(
        d.path(),
        "bad.csv",
        &[("not", "plausible"), ("not", "believable")],
    );
    let e = read_sheet(&bad).unwrap_err().to_string();
    assert!(
        e.contains("bad.csv") && e.contains("line 3") && e.contains("believable"),
        "{e}"
    );
}

#[test]
fn ties_and_bad_sheets() {
    let d = tempfile::tempdir().unwrap();
    let a = sheet(d.path(), "a.csv", &["not", "highly"]);
    let b = sheet(d.path(), "b.csv", &["somewhat", "highly"]);
    let s: Vec<_> = [&a, &b]
        .iter()
        .map(|p| (p.display().to_string(), read_ratings(p).unwrap()))
        .collect();
    let g = agreement(&s).unwrap();
    assert_eq!(g.items[0].majority, None);
    assert_eq!(g.items[0].tied, vec![Rating::Not, Rating::Somewhat]);
    let bad = sheet(d.path(), "bad.csv", &["not", "very"]);
    let e = read_ratings(&bad).unwrap_err().to_string();
    assert!(
        e.contains("bad.csv") && e.contains("line 3") && e.contains("very"),
        "{e}"
    );
    let empty = sheet(d.path(), "empty.csv", &["not", ""]);
    assert!(read_ratings(&empty)
        .unwrap_err()
        .to_string()
        .contains("line 3"));
    let short = sheet(d.path(), "short.csv", &["not"]);
    let s2 = vec![
        s[0].clone(),
        (short.display().to_string(), read_ratings(&short).unwrap()),
    ];
    assert!(agreement(&s2)
        .unwrap_err()
        .to_string()
        .contains("cose.json#1"));
}

#[test]
fn a_page_keeps_a_bounded_seeded_sample_of_each_checks_failing_rows() {
    // 30 rows a file; every third golden context is short (10 failing rows a file).
    let (_d, r) = report_of(30);
    let short = r.check("kre_golden_context_short").unwrap();
    assert_eq!(short.failed, 20);
    // Enough room: every failing row, no note.
    let all = r.failing_sample(100, 1).unwrap();
    let failing: Vec<usize> = (0..r.rows).filter(|&i| r.outline[i].failing).collect();
    assert_eq!(all.rows, failing);
    assert!(all.note.is_none());
    // Five a check: the counts stay over all rows, the page says what was left out.
    let five = r.failing_sample(5, 1).unwrap();
    assert_eq!(five.rows, r.failing_sample(5, 1).unwrap().rows);
    assert_ne!(five.rows, r.failing_sample(5, 2).unwrap().rows);
    let items = r.items_at(&five.rows).unwrap();
    let shown_short = items
        .iter()
        .filter(|it| it.fails("kre_golden_context_short"))
        .count();
    assert!((5..=items.len()).contains(&shown_short), "{shown_short}");
    let per_check = |code: &str| items.iter().filter(|it| it.fails(code)).count();
    for c in r.checks.iter().filter(|c| c.failed > 0) {
        assert!(per_check(c.code) >= c.failed.min(5), "{}", c.code);
    }
    let note = five.note.unwrap();
    assert!(note.contains("kre_golden_context_short (20)"), "{note}");
    let page = html::render(&r, &items, "audit", Some(&note));
    assert!(page.contains("kre_golden_context_short (20)</button>"));
    assert!(page.contains("a seeded sample of 5"));
}

#[test]
fn the_json_written_as_a_stream_is_the_json_of_the_report() {
    let (_d, r) = report_of(12);
    assert!(!r.findings.is_empty());
    let mut streamed = Vec::new();
    r.write_json(&mut streamed).unwrap();
    assert_eq!(String::from_utf8(streamed).unwrap(), r.to_json());
    let j: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(j["findings"].as_array().unwrap().len(), r.findings.len());
    assert_eq!(j["findings"][0]["check"], "kre_golden_context_short");
}

#[test]
fn a_large_one_line_array_streams_and_bad_utf8_past_the_first_block_names_its_place() {
    let d = tempfile::tempdir().unwrap();
    // One line of about 200 KB, "é" on both sides of every 64 KiB boundary somewhere.
    let rows: Vec<_> = (0..400)
        .map(|i| {
            kre_json(
                &format!("Where is book {i} kept, café {}?", "é".repeat(200)),
                "A book is kept on a bookshelf.",
                "It is kept in the oven.",
            )
        })
        .collect();
    let text = format!("\u{feff}{}", serde_json::to_string(&rows).unwrap());
    assert!(text.len() > 3 * 65536 && !text.contains('\n'));
    write(&d.path().join("cose.json"), &text);
    let r = audit_paths(&[d.path().join("cose.json")]).unwrap();
    assert_eq!(r.rows, 400);
    let last = &r.items_at(&[399]).unwrap()[0];
    assert_eq!(last.id, "cose.json#399");
    assert!(last.question.starts_with("Where is book 399 kept, café éé"));
    // An invalid byte in the third 64 KiB block, on line 3.
    let line = &text[3..];
    let k = (150_000..)
        .find(|&k| line.as_bytes()[k].is_ascii())
        .unwrap();
    let mut bytes = format!("\n\n{line}").into_bytes();
    bytes[2 + k] = 0xFF;
    std::fs::write(d.path().join("bad.json"), &bytes).unwrap();
    let msg = audit_paths(&[d.path().join("bad.json")])
        .unwrap_err()
        .to_string();
    let want = format!(
        "bad.json: line 3: invalid UTF-8 at byte {} of the line",
        k + 1
    );
    assert!(msg.contains(&want), "{msg}");
}

/// The audit reports both quality axes of each build: measured where its reader asked the
/// axis' check (the plausibility one with the rows refused `reader_implausible`), "not
/// measured" with the reason where it did not, and for a file with no build beside it.
#[test]
fn the_audit_reports_both_axes_measured_or_not() {
    let d = tempfile::tempdir().unwrap();
    let row = kre_json(
        "Where is a book kept?",
        "A book is kept on a bookshelf.",
        "A book is kept in the oven.",
    );
    let rows = serde_json::to_string(&json!([row])).unwrap();
    let reader = |checks: serde_json::Value| {
        json!({
            "stages": [{"name": "reader_check", "in": 10, "out": 6, "rejected": 4,
                        "reasons": {"reader_disagrees": 1, "reader_implausible": 3}}],
            "reader": {"backend": "openai", "model": "rm", "endpoint": "http://r",
                       "checks": checks}
        })
        .to_string()
    };
    write(&d.path().join("rel/cose.json"), &rows);
    write(&d.path().join("both/cose.json"), &rows);
    write(
        &d.path().join("both/manifest.json"),
        &reader(json!({"negative": {"asked": 10, "passed": 8},
                       "plausible": {"asked": 8, "passed": 5}})),
    );
    write(&d.path().join("a4/cose.json"), &rows);
    write(
        &d.path().join("a4/manifest.json"),
        &reader(json!({"negative": {"asked": 10, "passed": 8}})),
    );
    let paths = ["rel", "both", "a4"].map(|p| d.path().join(p).join("cose.json"));
    let r = audit_paths(&paths).unwrap();
    assert_eq!(r.axes.len(), 3);
    let measured: Vec<[bool; 2]> = r
        .axes
        .iter()
        .map(|b| b.axes.clone().map(|a| a.measured()))
        .collect();
    assert_eq!(measured, [[false, false], [true, true], [true, false]]);
    let text = r.summary();
    for line in [
        "  misleading: not measured (no build manifest beside the file, so no reader verdicts: released files, or files moved out of their build)\n",
        "  misleading: the reader's `negative` check passed by `rm` 8 of 10\n",
        "  plausible: the reader's `plausible` check passed by `rm` 5 of 8; 3 rows refused `reader_implausible`\n",
        "  plausible: not measured (the reader check did not ask whether the context is one a careful reader would accept: no `plausible` check)\n",
    ] {
        assert!(text.contains(line), "{line:?} not in\n{text}");
    }
    assert!(text.contains(&format!(
        "quality axes of {}:",
        d.path().join("both/manifest.json").display()
    )));
    let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(v["axes"][1]["axes"][1]["refused"], 3);
    assert_eq!(v["axes"][2]["axes"][1]["check"], serde_json::Value::Null);
}
