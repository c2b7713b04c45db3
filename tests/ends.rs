//! Every command ends cleanly, whatever the pipe: a closed standard output ends a listing
//! quietly (exit 0), a build whose output closes at any point goes on to the end and writes
//! every row, its `runs.jsonl` line and its manifest, and a build on a batch folder an
//! interrupted `batches run-dir` left never hangs when its stderr is closed (a watchdog
//! fails the test). Two servers that hand out the same batch and file ids keep two journal
//! files apart, and `batches` names their servers.

#![allow(clippy::print_stderr)] // a test says how much a build logged

mod common;

use cb_mock::MockServer;
use common::*;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;

/// The longest any command here may take: a command still running then is a hang.
const WATCHDOG: Duration = Duration::from_secs(120);

/// A pipe whose reader is already gone: every write to it fails (EPIPE).
fn closed() -> Stdio {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    Stdio::from(writer)
}

/// `conflictbench ARGS`, none of the caller's endpoint, key or log settings.
fn command(args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"));
    cmd.args(args)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("RUST_LOG")
        .env_remove("CONFLICTBENCH_LOG")
        .kill_on_drop(true);
    cmd
}

/// Waits for `child` under the watchdog: a child still running after [`WATCHDOG`] is killed
/// and the test fails, naming `what`.
async fn ended(mut child: tokio::process::Child, what: &str) -> ExitStatus {
    match tokio::time::timeout(WATCHDOG, child.wait()).await {
        Ok(status) => status.unwrap(),
        Err(_) => {
            let _ = child.kill().await;
            panic!("{what}: still running after {WATCHDOG:?} (a hang)");
        }
    }
}

/// Runs `cmd` with stdout closed and stderr read for `n` bytes then dropped (0: closed
/// before the command starts); its exit status.
async fn with_output_closed_after(
    mut cmd: tokio::process::Command,
    n: usize,
    what: &str,
) -> ExitStatus {
    cmd.stdin(Stdio::null()).stdout(closed());
    if n == 0 {
        cmd.stderr(closed());
        return ended(cmd.spawn().unwrap(), what).await;
    }
    cmd.stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut err = child.stderr.take().unwrap();
    let mut buf = vec![0u8; n];
    // Fewer bytes than `n` (the command said less) is fine: the pipe closes at its end.
    let _ = tokio::time::timeout(WATCHDOG, err.read_exact(&mut buf)).await;
    drop(err);
    ended(child, what).await
}

#[tokio::test(flavor = "multi_thread")]
async fn listings_end_quietly_on_a_closed_stdout() {
    let recipes = repo().join("recipes");
    let recipes = recipes.to_str().unwrap();
    let tries: [&[&str]; 4] = [
        &["recipes", "--recipes", recipes],
        &["recipes", "--explain", "reader_check"],
        &["recipes", "--explain", "negative_context"],
        &["--help"],
    ];
    for args in tries {
        for n in [0usize, 1, 64] {
            // stdout closed before the command starts (n = 0), or read for n bytes and
            // dropped; stderr kept to show what went wrong.
            let mut cmd = command(args);
            cmd.stderr(Stdio::piped());
            if n == 0 {
                cmd.stdout(closed());
            } else {
                cmd.stdout(Stdio::piped());
            }
            let mut child = cmd.spawn().unwrap();
            if let Some(mut out) = child.stdout.take() {
                let mut buf = vec![0u8; n];
                let _ = out.read_exact(&mut buf).await;
            }
            let mut err = child.stderr.take().unwrap();
            let status = ended(child, &args.join(" ")).await;
            let mut said = String::new();
            let _ = err.read_to_string(&mut said).await;
            assert_eq!(status.code(), Some(0), "{args:?} after {n} bytes: {said}");
            assert!(!said.contains("panicked"), "{args:?}: {said}");
        }
    }
}

