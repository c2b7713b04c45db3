//! cb-mock: an in-process mock OpenAI-compatible server for tests and benchmarks.
//!
//! [`MockServer::start`] binds `127.0.0.1:0` (loopback only, a random port) and serves
//!
//! - `POST /v1/chat/completions` (also `/chat/completions`): any JSON body is accepted; the
//!   reply comes from the fault queue ([`MockServer::push_faults`]) if it is not empty, else from
//!   the [`Responder`];
//! - `GET /v1/models` (also `/models`): a small model list;
//! - the Files and Batch APIs (`/v1/files`, `/v1/batches`), answered by the same responder:
//!   see [`BatchSettings`] for delays, expiry and cancellation;
//! - anything else: `404` with an OpenAI-style error JSON.
//!
//! Every chat request is recorded in a journal ([`MockServer::journal`]). A latency can be added
//! before every reply ([`MockServer::set_latency`]). Dropping the server shuts it down gracefully;
//! requests that hang ([`Reply::Hang`]) or wait on the latency are released at shutdown.
//!
//! ```no_run
//! # async fn demo() {
//! use cb_mock::{responder, MockServer, Reply};
//! let server = MockServer::start(responder(|req| Reply::Content(format!("echo: {}", req.last_user())))).await;
//! server.push_faults([Reply::rate_limited("1")]); // the first request gets a 429
//! let base = server.base_url(); // "http://127.0.0.1:PORT/v1"
//! # let _ = base;
//! # }
//! ```

mod batch;
pub mod eval_script;
pub mod reader_script;
pub mod structured;

pub use batch::{BatchSettings, Submission};

use std::collections::{HashMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use axum::Router;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

/// The model id listed by `GET /v1/models`.
pub const MOCK_MODEL: &str = "mock-model";

/// The fixed `created` timestamp put in every chat completion.
pub const MOCK_CREATED: u64 = 1_700_000_000;

/// How long [`Reply::Hang`] waits (unless the server shuts down first).
const HANG_FOR: Duration = Duration::from_secs(3600);

/// Largest request body accepted (bytes).
const MAX_BODY: usize = 64 * 1024 * 1024;

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

/// What the handler parsed from `POST /v1/chat/completions`.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// The whole JSON body, as received (key order preserved).
    pub body: Value,
    /// `body.model`, or `""` when absent or not a string.
    pub model: String,
    /// `(role, content-as-text)` for each entry of `body.messages`. Content given as an array of
    /// parts is flattened to the parts' `text`, joined with `\n`; null or missing content is `""`.
    pub messages: Vec<(String, String)>,
    /// The `Authorization` header value, as received.
    pub authorization: Option<String>,
    /// 1 the first time this exact body (canonical JSON: keys sorted, no whitespace) was seen by
    /// this server, 2 the second time, and so on. Requests answered from the fault queue count.
    /// [`MockServer::clear_journal`] does not reset it; [`MockServer::clear_attempts`] does.
    pub attempt: usize,
}

impl ChatRequest {
    /// Builds a request from a JSON body (attempt 1, no authorization): handy to unit-test
    /// responders without a server.
    pub fn new(body: Value) -> ChatRequest {
        ChatRequest::parse(body, None, 1)
    }

    fn parse(body: Value, authorization: Option<String>, attempt: usize) -> ChatRequest {
        let model = body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let messages = body
            .get("messages")
            .and_then(Value::as_array)
            .map(|msgs| {
                msgs.iter()
                    .map(|m| {
                        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
                        let content = m.get("content").map(content_text).unwrap_or_default();
                        (role.to_owned(), content)
                    })
                    .collect()
            })
            .unwrap_or_default();
        ChatRequest {
            body,
            model,
            messages,
            authorization,
            attempt,
        }
    }

    /// The content of the last message with role `user`, or `""` if there is none.
    pub fn last_user(&self) -> &str {
        self.messages
            .iter()
            .rev()
            .find(|(role, _)| role == "user")
            .map_or("", |(_, content)| content.as_str())
    }

    /// The content of the first message with role `system` (or `developer`, OpenAI's newer name
    /// for it), if any.
    pub fn system(&self) -> Option<&str> {
        self.messages
            .iter()
            .find(|(role, _)| role == "system" || role == "developer")
            .map(|(_, content)| content.as_str())
    }

    /// Total characters of all message contents (the basis of `usage.prompt_tokens`).
    pub fn prompt_chars(&self) -> usize {
        self.messages.iter().map(|(_, c)| c.chars().count()).sum()
    }
}

fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.as_str().or_else(|| p.get("text").and_then(Value::as_str)))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// One scripted reply.
#[derive(Debug, Clone, PartialEq, Eq)]
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

    /// The journal's name for this reply: `"content"`, `"content_with"`, `"status:<code>"`,
    /// `"raw"`, `"hang"` or `"drop"`.
    pub fn kind(&self) -> &'static str {
        match self {
            Reply::Content(_) => "content",
            Reply::ContentWith { .. } => "content_with",
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

/// One chat request served, as recorded in the journal.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalEntry {
    /// When the request arrived (before latency).
    pub at: Instant,
    /// The JSON body; a body that is not valid JSON is recorded as a JSON string of its text.
    pub body: Value,
    /// The `Authorization` header value, as received.
    pub authorization: Option<String>,
    /// [`Reply::kind`] of the reply given.
    pub reply_kind: &'static str,
    /// [`ChatRequest::attempt`] of this request (0 for a body that was not valid JSON).
    pub attempt: usize,
    /// Whether the reply came from the fault queue rather than the responder.
    pub from_fault_queue: bool,
}

struct Shared {
    responder: RwLock<Responder>,
    latency_nanos: AtomicU64,
    faults: Mutex<VecDeque<Reply>>,
    attempts: Mutex<HashMap<String, usize>>,
    journal: Mutex<Vec<JournalEntry>>,
    next_id: AtomicU64,
    answered: AtomicU64,
    stop: watch::Receiver<bool>,
    batch: batch::BatchStore,
}

impl Shared {
    /// How many times this exact body (canonical JSON) has now been seen, this one included:
    /// online and batch requests count together.
    fn next_attempt(&self, body: &Value) -> usize {
        let mut key = String::with_capacity(256);
        canonical_json(body, &mut key);
        let mut attempts = lock(&self.attempts);
        let n = attempts.entry(key).or_insert(0);
        *n += 1;
        *n
    }

    /// The responder in use now.
    fn responder(&self) -> Responder {
        Arc::clone(
            &self
                .responder
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    fn record(&self, entry: JournalEntry) {
        lock(&self.journal).push(entry);
    }

    fn latency(&self) -> Duration {
        Duration::from_nanos(self.latency_nanos.load(Ordering::Relaxed))
    }

    /// Sleeps for `d`, or less if the server shuts down. Returns `false` on shutdown.
    async fn sleep_or_stop(&self, d: Duration) -> bool {
        if d.is_zero() {
            return true;
        }
        let mut stop = self.stop.clone();
        tokio::select! {
            () = tokio::time::sleep(d) => true,
            _ = stop.wait_for(|s| *s) => false,
        }
    }
}

/// Locks a mutex, ignoring poisoning (a panicking responder must not wedge the server).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A running mock server. Dropping it shuts it down gracefully.
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.addr)
            .field("requests", &self.request_count())
            .finish_non_exhaustive()
    }
}

