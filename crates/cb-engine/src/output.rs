//! Output files. Every file is written to a temporary file in the same folder and renamed
//! into place, so a killed build never leaves a half-written file.

use crate::{EngineError, Item};
use cb_model::recall::{Edit, QaRow, TextGenRow};
use cb_model::{letter, letter_index, KreRow, KvItem, Manifest, Reject};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically (temporary file in the same folder, fsync, rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), EngineError> {
    let err = |source| EngineError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(err)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let mut f = std::fs::File::create(&tmp).map_err(err)?;
    f.write_all(bytes).map_err(err)?;
    f.sync_all().map_err(err)?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(err)
}

/// Removes the temporary files (`.NAME.tmp-PID`) that a killed build left in `dir`: those
/// of a process that no longer runs (where `/proc` cannot tell, those of any other process).
/// Returns how many were removed; a folder that does not exist has none.
pub fn remove_stale_temp_files(dir: &Path) -> Result<usize, EngineError> {
    let err = |source| EngineError::Write {
        path: dir.to_path_buf(),
        source,
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(err(e)),
    };
    let own = std::process::id();
    let proc_fs = Path::new("/proc/self").exists();
    let mut removed = 0;
    for entry in entries {
        let path = entry.map_err(err)?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some(pid) = name
            .strip_prefix('.')
            .and_then(|n| n.rsplit_once(".tmp-"))
            .and_then(|(_, pid)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let running = pid == own || (proc_fs && Path::new("/proc").join(pid.to_string()).exists());
        if !running && path.is_file() {
            std::fs::remove_file(&path).map_err(|source| EngineError::Write {
                path: path.clone(),
                source,
            })?;
            tracing::info!(file = %path.display(), "removed a temporary file left by a killed build");
            removed += 1;
        }
    }
    Ok(removed)
}

/// Appends one line to a log file (used for `runs.jsonl`, the one file that grows per run).
pub fn append_line(path: &Path, line: &str) -> Result<(), EngineError> {
    let err = |source| EngineError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(err)?;
    writeln!(f, "{line}").map_err(err)
}

/// JSON with a 4-space indent and non-ASCII as is (the released KRE layout), no final newline.
pub fn to_json_4(v: &impl Serialize) -> Vec<u8> {
    let mut out = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
    v.serialize(&mut ser).expect("serialising to memory");
    out
}

/// One JSON document per line.
pub fn to_jsonl<T: Serialize>(rows: impl IntoIterator<Item = T>) -> Vec<u8> {
    let mut out = Vec::new();
    for r in rows {
        serde_json::to_writer(&mut out, &r).expect("serialising to memory");
        out.push(b'\n');
    }
    out
}

/// Checks and normalises the mapped fields an output format needs (run at the `map` stage,
/// so a bad mapping is a reject naming the record, not a crash at write time).
pub fn check_mapped(format: &str, fields: &mut Map<String, Value>) -> Result<(), String> {
    match format {
        "kre" => {
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
                format!(
                    "field answer must be a letter (or index) of one of the {n} choices, not {got}"
                )
            })?;
            fields.insert("answer".into(), json!(letter(answer)));
            Ok(())
        }
        // Reading comprehension: the choices are made by the steps (`distractors`), so the
        // map stage only checks what they start from. The written row is the same `KreRow`.
        // `answer_text` may be empty here so that an unanswerable question reaches the
        // recipe's filters (and is counted there) instead of failing the mapping; the
        // `distractors` step rejects an empty answer.
        "kre_rc" => {
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
        // RECALL: a domain on every row, and either a key-value record (EventKG) or a term
        // with its sentences and definition (UJ).
        "recall" => {
            if fields
                .get("domain")
                .and_then(Value::as_str)
                .is_none_or(|d| d.trim().is_empty())
            {
                return Err("field domain must be a non-empty string".into());
            }
            if let Some(kv) = fields.get("kv") {
                let items: Vec<KvItem> = serde_json::from_value(kv.clone()).map_err(|e| {
                    format!("field kv must be a list of {{key, value, kind}} objects: {e}")
                })?;
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
        other => Err(format!("unknown output format '{other}'")),
    }
}

/// The files a build of `format` writes, in the manifest's order.
pub fn file_names(format: &str, domain: &str) -> Vec<String> {
    let mut files = match format {
        "recall" => vec![
            "qa_a.jsonl".to_owned(),
            "qa_na.jsonl".into(),
            "text_generation.jsonl".into(),
        ],
        _ => vec![format!("{domain}.json"), format!("{domain}.jsonl")],
    };
    files.extend(["rejects.jsonl", "README.md", "manifest.json"].map(String::from));
    files
}

/// The RECALL rows of a finished item: its QA-A row, its QA-NA rows (word-grained, and
/// sentence-grained where the recipe inserts a sentence) and its text-generation row.
pub fn recall_rows(item: &Item, recipe: &str) -> (QaRow, Vec<QaRow>, TextGenRow) {
    let lineage: Vec<Value> = item
        .calls
        .iter()
        .map(|c| serde_json::to_value(c).expect("lineage serialises"))
        .collect();
    let subject = match item.fields.get("kv") {
        Some(_) => crate::steps::recall::kv(item)
            .into_iter()
            .find(|i| i.kind == "name")
            .map(|i| i.value)
            .unwrap_or_default(),
        None => item.text("term").to_owned(),
    };
    let qa = |task: &str, edit: &str, context_key: &str, edits_key: &str| QaRow {
        id: format!("{recipe}/{}/{edit}", item.id),
        domain: item.text("domain").to_owned(),
        source_id: item.id.clone(),
        origin: item.origin.to_string(),
        subject: subject.clone(),
        task: task.to_owned(),
        edit: edit.to_owned(),
        question: item.text("question").to_owned(),
        answer: item.text("answer").to_owned(),
        edited_answer: item.text("edited_answer").to_owned(),
        answer_key: item.text("answer_key").to_owned(),
        options: item.texts("options"),
        answer_option: item.text("answer_option").to_owned(),
        context: item.text("paragraph").to_owned(),
        edited_context: item.text(context_key).to_owned(),
        edits: item.parsed(edits_key),
        donor_term: if edit == "sentence" {
            item.text("donor_term").to_owned()
        } else {
            String::new()
        },
        lineage: lineage.clone(),
    };
    let qa_a = qa("qa_a", "answer", "qa_a_context", "qa_a_edits");
    let mut qa_na = vec![qa("qa_na", "word", "qa_na_context", "qa_na_edits")];
    if item.fields.contains_key("qa_na_sentence_context") {
        qa_na.push(qa(
            "qa_na",
            "sentence",
            "qa_na_sentence_context",
            "qa_na_sentence_edits",
        ));
    }
    let paragraph = item.text("paragraph");
    let base = TextGenRow {
        id: format!("{recipe}/{}", item.id),
        domain: item.text("domain").to_owned(),
        source_id: item.id.clone(),
        origin: item.origin.to_string(),
        subject: subject.clone(),
        source: Value::Null,
        edited_source: Value::Null,
        target: String::new(),
        edited_key: String::new(),
        edited_words: Vec::new(),
        original_words: Vec::new(),
        aligned: false,
        lineage,
    };
    let tg = match item.fields.get("kv") {
        // EventKG: record -> paragraph; the edited record differs in the answer's item.
        Some(kv) => {
            let original = item.text("answer_value").to_owned();
            let edited = item.text("edited_answer").to_owned();
            TextGenRow {
                source: kv.clone(),
                edited_source: item.fields.get("edited_kv").cloned().unwrap_or(Value::Null),
                target: paragraph.to_owned(),
                edited_key: item.text("answer_key").to_owned(),
                edited_words: vec![edited],
                original_words: vec![original],
                aligned: true,
                ..base
            }
        }
        // UJ: paragraph -> definition; the edited paragraph carries the answer edit and the
        // word-grained edits (combined by the `nonanswer_edit` step).
        None => {
            let edits = item.parsed::<Vec<Edit>>("tg_edits");
            let edited = item.text("tg_edited_source").to_owned();
            let (e, o) = changed_words(&edits);
            TextGenRow {
                source: Value::String(paragraph.to_owned()),
                edited_source: Value::String(edited),
                target: item.text("definition").to_owned(),
                edited_words: e,
                original_words: o,
                ..base
            }
        }
    };
    (qa_a, qa_na, tg)
}

/// The words the edits brought in (E) and the words they took out (O), each once, in
/// order: a word both sides share (an edit of "the upper bound" to "the lower bound" keeps
/// "the" and "bound") is in neither.
pub fn changed_words(edits: &[Edit]) -> (Vec<String>, Vec<String>) {
    let mut e: Vec<String> = Vec::new();
    let mut o: Vec<String> = Vec::new();
    for ed in edits {
        let before = cb_model::text::tokens(&ed.original);
        let after = cb_model::text::tokens(&ed.edited);
        for w in &after {
            if !before.contains(w) && !e.contains(w) {
                e.push(w.clone());
            }
        }
        for w in &before {
            if !after.contains(w) && !o.contains(w) {
                o.push(w.clone());
            }
        }
    }
    (e, o)
}

/// The released-format row of a finished KRE item.
pub fn kre_row(item: &Item) -> KreRow {
    KreRow {
        question: item.text("question").to_owned(),
        answer: item.text("answer").to_owned(),
        negative_answer: item.text("negative_answer").to_owned(),
        candidate: item.text("candidate").to_owned(),
        golden_context: item.text("golden_context").to_owned(),
        negative_context: item.text("negative_context").to_owned(),
        choices: item.texts("choices"),
    }
}

/// The clean JSONL row: the released fields under clean names, plus lineage.
pub fn kre_clean_row(item: &Item, recipe: &str) -> Value {
    let row = kre_row(item);
    json!({
        "id": format!("{recipe}/{}", item.id),
        "source_id": item.id,
        "origin": item.origin.to_string(),
        "question": row.question,
        "choices": row.choices,
        "answer": row.answer,
        "candidate": row.candidate,
        "negative_answer": row.negative_answer,
        "golden_context": row.golden_context,
        "negative_context": row.negative_context,
        "lineage": item.calls,
    })
}

/// Everything a recipe's output folder gets (besides `runs.jsonl`).
pub struct Outputs<'a> {
    pub domain: &'a str,
    pub recipe: &'a str,
    pub items: &'a [Item],
    pub rejects: &'a [Reject],
    pub manifest: &'a Manifest,
    pub card: String,
}

/// Writes the benchmark files of `format`, then the rejects, the card and, last, the
/// manifest.
pub fn write_outputs(format: &str, dir: &Path, o: &Outputs<'_>) -> Result<(), EngineError> {
    if format == "recall" {
        let mut qa_a = Vec::new();
        let mut qa_na = Vec::new();
        let mut tg = Vec::new();
        for item in o.items {
            let (a, na, t) = recall_rows(item, o.recipe);
            qa_a.push(a);
            qa_na.extend(na);
            tg.push(t);
        }
        write_atomic(&dir.join("qa_a.jsonl"), &to_jsonl(&qa_a))?;
        write_atomic(&dir.join("qa_na.jsonl"), &to_jsonl(&qa_na))?;
        write_atomic(&dir.join("text_generation.jsonl"), &to_jsonl(&tg))?;
    } else {
        let release: Vec<KreRow> = o.items.iter().map(kre_row).collect();
        write_atomic(
            &dir.join(format!("{}.json", o.domain)),
            &to_json_4(&release),
        )?;
        write_atomic(
            &dir.join(format!("{}.jsonl", o.domain)),
            &to_jsonl(o.items.iter().map(|i| kre_clean_row(i, o.recipe))),
        )?;
    }
    write_atomic(&dir.join("rejects.jsonl"), &to_jsonl(o.rejects))?;
    write_atomic(&dir.join("README.md"), o.card.as_bytes())?;
    let mut manifest = serde_json::to_vec_pretty(o.manifest).expect("manifest serialises");
    manifest.push(b'\n');
    write_atomic(&dir.join("manifest.json"), &manifest)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

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

    #[test]
    fn release_json_layout_matches_the_published_files() {
        let v = vec![json!({"a": "é"})];
        let s = String::from_utf8(to_json_4(&v)).unwrap();
        assert_eq!(s, "[\n    {\n        \"a\": \"é\"\n    }\n]");
    }
}
