//! Headless Chromium driven through chromedriver with the W3C WebDriver protocol (a few JSON
//! requests over a plain TCP connection, no client crate), for the tests that look at a
//! written page as a browser shows it (included with `#[path]`).
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs them): [`tools`] fails
//! under `CI=true` when they are missing and skips otherwise.
#![allow(dead_code)]
#![allow(clippy::print_stderr)] // a skipped test says so

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

/// The paths of chromium and chromedriver; `None` (the test is skipped, and says so) when
/// one is missing outside CI; under `CI=true` a missing one fails the test.
pub fn tools() -> Option<(PathBuf, PathBuf)> {
    let (Some(browser), Some(driver)) = (find_tool("chromium"), find_tool("chromedriver")) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but chromium / chromedriver are missing (.ci/run installs them)"
        );
        eprintln!("skipped: chromium or chromedriver not installed");
        return None;
    };
    Some((browser, driver))
}

/// Kills chromedriver (and with it the browser) when the test ends, passed or not.
pub struct Driver {
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
    pub fn request(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
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

    /// [`Driver::request`], asserting that it did not fail; the answer's `value`.
    pub fn ok(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
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

/// One browser session (1280 × 1000 window, browser log kept); ended when dropped.
pub struct Browser {
    pub driver: Driver,
    sid: String,
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.driver
            .request("DELETE", &format!("/session/{}", self.sid), None);
    }
}

impl Browser {
    /// Starts chromedriver and a headless `browser` session with its profile in `profile`.
    pub fn start(browser: &Path, driver: &Path, profile: &Path) -> Browser {
        let driver = start_driver(driver);
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": browser,
                "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                         "--disable-background-networking", "--disable-component-update", "--disable-sync",
                         "--disable-dev-shm-usage", "--hide-scrollbars",
                         format!("--user-data-dir={}", profile.display())]
            },
            "goog:loggingPrefs": {"browser": "ALL"}
        }}});
        let session = driver.ok("POST", "/session", Some(&caps));
        let sid = session["sessionId"].as_str().unwrap().to_owned();
        let b = Browser { driver, sid };
        b.resize(1280, 1000);
        b
    }

    /// The session's path of a WebDriver endpoint.
    pub fn path(&self, p: &str) -> String {
        format!("/session/{}{p}", self.sid)
    }

    pub fn resize(&self, width: u64, height: u64) {
        self.driver.ok(
            "POST",
            &self.path("/window/rect"),
            Some(&json!({"width": width, "height": height})),
        );
    }

    /// Opens a local file.
    pub fn open(&self, file: &Path) {
        let url = format!("file://{}", file.canonicalize().unwrap().display());
        self.driver
            .ok("POST", &self.path("/url"), Some(&json!({"url": url})));
    }

    /// Runs `code` (a function body) in the page; what it returns.
    pub fn script(&self, code: &str) -> Value {
        self.driver.ok(
            "POST",
            &self.path("/execute/sync"),
            Some(&json!({"script": code, "args": []})),
        )
    }

    /// Clicks the first element `css` selects.
    pub fn click(&self, css: &str) {
        let e = self.driver.ok(
            "POST",
            &self.path("/element"),
            Some(&json!({"using": "css selector", "value": css})),
        );
        let eid = e["element-6066-11e4-a52e-4f735466cecf"]
            .as_str()
            .unwrap()
            .to_owned();
        self.driver.ok(
            "POST",
            &self.path(&format!("/element/{eid}/click")),
            Some(&json!({})),
        );
    }

    /// Saves a PNG of the whole page (the window grown to the page's height) to `png`.
    pub fn screenshot(&self, png: &Path) {
        let height = self
            .script("return document.documentElement.scrollHeight;")
            .as_u64()
            .unwrap_or(1000)
            .clamp(600, 16_000);
        self.resize(1280, height + 40);
        let shot = self.driver.ok("GET", &self.path("/screenshot"), None);
        let bytes = base64_decode(shot.as_str().expect("a base64 PNG"));
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
        if let Some(dir) = png.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(png, bytes).unwrap();
        self.resize(1280, 1000);
    }

    /// Asserts that the browser's console holds no error. A probe message logged first
    /// proves the log is really read.
    pub fn assert_no_console_errors(&self) {
        self.script("console.info('cb-browser-probe'); return null;");
        let mut log = self.driver.request(
            "POST",
            &self.path("/se/log"),
            Some(&json!({"type": "browser"})),
        );
        if log["value"].get("error").is_some() {
            log = self.driver.request(
                "POST",
                &self.path("/log"),
                Some(&json!({"type": "browser"})),
            );
        }
        let entries = log["value"]
            .as_array()
            .unwrap_or_else(|| panic!("no browser log: {log}"));
        assert!(
            entries.iter().any(|e| e["message"]
                .as_str()
                .unwrap_or("")
                .contains("cb-browser-probe")),
            "the console probe is not in the browser log: {entries:?}"
        );
        let severe: Vec<&Value> = entries.iter().filter(|e| e["level"] == "SEVERE").collect();
        assert!(severe.is_empty(), "console errors: {severe:?}");
    }
}

/// Standard base64 (with padding) to bytes.
fn base64_decode(s: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let digits: Vec<u8> = s
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b'=')
        .collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            n |= value(*c) << (18 - 6 * i);
        }
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}
