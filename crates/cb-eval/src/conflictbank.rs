//! ConflictBank's evaluation (Su et al., 2024): its settings, and its figures computed from
//! prediction files in the layout its `inference.py` writes, equal to what its own
//! `evaluate.py` prints (the formulas: [`cb_metrics::conflictbank`]).
//!
//! A prediction folder holds one file per setting, `<setting>.json`, each one JSON object a
//! line: `prompt`, `true_label`, `replaced_label`, `uncertain_label` (letters `A`..`D`),
//! `prediction` (the letter chosen) and `prob` (`{"A": p, "B": p, "C": p, "D": p}`, the
//! softmax of the four letters' log-probabilities; optional here). Every file lists the same
//! questions in the same order; `default.json` (no evidence) and `correct.json` (the correct
//! evidence) choose the questions scored in all of them. The files are read line by line:
//! memory holds a byte a question for the two baselines and, while a setting is read, 8 bytes
//! a scored question (its entropy: NumPy's pairwise mean needs them all).
//!
//! Where this differs from `evaluate.py`, it refuses what the script would misread or crash
//! on, naming the file and line: a line that is not a JSON object with letters, a setting
//! file with another number of lines than `default.json` (the script would score
//! misaligned questions), no question scored (the script divides by zero). It reads only
//! the folder's own `*.json` files (the script walks sub-folders too, scoring them against
//! the top folder's baselines).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use cb_audit::AuditError;
use cb_metrics::conflictbank::{entropy, CbAnswer, CbFigures, CbTally};
use serde::Serialize;
use serde_json::Value;

use crate::EvalError;

/// ConflictBank's settings, in its order, then the inter-context settings in the other
/// order (the conflicting evidence first), which ConflictBank's files do not have.
pub const SETTINGS: &[&str] = &[
    "default",
    "correct",
    "misinformation",
    "temporal",
    "semantic",
    "correct_misinformation",
    "correct_temporal",
    "correct_semantic",
    "misinformation_correct",
    "temporal_correct",
    "semantic_correct",
];

/// The conflict causes, each a setting alone and with the correct evidence.
pub const CAUSES: &[&str] = &["misinformation", "temporal", "semantic"];

/// The figures of a prediction folder.
#[derive(Debug, Clone, Serialize)]
pub struct CbResults {
    /// Questions in each file.
    pub questions: usize,
    /// Questions answered with the true object with no evidence, with the correct evidence,
    /// and both (the ones scored).
    pub default_true: usize,
    pub correct_true: usize,
    pub scored: usize,
    /// Each setting's figures, by setting name (the file's stem).
    pub settings: BTreeMap<String, CbFigures>,
}

/// The letter's option index: `A` -> 0 .. `D` -> 3.
pub fn option_index(letter: &str) -> Option<u8> {
    match letter {
        "A" => Some(0),
        "B" => Some(1),
        "C" => Some(2),
        "D" => Some(3),
        _ => None,
    }
}

/// One prediction line read as an answer.
pub fn answer_of(value: &Value) -> Result<CbAnswer, String> {
    let obj = value.as_object().ok_or("not a JSON object")?;
    let label = |key: &str| -> Result<u8, String> {
        let text = obj
            .get(key)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("`{key}` missing or not a string"))?;
        option_index(text).ok_or_else(|| format!("`{key}` is `{text}`, not a letter A to D"))
    };
    let prediction = match obj.get("prediction") {
        Some(Value::String(s)) => option_index(s),
        Some(Value::Null) => None,
        _ => return Err("`prediction` missing or not a string".into()),
    };
    let entropy = match obj.get("prob") {
        None | Some(Value::Null) => None,
        Some(Value::Object(probs)) => {
            let values: Option<Vec<f64>> = probs.values().map(Value::as_f64).collect();
            let values = values.ok_or("`prob` holds a value that is not a number")?;
            if values.iter().any(|p| !(0.0..=1.0).contains(p)) {
                return Err("`prob` holds a value outside 0..1".into());
            }
            Some(entropy(&values))
        }
        Some(_) => return Err("`prob` is not an object of probabilities".into()),
    };
    Ok(CbAnswer {
        prediction,
        true_option: label("true_label")?,
        replaced_option: label("replaced_label")?,
        uncertain_option: label("uncertain_label")?,
        entropy,
    })
}

/// Reads a prediction file line by line, handing each answer to `each`; the number of lines.
pub fn read_predictions(
    path: &Path,
    mut each: impl FnMut(usize, CbAnswer),
) -> Result<usize, EvalError> {
    let shown = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|source| AuditError::Io {
        path: shown.clone(),
        source,
    })?;
    let mut n = 0;
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let parse = |message: String| AuditError::Parse {
            path: shown.clone(),
            location: format!("line {}", i + 1),
            message,
        };
        let line = line.map_err(|e| parse(format!("cannot read: {e}")))?;
        let value: Value =
            serde_json::from_str(&line).map_err(|e| parse(format!("not JSON: {e}")))?;
        each(i, answer_of(&value).map_err(parse)?);
        n = i + 1;
    }
    Ok(n)
}

/// Whether each question of a baseline file was answered with the true object.
fn right_answers(path: &Path) -> Result<Vec<bool>, EvalError> {
    let mut right = Vec::new();
    read_predictions(path, |_, a| right.push(a.is_true()))?;
    Ok(right)
}