/// What a finished build left in `dir` (OUT/kre/cose): its rows, its runs and its manifest.
fn assert_built(dir: &Path, rows: usize, what: &str) {
    let built = read_json(&dir.join("cose.json"));
    assert_eq!(built.as_array().map(Vec::len), Some(rows), "{what}: rows");
    let runs = read_jsonl(&dir.join("runs.jsonl"));
    assert!(
        runs.last().is_some_and(|r| r.get("stopped").is_none()),
        "{what}: runs.jsonl {runs:?}"
    );
    assert!(dir.join("manifest.json").is_file(), "{what}: no manifest");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_build_whose_output_closes_goes_on_to_the_end() {
    const N: usize = 6;
    let mock = MockServer::start(model()).await;
    let base = mock.base_url();
    let raw = tempfile::tempdir().unwrap();
    many_questions(raw.path(), N);
    let raw = raw.path().to_str().unwrap();
    // The pipe closes before the first line, after the first few lines, and later.
    for n in [0usize, 200, 4000] {
        let out = tempfile::tempdir().unwrap();
        let mut args = openai_args("cose", &base, raw, out.path().to_str().unwrap());
        // Many log lines, each one a write to the closed pipe.
        args.extend(["--log", "debug", "--concurrency", "2"]);
        let cmd = build_command(&repo().join("recipes"), &args, &[]);
        let what = format!("build, stderr closed after {n} bytes");
        let status = with_output_closed_after(cmd, n, &what).await;
        assert_eq!(status.code(), Some(0), "{what}");
        assert_built(&out.path().join("kre/cose"), N, &what);
    }
}

/// A reader that never reads: the build's stderr pipe fills (64 KiB) and stays full. The build
/// still ends with its rows: its threads never wait on stderr (a thread of its own writes it,
/// and drops what no longer fits). Before, every thread that logged waited on the full pipe
/// and the build hung, SIGTERM included.
#[tokio::test(flavor = "multi_thread")]
async fn a_build_whose_stderr_is_never_read_goes_on_to_the_end() {
    const N: usize = 500;
    let mock = MockServer::start(model()).await;
    let base = mock.base_url();
    let raw = tempfile::tempdir().unwrap();
    many_questions(raw.path(), N);
    let out = tempfile::tempdir().unwrap();
    let mut args = openai_args(
        "cose",
        &base,
        raw.path().to_str().unwrap(),
        out.path().to_str().unwrap(),
    );
    args.extend(["--log", "trace", "--concurrency", "8"]);
    // The same build read whole says more than the pipe holds (else this test proves nothing).
    let said = build(&args, &[]).await;
    assert!(said.status.success(), "{}", text(&said));
    eprintln!(
        "a build with --log trace said {} bytes on stderr",
        said.stderr.len()
    );
    assert!(
        said.stderr.len() > 256 * 1024,
        "{} bytes",
        said.stderr.len()
    );
    std::fs::remove_dir_all(out.path().join("kre")).unwrap();
    std::fs::remove_file(out.path().join("llm-cache.sqlite")).unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    let mut cmd = build_command(&repo().join("recipes"), &args, &[]);
    cmd.stdout(Stdio::null()).stderr(Stdio::from(writer));
    let status = ended(cmd.spawn().unwrap(), "a build whose stderr is never read").await;
    drop(reader);
    assert_eq!(status.code(), Some(0));
    assert_built(
        &out.path().join("kre/cose"),
        N,
        "a build whose stderr is never read",
    );
}

/// `batches run-dir DIR` against `base`, one request at a time.
fn run_dir(dir: &Path, base: &str) -> tokio::process::Command {
    let mut cmd = command(&[
        "batches",
        "run-dir",
        dir.to_str().unwrap(),
        "--base-url",
        base,
    ]);
    cmd.args(["--concurrency", "1"]);
    cmd
}

/// The hang of issue 50: a build on a batch folder that an interrupted `batches run-dir`
/// left (some answers, the rest "not sent"), its stdout and stderr closed. Its round
/// driver logged the requests going to the next round; the log line on the closed stderr
/// panicked the driver, which left the queue marked as driven: the calls queued after it
/// waited forever (3 tries in 6 hung). Every build here must end under the watchdog, and the
/// loop ends with every row written.
#[tokio::test(flavor = "multi_thread")]
async fn a_batch_folder_an_interrupted_executor_left_never_hangs_a_build_with_stderr_closed() {
    const N: usize = 24;
    let mock = MockServer::start(model()).await;
    mock.set_latency(Duration::from_millis(150));
    let base = mock.base_url();
    let raw = tempfile::tempdir().unwrap();
    many_questions(raw.path(), N);
    let (out, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut args = openai_args(
        "cose",
        &base,
        raw.path().to_str().unwrap(),
        out.path().to_str().unwrap(),
    );
    args.extend(["--batch-dir", dir.path().to_str().unwrap()]);
    let build = || build_command(&repo().join("recipes"), &args, &[]);
    let status = with_output_closed_after(build(), 0, "the first build").await;
    assert_eq!(status.code(), Some(4), "the requests should wait in files");

    // The executor, interrupted once a few answers came.
    let mut exec = run_dir(dir.path(), &base);
    exec.stdout(Stdio::null()).stderr(Stdio::null());
    let child = exec.spawn().unwrap();
    let pid = child.id().unwrap();
    let t0 = Instant::now();
    while mock.answered() < 3 {
        assert!(t0.elapsed() < WATCHDOG, "the executor answered nothing");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    assert_eq!(ended(child, "run-dir").await.code(), Some(130));
    let answered = mock.answered();
    assert!(answered < N as u64, "the executor was not interrupted");

    // The builds on that folder, output closed: each ends, and the loop finishes.
    let mut rounds = 0;
    loop {
        rounds += 1;
        assert!(rounds <= 6, "the loop did not finish");
        let status = with_output_closed_after(build(), 0, "a build on the folder").await;
        match status.code() {
            Some(0) => break,
            Some(4) => {
                let status = ended(
                    run_dir(dir.path(), &base)
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                        .unwrap(),
                    "run-dir again",
                )
                .await;
                assert_eq!(status.code(), Some(0));
            }
            c => panic!("a build on the folder exited {c:?}"),
        }
    }
    assert_built(&out.path().join("kre/cose"), N, "the batch folder's build");
    // Every answer the interrupted executor got was used, none asked twice.
    assert_eq!(mock.answered(), N as u64, "an answer was paid twice");
}

/// Two servers that both hand out `file-1` and `batch-1`: the writer's batches on one, the
/// reader's on the other. The journal keys each file on its server, so the build ends, and
/// `batches` lists both with their servers (also on a closed stdout: exit 0).
#[tokio::test(flavor = "multi_thread")]
async fn two_servers_with_the_same_batch_ids_keep_two_journals() {
    let (writer, reader) = (
        MockServer::start(model()).await,
        MockServer::start(model()).await,
    );
    let (wb, rb) = (writer.base_url(), reader.base_url());
    let out = tempfile::tempdir().unwrap();
    let raw = repo().join("raw");
    let mut args = reading_args(
        "kre",
        "cose",
        &wb,
        raw.to_str().unwrap(),
        out.path().to_str().unwrap(),
    );
    args.extend(["--reader-base-url", &rb, "--reader-model", "m"]);
    args.extend(["--batch", "--batch-poll-ms", "20", "--backoff-ms", "10"]);
    let o = build(&args, &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    assert!(writer.batch_count() >= 1 && reader.batch_count() >= 1);
    let cache = out.path().join("llm-cache.sqlite");
    let cache = cache.to_str().unwrap();
    let listed = command(&["batches", "--cache", cache])
        .output()
        .await
        .unwrap();
    assert!(listed.status.success(), "{}", text(&listed));
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    // The first input file of each server has the same id there.
    let first = |server: &str| -> String {
        let line = listed
            .lines()
            .find(|l| l.ends_with(server))
            .unwrap_or_default();
        line.split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_owned()
    };
    let (wf, rf) = (first(&wb), first(&rb));
    assert!(
        !wf.is_empty() && wf == rf,
        "the servers' first files: {wf} {rf}\n{listed}"
    );
    let named: Vec<&str> = listed
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some(wf.as_str()))
        .collect();
    assert!(
        named.len() == 2 && named[0].ends_with(&wb) != named[1].ends_with(&wb),
        "the servers are not named apart:\n{listed}"
    );
    let json = command(&["batches", "--cache", cache, "--json"])
        .output()
        .await
        .unwrap();
    let records: Vec<serde_json::Value> = String::from_utf8_lossy(&json.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        records.iter().all(|r| r["collected"] == true),
        "{records:?}"
    );
    for args in [
        vec!["batches", "--cache", cache],
        vec!["batches", "--cache", cache, "--json"],
    ] {
        let mut cmd = command(&args);
        cmd.stdout(closed()).stderr(Stdio::piped());
        let o = cmd.output().await.unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
    }
}

/// One writer a cache and a folder, whatever happens to the lock files: while a build runs,
/// a second build into another `--out` on the same `--cache`, and an eval on that cache, exit
/// 2 naming the holder; deleting the lock notes by hand lets no second command in; a killed
/// holder frees everything at once, and the next build resumes from its cache.
#[tokio::test(flavor = "multi_thread")]
async fn a_shared_cache_is_refused_whatever_the_lock_files_and_a_killed_holder_frees_it() {
    const N: usize = 8;
    let mock = MockServer::start(model()).await;
    mock.set_latency(Duration::from_millis(300));
    let base = mock.base_url();
    let (raw, tmp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    many_questions(raw.path(), N);
    let raw = raw.path().to_str().unwrap();
    let cache = tmp.path().join("shared.sqlite");
    let cache_s = cache.to_str().unwrap();
    let (one, two) = (tmp.path().join("one"), tmp.path().join("two"));
    let (one_s, two_s) = (one.to_str().unwrap(), two.to_str().unwrap());
    let mut a1 = openai_args("cose", &base, raw, one_s);
    a1.extend(["--concurrency", "1", "--cache", cache_s]);
    let mut a2 = openai_args("cose", &base, raw, two_s);
    a2.extend(["--concurrency", "1", "--cache", cache_s]);
    let mut first = build_command(&repo().join("recipes"), &a1, &[]);
    first
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let first = first.spawn().unwrap();
    let pid = first.id().unwrap();
    let t0 = Instant::now();
    while mock.answered() < 1 {
        assert!(t0.elapsed() < WATCHDOG, "no answers came");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let refused = |o: &std::process::Output, flag: &str, what: &str| {
        let said = text(o);
        assert_eq!(o.status.code(), Some(2), "{what}: {said}");
        assert!(
            said.contains(flag) && said.contains("in use"),
            "{what}: {said}"
        );
        assert!(said.contains(&format!("process {pid}")), "{what}: {said}");
    };
    let o = build(&a2, &[]).await;
    refused(&o, "--cache", "a second build on the cache");
    assert!(!two.exists(), "the refused build left its --out");
    let kre = tmp.path().join("one.json");
    std::fs::write(&kre, "[]").unwrap();
    let eval_out = tmp.path().join("eval");
    let o = eval(&[
        "kre",
        "--data",
        kre.to_str().unwrap(),
        "--base-url",
        &base,
        "--model",
        "m",
        "--out",
        eval_out.to_str().unwrap(),
        "--cache",
        cache_s,
    ])
    .await;
    refused(&o, "--cache", "an eval on the cache");

    // The lock notes deleted by hand: still refused (the holder is then not named).
    std::fs::remove_file(one.join(".conflictbench.lock")).unwrap();
    std::fs::remove_file(tmp.path().join(".shared.sqlite.lock")).unwrap();
    for (a, what) in [(&a1, "the same build"), (&a2, "another build on the cache")] {
        let o = build(a, &[]).await;
        assert_eq!(
            o.status.code(),
            Some(2),
            "{what}, notes deleted: {}",
            text(&o)
        );
        assert!(text(&o).contains("in use"), "{}", text(&o));
    }

    // Killed: its locks are free at once, and the next build resumes from the cache.
    let answered = mock.answered();
    assert!(
        answered < N as u64,
        "the first build ended before the tries"
    );
    std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    let _ = ended(first, "the killed build").await;
    let o = build(&a2, &[]).await;
    assert!(o.status.success(), "after the kill: {}", text(&o));
    assert_built(&two.join("kre/cose"), N, "the build after the kill");
    // At most the call cut off by the kill was asked again.
    assert!(mock.request_count() <= N + 1, "{}", mock.request_count());
}
