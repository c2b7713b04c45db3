//! Opt-in: a `--batch-dir` build answered by Ray Data (`scripts/ray-batch.py`, its HTTP path:
//! Ray Data's `map_batches` on a local CPU-only Ray). Runs when `CB_RAY_PYTHON` names a Python
//! with `ray[data]` and `aiohttp` installed, and says why it is skipped otherwise (CI has no Ray):
//!
//! ```text
//! python3 -m venv /tmp/ray-venv && /tmp/ray-venv/bin/pip install "ray[data]" aiohttp
//! CB_RAY_PYTHON=/tmp/ray-venv/bin/python cargo test -p conflictbench --test ray_batch -- --nocapture
//! ```
//!
//! Against the in-process mock, the two-round KRE SQuAD build through Ray-answered files ends
//! with the online build's files byte for byte, each request asked once (and again after a
//! transient failure: 429, 503, a cut connection, a 200 that is not JSON); the output lines are
//! run_batch's, in input order; `--model` leaves another model's files alone; a malformed input
//! file is refused naming its line. With `CB_RAY_BASE_URL` and `CB_RAY_MODEL` also set (e.g. the
//! SmolLM2 server of `scripts/local-model.sh`), the same loop runs once against that server, with
//! the model's own reader check, and prints its figures (BENCHMARKS.md).

#![allow(clippy::print_stderr)] // a skipped test and the real run's figures say so
#[path = "common/batch_dir.rs"]
mod batch_dir;
mod common;

use batch_dir::*;
use cb_mock::Reply;
use common::*;
use std::cell::Cell;
use std::collections::HashSet;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

/// The Python that runs the script, or `None` (skip, said on stderr) when `CB_RAY_PYTHON` is
/// not set. Set but unusable is a failure: the run was asked for.
fn ray_python(test: &str) -> Option<String> {
    let Ok(python) = std::env::var("CB_RAY_PYTHON") else {
        eprintln!(
            "{test}: skipped: CB_RAY_PYTHON is not set (a Python with ray[data] and aiohttp)"
        );
        return None;
    };
    let o = std::process::Command::new(&python)
        .args([
            "-c",
            "import ray, ray.data, aiohttp; print(ray.__version__)",
        ])
        .output()
        .unwrap_or_else(|e| panic!("CB_RAY_PYTHON={python}: {e}"));
    assert!(
        o.status.success(),
        "CB_RAY_PYTHON={python} cannot import ray.data and aiohttp:\n{}",
        text(&o)
    );
    eprintln!("{test}: Ray {}", String::from_utf8_lossy(&o.stdout).trim());
    Some(python)
}

/// `scripts/ray-batch.py DIR ARGS` (a local Ray of 2 CPUs unless ARGS say otherwise).
async fn ray_batch(python: &str, dir: &Path, args: &[&str]) -> Output {
    let o = tokio::process::Command::new(python)
        .arg(repo().join("scripts/ray-batch.py"))
        .arg(dir)
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .env_remove("RAY_ADDRESS")
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(Duration::from_secs(1200), o)
        .await
        .expect("ray-batch.py still running after 20 minutes")
        .unwrap()
}

/// The output files of `dir`.
fn outputs(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".output.jsonl"))
        .collect();
    names.sort();
    names
}

