//! Faults of a real endpoint, injected by the mock server: each ends as a success after a
//! retry or as a reject with its reason and raw text; the build finishes and counts add up.

mod common;

use cb_mock::{responder, MockServer, Reply};
use common::*;
use serde_json::Value;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn faults_end_in_retries_or_rejects_and_the_build_finishes() {
    let raw = tempfile::tempdir().unwrap();
    let names = [
        "ok",
        "ratelimit",
        "always500",
        "503once",
        "hangonce",
        "hangalways",
        "droponce",
        "badrequest",
        "malformed",
        "malformedonce",
        "errorobjectonce",
        "emptyonce",
        "refusal",
        "eosfinish",
    ];
    write_cases(raw.path(), &names, "alpha comes first");

    let mock = MockServer::start(responder(|req| {
        let all = all_text(req);
        let case = between(&all, "Case ", ":").unwrap_or("").to_owned();
        match (case.as_str(), req.attempt) {
            ("ratelimit", 1) => Reply::rate_limited("1"),
            ("always500", _) => Reply::server_error(500),
            ("503once", 1) => Reply::server_error(503),
            ("hangonce", 1) | ("hangalways", _) => Reply::Hang,
            ("droponce", 1) => Reply::Drop,
            ("badrequest", _) => Reply::bad_request("unsupported parameter"),
            ("malformed", _) | ("malformedonce", 1) => {
                Reply::RawBody("{\"choices\": [{\"message\": ".into())
            }
            ("errorobjectonce", 1) => Reply::RawBody(cb_mock::error_body(
                "The server is overloaded",
                "server_error",
                None,
            )),
            ("emptyonce", 1) => Reply::RawBody(String::new()),
            ("refusal", _) => Reply::Content("I'm sorry, but I can't help with that.".into()),
            ("eosfinish", _) => {
                let Reply::Content(c) = model_reply(req) else {
                    unreachable!()
                };
                Reply::ContentWith {
                    content: c,
                    finish_reason: "eos".into(),
                    usage: None,
                }
            }
            _ => model_reply(req),
        }
    }))
    .await;
    let out = tempfile::tempdir().unwrap();
    let base = mock.base_url();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let mut args = openai_args("cose", &base, r, o);
    args.extend([
        "--max-retries",
        "2",
        "--backoff-ms",
        "10",
        "--timeout-s",
        "1",
    ]);
    let o = build(&args, &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    let dir = out.path().join("kre/cose");
    assert_counts_add_up(&dir);
    let rows = read_json(&dir.join("cose.json"));
    let ok: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["question"].as_str().unwrap())
        .collect();
    for n in [
        "ok",
        "ratelimit",
        "503once",
        "hangonce",
        "droponce",
        "eosfinish",
        "malformedonce",
        "errorobjectonce",
        "emptyonce",
    ] {
        assert!(
            ok.iter().any(|q| q.contains(&format!("Case {n}:"))),
            "{n} should have succeeded: {ok:?}"
        );
    }
    let rejects = read_jsonl(&dir.join("rejects.jsonl"));
    let reject = |n: &str| -> &Value {
        rejects
            .iter()
            .find(|r| {
                r["detail"].as_str().is_some()
                    && names
                        .iter()
                        .position(|x| *x == n)
                        .map(|i| format!("{:032x}", i + 1))
                        == r["id"].as_str().map(str::to_owned)
            })
            .unwrap_or_else(|| panic!("no reject for {n}: {rejects:?}"))
    };
    assert_eq!(reject("always500")["reason"], "retries_exhausted_http_500");
    assert_eq!(
        reject("always500")["attempts"],
        3,
        "attempts count the requests sent: first try + 2 retries"
    );
    assert_eq!(reject("hangalways")["reason"], "retries_exhausted_timeout");
    assert_eq!(reject("badrequest")["reason"], "http_400");
    assert!(reject("badrequest")["raw_response"]
        .as_str()
        .unwrap()
        .contains("unsupported parameter"));
    // A broken 200 is retried like a 5xx and rejected only when the retries run out.
    assert_eq!(
        reject("malformed")["reason"],
        "retries_exhausted_malformed_response"
    );
    assert_eq!(reject("malformed")["attempts"], 3);
    assert!(reject("malformed")["raw_response"]
        .as_str()
        .unwrap()
        .contains("{\"choices\": [{\"message\": "));
    assert_eq!(reject("refusal")["reason"], "refusal");
    assert_eq!(
        reject("refusal")["attempts"],
        4,
        "an unusable answer is asked again three times (the bundled recipes resample)"
    );
    assert!(reject("refusal")["raw_response"]
        .as_str()
        .unwrap()
        .contains("I'm sorry"));
    assert_eq!(rejects.len(), 5);

    let journal = mock.journal();
    let sent = |n: &str| -> Vec<&cb_mock::JournalEntry> {
        journal
            .iter()
            .filter(|j| j.body.to_string().contains(&format!("Case {n}:")))
            .collect()
    };
    assert_eq!(sent("always500").len(), 3, "first try + 2 retries");
    assert_eq!(sent("hangalways").len(), 3);
    assert_eq!(sent("badrequest").len(), 1, "400 is not retried");
    assert_eq!(sent("malformed").len(), 3, "first try + 2 retries");
    for n in ["malformedonce", "errorobjectonce", "emptyonce"] {
        assert_eq!(sent(n).len(), 2, "{n}: retried once");
    }
    let rl = sent("ratelimit");
    assert_eq!(rl.len(), 2);
    let waited = rl[1].at.duration_since(rl[0].at);
    assert!(
        waited >= Duration::from_millis(990),
        "Retry-After 1 s not honoured: {waited:?}"
    );
}