/// The figures of every `<setting>.json` of a prediction folder, as `evaluate.py` computes
/// them with that folder as its baseline root.
pub fn evaluate_predictions(dir: &Path) -> Result<CbResults, EvalError> {
    if !dir.is_dir() {
        let what = if dir.exists() {
            "is not a folder"
        } else {
            "does not exist"
        };
        return Err(EvalError::Config(format!(
            "{} {what}: give the folder of prediction files (default.json, correct.json, ...)",
            dir.display()
        )));
    }
    let file = |name: &str| dir.join(format!("{name}.json"));
    for base in ["default", "correct"] {
        if !file(base).is_file() {
            return Err(EvalError::Config(format!(
                "{} has no {base}.json: ConflictBank scores the questions a model gets right with no evidence (default.json) and with the correct evidence (correct.json)",
                dir.display()
            )));
        }
    }
    let default = right_answers(&file("default"))?;
    let correct = right_answers(&file("correct"))?;
    // A question beyond the end of either baseline is not scored, as in evaluate.py.
    let keep: Vec<bool> = default
        .iter()
        .zip(&correct)
        .map(|(d, c)| *d && *c)
        .collect();
    let count = |v: &[bool]| v.iter().filter(|k| **k).count();
    let mut results = CbResults {
        questions: default.len(),
        default_true: count(&default),
        correct_true: count(&correct),
        scored: count(&keep),
        settings: BTreeMap::new(),
    };
    for path in setting_files(dir)? {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut tally = CbTally::default();
        let lines = read_predictions(&path, |i, a| {
            if keep.get(i).copied().unwrap_or(false) {
                tally.add(&a);
            }
        })?;
        if lines != default.len() {
            return Err(EvalError::Config(format!(
                "{} has {lines} lines but default.json {}: every setting lists the same questions in the same order",
                path.display(),
                default.len()
            )));
        }
        let figures = tally.finish().ok_or_else(|| {
            EvalError::Config(format!(
                "{}: no question is answered right both in default.json and in correct.json, so nothing is scored",
                dir.display()
            ))
        })?;
        results.settings.insert(name, figures);
    }
    Ok(results)
}

/// Writes the figures as JSON to `path`, whole (a temporary file beside it, then renamed).
pub fn write_json(path: &Path, results: &CbResults) -> Result<(), EvalError> {
    if path.is_dir() {
        return Err(EvalError::Config(format!(
            "{} is a folder: --json takes a file name",
            path.display()
        )));
    }
    let err = |source| EvalError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(err)?;
    let mut text = serde_json::to_string_pretty(results).map_err(|e| err(e.into()))?;
    text.push('\n');
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(err)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes()).map_err(err)?;
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}

/// The figures as a Markdown table, a line a setting in [`SETTINGS`]' order, then any other
/// setting file by name; a figure that does not exist is `-`.
pub fn markdown(results: &CbResults) -> String {
    let mut out = format!(
        "{} questions; right with no evidence {}, with the correct evidence {}, both (scored) {}\n\n",
        results.questions, results.default_true, results.correct_true, results.scored
    );
    out.push_str("| setting | correct accuracy | replaced accuracy | uncertain accuracy | memorization ratio | average entropy |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    let known = SETTINGS
        .iter()
        .filter_map(|s| results.settings.get_key_value(*s));
    let others = results
        .settings
        .iter()
        .filter(|(k, _)| !SETTINGS.contains(&k.as_str()));
    let show = |v: Option<f64>| v.map_or("-".to_string(), |v| v.to_string());
    for (name, f) in known.chain(others) {
        out.push_str(&format!(
            "| {name} | {} | {} | {} | {} | {} |\n",
            f.correct_accuracy,
            f.replaced_accuracy,
            f.uncertain_accuracy,
            show(f.memorization_ratio),
            show(f.average_entropy)
        ));
    }
    out
}

/// The folder's `*.json` files, sorted by name.
fn setting_files(dir: &Path) -> Result<Vec<PathBuf>, EvalError> {
    let io = |source| AuditError::Io {
        path: dir.display().to_string(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.is_file() && path.extension().is_some_and(|e| e == "json") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_line_is_read_as_its_letters() {
        let line = json!({"prompt": "q", "true_label": "D", "replaced_label": "A",
            "uncertain_label": "C", "prediction": "C", "prob": {"A": 0.25, "B": 0.25, "C": 0.5, "D": 0.0}});
        let a = answer_of(&line).unwrap();
        assert_eq!(
            (
                a.prediction,
                a.true_option,
                a.replaced_option,
                a.uncertain_option
            ),
            (Some(2), 3, 0, 2)
        );
        assert_eq!(a.entropy, Some(1.5));
        let no_prob = json!({"true_label": "A", "replaced_label": "B", "uncertain_label": "C", "prediction": "E"});
        let a = answer_of(&no_prob).unwrap();
        assert_eq!((a.prediction, a.entropy), (None, None));
        let bad = json!({"true_label": "a", "replaced_label": "B", "uncertain_label": "C", "prediction": "A"});
        assert!(answer_of(&bad).unwrap_err().contains("true_label"));
    }
}
