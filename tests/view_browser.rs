//! `conflictbench view` in a real browser: headless Chromium driven through chromedriver by
//! fantoccini (`common/browser.rs`). Open a build, filter to a reject reason, open a row's lineage, rate five rows
//! as two raters and see the kappas change, export the two sheets and compare with
//! `conflictbench agreement`; planted texts (script tags, event-handler attributes, broken
//! Unicode) run nothing and show as text; watch a build against the mock fill in; rate a
//! ConflictBank-style row's conflicting evidences one by one on their three questions.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs them). Without them
//! the tests fail under `CI=true` and are skipped otherwise.

#[path = "common/browser.rs"]
mod browser;
mod common;
#[path = "common/view.rs"]
mod view_common;

use fantoccini::{Client, Locator};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use view_common::{get, plant, read_build, start_viewer, PLANTED};

async fn js(c: &Client, code: &str) -> Value {
    c.execute(code, vec![]).await.unwrap()
}

/// Nothing planted ran on the page now shown.
async fn nothing_ran(c: &Client) {
    assert_eq!(js(c, "return typeof window.__pwned;").await, "undefined");
    assert_eq!(
        js(c, "return document.querySelectorAll('script, img, svg, [onerror], [onload], [onmouseover]').length;").await,
        0
    );
}