impl MockServer {
    /// Binds `127.0.0.1:0` and starts serving on the current tokio runtime.
    ///
    /// # Panics
    /// If the loopback socket cannot be bound.
    pub async fn start(responder: Responder) -> MockServer {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .expect("cb-mock: cannot bind 127.0.0.1:0");
        let addr = listener
            .local_addr()
            .expect("cb-mock: bound socket has no local address");
        let (stop_tx, stop_rx) = watch::channel(false);
        let shared = Arc::new(Shared {
            responder: RwLock::new(responder),
            latency_nanos: AtomicU64::new(0),
            faults: Mutex::new(VecDeque::new()),
            attempts: Mutex::new(HashMap::new()),
            journal: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1),
            answered: AtomicU64::new(0),
            stop: stop_rx,
            batch: batch::BatchStore::default(),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/chat/completions", post(chat))
            .route("/v1/models", get(models))
            .route("/models", get(models))
            .merge(batch::routes())
            .fallback(not_found)
            .layer(DefaultBodyLimit::max(MAX_BODY))
            .with_state(Arc::clone(&shared));
        let listener = listener.tap_io(|tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::trace!("cb-mock: set_nodelay failed: {e}");
            }
        });
        let (shutdown_tx, shutdown_rx) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = shutdown_rx.await;
                })
                .await;
            if let Err(e) = served {
                tracing::warn!("cb-mock: server on {addr} ended with an error: {e}");
            }
            tracing::debug!("cb-mock: server on {addr} stopped");
        });
        tracing::debug!("cb-mock: listening on http://{addr}/v1");
        MockServer {
            addr,
            shared,
            shutdown: Some(shutdown_tx),
            stop: stop_tx,
            task: Some(task),
        }
    }

    /// `"http://127.0.0.1:PORT/v1"`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The bound socket address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every chat request served (since the last [`MockServer::clear_journal`]), in arrival
    /// order. `GET /v1/models` and unknown routes are not recorded.
    pub fn journal(&self) -> Vec<JournalEntry> {
        lock(&self.shared.journal).clone()
    }

    /// Chat requests answered with a completion (after the latency, so a request cut off by a
    /// shutdown is not counted): what a paying client would have been billed for.
    pub fn answered(&self) -> u64 {
        self.shared.answered.load(Ordering::Relaxed)
    }

    /// The journal's length.
    pub fn request_count(&self) -> usize {
        lock(&self.shared.journal).len()
    }

    /// Empties the journal (attempt counts are kept).
    pub fn clear_journal(&self) {
        lock(&self.shared.journal).clear();
    }

    /// Forgets every body seen, so the next request of any body has attempt 1.
    pub fn clear_attempts(&self) {
        lock(&self.shared.attempts).clear();
    }

    /// A delay added before every chat reply (default zero).
    pub fn set_latency(&self, d: Duration) {
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.shared.latency_nanos.store(nanos, Ordering::Relaxed);
    }

    /// Replaces the responder; requests arriving afterwards use the new one.
    pub fn set_responder(&self, r: Responder) {
        *self
            .shared
            .responder
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = r;
    }

    /// Appends to a FIFO queue: the next chat requests (any body), one each, get these replies
    /// before the responder is consulted.
    pub fn push_faults(&self, faults: impl IntoIterator<Item = Reply>) {
        lock(&self.shared.faults).extend(faults);
    }

    /// How many queued faults are still to be served.
    pub fn pending_faults(&self) -> usize {
        lock(&self.shared.faults).len()
    }

    /// Shuts down and waits until the server task has ended (in-flight hangs and latency waits
    /// are released; open connections are closed).
    pub async fn shutdown(mut self) {
        self.stop().await;
    }

    /// Like [`MockServer::shutdown`], but the server stays readable (journal, counters): an
    /// endpoint that dies in the middle of a build.
    pub async fn stop(&mut self) {
        self.signal_stop();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }

    fn signal_stop(&mut self) {
        self.stop.send_replace(true);
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.signal_stop();
    }
}

async fn chat(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let at = Instant::now();
    let authorization = headers
        .get(header::AUTHORIZATION)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());

    let body: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            let reply = Reply::bad_request(&format!("cb-mock: request body is not JSON: {e}"));
            shared.record(JournalEntry {
                at,
                body: Value::String(String::from_utf8_lossy(&body).into_owned()),
                authorization,
                reply_kind: reply.kind(),
                attempt: 0,
                from_fault_queue: false,
            });
            shared.sleep_or_stop(shared.latency()).await;
            return render(&shared, reply, "", 0).await;
        }
    };

    let attempt = shared.next_attempt(&body);
    let req = ChatRequest::parse(body, authorization, attempt);

    let fault = lock(&shared.faults).pop_front();
    let from_fault_queue = fault.is_some();
    let reply = match fault {
        Some(r) => r,
        None => shared.responder()(&req),
    };
    tracing::trace!(
        model = %req.model,
        attempt,
        kind = reply.kind(),
        from_fault_queue,
        "cb-mock: chat request"
    );
    let prompt_chars = req.prompt_chars();
    let ChatRequest {
        body,
        model,
        authorization,
        ..
    } = req;
    shared.record(JournalEntry {
        at,
        body,
        authorization,
        reply_kind: reply.kind(),
        attempt,
        from_fault_queue,
    });

    if !shared.sleep_or_stop(shared.latency()).await {
        return shutting_down();
    }
    if matches!(reply, Reply::Content(_) | Reply::ContentWith { .. }) {
        shared.answered.fetch_add(1, Ordering::Relaxed);
    }
    render(&shared, reply, &model, prompt_chars).await
}

fn tokens(chars: usize) -> u64 {
    u64::try_from(chars.div_ceil(4)).unwrap_or(u64::MAX)
}