/// Answers `dir` through the HTTP path against `base`; first asks for another model's files
/// only, which must leave the folder as it is.
async fn answer_with_ray(python: &str, dir: &Path, base: &str) {
    let before = outputs(dir);
    let o = ray_batch(python, dir, &["--base-url", base, "--model", "not-m"]).await;
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("left for another run"), "{}", text(&o));
    assert_eq!(
        outputs(dir),
        before,
        "--model answered another model's file"
    );
    let args = ["--base-url", base, "--num-cpus", "2", "--concurrency", "4"];
    let o = ray_batch(python, dir, &args).await;
    assert!(o.status.success(), "ray-batch.py failed:\n{}", text(&o));
    assert!(outputs(dir).len() > before.len(), "{}", text(&o));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_dir_build_answered_by_ray_data_writes_what_an_online_build_writes() {
    let Some(python) = ray_python("ray_batch") else {
        return;
    };
    let s = setup().await;
    let (_o, online_files, online_calls) = online(&s).await;
    let (out, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let before = s.mock.request_count();
    // The first requests the executor sends meet transient failures: each is asked again.
    let faults = [
        Reply::rate_limited("0"),
        Reply::server_error(503),
        Reply::Drop,
        Reply::RawBody("not JSON".into()),
    ];
    let retried = faults.len();
    s.mock.push_faults(faults);
    let started = Instant::now();
    let exits = answer_until_done(
        || build_files(&s, out.path(), dir.path()),
        || answer_with_ray(&python, dir.path(), &s.base),
        8,
    )
    .await;
    eprintln!(
        "loop of {exits:?} in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // One round of files per model step, then the build; its files are the online build's.
    assert_eq!(exits, [WAITING, WAITING, 0]);
    assert_same(&squad_files(out.path()), &online_files);
    // Each request went into one file and was asked once.
    let files = inputs(dir.path());
    assert_eq!(files.len(), 2, "{:?}", files.keys());
    let ids: Vec<&String> = files.values().flatten().collect();
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len());
    assert_eq!(ids.len(), online_calls);
    assert_eq!(s.mock.pending_faults(), 0);
    assert_eq!(s.mock.request_count() - before, online_calls + retried);
    // run_batch's lines, in input order, named after their file.
    for (name, ids) in &files {
        let stem = name.trim_end_matches(".jsonl");
        let lines = read_jsonl(&dir.path().join(format!("{stem}.output.jsonl")));
        let got: Vec<&str> = lines
            .iter()
            .map(|l| l["custom_id"].as_str().unwrap())
            .collect();
        assert_eq!(&got, ids, "{name}: answers out of order");
        for (i, l) in lines.iter().enumerate() {
            assert_eq!(l["id"], format!("{stem}-{}", i + 1));
            assert_eq!(l["response"]["status_code"], 200, "{l}");
            assert_eq!(
                l["response"]["request_id"],
                format!("{stem}-{}-request", i + 1)
            );
            assert_eq!(l["response"]["body"]["model"], "m");
            assert!(l["error"].is_null());
        }
    }
    assert!(!dir.path().join("problems.log").exists());
    // Nothing waits any more: the script says so without starting Ray.
    let o = ray_batch(&python, dir.path(), &["--base-url", &s.base]).await;
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("no input file waits"), "{}", text(&o));
}

#[tokio::test(flavor = "multi_thread")]
async fn ray_batch_refuses_a_malformed_input_file_naming_its_line() {
    let Some(python) = ray_python("ray_batch") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let good = serde_json::json!({"custom_id": "k1", "method": "POST",
        "url": "/v1/chat/completions", "body": {"model": "m", "messages": []}});
    let input = dir.path().join("requests-00003.jsonl");
    std::fs::write(
        &input,
        format!("{good}\n{{\"custom_id\":\"k2\",\"body\":\n"),
    )
    .unwrap();
    let o = ray_batch(
        &python,
        dir.path(),
        &["--base-url", "http://127.0.0.1:9/v1"],
    )
    .await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let said = text(&o);
    assert!(
        said.contains(&format!("{}:2: not JSON", input.display())),
        "{said}"
    );
    assert!(outputs(dir.path()).is_empty());
    // A file of another input name is not asked for.
    let o = ray_batch(
        &python,
        dir.path(),
        &[
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--file",
            "requests-9.jsonl",
        ],
    )
    .await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("no input file named requests-9.jsonl"),
        "{}",
        text(&o)
    );
}

