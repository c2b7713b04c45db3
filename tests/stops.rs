//! Stops said out loud: a build stopped by SIGINT or SIGTERM says in one line what it kept
//! and how to resume, records a `stopped` run and exits 130 or 143, and the re-run pays for
//! no answer twice; an `--out` that is a file is a configuration error said once; a failed
//! eval leaves no cache file behind; a build of several recipes at once, killed at a random
//! point or stopped by its budget, resumes paying once and ends with an uninterrupted build's
//! files; a source changed during a build stops it naming the file.

#![allow(clippy::print_stderr)] // the random tests print their seed

#[path = "common/batch_dir.rs"]
mod batch_dir;
mod common;
#[path = "common/seed.rs"]
mod seed;

use batch_dir::assert_same;
use cb_mock::MockServer;
use common::*;
use seed::{draw, kill_seed};
use std::collections::BTreeMap;
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

/// Two recipes built at once (`kre --domains cose,ecare`): 24 generated CoS-E questions and the
/// bundled e-CARE sample, in a source folder of their own.
fn two_recipes(raw: &Path) {
    many_questions(raw, 24);
    std::fs::create_dir_all(raw.join("ecare")).unwrap();
    std::fs::copy(
        repo().join("raw/ecare/dev_full.jsonl"),
        raw.join("ecare/dev_full.jsonl"),
    )
    .unwrap();
}

/// `build kre --domains cose,ecare` against `base`, three calls in flight for the two
/// recipes, priced (so that a budget can stop it).
fn two_recipe_args<'a>(base: &'a str, raw: &'a str, out: &'a str) -> Vec<&'a str> {
    let mut args = openai_args("cose,ecare", base, raw, out);
    args.extend([
        "--concurrency",
        "3",
        "--price-input",
        "1",
        "--price-output",
        "1",
    ]);
    args
}

