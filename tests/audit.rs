//! `conflictbench audit` and `conflictbench agreement` end to end: the released CoS-E sample
//! (its known defects recounted here independently), outputs, exit codes.

#![allow(clippy::print_stderr)] // a skipped test says so
mod common;

use serde_json::{json, Value};
use std::path::Path;
use std::process::Output;

fn cli(args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// An independent normalisation for the recount: lower case, letters and digits only,
/// without the articles a/an/the, number words up to twenty as digits (the audit's rule for
/// "states", written again here on purpose).
fn norm(s: &str) -> String {
    const NUMBERS: [&str; 21] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
    ];
    let s: String = s
        .chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_lowercase().next().unwrap()
            } else {
                ' '
            }
        })
        .collect();
    s.split_whitespace()
        .filter(|w| !["a", "an", "the"].contains(w))
        .map(|w| match NUMBERS.iter().position(|n| n == &w) {
            Some(i) => i.to_string(),
            None => w.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn cose_short_golden_contexts_and_negative_contexts_stating_the_golden_answer() {
    let Some(data) = common::shared_data() else {
        eprintln!("skipped: ../shared/data is missing");
        return;
    };
    let file = data.join("kre/cose.json");
    let d = tempfile::tempdir().unwrap();
    let json_out = d.path().join("audit.json");
    let o = cli(&[
        "audit",
        file.to_str().unwrap(),
        "--json",
        json_out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::text(&o));

    // The recount, straight from the file.
    let rows = common::read_json(&file);
    let rows = rows.as_array().unwrap();
    let (mut short, mut states) = (Vec::new(), Vec::new());
    for (i, r) in rows.iter().enumerate() {
        let golden_ctx = r[" golden_context"].as_str().unwrap();
        if golden_ctx.split_whitespace().count() < 4 {
            short.push(format!("cose.json#{i}"));
        }
        let letter = r["answer"].as_str().unwrap().as_bytes()[0];
        let golden = r["choices"][usize::from(letter - b'A')].as_str().unwrap();
        let neg = norm(r["negative_context"].as_str().unwrap());
        if format!(" {neg} ").contains(&format!(" {} ", norm(golden))) {
            states.push(format!("cose.json#{i}"));
        }
    }
    // FORMATS.md: 137 of 1,221 (11.2%) short, 5.7% stating the golden answer in the full
    // release; the 150-row sample has 17 and 8.
    assert_eq!((short.len(), states.len()), (17, 8));

    let report = common::read_json(&json_out);
    let check = |code: &str| -> (u64, Vec<String>) {
        let c = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["code"] == code)
            .unwrap();
        assert_eq!(c["checked"], 150);
        let ids = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["check"] == code)
            .map(|f| f["id"].as_str().unwrap().to_owned())
            .collect();
        (c["failed"].as_u64().unwrap(), ids)
    };
    assert_eq!(check("kre_golden_context_short"), (17, short));
    assert_eq!(check("kre_negative_context_states_golden"), (8, states));
    let out = stdout(&o);
    assert!(
        out.contains("kre_golden_context_short") && out.contains("17/150"),
        "{out}"
    );
    assert!(out.contains("8/150"), "{out}");
}

#[test]
fn exit_codes_and_outputs() {
    let Some(data) = common::shared_data() else {
        eprintln!("skipped: ../shared/data is missing");
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let kre = data.join("kre");
    let (html, sheet, sheet2) = (
        d.path().join("a.html"),
        d.path().join("r.csv"),
        d.path().join("r2.csv"),
    );
    let args = |sheet: &Path| {
        vec![
            "audit".to_owned(),
            kre.display().to_string(),
            "--html".into(),
            html.display().to_string(),
            "--sample".into(),
            "20".into(),
            "--seed".into(),
            "7".into(),
            "--sheet".into(),
            sheet.display().to_string(),
        ]
    };
    let run = |a: Vec<String>| cli(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let o = run(args(&sheet));
    assert!(o.status.success(), "{}", common::text(&o));
    assert!(stdout(&o).contains("ecare.json"));
    let o2 = run(args(&sheet2));
    assert!(o2.status.success());
    assert_eq!(
        std::fs::read(&sheet).unwrap(),
        std::fs::read(&sheet2).unwrap()
    );
    let text = std::fs::read_to_string(&sheet).unwrap();
    assert!(text.starts_with("item_id,"));
    assert!(text.contains("cose.json#") && text.contains("ecare.json#"));
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(page.matches("class=\"cb-row\"").count(), 20);
    assert!(!page.contains("http://") && !page.contains("https://"));

    // --fail-on error: the sample has repeated choices (error severity) -> 1.
    let f = cli(&[
        "audit",
        kre.join("cose.json").to_str().unwrap(),
        "--fail-on",
        "error",
    ]);
    assert_eq!(f.status.code(), Some(1), "{}", common::text(&f));
    // An unreadable input -> 2, one sentence naming it.
    let missing = d.path().join("nothing-here.json");
    let m = cli(&["audit", missing.to_str().unwrap()]);
    assert_eq!(m.status.code(), Some(2));
    assert!(common::text(&m).contains("nothing-here.json"));
    let bad = d.path().join("broken.json");
    std::fs::write(&bad, "[{\"question\": 1}]").unwrap();
    let b = cli(&["audit", bad.to_str().unwrap()]);
    assert_eq!(b.status.code(), Some(2));
    assert!(
        common::text(&b).contains("broken.json: record 0"),
        "{}",
        common::text(&b)
    );
}

fn recall_dir(dir: &Path) {
    let context = "Joan of Arc was born in Domrémy in 1412.";
    let qa = json!({
        "id": "eventkg-qa_a-1", "domain": "eventkg", "source_id": "e1", "origin": "x.nq:1",
        "subject": "Joan of Arc", "task": "qa_a", "edit": "answer",
        "question": "Where was Joan of Arc born?", "answer": "Domrémy", "edited_answer": "Lyon",
        "options": ["Lyon", "Domrémy"], "answer_option": "B", "context": context,
        "edited_context": "Joan of Arc was born in Lyon in 1412.",
        "edits": [{"original": "Domrémy", "edited": "Lyon", "original_span": [24, 31], "edited_span": [24, 28]}]
    });
    let tg = json!({
        "id": "eventkg-tg-1", "domain": "eventkg", "source_id": "e1", "origin": "x.nq:1",
        "subject": "Siege", "target": "The siege was at Orléans.",
        "source": [{"key": "location", "value": "Orléans", "kind": "place"}],
        "edited_source": [{"key": "location", "value": "Lyon", "kind": "place"}],
        "edited_key": "location", "edited_words": ["Lyon"], "original_words": ["Paris"], "aligned": true
    });
    let d = dir.join("recall/eventkg");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("qa_a.jsonl"), format!("{qa}\n")).unwrap();
    std::fs::write(d.join("text_generation.jsonl"), format!("{tg}\n")).unwrap();
    std::fs::write(d.join("manifest.json"), "{}").unwrap();
    std::fs::write(d.join("rejects.jsonl"), "{}\n").unwrap();
}

#[test]
fn recall_files_in_a_folder_are_found_and_checked() {
    let d = tempfile::tempdir().unwrap();
    recall_dir(d.path());
    let j = d.path().join("audit.json");
    let o = cli(&[
        "audit",
        d.path().to_str().unwrap(),
        "--json",
        j.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::text(&o));
    let r: Value = common::read_json(&j);
    assert_eq!(r["files"].as_array().unwrap().len(), 2);
    let failing: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["check"].as_str().unwrap())
        .collect();
    assert_eq!(failing, vec!["tg_e_o_consistent"], "{r}");
}

#[test]
fn agreement_of_three_sheets() {
    // The hand-computed example of cb-audit's tests: kappa = 7/15, agreement 2/3.
    let d = tempfile::tempdir().unwrap();
    let sheets = [
        ["not", "not", "somewhat", "highly"],
        ["not", "not", "highly", "highly"],
        ["not", "somewhat", "highly", "highly"],
    ];
    let mut paths = Vec::new();
    for (n, s) in sheets.iter().enumerate() {
        let p = d.path().join(format!("review_{n}.csv"));
        let mut t = String::from("item_id,rating,comment\n");
        for (i, r) in s.iter().enumerate() {
            t.push_str(&format!("cose.json#{i},{r},\n"));
        }
        std::fs::write(&p, t).unwrap();
        paths.push(p.display().to_string());
    }
    let j = d.path().join("agreement.json");
    let mut args = vec!["agreement"];
    args.extend(paths.iter().map(String::as_str));
    args.extend(["--json", j.to_str().unwrap()]);
    let o = cli(&args);
    assert!(o.status.success(), "{}", common::text(&o));
    assert!(
        stdout(&o).contains("Fleiss' kappa: 0.4667"),
        "{}",
        stdout(&o)
    );
    let a = common::read_json(&j);
    assert!((a["fleiss_kappa"].as_f64().unwrap() - 7.0 / 15.0).abs() < 1e-9);
    assert!((a["percent_agreement"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-9);
    assert_eq!(a["items"][2]["majority"], "highly");

    std::fs::write(
        d.path().join("bad.csv"),
        "item_id,rating\ncose.json#0,maybe\n",
    )
    .unwrap();
    let bad = d.path().join("bad.csv");
    let o = cli(&["agreement", &paths[0], bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let t = common::text(&o);
    assert!(t.contains("bad.csv") && t.contains("line 2"), "{t}");
    // A pipe is refused, never opened (it would wait for a writer): issue 50.
    #[cfg(unix)]
    {
        let fifo = d.path().join("sheet.fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let o = cli(&["agreement", &paths[0], fifo.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2));
        let t = common::text(&o);
        assert!(
            t.contains("sheet.fifo") && t.contains("not a regular file"),
            "{t}"
        );
    }
}

/// Without `--sample`, the page keeps at most 100 failing rows a check (a seeded sample past
/// that, said on the page) while the JSON and the summary count and list every row.
#[test]
fn the_page_samples_a_checks_failing_rows_past_100_and_the_json_keeps_them_all() {
    let d = tempfile::tempdir().unwrap();
    let rows: Vec<Value> = (0..250)
        .map(|i| {
            json!({
                "question": format!("Where is book {i} kept?"), "answer": "A",
                "negative_answer": "oven", "candidate": "B",
                // Every golden context is short (under 4 words): 250 failing rows.
                " golden_context": format!("bookshelf {i}"),
                "negative_context": format!("Book {i} is kept in the oven, away from damp."),
                "choices": ["bookshelf", "oven", "river"]
            })
        })
        .collect();
    let file = d.path().join("cose.json");
    std::fs::write(&file, serde_json::to_string(&rows).unwrap()).unwrap();
    let (html, report) = (d.path().join("a.html"), d.path().join("a.json"));
    let o = cli(&[
        "audit",
        file.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
        "--json",
        report.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::text(&o));
    assert!(stdout(&o).contains("250/250"), "{}", stdout(&o));
    let findings = common::read_json(&report)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "kre_golden_context_short")
        .count();
    assert_eq!(findings, 250);
    let page = std::fs::read_to_string(&html).unwrap();
    let cards = page.matches("class=\"cb-row\"").count();
    assert!((100..250).contains(&cards), "{cards}");
    assert!(page.contains("kre_golden_context_short (250)"));
    assert!(page.contains("a seeded sample of 100"));
    assert!(stdout(&o).contains(&format!("({cards} rows shown)")));
}