/// The figures of a loop against a real server.
fn report(out: &Path, dir: &Path, exits: &[i32], elapsed: (f64, f64)) {
    let files = inputs(dir);
    let requests: usize = files.values().map(Vec::len).sum();
    let manifest = read_json(&out.join("kre/squad/manifest.json"));
    let problems = std::fs::read_to_string(dir.join("problems.log")).unwrap_or_default();
    eprintln!(
        "real server: build runs {} (exits {exits:?}), files {}, requests {requests}, \
         ray-batch.py {:.1} s, builds {:.1} s, rows {}, rejected {}, refused lines {}",
        exits.len(),
        files.len(),
        elapsed.0,
        elapsed.1,
        manifest["rows"],
        manifest["rejected"],
        problems.lines().count()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_loop_against_a_real_server_when_one_is_named() {
    let (Ok(base), Ok(model)) = (
        std::env::var("CB_RAY_BASE_URL"),
        std::env::var("CB_RAY_MODEL"),
    ) else {
        eprintln!("real server: skipped: CB_RAY_BASE_URL and CB_RAY_MODEL are not set");
        return;
    };
    let Some(python) = ray_python("real server") else {
        return;
    };
    let raw = repo().join("raw").display().to_string();
    let (out, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let out_s = out.path().to_str().unwrap();
    let mut online_args = reading_args("kre", "squad", &base, &raw, out_s);
    let at = online_args.iter().position(|a| *a == "--model").unwrap() + 1;
    online_args[at] = model.as_str();
    let mut args = online_args.clone();
    args.extend(["--batch-dir", dir.path().to_str().unwrap()]);
    let (in_ray, in_build) = (Cell::new(0.0), Cell::new(0.0));
    let exits = answer_until_done(
        || {
            let t = Instant::now();
            let run = build(&args, &[]);
            let in_build = &in_build;
            async move {
                let o = run.await;
                in_build.set(in_build.get() + t.elapsed().as_secs_f64());
                o
            }
        },
        || async {
            let t = Instant::now();
            let how = ["--base-url", &base, "--concurrency", "1", "--tasks", "1"];
            let o = ray_batch(&python, dir.path(), &how).await;
            assert!(o.status.success(), "ray-batch.py failed:\n{}", text(&o));
            in_ray.set(in_ray.get() + t.elapsed().as_secs_f64());
        },
        30,
    )
    .await;
    report(
        out.path(),
        dir.path(),
        &exits,
        (in_ray.get(), in_build.get()),
    );
    // The online build with the same cache writes the same files from the cache.
    let again = tempfile::tempdir().unwrap();
    let cache = "llm-cache.sqlite";
    std::fs::copy(out.path().join(cache), again.path().join(cache)).unwrap();
    let again_s = again.path().to_str().unwrap();
    let online: Vec<&str> = online_args
        .iter()
        .map(|a| if *a == out_s { again_s } else { a })
        .collect();
    let o = build(&online, &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    eprintln!(
        "online build from the cache: {}",
        text(&o).lines().last().unwrap_or("")
    );
    let runs = read_jsonl(&again.path().join("kre/squad/runs.jsonl"));
    assert_eq!(
        runs.last().unwrap()["llm"]["upstream_calls"],
        0,
        "{}",
        text(&o)
    );
    assert_same(&squad_files(again.path()), &squad_files(out.path()));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_without_an_answer_fails_the_run_naming_the_endpoint() {
    let Some(python) = ray_python("ray_batch") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let line = serde_json::json!({"custom_id": "k1", "method": "POST",
        "url": "/v1/chat/completions", "body": {"model": "m", "messages": []}});
    std::fs::write(dir.path().join("requests-00001.jsonl"), format!("{line}\n")).unwrap();
    // Nothing listens on port 9 (discard): every attempt is refused. The file got no answer
    // at all, so it is not written (the next run of the script asks it again), and the run
    // fails so that a scheduler does not start the import.
    let dead = "http://127.0.0.1:9/v1";
    let how = ["--base-url", dead, "--max-retries", "1"];
    let o = ray_batch(&python, dir.path(), &how).await;
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("1 of 1 requests got no answer from HTTP {dead}")),
        "{}",
        text(&o)
    );
    assert!(outputs(dir.path()).is_empty(), "{}", text(&o));
}
