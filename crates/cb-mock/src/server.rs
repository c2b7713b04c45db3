//! The server: [`MockServer`] (start, knobs, journal access, shutdown), its shared state (the
//! [`batch::Host`] the batch routes are mounted on), and the routes (chat completions and the
//! rendering of their replies, the model list, the batch routes, the 404 fallback).

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use axum::Router;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::batch::{self, BatchSettings, Host, Submission};
use crate::journal::{Journal, JournalEntry};
use crate::reply::{
    completion_json, error_body, json_response, shutting_down, tokens, DroppingBody, Reply,
    Responder, HANG_FOR,
};
use crate::sync::lock;
use crate::{ChatRequest, MOCK_CREATED};

/// The model id listed by `GET /v1/models`.
pub const MOCK_MODEL: &str = "mock-model";

/// Largest request body accepted (bytes).
const MAX_BODY: usize = 64 * 1024 * 1024;

/// The state the routes share (online chat and batches alike).
pub(crate) struct Shared {
    responder: RwLock<Responder>,
    latency_nanos: AtomicU64,
    faults: Mutex<VecDeque<Reply>>,
    journal: Journal,
    /// The next number for a completion's `chatcmpl-mock-{id}`.
    pub(crate) next_id: AtomicU64,
    answered: AtomicU64,
    stop: watch::Receiver<bool>,
    pub(crate) batch: batch::BatchStore,
}

impl Shared {
    /// How many times this exact body (canonical JSON) has now been seen, this one included:
    /// online and batch requests count together.
    pub(crate) fn next_attempt(&self, body: &Value) -> usize {
        self.journal.next_attempt(body)
    }

    /// The responder in use now.
    pub(crate) fn responder(&self) -> Responder {
        Arc::clone(
            &self
                .responder
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    fn latency(&self) -> Duration {
        Duration::from_nanos(self.latency_nanos.load(Ordering::Relaxed))
    }

    /// Sleeps for `d`, or less if the server shuts down. Returns `false` on shutdown.
    pub(crate) async fn sleep_or_stop(&self, d: Duration) -> bool {
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

impl batch::Host for Shared {
    fn store(&self) -> &batch::BatchStore {
        &self.batch
    }

    fn responder(&self) -> Responder {
        Shared::responder(self)
    }

    fn next_attempt(&self, body: &Value) -> usize {
        Shared::next_attempt(self, body)
    }

    fn next_completion_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }
}

/// A running mock server. Dropping it shuts it down gracefully.
pub struct MockServer {
    addr: SocketAddr,
    pub(crate) shared: Arc<Shared>,
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
            journal: Journal::default(),
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
            .merge(batch::routes::<Shared>())
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
        self.shared.journal.entries()
    }

    /// Chat requests answered with a completion (after the latency, so a request cut off by a
    /// shutdown is not counted): what a paying client would have been billed for.
    pub fn answered(&self) -> u64 {
        self.shared.answered.load(Ordering::Relaxed)
    }

    /// The journal's length.
    pub fn request_count(&self) -> usize {
        self.shared.journal.len()
    }

    /// Empties the journal (attempt counts are kept).
    pub fn clear_journal(&self) {
        self.shared.journal.clear();
    }

    /// Forgets every body seen, so the next request of any body has attempt 1.
    pub fn clear_attempts(&self) {
        self.shared.journal.clear_attempts();
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

impl MockServer {
    /// Changes how batches created from now on (and those not yet answered) are run.
    pub fn set_batch_settings(&self, settings: BatchSettings) {
        *lock(&self.shared.batch.settings) = settings;
    }

    /// Every request line of every batch accepted so far, in submission order.
    pub fn batch_submissions(&self) -> Vec<Submission> {
        lock(&self.shared.batch.submissions).clone()
    }

    /// How many batches were created.
    pub fn batch_count(&self) -> usize {
        lock(&self.shared.batch.batches).len()
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
            shared.journal.record(JournalEntry {
                at,
                body: Value::String(String::from_utf8_lossy(&body).into_owned()),
                authorization,
                reply_kind: reply.kind(),
                attempt: 0,
                from_fault_queue: false,
            });
            shared.sleep_or_stop(shared.latency()).await;
            return render(&shared, reply, ("", 0), None).await;
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
    let asked = crate::reply::logprobs_asked(&req.body);
    let ChatRequest {
        body,
        model,
        authorization,
        ..
    } = req;
    shared.journal.record(JournalEntry {
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
    if matches!(
        reply,
        Reply::Content(_) | Reply::ContentWith { .. } | Reply::WithLogprobs { .. }
    ) {
        shared.answered.fetch_add(1, Ordering::Relaxed);
    }
    render(&shared, reply, (&model, prompt_chars), asked).await
}

/// The response to `reply` for a request of `model` with a prompt of `prompt_chars`
/// characters that asks for `asked` top log-probabilities (if at all).
async fn render(
    shared: &Shared,
    reply: Reply,
    (model, prompt_chars): (&str, usize),
    asked: Option<usize>,
) -> Response {
    match reply {
        Reply::WithLogprobs {
            content,
            top_logprobs,
        } => {
            let usage = Some((tokens(prompt_chars), tokens(content.chars().count())));
            let id = shared.next_completion_id();
            let mut obj = completion_json(id, model, &content, "stop", usage);
            if let Some(n) = asked {
                crate::reply::add_logprobs(&mut obj, &top_logprobs, n);
            }
            json_response(StatusCode::OK, obj.to_string())
        }
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
    let obj = completion_json(
        shared.next_completion_id(),
        model,
        content,
        finish_reason,
        usage,
    );
    json_response(StatusCode::OK, obj.to_string())
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
