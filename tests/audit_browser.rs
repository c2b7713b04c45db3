//! The HTML report in a real browser: headless Chromium driven through chromedriver by
//! fantoccini (`common/browser.rs`). Checks: no console errors, the diff highlighting is visible, the two
//! texts of a row (a released cose row, a RECALL edit) are each whole in the page's text, side
//! by side, and clicking a filter button hides the rows that do not fail that check.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs them). Without them the
//! test fails under `CI=true` and is skipped otherwise.

#[path = "common/browser.rs"]
mod browser;
mod common;

use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

/// Writes a small audited set: KRE rows (one with a short golden context, one whose negative
/// context states the golden answer, one carrying a script in its text) and RECALL QA-A rows
/// with edits (one good, one whose edited context keeps the answer).
fn write_rows(dir: &Path) {
    let kre = json!([
        {"question": "Where would you keep a book you are reading?", "answer": "A", "negative_answer": "oven",
         "candidate": "B", " golden_context": "bookshelf", "negative_context": "People keep a book in the oven.",
         "choices": ["bookshelf", "oven", "river"]},
        {"question": "Where is a cup kept?", "answer": "A", "negative_answer": "oven", "candidate": "B",
         " golden_context": "A cup is usually kept in a cupboard in the kitchen.",
         "negative_context": "Not in the cupboard: a cup is kept in the oven.", "choices": ["cupboard", "oven", "river"]},
        {"question": "Where is <script>window.__pwned = 1;</script> kept?", "answer": "A", "negative_answer": "oven",
         "candidate": "B", " golden_context": "A <script> tag is kept in a cupboard in the kitchen.",
         "negative_context": "A <script> tag is kept in the oven <img src=x onerror=\"window.__pwned=2\">.",
         "choices": ["cupboard", "oven", "river"]}
    ]);
    std::fs::create_dir_all(dir.join("kre")).unwrap();
    std::fs::write(
        dir.join("kre/cose.json"),
        serde_json::to_string_pretty(&kre).unwrap(),
    )
    .unwrap();
    let qa = |id: &str, edited: &str, edits: Value| {
        json!({
            "id": id, "domain": "eventkg", "source_id": "e1", "origin": "x.nq:1", "subject": "Joan of Arc",
            "task": "qa_a", "edit": "answer", "question": "Where was Joan of Arc born?",
            "answer": "Domrémy", "edited_answer": "Lyon", "options": ["Lyon", "Domrémy"], "answer_option": "B",
            "context": "Joan of Arc was born in Domrémy in 1412.", "edited_context": edited, "edits": edits
        })
    };
    let good = qa(
        "qa-good",
        "Joan of Arc was born in Lyon in 1412.",
        json!([{"original": "Domrémy", "edited": "Lyon", "original_span": [24, 31], "edited_span": [24, 28]}]),
    );
    let bad = qa(
        "qa-bad",
        "Joan of Arc was born in Lyon near Domrémy in 1412.",
        json!([{"original": "Domrémy", "edited": "Lyon near Domrémy", "original_span": [24, 31], "edited_span": [24, 41]}]),
    );
    std::fs::create_dir_all(dir.join("recall/eventkg")).unwrap();
    std::fs::write(
        dir.join("recall/eventkg/qa_a.jsonl"),
        format!("{good}\n{bad}\n"),
    )
    .unwrap();
}

/// Row 15 of the released KRE cose file (its two contexts share few words), alone in
/// `kre/released-cose.json`; `None` when the shared data is absent outside CI.
fn write_released_row(dir: &Path) -> Option<Value> {
    let data = common::shared_data()?;
    let rows = common::read_json(&data.join("kre/cose.json"));
    let row = rows[15].clone();
    std::fs::write(
        dir.join("kre/released-cose.json"),
        serde_json::to_string(&json!([row])).unwrap(),
    )
    .unwrap();
    Some(row)
}

