//! `--batch` at scale and the endpoint pool, against in-process mock servers.
//!
//! `cargo bench -p cb-llm --bench batch_pool` prints
//! 1. the time and peak memory (VmHWM, mock included: it holds every file in memory) to
//!    prepare, upload, run, download and commit `BATCH_N` (default 100,000) requests;
//! 2. the calls/s of a pool of 4 mock endpoints at 50 ms latency over `POOL_N` (default
//!    10,000) calls, against the nominal ideal (the sum of concurrency / 50 ms) and against the
//!    capacity calibrated on the same mocks with one call in flight per endpoint (what a call
//!    really takes there: HTTP, and tokio's timer rounding the 50 ms sleep up);
//! 3. the same build with one endpoint shut down a third of the way through: every call
//!    answered, each paid once (answers counted by the mocks), none lost (cache rows).
#![allow(clippy::print_stdout)]

use cb_llm::{
    BackendKind, BatchOptions, Call, ChatRequest, EndpointSpec, Llm, LlmConfig, Message, PoolConfig,
};
use cb_mock::{fixed, MockServer};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn call(i: usize, tag: &str) -> Call {
    Call {
        request: ChatRequest {
            messages: vec![
                Message::system("You answer briefly, in one sentence, and never more."),
                Message::user(format!(
                    "{tag} question {i}: why does the kettle whistle when the water boils?"
                )),
            ],
            temperature: 0.0,
            top_p: None,
            max_tokens: 64,
            seed: Some(7),
            response_schema: None,
            top_logprobs: None,
        },
        template: "bench".into(),
        template_hash: "0".into(),
        item: i.to_string(),
        offline: String::new(),
    }
}

