//! `--structured` through the mock server's emulations of real servers: `auto` finds the form
//! each kind of server takes, remembers it in the cache database for later runs, steps down
//! when a remembered form is refused, and a server that takes none still answers; `--batch`
//! lines carry the online body and key of the form in use, found out by no probe.

use cb_llm::{BackendKind, Call, ChatRequest, Form, Llm, LlmConfig, LlmError, Message, Structured};
use cb_mock::structured::{emulate, StructuredServer};
use cb_mock::{responder, MockServer, Reply};
use serde_json::{json, Value};
use std::path::Path;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"distractors": {"type": "array", "items": {"type": "string"}, "minItems": 3}},
        "required": ["distractors"],
        "additionalProperties": false,
    })
}

fn call(i: usize) -> Call {
    Call {
        request: ChatRequest {
            messages: vec![Message::user(format!(
                "Give three distractors for question {i}."
            ))],
            temperature: 0.0,
            top_p: None,
            max_tokens: 200,
            seed: None,
            response_schema: Some(schema()),
            top_logprobs: None,
        },
        template: "distractors.md".into(),
        template_hash: "h".into(),
        item: format!("item-{i}"),
        offline: "{}".into(),
    }
}

fn config(base: &str, cache: &Path, structured: Structured) -> LlmConfig {
    let mut c = LlmConfig::offline();
    c.backend = BackendKind::Openai;
    c.base_url = base.into();
    c.model = "m".into();
    c.cache_path = Some(cache.to_path_buf());
    c.structured = structured;
    c.backoff_base = std::time::Duration::from_millis(5);
    c
}

/// A model that writes prose unless a server constrains it.
async fn server(kind: StructuredServer) -> MockServer {
    MockServer::start(emulate(
        kind,
        responder(|_| Reply::content("Here are some ideas: a cat, a dog.")),
    ))
    .await
}

