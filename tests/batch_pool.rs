//! `--batch` and endpoint pools end to end, the binary against the mock: a batch build makes no
//! online call and writes the same files as an online build given the same answers; a build
//! killed while its batch runs resumes it without submitting anything twice; per-request
//! batch errors become retries or rejects; cancel, cost and budget; a pool spreads the calls,
//! records the replica, and gets past a dead endpoint; a member refusing the credentials is
//! dropped from the pool, and only a pool with every member refused stops the build.

mod common;

use cb_mock::{responder, BatchSettings, MockServer, Reply};
use common::*;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::time::Duration;

/// `build kre --domains cose,ecare` of the bundled samples against `base`.
fn kre_args<'a>(base: &'a str, out: &'a str, raw: &'a str) -> Vec<&'a str> {
    let mut a = model_args("kre", "cose,ecare", base, raw, out);
    a.extend(["--backoff-ms", "10"]);
    a
}

/// [`kre_args`] with the recipes' reader check read by the build's own model.
fn kre_reading_args<'a>(base: &'a str, out: &'a str, raw: &'a str) -> Vec<&'a str> {
    let mut a = reading_args("kre", "cose,ecare", base, raw, out);
    a.extend(["--backoff-ms", "10"]);
    a
}

fn bundled() -> String {
    repo().join("raw").to_str().unwrap().to_owned()
}

/// Waits (at most a minute) until `mock` has been sent a batch.
async fn wait_for_batch(mock: &MockServer) {
    let t0 = std::time::Instant::now();
    while mock.batch_count() == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no batch was submitted"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn unique_custom_ids(mock: &MockServer) -> usize {
    let subs = mock.batch_submissions();
    let ids: HashSet<&str> = subs.iter().map(|s| s.custom_id.as_str()).collect();
    assert_eq!(ids.len(), subs.len(), "a request was submitted twice");
    ids.len()
}

