//! Helpers of the viewer's tests: a small build read by a mock reader (rows with reader
//! verdicts, lineage in the cache, rejects), planted rows whose texts try to run code,
//! `conflictbench view` started on a free port, and plain HTTP/1.1 requests to it.
#![allow(dead_code)]

use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// An offline build of the bundled SQuAD, CoS-E and e-CARE samples into `out`, read by
/// `reader` (its reader calls are cached in `out/llm-cache.sqlite`).
pub async fn read_build(out: &Path, reader: &cb_mock::MockServer) {
    read_build_of(out, reader, "squad,cose,ecare").await;
}

/// [`read_build`] of the KRE `domains` (`squad,cose`).
pub async fn read_build_of(out: &Path, reader: &cb_mock::MockServer, domains: &str) {
    let base = reader.base_url();
    let raw = crate::common::repo().join("raw");
    let o = crate::common::build(
        &[
            "kre",
            "--domains",
            domains,
            "--raw",
            raw.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--reader-base-url",
            &base,
            "--reader-model",
            "reader",
        ],
        &[],
    )
    .await;
    assert!(o.status.success(), "{}", crate::common::text(&o));
}

/// What the planted texts try: each sets `window.__pwned` if it ever runs.
pub const PLANTED: [&str; 5] = [
    "<script>window.__pwned = 1;</script>",
    "<img src=x onerror=\"window.__pwned=2\">",
    "\"><svg onload=window.__pwned=3>",
    "' onmouseover='window.__pwned=4' x='",
    "</textarea><script>window.__pwned=5</script>",
];

/// Broken and tricky Unicode: a right-to-left override, a lone combining accent, zero-width
/// characters, the replacement character, a character outside the BMP.
pub const ODD_UNICODE: &str =
    "\u{202e}gnirts desrever\u{202c} \u{301}alone \u{200b}\u{feff}zero \u{fffd} \u{1f9ea}";

/// `out/kre/planted/`: two KRE rows and a reject whose every text is a planted one, and a
/// reader column and lineage carrying them too.
pub fn plant(out: &Path) {
    let dir = out.join("kre/planted");
    std::fs::create_dir_all(&dir).unwrap();
    let row = |i: usize| {
        let p = |k: usize| PLANTED[(i + k) % PLANTED.len()];
        json!({
            "id": format!("planted-{i}{}", p(0)), "domain": "planted", "question": format!("{} {}", p(1), ODD_UNICODE),
            "choices": [p(2), format!("oven {}", p(3)), "river"], "answer": "A", "candidate": "B",
            "negative_answer": format!("oven {}", p(3)),
            "golden_context": format!("A cup is kept in {} the cupboard. {}", p(4), ODD_UNICODE),
            "negative_context": format!("A cup is kept in {} the oven {}. {}", p(4), p(3), ODD_UNICODE),
            "warnings": [p(0)],
            "reader": {"model": p(1), "endpoint": p(2), "votes": 1, "checks": [
                {"check": p(3), "expected": "B", "picks": [p(0)], "how": [p(1)], "pick": p(4), "passed": true}]},
            "lineage": [{"step": p(0), "template": p(1), "template_hash": "x", "cache_key": p(2), "attempt": 1}]
        })
    };
    let rows = format!("{}\n{}\n", row(0), row(1));
    std::fs::write(dir.join("planted.jsonl"), rows).unwrap();
    let reject = json!({"id": PLANTED[0], "origin": PLANTED[1], "stage": PLANTED[2], "reason": PLANTED[0],
        "detail": format!("{} {}", PLANTED[4], ODD_UNICODE), "raw_response": PLANTED[3], "attempts": 1});
    std::fs::write(dir.join("rejects.jsonl"), format!("{reject}\n")).unwrap();
}

