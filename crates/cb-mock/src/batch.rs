//! The Files and Batch APIs of the mock, close enough to OpenAI's for a client to run a whole
//! batch against it:
//!
//! - `POST /v1/files` (multipart, `purpose` and `file`), `GET /v1/files/{id}`,
//!   `GET /v1/files/{id}/content`;
//! - `POST /v1/batches` (`input_file_id`, `endpoint` `/v1/chat/completions`,
//!   `completion_window`), `GET /v1/batches/{id}`, `POST /v1/batches/{id}/cancel`,
//!   `GET /v1/batches` (newest first).
//!
//! A batch is `in_progress` until [`BatchSettings::completion_delay`] has passed, then it is
//! answered line by line by the server's [`crate::Responder`] (attempts counted with the chat
//! requests', by body):
//! content replies go to the output file, status replies and cut connections to the error
//! file. With [`BatchSettings::expire_after`] a batch ends `expired` having answered only its
//! first N lines; the others are in the error file with code `batch_expired`. A cancelled
//! batch answers nothing (`batch_cancelled`). Every line of every accepted batch is recorded
//! ([`MockServer::batch_submissions`]), so a test can prove no request was submitted twice.
//! Batch requests never reach the chat journal.

use crate::reply::{completion_json, json_response};
use crate::sync::lock;
use crate::{error_body, ChatRequest, Reply, Responder, MOCK_CREATED};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How the mock runs batches.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BatchSettings {
    /// Time from creation until the batch is answered (default zero: done at the first poll).
    pub completion_delay: Duration,
    /// When set, a batch expires at its deadline having answered only its first N lines.
    pub expire_after: Option<usize>,
    /// When set, an uploaded file larger than this many bytes is refused with HTTP 413.
    pub max_file_bytes: Option<usize>,
}

/// One request line of an accepted batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Submission {
    pub batch_id: String,
    pub custom_id: String,
    /// The line's `body`: the chat request as an online call would send it.
    pub body: Value,
}

#[derive(Default)]
pub(crate) struct BatchStore {
    pub(crate) settings: Mutex<BatchSettings>,
    files: Mutex<HashMap<String, StoredFile>>,
    pub(crate) batches: Mutex<BTreeMap<u64, MockBatch>>,
    pub(crate) submissions: Mutex<Vec<Submission>>,
    next: AtomicU64,
}

struct StoredFile {
    purpose: String,
    filename: String,
    bytes: Bytes,
}

pub(crate) struct MockBatch {
    id: String,
    input_file_id: String,
    created: Instant,
    status: &'static str,
    lines: Vec<(String, Value)>,
    output_file_id: Option<String>,
    error_file_id: Option<String>,
    completed: usize,
    failed: usize,
    metadata: Value,
}

/// What the batch routes need of the server they are mounted on: its store of files and
/// batches, and the chat side's responder, attempt count and completion ids (a batch line is
/// answered as the same body sent online would be).
pub(crate) trait Host: Send + Sync + 'static {
    fn store(&self) -> &BatchStore;
    fn responder(&self) -> Responder;
    /// How many times this exact body has now been seen, this one included.
    fn next_attempt(&self, body: &Value) -> usize;
    /// The number of the next `chatcmpl-mock-{id}`.
    fn next_completion_id(&self) -> u64;
}

pub(crate) fn routes<H: Host>() -> Router<Arc<H>> {
    Router::new()
        .route("/v1/files", post(upload::<H>))
        .route("/v1/files/{id}", get(file_info::<H>))
        .route("/v1/files/{id}/content", get(file_content::<H>))
        .route("/v1/batches", post(create::<H>).get(list::<H>))
        .route("/v1/batches/{id}", get(retrieve::<H>))
        .route("/v1/batches/{id}/cancel", post(cancel::<H>))
}

fn invalid(status: StatusCode, msg: &str) -> Response {
    json_response(status, error_body(msg, "invalid_request_error", None))
}

impl BatchStore {
    fn id(&self, prefix: &str) -> (u64, String) {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        (n, format!("{prefix}-mock-{n:06}"))
    }

    fn store_file(&self, purpose: &str, filename: &str, bytes: Bytes) -> Value {
        let (_, id) = self.id("file");
        let info = file_json(&id, purpose, filename, bytes.len());
        lock(&self.files).insert(
            id,
            StoredFile {
                purpose: purpose.to_owned(),
                filename: filename.to_owned(),
                bytes,
            },
        );
        info
    }
}

fn file_json(id: &str, purpose: &str, filename: &str, len: usize) -> Value {
    json!({
        "id": id, "object": "file", "bytes": len, "created_at": MOCK_CREATED,
        "expires_at": null, "filename": filename, "purpose": purpose,
        "status": "processed", "status_details": null,
    })
}

