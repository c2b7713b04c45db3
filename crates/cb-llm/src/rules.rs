//! The rules the transports and the batch-file executors share, written once in
//! `scripts/executor-rules.json` (compiled in here, loaded by `scripts/ray-batch.py`): which
//! statuses are retried, which answer refuses a `response_format`, which requests an
//! executor counts as left unanswered by the endpoint, and the ids of an output line.

use serde::Deserialize;
use std::sync::LazyLock;

/// The file's text, as compiled in.
const RULES_JSON: &str = include_str!("../../../scripts/executor-rules.json");

#[derive(Debug, Deserialize)]
pub(crate) struct Rules {
    pub retry: Retry,
    pub form_refusal: FormRefusal,
    pub endpoint_failure: EndpointFailure,
    pub output_line: OutputLine,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Retry {
    pub statuses: Vec<u16>,
    pub from_status: u16,
}

#[derive(Debug, Deserialize)]
pub(crate) struct FormRefusal {
    pub never: Vec<u16>,
    pub mentions: String,
    pub probe_statuses: Vec<u16>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct EndpointFailure {
    pub statuses: Vec<u16>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct OutputLine {
    pub keys: Vec<String>,
    pub response_keys: Vec<String>,
    pub id: String,
    pub request_id: String,
    pub no_answer_code: String,
}

/// The rules, parsed once (the file is checked by this module's tests).
pub(crate) static RULES: LazyLock<Rules> = LazyLock::new(|| {
    serde_json::from_str(RULES_JSON).expect("scripts/executor-rules.json is malformed")
});

impl Retry {
    /// Whether a status is worth another attempt.
    pub fn status(&self, status: u16) -> bool {
        status >= self.from_status || self.statuses.contains(&status)
    }
}

impl FormRefusal {
    /// Whether an answer with this status and body refuses the `response_format` form.
    pub fn refuses(&self, status: u16, body: &str, probing: bool) -> bool {
        if self.never.contains(&status) {
            return false;
        }
        body.to_ascii_lowercase().contains(&self.mentions)
            || (probing && self.probe_statuses.contains(&status))
    }
}

impl OutputLine {
    /// The id of the `n`th line (from 1) of the output of input file `file` (no `.jsonl`).
    pub fn id(&self, file: &str, n: usize) -> String {
        self.id
            .replace("{file}", file)
            .replace("{n}", &n.to_string())
    }

    /// The request id of the line with id `id`.
    pub fn request_id(&self, id: &str) -> String {
        self.request_id.replace("{id}", id)
    }
}

/// Whether an executor's answer with this status (0: none) and body counts as left
/// unanswered by the endpoint: nothing came, a transient status outlived the retries, or the
/// endpoint refused the credentials or knows no such model or path. A refused
/// `response_format` is an answer (the build steps the form down).
pub(crate) fn endpoint_failed(status: u16, body: &str) -> bool {
    if status == 0 {
        return true;
    }
    let failed = RULES.retry.status(status) || RULES.endpoint_failure.statuses.contains(&status);
    failed && !RULES.form_refusal.refuses(status, body, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_rules_parse_and_say_what_the_contract_says() {
        let r = &*RULES;
        for s in [408, 429, 500, 501, 502, 503, 504, 599] {
            assert!(r.retry.status(s), "{s}");
        }
        for s in [200, 400, 401, 403, 404, 409, 422, 425] {
            assert!(!r.retry.status(s), "{s}");
        }
        assert!(r.form_refusal.refuses(400, "bad Response_Format", false));
        assert!(!r.form_refusal.refuses(429, "response_format", true));
        assert!(r.form_refusal.refuses(422, "no", true));
        assert!(!r.form_refusal.refuses(422, "no", false));
        assert_eq!(r.output_line.id("requests-00002", 7), "requests-00002-7");
        assert_eq!(r.output_line.request_id("x-1"), "x-1-request");
        assert_eq!(r.output_line.keys, ["id", "custom_id", "response", "error"]);
        assert!(endpoint_failed(0, "") && endpoint_failed(401, "") && endpoint_failed(503, ""));
        assert!(!endpoint_failed(400, "") && !endpoint_failed(200, ""));
        assert!(!endpoint_failed(500, "response_format is not supported"));
    }

    /// The script's own functions (imported without Ray) decide as the transports do and
    /// write the lines `batches run-dir` writes. Runs wherever `python3` is (a failure under
    /// `CI=true` when it is not).
    #[test]
    #[allow(clippy::print_stderr)] // a skipped test says so
    fn ray_batch_py_reads_the_same_rules() {
        use crate::batch_run::output_line;
        use crate::LlmError;
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/ray-batch.py");
        let cases = [
            (400, "unknown field response_format"),
            (400, "bad"),
            (422, "no"),
            (429, "response_format"),
            (500, "Response_Format refused"),
            (404, "response_format"),
        ];
        let program = format!(
            r#"
import importlib.util, json
spec = importlib.util.spec_from_file_location("ray_batch", {script:?})
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
cases = {cases}
print(json.dumps({{
    "retried": [s for s in range(100, 600) if m.retried(s)],
    "failed": [s for s in range(0, 600) if m.endpoint_failed(s, "")],
    "failed_refusing": [s for s in range(0, 600) if m.endpoint_failed(s, "no response_format")],
    "refuses": [m.refuses_form(s, t) for s, t in cases],
    "lines": [
        m.result_line("requests-00004", 3, "k", 200, '{{"x": [1, "é"]}}'),
        m.result_line("requests-00004", 4, "k", 503, '{{"error": {{"message": "busy"}}}}'),
        m.result_line("requests-00004", 5, "k", 400, "not json"),
        m.result_line("requests-00004", 6, "k", 0, "cannot connect: refused"),
    ],
}}))
"#,
            cases = serde_json::to_string(&cases).unwrap()
        );
        let run = std::process::Command::new("python3")
            .args(["-c", &program])
            .output();
        let out = match run {
            Ok(o) => o,
            Err(e) => {
                assert!(std::env::var("CI").as_deref() != Ok("true"), "python3: {e}");
                eprintln!("skipped: no python3 ({e})");
                return;
            }
        };
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let status = |s: u16, body: &str| LlmError::Status {
            status: s,
            retry_after: None,
            body: body.into(),
        };
        let retried: Vec<u16> = (100..600)
            .filter(|s| status(*s, "").is_retryable())
            .collect();
        let failed: Vec<u16> = (0..600).filter(|s| endpoint_failed(*s, "")).collect();
        let failed_refusing: Vec<u16> = (0..600)
            .filter(|s| endpoint_failed(*s, "no response_format"))
            .collect();
        let refuses: Vec<bool> = cases
            .iter()
            .map(|(s, t)| crate::structured::refuses_form(&status(*s, t), false))
            .collect();
        assert_eq!(got["retried"], serde_json::json!(retried));
        assert_eq!(got["failed"], serde_json::json!(failed));
        assert_eq!(got["failed_refusing"], serde_json::json!(failed_refusing));
        assert_eq!(got["refuses"], serde_json::json!(refuses));
        let lines = [
            output_line(
                "requests-00004-3",
                "k",
                Ok(serde_json::json!({"x": [1, "é"]})),
            ),
            output_line(
                "requests-00004-4",
                "k",
                Err(status(503, r#"{"error": {"message": "busy"}}"#)),
            ),
            output_line("requests-00004-5", "k", Err(status(400, "not json"))),
            output_line(
                "requests-00004-6",
                "k",
                Err(LlmError::Connect("refused".into())),
            ),
        ];
        for (i, (line, _, _)) in lines.iter().enumerate() {
            assert_eq!(got["lines"][i].as_str().unwrap(), line, "line {i}");
        }
    }
}
