//! Headless Chromium driven through chromedriver by fantoccini (the one WebDriver client of
//! the browser tests: the audit page, the evaluation's charts, the viewer), for the tests
//! that look at a page as a browser shows it (included with `#[path]`).
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs them): [`tools`] fails
//! under `CI=true` when they are missing and skips otherwise.
#![allow(dead_code)]
#![allow(clippy::print_stderr)] // a skipped test says so

use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};
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

/// chromedriver on a free port, killed (and the browser with it) when dropped.
pub struct Driver(Child, u16);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_driver(driver: &Path) -> Driver {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "chromedriver did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Driver(child, port)
}

/// A headless browser session (1280 × 1000, the browser's log kept) and its chromedriver.
pub struct Browser {
    pub client: Client,
    _driver: Driver,
}

/// The browser's log (chromedriver's endpoint beside the W3C ones).
#[derive(Debug)]
struct BrowserLog;

impl WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!("session/{}/se/log", session_id.unwrap_or("")))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (
            http::Method::POST,
            Some(json!({"type": "browser"}).to_string()),
        )
    }
}

impl Browser {
    /// Starts chromedriver and a headless `browser` session with its profile in `profile`.
    pub async fn start(browser: &Path, driver: &Path, profile: &Path) -> Browser {
        let driver = start_driver(driver);
        let caps = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": browser,
                "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                         "--disable-background-networking", "--disable-component-update", "--disable-sync",
                         "--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1280,1000",
                         format!("--user-data-dir={}", profile.display())]
            },
            "goog:loggingPrefs": {"browser": "ALL"}
        });
        let Value::Object(caps) = caps else {
            unreachable!()
        };
        let client = ClientBuilder::rustls()
            .unwrap()
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{}", driver.1))
            .await
            .unwrap();
        Browser {
            client,
            _driver: driver,
        }
    }

    /// Opens a local file.
    pub async fn open(&self, file: &Path) {
        let url = format!("file://{}", file.canonicalize().unwrap().display());
        self.client.goto(&url).await.unwrap();
    }

    /// Runs `code` (a function body) in the page; what it returns.
    pub async fn script(&self, code: &str) -> Value {
        self.client.execute(code, vec![]).await.unwrap()
    }

    /// Clicks the first element `css` selects.
    pub async fn click(&self, css: &str) {
        let e = self.client.find(Locator::Css(css)).await.unwrap();
        e.click().await.unwrap();
    }

    /// The text of the first element `css` selects.
    pub async fn text(&self, css: &str) -> String {
        let e = self.client.find(Locator::Css(css)).await.unwrap();
        e.text().await.unwrap()
    }

    /// Saves a PNG of the whole page (the window grown to the page's height) to `png`.
    pub async fn screenshot(&self, png: &Path) {
        let height = self
            .script("return document.documentElement.scrollHeight;")
            .await
            .as_u64()
            .unwrap_or(1000)
            .clamp(600, 16_000);
        let c = &self.client;
        c.set_window_size(1280, height as u32 + 40).await.unwrap();
        let bytes = c.screenshot().await.unwrap();
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
        if let Some(dir) = png.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(png, bytes).unwrap();
        c.set_window_size(1280, 1000).await.unwrap();
    }

    /// Asserts that the browser's console holds no error. A probe message logged first
    /// proves the log is really read.
    pub async fn assert_no_console_errors(&self) {
        self.script("console.info('cb-browser-probe'); return null;")
            .await;
        let log = self.client.issue_cmd(BrowserLog).await.unwrap();
        let entries = log
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

    /// Ends the session (chromedriver goes when dropped).
    pub async fn close(self) {
        self.client.close().await.unwrap();
    }
}
