//! Throughput of the LLM layer against the in-process mock server.
//!
//! `cargo bench -p cb-llm --bench llm_throughput` prints, for 0 ms and 50 ms of mock latency
//! and 64 and 256 calls in flight, the calls per second through the whole layer (cache
//! lookup, limiter, HTTP via async-openai, cache commit) and, where latency is not zero, the
//! ratio to the ideal concurrency / latency; then the time of a warm re-run of 20,000 cached
//! calls. Set `BENCH_QUICK=1` for a shorter run.
#![allow(clippy::print_stdout)]

use cb_llm::{BackendKind, Call, ChatRequest, Llm, LlmConfig, Message};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn call(i: usize, tag: &str) -> Call {
    Call {
        request: ChatRequest {
            messages: vec![
                Message::system("You answer briefly."),
                Message::user(format!("{tag} question {i}: why?")),
            ],
            temperature: 0.0,
            top_p: None,
            max_tokens: 32,
            seed: None,
            response_schema: None,
            top_logprobs: None,
        },
        template: "bench".into(),
        template_hash: "0".into(),
        item: i.to_string(),
        offline: String::new(),
    }
}

fn config(base: &str, cache: &std::path::Path, concurrency: usize) -> LlmConfig {
    let mut c = LlmConfig::offline();
    c.backend = BackendKind::Openai;
    c.base_url = base.into();
    c.model = "bench-model".into();
    c.cache_path = Some(cache.to_path_buf());
    c.concurrency = concurrency;
    c
}

async fn run(llm: &Llm, n: usize, tag: &str, in_flight: usize) -> Duration {
    let llm = Arc::new(llm.clone());
    let sem = Arc::new(tokio::sync::Semaphore::new(in_flight));
    let t0 = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for i in 0..n {
        let (llm, sem, c) = (Arc::clone(&llm), Arc::clone(&sem), call(i, tag));
        set.spawn(async move {
            let _p = sem.acquire_owned().await.unwrap();
            llm.complete(&c).await.expect("call succeeds")
        });
    }
    while let Some(r) = set.join_next().await {
        r.unwrap();
    }
    t0.elapsed()
}

fn main() {
    let quick = std::env::var("BENCH_QUICK").is_ok();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mock = cb_mock::MockServer::start(cb_mock::responder(|_| cb_mock::Reply::Content("Because.".into()))).await;
        let dir = tempfile::tempdir().unwrap();
        println!("| latency | concurrency | calls | seconds | calls/s | ideal calls/s | ratio |");
        println!("|---:|---:|---:|---:|---:|---:|---:|");
        for latency_ms in [0u64, 50] {
            mock.set_latency(Duration::from_millis(latency_ms));
            for conc in [64usize, 256] {
                let n = match (quick, latency_ms) {
                    (true, _) => 1000,
                    (false, 0) => 10_000,
                    (false, _) => conc * 20,
                };
                let cache = dir.path().join(format!("t-{latency_ms}-{conc}.sqlite"));
                let llm = Llm::new(config(&mock.base_url(), &cache, conc)).unwrap();
                let tag = format!("l{latency_ms}c{conc}");
                let t = run(&llm, n, &tag, conc).await;
                let rate = n as f64 / t.as_secs_f64();
                let (ideal, ratio) = if latency_ms == 0 {
                    ("-".to_string(), "-".to_string())
                } else {
                    let ideal = conc as f64 * 1000.0 / latency_ms as f64;
                    (format!("{ideal:.0}"), format!("{:.2}", rate / ideal))
                };
                println!("| {latency_ms} ms | {conc} | {n} | {:.2} | {rate:.0} | {ideal} | {ratio} |", t.as_secs_f64());
            }
        }
        mock.set_latency(Duration::ZERO);
        let n = if quick { 2000 } else { 20_000 };
        let cache = dir.path().join("warm.sqlite");
        let llm = Llm::new(config(&mock.base_url(), &cache, 256)).unwrap();
        let cold = run(&llm, n, "warm", 256).await;
        let before = mock.request_count();
        let llm = Llm::new(config(&mock.base_url(), &cache, 256)).unwrap();
        let warm = run(&llm, n, "warm", 256).await;
        assert_eq!(mock.request_count(), before, "the warm run called upstream");
        assert_eq!(llm.stats().cache_hits, n as u64);
        println!();
        println!(
            "warm re-run of {n} cached calls: {:.3} s ({:.0} calls/s); the cold run that filled the cache took {:.2} s",
            warm.as_secs_f64(),
            n as f64 / warm.as_secs_f64(),
            cold.as_secs_f64()
        );
    });
}