/// A running `conflictbench view`; killed when dropped.
pub struct Viewer {
    pub child: Child,
    pub port: u16,
    /// The address it printed (with `?token=` when it has one).
    pub address: String,
    /// Its standard output, kept open.
    pub stdout: BufReader<std::process::ChildStdout>,
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `conflictbench view ARGS --port 0` and waits for the address it prints.
pub fn start_viewer(args: &[&str]) -> Viewer {
    start_viewer_as(&[], args, Stdio::inherit())
}

/// `conflictbench view`, run through `prefix` (`setpriv ...`, or nothing).
pub fn view_command(prefix: &[&str]) -> Command {
    let bin = env!("CARGO_BIN_EXE_conflictbench");
    let mut cmd = match prefix {
        [first, rest @ ..] => {
            let mut c = Command::new(first);
            c.args(rest).arg(bin);
            c
        }
        [] => Command::new(bin),
    };
    cmd.arg("view");
    cmd
}

/// [`start_viewer`], the command run through `prefix` (`setpriv ...`, or nothing), its
/// standard error to `stderr`.
pub fn start_viewer_as(prefix: &[&str], args: &[&str], stderr: Stdio) -> Viewer {
    let mut child = view_command(prefix)
        .args(args)
        .args(["--port", "0"])
        .env_remove("CONFLICTBENCH_VIEW_TOKEN")
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdout.read_line(&mut line).unwrap();
    let address = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    let port = address
        .trim_start_matches("http://")
        .split(['/', '?'])
        .next()
        .and_then(|hp| hp.rsplit(':').next())
        .and_then(|p| p.parse().ok())
        .unwrap();
    // The pages answer at once; wait for the audit (checks, sample) to end.
    let query = address
        .split_once('?')
        .map_or(String::new(), |(_, q)| format!("?{q}"));
    let start = std::time::Instant::now();
    loop {
        let (status, page) = get(port, &format!("/{query}"));
        if status == 200 && !page.contains("cb-auditing") {
            break;
        }
        assert!(
            start.elapsed().as_secs() < 120,
            "the audit did not end: {status} {page}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Viewer {
        child,
        port,
        address,
        stdout,
    }
}

/// One HTTP/1.1 request: (status, body). `headers` are extra lines (`Name: value`).
pub fn request(port: u16, method: &str, path: &str, headers: &[&str], body: &str) -> (u16, String) {
    let (status, _, body) = exchange(port, method, path, headers, body);
    (status, body)
}

/// One HTTP/1.1 request: (status, the answer's head, body).
pub fn exchange(
    port: u16,
    method: &str,
    path: &str,
    headers: &[&str],
    body: &str,
) -> (u16, String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers
        .iter()
        .any(|h| h.to_lowercase().starts_with("host:"))
    {
        req.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    if method == "POST" {
        req.push_str("Content-Type: application/x-www-form-urlencoded\r\n");
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.write_all(req.as_bytes()).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (status, head.to_owned(), body.to_owned())
}

pub fn get(port: u16, path: &str) -> (u16, String) {
    request(port, "GET", path, &[], "")
}

/// Percent-encodes a form value.
pub fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The form token the viewer's Rate page carries.
pub fn form_token(port: u16) -> String {
    let (status, page) = get(port, "/rate?rater=probe&item=0&distinguishable=no");
    assert_eq!(status, 200, "{page}");
    page.split("name=\"form_token\" value=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or_else(|| panic!("no form token: {page}"))
        .to_owned()
}

/// The body of a rating as the Rate page posts it, the context rated plausible.
pub fn rating_body(token: &str, rater: &str, item: &str, level: &str, dist: &str) -> String {
    rating_body_both(token, rater, item, (level, "plausible"), dist)
}

/// The body of a rating on both scales, `(misleading, plausibility)`, as the Rate page posts
/// it.
pub fn rating_body_both(
    token: &str,
    rater: &str,
    item: &str,
    (level, plausibility): (&str, &str),
    dist: &str,
) -> String {
    format!(
        "form_token={token}&rater={}&item_id={}&misleading={level}&plausible={plausibility}&distinguishable={dist}&comment={}",
        enc(rater),
        enc(item),
        enc(&format!("{rater} on {item}"))
    )
}

/// Posts one rating with the page's form token; the status (303 when it was stored).
pub fn rate(port: u16, rater: &str, item: &str, level: &str, dist: &str) -> u16 {
    let body = rating_body(&form_token(port), rater, item, level, dist);
    request(port, "POST", "/rate", &[], &body).0
}

/// The address of the first row a list page (`/rows?...`) links to.
pub fn first_row_link(port: u16, list: &str) -> String {
    let (status, page) = get(port, list);
    assert_eq!(status, 200, "{page}");
    let href = page
        .split("class=\"cb-open\" href=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or_else(|| panic!("no row in {list}: {page}"));
    unescape(href)
}

/// The item ids of the rating sample, as the rating page lists them.
pub fn sample_ids(port: u16) -> Vec<String> {
    let (status, page) = get(port, "/rate?rater=probe");
    assert_eq!(status, 200, "{page}");
    let list = page.split("id=\"cb-sample\"").nth(1).unwrap_or("");
    list.split("\">")
        .skip(1)
        .filter_map(|s| s.split("</a>").next())
        .filter(|s| !s.contains('<'))
        .map(unescape)
        .collect()
}

/// Undoes the escaping of the pages (minijinja's: `& < > " ' /`).
pub fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&#x2f;", "/")
        .replace("&amp;", "&")
}

/// The mock's context follower, as an editor who finds every negative context consistent
/// (the reader check's judged questions, `prompts/reader/judge.md`, pass): these tests rate
/// what the reader's picks let stand, not the coherence question.
pub fn follower() -> cb_mock::Responder {
    cb_mock::responder(|req: &cb_mock::ChatRequest| {
        let prompt = req.last_user();
        let reply = cb_mock::reader_script::judge(prompt, false).unwrap_or_else(|| {
            cb_mock::reader_script::parse(prompt).map_or_else(
                || "None".to_owned(),
                |q| cb_mock::reader_script::follow_context(&q),
            )
        });
        cb_mock::Reply::Content(reply)
    })
}
