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
    /// Ask for the first answer token's N most likely tokens with their log-probabilities
    /// (OpenAI's `logprobs: true, top_logprobs: N`). `None` sends neither field, so every
    /// other request, and its cache key, is what it always was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_logprobs: Option<u8>,
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
        if let Some(n) = self.top_logprobs {
            obj.insert("logprobs".into(), json!(true));
            obj.insert("top_logprobs".into(), json!(n));
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
///
/// The canonical JSON is `{"cache_format", "endpoint", "request": <the body of
/// [`ChatRequest::body_as`]>, "prompt_only_schema"?}` in that key order, numbers as a JSON
/// value holds them (an `f32` widened to `f64`: 0.3 is written `0.30000001192092896`). It is
/// written straight into the hash ([`KeyDoc`]), with no JSON value built first; the tests
/// check it against that value, byte for byte.
pub fn cache_key_as(endpoint: &str, model: &str, request: &ChatRequest, form: Form) -> String {
    let mut h = HashWriter(Sha256::new());
    let doc = KeyDoc {
        endpoint,
        model,
        request,
        form,
    };
    serde_json::to_writer(&mut h, &doc).expect("json");
    hex::encode(h.0.finalize())
}

/// Feeds what is written into a SHA-256.
struct HashWriter(Sha256);

impl std::io::Write for HashWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The document a cache key hashes (see [`cache_key_as`]).
struct KeyDoc<'a> {
    endpoint: &'a str,
    model: &'a str,
    request: &'a ChatRequest,
    form: Form,
}

impl Serialize for KeyDoc<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("cache_format", &CACHE_FORMAT)?;
        m.serialize_entry("endpoint", self.endpoint)?;
        m.serialize_entry("request", &BodyDoc(self))?;
        if let (Form::Off, Some(schema)) = (self.form, &self.request.response_schema) {
            m.serialize_entry("prompt_only_schema", schema)?;
        }
        m.end()
    }
}

/// [`ChatRequest::body_as`]'s body, in its key order and number forms.
struct BodyDoc<'a>(&'a KeyDoc<'a>);

impl Serialize for BodyDoc<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let KeyDoc {
            model,
            request: r,
            form,
            ..
        } = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("model", model)?;
        m.serialize_entry("messages", &r.messages)?;
        m.serialize_entry("temperature", &f64::from(r.temperature))?;
        m.serialize_entry("max_tokens", &r.max_tokens)?;
        m.serialize_entry("stream", &false)?;
        if let Some(p) = r.top_p {
            m.serialize_entry("top_p", &f64::from(p))?;
        }
        if let Some(seed) = r.seed {
            m.serialize_entry("seed", &seed)?;
        }
        if let Some(format) = r
            .response_schema
            .as_ref()
            .and_then(|schema| form.response_format(schema))
        {
            m.serialize_entry("response_format", &format)?;
        }
        if let Some(n) = r.top_logprobs {
            m.serialize_entry("logprobs", &true)?;
            m.serialize_entry("top_logprobs", &n)?;
        }
        m.end()
    }
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
    /// The first answer token's most likely tokens, when the request asked for them
    /// ([`ChatRequest::top_logprobs`]) and the endpoint sent them; `None` otherwise.
    pub top_logprobs: Option<Vec<TopLogprob>>,
}

/// One of the most likely tokens at an answer position, with its natural log-probability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopLogprob {
    pub token: String,
    pub logprob: f64,
}

/// The first answer token's top log-probabilities in a chat completion body
/// (`choices[0].logprobs.content[0].top_logprobs`): `None` when the body has none (an
/// endpoint that ignores the request, or one that was not asked); entries without a token
/// or a finite log-probability are left out.
pub fn top_logprobs_of(body: &Value) -> Option<Vec<TopLogprob>> {
    let top = body
        .get("choices")?
        .get(0)?
        .get("logprobs")?
        .get("content")?
        .get(0)?
        .get("top_logprobs")?
        .as_array()?;
    Some(
        top.iter()
            .filter_map(|t| {
                let token = t.get("token")?.as_str()?.to_owned();
                let logprob = t.get("logprob")?.as_f64().filter(|l| l.is_finite())?;
                Some(TopLogprob { token, logprob })
            })
            .collect(),
    )
}

