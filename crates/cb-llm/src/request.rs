//! What a step asks of the model, and the cache key of that request.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::form::Form;

/// Bumped whenever the key derivation or the stored response format changes.
pub const CACHE_FORMAT: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Self {
        Self {
            role: "system".into(),
            content: content.into(),
        }
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: "user".into(),
            content: content.into(),
        }
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        Self {
            role: "assistant".into(),
            content: content.into(),
        }
    }
}

/// The request exactly as sent: messages and every sampling parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    pub temperature: f32,
    pub top_p: Option<f32>,
    pub max_tokens: u32,
    pub seed: Option<u64>,
    /// A JSON schema the answer must follow, sent in the endpoint's form (`--structured`).
    pub response_schema: Option<Value>,
}

impl ChatRequest {
    /// The JSON body sent to `/chat/completions`, with the schema (if any) as OpenAI's
    /// `json_schema` response format.
    pub fn body(&self, model: &str) -> Value {
        self.body_as(model, Form::JsonSchema)
    }

    /// The JSON body sent to `/chat/completions`, with the schema (if any) in `form`.
    pub fn body_as(&self, model: &str, form: Form) -> Value {
        let mut body = json!({
            "model": model,
            "messages": self.messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "stream": false,
        });
        let obj = body.as_object_mut().expect("object literal");
        if let Some(p) = self.top_p {
            obj.insert("top_p".into(), json!(p));
        }
        if let Some(s) = self.seed {
            obj.insert("seed".into(), json!(s));
        }
        if let Some(format) = self
            .response_schema
            .as_ref()
            .and_then(|s| form.response_format(s))
        {
            obj.insert("response_format".into(), format);
        }
        body
    }

    /// The most tokens the call can use: the prompt's rough size and the whole `max_tokens`.
    pub fn estimated_tokens(&self) -> u64 {
        self.estimated_prompt_tokens() + u64::from(self.max_tokens)
    }

    /// A rough prompt size (4 characters a token, plus a few per message).
    pub fn estimated_prompt_tokens(&self) -> u64 {
        self.messages
            .iter()
            .map(|m| estimate_tokens(&m.content) + 4)
            .sum()
    }
}

/// A rough token count of a text: 4 characters a token.
pub fn estimate_tokens(s: &str) -> u64 {
    (s.chars().count() as u64).div_ceil(4)
}

/// One model call of one step for one item.
#[derive(Debug, Clone)]
pub struct Call {
    pub request: ChatRequest,
    /// Prompt template name and content hash: stored beside the response, not in the key.
    pub template: String,
    pub template_hash: String,
    /// The item this call is for (logs and error messages).
    pub item: String,
    /// What the offline backend answers: the step's own rule-based answer.
    pub offline: String,
}

/// The endpoint part of a cache key: scheme, host, port and path of the base URL, without
/// credentials, query or a trailing slash.
pub fn endpoint_identity(base_url: &str) -> String {
    let s = base_url.trim();
    let (scheme, rest) = s.split_once("://").unwrap_or(("", s));
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let rest = rest.trim_end_matches('/');
    if scheme.is_empty() {
        rest.to_lowercase()
    } else {
        format!("{}://{}", scheme.to_lowercase(), rest)
    }
}

/// The cache key of `request` sent with its schema (if any) as `json_schema`.
pub fn cache_key(endpoint: &str, model: &str, request: &ChatRequest) -> String {
    cache_key_as(endpoint, model, request, Form::JsonSchema)
}

/// The cache key: SHA-256 of the canonical JSON of the exact body sent (so the form of
/// structured output is part of it), plus the schema when the form sends none (`off`): the
/// schema shapes what the step accepts even when only the prompt asks for it. A request
/// without a schema has the same key in every form.
pub fn cache_key_as(endpoint: &str, model: &str, request: &ChatRequest, form: Form) -> String {
    let mut canonical = json!({
        "cache_format": CACHE_FORMAT,
        "endpoint": endpoint,
        "request": request.body_as(model, form),
    });
    if let (Form::Off, Some(schema)) = (form, &request.response_schema) {
        canonical["prompt_only_schema"] = schema.clone();
    }
    let mut h = Sha256::new();
    h.update(serde_json::to_vec(&canonical).expect("json"));
    hex::encode(h.finalize())
}

/// A model answer, with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub text: String,
    pub finish_reason: String,
    pub cache_key: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Served from the cache (no upstream call in this run).
    pub cached: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> ChatRequest {
        ChatRequest {
            messages: vec![Message::system("s"), Message::user("u")],
            temperature: 0.0,
            top_p: None,
            max_tokens: 100,
            seed: Some(1),
            response_schema: None,
        }
    }

    #[test]
    fn key_changes_with_every_part_of_the_request() {
        let base = cache_key("http://h/v1", "m", &req());
        assert_eq!(base, cache_key("http://h/v1", "m", &req()));
        assert_ne!(base, cache_key("http://other/v1", "m", &req()));
        assert_ne!(base, cache_key("http://h/v1", "m2", &req()));
        let mut r = req();
        r.messages[0].content = "s2".into();
        assert_ne!(base, cache_key("http://h/v1", "m", &r));
        let mut r = req();
        r.temperature = 0.7;
        assert_ne!(base, cache_key("http://h/v1", "m", &r));
        let mut r = req();
        r.max_tokens = 101;
        assert_ne!(base, cache_key("http://h/v1", "m", &r));
        let mut r = req();
        r.seed = None;
        assert_ne!(base, cache_key("http://h/v1", "m", &r));
        let mut r = req();
        r.response_schema = Some(json!({"type": "object"}));
        assert_ne!(base, cache_key("http://h/v1", "m", &r));
    }

    #[test]
    fn the_form_is_in_the_key_of_a_schema_call_only() {
        let plain = req();
        let keys = |r: &ChatRequest| {
            [Form::JsonSchema, Form::JsonObject, Form::Off].map(|f| cache_key_as("e", "m", r, f))
        };
        let k = keys(&plain);
        assert!(
            k[0] == k[1] && k[1] == k[2],
            "no schema: the form sends nothing"
        );
        let mut with = req();
        with.response_schema = Some(json!({"type": "object"}));
        let k = keys(&with);
        assert!(k[0] != k[1] && k[1] != k[2] && k[0] != k[2]);
        let mut other = req();
        other.response_schema = Some(json!({"type": "array"}));
        assert_ne!(
            k[2],
            keys(&other)[2],
            "prompt-only keys still hold the schema"
        );
        assert_eq!(
            k[0],
            cache_key("e", "m", &with),
            "json-schema keys are the old keys"
        );
    }

    #[test]
    fn endpoint_identity_drops_credentials_query_and_trailing_slash() {
        assert_eq!(
            endpoint_identity("HTTPS://user:secret@api.example.com/v1/?key=abc"),
            "https://api.example.com/v1"
        );
        assert_eq!(
            endpoint_identity("http://127.0.0.1:8000/v1"),
            "http://127.0.0.1:8000/v1"
        );
    }
}
