//! JSON helpers for the messages of every crate that reads JSON (the source readers, the
//! audit): what kind of value was found where another was expected.

use serde_json::Value;

/// The JSON type of a value with its article ("a string", "an object", "null"), for
/// messages such as "expected an object, found an array".
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::type_name;
    use serde_json::json;

    #[test]
    fn each_json_type_is_named_with_its_article() {
        let named: Vec<&str> = [
            json!(null),
            json!(true),
            json!(1.5),
            json!("x"),
            json!([]),
            json!({}),
        ]
        .iter()
        .map(type_name)
        .collect();
        assert_eq!(
            named,
            [
                "null",
                "a boolean",
                "a number",
                "a string",
                "an array",
                "an object"
            ]
        );
    }
}
