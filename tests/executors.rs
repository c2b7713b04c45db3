//! The executors of batch files are as strict as the build: `conflictbench batches run-dir`
//! and `scripts/ray-batch.py` (its checks run without Ray: everything is checked before Ray
//! starts) refuse a malformed input file with exit 2 naming file and line, sending nothing;
//! refuse bad arguments (exit 2, the flag named); and exit 1 naming the endpoint and the count
//! when requests got no answer, writing no output file for an input none of whose requests
//! was answered.
#![allow(clippy::print_stderr)] // a skipped test says so

mod common;

use cb_mock::{responder, MockServer, Reply};
use common::*;
use serde_json::json;
use std::path::Path;
use std::process::Output;

fn request(id: &str, body: serde_json::Value) -> String {
    json!({"custom_id": id, "method": "POST", "url": "/v1/chat/completions", "body": body})
        .to_string()
}

fn good(id: &str) -> String {
    request(
        id,
        json!({"model": "m", "messages": [{"role": "user", "content": id}]}),
    )
}

/// The malformed files an executor must refuse, with the line and words its error names.
fn bad_files() -> Vec<(&'static str, Vec<u8>, usize, &'static str)> {
    let lines = |ls: &[String]| ls.join("\n").into_bytes();
    let no_id = json!({"body": {"model": "m", "messages": []}}).to_string();
    let oops = json!({"custom_id": "b", "body": "oops"}).to_string();
    vec![
        (
            "no custom_id",
            lines(&[good("a"), no_id]),
            2,
            "no custom_id",
        ),
        (
            "repeated custom_id",
            lines(&[good("a"), good("b"), good("a")]),
            3,
            "custom_id a appears twice",
        ),
        (
            "body not an object",
            lines(&[good("a"), oops]),
            2,
            "not a chat completion",
        ),
        (
            "binary",
            [good("a").into_bytes(), b"\n\xff\xfe\x00\x01".to_vec()].concat(),
            2,
            "not UTF-8",
        ),
        (
            "not JSON",
            lines(&[good("a"), "{\"custom_id\":".into()]),
            2,
            "not JSON",
        ),
        ("empty", Vec::new(), 0, "no requests"),
    ]
}

async fn run_dir(dir: &Path, args: &[&str]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .args(["batches", "run-dir"])
        .arg(dir)
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .await
        .unwrap()
}

