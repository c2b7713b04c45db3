//! `conflictbench batches run-dir`: an executor for a `--batch-dir` folder, for trying the
//! loop without vLLM or Ray. It answers every input file that has no output file yet against
//! an OpenAI-compatible server and writes the output file as vLLM's `run_batch` does: one
//! line per request, in input order, `{"id", "custom_id", "response": {"status_code",
//! "request_id", "body"}, "error"}`; a request the server refused has its status and no
//! body, the server's error in `error`; one that never got an answer (connection, timeout
//! after the retries) has no response. The file appears under its name only once complete.
//!
//! It is as strict as `scripts/ray-batch.py` and shares its rules (`crate::rules`): every
//! waiting file is checked line by line before anything is sent (a JSON object, a
//! `custom_id` present and unique in its file, a body that is a chat completion request
//! naming the file's one model); a file none of whose requests got an answer from the
//! endpoint is not written (nothing to import: run the executor again), and the report
//! counts the requests left unanswered so that the caller can fail.
//!
//! A stop ([`Stop`]: the CLI sets it on SIGINT or SIGTERM) sends no request more: those in
//! flight get their answers (no retry), the file in progress is written whole with every
//! request's line (those not sent as unanswered: the build asks them again), the files not
//! begun are left as they are, and the report says so.

use crate::batch_files::{output_path, unanswered, write_whole};
use crate::http::OpenAiHttp;
use crate::rules::{endpoint_failed, RULES};
use crate::{LlmConfig, LlmError};
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a run of the executor did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunReport {
    /// Output files written.
    pub files: usize,
    pub requests: usize,
    /// Requests whose line carries an error instead of an answer (refusals included).
    pub errors: usize,
    /// Requests the endpoint left unanswered (no response, a transient status after the
    /// retries, credentials refused, unknown model or path); the caller should exit non-zero.
    pub unanswered: usize,
    /// Input files left without an output file because none of their requests got an answer.
    pub unwritten: usize,
    /// Input files left as they were because the run was stopped ([`Stop`]): not begun, or
    /// stopped before any of their requests got an answer.
    pub left: Vec<PathBuf>,
}

/// Tells a running executor to stop: no request is sent once it is set, and a request
/// waiting to be retried is not retried.
#[derive(Debug, Default)]
pub struct Stop {
    why: std::sync::OnceLock<String>,
    set: tokio::sync::Notify,
}

impl Stop {
    /// Stops the run, `why` saying by what (the first reason stays).
    pub fn stop(&self, why: &str) {
        let _ = self.why.set(why.to_owned());
        self.set.notify_waiters();
    }

    /// Why the run was stopped, if it was.
    pub fn why(&self) -> Option<&str> {
        self.why.get().map(String::as_str)
    }

    /// Returns once the run is stopped.
    async fn stopped(&self) {
        loop {
            let set = self.set.notified();
            tokio::pin!(set);
            set.as_mut().enable();
            if self.why().is_some() {
                return;
            }
            set.await;
        }
    }
}

/// What became of one input file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReport {
    pub input: PathBuf,
    /// The output file, when it was written.
    pub output: Option<PathBuf>,
    pub requests: usize,
    pub errors: usize,
    pub unanswered: usize,
}

/// One checked request line.
struct Request {
    custom_id: String,
    body: Value,
}

/// Answers the pending input files of `dir` against `config.base_url` (with its key,
/// concurrency, timeout and retries) until `stop` is set; `done` is told each finished file.
/// Every pending file is checked before the first request is sent: a malformed one is a
/// [`LlmError::Config`] naming its file and line.
pub async fn run_dir(
    dir: &Path,
    config: &LlmConfig,
    stop: &Arc<Stop>,
    done: impl Fn(&FileReport),
) -> Result<RunReport, LlmError> {
    if config.concurrency == 0 || config.request_timeout.is_zero() {
        return Err(LlmError::Config(
            "the executor needs a concurrency and a timeout above 0".into(),
        ));
    }
    let inputs = unanswered(dir).map_err(|e| cannot_read(dir, e))?;
    for input in &inputs {
        read_requests(input)?;
    }
    let http = Arc::new(OpenAiHttp::new(config)?);
    let config = Arc::new(config.clone());
    let mut report = RunReport::default();
    let mut inputs = inputs.into_iter();
    for input in inputs.by_ref() {
        if stop.why().is_some() {
            report.left.push(input);
            break;
        }
        let file = answer_file(&input, (&http, &config), stop).await?;
        if file.output.is_none() && stop.why().is_some() {
            // Stopped before any of its requests got an answer: left as it was.
            report.left.push(input);
        }
        done(&file);
        report.files += usize::from(file.output.is_some());
        report.unwritten += usize::from(file.output.is_none());
        report.requests += file.requests;
        report.errors += file.errors;
        report.unanswered += file.unanswered;
    }
    report.left.extend(inputs);
    Ok(report)
}

