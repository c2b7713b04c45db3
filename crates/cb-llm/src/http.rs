//! The `openai` backend: async-openai's client over a reqwest service of our own, so that
//! status codes and `Retry-After` reach the retry logic and nothing retries behind its back.
//! Responses are parsed leniently: unknown `finish_reason` values and extra fields are
//! accepted, content given as a list of parts is joined, and a missing `usage` is estimated.

use crate::{LlmConfig, LlmError};
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use async_openai::Client;
use serde_json::Value;
use std::time::Duration;

/// A non-success HTTP answer, carried through async-openai as a boxed error.
#[derive(Debug, thiserror::Error)]
#[error("HTTP {status}")]
struct HttpStatus {
    status: u16,
    retry_after: Option<Duration>,
    body: String,
}

pub(crate) struct OpenAiHttp {
    base_url: String,
    api_key: crate::config::ApiKey,
    /// Made at the first request: loading the system's certificates takes tens of
    /// milliseconds, which a run answered from the cache need not spend.
    client: std::sync::OnceLock<Client<OpenAIConfig>>,
}

/// What a successful answer carried.
pub(crate) struct Parsed {
    pub content: String,
    pub finish_reason: String,
    pub usage: Option<(u64, u64)>,
    pub raw: String,
}

impl OpenAiHttp {
    pub(crate) fn new(config: &LlmConfig) -> Result<Self, LlmError> {
        Ok(Self {
            base_url: config.base_url.trim_end_matches('/').to_owned(),
            api_key: config.api_key.clone(),
            client: std::sync::OnceLock::new(),
        })
    }

    /// The client, made at the first request.
    pub(crate) fn client(&self) -> Result<&Client<OpenAIConfig>, LlmError> {
        if let Some(c) = self.client.get() {
            return Ok(c);
        }
        let http = reqwest::Client::builder()
            .build()
            .map_err(|e| LlmError::Config(format!("cannot build the HTTP client: {e}")))?;
        let service = tower::service_fn(move |factory: HttpRequestFactory| {
            let http = http.clone();
            async move {
                let request = factory.build().await?;
                let response = http.execute(request).await.map_err(OpenAIError::Reqwest)?;
                let status = response.status();
                if status.is_success() {
                    return Ok(response);
                }
                let retry_after = retry_after(response.headers());
                let body = response.text().await.unwrap_or_default();
                Err(OpenAIError::Boxed(Box::new(HttpStatus {
                    status: status.as_u16(),
                    retry_after,
                    body,
                })))
            }
        });
        let cfg = OpenAIConfig::new()
            .with_api_base(&self.base_url)
            .with_api_key(self.api_key.expose());
        let client = Client::with_config(cfg).with_http_service(service);
        // Two first requests at once make two clients; one is kept.
        Ok(self.client.get_or_init(|| client))
    }

    pub(crate) async fn send(&self, body: &Value, timeout: Duration) -> Result<Parsed, LlmError> {
        parse_completion(self.send_raw(body, timeout).await?)
    }

    /// The server's JSON answer to a chat completion request, as it came.
    pub(crate) async fn send_raw(
        &self,
        body: &Value,
        timeout: Duration,
    ) -> Result<Value, LlmError> {
        let chat = self.client()?.chat();
        let call = chat.create_byot::<&Value, Value>(body);
        match tokio::time::timeout(timeout, call).await {
            Err(_) => Err(LlmError::Timeout(timeout)),
            Ok(Err(e)) => Err(map_error(e)),
            Ok(Ok(v)) => Ok(v),
        }
    }
}

pub(crate) fn map_error(e: OpenAIError) -> LlmError {
    match e {
        OpenAIError::Boxed(b) => match b.downcast::<HttpStatus>() {
            Ok(s) => LlmError::Status {
                status: s.status,
                retry_after: s.retry_after,
                body: s.body,
            },
            Err(other) => match other.downcast::<OpenAIError>() {
                Ok(inner) => map_error(*inner),
                Err(other) => LlmError::Connection(other.to_string()),
            },
        },
        OpenAIError::Reqwest(e) if e.is_timeout() => LlmError::Timeout(Duration::ZERO),
        // No connection at all (refused, unknown host): the innermost cause says which.
        OpenAIError::Reqwest(e) if e.is_connect() => LlmError::Connect(root_cause(&e)),
        // Connection refused, reset, or the body broke off mid-way. reqwest's messages hold
        // the URL but never the headers, so the key cannot leak through them.
        OpenAIError::Reqwest(e) => LlmError::Connection(error_chain(&e)),
        OpenAIError::JSONDeserialize(err, raw) => LlmError::Malformed {
            reason: format!("not JSON: {err}"),
            raw,
        },
        OpenAIError::ApiError(api) => LlmError::Status {
            status: api.status_code.as_u16(),
            retry_after: None,
            body: api.api_error.message,
        },
        other => LlmError::Connection(other.to_string()),
    }
}

