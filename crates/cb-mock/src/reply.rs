//! The reply catalogue: [`Reply`] (what a request gets), [`Responder`] and the stock
//! responders ([`responder`], [`fixed`], [`echo`]), OpenAI-style error bodies
//! ([`error_body`]), and the pieces a response is made of (a `chat.completion` JSON, a JSON
//! response, a cut connection); the server's chat route puts them together.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Bytes, HttpBody};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use crate::sync::lock;
use crate::ChatRequest;

/// The fixed `created` timestamp put in every chat completion.
pub const MOCK_CREATED: u64 = 1_700_000_000;

/// How long [`Reply::Hang`] waits (unless the server shuts down first).
pub(crate) const HANG_FOR: Duration = Duration::from_secs(3600);

/// Decides the reply to a chat request. Called on the server's tasks, outside any lock.
pub type Responder = Arc<dyn Fn(&ChatRequest) -> Reply + Send + Sync>;

/// Wraps a closure as a [`Responder`].
pub fn responder(f: impl Fn(&ChatRequest) -> Reply + Send + Sync + 'static) -> Responder {
    Arc::new(f)
}

/// A responder that always answers with the same content.
pub fn fixed(content: impl Into<String>) -> Responder {
    let content = content.into();
    responder(move |_| Reply::Content(content.clone()))
}

/// A responder that answers with the last user message.
pub fn echo() -> Responder {
    responder(|req| Reply::Content(req.last_user().to_owned()))
}

/// One scripted reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `200`, a standard `chat.completion` JSON with this message content, `finish_reason`
    /// `"stop"`, usage of about chars/4 tokens, plus an extra top-level field `"x_mock": true`.
    Content(String),
    /// `200` like [`Reply::Content`] with a chosen `finish_reason` (e.g. `"length"`, `"eos"`) and
    /// usage `(prompt_tokens, completion_tokens)`; `None` omits the `usage` object entirely.
    ContentWith {
        content: String,
        finish_reason: String,
        usage: Option<(u64, u64)>,
    },
    /// `200` like [`Reply::Content`], with the first answer token's most likely tokens and
    /// their natural log-probabilities, most likely first: sent (the first N) where the
    /// request asks for them (`logprobs: true, top_logprobs: N`) as OpenAI sends them
    /// (`choices[0].logprobs.content[0].top_logprobs`); a request that does not ask gets
    /// `logprobs: null`. ([`Reply::Content`] never sends any: an endpoint that ignores the
    /// request.)
    WithLogprobs {
        content: String,
        top_logprobs: Vec<(String, f64)>,
    },
    /// This status code with an optional `Retry-After` header and this exact body
    /// (content-type `application/json`).
    Status {
        code: u16,
        retry_after: Option<String>,
        body: String,
    },
    /// `200` with this exact body and content-type `application/json`.
    RawBody(String),
    /// Never answers (waits an hour, or until the server shuts down): the client must time out.
    Hang,
    /// The connection is cut before a complete response is sent: the handler answers `200`
    /// with a body stream that yields a few bytes then an I/O error, and hyper aborts the
    /// connection. In practice nothing has been flushed yet, so the client sees the connection
    /// closed before the message completed (reqwest: a request error whose source is hyper's
    /// `IncompleteMessage`); clients should treat a send error and a body error alike.
    Drop,
}

impl Reply {
    /// A `200` content reply.
    pub fn content(content: impl Into<String>) -> Reply {
        Reply::Content(content.into())
    }

    /// `429` with `Retry-After: <retry_after_secs>` and an OpenAI-style error body.
    pub fn rate_limited(retry_after_secs: &str) -> Reply {
        Reply::Status {
            code: 429,
            retry_after: Some(retry_after_secs.to_owned()),
            body: error_body(
                "Rate limit reached (cb-mock). Please try again later.",
                "rate_limit_error",
                Some("rate_limit_exceeded"),
            ),
        }
    }

    /// This (5xx) status with an OpenAI-style error body.
    pub fn server_error(code: u16) -> Reply {
        Reply::Status {
            code,
            retry_after: None,
            body: error_body(
                &format!("The server had an error while processing your request (cb-mock {code})."),
                "server_error",
                None,
            ),
        }
    }

    /// `400` with an OpenAI-style `invalid_request_error` body carrying `msg`.
    pub fn bad_request(msg: &str) -> Reply {
        Reply::Status {
            code: 400,
            retry_after: None,
            body: error_body(msg, "invalid_request_error", None),
        }
    }

    /// The journal's name for this reply: `"content"`, `"content_with"`,
    /// `"content_logprobs"`, `"status:<code>"`, `"raw"`, `"hang"` or `"drop"`.
    pub fn kind(&self) -> &'static str {
        match self {
            Reply::Content(_) => "content",
            Reply::ContentWith { .. } => "content_with",
            Reply::WithLogprobs { .. } => "content_logprobs",
            Reply::Status { code, .. } => status_kind(*code),
            Reply::RawBody(_) => "raw",
            Reply::Hang => "hang",
            Reply::Drop => "drop",
        }
    }
}

/// An OpenAI-style error JSON: `{"error":{"message","type","param":null,"code"}}`.
pub fn error_body(message: &str, kind: &str, code: Option<&str>) -> String {
    json!({
        "error": {
            "message": message,
            "type": kind,
            "param": null,
            "code": code,
        }
    })
    .to_string()
}