/// Where the error names the file: `PATH:LINE: ...`, or `PATH: ...` for a whole-file fault.
fn place(input: &Path, line: usize) -> String {
    match line {
        0 => format!("{}: ", input.display()),
        n => format!("{}:{n}: ", input.display()),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn run_dir_refuses_a_malformed_file_naming_its_line_and_sends_nothing() {
    let mock = MockServer::start(model()).await;
    let base = mock.base_url();
    for (what, bytes, line, says) in bad_files() {
        let dir = tempfile::tempdir().unwrap();
        // A good file first: it is not answered either, since every file is checked first.
        std::fs::write(dir.path().join("requests-00001.jsonl"), good("x") + "\n").unwrap();
        let input = dir.path().join("requests-00002.jsonl");
        std::fs::write(&input, bytes).unwrap();
        let o = run_dir(dir.path(), &["--base-url", &base]).await;
        assert_eq!(o.status.code(), Some(2), "{what}: {}", text(&o));
        let said = text(&o);
        assert!(said.contains(&place(&input, line)), "{what}: {said}");
        assert!(said.contains(says), "{what}: {said}");
        assert_eq!(mock.request_count(), 0, "{what}: a request was sent");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 2, "{what}: a file was written");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn run_dir_refuses_bad_arguments_before_any_work() {
    let mock = MockServer::start(model()).await;
    let base = mock.base_url();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("requests-00001.jsonl"), good("a") + "\n").unwrap();
    let no_scheme = base.trim_start_matches("http://").to_owned();
    for (args, says) in [
        (
            vec!["--base-url", &base, "--concurrency", "0"],
            "'--concurrency <CONCURRENCY>': 0 is too small",
        ),
        (
            vec!["--base-url", &base, "--timeout-s", "0"],
            "'--timeout-s <TIMEOUT_S>': 0 is too small",
        ),
        (vec!["--base-url", &no_scheme], "has no scheme"),
    ] {
        let o = run_dir(dir.path(), &args).await;
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(says), "{args:?}: {}", text(&o));
    }
    assert_eq!(mock.request_count(), 0);
    assert!(!dir.path().join("requests-00001.output.jsonl").exists());
}

/// Requests of `dir`: file 1 all asking "a*", file 2 asking "a1" and "b1".
fn two_files(dir: &Path) {
    let file = |ids: &[&str]| ids.iter().map(|i| good(i) + "\n").collect::<String>();
    std::fs::write(dir.join("requests-00001.jsonl"), file(&["a0", "a1", "a2"])).unwrap();
    std::fs::write(dir.join("requests-00002.jsonl"), file(&["a3", "b1"])).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn run_dir_fails_naming_the_endpoint_when_requests_got_no_answer() {
    // Dead endpoint: nothing listens on port 9.
    let dir = tempfile::tempdir().unwrap();
    two_files(dir.path());
    let dead = "http://127.0.0.1:9/v1";
    let o = run_dir(dir.path(), &["--base-url", dead, "--max-retries", "0"]).await;
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let said = text(&o);
    assert!(
        said.contains(&format!("5 of 5 requests got no answer from {dead}")),
        "{said}"
    );
    assert!(
        !dir.path().join("requests-00001.output.jsonl").exists(),
        "{said}"
    );
    assert!(
        !dir.path().join("requests-00002.output.jsonl").exists(),
        "{said}"
    );

    // An endpoint answering "a*" and always busy for "b*": the file with an answer is written,
    // its unanswered line carrying the server's status; the run still fails.
    let mock = MockServer::start(responder(|r| {
        if all_text(r).contains("b1") {
            Reply::Status {
                code: 503,
                retry_after: None,
                body: r#"{"error":{"message":"busy"}}"#.into(),
            }
        } else {
            Reply::content("fine")
        }
    }))
    .await;
    let base = mock.base_url();
    let o = run_dir(dir.path(), &["--base-url", &base, "--max-retries", "1"]).await;
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("1 of 5 requests got no answer from {base}")),
        "{}",
        text(&o)
    );
    let lines = read_jsonl(&dir.path().join("requests-00002.output.jsonl"));
    assert_eq!(lines[0]["response"]["status_code"], 200);
    assert_eq!(lines[1]["custom_id"], "b1");
    assert_eq!(lines[1]["response"]["status_code"], 503);
    assert!(dir.path().join("requests-00001.output.jsonl").exists());
    // Nothing waits any more: a run that answers nothing succeeds.
    let o = run_dir(dir.path(), &["--base-url", &base]).await;
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("nothing to answer"), "{}", text(&o));
}

/// Three files of four requests each in `dir` (`f1-0` ... `f3-3`).
fn three_files(dir: &Path) {
    for f in 1..=3 {
        let text: String = (0..4).map(|i| good(&format!("f{f}-{i}")) + "\n").collect();
        std::fs::write(dir.join(format!("requests-0000{f}.jsonl")), text).unwrap();
    }
}

