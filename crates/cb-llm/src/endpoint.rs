//! The sentences of the errors that say the endpoint itself is unusable, and the short form
//! of an error body they quote.

use crate::{LlmError, NamedBy};
use serde_json::Value;

/// 401/403 (credentials) and 404 (model or path unknown): the whole build stops. `named_by`
/// says which settings to check.
pub(crate) fn fatal_status(
    e: &LlmError,
    (endpoint, model): (&str, &str),
    named_by: &NamedBy,
    key: &str,
) -> Option<String> {
    let LlmError::Status { status, body, .. } = e else {
        return None;
    };
    let said = short(body, key);
    match status {
        401 | 403 => Some(format!(
            "the endpoint {endpoint} refused the credentials (HTTP {status}: {said}); check OPENAI_API_KEY"
        )),
        404 => Some(format!(
            "the endpoint {endpoint} answered HTTP 404 for model {model} ({said}); check {} and {}",
            named_by.base_url, named_by.model
        )),
        _ => None,
    }
}

/// Every attempt of a call failed to connect; `url_setting` set the endpoint.
pub(crate) fn unreachable(
    e: &LlmError,
    endpoint: &str,
    attempts: u32,
    url_setting: &str,
) -> String {
    let cause = match e {
        LlmError::Connect(c) => c.as_str(),
        _ => "no connection",
    };
    format!(
        "the endpoint {endpoint} cannot be reached ({cause}, {attempts} attempts); check that the server is running and {url_setting}"
    )
}

/// The message of an error body (`error.message`, FastAPI's `detail[].msg`, `message`, or
/// the text itself), on one line, at most 200 characters, with the API key blotted out
/// should a server echo it.
pub(crate) fn short(body: &str, key: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.pointer("/detail/0/msg"))
            .or_else(|| v.get("message"))
            .or_else(|| v.get("detail"))
            .or_else(|| v.get("error"))
            .and_then(Value::as_str)
    });
    let mut s = message
        .unwrap_or(body)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if key.len() >= 4 {
        s = s.replace(key, "***");
    }
    if s.chars().count() > 200 {
        s = s.chars().take(200).collect::<String>() + "...";
    }
    if s.is_empty() {
        "empty body".into()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_bodies_quote_the_message_and_never_the_key() {
        assert_eq!(
            short(
                r#"{"error":{"message":"Incorrect API key provided: sk-secret1"}}"#,
                "sk-secret1"
            ),
            "Incorrect API key provided: ***"
        );
        assert_eq!(
            short(
                r#"{"detail":[{"msg":"Input should be 'text' or 'json_object'"}]}"#,
                ""
            ),
            "Input should be 'text' or 'json_object'"
        );
        assert_eq!(short("  plain\n text ", ""), "plain text");
        assert_eq!(short("", ""), "empty body");
        assert_eq!(short(&"x".repeat(300), "").chars().count(), 203);
    }

    #[test]
    fn only_credentials_and_unknown_models_are_fatal_statuses() {
        let status = |status| LlmError::Status {
            status,
            retry_after: None,
            body: "{}".into(),
        };
        let e = fatal_status(&status(401), ("http://h/v1", "m"), &NamedBy::default(), "").unwrap();
        assert!(
            e.contains("http://h/v1") && e.contains("credentials"),
            "{e}"
        );
        let e = fatal_status(&status(404), ("http://h/v1", "m"), &NamedBy::default(), "").unwrap();
        assert!(e.contains("model m"), "{e}");
        assert_eq!(
            fatal_status(&status(400), ("h", "m"), &NamedBy::default(), ""),
            None
        );
        assert_eq!(
            fatal_status(&status(500), ("h", "m"), &NamedBy::default(), ""),
            None
        );
    }
}