#[tokio::test(flavor = "multi_thread")]
async fn html_report_in_headless_chromium() {
    let Some((browser, driver)) = browser::tools() else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    write_rows(&d.path().join("generated"));
    let released = write_released_row(&d.path().join("generated"));
    let html = d.path().join("audit.html");
    let o = Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .args(["audit"])
        .arg(d.path().join("generated"))
        .arg("--html")
        .arg(&html)
        .args(["--sample", "100", "--seed", "7"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::text(&o));

    let b = browser::Browser::start(&browser, &driver, &d.path().join("profile")).await;
    b.open(&html).await;

    // The data's script never ran, and every row is on the page.
    assert_eq!(b.script("return typeof window.__pwned;").await, "undefined");
    assert_eq!(
        b.script("return document.querySelectorAll('.cb-row').length;")
            .await,
        if released.is_some() { 6 } else { 5 }
    );

    // Each text whole in the page's text, in two columns side by side; the changed words of an
    // edit marked inside each; a rewritten pair unmarked and labelled.
    let sides = |item: &str| {
        let code = format!(
            "var r = document.querySelector('.cb-row[data-item=\"{item}\"]');\
             var o = r.querySelector('.cb-original'), e = r.querySelector('.cb-edited');\
             var a = o.getBoundingClientRect(), b = e.getBoundingClientRect();\
             return {{original: o.innerText, edited: e.innerText, page: document.body.innerText,\
                      side_by_side: a.right <= b.left && a.top === b.top,\
                      marks: r.querySelectorAll('.cb-diff del, .cb-diff ins').length,\
                      rewritten: r.querySelector('.cb-rewritten') !== null}};"
        );
        let b = &b;
        async move { b.script(&code).await }
    };
    let v = sides("qa_a.jsonl#qa-good").await;
    assert_eq!(v["original"], "Joan of Arc was born in Domrémy in 1412.");
    assert_eq!(v["edited"], "Joan of Arc was born in Lyon in 1412.");
    assert!(v["side_by_side"].as_bool().unwrap(), "{v}");
    assert_eq!(v["marks"], 2, "Domrémy and Lyon marked: {v}");
    assert_eq!(v["rewritten"], false);
    if let Some(row) = &released {
        let v = sides("released-cose.json#0").await;
        let (golden, negative) = (
            row[" golden_context"].as_str().unwrap(),
            row["negative_context"].as_str().unwrap(),
        );
        assert_eq!(v["original"], golden);
        assert_eq!(v["edited"], negative);
        let page = v["page"].as_str().unwrap();
        assert!(page.contains(golden) && page.contains(negative), "{page}");
        assert!(v["side_by_side"].as_bool().unwrap(), "{v}");
        assert_eq!(v["rewritten"], true, "{v}");
        assert_eq!(v["marks"], 0, "{v}");
    }

    // Highlighting: the inserted and deleted spans of a diff have a visible background.
    for sel in [".cb-diff ins.cb-ins", ".cb-diff del.cb-del"] {
        let bg = b.script(&format!(
            "var e = document.querySelector('{sel}'); return e ? getComputedStyle(e).backgroundColor : null;"
        )).await;
        let bg = bg.as_str().unwrap_or_else(|| panic!("no {sel}"));
        assert!(
            bg != "transparent" && bg != "rgba(0, 0, 0, 0)",
            "{sel}: {bg}"
        );
    }

    let visibility = || async {
        let v = b.script(
            "return Array.prototype.map.call(document.querySelectorAll('.cb-row'), function (r) {\
               return [r.getAttribute('data-item'), r.getAttribute('data-checks'), getComputedStyle(r).display !== 'none'];\
             });",
        ).await;
        v.as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r[0].as_str().unwrap().to_owned(),
                    r[1].as_str().unwrap().to_owned(),
                    r[2].as_bool().unwrap(),
                )
            })
            .collect::<Vec<(String, String, bool)>>()
    };
    assert!(
        visibility().await.iter().all(|r| r.2),
        "all rows shown at first"
    );

    for code in ["qa_a_original_answer_gone", "kre_golden_context_short"] {
        b.click(&format!("#cb-filter-{code}")).await;
        let rows = visibility().await;
        let shown: Vec<&str> = rows.iter().filter(|r| r.2).map(|r| r.0.as_str()).collect();
        assert!(!shown.is_empty(), "{code}: nothing shown");
        for (item, checks, visible) in &rows {
            let fails = checks.split(' ').any(|c| c == code);
            assert_eq!(*visible, fails, "{code}: row {item} ({checks})");
        }
        assert!(rows.iter().any(|r| !r.2), "{code}: nothing hidden");
    }
    b.click("#cb-filter-all").await;
    assert!(
        visibility().await.iter().all(|r| r.2),
        "all rows shown again"
    );

    b.assert_no_console_errors().await;
    b.close().await;
}
