//! The evaluation's charts in a real browser: `results.html` of a KRE run and the
//! `compare.html` of two runs (a context follower against a memory model), rendered by
//! headless Chromium through chromedriver by fantoccini (`common/browser.rs`). Checks, as the browser sees
//! them: one bar per figure with a value and one whisker per interval, the zero lines, the
//! style axis with each model's point on its side, the labels' text, and no console error.
//! Screenshots of both pages, and the pages, stay in `target/tmp/eval_browser/`
//! (`results.png`, `compare.png`, `results.html`, `compare.html`).
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs them). Without them the
//! test fails under `CI=true` and is skipped otherwise.

#[path = "common/browser.rs"]
mod browser;
mod common;
#[path = "common/eval_runs.rs"]
mod eval_runs;

use cb_mock::eval_script::Behaviour;
use common::{read_json, text};
use eval_runs::{compare, run_kre, write_kre};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What the browser shows of the page's charts.
async fn marks(b: &browser::Browser) -> Value {
    b.script(
        "var q = function (s) { return document.querySelectorAll(s); };\
         var texts = function (s) { return Array.prototype.map.call(q(s), function (t) { return t.textContent; }); };\
         var shown = Array.prototype.every.call(q('svg.cb-chart'), function (s) {\
             var r = s.getBoundingClientRect(); return r.width > 0 && r.height > 0; });\
         var wide = Array.prototype.every.call(q('rect.cb-bar'), function (r) {\
             return r.getBoundingClientRect().width >= 1; });\
         return {charts: q('svg.cb-chart').length, bars: q('svg rect.cb-bar').length,\
                 whiskers: q('svg g.cb-whisker').length, whisker_lines: q('svg g.cb-whisker line').length,\
                 zeros: q('svg line.cb-zero').length, points: q('svg circle.cb-point').length,\
                 regions: q('svg rect.cb-region').length,\
                 titles: texts('svg text.cb-title'), labels: texts('svg text.cb-label'),\
                 values: texts('svg text.cb-value'), regions_text: texts('svg text.cb-region-label'),\
                 points_x: Array.prototype.map.call(q('svg circle.cb-point'), function (c) { return c.getBoundingClientRect().x; }),\
                 regions_x: Array.prototype.map.call(q('svg rect.cb-region'), function (r) { var b = r.getBoundingClientRect(); return [b.left, b.right]; }),\
                 shown: shown, wide: wide, scripts: q('script').length};",
    )
    .await
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

/// The test's output folder (screenshots stay there after the test).
fn output_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("eval_browser")
}