/// [`top_logprobs_of`] of a stored response body (`raw`); `None` when it is not JSON.
pub fn top_logprobs_in(raw: &str) -> Option<Vec<TopLogprob>> {
    top_logprobs_of(&serde_json::from_str(raw).ok()?)
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
            top_logprobs: None,
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
        let mut r = req();
        r.top_logprobs = Some(20);
        let with = cache_key("http://h/v1", "m", &r);
        assert_ne!(
            base, with,
            "answers with log-probabilities have keys of their own"
        );
        r.top_logprobs = Some(5);
        assert_ne!(with, cache_key("http://h/v1", "m", &r));
    }

    #[test]
    fn log_probabilities_are_asked_only_when_wanted() {
        let body = req().body("m");
        assert!(body.get("logprobs").is_none() && body.get("top_logprobs").is_none());
        assert!(!serde_json::to_string(&req()).unwrap().contains("logprobs"));
        let mut r = req();
        r.top_logprobs = Some(20);
        let body = r.body("m");
        assert_eq!(body["logprobs"], json!(true));
        assert_eq!(body["top_logprobs"], json!(20));
    }

    #[test]
    fn top_logprobs_are_read_from_the_first_answer_token() {
        let body = json!({"choices": [{"message": {"content": "B"}, "logprobs": {"content": [
            {"token": "B", "logprob": -0.1, "top_logprobs": [
                {"token": "B", "logprob": -0.1, "bytes": [66]},
                {"token": " A", "logprob": -2.5},
                {"token": "C", "logprob": null}
            ]},
            {"token": ".", "logprob": -0.01, "top_logprobs": []}
        ]}}]});
        assert_eq!(
            top_logprobs_of(&body).unwrap(),
            [
                TopLogprob {
                    token: "B".into(),
                    logprob: -0.1
                },
                TopLogprob {
                    token: " A".into(),
                    logprob: -2.5
                },
            ]
        );
        let none = json!({"choices": [{"message": {"content": "B"}, "logprobs": null}]});
        assert_eq!(top_logprobs_of(&none), None);
        assert_eq!(top_logprobs_in("not json"), None);
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

    /// The key as the landed version made it: the canonical JSON built as a value, then
    /// serialised and hashed.
    fn value_key(endpoint: &str, model: &str, request: &ChatRequest, form: Form) -> String {
        let mut canonical = json!({
            "cache_format": CACHE_FORMAT,
            "endpoint": endpoint,
            "request": request.body_as(model, form),
        });
        if let (Form::Off, Some(schema)) = (form, &request.response_schema) {
            canonical["prompt_only_schema"] = schema.clone();
        }
        hex::encode(Sha256::digest(serde_json::to_vec(&canonical).unwrap()))
    }

    /// Requests with every optional part set or not, odd numbers and text to escape.
    fn variety() -> Vec<ChatRequest> {
        let mut out = Vec::new();
        for k in 0..48u32 {
            let schema = json!({"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}, "required": ["b", "a"]});
            out.push(ChatRequest {
                messages: vec![
                    Message::system(format!("sys {k} \"quoted\" \\ tab\t é ☃ \u{1F600}")),
                    Message::user("Question: what?\nAnswer with the letter."),
                    Message::assistant(format!("{k}")),
                ][..1 + k as usize % 3]
                    .to_vec(),
                temperature: [0.0, 0.3, 0.7, 1.0, 1e-7, 2.5][k as usize % 6],
                top_p: (k % 4 == 1).then_some(0.9),
                max_tokens: 17 * k,
                seed: (k % 3 != 0).then_some(u64::MAX - u64::from(k)),
                response_schema: (k % 2 == 0).then_some(schema),
                top_logprobs: (k % 5 == 2).then_some(20),
            });
        }
        out
    }

    #[test]
    fn the_streamed_key_is_the_key_of_the_json_value_byte_for_byte() {
        for r in variety() {
            for form in [Form::JsonSchema, Form::JsonObject, Form::Off] {
                for endpoint in ["http://127.0.0.1:8000/v1", "e\"\\x"] {
                    assert_eq!(
                        cache_key_as(endpoint, "m-1", &r, form),
                        value_key(endpoint, "m-1", &r, form),
                        "{r:?} {form:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn fixed_requests_keep_the_keys_the_landed_version_gave_them() {
        // The canonical JSON spelled out: a cache written by any version since the key
        // format began is still hit.
        let mut r = req();
        r.temperature = 0.3;
        r.top_p = Some(0.9);
        let text = r#"{"cache_format":1,"endpoint":"http://h/v1","request":{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}],"temperature":0.30000001192092896,"max_tokens":100,"stream":false,"top_p":0.8999999761581421,"seed":1}}"#;
        assert_eq!(
            cache_key("http://h/v1", "m", &r),
            hex::encode(Sha256::digest(text.as_bytes()))
        );
        // Keys of fixed requests as the landed version (commit 217e665, [`value_key`])
        // computes them.
        let mut with = req();
        with.response_schema = Some(json!({"type": "object", "required": ["ok"]}));
        let keys = [
            cache_key("http://h/v1", "m", &req()),
            cache_key("http://h/v1", "m", &r),
            cache_key_as("e", "m", &with, Form::JsonSchema),
            cache_key_as("e", "m", &with, Form::JsonObject),
            cache_key_as("e", "m", &with, Form::Off),
        ];
        assert_eq!(keys, LANDED_KEYS);
        let landed = [
            value_key("http://h/v1", "m", &req(), Form::JsonSchema),
            value_key("http://h/v1", "m", &r, Form::JsonSchema),
            value_key("e", "m", &with, Form::JsonSchema),
            value_key("e", "m", &with, Form::JsonObject),
            value_key("e", "m", &with, Form::Off),
        ];
        assert_eq!(landed, LANDED_KEYS);
    }

    const LANDED_KEYS: [&str; 5] = [
        "295041b73885417948ed0259eeb745df3735ed62b0d382305885dfaa3e578727",
        "969db9c93ae1047d9d0154dc9625a9755be49af03460088adda1f89810f0a7f5",
        "18751bc211d64cd3a0ed089bef2310e6bf075785a5850fd6ae1b98f255dc6aaf",
        "5bba21eb0e19598670c36b9cb10965c7ae635440fe69dcf327d8d8967b73ca9f",
        "d6cef77374ab07a54233224f5f17f3eadc774b882080dcdbc04458e00544b563",
    ];

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