/// Waits until the address holds `needle` (a form submitted, a link followed).
async fn wait_url(c: &Client, needle: &str) {
    let start = Instant::now();
    while !c.current_url().await.unwrap().as_str().contains(needle) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "never reached {needle}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the element `css` (of the page now loading) reads `want`.
async fn wait_text(c: &Client, css: &str, want: &str) {
    let start = Instant::now();
    loop {
        if let Ok(e) = c.find(Locator::Css(css)).await {
            if e.text().await.is_ok_and(|t| t == want) {
                return;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{css} never read {want}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn text_of(c: &Client, css: &str) -> String {
    c.find(Locator::Css(css))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Rates the item shown: first the answer set from the options alone, then (the golden and
/// negative options and the contexts shown) how misleading the negative context is and how
/// plausible (here: plausible when not misleading, somewhat when somewhat, else
/// implausible).
async fn rate_one(c: &Client, level: &str, dist: &str, comment: &str) {
    let golden = "document.querySelectorAll('.cb-gold, .cb-negative, .cb-original').length";
    assert_eq!(
        js(c, &format!("return {golden};")).await,
        0,
        "nothing golden shown before the answer set is judged"
    );
    click(c, &format!("input[name=distinguishable][value={dist}]")).await;
    click(c, "#cb-next").await;
    wait_url(c, "distinguishable=").await;
    let tags = js(c, "return Array.from(document.querySelectorAll('#cb-options .cb-tag')).map(e => e.innerText);").await;
    assert!(
        tags.as_array()
            .unwrap()
            .iter()
            .any(|t| t == "golden answer"),
        "{tags}"
    );
    assert!(
        tags.as_array()
            .unwrap()
            .iter()
            .any(|t| t == "negative answer"),
        "{tags}"
    );
    click(c, &format!("input[name=misleading][value={level}]")).await;
    let plausibility = match level {
        "not" => "plausible",
        "somewhat" => "somewhat",
        _ => "implausible",
    };
    click(c, &format!("input[name=plausible][value={plausibility}]")).await;
    let t = c
        .find(Locator::Css("textarea[name=comment]"))
        .await
        .unwrap();
    t.clear().await.unwrap();
    t.send_keys(comment).await.unwrap();
    click(c, "#cb-save").await;
}

async fn click(c: &Client, css: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

/// Rates the first five items of the sample as `rater` from the start page; after each
/// rating, the Fleiss line of the agreement page.
async fn rate_five(c: &Client, base: &str, rater: &str, levels: [&str; 5]) -> Vec<String> {
    c.goto(&format!("{base}/rate")).await.unwrap();
    c.find(Locator::Css("#cb-rater"))
        .await
        .unwrap()
        .send_keys(rater)
        .await
        .unwrap();
    c.find(Locator::Css("#cb-start"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_url(c, "rater=").await;
    let mut fleiss = Vec::new();
    for (k, level) in levels.iter().enumerate() {
        let dist = if k % 2 == 0 { "yes" } else { "no" };
        rate_one(
            c,
            level,
            dist,
            &format!("{} {k}", PLANTED[k % PLANTED.len()]),
        )
        .await;
        wait_text(c, "#cb-done", &(k + 1).to_string()).await;
        nothing_ran(c).await;
        let url = c.current_url().await.unwrap();
        c.goto(&format!("{base}/agreement")).await.unwrap();
        fleiss.push(text_of(c, "#cb-fleiss").await);
        c.goto(url.as_str()).await.unwrap();
    }
    fleiss
}

fn agreement_kappa(sheets: &[&Path]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .arg("agreement")
        .args(sheets)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::text(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    out.lines()
        .find_map(|l| l.strip_prefix("Fleiss' kappa: "))
        .unwrap_or_else(|| panic!("{out}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn browse_filter_open_lineage_rate_and_export_in_chromium() {
    let Some((browser, driver)) = browser::tools() else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("gen");
    let reader = cb_mock::MockServer::start(view_common::follower()).await;
    read_build(&out, &reader).await;
    plant(&out);
    let v = start_viewer(&[out.to_str().unwrap(), "--sample", "6", "--seed", "7"]);
    let base = format!("http://127.0.0.1:{}", v.port);
    let b = browser::Browser::start(&browser, &driver, &d.path().join("profile")).await;
    let c = &b.client;

    // The overview: both folders with their counts; the planted texts shown as text.
    c.goto(&base).await.unwrap();
    nothing_ran(c).await;
    let domains = text_of(c, "#cb-domains").await;
    let rows = common::read_jsonl(&out.join("kre/squad/squad.jsonl"));
    let rejects = common::read_jsonl(&out.join("kre/squad/rejects.jsonl"));
    assert!(
        domains.contains(&format!("kre/squad {} {}", rows.len(), rejects.len())),
        "{domains}"
    );
    assert!(
        text_of(c, "body").await.contains(PLANTED[0]),
        "a planted reason is shown as text"
    );

    // Filter the rejects to one reason: every listed reject has it, and all of them are listed.
    c.goto(&format!("{base}/rejects")).await.unwrap();
    let select = c.find(Locator::Css("select[name=reason]")).await.unwrap();
    select.select_by_label("unanswerable").await.unwrap();
    c.find(Locator::Css(".cb-filters button"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_url(c, "reason=").await;
    let listed = js(c, "return Array.from(document.querySelectorAll('#cb-rejects .cb-reason')).map(e => e.innerText);").await;
    let want = rejects
        .iter()
        .filter(|r| r["reason"] == "unanswerable")
        .count();
    assert_eq!(listed.as_array().unwrap().len(), want, "{listed}");
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r == "unanswerable"),
        "{listed}"
    );

    // Open a read row and its lineage: the reader's prompt and answer from the cache.
    c.goto(&format!("{base}/rows?verdict=passed"))
        .await
        .unwrap();
    c.find(Locator::Css("a.cb-open"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_url(c, "/row?").await;
    let id = text_of(c, "#cb-id").await;
    let calls = c.find_all(Locator::Css("details.cb-call")).await.unwrap();
    assert!(!calls.is_empty());
    let prompt = c
        .find(Locator::Css("details.cb-call pre.cb-prompt"))
        .await
        .unwrap();
    assert!(!prompt.is_displayed().await.unwrap(), "closed until opened");
    calls
        .last()
        .unwrap()
        .find(Locator::Css("summary"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let opened = calls
        .last()
        .unwrap()
        .find(Locator::Css("pre.cb-prompt"))
        .await
        .unwrap();
    assert!(opened.is_displayed().await.unwrap());
    let all: Vec<Value> = ["squad", "cose", "ecare"]
        .iter()
        .flat_map(|d| common::read_jsonl(&out.join(format!("kre/{d}/{d}.jsonl"))))
        .collect();
    let row = all
        .iter()
        .find(|r| id.ends_with(&format!("#{}", r["id"].as_str().unwrap())))
        .unwrap_or_else(|| panic!("{id}"));
    // The call's messages, system line first: the question is in the user's.
    let mut prompt_text = String::new();
    for message in calls
        .last()
        .unwrap()
        .find_all(Locator::Css("pre.cb-prompt"))
        .await
        .unwrap()
    {
        prompt_text.push_str(&message.text().await.unwrap());
    }
    assert!(
        prompt_text.contains(row["question"].as_str().unwrap()),
        "{prompt_text}"
    );
    let side = js(c, "var o = document.querySelector('.cb-original').getBoundingClientRect(), e = document.querySelector('.cb-edited').getBoundingClientRect(); return o.right <= e.left && o.top === e.top;").await;
    assert_eq!(side, true, "the contexts side by side");
    assert!(text_of(c, "#cb-reader").await.contains("negative"));

    // The planted rows and reject: shown as text, nothing runs.
    for path in [
        "/rows?q=planted",
        view_common::first_row_link(v.port, "/rows").as_str(),
        "/rejects?q=pwned",
        "/reject/1/0",
        "/live",
    ] {
        c.goto(&format!("{base}{path}")).await.unwrap();
        nothing_ran(c).await;
    }
    c.goto(&format!("{base}/rows?q=planted-0")).await.unwrap();
    c.find(Locator::Css("a.cb-open"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_url(c, "/row?").await;
    nothing_ran(c).await;
    let page = text_of(c, "body").await;
    for p in PLANTED {
        assert!(page.contains(p), "{p} shown as text: {page}");
    }
    assert!(page.contains(
        view_common::ODD_UNICODE
            .trim_start_matches('\u{202e}')
            .split('\u{202c}')
            .next()
            .unwrap()
    ));

    // Two raters rate five rows each: the kappas change as they go.
    let ann = rate_five(
        c,
        &base,
        "ann",
        ["not", "somewhat", "highly", "highly", "not"],
    )
    .await;
    assert!(
        ann.iter().all(|f| f.contains("needs two raters")),
        "{ann:?}"
    );
    let bob = rate_five(
        c,
        &base,
        "<b onmouseover=x>bob</b>",
        ["not", "highly", "highly", "somewhat", "not"],
    )
    .await;
    let distinct: std::collections::BTreeSet<&String> = bob.iter().collect();
    assert!(
        distinct.len() >= 3,
        "Fleiss' kappa moves as ratings come: {bob:?}"
    );
    c.goto(&format!("{base}/agreement")).await.unwrap();
    nothing_ran(c).await;
    let kappa = text_of(c, ".cb-kappa").await;
    // By hand: per item agreement 1, 0, 1, 0, 1 (P = 0.6); levels not 4, somewhat 2, highly 4
    // of 10 (P_e = 0.36); kappa = 0.24 / 0.64.
    assert_eq!(
        text_of(c, "#cb-fleiss").await,
        "Fleiss' kappa: 0.3750; percent agreement 60.0% over 5 item(s) that all 2 raters rated."
    );
    assert!(text_of(c, "#cb-cohen").await.contains("reader"));

    // Export both sheets (the links of the page) and compare with `agreement`.
    let links = js(c, "return Array.from(document.querySelectorAll('a.cb-export')).map(a => a.getAttribute('href'));").await;
    let mut files = Vec::new();
    for (k, href) in links.as_array().unwrap().iter().enumerate() {
        let (status, csv) = get(v.port, href.as_str().unwrap());
        assert_eq!(status, 200);
        let f = d.path().join(format!("sheet_{k}.csv"));
        std::fs::write(&f, csv).unwrap();
        files.push(f);
    }
    assert_eq!(files.len(), 2);
    let refs: Vec<&Path> = files.iter().map(|f| f.as_path()).collect();
    assert_eq!(agreement_kappa(&refs), kappa);
    b.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_build_against_the_mock_fills_in_on_the_live_page() {
    let Some((browser, driver)) = browser::tools() else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("gen");
    std::fs::create_dir_all(&out).unwrap();
    let v = start_viewer(&[out.to_str().unwrap()]);
    let base = format!("http://127.0.0.1:{}", v.port);
    let b = browser::Browser::start(&browser, &driver, &d.path().join("profile")).await;
    let c = &b.client;
    c.goto(&format!("{base}/")).await.unwrap();
    assert!(text_of(c, "body").await.contains("0 rows"));

    let reader = cb_mock::MockServer::start(view_common::follower()).await;
    reader.set_latency(Duration::from_millis(150));
    let base_url = reader.base_url();
    let raw = common::repo().join("raw");
    let mut build = common::spawn_build(&[
        "kre",
        "--domains",
        "squad",
        "--raw",
        raw.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--reader-base-url",
        &base_url,
        "--reader-model",
        "reader",
        "--concurrency",
        "1",
    ]);
    // The live page, as its refresh shows it, while the build runs.
    let mut seen_calls = Vec::new();
    let mut saw_writing = false;
    let start = Instant::now();
    loop {
        c.goto(&format!("{base}/live")).await.unwrap();
        let calls = js(c, "return Array.from(document.querySelectorAll('#cb-spend .cb-calls')).map(e => +e.innerText).reduce((a, b) => a + b, 0);").await;
        seen_calls.push(calls.as_i64().unwrap());
        saw_writing |= text_of(c, "#cb-recipes").await.contains("(writing)");
        if build.try_wait().unwrap().is_some() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the build did not end"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(build.wait().await.unwrap().success());
    assert!(saw_writing, "the recipe was seen writing");
    let rising = seen_calls.windows(2).filter(|w| w[1] > w[0]).count();
    assert!(
        rising >= 2,
        "answers came in as they arrived: {seen_calls:?}"
    );
    // Once the build renamed its files into place, the overview reads them.
    let rows = common::read_jsonl(&out.join("kre/squad/squad.jsonl"));
    let start = Instant::now();
    loop {
        c.goto(&format!("{base}/")).await.unwrap();
        if text_of(c, "#cb-domains")
            .await
            .contains(&format!("kre/squad {}", rows.len()))
        {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the finished build was not read"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    b.close().await;
}

/// Serves `page` to every request on a free port of 127.0.0.1 (another origin than the
/// viewer's), until the test ends; the port.
fn serve_page(page: String) -> u16 {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                page.len()
            );
        }
    });
    port
}

/// A page of another site with a form that posts a rating to the viewer at `target`.
fn forged_form(target: &str, item_id: &str, form_token: &str) -> String {
    let attr = |s: &str| {
        s.replace('&', "&amp;")
            .replace('"', "&quot;")
            .replace('<', "&lt;")
    };
    format!(
        "<!doctype html><title>free prizes</title><form method=post action=\"{target}/rate\">\
         <input type=hidden name=rater value=mallory><input type=hidden name=item_id value=\"{}\">\
         <input type=hidden name=misleading value=highly><input type=hidden name=plausible value=plausible>\
         <input type=hidden name=distinguishable value=yes>\
         <input type=hidden name=form_token value=\"{}\"><button id=go type=submit>win</button></form>",
        attr(item_id),
        attr(form_token)
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_form_on_another_origin_cannot_rate_in_chromium() {
    let Some((browser, driver)) = browser::tools() else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("gen");
    let reader = cb_mock::MockServer::start(view_common::follower()).await;
    read_build(&out, &reader).await;
    let token = "tok_0123456789abcdef";
    let loopback = start_viewer(&[out.to_str().unwrap(), "--sample", "4"]);
    let beyond = start_viewer(&[
        out.to_str().unwrap(),
        "--sample",
        "4",
        "--host",
        "0.0.0.0",
        "--token",
        token,
    ]);
    let ids = view_common::sample_ids(loopback.port);
    let b = browser::Browser::start(&browser, &driver, &d.path().join("profile")).await;
    let c = &b.client;
    // In token mode the rater's browser holds the token's cookie, which a page of another
    // port of the same host gets sent along.
    c.goto(&beyond.address).await.unwrap();
    assert!(text_of(c, "body").await.contains("Overview"));
    for (viewer, guess) in [(&loopback, String::new()), (&beyond, "0".repeat(32))] {
        let target = format!("http://127.0.0.1:{}", viewer.port);
        let port = serve_page(forged_form(&target, &ids[0], &guess));
        for origin in [
            format!("http://127.0.0.1:{port}"),
            format!("http://localhost:{port}"),
        ] {
            c.goto(&format!("{origin}/")).await.unwrap();
            c.find(Locator::Css("#go"))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
            wait_url(c, "/rate").await;
            let said = text_of(c, "body").await;
            // From another host name the browser leaves the token's cookie (SameSite) behind,
            // and the token refuses it first; from the same host, the origin does.
            let by_token = origin.contains("localhost") && viewer.address.contains("token=");
            let why = if by_token {
                "this viewer needs its token"
            } else {
                "refused: this form was sent from"
            };
            assert!(said.starts_with(why), "{origin} -> {target}: {said}");
        }
    }
    assert!(!out.join("view-ratings.sqlite").exists(), "nothing stored");
    // The viewer's own page rates, in the same browser.
    c.goto(&format!(
        "http://127.0.0.1:{}/rate?rater=ann",
        loopback.port
    ))
    .await
    .unwrap();
    rate_one(c, "not", "no", "mine").await;
    wait_text(c, "#cb-done", "1").await;
    b.close().await;
}

/// A ConflictBank-style row rated in a real browser: each conflicting evidence in turn,
/// beside the correct one, on its three questions; the answers land in the ratings file
/// under `ITEM#cause`.
#[tokio::test(flavor = "multi_thread")]
async fn a_conflictbank_row_is_rated_per_evidence_in_chromium() {
    let Some((browser, driver)) = browser::tools() else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("gen");
    let o = Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .args([
            "build",
            "conflictbank",
            "--domains",
            "popqa",
            "--no-progress",
        ])
        .arg("--raw")
        .arg(common::repo().join("raw"))
        .arg("--out")
        .arg(&out)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::text(&o));
    let ratings = d.path().join("ratings.sqlite");
    let args = [
        out.to_str().unwrap(),
        "--sample",
        "1",
        "--ratings",
        ratings.to_str().unwrap(),
    ];
    let v = start_viewer(&args);
    let base = format!("http://127.0.0.1:{}", v.port);
    let b = browser::Browser::start(&browser, &driver, &d.path().join("profile")).await;
    let c = &b.client;
    c.goto(&format!("{base}/rate?rater=ann")).await.unwrap();
    let answers = [
        ("misinformation", "yes"),
        ("temporal", "no"),
        ("semantic", "yes"),
    ];
    for (cause, contradicts) in answers {
        wait_text(c, "#cb-cause", cause).await;
        let section = format!("#cb-evidence-{cause} .cb-label");
        let labels = js(
            c,
            &format!(
                "return Array.from(document.querySelectorAll('{section}')).map(e => e.innerText);"
            ),
        )
        .await;
        assert_eq!(
            labels,
            serde_json::json!(["correct evidence", format!("{cause} evidence")])
        );
        click(c, "input[name=misleading][value=highly]").await;
        click(c, "input[name=plausible][value=plausible]").await;
        click(c, &format!("input[name=contradicts][value={contradicts}]")).await;
        click(c, "#cb-save").await;
    }
    wait_text(c, "#cb-done", "1").await;
    nothing_ran(c).await;
    let conn = rusqlite::Connection::open(&ratings).unwrap();
    let mut st = conn
        .prepare("SELECT item_id, contradicts FROM ratings ORDER BY item_id")
        .unwrap();
    let got: Vec<(String, bool)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let causes: Vec<(&str, bool)> = got
        .iter()
        .map(|(id, yes)| (id.rsplit('#').next().unwrap(), *yes))
        .collect();
    assert_eq!(
        causes,
        [
            ("misinformation", true),
            ("semantic", true),
            ("temporal", false)
        ]
    );
    b.assert_no_console_errors().await;
    b.close().await;
}