fn cannot_read(p: &Path, e: impl std::fmt::Display) -> LlmError {
    LlmError::Config(format!("cannot read {}: {e}", p.display()))
}

/// The requests of an input file, each line checked as `scripts/ray-batch.py` checks it; the
/// error names the file and line.
fn read_requests(path: &Path) -> Result<Vec<Request>, LlmError> {
    let bytes = std::fs::read(path).map_err(|e| cannot_read(path, e))?;
    let mut out = Vec::new();
    let (mut seen, mut model) = (HashSet::new(), None::<String>);
    for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
        let bad = |what: String| LlmError::Config(format!("{}:{}: {what}", path.display(), i + 1));
        let Ok(line) = std::str::from_utf8(line) else {
            return Err(bad("not UTF-8 text (is this a batch input file?)".into()));
        };
        if line.trim().is_empty() {
            continue;
        }
        let request = check_line(line, &mut seen, &mut model).map_err(bad)?;
        out.push(request);
    }
    if out.is_empty() {
        return Err(LlmError::Config(format!("{}: no requests", path.display())));
    }
    Ok(out)
}

/// One request line: a JSON object with a `custom_id` not seen before in its file and a body
/// that is a chat completion request naming the file's model.
fn check_line(
    line: &str,
    seen: &mut HashSet<String>,
    model: &mut Option<String>,
) -> Result<Request, String> {
    let v: Value = serde_json::from_str(line).map_err(|e| format!("not JSON ({e})"))?;
    let Value::Object(mut v) = v else {
        return Err("not a JSON object".into());
    };
    let custom_id = match v.get("custom_id") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err("no custom_id".into()),
    };
    if !seen.insert(custom_id.clone()) {
        return Err(format!("custom_id {custom_id} appears twice"));
    }
    let body = v.remove("body").unwrap_or(Value::Null);
    if !body.get("messages").is_some_and(Value::is_array) {
        return Err("the body is not a chat completion request".into());
    }
    let Some(name) = body.get("model").and_then(Value::as_str) else {
        return Err("the body names no model".into());
    };
    match model {
        None => *model = Some(name.to_owned()),
        Some(first) if first != name => {
            return Err(format!(
                "asks model {name}, the file's first request {first}"
            ))
        }
        Some(_) => {}
    }
    Ok(Request { custom_id, body })
}

/// Answers the requests of one input file and writes its output file, unless no request got
/// an answer.
async fn answer_file(
    input: &Path,
    (http, config): (&Arc<OpenAiHttp>, &Arc<LlmConfig>),
    stop: &Arc<Stop>,
) -> Result<FileReport, LlmError> {
    let requests = read_requests(input)?;
    let stem = input.file_stem().unwrap_or_default().to_string_lossy();
    let gate = Arc::new(tokio::sync::Semaphore::new(config.concurrency));
    let mut tasks = tokio::task::JoinSet::new();
    let n = requests.len();
    for (i, request) in requests.into_iter().enumerate() {
        let (http, gate, config) = (Arc::clone(http), Arc::clone(&gate), Arc::clone(config));
        let stop = Arc::clone(stop);
        let id = RULES.output_line.id(&stem, i + 1);
        tasks.spawn(async move {
            let _slot = gate.acquire_owned().await.expect("executor gate");
            let outcome = match stop.why() {
                Some(why) => Err(not_sent(why)),
                None => answer((&http, &config), &request.body, &stop).await,
            };
            (i, output_line(&id, &request.custom_id, outcome))
        });
    }
    let mut out: Vec<Option<(String, u16, bool)>> = vec![None; n];
    while let Some(done) = tasks.join_next().await {
        let (i, line) = done.map_err(|e| LlmError::Config(format!("executor task: {e}")))?;
        out[i] = Some(line);
    }
    let mut file = FileReport {
        input: input.to_owned(),
        output: None,
        requests: n,
        errors: 0,
        unanswered: 0,
    };
    let mut bytes = Vec::new();
    for (line, status, failed) in out.into_iter().flatten() {
        file.errors += usize::from(status != 200);
        file.unanswered += usize::from(failed);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
    }
    if file.unanswered < n {
        let output = output_path(input);
        write_whole(&output, &bytes)?;
        file.output = Some(output);
    }
    Ok(file)
}

