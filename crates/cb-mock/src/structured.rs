//! How servers treat `response_format`, emulated around any [`Responder`].
//!
//! [`emulate`] wraps a responder so that the mock answers a request carrying a
//! `response_format` as one kind of real server would ([`StructuredServer`]). Where the server
//! enforces a schema, the wrapped responder's content is kept when it is JSON and otherwise
//! replaced by the smallest instance of the schema ([`minimal_instance`]), the way a
//! grammar-constrained server cannot send anything but JSON.

use crate::{responder, ChatRequest, Reply, Responder};
use serde_json::{json, Map, Value};

/// A kind of server, as far as structured output goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StructuredServer {
    /// OpenAI, vLLM, llama.cpp's `llama-server`, Ollama: enforce `json_schema` (and
    /// `json_object`, with its `schema` when one is given).
    JsonSchema,
    /// llama-cpp-python 0.3.x (`llama_cpp.server`): refuses `json_schema` with HTTP 500 and a
    /// validation body naming `response_format`; enforces `json_object` with a `schema`.
    LlamaCppPython,
    /// Accepts any `response_format` and ignores it.
    Ignores,
    /// Refuses any `response_format` with HTTP 400 naming it.
    Refuses,
}

/// Wraps `inner` so that requests with a `response_format` are treated as `kind` would.
pub fn emulate(kind: StructuredServer, inner: Responder) -> Responder {
    responder(move |req: &ChatRequest| {
        let Some(format) = req.body.get("response_format") else {
            return inner(req);
        };
        let kind_of = format.get("type").and_then(Value::as_str).unwrap_or("");
        let schema = match kind_of {
            "json_schema" => format.pointer("/json_schema/schema").cloned(),
            "json_object" => Some(
                format
                    .get("schema")
                    .cloned()
                    .unwrap_or(json!({"type": "object"})),
            ),
            _ => return inner(req),
        };
        match (kind, kind_of) {
            (StructuredServer::Ignores, _) => inner(req),
            (StructuredServer::Refuses, _) => Reply::Status {
                code: 400,
                retry_after: None,
                body: json!({"error": {
                    "message": "response_format is not supported by this server",
                    "type": "invalid_request_error",
                    "param": "response_format",
                    "code": null,
                }})
                .to_string(),
            },
            (StructuredServer::LlamaCppPython, "json_schema") => Reply::Status {
                code: 500,
                retry_after: None,
                body: llama_cpp_python_refusal(),
            },
            _ => enforce(inner(req), &schema.unwrap_or(json!({}))),
        }
    })
}

/// The body llama-cpp-python 0.3.36 sends back for a `json_schema` response format (HTTP
/// 500), as seen from the real server (its source path left out).
fn llama_cpp_python_refusal() -> String {
    let message = "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), \
                   'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', \
                   'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n    POST /v1/chat/completions";
    json!({"error": {
        "message": message,
        "type": "internal_server_error",
        "param": null,
        "code": null,
    }})
    .to_string()
}

/// Keeps a JSON content; replaces any other content by the schema's smallest instance.
fn enforce(reply: Reply, schema: &Value) -> Reply {
    let constrained = |content: String| {
        if serde_json::from_str::<Value>(&content).is_ok() {
            content
        } else {
            minimal_instance(schema).to_string()
        }
    };
    match reply {
        Reply::Content(c) => Reply::Content(constrained(c)),
        Reply::ContentWith {
            content,
            finish_reason,
            usage,
        } => Reply::ContentWith {
            content: constrained(content),
            finish_reason,
            usage,
        },
        other => other,
    }
}

