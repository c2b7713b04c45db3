//! The unwrappers every validator starts from: the JSON object in an answer
//! ([`extract_json`]) and a text answer without its wrapping ([`clean_text_answer`]).

use serde_json::Value;

/// Strips what models wrap text answers in: code fences, surrounding quotes, a leading
/// label such as `Explanation:`.
pub fn clean_text_answer(s: &str) -> String {
    let mut t = s.trim();
    if let Some(inner) = t.strip_prefix("```") {
        let inner = inner.split_once('\n').map_or(inner, |(_, rest)| rest);
        t = inner.trim_end().strip_suffix("```").unwrap_or(inner).trim();
    }
    for label in ["Explanation:", "Context:", "Answer:", "Negative context:"] {
        // `get`: the label's length may fall inside a multi-byte character of the answer.
        if t.get(..label.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(label))
        {
            t = t[label.len()..].trim();
        }
    }
    let t = t.trim();
    let unquoted = t
        .strip_prefix('"')
        .and_then(|x| x.strip_suffix('"'))
        .filter(|x| !x.contains('"'))
        .unwrap_or(t);
    unquoted.trim().to_owned()
}

/// Finds the JSON object in an answer: the whole text, inside a code fence, or the first
/// balanced `{...}` in prose. A raw line break or tab inside a string, which JSON forbids but
/// grammar-constrained servers send (llama-cpp-python's `json_object` with SmolLM2, see
/// QUALITY.md), is read as its escape, so the answer is judged on its values.
pub fn extract_json(s: &str) -> Option<Value> {
    find_json(s.trim()).or_else(|| find_json(&escape_controls_in_strings(s.trim())))
}

/// `s` with every control character inside a double-quoted string written as its JSON escape.
fn escape_controls_in_strings(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let (mut in_str, mut escaped) = (false, false);
    for c in s.chars() {
        if in_str && !escaped && c.is_control() {
            match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                _ => out.push_str(&format!("\\u{:04x}", c as u32)),
            }
            continue;
        }
        out.push(c);
        match c {
            _ if escaped => escaped = false,
            '\\' if in_str => escaped = true,
            '"' => in_str = !in_str,
            _ => {}
        }
    }
    out
}

fn find_json(t: &str) -> Option<Value> {
    if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(t) {
        return Some(v);
    }
    let bytes = t.as_bytes();
    let mut start = 0;
    while let Some(open) = t[start..].find('{').map(|i| i + start) {
        let mut depth = 0i32;
        let mut in_str = false;
        let mut escaped = false;
        for (i, &b) in bytes.iter().enumerate().skip(open) {
            if in_str {
                match b {
                    _ if escaped => escaped = false,
                    b'\\' => escaped = true,
                    b'"' => in_str = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_str = true,
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        if let Ok(v @ Value::Object(_)) =
                            serde_json::from_str::<Value>(&t[open..=i])
                        {
                            return Some(v);
                        }
                        break;
                    }
                }
                _ => {}
            }
        }
        start = open + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_line_breaks_inside_strings_are_read_as_escapes() {
        // A real SmolLM2 answer under llama-cpp-python's json_object schema (QUALITY.md run):
        // a line break inside a string value.
        let raw = "{ \"options\": [\"first option\" , \"] }\nThe answer to this question should be a string (either either \",\" or \"] }";
        let v = extract_json(raw).expect("parsed");
        let options = v["options"].as_array().unwrap();
        assert_eq!(options[0], "first option");
        assert!(options[1].as_str().unwrap().contains('\n'));
        // Valid JSON and JSON in prose read as before.
        assert_eq!(extract_json("{\"a\": \"x\\ny\"}").unwrap()["a"], "x\ny");
        assert_eq!(extract_json("He said \"hi.\n{\"a\": 1}").unwrap()["a"], 1);
    }

    #[test]
    fn json_is_found_in_fences_and_prose() {
        assert_eq!(extract_json(r#"{"a":1}"#).unwrap()["a"], 1);
        assert_eq!(extract_json("```json\n{\"a\": 2}\n```").unwrap()["a"], 2);
        assert_eq!(
            extract_json("Sure! Here it is: {\"a\": \"}{\"} hope it helps {x}").unwrap()["a"],
            "}{"
        );
        assert!(extract_json("no json here").is_none());
    }

    #[test]
    fn text_answers_are_unwrapped() {
        assert_eq!(
            clean_text_answer("Explanation: \"Banks have doors.\""),
            "Banks have doors."
        );
        assert_eq!(
            clean_text_answer("```\nBanks have doors.\n```"),
            "Banks have doors."
        );
        assert_eq!(clean_text_answer("  plain  "), "plain");
        assert_eq!(clean_text_answer("Akinoshū Kenji"), "Akinoshū Kenji");
    }
}