async fn upload<H: Host>(
    State(shared): State<Arc<H>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let boundary = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|ct| ct.split("boundary=").nth(1))
        .map(|b| b.trim_matches('"').to_owned());
    let Some(boundary) = boundary else {
        return invalid(
            StatusCode::BAD_REQUEST,
            "cb-mock: expected multipart/form-data",
        );
    };
    let parts = multipart(&body, &boundary);
    let field = |name: &str| parts.iter().find(|p| p.name == name);
    let (Some(purpose), Some(file)) = (field("purpose"), field("file")) else {
        return invalid(
            StatusCode::BAD_REQUEST,
            "cb-mock: the form needs `purpose` and `file`",
        );
    };
    let limit = lock(&shared.store().settings).max_file_bytes;
    if let Some(max) = limit.filter(|max| file.data.len() > *max) {
        return invalid(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!(
                "file of {} bytes is larger than the {max} bytes allowed",
                file.data.len()
            ),
        );
    }
    let purpose = String::from_utf8_lossy(purpose.data).into_owned();
    let filename = file.filename.clone().unwrap_or_else(|| "upload".into());
    let info = shared
        .store()
        .store_file(&purpose, &filename, body.slice_ref(file.data));
    json_response(StatusCode::OK, info.to_string())
}

async fn file_info<H: Host>(State(shared): State<Arc<H>>, Path(id): Path<String>) -> Response {
    match lock(&shared.store().files).get(&id) {
        Some(f) => json_response(
            StatusCode::OK,
            file_json(&id, &f.purpose, &f.filename, f.bytes.len()).to_string(),
        ),
        None => invalid(StatusCode::NOT_FOUND, &format!("No such File object: {id}")),
    }
}

async fn file_content<H: Host>(State(shared): State<Arc<H>>, Path(id): Path<String>) -> Response {
    let bytes = lock(&shared.store().files)
        .get(&id)
        .map(|f| f.bytes.clone());
    match bytes {
        Some(b) => Response::builder()
            .header(header::CONTENT_TYPE, "application/octet-stream")
            .body(axum::body::Body::from(b))
            .unwrap_or_default(),
        None => invalid(StatusCode::NOT_FOUND, &format!("No such File object: {id}")),
    }
}

async fn create<H: Host>(State(shared): State<Arc<H>>, body: Bytes) -> Response {
    let Ok(req) = serde_json::from_slice::<Value>(&body) else {
        return invalid(StatusCode::BAD_REQUEST, "cb-mock: body is not JSON");
    };
    let file_id = req["input_file_id"].as_str().unwrap_or_default().to_owned();
    if req["endpoint"] != "/v1/chat/completions" || req["completion_window"] != "24h" {
        return invalid(
            StatusCode::BAD_REQUEST,
            "cb-mock: endpoint must be /v1/chat/completions and completion_window 24h",
        );
    }
    let input = lock(&shared.store().files)
        .get(&file_id)
        .map(|f| (f.purpose.clone(), f.bytes.clone()));
    let Some((purpose, bytes)) = input else {
        return invalid(
            StatusCode::NOT_FOUND,
            &format!("No such File object: {file_id}"),
        );
    };
    if purpose != "batch" {
        return invalid(
            StatusCode::BAD_REQUEST,
            "cb-mock: file purpose is not batch",
        );
    }
    let lines = match parse_input(&bytes) {
        Ok(l) => l,
        Err(e) => return invalid(StatusCode::BAD_REQUEST, &e),
    };
    let (n, id) = shared.store().id("batch");
    lock(&shared.store().submissions).extend(lines.iter().map(|(c, b)| Submission {
        batch_id: id.clone(),
        custom_id: c.clone(),
        body: b.clone(),
    }));
    let batch = MockBatch {
        id,
        input_file_id: file_id,
        created: Instant::now(),
        status: "in_progress",
        lines,
        output_file_id: None,
        error_file_id: None,
        completed: 0,
        failed: 0,
        metadata: req.get("metadata").cloned().unwrap_or(Value::Null),
    };
    let out = batch_json(&batch);
    lock(&shared.store().batches).insert(n, batch);
    json_response(StatusCode::OK, out.to_string())
}