/// `run-dir` over [`three_files`] against a mock answering in 300 ms, two at a time, sent
/// `signal` once the second file's first requests are in flight (`ignored`: started with
/// SIGINT ignored, as a background job of a script is): it exits `code` saying what it did
/// and what is left, keeps the first file's output, writes the second whole (its requests in
/// flight answered, the others with an unanswered line), begins no third; a second run answers
/// the third file only, and no request reached the server twice.
async fn run_dir_stopped_by(signal: &str, code: i32, ignored: bool) {
    let mock = MockServer::start(model()).await;
    mock.set_latency(std::time::Duration::from_millis(300));
    let dir = tempfile::tempdir().unwrap();
    three_files(dir.path());
    let base = mock.base_url();
    let bin = env!("CARGO_BIN_EXE_conflictbench");
    let mut cmd = if ignored {
        let mut c = tokio::process::Command::new("sh");
        c.args(["-c", "trap '' INT; exec \"$0\" \"$@\"", bin]);
        c
    } else {
        tokio::process::Command::new(bin)
    };
    cmd.args(["batches", "run-dir"])
        .arg(dir.path())
        .args(["--base-url", &base, "--concurrency", "2"])
        .env_remove("OPENAI_API_KEY")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let child = cmd.spawn().unwrap();
    let pid = child.id().unwrap();
    let t0 = std::time::Instant::now();
    while mock.request_count() < 5 {
        assert!(t0.elapsed().as_secs() < 60, "no requests came");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let sent = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let o = tokio::time::timeout(std::time::Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("run-dir did not stop")
        .unwrap();
    let said = text(&o);
    assert_eq!(o.status.code(), Some(code), "{said}");
    assert!(said.contains(&format!("stopped by SIG{signal}")), "{said}");
    let third = dir.path().join("requests-00003.jsonl");
    assert!(said.contains(&third.display().to_string()), "{said}");
    let output = |f: usize| dir.path().join(format!("requests-0000{f}.output.jsonl"));
    let first = read_jsonl(&output(1));
    assert!(
        first.iter().all(|l| l["response"]["status_code"] == 200),
        "{first:?}"
    );
    // The file in progress: every request has its line, those in flight answered.
    let second = read_jsonl(&output(2));
    let ids: Vec<&str> = second
        .iter()
        .map(|l| l["custom_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["f2-0", "f2-1", "f2-2", "f2-3"], "{said}");
    let answered = second
        .iter()
        .filter(|l| l["response"]["status_code"] == 200)
        .count();
    assert!(
        (1..4).contains(&answered),
        "{answered} answered: {second:?}"
    );
    assert_eq!(mock.request_count(), 4 + answered, "{said}");
    assert!(!output(3).exists(), "a file begun after the stop");
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 5, "a part or lock file left: {names:?}");

    let o = run_dir(dir.path(), &["--base-url", &base]).await;
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(read_jsonl(&output(3)).len(), 4);
    let mut bodies: Vec<String> = mock.journal().iter().map(|e| e.body.to_string()).collect();
    let sent = bodies.len();
    bodies.sort();
    bodies.dedup();
    assert_eq!(bodies.len(), sent, "a request reached the server twice");
    assert_eq!(sent, 8 + answered);
}

#[tokio::test(flavor = "multi_thread")]
async fn run_dir_stopped_by_sigint_finishes_the_file_in_progress_and_says_what_is_left() {
    run_dir_stopped_by("INT", 130, false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn run_dir_started_with_sigint_ignored_still_stops_on_it() {
    run_dir_stopped_by("INT", 130, true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn run_dir_stopped_by_sigterm_exits_143() {
    run_dir_stopped_by("TERM", 143, false).await;
}

/// `run-dir` stopped while a request waits to be retried (the server asked for a minute)
/// stops at once, sends it no more, and leaves the file, none of whose requests got an
/// answer, as it was, naming it.
#[tokio::test(flavor = "multi_thread")]
async fn run_dir_stopped_while_a_request_waits_to_be_retried_sends_it_no_more() {
    let mock = MockServer::start(responder(|_| Reply::Status {
        code: 503,
        retry_after: Some("60".into()),
        body: r#"{"error":{"message":"busy"}}"#.into(),
    }))
    .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("requests-00001.jsonl"), good("a") + "\n").unwrap();
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .args(["batches", "run-dir"])
        .arg(dir.path())
        .args(["--base-url", &mock.base_url()])
        .env_remove("OPENAI_API_KEY")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    let t0 = std::time::Instant::now();
    while mock.request_count() < 1 {
        assert!(t0.elapsed().as_secs() < 60, "no requests came");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let o = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("run-dir waited out the retry")
        .unwrap();
    let said = text(&o);
    assert_eq!(o.status.code(), Some(130), "{said}");
    assert_eq!(mock.request_count(), 1, "retried after the stop");
    assert!(said.contains("requests-00001.jsonl"), "{said}");
    assert!(!dir.path().join("requests-00001.output.jsonl").exists());
}

/// A second `run-dir` on a folder another one is answering exits 2 naming it, sending
/// nothing; a folder it cannot write to is refused before anything is sent (where the tests
/// run without root's rights to write anywhere).
#[tokio::test(flavor = "multi_thread")]
async fn run_dir_refuses_a_folder_it_cannot_hold_or_write_before_sending() {
    let mock = MockServer::start(model()).await;
    mock.set_latency(std::time::Duration::from_millis(500));
    let dir = tempfile::tempdir().unwrap();
    three_files(dir.path());
    let base = mock.base_url();
    let mut first = tokio::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .args(["batches", "run-dir"])
        .arg(dir.path())
        .args(["--base-url", &base, "--concurrency", "1"])
        .env_remove("OPENAI_API_KEY")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while mock.request_count() < 1 {
        assert!(t0.elapsed().as_secs() < 60, "no requests came");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let o = run_dir(dir.path(), &["--base-url", &base]).await;
    let said = text(&o);
    assert_eq!(o.status.code(), Some(2), "{said}");
    assert!(
        said.contains("in use by another conflictbench command"),
        "{said}"
    );
    assert!(
        said.contains(&format!("process {}", first.id().unwrap())),
        "{said}"
    );
    assert_eq!(
        mock.request_count(),
        1,
        "the second executor sent a request"
    );
    first.kill().await.unwrap();

    let locked = tempfile::tempdir().unwrap();
    three_files(locked.path());
    let mut perms = std::fs::metadata(locked.path()).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o555);
    std::fs::set_permissions(locked.path(), perms).unwrap();
    if std::fs::write(locked.path().join("probe"), "").is_ok() {
        eprintln!("skipped the read-only folder: these tests may write anywhere (root)");
        return;
    }
    let before = mock.request_count();
    let o = run_dir(locked.path(), &["--base-url", &base]).await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains(&locked.path().display().to_string()),
        "{}",
        text(&o)
    );
    assert_eq!(
        mock.request_count(),
        before,
        "a request was sent for a folder it cannot write"
    );
}

/// `python3 scripts/ray-batch.py DIR ARGS`, or `None` where there is no python3 (a failure
/// under `CI=true`).
async fn ray_batch(dir: &Path, args: &[&str]) -> Option<Output> {
    let o = tokio::process::Command::new("python3")
        .arg(repo().join("scripts/ray-batch.py"))
        .arg(dir)
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .env_remove("RAY_ADDRESS")
        .output()
        .await;
    match o {
        Ok(o) => Some(o),
        Err(e) => {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "python3: {e}");
            eprintln!("skipped: no python3 ({e})");
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ray_batch_refuses_malformed_files_and_bad_arguments_before_ray_starts() {
    let dead = "http://127.0.0.1:9/v1";
    for (what, bytes, line, says) in bad_files() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("requests-00002.jsonl");
        std::fs::write(&input, bytes).unwrap();
        let Some(o) = ray_batch(dir.path(), &["--base-url", dead]).await else {
            return;
        };
        assert_eq!(o.status.code(), Some(2), "{what}: {}", text(&o));
        let said = text(&o);
        assert!(said.contains(&place(&input, line)), "{what}: {said}");
        assert!(said.contains(says), "{what}: {said}");
        assert!(!said.contains("Traceback"), "{what}: {said}");
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("requests-00001.jsonl"), good("a") + "\n").unwrap();
    let url = ["--base-url", dead];
    for (args, says) in [
        (vec!["--base-url", "127.0.0.1:9/v1"], "has no scheme"),
        (
            vec!["--base-url", "ftp://127.0.0.1/v1"],
            "scheme must be http",
        ),
        ([&url[..], &["--tasks", "0"]].concat(), "--tasks 0"),
        ([&url[..], &["--timeout", "nan"]].concat(), "--timeout nan"),
        ([&url[..], &["--timeout", "0"]].concat(), "--timeout 0"),
        (
            [&url[..], &["--task-cpus", "inf"]].concat(),
            "--task-cpus inf",
        ),
        (
            vec!["--model-source", "m", "--engine-kwargs", "[1]"],
            "--engine-kwargs [1]: must be a JSON object",
        ),
        (
            vec!["--model-source", "m", "--engine-kwargs", "{"],
            "--engine-kwargs is not JSON",
        ),
    ] {
        let o = ray_batch(dir.path(), &args).await.unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(says), "{args:?}: {}", text(&o));
        assert!(!text(&o).contains("Traceback"), "{args:?}: {}", text(&o));
    }
    assert!(!dir.path().join("requests-00001.output.jsonl").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn ray_batch_without_ray_llm_says_which_package_the_vllm_path_needs() {
    let probe = std::process::Command::new("python3")
        .args(["-c", "import ray.data.llm"])
        .output();
    match probe {
        Ok(o) if !o.status.success() => {}
        Ok(_) => return eprintln!("skipped: ray.data.llm is installed"),
        Err(e) => {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "python3: {e}");
            return eprintln!("skipped: no python3 ({e})");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("requests-00001.jsonl"), good("a") + "\n").unwrap();
    let o = ray_batch(dir.path(), &["--model-source", "some/model"])
        .await
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("pip install 'ray[llm]'"), "{}", text(&o));
    assert!(!dir.path().join("requests-00001.output.jsonl").exists());
}

/// The script's collecting step, fed rows as Ray Data would hand them back (no Ray needed):
/// a file none of whose requests was answered is not written, one with an answer is, and
/// the counts say how many requests the endpoint left unanswered (a refused
/// `response_format` is an answer).
#[tokio::test(flavor = "multi_thread")]
async fn ray_batch_writes_no_file_the_endpoint_left_wholly_unanswered() {
    let dir = tempfile::tempdir().unwrap();
    let script = repo().join("scripts/ray-batch.py");
    let program = format!(
        r#"
import importlib.util, json, os
spec = importlib.util.spec_from_file_location("ray_batch", {script:?})
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
d = {dir:?}
files = [(os.path.join(d, "requests-00001.jsonl"), [("a", "", None), ("b", "", None)]),
         (os.path.join(d, "requests-00002.jsonl"), [("c", "", None), ("d", "", None), ("e", "", None)])]
ok = json.dumps({{"choices": [{{"message": {{"content": "x"}}}}]}})
rows = [
    {{"file": 0, "line": 0, "status": 0, "text": "no answer after 2 attempts"}},
    {{"file": 0, "line": 1, "status": 503, "text": "busy"}},
    {{"file": 1, "line": 0, "status": 200, "text": ok}},
    {{"file": 1, "line": 1, "status": 401, "text": "no key"}},
    {{"file": 1, "line": 2, "status": 500, "text": "response_format is not supported"}},
]
class Results:
    def iter_rows(self):
        return iter(rows)
print(json.dumps(m.collect(Results(), files)))
"#,
        dir = dir.path().to_str().unwrap()
    );
    let o = match std::process::Command::new("python3")
        .args(["-c", &program])
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "python3: {e}");
            return eprintln!("skipped: no python3 ({e})");
        }
    };
    assert!(o.status.success(), "{}", text(&o));
    let counts: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(counts, json!([[2, 2], [2, 1]]), "{}", text(&o));
    assert!(!dir.path().join("requests-00001.output.jsonl").exists());
    let lines = read_jsonl(&dir.path().join("requests-00002.output.jsonl"));
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[1]["response"]["status_code"], 401);
    assert_eq!(lines[2]["response"]["status_code"], 500);
}
