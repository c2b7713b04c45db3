//! The expressions of a recipe (`[fields]`, `[[filter]]`, join keys, `[output.row]`):
//! minijinja expressions evaluated against a JSON context.

use minijinja::{Environment, Value as JValue};
use serde_json::{Map, Value};

/// Evaluates one expression against a JSON context.
///
/// An expression that only names a value (`question`, `cose.open_ended`) whose value is a
/// string, a number, a boolean, null or a list of strings is read straight from the
/// context: the template engine would give the same value back, after copying the whole
/// context into its own values (most recipes' fields are such names; a record went through
/// that copy once per field and pass).
pub fn eval(env: &Environment<'_>, expr: &str, ctx: &Map<String, Value>) -> Result<Value, String> {
    if let Some(v) = plain_lookup(expr, ctx) {
        return Ok(v.clone());
    }
    let compiled = env.compile_expression(expr).map_err(|e| format!("{e:#}"))?;
    let value = compiled
        .eval(JValue::from_serialize(ctx))
        .map_err(|e| format!("{e:#}"))?;
    if value.is_undefined() {
        return Err("undefined".into());
    }
    serde_json::to_value(&value).map_err(|e| e.to_string())
}

/// The value `expr` names when it is a dotted path of plain names (no keyword) and the
/// value is one the template engine gives back unchanged (see [`eval`]); `None` otherwise.
pub(crate) fn plain_lookup<'a>(expr: &str, ctx: &'a Map<String, Value>) -> Option<&'a Value> {
    const KEYWORDS: [&str; 13] = [
        "true", "false", "none", "True", "False", "None", "and", "or", "not", "in", "is", "if",
        "else",
    ];
    let mut names = expr.split('.');
    let plain = |n: &str| {
        let mut c = n.chars();
        c.next()
            .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
            && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
            && !KEYWORDS.contains(&n)
    };
    let first = names.next().filter(|n| plain(n))?;
    let mut v = ctx.get(first)?;
    for n in names {
        if !plain(n) {
            return None;
        }
        v = v.as_object()?.get(n)?;
    }
    let unchanged = match v {
        Value::String(_) | Value::Bool(_) | Value::Null => true,
        Value::Number(n) => n.is_i64() || n.is_u64() || n.as_f64().is_some_and(f64::is_finite),
        Value::Array(a) => a.iter().all(Value::is_string),
        Value::Object(_) => false,
    };
    unchanged.then_some(v)
}
