//! The chat request as the responders see it: [`ChatRequest`], parsed from the JSON body of
//! `POST /v1/chat/completions` (or from a batch line).

use serde_json::Value;

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
    /// [`MockServer::clear_journal`](crate::MockServer::clear_journal) does not reset
    /// it; [`MockServer::clear_attempts`](crate::MockServer::clear_attempts) does.
    pub attempt: usize,
}

impl ChatRequest {
    /// Builds a request from a JSON body (attempt 1, no authorization): handy to unit-test
    /// responders without a server.
    pub fn new(body: Value) -> ChatRequest {
        ChatRequest::parse(body, None, 1)
    }

    pub(crate) fn parse(body: Value, authorization: Option<String>, attempt: usize) -> ChatRequest {
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
    /// The system part and the request proper, joined by newlines: the request proper starts
    /// at the last user turn that is not a repair message ("That answer cannot be used"); the
    /// turns between (a template's worked examples) are left out.
    pub fn request_text(&self) -> String {
        let start = self
            .messages
            .iter()
            .rposition(|(role, c)| role == "user" && !c.starts_with("That answer cannot be used"))
            .unwrap_or(0);
        self.messages
            .iter()
            .enumerate()
            .filter(|(i, (role, _))| *i >= start || role == "system")
            .map(|(_, (_, c))| c.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
}
