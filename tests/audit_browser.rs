//! The HTML report in a real browser: headless Chromium driven through chromedriver with the
//! W3C WebDriver protocol (a few JSON requests over a plain TCP connection, no client crate).
//! Checks: no console errors, the diff highlighting is visible, the two texts of a row (a
//! released cose row, a RECALL edit) are each whole in the page's text, side by side, and
//! clicking a filter button hides the rows that do not fail that check.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs them). Without them the
//! test fails under `CI=true` and is skipped otherwise.

#![allow(clippy::print_stderr)] // a skipped test says so
mod common;

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn find_tool(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.push("/usr/bin".into());
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

/// Kills chromedriver (and with it the browser) when the test ends, passed or not.
struct Driver {
    child: Child,
    port: u16,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Driver {
    /// One HTTP/1.1 request to chromedriver; the JSON body of the answer.
    fn request(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let body = body.map(Value::to_string).unwrap_or_default();
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(90))).unwrap();
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.port,
            body.len()
        )
        .unwrap();
        // chromedriver may keep the connection open: read the head, then exactly the body.
        let mut r = BufReader::new(s);
        let mut head = String::new();
        loop {
            let mut line = String::new();
            if r.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
                break;
            }
            head.push_str(&line);
        }
        let lower = head.to_ascii_lowercase();
        let mut body = Vec::new();
        if let Some(len) = lower
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok())
        {
            body.resize(len, 0);
            r.read_exact(&mut body).unwrap();
        } else if lower.contains("transfer-encoding: chunked") {
            loop {
                let mut size = String::new();
                r.read_line(&mut size).unwrap();
                let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
                let mut chunk = vec![0; n + 2];
                r.read_exact(&mut chunk).unwrap();
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..n]);
            }
        } else {
            r.read_to_end(&mut body).unwrap();
        }
        let payload = String::from_utf8_lossy(&body).into_owned();
        serde_json::from_str(&payload)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}: {head}\n{payload}"))
    }

    fn ok(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let v = self.request(method, path, body);
        assert!(
            v["value"].get("error").is_none(),
            "{method} {path}: {}",
            v["value"]
        );
        v["value"].clone()
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start_driver(driver: &Path) -> Driver {
    let port = free_port();
    let child = Command::new(driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let d = Driver { child, port };
    let start = Instant::now();
    loop {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            let v = d.request("GET", "/status", None);
            if v["value"]["ready"] == true {
                return d;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "chromedriver did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

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

#[test]
fn html_report_in_headless_chromium() {
    let (Some(browser), Some(driver)) = (find_tool("chromium"), find_tool("chromedriver")) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but chromium / chromedriver are missing (.ci/run installs them)"
        );
        eprintln!("skipped: chromium or chromedriver not installed");
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

    let drv = start_driver(&driver);
    let profile = d.path().join("profile");
    let caps = json!({"capabilities": {"alwaysMatch": {
        "browserName": "chrome",
        "goog:chromeOptions": {
            "binary": browser,
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--disable-dev-shm-usage", format!("--user-data-dir={}", profile.display())]
        },
        "goog:loggingPrefs": {"browser": "ALL"}
    }}});
    let session = drv.ok("POST", "/session", Some(&caps));
    let sid = session["sessionId"].as_str().unwrap().to_owned();
    let s = |p: &str| format!("/session/{sid}{p}");
    drv.ok(
        "POST",
        &s("/window/rect"),
        Some(&json!({"width": 1280, "height": 1000})),
    );
    let url = format!("file://{}", html.canonicalize().unwrap().display());
    drv.ok("POST", &s("/url"), Some(&json!({"url": url})));
    let script = |code: &str| {
        drv.ok(
            "POST",
            &s("/execute/sync"),
            Some(&json!({"script": code, "args": []})),
        )
    };

    // The data's script never ran, and every row is on the page.
    assert_eq!(script("return typeof window.__pwned;"), "undefined");
    assert_eq!(
        script("return document.querySelectorAll('.cb-row').length;"),
        if released.is_some() { 6 } else { 5 }
    );

    // Each text whole in the page's text, in two columns side by side; the changed words of an
    // edit marked inside each; a rewritten pair unmarked and labelled.
    let sides = |item: &str| -> Value {
        script(&format!(
            "var r = document.querySelector('.cb-row[data-item=\"{item}\"]');\
             var o = r.querySelector('.cb-original'), e = r.querySelector('.cb-edited');\
             var a = o.getBoundingClientRect(), b = e.getBoundingClientRect();\
             return {{original: o.innerText, edited: e.innerText, page: document.body.innerText,\
                      side_by_side: a.right <= b.left && a.top === b.top,\
                      marks: r.querySelectorAll('.cb-diff del, .cb-diff ins').length,\
                      rewritten: r.querySelector('.cb-rewritten') !== null}};"
        ))
    };
    let v = sides("qa_a.jsonl#qa-good");
    assert_eq!(v["original"], "Joan of Arc was born in Domrémy in 1412.");
    assert_eq!(v["edited"], "Joan of Arc was born in Lyon in 1412.");
    assert!(v["side_by_side"].as_bool().unwrap(), "{v}");
    assert_eq!(v["marks"], 2, "Domrémy and Lyon marked: {v}");
    assert_eq!(v["rewritten"], false);
    if let Some(row) = &released {
        let v = sides("released-cose.json#0");
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
        let bg = script(&format!(
            "var e = document.querySelector('{sel}'); return e ? getComputedStyle(e).backgroundColor : null;"
        ));
        let bg = bg.as_str().unwrap_or_else(|| panic!("no {sel}"));
        assert!(
            bg != "transparent" && bg != "rgba(0, 0, 0, 0)",
            "{sel}: {bg}"
        );
    }

    let visibility = || -> Vec<(String, String, bool)> {
        let v = script(
            "return Array.prototype.map.call(document.querySelectorAll('.cb-row'), function (r) {\
               return [r.getAttribute('data-item'), r.getAttribute('data-checks'), getComputedStyle(r).display !== 'none'];\
             });",
        );
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
            .collect()
    };
    assert!(visibility().iter().all(|r| r.2), "all rows shown at first");

    let click = |css: &str| {
        let e = drv.ok(
            "POST",
            &s("/element"),
            Some(&json!({"using": "css selector", "value": css})),
        );
        let eid = e["element-6066-11e4-a52e-4f735466cecf"]
            .as_str()
            .unwrap()
            .to_owned();
        drv.ok(
            "POST",
            &s(&format!("/element/{eid}/click")),
            Some(&json!({})),
        );
    };
    for code in ["qa_a_original_answer_gone", "kre_golden_context_short"] {
        click(&format!("#cb-filter-{code}"));
        let rows = visibility();
        let shown: Vec<&str> = rows.iter().filter(|r| r.2).map(|r| r.0.as_str()).collect();
        assert!(!shown.is_empty(), "{code}: nothing shown");
        for (item, checks, visible) in &rows {
            let fails = checks.split(' ').any(|c| c == code);
            assert_eq!(*visible, fails, "{code}: row {item} ({checks})");
        }
        assert!(rows.iter().any(|r| !r.2), "{code}: nothing hidden");
    }
    click("#cb-filter-all");
    assert!(visibility().iter().all(|r| r.2), "all rows shown again");

    // The browser's console: no error. A probe message proves the log is really read.
    script("console.info('cb-audit-probe'); return null;");
    let mut log = drv.request("POST", &s("/se/log"), Some(&json!({"type": "browser"})));
    if log["value"].get("error").is_some() {
        log = drv.request("POST", &s("/log"), Some(&json!({"type": "browser"})));
    }
    let entries = log["value"]
        .as_array()
        .unwrap_or_else(|| panic!("no browser log: {log}"));
    assert!(
        entries.iter().any(|e| e["message"]
            .as_str()
            .unwrap_or("")
            .contains("cb-audit-probe")),
        "the console probe is not in the browser log: {entries:?}"
    );
    let severe: Vec<&Value> = entries.iter().filter(|e| e["level"] == "SEVERE").collect();
    assert!(severe.is_empty(), "console errors: {severe:?}");
    drv.request("DELETE", &s(""), None);
}