fn env_n(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

async fn run_all(llm: &Llm, n: usize, tag: &str, in_flight: usize) -> (Duration, usize) {
    let sem = Arc::new(tokio::sync::Semaphore::new(in_flight));
    let t0 = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for i in 0..n {
        let (llm, sem, c) = (llm.clone(), Arc::clone(&sem), call(i, tag));
        set.spawn(async move {
            let _p = sem.acquire_owned().await.unwrap();
            llm.complete(&c).await.is_ok()
        });
    }
    let mut ok = 0;
    while let Some(r) = set.join_next().await {
        ok += usize::from(r.unwrap());
    }
    (t0.elapsed(), ok)
}

fn base(cache: &std::path::Path) -> LlmConfig {
    let mut c = LlmConfig::offline();
    c.backend = BackendKind::Openai;
    c.model = "bench-model".into();
    c.cache_path = Some(cache.to_path_buf());
    c.max_retries = 5;
    c.backoff_base = Duration::from_millis(20);
    c
}

async fn batch_bench(dir: &std::path::Path) {
    let n = env_n("BATCH_N", 100_000);
    let mock =
        MockServer::start(fixed("Because the steam escapes through a narrow opening.")).await;
    let mut c = base(&dir.join("batch.sqlite"));
    c.base_url = mock.base_url();
    c.transport = cb_llm::Transport::BatchApi(BatchOptions {
        poll_initial: Duration::from_millis(50),
        quiet: Duration::from_millis(200),
        ..BatchOptions::default()
    });
    let llm = Llm::new(c.clone()).unwrap();
    let rss0 = peak_rss_mb();
    let (t, ok) = run_all(&llm, n, "batch", n).await;
    let cache = cb_llm::Cache::open(&dir.join("batch.sqlite")).unwrap();
    let batches = cache.batches().unwrap();
    println!(
        "batch: {n} requests in {} files, {ok} answered, {} cached, {:.2} s ({:.0} requests/s), peak RSS {:.0} MB (before: {:.0} MB), online calls {}",
        batches.len(),
        cache.len().unwrap(),
        t.as_secs_f64(),
        n as f64 / t.as_secs_f64(),
        peak_rss_mb(),
        rss0,
        mock.request_count()
    );
    assert_eq!(ok, n);
    let db = std::fs::metadata(dir.join("batch.sqlite")).map_or(0, |m| m.len());
    println!("batch: cache file {:.0} MB", db as f64 / 1e6);
}

fn pool_config(mocks: &[MockServer], concurrency: usize, cache: &std::path::Path) -> LlmConfig {
    let mut c = base(cache);
    c.transport = cb_llm::Transport::Pool(PoolConfig {
        name: "bench".into(),
        endpoints: mocks
            .iter()
            .map(|m| EndpointSpec {
                base_url: m.base_url(),
                concurrency,
                rpm: None,
                tpm: None,
            })
            .collect(),
        open_after: 3,
        cooldown: Duration::from_secs(2),
    });
    c.concurrency = concurrency * mocks.len();
    c
}

async fn pool_bench(dir: &std::path::Path) {
    let n = env_n("POOL_N", 10_000);
    let per = env_n("POOL_CONCURRENCY", 16);
    let latency = Duration::from_millis(50);
    let mut mocks = Vec::new();
    for _ in 0..4 {
        let m = MockServer::start(fixed("Because.")).await;
        m.set_latency(latency);
        mocks.push(m);
    }
    let ideal = (4 * per) as f64 / latency.as_secs_f64();
    // What one call really takes on these mocks, HTTP and the timer's millisecond rounding
    // included: one call in flight per endpoint, so nothing waits on anything else.
    let cal_n = env_n("POOL_CALIBRATE_N", 400);
    let llm = Llm::new(pool_config(&mocks, 1, &dir.join("calibrate.sqlite"))).unwrap();
    let (t, _) = run_all(&llm, cal_n, "calibrate", 2 * 4).await;
    let per_call = 4.0 * t.as_secs_f64() / cal_n as f64;
    let capacity = (4 * per) as f64 / per_call;
    println!(
        "pool: calibration, 1 call in flight per endpoint: {:.2} ms a call for the nominal 50 ms, so 4 x {per} in flight can serve at most {capacity:.0} calls/s",
        per_call * 1e3
    );
    let llm = Llm::new(pool_config(&mocks, per, &dir.join("pool.sqlite"))).unwrap();
    let (t, ok) = run_all(&llm, n, "pool", 2 * 4 * per).await;
    let rate = n as f64 / t.as_secs_f64();
    println!(
        "pool: 4 endpoints x {per} at 50 ms, {n} calls ({ok} ok) in {:.2} s: {rate:.0} calls/s = {:.1}% of the nominal {ideal:.0} (concurrency / 50 ms), {:.1}% of the calibrated {capacity:.0}",
        t.as_secs_f64(),
        100.0 * rate / ideal,
        100.0 * rate / capacity
    );
    println!("pool: per endpoint {}", llm.transport()["endpoints"]);

    // One endpoint shut down a third of the way through.
    let before: Vec<u64> = mocks.iter().map(MockServer::answered).collect();
    let cache_path = dir.join("pool-kill.sqlite");
    let llm = Llm::new(pool_config(&mocks, per, &cache_path)).unwrap();
    let mut victim = mocks.pop().unwrap();
    let kill_after = Duration::from_secs_f64(n as f64 / ideal / 3.0);
    let killer = tokio::spawn(async move {
        tokio::time::sleep(kill_after).await;
        victim.stop().await;
        victim
    });
    let (t, ok) = run_all(&llm, n, "kill", 2 * 4 * per).await;
    mocks.push(killer.await.unwrap());
    let paid: u64 = mocks
        .iter()
        .zip(&before)
        .map(|(m, b)| m.answered() - b)
        .sum();
    let cached = cb_llm::Cache::open(&cache_path).unwrap().len().unwrap();
    let stats = llm.stats();
    println!(
        "pool-kill: endpoint 4 stopped after {:.2} s; {ok}/{n} calls ok in {:.2} s ({:.0} calls/s), {cached} answers cached, {paid} answers sent by the mocks, {} retries",
        kill_after.as_secs_f64(),
        t.as_secs_f64(),
        n as f64 / t.as_secs_f64(),
        stats.retries,
    );
    println!("pool-kill: per endpoint {}", llm.transport()["endpoints"]);
    assert_eq!(ok, n, "a call was lost");
    assert_eq!(cached as usize, n, "an answer was not committed");
    assert_eq!(paid as usize, n, "an answer was paid twice");
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    rt.block_on(async {
        if std::env::var("BENCH_SKIP_BATCH").is_err() {
            batch_bench(dir.path()).await;
        }
        pool_bench(dir.path()).await;
    });
}