fn root_cause(e: &dyn std::error::Error) -> String {
    let mut last = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        last = inner.to_string();
        src = inner.source();
    }
    last
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

/// `Retry-After` in seconds or as an HTTP date; else OpenAI's `x-ratelimit-reset-*`
/// headers (`"1s"`, `"6m0s"`, `"250ms"`), the longer of the two.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(v) = get("retry-after-ms") {
        if let Ok(ms) = v.parse::<f64>() {
            return Some(Duration::from_secs_f64(ms.max(0.0) / 1000.0));
        }
    }
    if let Some(v) = get("retry-after") {
        if let Ok(secs) = v.parse::<f64>() {
            return Some(Duration::from_secs_f64(secs.max(0.0)));
        }
        if let Some(d) = http_date_delay(v) {
            return Some(d);
        }
    }
    ["x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"]
        .iter()
        .filter_map(|h| get(h).and_then(parse_go_duration))
        .max()
}

/// Parses durations like `1s`, `6m0s`, `250ms`, `1h2m3.5s`.
fn parse_go_duration(s: &str) -> Option<Duration> {
    let mut total = 0.0f64;
    let mut num = String::new();
    let mut chars = s.chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            num.push(c);
            continue;
        }
        let value: f64 = num.parse().ok()?;
        num.clear();
        let unit = match c {
            'h' => 3600.0,
            'm' if chars.peek() == Some(&'s') => {
                chars.next();
                0.001
            }
            'm' => 60.0,
            's' => 1.0,
            _ => return None,
        };
        total += value * unit;
        any = true;
    }
    (any && num.is_empty()).then(|| Duration::from_secs_f64(total))
}

/// Seconds from now until an IMF-fixdate such as `Wed, 21 Oct 2015 07:28:00 GMT`.
fn http_date_delay(s: &str) -> Option<Duration> {
    let parts: Vec<&str> = s.split_whitespace().collect();
    if parts.len() != 6 || parts[5] != "GMT" {
        return None;
    }
    let day: i64 = parts[1].parse().ok()?;
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| *m == parts[2])? as i64 + 1;
    let year: i64 = parts[3].parse().ok()?;
    let hms: Vec<i64> = parts[4]
        .split(':')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    if hms.len() != 3 {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let target = days * 86_400 + hms[0] * 3600 + hms[1] * 60 + hms[2];
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_secs() as i64;
    Some(Duration::from_secs(
        u64::try_from(target - now).unwrap_or(0),
    ))
}

/// Reads a chat completion leniently.
pub(crate) fn parse_completion(value: Value) -> Result<Parsed, LlmError> {
    let raw = value.to_string();
    let malformed = |reason: &str| LlmError::Malformed {
        reason: reason.into(),
        raw: raw.clone(),
    };
    if let Some(err) = value.get("error") {
        return Err(LlmError::Malformed {
            reason: format!("error object in a 200 answer: {err}"),
            raw,
        });
    }
    let choice = value
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| malformed("no choices"))?;
    let message = choice
        .get("message")
        .ok_or_else(|| malformed("no message in the first choice"))?;
    let content = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str).or_else(|| p.as_str()))
            .collect::<Vec<_>>()
            .join(""),
        _ => match message.get("refusal").and_then(Value::as_str) {
            Some(r) => r.to_string(),
            None => return Err(malformed("the message has no text content")),
        },
    };
    let finish_reason = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_string();
    let usage = value.get("usage").and_then(|u| {
        Some((
            u.get("prompt_tokens")?.as_u64()?,
            u.get("completion_tokens")?.as_u64()?,
        ))
    });
    Ok(Parsed {
        content,
        finish_reason,
        usage,
        raw,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lenient_parsing_of_real_server_quirks() {
        let p = parse_completion(json!({
            "choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "eos", "logprobs": null}],
            "x_vendor": 1
        }))
        .unwrap();
        assert_eq!(p.content, "hi");
        assert_eq!(p.finish_reason, "eos");
        assert_eq!(p.usage, None);
        let p = parse_completion(json!({
            "choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2}
        }))
        .unwrap();
        assert_eq!(p.content, "ab");
        assert_eq!(p.finish_reason, "unknown");
        assert_eq!(p.usage, Some((3, 2)));
        assert!(matches!(
            parse_completion(json!({"choices": []})),
            Err(LlmError::Malformed { .. })
        ));
    }

    #[test]
    fn retry_after_forms() {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("x-ratelimit-reset-requests", "1m30s".parse().unwrap());
        h.insert("x-ratelimit-reset-tokens", "250ms".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(90)));
        assert_eq!(parse_go_duration("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(parse_go_duration("bogus"), None);
        let past = "Wed, 21 Oct 2015 07:28:00 GMT";
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", past.parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
    }
}
