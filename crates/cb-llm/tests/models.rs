//! Named models of one run (issue 31): a layer the roster makes for another role reaches its own
//! endpoint, keeps its own counters and shares the run's cache file and budget.

use cb_llm::{BackendKind, Budget, Call, LlmConfig, LlmError, Price, Role, Roster};

mod common;

fn call(i: usize) -> Call {
    common::question(format!("question {i}"), format!("item-{i}"))
}

fn config(base: &str, model: &str, cache: &std::path::Path) -> LlmConfig {
    let mut c = LlmConfig::offline();
    c.backend = BackendKind::Openai;
    c.base_url = base.into();
    c.model = model.into();
    c.cache_path = Some(cache.to_path_buf());
    // $1 per million tokens each way: an answer of 500 + 500 tokens costs $0.001.
    c.price = Price {
        input_per_million: 1.0,
        output_per_million: 1.0,
    };
    c
}

fn mock() -> cb_mock::Responder {
    cb_mock::responder(|_| cb_mock::Reply::ContentWith {
        content: "fine".into(),
        finish_reason: "stop".into(),
        usage: Some((500, 500)),
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn another_role_reaches_its_own_endpoint_counts_apart_and_shares_the_budget() {
    let (cheap, strong) = (
        cb_mock::MockServer::start(mock()).await,
        cb_mock::MockServer::start(mock()).await,
    );
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("c.sqlite");
    let c = config(&cheap.base_url(), "cheap-model", &cache);
    // Three calls' worth: the fourth, on either model, could overrun it.
    let roster = Roster::new(Budget::new(Some(0.0035), None));
    let writer = roster.layer(&Role::Writer, c).unwrap();
    let other = roster
        .layer(
            &Role::Named("strong".into()),
            config(&strong.base_url(), "strong-model", &cache),
        )
        .unwrap();
    writer.complete(&call(0)).await.unwrap();
    other.complete(&call(1)).await.unwrap();
    other.complete(&call(2)).await.unwrap();
    assert_eq!((cheap.request_count(), strong.request_count()), (1, 2));
    assert_eq!(writer.stats().upstream_calls, 1);
    assert_eq!(other.stats().upstream_calls, 2);
    assert!((other.stats().spent_usd - 0.002).abs() < 1e-9);
    // The budget is the run's: spent on both models together.
    for llm in [&writer, &other] {
        match llm.complete(&call(3)).await {
            Err(LlmError::Budget(_)) => {}
            got => panic!("expected a budget stop, got {got:?}"),
        }
    }
    // One cache file: the same question asked of the other model is another key, and an
    // answer already given is served from the cache by its own model only.
    let again = other.complete(&call(1)).await.unwrap();
    assert!(again.cached);
    assert_ne!(writer.key_of(&call(1)), other.key_of(&call(1)));
}
