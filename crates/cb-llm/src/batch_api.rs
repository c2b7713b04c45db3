//! The provider's Files and Batch APIs through async-openai: upload an input file, create,
//! poll, list and cancel batches, download result files. Also the JSONL both sides speak.
//! Transient failures (429, 5xx, timeouts, broken connections) are retried with backoff.

use crate::http::{map_error, parse_completion, OpenAiHttp};
use crate::{CachedResponse, LlmConfig, LlmError};
use async_openai::types::files::{CreateFileRequest, FileInput, FilePurpose};
use async_openai::types::InputSource;
use serde_json::{json, Value};
use std::future::Future;

/// A batch as the provider describes it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RemoteBatch {
    pub id: String,
    pub input_file_id: String,
    pub status: String,
    pub output_file_id: Option<String>,
    pub error_file_id: Option<String>,
    pub completed: u64,
    pub failed: u64,
    /// The batch-level errors of a `failed` batch (validation of the input file).
    pub errors: Option<String>,
}

impl RemoteBatch {
    fn from_json(v: &Value) -> Result<Self, LlmError> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let count = |k: &str| v["request_counts"][k].as_u64().unwrap_or(0);
        Ok(Self {
            id: s("id").ok_or_else(|| LlmError::Malformed {
                reason: "a batch without an id".into(),
                raw: v.to_string(),
            })?,
            input_file_id: s("input_file_id").unwrap_or_default(),
            status: s("status").unwrap_or_else(|| "unknown".into()),
            output_file_id: s("output_file_id"),
            error_file_id: s("error_file_id"),
            completed: count("completed"),
            failed: count("failed"),
            errors: v
                .get("errors")
                .filter(|e| !e.is_null())
                .map(Value::to_string),
        })
    }

    /// No further change will come: the result files (if any) are final.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self.status.as_str(),
            "completed" | "failed" | "expired" | "cancelled"
        )
    }
}

/// One line of an output or error file.
#[derive(Debug)]
pub(crate) struct ResultLine {
    /// Its line number in the file, from 1.
    pub line: usize,
    pub custom_id: String,
    /// The model the answer names (`body.model`), when it names one.
    pub model: Option<String>,
    pub outcome: Result<CachedResponse, LlmError>,
}

/// One input line: the exact body an online call sends, under the cache key.
pub(crate) fn input_line(key: &str, body: &Value) -> String {
    json!({"custom_id": key, "method": "POST", "url": "/v1/chat/completions", "body": body})
        .to_string()
}

/// Reads an output or error file (the Batch API's, or vLLM `run_batch`'s: an error line
/// there has a status and no body, its message in `error`) one line at a time, as the
/// lines are taken. A line that cannot be read at all is given as its number and what is
/// wrong with it.
pub(crate) fn parse_results<'a>(
    reader: impl std::io::BufRead + 'a,
    estimate: impl Fn(&str) -> u64 + 'a,
) -> impl Iterator<Item = Result<ResultLine, (usize, String)>> + 'a {
    reader
        .split(b'\n')
        .enumerate()
        .filter_map(move |(i, bytes)| match bytes {
            Err(e) => Some(Err((i + 1, format!("cannot be read: {e}")))),
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                let line = text.strip_suffix('\r').unwrap_or(&text);
                (!line.trim().is_empty()).then(|| parse_line(i + 1, line, &estimate))
            }
        })
}

/// One line (number `n`) of an output or error file.
fn parse_line(
    n: usize,
    line: &str,
    estimate: &dyn Fn(&str) -> u64,
) -> Result<ResultLine, (usize, String)> {
    let Ok(v) = serde_json::from_str::<Value>(line) else {
        return Err((n, "not a JSON object".to_owned()));
    };
    let Some(custom_id) = v["custom_id"].as_str().map(str::to_owned) else {
        return Err((n, "no custom_id".to_owned()));
    };
    let response = &v["response"];
    let status = response["status_code"].as_u64().unwrap_or(0) as u16;
    let said = |x: &Value| match x {
        Value::String(s) => s.clone(),
        b => b.to_string(),
    };
    let outcome = if status == 200 {
        parse_completion(response["body"].clone()).map(|p| {
            let (pt, ct) = p.usage.unwrap_or_else(|| {
                (
                    estimate(&custom_id),
                    crate::request::estimate_tokens(&p.content),
                )
            });
            CachedResponse {
                content: p.content,
                finish_reason: p.finish_reason,
                prompt_tokens: pt,
                completion_tokens: ct,
                raw: p.raw,
            }
        })
    } else if status != 0 {
        Err(LlmError::Status {
            status,
            retry_after: None,
            body: match &response["body"] {
                Value::Null => said(&v["error"]),
                b => said(b),
            },
        })
    } else {
        let e = &v["error"];
        Err(LlmError::Batch {
            code: e["code"].as_str().unwrap_or("unknown").to_owned(),
            message: e["message"].as_str().map_or_else(|| said(e), str::to_owned),
        })
    };
    Ok(ResultLine {
        line: n,
        model: response["body"]["model"].as_str().map(str::to_owned),
        custom_id,
        outcome,
    })
}

