//! The LLM layer against the mock server: cache commits, the cost budget, replay misses.

use cb_llm::{BackendKind, Budget, Call, Llm, LlmConfig, LlmError, Price, Role, Roster};

mod common;

fn call(i: usize) -> Call {
    common::question(format!("question {i}"), format!("item-{i}"))
}

fn config(base: &str, cache: &std::path::Path) -> LlmConfig {
    let mut c = LlmConfig::offline();
    c.backend = BackendKind::Openai;
    c.base_url = base.into();
    c.model = "m".into();
    c.cache_path = Some(cache.to_path_buf());
    c
}

#[tokio::test(flavor = "multi_thread")]
async fn max_cost_refuses_the_call_that_could_overrun_it_and_cached_answers_stay_free() {
    // Every answer reports 500 + 500 tokens.
    let mock = cb_mock::MockServer::start(cb_mock::responder(|_| cb_mock::Reply::ContentWith {
        content: "fine".into(),
        finish_reason: "stop".into(),
        usage: Some((500, 500)),
    }))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&mock.base_url(), &dir.path().join("c.sqlite"));
    // At $1 per million tokens each way a call costs $0.001 and reserves its worst case
    // (estimated prompt + 1000 max tokens, about $0.001) before it is sent: with $0.0025 the
    // third call (0.002 spent + 0.001 reserved) could overrun, so it is refused.
    c.price = Price {
        input_per_million: 1.0,
        output_per_million: 1.0,
    };
    let capped = || Roster::new(Budget::new(Some(0.0025), None));
    let llm = capped().layer(&Role::Writer, c.clone()).unwrap();
    for i in 0..2 {
        let got = llm.complete(&call(i)).await.unwrap();
        assert!(!got.cached);
    }
    match llm.complete(&call(2)).await {
        Err(e @ LlmError::Budget(_)) => assert!(e.is_fatal()),
        other => panic!("expected a budget stop, got {other:?}"),
    }
    assert_eq!(mock.request_count(), 2);
    // A new run with the same budget: the two answers come from the cache and cost nothing.
    let llm = capped().layer(&Role::Writer, c).unwrap();
    for i in 0..2 {
        assert!(llm.complete(&call(i)).await.unwrap().cached);
    }
    assert_eq!(llm.stats().spent_usd, 0.0);
    assert_eq!(mock.request_count(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reader_on_another_endpoint_shares_the_cache_file_and_the_budget() {
    let answer = || {
        cb_mock::responder(|_| cb_mock::Reply::ContentWith {
            content: "A".into(),
            finish_reason: "stop".into(),
            usage: Some((500, 500)),
        })
    };
    let (writer_mock, reader_mock) = (
        cb_mock::MockServer::start(answer()).await,
        cb_mock::MockServer::start(answer()).await,
    );
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("c.sqlite");
    let mut c = config(&writer_mock.base_url(), &cache);
    c.price = Price {
        input_per_million: 1.0,
        output_per_million: 1.0,
    };
    let roster = Roster::new(Budget::new(Some(0.0025), None));
    let writer = roster.layer(&Role::Writer, c.clone()).unwrap();
    let mut rc = config(&reader_mock.base_url(), &cache);
    rc.model = "reader".into();
    rc.price = c.price;
    // The roster's budget is the run's: no layer's configuration carries a cap of its own.
    let reader = roster.layer(&Role::Reader, rc).unwrap();
    // One writer call and one reader call spend $0.002 of the one budget: the third call
    // could overrun it, whichever layer makes it.
    writer.complete(&call(0)).await.unwrap();
    reader.complete(&call(1)).await.unwrap();
    assert!(matches!(
        reader.complete(&call(2)).await,
        Err(LlmError::Budget(_))
    ));
    assert!(matches!(
        writer.complete(&call(2)).await,
        Err(LlmError::Budget(_))
    ));
    assert_eq!(
        (writer.stats().upstream_calls, reader.stats().upstream_calls),
        (1, 1),
        "counters of their own"
    );
    let spent = writer.stats().spent_usd + reader.stats().spent_usd;
    assert!((spent - 0.002).abs() < 1e-9, "{spent}");
    // The budget's own figures are the layers' together, and nothing is left held.
    let run = roster.budget().figures();
    assert!((run.spent_usd - spent).abs() < 1e-12, "{run:?}");
    assert_eq!((run.tokens, run.reserved_tokens), (2_000, 0), "{run:?}");
    assert_eq!(
        (writer_mock.request_count(), reader_mock.request_count()),
        (1, 1)
    );
    // The reader's answer is in the writer's cache file, under the reader's endpoint and
    // model: a new run answers it from there.
    drop((writer, reader));
    let roster = Roster::new(Budget::new(Some(0.0025), None));
    let _writer = roster.layer(&Role::Writer, c).unwrap();
    let mut rc = config(&reader_mock.base_url(), &cache);
    rc.model = "reader".into();
    let reader = roster.layer(&Role::Reader, rc).unwrap();
    assert!(reader.complete(&call(1)).await.unwrap().cached);
}

#[tokio::test(flavor = "multi_thread")]
async fn replay_answers_from_the_cache_and_names_a_miss() {
    let mock = cb_mock::MockServer::start(cb_mock::fixed("cached text")).await;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("c.sqlite");
    let llm = Llm::new(config(&mock.base_url(), &cache)).unwrap();
    llm.complete(&call(1)).await.unwrap();
    let mut c = config(&mock.base_url(), &cache);
    c.backend = BackendKind::Replay;
    let replay = Llm::new(c).unwrap();
    assert_eq!(replay.complete(&call(1)).await.unwrap().text, "cached text");
    let miss = replay.complete(&call(2)).await.unwrap_err();
    assert!(matches!(miss, LlmError::ReplayMiss { .. }));
    assert!(
        miss.to_string().contains("item-2") && miss.to_string().contains("t.md"),
        "{miss}"
    );
    assert_eq!(mock.request_count(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn offline_answers_with_the_steps_rule_and_sends_nothing() {
    let llm = Llm::new(LlmConfig::offline()).unwrap();
    let got = llm.complete(&call(1)).await.unwrap();
    assert_eq!(got.text, "offline answer");
    assert_eq!(got.finish_reason, "offline");
    assert_eq!(llm.endpoint(), "offline");
}

#[tokio::test(flavor = "multi_thread")]
async fn top_log_probabilities_come_with_the_answer_and_again_from_the_cache() {
    let mock = cb_mock::MockServer::start(cb_mock::responder(|_| cb_mock::Reply::WithLogprobs {
        content: "B".into(),
        top_logprobs: vec![("B".into(), -0.25), (" A".into(), -1.5), ("C".into(), -3.0)],
    }))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let c = config(&mock.base_url(), &dir.path().join("c.sqlite"));
    let mut asking = call(0);
    asking.request.top_logprobs = Some(2);
    let want = vec![
        cb_llm::TopLogprob {
            token: "B".into(),
            logprob: -0.25,
        },
        cb_llm::TopLogprob {
            token: " A".into(),
            logprob: -1.5,
        },
    ];
    let llm = Llm::new(c.clone()).unwrap();
    let got = llm.complete(&asking).await.unwrap();
    assert_eq!(
        (got.cached, got.top_logprobs.as_ref()),
        (false, Some(&want))
    );
    // A new run: the same answer from the cache, with its log-probabilities.
    let llm = Llm::new(c.clone()).unwrap();
    let again = llm.complete(&asking).await.unwrap();
    assert_eq!((again.cached, again.top_logprobs), (true, Some(want)));
    assert_eq!(mock.request_count(), 1);
    // The same question not asking for them is another request, answered without them.
    let plain = llm.complete(&call(0)).await.unwrap();
    assert_eq!((plain.cached, plain.top_logprobs), (false, None));
    assert_ne!(plain.cache_key, again.cache_key);
    assert_eq!(mock.request_count(), 2);
    let bodies = mock.journal();
    assert_eq!(bodies[0].body["top_logprobs"], 2);
    assert!(bodies[1].body.get("logprobs").is_none());
}
