//! An endpoint that cannot serve a build stops it: exit 1, one sentence naming the endpoint
//! and the cause, and nothing already written is replaced. A dry run writes nothing; a
//! replay miss is said once.

mod common;

use cb_mock::{error_body, responder, MockServer, Reply};
use common::*;
use std::collections::BTreeMap;
use std::path::Path;

/// A good model-backed build of 4 questions in `out`; returns its files.
async fn good_build(raw: &str, out: &Path) -> BTreeMap<String, Vec<u8>> {
    let mock = MockServer::start(model()).await;
    let o = build(
        &openai_args("cose", &mock.base_url(), raw, out.to_str().unwrap()),
        &[],
    )
    .await;
    assert!(o.status.success(), "{}", text(&o));
    let files = files_with_runs(out);
    let rows = read_json(&out.join("kre/cose/cose.json"));
    assert_eq!(rows.as_array().unwrap().len(), 4, "{}", text(&o));
    files
}

/// Every file under `out` but the cache, runs.jsonl included.
fn files_with_runs(out: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = snapshot(out);
    let runs = out.join("kre/cose/runs.jsonl");
    files.insert("runs.jsonl".into(), std::fs::read(runs).unwrap());
    files
}

/// Runs a build against `base` over a folder that holds a good build, and checks it fails
/// with exit 1, one `error:` line holding `base` and `cause`, and leaves the folder as it was.
async fn fails_and_keeps_the_good_build(base: &str, cause: &str) {
    let raw = tempfile::tempdir().unwrap();
    many_questions(raw.path(), 4);
    let out = tempfile::tempdir().unwrap();
    let r = raw.path().to_str().unwrap();
    let before = good_build(r, out.path()).await;
    let mut args = openai_args("cose", base, r, out.path().to_str().unwrap());
    args.extend(["--max-retries", "2", "--backoff-ms", "10"]);
    let o = build(&args, &[("OPENAI_API_KEY", "sk-test-secret-key")]).await;
    let said = text(&o);
    assert_eq!(o.status.code(), Some(1), "{said}");
    let errors: Vec<&str> = said.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{said}");
    let endpoint = base.trim_end_matches('/');
    assert!(
        errors[0].contains(endpoint) && errors[0].contains(cause),
        "{said}"
    );
    assert!(!said.contains("sk-test-secret-key"), "{said}");
    // The data files, card and manifest are as they were; the run log only gained the
    // stopped run's line (what it sent and spent), appended after the good build's lines.
    let mut after = files_with_runs(out.path());
    let mut before = before;
    let (runs_before, runs_after) = (
        before.remove("runs.jsonl").unwrap(),
        after.remove("runs.jsonl").unwrap(),
    );
    assert_eq!(after, before, "the good build was touched");
    let added = String::from_utf8(runs_after[runs_before.len()..].to_vec()).unwrap();
    assert!(runs_after.starts_with(&runs_before), "{added}");
    assert_eq!(added.lines().count(), 1, "{added}");
    assert!(added.contains("\"stopped\""), "{added}");
    assert!(!added.contains("sk-test-secret-key"), "{added}");
}

#[tokio::test(flavor = "multi_thread")]
async fn nothing_listening_stops_the_build_and_keeps_the_previous_one() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let base = format!("http://127.0.0.1:{port}/v1");
    fails_and_keeps_the_good_build(&base, "cannot be reached").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn refused_credentials_stop_the_build_at_once() {
    for code in [401, 403] {
        let mock = MockServer::start(responder(move |_| Reply::Status {
            code,
            retry_after: None,
            body: error_body(
                "Incorrect API key provided: sk-test-secret-key",
                "invalid_request_error",
                Some("invalid_api_key"),
            ),
        }))
        .await;
        fails_and_keeps_the_good_build(&mock.base_url(), "refused the credentials").await;
        let journal = mock.journal();
        assert!(
            journal.iter().all(|j| j.attempt == 1),
            "an auth failure is never retried"
        );
        assert!(journal.len() <= 4, "{} requests", journal.len());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_model_stops_the_build_at_once() {
    let mock = MockServer::start(responder(|_| Reply::Status {
        code: 404,
        retry_after: None,
        body: error_body(
            "The model `m` does not exist or you do not have access to it.",
            "invalid_request_error",
            Some("model_not_found"),
        ),
    }))
    .await;
    fails_and_keeps_the_good_build(&mock.base_url(), "HTTP 404 for model m").await;
    assert!(mock.journal().iter().all(|j| j.attempt == 1));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_endpoint_that_never_answers_writes_nothing() {
    // Every call fails in transport after its retries: no answer at all, so the recipe fails
    // as a whole (the partial-failure rule) instead of writing an empty build.
    let mock = MockServer::start(responder(|_| Reply::server_error(503))).await;
    fails_and_keeps_the_good_build(&mock.base_url(), "gave no answer").await;
    assert!(mock.journal().iter().all(|j| j.attempt <= 3));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dry_run_writes_nothing() {
    let mock = MockServer::start(model()).await;
    let raw = tempfile::tempdir().unwrap();
    many_questions(raw.path(), 3);
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("generated");
    let base = mock.base_url();
    let mut args = openai_args(
        "cose",
        &base,
        raw.path().to_str().unwrap(),
        target.to_str().unwrap(),
    );
    args.push("--dry-run");
    let o = build(&args, &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("3 to make"), "{}", text(&o));
    assert!(!target.exists(), "a dry run created {}", target.display());
    assert_eq!(mock.request_count(), 0);

    // With a cache from a real build, the dry run counts its hits and changes no file.
    let args_real = openai_args(
        "cose",
        &base,
        raw.path().to_str().unwrap(),
        target.to_str().unwrap(),
    );
    assert!(build(&args_real, &[]).await.status.success());
    // Names and content hashes of the top of the output folder (the cache file included).
    let listing = |d: &Path| {
        let mut v: Vec<(String, u64)> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| {
                let p = e.unwrap().path();
                let mut h = std::hash::DefaultHasher::new();
                if p.is_file() {
                    std::hash::Hash::hash(&std::fs::read(&p).unwrap(), &mut h);
                }
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::hash::Hasher::finish(&h))
            })
            .collect();
        v.sort();
        v
    };
    let before = listing(&target);
    let o = build(&args, &[]).await;
    assert!(text(&o).contains("3 cached, 0 to make"), "{}", text(&o));
    assert_eq!(
        listing(&target),
        before,
        "the dry run changed the output folder"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replay_miss_is_said_once() {
    let raw = tempfile::tempdir().unwrap();
    many_questions(raw.path(), 2);
    let out = tempfile::tempdir().unwrap();
    let mut args = openai_args(
        "cose",
        "http://127.0.0.1:9/v1",
        raw.path().to_str().unwrap(),
        out.path().to_str().unwrap(),
    );
    let backend = args.iter().position(|a| *a == "openai").unwrap();
    args[backend] = "replay";
    let o = build(&args, &[]).await;
    let said = text(&o);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert_eq!(
        said.matches("replay: no cached answer").count(),
        1,
        "{said}"
    );
}
