//! The record of chat requests: [`JournalEntry`], and the attempt counting by body
//! ([`canonical_json`] is the key, so key order and formatting do not make a new body).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use serde_json::Value;

use crate::sync::lock;

/// One chat request served, as recorded in the journal.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalEntry {
    /// When the request arrived (before latency).
    pub at: Instant,
    /// The JSON body; a body that is not valid JSON is recorded as a JSON string of its text.
    pub body: Value,
    /// The `Authorization` header value, as received.
    pub authorization: Option<String>,
    /// [`Reply::kind`](crate::Reply::kind) of the reply given.
    pub reply_kind: &'static str,
    /// [`ChatRequest::attempt`](crate::ChatRequest::attempt) of this request (0 for a body that
    /// was not valid JSON).
    pub attempt: usize,
    /// Whether the reply came from the fault queue rather than the responder.
    pub from_fault_queue: bool,
}

/// The journal of chat requests served, and how many times each body has been seen. The two
/// are cleared separately ([`Journal::clear`], [`Journal::clear_attempts`]).
#[derive(Debug, Default)]
pub(crate) struct Journal {
    entries: Mutex<Vec<JournalEntry>>,
    attempts: Mutex<HashMap<String, usize>>,
}

impl Journal {
    /// How many times this exact body (canonical JSON) has now been seen, this one included.
    pub(crate) fn next_attempt(&self, body: &Value) -> usize {
        let mut key = String::with_capacity(256);
        canonical_json(body, &mut key);
        let mut attempts = lock(&self.attempts);
        let n = attempts.entry(key).or_insert(0);
        *n += 1;
        *n
    }

    /// Appends an entry.
    pub(crate) fn record(&self, entry: JournalEntry) {
        lock(&self.entries).push(entry);
    }

    /// Every entry, in arrival order.
    pub(crate) fn entries(&self) -> Vec<JournalEntry> {
        lock(&self.entries).clone()
    }

    /// How many entries there are.
    pub(crate) fn len(&self) -> usize {
        lock(&self.entries).len()
    }

    /// Empties the journal (attempt counts are kept).
    pub(crate) fn clear(&self) {
        lock(&self.entries).clear();
    }

    /// Forgets every body seen, so the next request of any body has attempt 1.
    pub(crate) fn clear_attempts(&self) {
        lock(&self.attempts).clear();
    }
}

/// Writes `v` as canonical JSON: object keys sorted (by their UTF-8 bytes), no whitespace.
/// Two bodies that differ only in key order or formatting get the same string.
pub fn canonical_json(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_json_string(k, out);
                out.push(':');
                canonical_json(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(v, out);
            }
            out.push(']');
        }
        Value::String(s) => push_json_string(s, out),
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
    }
}

fn push_json_string(s: &str, out: &mut String) {
    // Serializing a &str cannot fail.
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_sorts_keys_recursively() {
        let a: Value =
            serde_json::from_str(r#"{"b": 1, "a": {"y": [1, {"q": 2, "p": "x"}], "x": null}}"#)
                .unwrap();
        let b: Value =
            serde_json::from_str(r#"{"a":{"x":null,"y":[1,{"p":"x","q":2}]},"b":1}"#).unwrap();
        let (mut sa, mut sb) = (String::new(), String::new());
        canonical_json(&a, &mut sa);
        canonical_json(&b, &mut sb);
        assert_eq!(sa, sb);
        assert_eq!(sa, r#"{"a":{"x":null,"y":[1,{"p":"x","q":2}]},"b":1}"#);
        // the output is valid JSON equal to the input
        assert_eq!(serde_json::from_str::<Value>(&sa).unwrap(), a);
    }
}