fn last_run(dir: &Path) -> serde_json::Value {
    read_jsonl(&dir.join("runs.jsonl")).pop().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn batch_build_makes_no_online_call_and_writes_what_an_online_build_writes() {
    // With the reader check: its questions go through the batches too, a round after the
    // writer's.
    let mock = MockServer::start(model()).await;
    let base = mock.base_url();
    let raw = bundled();
    let (online, batch) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let kre_args = kre_reading_args;
    let o = build(&kre_args(&base, online.path().to_str().unwrap(), &raw), &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    let online_calls = mock.request_count();
    assert!(online_calls > 10);

    let mut args = kre_args(&base, batch.path().to_str().unwrap(), &raw);
    args.extend(["--batch", "--batch-poll-ms", "20"]);
    let o = build(&args, &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        mock.request_count(),
        online_calls,
        "the batch build made online calls"
    );
    assert_eq!(unique_custom_ids(&mock), online_calls);
    // Each input line carries the exact online body.
    let online_bodies: HashSet<String> =
        mock.journal().iter().map(|e| e.body.to_string()).collect();
    for s in mock.batch_submissions() {
        assert!(online_bodies.contains(&s.body.to_string()), "{}", s.body);
    }
    for domain in ["cose", "ecare"] {
        let (a, b) = (
            online.path().join("kre").join(domain),
            batch.path().join("kre").join(domain),
        );
        assert_eq!(snapshot(&a), snapshot(&b), "{domain}: files differ");
        let rows = read_jsonl(&b.join(format!("{domain}.jsonl")));
        assert!(!rows.is_empty() && rows.iter().all(|r| r["reader"]["model"] == "m"));
        assert_eq!(last_run(&b)["transport"]["mode"], "batch");
        assert_eq!(last_run(&a)["transport"]["mode"], "online");
    }
    // A second batch build is served by the cache: no batch, no call.
    let before = mock.batch_count();
    let o = build(&args, &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(mock.batch_count(), before);
    assert_eq!(mock.request_count(), online_calls);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_small_batch_window_submits_several_batches_and_writes_the_online_files() {
    // Rounds of at most five items' requests: more batches, each request submitted once,
    // the same files as online (the reader check's questions through the batches too).
    let mock = MockServer::start(model()).await;
    let base = mock.base_url();
    let raw = bundled();
    let (online, batch) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let o = build(
        &kre_reading_args(&base, online.path().to_str().unwrap(), &raw),
        &[],
    )
    .await;
    assert!(o.status.success(), "{}", text(&o));
    let online_calls = mock.request_count();

    let mut args = kre_reading_args(&base, batch.path().to_str().unwrap(), &raw);
    args.extend(["--batch", "--batch-poll-ms", "20", "--batch-window", "5"]);
    let o = build(&args, &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(mock.request_count(), online_calls, "online calls were made");
    assert_eq!(unique_custom_ids(&mock), online_calls);
    let mut per_batch: BTreeMap<String, usize> = BTreeMap::new();
    for s in mock.batch_submissions() {
        *per_batch.entry(s.batch_id).or_default() += 1;
    }
    // Two recipes, each its own rounds of at most five items' calls.
    assert!(per_batch.values().all(|&n| n <= 5), "{per_batch:?}");
    assert!(per_batch.len() * 5 >= online_calls, "{per_batch:?}");
    for domain in ["cose", "ecare"] {
        let (a, b) = (
            online.path().join("kre").join(domain),
            batch.path().join("kre").join(domain),
        );
        assert_eq!(snapshot(&a), snapshot(&b), "{domain}: files differ");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_build_killed_during_its_batch_resumes_it_and_submits_each_request_once() {
    let mock = MockServer::start(model()).await;
    mock.set_batch_settings(BatchSettings {
        completion_delay: Duration::from_secs(2),
        expire_after: None,
        ..BatchSettings::default()
    });
    let out = tempfile::tempdir().unwrap();
    let (base, raw) = (mock.base_url(), bundled());
    let mut args = kre_args(&base, out.path().to_str().unwrap(), &raw);
    args.extend(["--batch", "--batch-poll-ms", "50"]);
    let mut child = spawn_build(&args);
    wait_for_batch(&mock).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    child.kill().await.unwrap(); // SIGKILL
    assert!(!out.path().join("kre/cose/cose.json").exists());
    let submitted = unique_custom_ids(&mock);
    assert!(submitted > 0);

    let o = build(&args, &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    // The rerun found the batch in the cache journal and polled it: nothing submitted twice.
    unique_custom_ids(&mock);
    assert_eq!(mock.request_count(), 0, "online calls were made");
    for domain in ["cose", "ecare"] {
        let dir = out.path().join("kre").join(domain);
        assert_counts_add_up(&dir);
        assert!(
            read_json(&dir.join("manifest.json"))["rows"]
                .as_u64()
                .unwrap()
                > 0
        );
    }
    let list = std::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .args(["batches", "--json", "--cache"])
        .arg(out.path().join("llm-cache.sqlite"))
        .output()
        .unwrap();
    assert!(list.status.success(), "{}", text(&list));
    let rows: Vec<serde_json::Value> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), mock.batch_count());
    assert!(rows
        .iter()
        .all(|r| r["state"] == "completed" && r["collected"] == true));
    let total: u64 = rows.iter().map(|r| r["requests"].as_u64().unwrap()).sum();
    assert_eq!(total as usize, mock.batch_submissions().len());
}

#[tokio::test(flavor = "multi_thread")]
async fn batch_errors_become_retries_in_the_next_round_or_rejects() {
    let raw = tempfile::tempdir().unwrap();
    let names = ["ok", "flaky", "bad", "late1", "late2", "late3"];
    write_cases(raw.path(), &names, "alpha first");
    let mock = MockServer::start(responder(|req| {
        let all = all_text(req);
        match (between(&all, "Case ", ":").unwrap_or(""), req.attempt) {
            ("flaky", 1) => Reply::server_error(500),
            ("bad", _) => Reply::bad_request("unsupported parameter"),
            _ => model_reply(req),
        }
    }))
    .await;
    // Every batch answers only its first 3 lines and expires: the rest go to the next round.
    mock.set_batch_settings(BatchSettings {
        completion_delay: Duration::ZERO,
        expire_after: Some(3),
        ..BatchSettings::default()
    });
    let out = tempfile::tempdir().unwrap();
    let (base, r, o) = (
        mock.base_url(),
        raw.path().to_str().unwrap().to_owned(),
        out.path().to_str().unwrap().to_owned(),
    );
    let mut args = openai_args("cose", &base, &r, &o);
    args.extend(["--batch", "--batch-poll-ms", "10", "--max-retries", "4"]);
    let res = build(&args, &[]).await;
    assert!(res.status.success(), "{}", text(&res));
    assert_eq!(mock.request_count(), 0);
    let dir = out.path().join("kre/cose");
    assert_counts_add_up(&dir);
    let rejects = read_jsonl(&dir.join("rejects.jsonl"));
    assert_eq!(rejects.len(), 1, "{rejects:?}");
    assert_eq!(rejects[0]["reason"], "http_400");
    assert!(rejects[0]["raw_response"]
        .as_str()
        .unwrap()
        .contains("unsupported parameter"));
    let built = read_json(&dir.join("cose.json"));
    assert_eq!(built.as_array().unwrap().len(), names.len() - 1);
    // Expired and failed requests were resubmitted in later batches, answered ones never.
    let subs = mock.batch_submissions();
    let mut per_key: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for s in &subs {
        per_key.entry(&s.custom_id).or_default().push(&s.batch_id);
    }
    assert!(mock.batch_count() >= 2);
    assert!(per_key.values().any(|b| b.len() > 1));
    for b in per_key.values() {
        let distinct: HashSet<_> = b.iter().collect();
        assert_eq!(distinct.len(), b.len());
    }
}

/// A request that fails in every round ends as an online call that fails on every attempt
/// does: retries exhausted, with the last error's reason.
#[tokio::test(flavor = "multi_thread")]
async fn a_batch_request_failing_every_round_is_rejected_as_an_online_one() {
    let raw = tempfile::tempdir().unwrap();
    write_cases(raw.path(), &["ok", "down"], "alpha first");
    let mock = MockServer::start(responder(|req| {
        match between(&all_text(req), "Case ", ":").unwrap_or("") {
            "down" => Reply::server_error(500),
            _ => model_reply(req),
        }
    }))
    .await;
    let mut reasons = Vec::new();
    for batch in [false, true] {
        let out = tempfile::tempdir().unwrap();
        let (base, r, o) = (
            mock.base_url(),
            raw.path().to_str().unwrap().to_owned(),
            out.path().to_str().unwrap().to_owned(),
        );
        let mut args = openai_args("cose", &base, &r, &o);
        args.extend(["--max-retries", "2", "--backoff-ms", "1"]);
        if batch {
            args.extend(["--batch", "--batch-poll-ms", "10"]);
        }
        let res = build(&args, &[]).await;
        assert!(res.status.success(), "{}", text(&res));
        let rejects = read_jsonl(&out.path().join("kre/cose/rejects.jsonl"));
        assert_eq!(rejects.len(), 1, "{rejects:?}");
        reasons.push(rejects[0]["reason"].clone());
    }
    assert_eq!(reasons[0], "retries_exhausted_http_500");
    assert_eq!(
        reasons[1], reasons[0],
        "batch and online give the same reason"
    );
}

/// A batch result that refuses the structured form (llama-cpp-python's HTTP 500 naming
/// `response_format`) steps the form down and asks again in the next round, as an online call
/// does, instead of rejecting the item.
#[tokio::test(flavor = "multi_thread")]
async fn a_batch_refusing_the_structured_form_steps_it_down() {
    use cb_mock::structured::{emulate, StructuredServer};
    let mock = MockServer::start(emulate(
        StructuredServer::LlamaCppPython,
        cb_mock::stand_in::model(),
    ))
    .await;
    let raw = bundled();
    let mut files = Vec::new();
    for batch in [false, true] {
        let out = tempfile::tempdir().unwrap();
        let (base, o) = (mock.base_url(), out.path().to_str().unwrap().to_owned());
        let mut args = model_args("kre", "squad", &base, &raw, &o);
        args.extend(["--backoff-ms", "1"]);
        if batch {
            args.extend(["--batch", "--batch-poll-ms", "10"]);
        }
        let res = build(&args, &[]).await;
        assert!(res.status.success(), "{}", text(&res));
        let dir = out.path().join("kre/squad");
        let rejects = read_jsonl(&dir.join("rejects.jsonl"));
        assert!(
            rejects
                .iter()
                .all(|r| !r["reason"].as_str().unwrap().contains("http_500")),
            "batch {batch}: {rejects:?}"
        );
        files.push(std::fs::read(dir.join("squad.json")).unwrap());
    }
    assert!(
        files[0] == files[1],
        "batch and online builds write the same rows"
    );
}

/// An input file the Batch API refuses as too large (HTTP 413) stops the build with a
/// sentence saying which limit to lower, instead of rejecting every item and exiting 0.
#[tokio::test(flavor = "multi_thread")]
async fn an_input_file_refused_as_too_large_stops_the_build() {
    let mock = MockServer::start(responder(model_reply)).await;
    mock.set_batch_settings(BatchSettings {
        max_file_bytes: Some(512),
        ..BatchSettings::default()
    });
    let out = tempfile::tempdir().unwrap();
    let (base, raw) = (mock.base_url(), bundled());
    let mut args = kre_args(&base, out.path().to_str().unwrap(), &raw);
    args.extend(["--batch", "--batch-poll-ms", "10"]);
    let res = build(&args, &[]).await;
    assert_eq!(res.status.code(), Some(2), "{}", text(&res));
    assert!(text(&res).contains("--batch-max-mb"), "{}", text(&res));
    assert_eq!(mock.batch_count(), 0, "nothing was submitted");
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_cost_and_budget_of_a_batch() {
    let mock = MockServer::start(model()).await;
    let (base, raw) = (mock.base_url(), bundled());
    let price = ["--price-input", "10", "--price-output", "10"];
    // Dry run: the batch price is half the online price.
    let dry_out = tempfile::tempdir().unwrap();
    let dry_out = dry_out.path().to_str().unwrap();
    let dry = |batch: bool| {
        let mut a = model_args("kre", "cose", &base, &raw, dry_out);
        a.push("--dry-run");
        a.extend(price);
        if batch {
            a.push("--batch");
        }
        a
    };
    let dollars = |o: &std::process::Output| -> f64 {
        let t = String::from_utf8_lossy(&o.stdout).into_owned();
        let line = t
            .lines()
            .find(|l| l.starts_with("total:"))
            .unwrap()
            .to_owned();
        between(&line, "~$", " ").unwrap().parse().unwrap()
    };
    let online = build(&dry(false), &[]).await;
    let batch = build(&dry(true), &[]).await;
    assert!(batch.status.success(), "{}", text(&batch));
    assert!(text(&batch).contains("at the batch price"));
    let (a, b) = (dollars(&online), dollars(&batch));
    assert!(a > 0.0 && (b - a / 2.0).abs() < 1e-3, "{a} {b}");

    // A budget below one call is refused before any batch is submitted (exit 2 since the
    // budget checks of #13).
    let out = tempfile::tempdir().unwrap();
    let mut args = kre_args(&base, out.path().to_str().unwrap(), &raw);
    args.extend(["--batch", "--max-cost", "0.0001"]);
    args.extend(price);
    let o = build(&args, &[]).await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("cannot pay for one call"), "{}", text(&o));
    assert_eq!(mock.batch_count(), 0);
    // A budget that pays for two calls but not for a round's file (every item's first call,
    // each counted at its most: prompt plus max_tokens) cuts the file where the budget ends:
    // the calls it pays for are submitted, then the budget stops the build (exit 3) and the
    // rest waits for the next run (a whole round's file over the budget would wait forever).
    let one: f64 = between(&text(&o), "about ", " USD")
        .unwrap()
        .parse()
        .unwrap();
    let two = format!("{:.6}", 2.0 * one);
    let out = tempfile::tempdir().unwrap();
    let mut args = kre_args(&base, out.path().to_str().unwrap(), &raw);
    args.extend(["--batch", "--max-cost", &two]);
    args.extend(price);
    let o = build(&args, &[]).await;
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(text(&o).contains("--max-cost"), "{}", text(&o));
    // `one` is the largest first call at its most; smaller ones fit more, never the round
    // (every item's first call of both recipes).
    let submitted = mock.batch_submissions().len();
    let round = read_jsonl(&repo().join("raw/ecare/dev_full.jsonl")).len();
    assert!(
        submitted >= 1 && submitted < round,
        "{submitted} requests submitted for a budget of two calls"
    );

    // The manifest records the batch price; a cancelled batch ends in rejects (a mock of its
    // own: the first batch it is sent is the one cancelled).
    let mock = MockServer::start(model()).await;
    let base = mock.base_url();
    mock.set_batch_settings(BatchSettings {
        completion_delay: Duration::from_secs(600),
        expire_after: None,
        ..BatchSettings::default()
    });
    let out = tempfile::tempdir().unwrap();
    let mut args = model_args("kre", "cose", &base, &raw, out.path().to_str().unwrap());
    args.extend(["--batch", "--batch-poll-ms", "20", "--max-retries", "0"]);
    args.extend(price);
    let cancel = async {
        wait_for_batch(&mock).await;
        let id = mock.batch_submissions()[0].batch_id.clone();
        let c = tokio::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"))
            .args(["batches", "--cancel", &id, "--base-url", &base, "--cache"])
            .arg(out.path().join("llm-cache.sqlite"))
            .env_remove("OPENAI_BASE_URL")
            .output()
            .await
            .unwrap();
        assert!(c.status.success(), "{}", text(&c));
        assert!(String::from_utf8_lossy(&c.stdout).contains(&id));
    };
    let (o, ()) = tokio::join!(build(&args, &[]), cancel);
    assert!(o.status.success(), "{}", text(&o));
    let dir = out.path().join("kre/cose");
    assert_counts_add_up(&dir);
    let rejects = read_jsonl(&dir.join("rejects.jsonl"));
    assert!(
        rejects.iter().any(|r| r["reason"] == "batch_cancelled"),
        "{rejects:?}"
    );
    let m = read_json(&dir.join("manifest.json"));
    assert_eq!(m["rows"], 0);
    assert_eq!(m["llm"]["price_per_million"], serde_json::json!([5.0, 5.0]));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pool_spreads_calls_records_the_replica_and_gets_past_a_dead_endpoint() {
    let mocks = [
        MockServer::start(model()).await,
        MockServer::start(model()).await,
    ];
    // A port nothing listens on: every call to it is refused.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/v1,concurrency=2", l.local_addr().unwrap())
    };
    let raw = tempfile::tempdir().unwrap();
    many_questions(raw.path(), 60);
    let out = tempfile::tempdir().unwrap();
    let (a, b) = (
        mocks[0].base_url(),
        format!("{},concurrency=2", mocks[1].base_url()),
    );
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let mut args = pool_args("cose", r, o, &[&a, &b, &dead]);
    args.extend(["--pool-cooldown-ms", "60000", "--backoff-ms", "10"]);
    let res = build(&args, &[]).await;
    assert!(res.status.success(), "{}", text(&res));
    let dir = out.path().join("kre/cose");
    assert_counts_add_up(&dir);
    let m = read_json(&dir.join("manifest.json"));
    assert_eq!(m["rows"], 60, "{m}");
    assert_eq!(m["endpoint"], "pool:default");
    let answered: u64 = mocks.iter().map(MockServer::answered).sum();
    assert_eq!(answered, 60, "each call paid for once");
    assert!(mocks.iter().all(|m| m.answered() > 0));
    let run = last_run(&dir);
    let eps = run["transport"]["endpoints"].as_array().unwrap();
    assert_eq!(eps.len(), 3);
    assert_eq!(eps[0]["answers"].as_u64().unwrap(), mocks[0].answered());
    assert_eq!(eps[1]["answers"].as_u64().unwrap(), mocks[1].answered());
    assert_eq!(eps[2]["answers"], 0);
    // The cache records which replica gave each answer.
    let cache = cb_llm::Cache::open(&out.path().join("llm-cache.sqlite")).unwrap();
    let row = &read_jsonl(&dir.join("cose.jsonl"))[0];
    let key = row["lineage"][0]["cache_key"].as_str().unwrap();
    let replica = cache.replica(key).unwrap().expect("a replica");
    assert!(
        [mocks[0].base_url(), mocks[1].base_url()].contains(&replica),
        "{replica}"
    );
    // The breaker paused the dead endpoint after 3 failures (plus the one other call already
    // in flight there) and the long cooldown kept it out.
    assert_eq!(eps[2]["paused"], 1, "{eps:?}");
    let failures = eps[2]["failures"].as_u64().unwrap();
    assert!((3..=4).contains(&failures), "{eps:?}");
    // A second build hits the cache under the pool's identity, whatever the replicas: the
    // first endpoint alone.
    let res = build(&pool_args("cose", r, o, &[&a]), &[]).await;
    assert!(res.status.success(), "{}", text(&res));
    assert_eq!(mocks.iter().map(MockServer::answered).sum::<u64>(), 60);
}

/// A pool of `bases` building 20 questions into `out`, with the key the mocks reject.
async fn pool_build(bases: &[String], raw: &Path, out: &Path) -> std::process::Output {
    let (r, o) = (raw.to_str().unwrap(), out.to_str().unwrap());
    let bases: Vec<&str> = bases.iter().map(String::as_str).collect();
    let mut args = pool_args("cose", r, o, &bases);
    args.extend(["--backoff-ms", "10"]);
    build(&args, &[("OPENAI_API_KEY", "sk-test-secret-key")]).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pool_member_refusing_the_credentials_is_dropped_and_only_a_dead_pool_stops() {
    let refusing = || {
        responder(|_| Reply::Status {
            code: 401,
            retry_after: None,
            body: cb_mock::error_body("Incorrect API key provided", "invalid_request_error", None),
        })
    };
    let good = MockServer::start(model()).await;
    let bad = MockServer::start(refusing()).await;
    let raw = tempfile::tempdir().unwrap();
    many_questions(raw.path(), 20);
    let out = tempfile::tempdir().unwrap();
    let bases = [good.base_url(), format!("{},concurrency=2", bad.base_url())];
    let res = pool_build(&bases, raw.path(), out.path()).await;
    assert!(res.status.success(), "{}", text(&res));
    let dir = out.path().join("kre/cose");
    assert_eq!(read_json(&dir.join("manifest.json"))["rows"], 20);
    assert_eq!(good.answered(), 20);
    let run = last_run(&dir);
    let eps = &run["transport"]["endpoints"];
    assert_eq!(eps[1]["dead"], true, "{eps}");
    assert_eq!(eps[0]["dead"], false, "{eps}");
    // Dead after its first refusal (calls already in flight there end the same way).
    let refused = bad.request_count() as u64;
    assert!(
        (1..=4).contains(&refused),
        "{refused} calls to the refusing member"
    );

    // Every member refusing: the build stops with one sentence, like a single endpoint.
    let bad2 = MockServer::start(refusing()).await;
    let out = tempfile::tempdir().unwrap();
    let res = pool_build(&[bad.base_url(), bad2.base_url()], raw.path(), out.path()).await;
    let said = text(&res);
    assert_eq!(res.status.code(), Some(1), "{said}");
    assert!(
        said.contains("every endpoint of pool:default is unusable"),
        "{said}"
    );
    assert!(said.contains("credentials"), "{said}");
    assert!(!said.contains("sk-test-secret-key"), "{said}");
    assert!(!out.path().join("kre/cose/cose.json").exists());
}
