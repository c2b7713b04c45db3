//! JSON schemas of structured answers, in the form OpenAI's strict mode accepts (every
//! property required, no other property allowed); llama.cpp, vLLM and Ollama take the same
//! form. A step declares its schema next to its prompt and validator; the LLM layer decides
//! how to send it (or not) to the endpoint.

use serde_json::{json, Map, Value};

/// `{"type": "string"}`
pub fn string() -> Value {
    json!({"type": "string"})
}

/// An array of `items` with between `min` and `max` elements.
pub fn array(items: Value, min: usize, max: usize) -> Value {
    json!({"type": "array", "items": items, "minItems": min, "maxItems": max})
}

/// An object with exactly these properties, all required, nothing else allowed.
pub fn object(properties: &[(&str, Value)]) -> Value {
    let mut props = Map::new();
    for (k, v) in properties {
        props.insert((*k).to_owned(), v.clone());
    }
    let required: Vec<&str> = properties.iter().map(|(k, _)| *k).collect();
    json!({
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_strict() {
        let s = object(&[("question", string()), ("answer", string())]);
        assert_eq!(s["required"], json!(["question", "answer"]));
        assert_eq!(s["additionalProperties"], json!(false));
        assert_eq!(array(string(), 3, 3)["minItems"], 3);
    }
}