async fn render(shared: &Shared, reply: Reply, model: &str, prompt_chars: usize) -> Response {
    match reply {
        Reply::Content(content) => {
            let usage = Some((tokens(prompt_chars), tokens(content.chars().count())));
            completion(shared, model, &content, "stop", usage)
        }
        Reply::ContentWith {
            content,
            finish_reason,
            usage,
        } => completion(shared, model, &content, &finish_reason, usage),
        Reply::Status {
            code,
            retry_after,
            body,
        } => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut resp = json_response(status, body);
            if let Some(ra) = retry_after {
                match HeaderValue::from_str(&ra) {
                    Ok(v) => {
                        resp.headers_mut().insert(header::RETRY_AFTER, v);
                    }
                    Err(_) => tracing::warn!("cb-mock: invalid Retry-After value {ra:?}"),
                }
            }
            resp
        }
        Reply::RawBody(body) => json_response(StatusCode::OK, body),
        Reply::Hang => {
            shared.sleep_or_stop(HANG_FOR).await;
            shutting_down()
        }
        Reply::Drop => {
            let mut resp = Response::new(Body::new(DroppingBody { sent: false }));
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            resp
        }
    }
}

fn completion(
    shared: &Shared,
    model: &str,
    content: &str,
    finish_reason: &str,
    usage: Option<(u64, u64)>,
) -> Response {
    let obj = completion_json(shared, model, content, finish_reason, usage);
    json_response(StatusCode::OK, obj.to_string())
}

fn completion_json(
    shared: &Shared,
    model: &str,
    content: &str,
    finish_reason: &str,
    usage: Option<(u64, u64)>,
) -> Value {
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
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

fn json_response(status: StatusCode, body: String) -> Response {
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

fn shutting_down() -> Response {
    json_response(
        StatusCode::SERVICE_UNAVAILABLE,
        error_body("cb-mock: server shutting down", "server_error", None),
    )
}

async fn models() -> Response {
    let body = json!({
        "object": "list",
        "data": [{
            "id": MOCK_MODEL,
            "object": "model",
            "created": MOCK_CREATED,
            "owned_by": "cb-mock",
        }],
    });
    json_response(StatusCode::OK, body.to_string())
}

async fn not_found(method: Method, uri: Uri) -> Response {
    json_response(
        StatusCode::NOT_FOUND,
        error_body(
            &format!("cb-mock: no route for {method} {}", uri.path()),
            "invalid_request_error",
            Some("unknown_url"),
        ),
    )
}

/// A body that yields the start of a JSON object, then an I/O error: hyper aborts the
/// connection mid-body.
struct DroppingBody {
    sent: bool,
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

/// Writes `v` as canonical JSON: object keys sorted (by their UTF-8 bytes), no whitespace.
/// Two bodies that differ only in key order or formatting get the same string.
pub fn canonical_json(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_json_string(k, out);
                out.push(':');
                canonical_json(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(v, out);
            }
            out.push(']');
        }
        Value::String(s) => push_json_string(s, out),
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
    }
}

fn push_json_string(s: &str, out: &mut String) {
    // Serializing a &str cannot fail.
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_sorts_keys_recursively() {
        let a: Value =
            serde_json::from_str(r#"{"b": 1, "a": {"y": [1, {"q": 2, "p": "x"}], "x": null}}"#)
                .unwrap();
        let b: Value =
            serde_json::from_str(r#"{"a":{"x":null,"y":[1,{"p":"x","q":2}]},"b":1}"#).unwrap();
        let (mut sa, mut sb) = (String::new(), String::new());
        canonical_json(&a, &mut sa);
        canonical_json(&b, &mut sb);
        assert_eq!(sa, sb);
        assert_eq!(sa, r#"{"a":{"x":null,"y":[1,{"p":"x","q":2}]},"b":1}"#);
        // the output is valid JSON equal to the input
        assert_eq!(serde_json::from_str::<Value>(&sa).unwrap(), a);
    }

    #[test]
    fn chat_request_helpers() {
        let req = ChatRequest::new(json!({
            "model": "m",
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "first"},
                {"role": "assistant", "content": null},
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            ],
            "extra": true,
        }));
        assert_eq!(req.model, "m");
        assert_eq!(req.system(), Some("sys"));
        assert_eq!(req.last_user(), "a\nb");
        assert_eq!(req.messages[2], ("assistant".to_owned(), String::new()));
        assert_eq!(req.attempt, 1);
        let empty = ChatRequest::new(json!({}));
        assert_eq!(empty.last_user(), "");
        assert_eq!(empty.system(), None);
        assert_eq!(empty.model, "");
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
        let Reply::Status { body, .. } = Reply::bad_request("nope") else {
            panic!("not a status")
        };
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["error"]["message"], "nope");
        assert_eq!(v["error"]["type"], "invalid_request_error");
    }
}
