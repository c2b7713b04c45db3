//! Stops said out loud: a build stopped by SIGINT or SIGTERM says in one line what it kept
//! and how to resume, records a `stopped` run and exits 130 or 143, and the re-run pays for
//! no answer twice; an `--out` that is a file is a configuration error said once; a failed
//! eval leaves no cache file behind.

mod common;

use cb_mock::MockServer;
use common::*;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Questions of the interrupted builds: one model call each (`--reader none`).
const N: usize = 8;

/// `conflictbench build ARGS` as `common::build` runs it, stdout and stderr kept.
fn build_command(args: &[&str]) -> tokio::process::Command {
    let mut cmd = common::build_command(&repo().join("recipes"), args, &[]);
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// Starts a build of `N` questions against a mock answering in 300 ms, one call at a time,
/// sends `signal` (`INT` or `TERM`) once two answers came, and checks the stop: exit `code`,
/// one line on stderr that says what was kept and to run again, a `stopped` line in
/// runs.jsonl. Then runs the same command again: it finishes, and the mock answered each
/// question once over both runs.
async fn stopped_by(signal: &str, code: i32) {
    let mock = MockServer::start(model()).await;
    mock.set_latency(Duration::from_millis(300));
    let raw = tempfile::tempdir().unwrap();
    many_questions(raw.path(), N);
    let out = tempfile::tempdir().unwrap();
    let base = mock.base_url();
    let mut args = openai_args(
        "cose",
        &base,
        raw.path().to_str().unwrap(),
        out.path().to_str().unwrap(),
    );
    args.extend(["--concurrency", "1"]);

    let child = build_command(&args).spawn().unwrap();
    let pid = child.id().unwrap();
    let t0 = Instant::now();
    while mock.answered() < 2 {
        assert!(t0.elapsed() < Duration::from_secs(60), "no answers came");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // A third of the way into the next call's latency: no answer is on its way back.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let sent = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let o = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("the build did not stop")
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(code), "{}", text(&o));
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    let line = lines[0];
    assert!(
        line.contains(&format!("SIG{signal}"))
            && line.contains("kre-cose")
            && line.contains("cached")
            && line.contains("run the same command again to resume"),
        "{line}"
    );
    let answered = mock.answered();
    assert!(answered < N as u64, "the build was not stopped midway");

    let dir = out.path().join("kre/cose");
    assert!(
        !dir.join("cose.json").exists(),
        "a stopped build wrote rows"
    );
    let runs = read_jsonl(&dir.join("runs.jsonl"));
    assert_eq!(runs.len(), 1, "{runs:?}");
    let stopped = runs[0]["stopped"].as_str().unwrap_or_default();
    assert!(stopped.contains(&format!("SIG{signal}")), "{runs:?}");
    assert!(runs[0]["llm"]["upstream_calls"].as_u64().unwrap() >= answered);

    let again = build(&args, &[]).await;
    assert!(again.status.success(), "{}", text(&again));
    let rows = read_json(&dir.join("cose.json"));
    assert_eq!(rows.as_array().unwrap().len(), N);
    // Every answer is paid once: those of the stopped run came from the cache; at most the
    // call cut off in flight (never answered) was sent again.
    assert_eq!(mock.answered(), N as u64, "an answer was paid twice");
    assert!(mock.request_count() <= N + 1, "{}", mock.request_count());
    let runs = read_jsonl(&dir.join("runs.jsonl"));
    assert_eq!(runs.len(), 2);
    assert!(runs[1].get("stopped").is_none(), "{runs:?}");
    assert_eq!(
        runs[1]["llm"]["cache_hits"].as_u64().unwrap(),
        answered,
        "{runs:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sigint_stops_a_build_said_out_loud_and_it_resumes() {
    stopped_by("INT", 130).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_stops_a_build_said_out_loud_and_it_resumes() {
    stopped_by("TERM", 143).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_out_that_is_a_file_is_a_configuration_error_said_once() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("not-a-folder");
    std::fs::write(&file, "x").unwrap();
    let raw = repo().join("raw");
    for out in [file.clone(), file.join("sub")] {
        let o = build_command(&[
            "kre",
            "--domains",
            "cose",
            "--raw",
            raw.to_str().unwrap(),
            "--limit",
            "2",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .await
        .unwrap();
        let said = text(&o);
        assert_eq!(o.status.code(), Some(2), "{said}");
        assert_eq!(said.matches("(os error").count(), 1, "{said}");
        assert!(said.contains("--out"), "{said}");
        assert_eq!(std::fs::read(&file).unwrap(), b"x");
    }
}

/// One KRE row, enough for an eval to make calls.
fn kre_file(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("one.json");
    std::fs::write(
        &p,
        serde_json::json!([{
            "question": "Where do you keep socks?",
            "answer": "A",
            "negative_answer": "shelf",
            "candidate": "B",
            " golden_context": "Socks go in a drawer.",
            "negative_context": "Socks go on a shelf.",
            "choices": ["drawer", "shelf", "box", "bag", "car"]
        }])
        .to_string(),
    )
    .unwrap();
    p
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_eval_leaves_no_cache_behind() {
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}/v1", l.local_addr().unwrap().port())
    };
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let kre = kre_file(tmp.path());
    let out = tmp.path().join("eval/out");

    // No rows to evaluate (exit 2), then an endpoint that never answers (exit 1).
    let runs: [(&[&str], i32); 2] = [
        (&["recall", "--data", empty.to_str().unwrap()], 2),
        (
            &[
                "kre",
                "--data",
                kre.to_str().unwrap(),
                "--max-retries",
                "1",
                "--backoff-ms",
                "10",
            ],
            1,
        ),
    ];
    for (args, code) in runs {
        let mut args = args.to_vec();
        args.extend(["--base-url", &dead, "--model", "m"]);
        args.extend(["--out", out.to_str().unwrap()]);
        let o = eval(&args).await;
        assert_eq!(o.status.code(), Some(code), "{}", text(&o));
        assert!(
            !out.join("llm-cache.sqlite").exists(),
            "a failed eval left its cache: {}",
            text(&o)
        );
        assert!(
            !tmp.path().join("eval").exists(),
            "a failed eval left the folders it created"
        );
    }

    // A cache that was there before the failed eval stays.
    std::fs::create_dir_all(&out).unwrap();
    drop(cb_llm::Cache::open(&out.join("llm-cache.sqlite")).unwrap());
    let o = eval(&[
        "recall",
        "--data",
        empty.to_str().unwrap(),
        "--base-url",
        &dead,
        "--model",
        "m",
        "--out",
        out.to_str().unwrap(),
    ])
    .await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(out.join("llm-cache.sqlite").is_file(), "{}", text(&o));
}

/// The visible files of a build folder (the temporary files a killed build leaves, `.NAME.tmp-PID`,
/// left out: the next build removes them).
fn visible(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut files = snapshot(dir);
    files.retain(|name, _| !name.rsplit('/').next().unwrap_or(name).starts_with('.'));
    files
}

/// A build killed (SIGKILL: no chance to clean up) at several points while its rows are being
/// written leaves the previous build in its folder as it was, and the run that finishes pays
/// for no answer twice and leaves no temporary file behind.
#[tokio::test(flavor = "multi_thread")]
async fn a_build_killed_at_any_point_leaves_the_previous_build_and_resumes_paying_once() {
    const FIRST: usize = 6;
    const SECOND: usize = 14;
    let mock = MockServer::start(model()).await;
    mock.set_latency(Duration::from_millis(100));
    let (raw, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let base = mock.base_url();
    let (raw_s, out_s) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let mut args = openai_args("cose", &base, raw_s, out_s);
    args.extend(["--concurrency", "1"]);
    many_questions(raw.path(), FIRST);
    let first = build(&args, &[]).await;
    assert!(first.status.success(), "{}", text(&first));
    let dir = out.path().join("kre/cose");
    let previous = visible(&dir);
    assert_eq!(mock.answered(), FIRST as u64);

    // The source grows: the next build asks SECOND - FIRST new questions.
    many_questions(raw.path(), SECOND);
    for kill_after in [FIRST + 1, FIRST + 4, FIRST + 7] {
        let mut child = build_command(&args).spawn().unwrap();
        let t0 = Instant::now();
        while mock.answered() < kill_after as u64 {
            assert!(t0.elapsed() < Duration::from_secs(60), "no answers came");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        // Into the next call's latency: no answer is on its way back.
        tokio::time::sleep(Duration::from_millis(30)).await;
        child.kill().await.unwrap();
        assert_eq!(
            visible(&dir),
            previous,
            "a build killed after {kill_after} answers changed the previous build"
        );
    }
    let last = build(&args, &[]).await;
    assert!(last.status.success(), "{}", text(&last));
    let rows = read_json(&dir.join("cose.json"));
    assert_eq!(rows.as_array().unwrap().len(), SECOND);
    // Every answer a killed build received was committed first: the last run found them in
    // the cache (at least those before the last kill, less the calls cut off at the two kills
    // before it) and asked only the rest. The mock may have answered the one call in flight
    // at each kill (one at a time) to a build already gone; that answer was never received.
    let runs = read_jsonl(&dir.join("runs.jsonl"));
    let hits = runs.last().unwrap()["llm"]["cache_hits"].as_u64().unwrap();
    let sent = runs.last().unwrap()["llm"]["upstream_calls"]
        .as_u64()
        .unwrap();
    assert!(hits >= (FIRST + 7 - 2) as u64, "{runs:?}");
    assert_eq!(hits + sent, SECOND as u64, "{runs:?}");
    assert!(
        mock.answered() <= (SECOND + 3) as u64,
        "an answer was paid twice"
    );
    assert_eq!(
        visible(&dir).len(),
        snapshot(&dir).len(),
        "temporary files left"
    );
    assert_counts_add_up(&dir);
}
