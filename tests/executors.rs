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
            "--concurrency 0",
        ),
        (
            vec!["--base-url", &base, "--timeout-s", "0"],
            "--timeout-s 0",
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