/// The calls, each retried on transient failures.
pub(crate) struct BatchApi<'a> {
    http: &'a OpenAiHttp,
    config: &'a LlmConfig,
}

impl<'a> BatchApi<'a> {
    pub fn new(http: &'a OpenAiHttp, config: &'a LlmConfig) -> Self {
        Self { http, config }
    }

    async fn retry<T, F, Fut>(&self, what: &str, f: F) -> Result<T, LlmError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, async_openai::error::OpenAIError>>,
    {
        let mut attempt = 0;
        loop {
            let result = tokio::time::timeout(self.config.request_timeout, f()).await;
            let e = match result {
                Ok(Ok(v)) => return Ok(v),
                Ok(Err(e)) => map_error(e),
                Err(_) => LlmError::Timeout(self.config.request_timeout),
            };
            if !e.is_retryable() || attempt >= self.config.max_retries {
                return Err(e);
            }
            attempt += 1;
            let wait = self.config.retry_wait(&e, attempt);
            tracing::warn!(attempt, wait_ms = wait.as_millis() as u64, error = %e, "retrying batch API call: {what}");
            tokio::time::sleep(wait).await;
        }
    }

    /// Uploads the input file at `path` (purpose `batch`), streamed from the disk under its
    /// own name; returns its id.
    pub async fn upload(&self, path: &std::path::Path) -> Result<String, LlmError> {
        let client = self.http.client()?;
        let v: Value = self
            .retry("upload", || {
                let request = CreateFileRequest {
                    file: FileInput {
                        source: InputSource::Path {
                            path: path.to_path_buf(),
                        },
                    },
                    purpose: FilePurpose::Batch,
                    expires_after: None,
                };
                async move { client.files().create_byot(request).await }
            })
            .await?;
        v["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| LlmError::Malformed {
                reason: "the uploaded file has no id".into(),
                raw: v.to_string(),
            })
    }

    pub async fn create(&self, input_file_id: &str) -> Result<RemoteBatch, LlmError> {
        let body = json!({
            "input_file_id": input_file_id,
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
            "metadata": {"tool": "conflictbench"},
        });
        let client = self.http.client()?;
        let v: Value = self
            .retry("create batch", || {
                let body = body.clone();
                async move { client.batches().create_byot(body).await }
            })
            .await?;
        RemoteBatch::from_json(&v)
    }

    pub async fn retrieve(&self, id: &str) -> Result<RemoteBatch, LlmError> {
        let client = self.http.client()?;
        let v: Value = self
            .retry("retrieve batch", || async move {
                client.batches().retrieve_byot(id).await
            })
            .await?;
        RemoteBatch::from_json(&v)
    }

    pub async fn cancel(&self, id: &str) -> Result<RemoteBatch, LlmError> {
        let client = self.http.client()?;
        let v: Value = self
            .retry("cancel batch", || async move {
                client.batches().cancel_byot(id).await
            })
            .await?;
        RemoteBatch::from_json(&v)
    }

    /// The batch made of this input file, if the provider lists one (a process killed between
    /// creating a batch and recording its id finds it this way).
    pub async fn find_by_input(
        &self,
        input_file_id: &str,
    ) -> Result<Option<RemoteBatch>, LlmError> {
        let client = self.http.client()?;
        let v: Value = self
            .retry("list batches", || async move {
                client.batches().list_byot().await
            })
            .await?;
        let data = v["data"].as_array().cloned().unwrap_or_default();
        for b in data {
            let b = RemoteBatch::from_json(&b)?;
            if b.input_file_id == input_file_id {
                return Ok(Some(b));
            }
        }
        Ok(None)
    }

    pub async fn content(&self, file_id: &str) -> Result<Vec<u8>, LlmError> {
        let client = self.http.client()?;
        let bytes = self
            .retry("download file", || async move {
                client.files().content(file_id).await
            })
            .await?;
        Ok(bytes.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_lines_become_answers_or_provider_errors() {
        let ok = json!({"custom_id": "k1", "response": {"status_code": 200, "body": {
            "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 1}}}});
        let bad = json!({"custom_id": "k2", "response": {"status_code": 400, "body": {"error": {"message": "no"}}}});
        let expired = json!({"custom_id": "k3", "response": null, "error": {"code": "batch_expired", "message": "late"}});
        let text = format!("{ok}\nnot json\n{bad}\n{expired}\n");
        let (lines, unread): (Vec<_>, Vec<_>) =
            parse_results(text.as_bytes(), |_| 0).partition(Result::is_ok);
        assert_eq!(unread[0].as_ref().unwrap_err().0, 2);
        let lines: Vec<ResultLine> = lines.into_iter().map(Result::unwrap).collect();
        assert_eq!(lines.len(), 3);
        assert_eq!((lines[0].line, lines[2].line), (1, 4));
        let a = lines[0].outcome.as_ref().unwrap();
        assert_eq!((a.content.as_str(), a.prompt_tokens), ("hi", 5));
        assert!(matches!(
            lines[1].outcome,
            Err(LlmError::Status { status: 400, .. })
        ));
        let e = lines[2].outcome.as_ref().unwrap_err();
        assert_eq!(e.reason_code(), "batch_expired");
        assert!(e.is_retryable());
    }
}
