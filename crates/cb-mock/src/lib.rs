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
mod journal;
pub mod reader_script;
mod reply;
mod request;
mod server;
pub mod stand_in;
pub mod structured;
mod sync;

pub use batch::{BatchSettings, Submission};
pub use journal::{canonical_json, JournalEntry};
pub use reply::{echo, error_body, fixed, responder, Reply, Responder, MOCK_CREATED};
pub use request::ChatRequest;
pub use server::{MockServer, MOCK_MODEL};
