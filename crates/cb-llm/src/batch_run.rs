//! `conflictbench batches run-dir`: an executor for a `--batch-dir` folder, for trying the
//! loop without vLLM or Ray. It answers every input file that has no output file yet against
//! an OpenAI-compatible server and writes the output file as vLLM's `run_batch` does: one
//! line per request, in input order, `{"id", "custom_id", "response": {"status_code",
//! "request_id", "body"}, "error"}`; a request the server refused has its status and no
//! body, the server's error in `error`; one that never got an answer (connection, timeout
//! after the retries) has no response. The file appears under its name only once complete.

use crate::batch_files::{output_path, unanswered, write_whole};
use crate::http::OpenAiHttp;
use crate::{LlmConfig, LlmError};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;

/// What a run of the executor did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunReport {
    pub files: usize,
    pub requests: usize,
    /// Requests whose line carries an error instead of an answer.
    pub errors: usize,
}

/// Answers the pending input files of `dir` against `config.base_url` (with its key,
/// concurrency, timeout and retries); `done` is told each finished file.
pub async fn run_dir(
    dir: &Path,
    config: &LlmConfig,
    done: impl Fn(&Path, usize, usize),
) -> Result<RunReport, LlmError> {
    let http = Arc::new(OpenAiHttp::new(config)?);
    let config = Arc::new(config.clone());
    let cannot_read =
        |p: &Path, e: std::io::Error| LlmError::Config(format!("cannot read {}: {e}", p.display()));
    let mut report = RunReport::default();
    for input in unanswered(dir).map_err(|e| cannot_read(dir, e))? {
        let text = std::fs::read_to_string(&input).map_err(|e| cannot_read(&input, e))?;
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let stem = input
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let gate = Arc::new(tokio::sync::Semaphore::new(config.concurrency.max(1)));
        let mut tasks = tokio::task::JoinSet::new();
        for (i, line) in lines.iter().enumerate() {
            let request: Value = serde_json::from_str(line).map_err(|e| {
                LlmError::Config(format!(
                    "{}:{}: not a batch request: {e}",
                    input.display(),
                    i + 1
                ))
            })?;
            let (http, gate, config) = (Arc::clone(&http), Arc::clone(&gate), Arc::clone(&config));
            let id = format!("{stem}-{}", i + 1);
            tasks.spawn(async move {
                let _slot = gate.acquire_owned().await.expect("executor gate");
                let outcome = answer(&http, &config, &request["body"]).await;
                (i, output_line(&id, &request["custom_id"], outcome))
            });
        }
        let mut out: Vec<Option<(String, bool)>> = vec![None; lines.len()];
        while let Some(done) = tasks.join_next().await {
            let (i, line) = done.map_err(|e| LlmError::Config(format!("executor task: {e}")))?;
            out[i] = Some(line);
        }
        let mut bytes = Vec::new();
        let mut errors = 0;
        for (line, ok) in out.into_iter().flatten() {
            errors += usize::from(!ok);
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
        }
        let output = output_path(&input);
        write_whole(&output, &bytes)?;
        done(&output, lines.len(), errors);
        report.files += 1;
        report.requests += lines.len();
        report.errors += errors;
    }
    Ok(report)
}

/// One request, retried on transient failures as the build's online calls are.
async fn answer(http: &OpenAiHttp, config: &LlmConfig, body: &Value) -> Result<Value, LlmError> {
    let mut attempt = 0;
    loop {
        match http.send_raw(body, config.request_timeout).await {
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
                tokio::time::sleep(wait).await;
            }
            other => return other,
        }
    }
}

/// The output line of one request, and whether it carries an answer.
fn output_line(id: &str, custom_id: &Value, outcome: Result<Value, LlmError>) -> (String, bool) {
    let request_id = format!("{id}-request");
    let (line, ok) = match outcome {
        Ok(body) => (
            json!({"id": id, "custom_id": custom_id,
                "response": {"status_code": 200, "request_id": request_id, "body": body},
                "error": null}),
            true,
        ),
        Err(LlmError::Status { status, body, .. }) => {
            let error = serde_json::from_str::<Value>(&body).unwrap_or(Value::String(body));
            (
                json!({"id": id, "custom_id": custom_id,
                    "response": {"status_code": status, "request_id": request_id, "body": null},
                    "error": error}),
                false,
            )
        }
        Err(e) => (
            json!({"id": id, "custom_id": custom_id, "response": null,
                "error": {"code": "executor_error", "message": e.to_string()}}),
            false,
        ),
    };
    (line.to_string(), ok)
}