#[tokio::test]
async fn charts_in_headless_chromium() {
    let Some((chromium, driver)) = browser::tools() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let files = vec![
        write_kre(&t.join("data"), "cose", 6, None),
        write_kre(&t.join("data"), "ecare", 6, None),
    ];
    let settings = ["--settings", "zero_shot,role_dependent,role_intuitive"];
    let follow = t.join("follower");
    let memory = t.join("memory");
    let r = run_kre(
        &files,
        &follow,
        "follower",
        Behaviour::FollowContext,
        &settings,
        None,
    )
    .await;
    run_kre(
        &files,
        &memory,
        "memory-model",
        Behaviour::Memory,
        &settings,
        None,
    )
    .await;
    let cmp = t.join("cmp");
    let o = compare(&[&follow, &memory, Path::new("--out"), &cmp]);
    assert!(o.status.success(), "{}", text(&o));
    let c = read_json(&cmp.join("compare.json"));
    let out = output_dir();

    let b = browser::Browser::start(&chromium, &driver, &t.join("profile")).await;

    // results.html: one chart per domain, task and setting, one bar per figure with a
    // value, one whisker per interval, the style axis with the model's one point.
    b.open(&follow.join("results.html")).await;
    let m = marks(&b).await;
    let figures = r["figures"].as_array().unwrap();
    let with_value = figures.iter().filter(|f| !f["mean"].is_null()).count();
    let with_interval = figures.iter().filter(|f| !f["interval"].is_null()).count();
    let groups: std::collections::BTreeSet<String> = figures
        .iter()
        .map(|f| {
            format!(
                "{} · {} · {}",
                f["domain"].as_str().unwrap(),
                f["task"].as_str().unwrap(),
                f["setting"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(m["scripts"], 0, "no script on the page");
    assert_eq!(m["charts"], groups.len() + 1, "{m}");
    assert_eq!(m["bars"], with_value, "{m}");
    assert_eq!(
        m["whiskers"],
        with_interval + 1,
        "the figures' and the point's: {m}"
    );
    assert_eq!(m["whisker_lines"], 3 * (with_interval + 1), "{m}");
    assert_eq!(m["zeros"], m["charts"], "{m}");
    assert_eq!(m["points"], 1, "{m}");
    assert_eq!(m["regions"], 3, "{m}");
    assert!(
        m["shown"].as_bool().unwrap() && m["wide"].as_bool().unwrap(),
        "{m}"
    );
    let titles = strings(&m["titles"]);
    for g in &groups {
        assert!(titles.contains(g), "{g} not in {titles:?}");
    }
    assert!(
        titles[0] == "Decision-making style: DMSS ×100, zero_shot, all domains",
        "{titles:?}"
    );
    assert_eq!(
        strings(&m["regions_text"]),
        ["dependent", "rational/irrational", "intuitive"]
    );
    let labels = strings(&m["labels"]);
    for l in [
        "follower",
        "memory_acc",
        "vr",
        "rr",
        "dmss",
        "negative_rate",
        "adaptivity",
    ] {
        assert!(labels.iter().any(|x| x == l), "{l} not in {labels:?}");
    }
    let values = strings(&m["values"]);
    assert!(
        values.contains(&"DMSS -100.00 [-100.00, -100.00] dependent".to_owned()),
        "{values:?}"
    );
    assert!(
        values.contains(&"0.00 [0.00, 0.00] (n=12)†".to_owned()),
        "VR of all: {values:?}"
    );
    // The follower's point lies in the dependent region.
    let (px, dep) = (&m["points_x"][0], &m["regions_x"][0]);
    assert!(px.as_f64().unwrap() <= dep[1].as_f64().unwrap(), "{m}");
    b.assert_no_console_errors().await;
    b.screenshot(&out.join("results.png")).await;
    std::fs::copy(follow.join("results.html"), out.join("results.html")).unwrap();

    // compare.html: a bar and a whisker per difference, zero lines, both runs on the axis.
    b.open(&cmp.join("compare.html")).await;
    let m = marks(&b).await;
    let compared = c["figures"].as_array().unwrap();
    let diffs: Vec<&Value> = compared.iter().map(|f| &f["differences"][0]).collect();
    let groups: std::collections::BTreeSet<String> = compared
        .iter()
        .map(|f| {
            format!(
                "{} · {} · {}: run − run 1",
                f["domain"].as_str().unwrap(),
                f["task"].as_str().unwrap(),
                f["setting"].as_str().unwrap()
            )
        })
        .collect();
    let dmss_all = compared
        .iter()
        .find(|f| f["domain"] == "all" && f["setting"] == "zero_shot" && f["metric"] == "dmss")
        .unwrap();
    let point_whiskers = dmss_all["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["interval"].is_null())
        .count();
    assert_eq!(m["scripts"], 0);
    assert_eq!(m["charts"], groups.len() + 1, "{m}");
    assert_eq!(
        m["bars"],
        diffs.iter().filter(|d| !d["difference"].is_null()).count(),
        "{m}"
    );
    assert_eq!(
        m["whiskers"],
        diffs.iter().filter(|d| !d["interval"].is_null()).count() + point_whiskers,
        "{m}"
    );
    assert_eq!(m["zeros"], m["charts"], "{m}");
    assert_eq!(m["points"], 2, "{m}");
    let titles = strings(&m["titles"]);
    for g in &groups {
        assert!(titles.contains(g), "{g} not in {titles:?}");
    }
    let labels = strings(&m["labels"]);
    assert!(
        labels.contains(&"run 1: follower (baseline)".to_owned()),
        "{labels:?}"
    );
    assert!(
        labels.contains(&"run 2: memory-model".to_owned()),
        "{labels:?}"
    );
    let values = strings(&m["values"]);
    assert!(
        values.contains(&"+100.00 [100.00, 100.00] excludes 0".to_owned()),
        "VR: {values:?}"
    );
    assert!(
        values.contains(&"+200.00 [200.00, 200.00] excludes 0".to_owned()),
        "DMSS: {values:?}"
    );
    assert!(
        values.contains(&"+0.00 [0.00, 0.00]".to_owned()),
        "memory: {values:?}"
    );
    assert!(
        values.contains(&"DMSS 100.00 [100.00, 100.00] intuitive".to_owned()),
        "{values:?}"
    );
    // The follower's point is in the dependent region, the memory model's in the intuitive one.
    let (x0, x1) = (
        m["points_x"][0].as_f64().unwrap(),
        m["points_x"][1].as_f64().unwrap(),
    );
    assert!(x0 <= m["regions_x"][0][1].as_f64().unwrap(), "{m}");
    assert!(x1 >= m["regions_x"][2][0].as_f64().unwrap() - 5.0, "{m}");
    b.assert_no_console_errors().await;
    b.screenshot(&out.join("compare.png")).await;
    std::fs::copy(cmp.join("compare.html"), out.join("compare.html")).unwrap();
    for f in ["results.png", "compare.png"] {
        let len = std::fs::metadata(out.join(f)).unwrap().len();
        assert!(len > 10_000, "{f}: {len} bytes");
    }
    b.close().await;
}