/// The `response_format.type` of each request the server got (`-` for none).
fn formats(mock: &MockServer) -> Vec<String> {
    mock.journal()
        .iter()
        .map(|j| {
            j.body
                .pointer("/response_format/type")
                .and_then(Value::as_str)
                .unwrap_or("-")
                .to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn auto_finds_each_servers_form_once_and_remembers_it_across_runs() {
    let cases = [
        (
            StructuredServer::JsonSchema,
            Form::JsonSchema,
            vec!["json_schema"],
        ),
        (
            StructuredServer::LlamaCppPython,
            Form::JsonObject,
            vec!["json_schema", "json_object"],
        ),
        (
            StructuredServer::Ignores,
            Form::Off,
            vec!["json_schema", "json_object"],
        ),
        (
            StructuredServer::Refuses,
            Form::Off,
            vec!["json_schema", "json_object"],
        ),
    ];
    for (kind, want, probes) in cases {
        let mock = server(kind).await;
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("c.sqlite");
        let llm = Llm::new(config(&mock.base_url(), &cache, Structured::Auto)).unwrap();
        let got = llm.complete(&call(1)).await.unwrap();
        assert_eq!(llm.structured_form(), Some(want.name()), "{kind:?}");
        let sent = formats(&mock);
        let real = match want {
            Form::JsonSchema => "json_schema",
            Form::JsonObject => "json_object",
            Form::Off => "-",
        };
        let mut expected: Vec<&str> = probes.clone();
        expected.push(real);
        assert_eq!(sent, expected, "{kind:?}: probes then the call");
        if want == Form::Off {
            assert_eq!(got.text, "Here are some ideas: a cat, a dog.", "{kind:?}");
        } else {
            let v: Value = serde_json::from_str(&got.text).unwrap();
            assert_eq!(v["distractors"].as_array().unwrap().len(), 3, "{kind:?}");
        }
        // Concurrent calls of the same run wait for the form and send no probe of their own.
        mock.clear_journal();
        let many = (2..10).map(|i| {
            let llm = llm.clone();
            async move { llm.complete(&call(i)).await }
        });
        for r in futures_join(many).await {
            r.unwrap();
        }
        assert_eq!(formats(&mock), vec![real; 8], "{kind:?}");

        // A later run (a new process: nothing in memory) reads the form from the cache file:
        // no probe, the cached answer served, a new call sent in the remembered form.
        mock.clear_journal();
        let again = Llm::new(config(&mock.base_url(), &cache, Structured::Auto)).unwrap();
        assert!(again.complete(&call(1)).await.unwrap().cached, "{kind:?}");
        again.complete(&call(20)).await.unwrap();
        assert_eq!(
            formats(&mock),
            vec![real],
            "{kind:?}: no probe in a later run"
        );
        assert_eq!(again.structured_form(), Some(want.name()));
    }
}

async fn futures_join<F: std::future::Future + Send + 'static>(
    fs: impl Iterator<Item = F>,
) -> Vec<F::Output>
where
    F::Output: Send,
{
    let handles: Vec<_> = fs.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remembered_form_the_server_refuses_is_stepped_down_without_retries() {
    // The cache remembers json-schema (say, from before the server was swapped for
    // llama-cpp-python); the refusal is a capability answer: one request, then json-object.
    let mock = server(StructuredServer::LlamaCppPython).await;
    let dir = tempfile::tempdir().unwrap();
    let cache_path = dir.path().join("c.sqlite");
    let cfg = config(&mock.base_url(), &cache_path, Structured::Auto);
    cb_llm::Cache::open(&cache_path)
        .unwrap()
        .put_capability(
            &cb_llm::endpoint_identity(&mock.base_url()),
            "m",
            "json-schema",
            "test",
        )
        .unwrap();
    let llm = Llm::new(cfg.clone()).unwrap();
    let got = llm.complete(&call(1)).await.unwrap();
    assert!(serde_json::from_str::<Value>(&got.text).is_ok());
    assert_eq!(formats(&mock), vec!["json_schema", "json_object"]);
    assert_eq!(llm.stats().retries, 0);
    let remembered = cb_llm::Cache::open(&cache_path)
        .unwrap()
        .capability(&cb_llm::endpoint_identity(&mock.base_url()), "m")
        .unwrap();
    assert_eq!(remembered.as_deref(), Some("json-object"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fixed_form_the_server_refuses_stops_the_build_after_one_request() {
    let mock = server(StructuredServer::LlamaCppPython).await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        &mock.base_url(),
        &dir.path().join("c.sqlite"),
        Structured::Fixed(Form::JsonSchema),
    );
    let llm = Llm::new(cfg).unwrap();
    let err = llm.complete(&call(1)).await.unwrap_err();
    assert!(matches!(err, LlmError::FormRefused(_)), "{err:?}");
    assert!(err.is_fatal());
    let msg = err.to_string();
    assert!(
        msg.contains(&mock.base_url())
            && msg.contains("--structured")
            && msg.contains("json_object"),
        "{msg}"
    );
    assert_eq!(
        mock.request_count(),
        1,
        "a capability answer is not retried"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_form_is_part_of_the_cache_key_and_calls_without_a_schema_never_probe() {
    let mock = server(StructuredServer::JsonSchema).await;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("c.sqlite");
    let fixed = |f| Llm::new(config(&mock.base_url(), &cache, Structured::Fixed(f))).unwrap();
    fixed(Form::JsonSchema).complete(&call(1)).await.unwrap();
    // The same call prompt-only is another request: not answered from the cache.
    assert!(!fixed(Form::Off).complete(&call(1)).await.unwrap().cached);
    assert!(
        fixed(Form::JsonSchema)
            .complete(&call(1))
            .await
            .unwrap()
            .cached
    );
    assert_eq!(formats(&mock), vec!["json_schema", "-"]);

    mock.clear_journal();
    let auto = Llm::new(config(
        &mock.base_url(),
        &dir.path().join("d.sqlite"),
        Structured::Auto,
    ))
    .unwrap();
    let mut plain = call(2);
    plain.request.response_schema = None;
    auto.complete(&plain).await.unwrap();
    assert_eq!(formats(&mock), vec!["-"], "no schema, no probe");
    assert_eq!(auto.structured_form(), None);
}

/// Opt-in, against a real server (CI does not run it):
/// `CB_REAL_BASE_URL=http://127.0.0.1:8088/v1 CB_REAL_MODEL=smollm2 CB_REAL_FORM=json-object
/// cargo test -p cb-llm --test structured -- --ignored --nocapture`.
/// `auto` must find `CB_REAL_FORM` (when given), and every schema-constrained answer must be
/// JSON that follows the schema.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a real endpoint: CB_REAL_BASE_URL, CB_REAL_MODEL"]
#[allow(clippy::print_stderr)]
async fn a_real_server_gets_its_form_and_answers_in_shape() {
    let base = std::env::var("CB_REAL_BASE_URL").expect("CB_REAL_BASE_URL");
    let model = std::env::var("CB_REAL_MODEL").expect("CB_REAL_MODEL");
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&base, &dir.path().join("c.sqlite"), Structured::Auto);
    c.model = model;
    c.api_key = cb_llm::ApiKey::new(std::env::var("OPENAI_API_KEY").unwrap_or_default());
    let llm = Llm::new(c).unwrap();
    let questions = [
        "Where would you keep a sandwich fresh? Correct answer: refrigerator.",
        "What do people use to cut paper? Correct answer: scissors.",
        "What is the capital of France? Correct answer: Paris.",
        "What animal says moo? Correct answer: cow.",
        "What do you wear on your feet? Correct answer: shoes.",
    ];
    for (i, q) in questions.iter().enumerate() {
        let mut call = call(i);
        call.request.messages = vec![Message::user(format!(
            "{q}\nGive three wrong but plausible answers. Reply with a JSON object whose key \"distractors\" holds them as a list of strings."
        ))];
        let got = llm.complete(&call).await.unwrap();
        eprintln!("{} -> {}", q, got.text);
        let v: Value = serde_json::from_str(&got.text)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", got.text));
        let d = v["distractors"].as_array().expect("distractors array");
        assert!(d.len() >= 3 && d.iter().all(Value::is_string), "{v}");
    }
    let form = llm.structured_form().unwrap();
    eprintln!("structured form: {form}; stats {:?}", llm.stats());
    if let Ok(want) = std::env::var("CB_REAL_FORM") {
        assert_eq!(form, want);
    }
}

/// `--batch` sends no probe: its input lines carry the json-schema body and key an online
/// call would use, or those of the form remembered for the endpoint.
#[tokio::test(flavor = "multi_thread")]
async fn batch_lines_carry_the_online_body_and_key_of_the_form_in_use() {
    let dir = tempfile::tempdir().unwrap();
    for (remembered, form) in [(None, Form::JsonSchema), (Some("off"), Form::Off)] {
        let mock = server(StructuredServer::JsonSchema).await;
        let cache = dir.path().join(format!("{form:?}.sqlite"));
        let mut c = config(&mock.base_url(), &cache, Structured::Auto);
        if let Some(f) = remembered {
            let llm = Llm::new(c.clone()).unwrap();
            cb_llm::Cache::open(&cache)
                .unwrap()
                .put_capability(llm.endpoint(), "m", f, "set by the test")
                .unwrap();
        }
        c.transport = cb_llm::Transport::BatchApi(cb_llm::BatchOptions {
            poll_initial: std::time::Duration::from_millis(10),
            quiet: std::time::Duration::from_millis(20),
            ..Default::default()
        });
        let llm = Llm::new(c).unwrap();
        let done = llm.complete(&call(1)).await.unwrap();
        assert_eq!(
            mock.request_count(),
            0,
            "a batch build sent an online request"
        );
        let subs = mock.batch_submissions();
        assert_eq!(subs.len(), 1);
        let expected_key = cb_llm::cache_key_as(llm.endpoint(), "m", &call(1).request, form);
        assert_eq!(subs[0].custom_id, expected_key);
        assert_eq!(done.cache_key, expected_key);
        assert_eq!(subs[0].body, call(1).request.body_as("m", form));
    }
}