/// Reads the input file: one JSON object a line with a unique `custom_id`, `method` POST,
/// `url` `/v1/chat/completions` and a `body`.
fn parse_input(bytes: &[u8]) -> Result<Vec<(String, Value)>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "cb-mock: input is not UTF-8")?;
    let mut seen = HashSet::new();
    let mut lines = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: Value = serde_json::from_str(line)
            .map_err(|e| format!("cb-mock: input line {}: {e}", i + 1))?;
        let custom_id = v["custom_id"].as_str().unwrap_or_default().to_owned();
        if custom_id.is_empty() || !seen.insert(custom_id.clone()) {
            return Err(format!(
                "cb-mock: input line {}: missing or duplicate custom_id",
                i + 1
            ));
        }
        if v["method"] != "POST" || v["url"] != "/v1/chat/completions" || !v["body"].is_object() {
            return Err(format!(
                "cb-mock: input line {}: needs method POST, url /v1/chat/completions and a body",
                i + 1
            ));
        }
        lines.push((custom_id, v["body"].clone()));
    }
    if lines.is_empty() {
        return Err("cb-mock: the input file has no requests".into());
    }
    Ok(lines)
}

fn batch_json(b: &MockBatch) -> Value {
    json!({
        "id": b.id, "object": "batch", "endpoint": "/v1/chat/completions", "errors": null,
        "input_file_id": b.input_file_id, "completion_window": "24h", "status": b.status,
        "output_file_id": b.output_file_id, "error_file_id": b.error_file_id,
        "created_at": MOCK_CREATED,
        "request_counts": {"total": b.lines.len(), "completed": b.completed, "failed": b.failed},
        "metadata": b.metadata,
    })
}

/// Moves a batch on: a cancel becomes final, a batch past its delay is answered.
fn advance<H: Host>(shared: &H, b: &mut MockBatch) {
    let settings = lock(&shared.store().settings).clone();
    match b.status {
        "cancelling" => {
            let errors: Vec<String> = b
                .lines
                .iter()
                .map(|(c, _)| error_line(c, "batch_cancelled", "the batch was cancelled"))
                .collect();
            b.failed = errors.len();
            b.error_file_id = Some(output_file(shared, b, "error", &errors));
            b.status = "cancelled";
        }
        "in_progress" if b.created.elapsed() >= settings.completion_delay => {
            let answer_n = settings.expire_after.unwrap_or(usize::MAX);
            let responder = shared.responder();
            let (mut out, mut err) = (Vec::new(), Vec::new());
            for (i, (custom_id, body)) in b.lines.iter().enumerate() {
                if i >= answer_n {
                    err.push(error_line(custom_id, "batch_expired", "the batch expired"));
                    continue;
                }
                let req = ChatRequest::parse(body.clone(), None, shared.next_attempt(body));
                match answer_line(shared, custom_id, &req, responder(&req)) {
                    Ok(l) => out.push(l),
                    Err(l) => err.push(l),
                }
            }
            b.completed = out.len();
            b.failed = err.len();
            if !out.is_empty() {
                b.output_file_id = Some(output_file(shared, b, "output", &out));
            }
            if !err.is_empty() {
                b.error_file_id = Some(output_file(shared, b, "error", &err));
            }
            b.status = if settings.expire_after.is_some() {
                "expired"
            } else {
                "completed"
            };
        }
        _ => {}
    }
}

fn output_file<H: Host>(shared: &H, b: &MockBatch, kind: &str, lines: &[String]) -> String {
    let mut text = lines.join("\n");
    text.push('\n');
    let info = shared.store().store_file(
        "batch_output",
        &format!("{}_{kind}.jsonl", b.id),
        Bytes::from(text),
    );
    info["id"].as_str().unwrap_or_default().to_owned()
}

/// One output line (`Ok`) or error-file line (`Err`) for a reply.
fn answer_line<H: Host>(
    shared: &H,
    custom_id: &str,
    req: &ChatRequest,
    reply: Reply,
) -> Result<String, String> {
    let usage = |content: &str| {
        Some((
            crate::reply::tokens(req.prompt_chars()),
            crate::reply::tokens(content.chars().count()),
        ))
    };
    let line = |status_code: u16, body: Value| {
        json!({"id": format!("batch_req_{custom_id}"), "custom_id": custom_id,
               "response": {"status_code": status_code, "request_id": custom_id, "body": body}, "error": null})
        .to_string()
    };
    let ok = |body: Value| line(200, body);
    match reply {
        Reply::Content(c) => Ok(ok(completion_json(
            shared.next_completion_id(),
            &req.model,
            &c,
            "stop",
            usage(&c),
        ))),
        Reply::ContentWith {
            content,
            finish_reason,
            usage,
        } => Ok(ok(completion_json(
            shared.next_completion_id(),
            &req.model,
            &content,
            &finish_reason,
            usage,
        ))),
        Reply::WithLogprobs {
            content,
            top_logprobs,
        } => {
            let id = shared.next_completion_id();
            let mut obj = completion_json(id, &req.model, &content, "stop", usage(&content));
            if let Some(n) = crate::reply::logprobs_asked(&req.body) {
                crate::reply::add_logprobs(&mut obj, &top_logprobs, n);
            }
            Ok(ok(obj))
        }
        Reply::RawBody(raw) => Ok(ok(serde_json::from_str(&raw).unwrap_or(Value::String(raw)))),
        Reply::Status { code, body, .. } => Err(line(
            code,
            serde_json::from_str(&body).unwrap_or(Value::String(body)),
        )),
        Reply::Hang | Reply::Drop => Err(error_line(
            custom_id,
            "server_error",
            "cb-mock: the request was not answered",
        )),
    }
}

