//! What each output format needs from the mapped fields (checked at the `map` stage, so a
//! bad mapping is a reject naming the record).

use cb_model::{letter, letter_index, KvItem};
use serde_json::{json, Map, Value};

/// Checks and normalises the mapped fields an output format needs (run at the `map` stage,
/// so a bad mapping is a reject naming the record, not a crash at write time).
pub fn check_mapped(format: &str, fields: &mut Map<String, Value>) -> Result<(), String> {
    match format {
        "kre" => check_kre(fields),
        "kre_rc" => check_kre_rc(fields),
        "recall" => check_recall(fields),
        // The recipe's own rows: what they need is checked along its chain
        // (`Recipe::check_steps`) and where they are written.
        "rows" => Ok(()),
        other => Err(format!("unknown output format '{other}'")),
    }
}

/// KRE commonsense: question, golden context, at least two choices, and the answer as a
/// letter (or index) of one of them, normalised to the letter.
fn check_kre(fields: &mut Map<String, Value>) -> Result<(), String> {
    for key in ["question", "golden_context"] {
        if !fields.get(key).is_some_and(Value::is_string) {
            return Err(format!("field {key} must be a string"));
        }
    }
    let choices = fields
        .get("choices")
        .and_then(Value::as_array)
        .filter(|a| a.len() >= 2 && a.iter().all(Value::is_string))
        .ok_or("field choices must be a list of at least two strings")?;
    let n = choices.len();
    let answer = match fields.get("answer") {
        Some(Value::String(s)) => letter_index(s),
        Some(Value::Number(i)) => i.as_u64().map(|i| i as usize),
        _ => None,
    }
    .filter(|&i| i < n)
    .ok_or_else(|| {
        let got = fields
            .get("answer")
            .map_or("nothing".into(), Value::to_string);
        format!("field answer must be a letter (or index) of one of the {n} choices, not {got}")
    })?;
    fields.insert("answer".into(), json!(letter(answer)));
    Ok(())
}

/// Reading comprehension: the choices are made by the steps (`distractors`), so the map
/// stage only checks what they start from. The written row is the same `KreRow`.
/// `answer_text` may be empty here so that an unanswerable question reaches the recipe's
/// filters (and is counted there) instead of failing the mapping; the `distractors` step
/// rejects an empty answer.
fn check_kre_rc(fields: &Map<String, Value>) -> Result<(), String> {
    for key in ["question", "golden_context"] {
        let text = fields.get(key).and_then(Value::as_str).unwrap_or("");
        if text.trim().is_empty() {
            return Err(format!("field {key} must be a non-empty string"));
        }
    }
    if !fields.get("answer_text").is_some_and(Value::is_string) {
        return Err("field answer_text must be a string".into());
    }
    if !fields
        .get("aliases")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().all(Value::is_string))
    {
        return Err("field aliases must be a list of strings".into());
    }
    Ok(())
}

/// RECALL: a domain on every row, and either a key-value record (EventKG) or a term with
/// its sentences and definition (UJ).
fn check_recall(fields: &Map<String, Value>) -> Result<(), String> {
    if fields
        .get("domain")
        .and_then(Value::as_str)
        .is_none_or(|d| d.trim().is_empty())
    {
        return Err("field domain must be a non-empty string".into());
    }
    if let Some(kv) = fields.get("kv") {
        let items: Vec<KvItem> = serde_json::from_value(kv.clone())
            .map_err(|e| format!("field kv must be a list of {{key, value, kind}} objects: {e}"))?;
        if !items.iter().any(|i| i.kind == "name") {
            return Err("field kv has no item of kind name".into());
        }
        return Ok(());
    }
    for key in ["term", "definition"] {
        if fields
            .get(key)
            .and_then(Value::as_str)
            .is_none_or(|t| t.trim().is_empty())
        {
            return Err(format!(
                "field {key} must be a non-empty string (or give a `kv` record)"
            ));
        }
    }
    if !fields
        .get("sentences")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_string))
    {
        return Err("field sentences must be a non-empty list of strings".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kre_mapping_checks_and_normalises_the_answer() {
        let mut f: Map<String, Value> = serde_json::from_str(
            r#"{"question":"q","golden_context":"g","choices":["a","b"],"answer":1}"#,
        )
        .unwrap();
        check_mapped("kre", &mut f).unwrap();
        assert_eq!(f["answer"], "B");
        f.insert("answer".into(), json!("C"));
        assert!(check_mapped("kre", &mut f).unwrap_err().contains("answer"));
    }

    #[test]
    fn kre_rc_mapping_checks_the_reading_fields() {
        let mut f: Map<String, Value> = serde_json::from_str(
            r#"{"question":"q","golden_context":"g","answer_text":"a","aliases":["a","b"]}"#,
        )
        .unwrap();
        check_mapped("kre_rc", &mut f).unwrap();
        f.insert("aliases".into(), json!("a"));
        assert!(check_mapped("kre_rc", &mut f)
            .unwrap_err()
            .contains("aliases"));
        f.insert("aliases".into(), json!([]));
        f.insert("golden_context".into(), json!(" "));
        assert!(check_mapped("kre_rc", &mut f)
            .unwrap_err()
            .contains("golden_context"));
    }
}