/// The files of an uninterrupted build of [`two_recipe_args`] into `out`, and what its
/// manifests say it cost.
async fn uninterrupted(base: &str, raw: &str, out: &Path) -> (BTreeMap<String, Vec<u8>>, f64) {
    let o = build(&two_recipe_args(base, raw, out.to_str().unwrap()), &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    let cost = ["cose", "ecare"]
        .iter()
        .map(|d| {
            let m = read_json(&out.join("kre").join(d).join("manifest.json"));
            m["llm"]["estimated_cost_usd"].as_f64().unwrap()
        })
        .sum();
    (snapshot(&out.join("kre")), cost)
}

/// How many times each request body (canonical JSON) came to the mock, and where it first came
/// (its index in the journal).
fn asked(mock: &MockServer) -> BTreeMap<String, (usize, usize)> {
    let mut seen = BTreeMap::new();
    for (i, e) in mock.journal().iter().enumerate() {
        let mut key = String::new();
        cb_mock::canonical_json(&e.body, &mut key);
        seen.entry(key).or_insert((0, i)).0 += 1;
    }
    seen
}

/// A build of two recipes at once, killed (SIGKILL) after a random number of answers, then run
/// again: the second run ends with the files of an uninterrupted build, and the only requests
/// asked twice were among those in flight at the kill (at most the last 2 x 3 to arrive: three
/// in flight, three more whose answers may have been on their way back), each answer the
/// killed build had received being in the cache.
#[tokio::test(flavor = "multi_thread")]
async fn a_build_of_several_recipes_killed_at_a_random_point_resumes_paying_once() {
    let seed = kill_seed("killed_several_recipes");
    let mock = MockServer::start(model()).await;
    mock.set_latency(Duration::from_millis(100));
    let (raw, want_out, out) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    two_recipes(raw.path());
    let (base, raw_s) = (mock.base_url(), raw.path().to_str().unwrap());
    let (want, _) = uninterrupted(&base, raw_s, want_out.path()).await;
    let total = mock.request_count() as u64;
    assert!(total > 20, "{total}");
    mock.clear_journal();

    let args = two_recipe_args(&base, raw_s, out.path().to_str().unwrap());
    let kill_after = draw(seed, 1, total - 1);
    eprintln!("killed after {kill_after} of {total} requests");
    let mut child = build_command(&args).spawn().unwrap();
    let t0 = Instant::now();
    while (mock.request_count() as u64) < kill_after {
        assert!(t0.elapsed() < Duration::from_secs(120), "no requests came");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    child.kill().await.unwrap();
    let at_kill = mock.request_count();
    let last = build(&args, &[]).await;
    assert!(last.status.success(), "{}", text(&last));
    assert_same(&snapshot(&out.path().join("kre")), &want);
    let asked = asked(&mock);
    assert_eq!(
        asked.len() as u64,
        total,
        "the requests differ from the uninterrupted build's"
    );
    let twice = asked.values().filter(|(n, _)| *n > 1).count();
    eprintln!("{twice} requests asked again, of those in flight at the kill");
    for (body, (times, first)) in &asked {
        assert!(
            *times == 1 || (*times == 2 && first + 6 >= at_kill),
            "asked {times} times, first as request {first} of the {at_kill} before the kill: {body}"
        );
    }
}

/// A build of two recipes at once stopped by its budget (`--max-cost` a third of what the whole
/// build costs: exit 3, nothing written), run again with the same budget until it ends: it
/// ends with the files of an uninterrupted build, and no request was asked twice.
#[tokio::test(flavor = "multi_thread")]
async fn a_build_of_several_recipes_stopped_by_the_budget_resumes_paying_once() {
    let mock = MockServer::start(model()).await;
    mock.set_latency(Duration::from_millis(20));
    let (raw, want_out, out) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    two_recipes(raw.path());
    let (base, raw_s) = (mock.base_url(), raw.path().to_str().unwrap());
    let (want, cost) = uninterrupted(&base, raw_s, want_out.path()).await;
    let total = mock.request_count();
    mock.clear_journal();

    let budget = format!("{:.9}", cost / 3.0);
    let mut args = two_recipe_args(&base, raw_s, out.path().to_str().unwrap());
    args.extend(["--max-cost", &budget]);
    let mut exits = Vec::new();
    while exits.last() != Some(&0) {
        assert!(exits.len() < 8, "still stopped after {exits:?}");
        let o = build(&args, &[]).await;
        let code = o.status.code().unwrap_or(-1);
        assert!(code == 0 || code == 3, "{}", text(&o));
        if code == 3 {
            assert!(
                text(&o).contains("run the same command again"),
                "{}",
                text(&o)
            );
        }
        exits.push(code);
    }
    eprintln!("--max-cost {budget} of {cost:.9}: exits {exits:?}");
    assert!(exits.len() >= 3 && exits[0] == 3, "{exits:?}");
    assert_same(&snapshot(&out.path().join("kre")), &want);
    let asked = asked(&mock);
    assert_eq!(asked.len(), total);
    let twice: Vec<_> = asked.iter().filter(|(_, (n, _))| *n > 1).collect();
    assert!(
        twice.is_empty(),
        "asked again after a budget stop: {twice:?}"
    );
}

/// A source that changes while a build reads it (the CommonsenseQA file cut to half once the
/// second pass has begun, as a copy still being written would be) stops the build with exit 1
/// naming the file; the previous build stays as it was, and once the file holds still the same
/// command finishes.
#[tokio::test(flavor = "multi_thread")]
async fn a_source_changed_between_the_passes_stops_the_build_naming_it() {
    const N: usize = 6;
    let mock = MockServer::start(model()).await;
    mock.set_latency(Duration::from_millis(150));
    let (raw, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let base = mock.base_url();
    let (raw_s, out_s) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let mut args = openai_args("cose", &base, raw_s, out_s);
    args.extend(["--concurrency", "1"]);
    many_questions(raw.path(), N);
    let first = build(&args, &[]).await;
    assert!(first.status.success(), "{}", text(&first));
    let dir = out.path().join("kre/cose");
    let previous = snapshot(&dir);

    // Twice the questions: the first pass makes no call, so the first new answer means the
    // second pass has begun.
    many_questions(raw.path(), 2 * N);
    let child = build_command(&args).spawn().unwrap();
    let t0 = Instant::now();
    while mock.answered() <= N as u64 {
        assert!(t0.elapsed() < Duration::from_secs(60), "no answers came");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let primary = raw.path().join("commonsenseqa/dev_rand_split.jsonl");
    let whole = std::fs::read_to_string(&primary).unwrap();
    let half: String = whole.lines().take(N).map(|l| format!("{l}\n")).collect();
    std::fs::write(&primary, half).unwrap();
    let o = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the build did not stop")
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let said = text(&o);
    assert!(said.contains(&primary.display().to_string()), "{said}");
    assert!(said.contains("changed during the build"), "{said}");
    assert_eq!(snapshot(&dir), previous, "the previous build changed");

    std::fs::write(&primary, whole).unwrap();
    let again = build(&args, &[]).await;
    assert!(again.status.success(), "{}", text(&again));
    let rows = read_json(&dir.join("cose.json"));
    assert_eq!(rows.as_array().unwrap().len(), 2 * N);
}

/// One command per folder (issue 44, item 2): while a build runs, the same command, and an
/// eval into its `--out`, exit 2 naming it (its process id and start) and create nothing; a
/// batch folder held by another command refuses a build with `--batch-dir` naming the flag,
/// before its new `--out` exists. The lock goes with the build.
#[tokio::test(flavor = "multi_thread")]
async fn a_second_command_on_a_folder_held_exits_2_naming_the_first_and_creates_nothing() {
    let mock = MockServer::start(model()).await;
    mock.set_latency(Duration::from_millis(300));
    let (raw, out, tmp) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    many_questions(raw.path(), N);
    let base = mock.base_url();
    let (raw_s, out_s) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let mut args = openai_args("cose", &base, raw_s, out_s);
    args.extend(["--concurrency", "1"]);
    let first = build_command(&args).spawn().unwrap();
    let pid = first.id().unwrap();
    let t0 = Instant::now();
    while mock.answered() < 1 {
        assert!(t0.elapsed() < Duration::from_secs(60), "no answers came");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let held = |o: &std::process::Output, flag: &str| {
        let said = text(o);
        assert_eq!(o.status.code(), Some(2), "{said}");
        assert!(said.contains(flag) && said.contains("in use"), "{said}");
        assert!(said.contains(&format!("process {pid}, started ")), "{said}");
    };
    let o = build(&args, &[]).await;
    held(&o, "--out");
    let kre = tmp.path().join("one.json");
    std::fs::write(&kre, "[]").unwrap();
    let o = eval(&[
        "kre",
        "--data",
        kre.to_str().unwrap(),
        "--base-url",
        &base,
        "--model",
        "m",
        "--out",
        out_s,
    ])
    .await;
    held(&o, "--out");
    assert!(!out.path().join("eval").exists() && !out.path().join("kre/cose/cose.json").exists());
    let o = tokio::time::timeout(Duration::from_secs(60), first.wait_with_output())
        .await
        .expect("the first build did not end")
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        !out.path().join(".conflictbench.lock").exists(),
        "the lock file stays"
    );

    // A batch folder held (here by this test, as another command would) refuses a build.
    let batches = tmp.path().join("batches");
    std::fs::create_dir(&batches).unwrap();
    // The lock is the folder's own (its note names the holder).
    let lock = std::fs::File::open(&batches).unwrap();
    std::fs::write(
        batches.join(".conflictbench.lock"),
        "process 1, started then: a test",
    )
    .unwrap();
    lock.try_lock().unwrap();
    let new_out = tmp.path().join("new-out");
    let mut args = openai_args("cose", &base, raw_s, new_out.to_str().unwrap());
    args.extend(["--batch-dir", batches.to_str().unwrap()]);
    let o = build(&args, &[]).await;
    let said = text(&o);
    assert_eq!(o.status.code(), Some(2), "{said}");
    assert!(
        said.contains("--batch-dir") && said.contains("process 1, started then"),
        "{said}"
    );
    assert!(!new_out.exists(), "the refused build made its --out");
}

/// A source whose stamps change during a build while its bytes do not (`touch`, a copy of
/// the same content over it, the same content renamed into place) goes on to the end with the
/// files of an undisturbed build (issue 44, item 6).
#[tokio::test(flavor = "multi_thread")]
async fn a_source_touched_or_copied_over_with_the_same_bytes_goes_on() {
    let mock = MockServer::start(model()).await;
    mock.set_latency(Duration::from_millis(100));
    let (raw, want, out) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let base = mock.base_url();
    let raw_s = raw.path().to_str().unwrap();
    many_questions(raw.path(), N);
    let mut args = openai_args("cose", &base, raw_s, want.path().to_str().unwrap());
    args.extend(["--concurrency", "1"]);
    let o = build(&args, &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    let primary = raw.path().join("commonsenseqa/dev_rand_split.jsonl");
    let bytes = std::fs::read(&primary).unwrap();
    for (i, how) in ["touch", "copy", "rename"].into_iter().enumerate() {
        let out_i = out.path().join(how);
        let mut args = openai_args("cose", &base, raw_s, out_i.to_str().unwrap());
        args.extend(["--concurrency", "1", "--cache"]);
        let cache = out.path().join(format!("{how}.sqlite"));
        args.push(cache.to_str().unwrap());
        let child = build_command(&args).spawn().unwrap();
        let t0 = Instant::now();
        while mock.answered() < ((i + 1) * N + 2) as u64 {
            assert!(t0.elapsed() < Duration::from_secs(60), "no answers came");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        match how {
            "touch" => std::fs::File::options()
                .write(true)
                .open(&primary)
                .unwrap()
                .set_modified(std::time::SystemTime::now() + Duration::from_secs(5))
                .unwrap(),
            "copy" => std::fs::write(&primary, &bytes).unwrap(),
            _ => {
                let next = primary.with_extension("next");
                std::fs::write(&next, &bytes).unwrap();
                std::fs::rename(&next, &primary).unwrap();
            }
        }
        let o = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .expect("the build did not end")
            .unwrap();
        assert!(o.status.success(), "{how}: {}", text(&o));
        assert_same(
            &snapshot(&out_i.join("kre")),
            &snapshot(&want.path().join("kre")),
        );
    }
}