fn error_line(custom_id: &str, code: &str, message: &str) -> String {
    json!({"id": format!("batch_req_{custom_id}"), "custom_id": custom_id, "response": null,
           "error": {"code": code, "message": message}})
    .to_string()
}

async fn retrieve<H: Host>(State(shared): State<Arc<H>>, Path(id): Path<String>) -> Response {
    let mut batches = lock(&shared.store().batches);
    let Some(b) = batches.values_mut().find(|b| b.id == id) else {
        return invalid(StatusCode::NOT_FOUND, &format!("No such batch: {id}"));
    };
    advance(&*shared, b);
    json_response(StatusCode::OK, batch_json(b).to_string())
}

async fn cancel<H: Host>(State(shared): State<Arc<H>>, Path(id): Path<String>) -> Response {
    let mut batches = lock(&shared.store().batches);
    let Some(b) = batches.values_mut().find(|b| b.id == id) else {
        return invalid(StatusCode::NOT_FOUND, &format!("No such batch: {id}"));
    };
    if b.status == "in_progress" {
        b.status = "cancelling";
    }
    json_response(StatusCode::OK, batch_json(b).to_string())
}

async fn list<H: Host>(State(shared): State<Arc<H>>) -> Response {
    let mut batches = lock(&shared.store().batches);
    let data: Vec<Value> = batches
        .values_mut()
        .rev()
        .map(|b| {
            advance(&*shared, b);
            batch_json(b)
        })
        .collect();
    let body = json!({
        "object": "list",
        "first_id": data.first().map(|b| b["id"].clone()),
        "last_id": data.last().map(|b| b["id"].clone()),
        "has_more": false,
        "data": data,
    });
    json_response(StatusCode::OK, body.to_string())
}

struct Part<'a> {
    name: String,
    filename: Option<String>,
    data: &'a [u8],
}

/// Splits a `multipart/form-data` body into its parts.
fn multipart<'a>(body: &'a [u8], boundary: &str) -> Vec<Part<'a>> {
    let delim = format!("--{boundary}");
    let mut parts = Vec::new();
    let mut rest = body;
    while let Some(start) = find(rest, delim.as_bytes()) {
        rest = &rest[start + delim.len()..];
        if rest.starts_with(b"--") {
            break;
        }
        let Some(end) = find(rest, delim.as_bytes()) else {
            break;
        };
        let part = &rest[..end];
        let Some(h) = find(part, b"\r\n\r\n") else {
            continue;
        };
        let headers = String::from_utf8_lossy(&part[..h]);
        let data = &part[h + 4..];
        let data = data.strip_suffix(b"\r\n").unwrap_or(data);
        let attr = |key: &str| {
            let pat = format!("{key}=\"");
            headers
                .split(&pat)
                .nth(1)
                .and_then(|s| s.split('"').next())
                .map(str::to_owned)
        };
        parts.push(Part {
            name: attr("name").unwrap_or_default(),
            filename: attr("filename"),
            data,
        });
        rest = &rest[end..];
    }
    parts
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let first = *needle.first()?;
    let mut i = 0;
    while i + needle.len() <= hay.len() {
        match hay[i..].iter().position(|&b| b == first) {
            Some(p) if i + p + needle.len() <= hay.len() => {
                if &hay[i + p..i + p + needle.len()] == needle {
                    return Some(i + p);
                }
                i += p + 1;
            }
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipart_parts_and_input_validation() {
        let body = b"--XY\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--XY\r\nContent-Disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\nContent-Type: application/octet-stream\r\n\r\n{\"a\":1}\n\r\n--XY--\r\n";
        let parts = multipart(body, "XY");
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].name, "purpose");
        assert_eq!(parts[0].data, b"batch");
        assert_eq!(parts[1].filename.as_deref(), Some("in.jsonl"));
        assert_eq!(parts[1].data, b"{\"a\":1}\n");
        let line = |id: &str| {
            json!({"custom_id": id, "method": "POST", "url": "/v1/chat/completions", "body": {"model": "m"}})
                .to_string()
        };
        assert_eq!(
            parse_input(format!("{}\n{}\n", line("a"), line("b")).as_bytes())
                .unwrap()
                .len(),
            2
        );
        let dup = format!("{}\n{}\n", line("a"), line("a"));
        assert!(parse_input(dup.as_bytes()).unwrap_err().contains("line 2"));
    }
}
