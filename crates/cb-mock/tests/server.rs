//! End-to-end tests of the mock server over real loopback HTTP (reqwest, no TLS).

use std::time::{Duration, Instant};

use cb_mock::{echo, fixed, responder, MockServer, Reply};
use serde_json::{json, Value};

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

fn chat_body(user: &str) -> Value {
    json!({
        "model": "test-model",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": user},
        ],
        "temperature": 0.0,
        "some_extension": {"nested": [1, 2, 3]},
    })
}

async fn post(server: &MockServer, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{}/chat/completions", server.base_url()))
        .bearer_auth("sk-test")
        .json(body)
        .send()
        .await
        .unwrap()
}

async fn post_json(server: &MockServer, body: &Value) -> (u16, Value) {
    let resp = post(server, body).await;
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

#[tokio::test]
async fn content_reply_shape() {
    let server = MockServer::start(responder(|req| {
        Reply::Content(format!(
            "{}|{}",
            req.system().unwrap_or("-"),
            req.last_user()
        ))
    }))
    .await;
    assert!(server.base_url().starts_with("http://127.0.0.1:"));
    assert!(server.base_url().ends_with("/v1"));

    let resp = post(&server, &chat_body("hello there")).await;
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(
        resp.headers()["content-type"].to_str().unwrap(),
        "application/json"
    );
    let v: Value = resp.json().await.unwrap();
    assert!(v["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(v["object"], "chat.completion");
    assert!(v["created"].as_u64().is_some());
    assert_eq!(v["model"], "test-model");
    assert_eq!(v["x_mock"], true);
    let choices = v["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 1);
    assert_eq!(choices[0]["index"], 0);
    assert_eq!(choices[0]["message"]["role"], "assistant");
    assert_eq!(choices[0]["message"]["content"], "be brief|hello there");
    assert_eq!(choices[0]["finish_reason"], "stop");
    let usage = &v["usage"];
    let prompt = usage["prompt_tokens"].as_u64().unwrap();
    let completion = usage["completion_tokens"].as_u64().unwrap();
    // "be brief" (8) + "hello there" (11) = 19 chars -> 5 tokens; "be brief|hello there" (20) -> 5
    assert_eq!(prompt, 5);
    assert_eq!(completion, 5);
    assert_eq!(usage["total_tokens"].as_u64().unwrap(), prompt + completion);
}

#[tokio::test]
async fn content_with_finish_reason_and_usage() {
    let server = MockServer::start(responder(|req| Reply::ContentWith {
        content: "cut".into(),
        finish_reason: if req.last_user() == "a" {
            "length".into()
        } else {
            "eos".into()
        },
        usage: if req.last_user() == "a" {
            Some((7, 3))
        } else {
            None
        },
    }))
    .await;
    let (status, v) = post_json(&server, &chat_body("a")).await;
    assert_eq!(status, 200);
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    assert_eq!(v["choices"][0]["message"]["content"], "cut");
    assert_eq!(v["usage"]["prompt_tokens"], 7);
    assert_eq!(v["usage"]["completion_tokens"], 3);
    assert_eq!(v["usage"]["total_tokens"], 10);

    let (status, v) = post_json(&server, &chat_body("b")).await;
    assert_eq!(status, 200);
    assert_eq!(v["choices"][0]["finish_reason"], "eos");
    assert!(v.get("usage").is_none(), "usage must be omitted: {v}");
    assert_eq!(server.journal()[1].reply_kind, "content_with");
}

#[tokio::test]
async fn attempt_counting() {
    let server = MockServer::start(responder(|req| {
        Reply::Content(format!("attempt {}", req.attempt))
    }))
    .await;
    let content = |v: Value| {
        v["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };

    let body = chat_body("q1");
    assert_eq!(content(post_json(&server, &body).await.1), "attempt 1");
    assert_eq!(content(post_json(&server, &body).await.1), "attempt 2");
    assert_eq!(
        content(post_json(&server, &chat_body("q2")).await.1),
        "attempt 1"
    );

    // The same body with keys in another order and other whitespace is the same body.
    let reordered = r#"{ "some_extension": {"nested": [1,2,3]}, "temperature": 0.0,
        "messages": [{"content": "be brief", "role": "system"}, {"content": "q1", "role": "user"}],
        "model": "test-model" }"#;
    let resp = client()
        .post(format!("{}/chat/completions", server.base_url()))
        .header("content-type", "application/json")
        .body(reordered)
        .send()
        .await
        .unwrap();
    assert_eq!(content(resp.json().await.unwrap()), "attempt 3");

    // Requests answered from the fault queue count as attempts too.
    server.push_faults([Reply::server_error(500)]);
    assert_eq!(post(&server, &body).await.status().as_u16(), 500);
    assert_eq!(content(post_json(&server, &body).await.1), "attempt 5");
    let attempts: Vec<usize> = server.journal().iter().map(|e| e.attempt).collect();
    assert_eq!(attempts, [1, 2, 1, 3, 4, 5]);

    // clear_journal keeps the counts; clear_attempts resets them.
    server.clear_journal();
    assert_eq!(content(post_json(&server, &body).await.1), "attempt 6");
    server.clear_attempts();
    assert_eq!(content(post_json(&server, &body).await.1), "attempt 1");
}

#[tokio::test]
async fn fault_queue_ordering_and_retry_after() {
    let server = MockServer::start(fixed("ok")).await;
    server.push_faults([Reply::rate_limited("1"), Reply::server_error(503)]);
    server.push_faults([Reply::bad_request("too long")]);
    assert_eq!(server.pending_faults(), 3);
    let body = chat_body("x");

    let resp = post(&server, &body).await;
    assert_eq!(resp.status().as_u16(), 429);
    assert_eq!(resp.headers()["retry-after"].to_str().unwrap(), "1");
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["type"], "rate_limit_error");
    assert!(v["error"]["message"].as_str().is_some());

    let resp = post(&server, &body).await;
    assert_eq!(resp.status().as_u16(), 503);
    assert!(resp.headers().get("retry-after").is_none());
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["type"], "server_error");

    let (status, v) = post_json(&server, &body).await;
    assert_eq!(status, 400);
    assert_eq!(v["error"]["message"], "too long");

    let (status, v) = post_json(&server, &body).await;
    assert_eq!(status, 200);
    assert_eq!(v["choices"][0]["message"]["content"], "ok");
    assert_eq!(server.pending_faults(), 0);

    let kinds: Vec<&str> = server.journal().iter().map(|e| e.reply_kind).collect();
    assert_eq!(kinds, ["status:429", "status:503", "status:400", "content"]);
    let from_queue: Vec<bool> = server
        .journal()
        .iter()
        .map(|e| e.from_fault_queue)
        .collect();
    assert_eq!(from_queue, [true, true, true, false]);

    // A custom Status reply with an arbitrary Retry-After and body.
    server.push_faults([Reply::Status {
        code: 429,
        retry_after: Some("Wed, 21 Oct 2015 07:28:00 GMT".into()),
        body: "{}".into(),
    }]);
    let resp = post(&server, &body).await;
    assert_eq!(resp.status().as_u16(), 429);
    assert_eq!(
        resp.headers()["retry-after"].to_str().unwrap(),
        "Wed, 21 Oct 2015 07:28:00 GMT"
    );
    assert_eq!(resp.text().await.unwrap(), "{}");
}

#[tokio::test]
async fn raw_body_verbatim() {
    let raw = "{\"choices\": [{\"message\": {\"content\": \"trunc";
    let server = MockServer::start(fixed("unused")).await;
    server.push_faults([
        Reply::RawBody(raw.to_owned()),
        Reply::RawBody(String::new()),
    ]);
    let resp = post(&server, &chat_body("x")).await;
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(
        resp.headers()["content-type"].to_str().unwrap(),
        "application/json"
    );
    assert_eq!(resp.text().await.unwrap(), raw);
    let resp = post(&server, &chat_body("x")).await;
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.text().await.unwrap(), "");
    assert_eq!(server.journal()[0].reply_kind, "raw");
}

#[tokio::test]
async fn latency_applied() {
    let server = MockServer::start(fixed("slow")).await;
    let latency = Duration::from_millis(150);
    server.set_latency(latency);
    let t0 = Instant::now();
    let (status, _) = post_json(&server, &chat_body("x")).await;
    assert_eq!(status, 200);
    assert!(t0.elapsed() >= latency, "elapsed {:?}", t0.elapsed());

    // Latency applies to faults too.
    server.push_faults([Reply::rate_limited("0")]);
    let t0 = Instant::now();
    assert_eq!(post(&server, &chat_body("x")).await.status().as_u16(), 429);
    assert!(t0.elapsed() >= latency, "elapsed {:?}", t0.elapsed());

    server.set_latency(Duration::ZERO);
    let t0 = Instant::now();
    post_json(&server, &chat_body("x")).await;
    assert!(t0.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn drop_yields_client_error() {
    let server = MockServer::start(fixed("after")).await;
    server.push_faults([Reply::Drop]);
    let sent = client()
        .post(format!("{}/chat/completions", server.base_url()))
        .json(&chat_body("x"))
        .send()
        .await;
    match sent {
        Err(e) => assert!(!e.is_status(), "{e}"),
        Ok(resp) => {
            // The header may arrive; the body must fail.
            let body = resp.bytes().await;
            assert!(body.is_err(), "expected a body error, got {body:?}");
        }
    }
    // The server still works afterwards.
    let (status, v) = post_json(&server, &chat_body("x")).await;
    assert_eq!(status, 200);
    assert_eq!(v["choices"][0]["message"]["content"], "after");
    let kinds: Vec<&str> = server.journal().iter().map(|e| e.reply_kind).collect();
    assert_eq!(kinds, ["drop", "content"]);
}

#[tokio::test]
async fn hang_needs_client_timeout_and_shutdown_releases_it() {
    let server = MockServer::start(fixed("x")).await;
    server.push_faults([Reply::Hang]);
    let c = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let t0 = Instant::now();
    let err = c
        .post(format!("{}/chat/completions", server.base_url()))
        .json(&chat_body("x"))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert!(t0.elapsed() >= Duration::from_millis(300));
    assert_eq!(server.journal()[0].reply_kind, "hang");

    // A hang in flight does not keep the server alive after shutdown.
    server.push_faults([Reply::Hang]);
    let url = format!("{}/chat/completions", server.base_url());
    let pending =
        tokio::spawn(async move { client().post(url).json(&chat_body("y")).send().await });
    while server.request_count() < 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::timeout(Duration::from_secs(5), server.shutdown())
        .await
        .expect("shutdown must not wait for the hang");
    let released = tokio::time::timeout(Duration::from_secs(5), pending)
        .await
        .expect("the hanging request must be released")
        .unwrap();
    if let Ok(resp) = released {
        assert_eq!(resp.status().as_u16(), 503);
    }
}

#[tokio::test]
async fn journal_records_everything() {
    let server = MockServer::start(echo()).await;
    assert_eq!(server.request_count(), 0);
    let t0 = Instant::now();
    post_json(&server, &chat_body("one")).await;
    server.push_faults([Reply::rate_limited("2")]);
    post(&server, &chat_body("two")).await;
    // No Authorization header, no content-type, not JSON.
    let resp = client()
        .post(format!("{}/chat/completions", server.base_url()))
        .body("not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["type"], "invalid_request_error");

    // Probes are not journaled.
    let models: Value = client()
        .get(format!("{}/models", server.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], cb_mock::MOCK_MODEL);
    let resp = client()
        .get(format!("{}/nope", server.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);
    let v: Value = resp.json().await.unwrap();
    assert!(v["error"]["message"].as_str().unwrap().contains("/v1/nope"));

    let journal = server.journal();
    assert_eq!(server.request_count(), 3);
    assert_eq!(journal.len(), 3);
    assert_eq!(journal[0].body, chat_body("one"));
    assert_eq!(journal[0].authorization.as_deref(), Some("Bearer sk-test"));
    assert_eq!(journal[0].reply_kind, "content");
    assert_eq!(journal[1].body, chat_body("two"));
    assert_eq!(journal[1].reply_kind, "status:429");
    assert_eq!(journal[2].body, Value::String("not json".into()));
    assert_eq!(journal[2].authorization, None);
    assert_eq!(journal[2].reply_kind, "status:400");
    assert!(journal.iter().all(|e| e.at >= t0));
    assert!(journal.windows(2).all(|w| w[0].at <= w[1].at));

    server.clear_journal();
    assert_eq!(server.request_count(), 0);
    assert!(server.journal().is_empty());
}

#[tokio::test]
async fn set_responder_swaps_behaviour() {
    let server = MockServer::start(fixed("first")).await;
    let (_, v) = post_json(&server, &chat_body("x")).await;
    assert_eq!(v["choices"][0]["message"]["content"], "first");
    server.set_responder(responder(|_| Reply::server_error(502)));
    assert_eq!(post(&server, &chat_body("x")).await.status().as_u16(), 502);
    server.set_responder(echo());
    let (_, v) = post_json(&server, &chat_body("echoed")).await;
    assert_eq!(v["choices"][0]["message"]["content"], "echoed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_concurrent_requests() {
    let server = MockServer::start(echo()).await;
    let c = client();
    let url = format!("{}/chat/completions", server.base_url());
    let n = 2000usize;
    let sem = std::sync::Arc::new(tokio::sync::Semaphore::new(256));
    let mut tasks = Vec::with_capacity(n);
    for i in 0..n {
        let (c, url, sem) = (c.clone(), url.clone(), sem.clone());
        tasks.push(tokio::spawn(async move {
            let _permit = sem.acquire_owned().await.unwrap();
            let v: Value = c
                .post(url)
                .json(&chat_body(&format!("q{i}")))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert_eq!(v["choices"][0]["message"]["content"], format!("q{i}"));
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(server.request_count(), n);
    assert!(server.journal().iter().all(|e| e.attempt == 1));
}

#[tokio::test]
async fn drop_shuts_down() {
    let server = MockServer::start(fixed("x")).await;
    let url = format!("{}/chat/completions", server.base_url());
    post_json(&server, &chat_body("x")).await;
    drop(server);
    // Give the server task a moment to stop accepting.
    let mut refused = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        // A fresh client: no pooled keep-alive connection.
        if client()
            .post(&url)
            .json(&chat_body("x"))
            .send()
            .await
            .is_err()
        {
            refused = true;
            break;
        }
    }
    assert!(refused, "server still answering after drop");
}