/// The error of a request a stopped run did not send.
fn not_sent(why: &str) -> LlmError {
    LlmError::Lost(format!("not sent: the executor was stopped by {why}"))
}

/// One request, retried on transient failures as the build's online calls are, unless the
/// run is stopped meanwhile.
async fn answer(
    (http, config): (&OpenAiHttp, &LlmConfig),
    body: &Value,
    stop: &Stop,
) -> Result<Value, LlmError> {
    let mut attempt = 0;
    loop {
        match http.send_raw(body, config.request_timeout).await {
            // No retry once stopped: the build asks the request again.
            Err(e) if stop.why().is_some() => return Err(e),
            // A refused `response_format` is an answer for the build (it steps the form
            // down), not a failure to retry.
            Err(e)
                if e.is_retryable()
                    && !crate::structured::refuses_form(&e, false)
                    && attempt < config.max_retries =>
            {
                attempt += 1;
                let wait = config.retry_wait(&e, attempt);
                tracing::warn!(attempt, error = %e, "executor: retrying a request");
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    // Stopped while waiting to retry: not sent again.
                    () = stop.stopped() => return Err(e),
                }
            }
            other => return other,
        }
    }
}

/// The output line of one request (keys in the shared rule's order), its status (200: an
/// answer; 0: no response) and whether the endpoint left it unanswered.
pub(crate) fn output_line(
    id: &str,
    custom_id: &str,
    outcome: Result<Value, LlmError>,
) -> (String, u16, bool) {
    let rules = &RULES.output_line;
    let mut failed = false;
    let (status, body, error) = match outcome {
        Ok(body) => (200, body, Value::Null),
        Err(LlmError::Status { status, body, .. }) => {
            failed = endpoint_failed(status, &body);
            let error = serde_json::from_str::<Value>(&body).unwrap_or(Value::String(body));
            (status, Value::Null, error)
        }
        Err(e) => {
            failed = true;
            let mut error = Map::new();
            error.insert("code".into(), rules.no_answer_code.clone().into());
            error.insert("message".into(), e.to_string().into());
            (0, Value::Null, Value::Object(error))
        }
    };
    let response = (status != 0).then(|| {
        let values = [status.into(), rules.request_id(id).into(), body];
        zip_object(&rules.response_keys, values)
    });
    let values = [
        id.into(),
        custom_id.into(),
        response.unwrap_or(Value::Null),
        error,
    ];
    (zip_object(&rules.keys, values).to_string(), status, failed)
}

fn zip_object<const N: usize>(keys: &[String], values: [Value; N]) -> Value {
    Value::Object(keys.iter().cloned().zip(values).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(lines: &[&str]) -> Result<usize, String> {
        let (mut seen, mut model) = (HashSet::new(), None);
        for l in lines {
            check_line(l, &mut seen, &mut model)?;
        }
        Ok(lines.len())
    }

    #[test]
    fn request_lines_are_checked_as_ray_batch_checks_them() {
        let ok = r#"{"custom_id":"a","body":{"model":"m","messages":[]}}"#;
        assert_eq!(check(&[ok]), Ok(1));
        for (lines, says) in [
            (
                vec![r#"{"body":{"model":"m","messages":[]}}"#],
                "no custom_id",
            ),
            (vec![ok, ok], "appears twice"),
            (vec![r#"{"custom_id":"a","body":"oops"}"#], "not a chat"),
            (
                vec![r#"{"custom_id":"a","body":{"messages":[]}}"#],
                "no model",
            ),
            (vec!["[1]"], "not a JSON object"),
            (vec!["{"], "not JSON"),
            (
                vec![
                    ok,
                    r#"{"custom_id":"b","body":{"model":"n","messages":[]}}"#,
                ],
                "asks model n",
            ),
        ] {
            let e = check(&lines).unwrap_err();
            assert!(e.contains(says), "{lines:?}: {e}");
        }
    }

    #[test]
    fn output_lines_follow_the_shared_format() {
        let (line, status, failed) = output_line("f-1", "k", Ok(serde_json::json!({"x": 1})));
        assert_eq!((status, failed), (200, false));
        assert_eq!(
            line,
            r#"{"id":"f-1","custom_id":"k","response":{"status_code":200,"request_id":"f-1-request","body":{"x":1}},"error":null}"#
        );
        let (line, status, failed) =
            output_line("f-2", "k", Err(LlmError::Connect("refused".into())));
        assert_eq!((status, failed), (0, true));
        assert!(line.contains(r#""response":null,"error":{"code":"executor_error""#));
    }
}