/// The smallest value a JSON schema accepts, as far as the usual keywords go: `const`,
/// `enum`, `anyOf`/`oneOf`, `type` (objects get their required properties, arrays
/// `minItems` items, strings `minLength` characters, numbers their `minimum`).
pub fn minimal_instance(schema: &Value) -> Value {
    fn go(s: &Value, depth: usize) -> Value {
        if depth > 32 {
            return Value::Null;
        }
        if let Some(c) = s.get("const") {
            return c.clone();
        }
        if let Some(first) = s
            .get("enum")
            .and_then(Value::as_array)
            .and_then(|e| e.first())
        {
            return first.clone();
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(first) = s.get(key).and_then(Value::as_array).and_then(|a| a.first()) {
                return go(first, depth + 1);
            }
        }
        let ty = match s.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(Value::Array(ts)) => ts.first().and_then(Value::as_str).unwrap_or("null"),
            _ => "object",
        };
        let min = |key: &str| s.get(key).and_then(Value::as_u64).unwrap_or(0);
        match ty {
            "object" => {
                let props = s.get("properties").and_then(Value::as_object);
                let mut out = Map::new();
                for name in s
                    .get("required")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    let sub = props.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
                    out.insert(name.to_owned(), go(sub, depth + 1));
                }
                Value::Object(out)
            }
            "array" => {
                let item = go(s.get("items").unwrap_or(&Value::Null), depth + 1);
                Value::Array(vec![item; min("minItems") as usize])
            }
            "string" => Value::String("a".repeat(min("minLength") as usize)),
            "integer" | "number" => s.get("minimum").cloned().unwrap_or(json!(0)),
            "boolean" => Value::Bool(false),
            _ => Value::Null,
        }
    }
    go(schema, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixed;

    fn ask(r: &Responder, format: Option<Value>) -> Reply {
        let mut body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        if let Some(f) = format {
            body["response_format"] = f;
        }
        r(&ChatRequest::new(body))
    }

    #[test]
    fn each_kind_answers_as_its_servers_do() {
        let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
        let as_schema = json!({"type": "json_schema", "json_schema": {"name": "a", "strict": true, "schema": schema}});
        let as_object = json!({"type": "json_object", "schema": schema});
        let prose = || fixed("Hello there!");
        let openai = emulate(StructuredServer::JsonSchema, prose());
        assert_eq!(
            ask(&openai, Some(as_schema.clone())),
            Reply::content("{\"ok\":false}")
        );
        assert_eq!(
            ask(&openai, Some(as_object.clone())),
            Reply::content("{\"ok\":false}")
        );
        assert_eq!(ask(&openai, None), Reply::content("Hello there!"));
        let lcp = emulate(StructuredServer::LlamaCppPython, prose());
        let Reply::Status {
            code: 500, body, ..
        } = ask(&lcp, Some(as_schema.clone()))
        else {
            panic!("llama-cpp-python refuses json_schema")
        };
        assert!(body.contains("response_format"));
        assert_eq!(
            ask(&lcp, Some(as_object.clone())),
            Reply::content("{\"ok\":false}")
        );
        let ignores = emulate(StructuredServer::Ignores, prose());
        assert_eq!(
            ask(&ignores, Some(as_schema.clone())),
            Reply::content("Hello there!")
        );
        let refuses = emulate(StructuredServer::Refuses, prose());
        assert!(matches!(
            ask(&refuses, Some(as_object)),
            Reply::Status { code: 400, .. }
        ));
        assert_eq!(ask(&refuses, None), Reply::content("Hello there!"));
        // JSON from the wrapped responder passes through an enforcing server.
        let json_model = emulate(StructuredServer::JsonSchema, fixed("{\"ok\": true}"));
        assert_eq!(
            ask(&json_model, Some(as_schema)),
            Reply::content("{\"ok\": true}")
        );
    }

    #[test]
    fn minimal_instances_follow_the_schema() {
        let s = json!({
            "type": "object",
            "required": ["list", "kind", "n", "name"],
            "properties": {
                "list": {"type": "array", "minItems": 2, "items": {"type": "string", "minLength": 1}},
                "kind": {"enum": ["x", "y"]},
                "n": {"type": "integer", "minimum": 3},
                "name": {"type": ["string", "null"]},
                "optional": {"type": "string"}
            }
        });
        assert_eq!(
            minimal_instance(&s),
            json!({"list": ["a", "a"], "kind": "x", "n": 3, "name": ""})
        );
    }
}