fn status_kind(code: u16) -> &'static str {
    match code {
        400 => "status:400",
        401 => "status:401",
        403 => "status:403",
        404 => "status:404",
        408 => "status:408",
        409 => "status:409",
        413 => "status:413",
        422 => "status:422",
        429 => "status:429",
        500 => "status:500",
        502 => "status:502",
        503 => "status:503",
        504 => "status:504",
        other => {
            // Rare codes: interned once each (at most 65536 tiny strings, in practice a handful).
            static INTERNED: OnceLock<Mutex<HashMap<u16, &'static str>>> = OnceLock::new();
            let mut map = lock(INTERNED.get_or_init(Default::default));
            map.entry(other)
                .or_insert_with(|| Box::leak(format!("status:{other}").into_boxed_str()))
        }
    }
}

pub(crate) fn tokens(chars: usize) -> u64 {
    u64::try_from(chars.div_ceil(4)).unwrap_or(u64::MAX)
}

/// A chat completion numbered `id` (`chatcmpl-mock-{id}`).
pub(crate) fn completion_json(
    id: u64,
    model: &str,
    content: &str,
    finish_reason: &str,
    usage: Option<(u64, u64)>,
) -> Value {
    let mut obj = json!({
        "id": format!("chatcmpl-mock-{id}"),
        "object": "chat.completion",
        "created": MOCK_CREATED,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "logprobs": null,
            "finish_reason": finish_reason,
        }],
    });
    if let (Some((prompt, completion)), Some(map)) = (usage, obj.as_object_mut()) {
        map.insert(
            "usage".to_owned(),
            json!({
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt.saturating_add(completion),
            }),
        );
    }
    if let Some(map) = obj.as_object_mut() {
        map.insert("x_mock".to_owned(), Value::Bool(true));
    }
    obj
}

/// `Some(n)` when a request body asks for the top `n` log-probabilities of each answer
/// token (`logprobs: true`; `top_logprobs` missing is 0).
pub(crate) fn logprobs_asked(body: &Value) -> Option<usize> {
    (body.get("logprobs") == Some(&Value::Bool(true))).then(|| {
        body.get("top_logprobs")
            .and_then(Value::as_u64)
            .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX))
    })
}

/// Puts the first answer token's log-probabilities into a chat completion `obj`, as OpenAI
/// does: the token is the most likely one scripted, with the first `n` of `top` as its top
/// log-probabilities.
pub(crate) fn add_logprobs(obj: &mut Value, top: &[(String, f64)], n: usize) {
    let entry = |(token, logprob): &(String, f64)| json!({"token": token, "logprob": logprob, "bytes": token.as_bytes()});
    let content: Vec<Value> = top
        .first()
        .map(|first| {
            let mut e = entry(first);
            e["top_logprobs"] = Value::Array(top.iter().take(n).map(entry).collect());
            e
        })
        .into_iter()
        .collect();
    obj["choices"][0]["logprobs"] = json!({ "content": content });
}

pub(crate) fn json_response(status: StatusCode, body: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

pub(crate) fn shutting_down() -> Response {
    json_response(
        StatusCode::SERVICE_UNAVAILABLE,
        error_body("cb-mock: server shutting down", "server_error", None),
    )
}

/// A body that yields the start of a JSON object, then an I/O error: hyper aborts the
/// connection mid-body.
pub(crate) struct DroppingBody {
    pub(crate) sent: bool,
}

impl HttpBody for DroppingBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        if self.sent {
            Poll::Ready(Some(Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "cb-mock: connection dropped on purpose",
            ))))
        } else {
            self.sent = true;
            Poll::Ready(Some(Ok(http_body::Frame::data(Bytes::from_static(
                b"{\"id\":\"chatcmpl-mock\",\"object\":\"chat.comp",
            )))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_probabilities_go_where_asked_as_openai_sends_them() {
        assert_eq!(
            logprobs_asked(&json!({"logprobs": true, "top_logprobs": 2})),
            Some(2)
        );
        assert_eq!(
            logprobs_asked(&json!({"logprobs": false, "top_logprobs": 2})),
            None
        );
        assert_eq!(logprobs_asked(&json!({})), None);
        let mut obj = completion_json(1, "m", "A", "stop", None);
        let top = [
            ("A".to_owned(), -0.5),
            (" B".to_owned(), -1.0),
            ("C".to_owned(), -3.0),
        ];
        add_logprobs(&mut obj, &top, 2);
        let first = &obj["choices"][0]["logprobs"]["content"][0];
        assert_eq!(first["token"], "A");
        assert_eq!(first["top_logprobs"].as_array().unwrap().len(), 2);
        assert_eq!(first["top_logprobs"][1]["token"], " B");
        assert_eq!(first["top_logprobs"][1]["logprob"], -1.0);
    }

    #[test]
    fn reply_kinds() {
        assert_eq!(Reply::content("x").kind(), "content");
        assert_eq!(Reply::rate_limited("1").kind(), "status:429");
        assert_eq!(Reply::server_error(503).kind(), "status:503");
        assert_eq!(Reply::server_error(599).kind(), "status:599");
        assert_eq!(Reply::bad_request("no").kind(), "status:400");
        assert_eq!(Reply::RawBody(String::new()).kind(), "raw");
        assert_eq!(Reply::Hang.kind(), "hang");
        assert_eq!(Reply::Drop.kind(), "drop");
        let with = Reply::WithLogprobs {
            content: "A".into(),
            top_logprobs: vec![],
        };
        assert_eq!(with.kind(), "content_logprobs");
        let Reply::Status { body, .. } = Reply::bad_request("nope") else {
            panic!("not a status")
        };
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["error"]["message"], "nope");
        assert_eq!(v["error"]["type"], "invalid_request_error");
    }
}
