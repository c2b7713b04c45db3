//! RECALL rows. RECALL was never released, so conflictbench defines its files; they hold
//! everything the paper's metrics need (accuracy and misleading rate on QA-A and QA-NA,
//! BLEU / ROUGE-L and the mistake reappearance rate R-Rate on text generation).
//!
//! Offsets are counted in Unicode scalar values (Python `str` indices), end exclusive.

use serde::{Deserialize, Serialize};

/// One item of a key-value record (an EventKG event flattened): `kind` says what sort of
/// value it is (`name`, `description`, `date`, `place`, `actor`, `event`, `other`), so that
/// an edit can replace it by a value of the same kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KvItem {
    pub key: String,
    pub value: String,
    pub kind: String,
}

/// One change from an original text to its edited version: `original` at
/// `original_span` of the original text became `edited` at `edited_span` of the edited
/// text. An inserted sentence has an empty `original` and an empty original span.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edit {
    pub original: String,
    pub edited: String,
    pub original_span: [usize; 2],
    pub edited_span: [usize; 2],
}

/// A row of `qa_a.jsonl` or `qa_na.jsonl`: a multiple-choice question over an original and
/// an edited context.
///
/// - QA-A: the answer itself was edited; `edited_context` states `edited_answer` where the
///   original states `answer`.
/// - QA-NA: only text outside the answer was edited; `edited_context` still states `answer`.
///
/// `options` holds `answer` and `edited_answer` in a seeded order; `answer_option` is the
/// letter of the right one (`answer`) in both tasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QaRow {
    pub id: String,
    /// `eventkg`, or the UJ domain of the term (`cs`, `math`, `phy`).
    pub domain: String,
    /// The source example: the EventKG event id or the UJ term id.
    pub source_id: String,
    /// Source file and line (or record index).
    pub origin: String,
    /// What the sample is about: the event's name (EventKG) or the term (UJ).
    pub subject: String,
    /// `qa_a` or `qa_na`.
    pub task: String,
    /// How the context was edited: `answer` (QA-A), `word` (words outside the answer
    /// replaced), `sentence` (an unrelated sentence inserted, UJ).
    pub edit: String,
    pub question: String,
    pub answer: String,
    pub edited_answer: String,
    /// The record key the answer is the value of (EventKG); empty for UJ (`null` in the
    /// file).
    #[serde(default, with = "empty_as_null")]
    pub answer_key: String,
    pub options: Vec<String>,
    pub answer_option: String,
    pub context: String,
    pub edited_context: String,
    pub edits: Vec<Edit>,
    /// Sentence-grained edits (UJ): the other term B whose sentence, renamed to this
    /// term, was inserted (`null` in the file for other rows).
    #[serde(default, with = "empty_as_null")]
    pub donor_term: String,
    /// Notes on the sample, `code: detail` (an empty list when none): `sentence_implausible`
    /// where the reader found the sentence-edited context implausible and left that row out.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// What the reader picked for each check of the sample (model, endpoint, votes, and per
    /// check the intended option, each vote's pick, the majority); `null` when no reader
    /// verified the build.
    #[serde(default)]
    pub reader: serde_json::Value,
    /// Per model call behind the row: step, prompt template and hash, cache key, attempt.
    #[serde(default)]
    pub lineage: Vec<serde_json::Value>,
}

/// A row of `text_generation.jsonl`.
///
/// EventKG: `source` / `edited_source` are key-value records (`Vec<KvItem>`) that differ in
/// exactly one item, `target` is the paragraph. UJ: `source` / `edited_source` are the
/// paragraph before and after the word edits, `target` is the definition.
///
/// `edited_words` (E) and `original_words` (O) are what the R-Rate needs. EventKG: aligned
/// one to one (`edited_words[j]` replaced `original_words[j]`). UJ: two sets, not aligned
/// (the paper's formula 3 only counts each side).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextGenRow {
    pub id: String,
    pub domain: String,
    pub source_id: String,
    pub origin: String,
    /// The event's name (EventKG) or the term whose definition is the target (UJ).
    pub subject: String,
    pub source: serde_json::Value,
    pub edited_source: serde_json::Value,
    pub target: String,
    /// EventKG: the key of the record item that was changed (`null` in the file for UJ).
    #[serde(default, with = "empty_as_null")]
    pub edited_key: String,
    pub edited_words: Vec<String>,
    pub original_words: Vec<String>,
    /// Whether E and O are aligned one to one (EventKG) or two sets (UJ).
    pub aligned: bool,
    #[serde(default)]
    pub lineage: Vec<serde_json::Value>,
}

/// An optional text field: empty in Rust, `null` in the file, so that every row of a file
/// has the same keys with the same types (one schema for `datasets` and the Hub).
mod empty_as_null {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(s: &str, ser: S) -> Result<S::Ok, S::Error> {
        if s.is_empty() {
            ser.serialize_none()
        } else {
            ser.serialize_some(s)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
    }
}

/// Byte offset -> Unicode scalar offset in `s`.
pub fn char_offset(s: &str, byte: usize) -> usize {
    s[..byte].chars().count()
}

/// Applies non-overlapping replacements `(byte_start, byte_end, new_text)` to `text` and
/// returns the edited text with one [`Edit`] per replacement (spans in characters). The
/// replacements may come in any order; overlapping ones are an error naming them.
pub fn apply_replacements(
    text: &str,
    replacements: &[(usize, usize, String)],
) -> Result<(String, Vec<Edit>), String> {
    let mut reps: Vec<&(usize, usize, String)> = replacements.iter().collect();
    reps.sort_by_key(|r| (r.0, r.1));
    for w in reps.windows(2) {
        if w[1].0 < w[0].1 {
            return Err(format!(
                "replacements of \"{}\" and \"{}\" overlap",
                &text[w[0].0..w[0].1],
                &text[w[1].0..w[1].1]
            ));
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut edits = Vec::with_capacity(reps.len());
    let mut last = 0;
    let mut out_chars = 0usize;
    for (s, e, new) in reps {
        let between = &text[last..*s];
        out.push_str(between);
        out_chars += between.chars().count();
        let start = char_offset(text, *s);
        let original = &text[*s..*e];
        let new_chars = new.chars().count();
        edits.push(Edit {
            original: original.to_owned(),
            edited: new.clone(),
            original_span: [start, start + original.chars().count()],
            edited_span: [out_chars, out_chars + new_chars],
        });
        out.push_str(new);
        out_chars += new_chars;
        last = *e;
    }
    out.push_str(&text[last..]);
    Ok((out, edits))
}

/// Checks that `edits` turn `original` into `edited` exactly (the audit's
/// `edits_match_diff`): spans inside the texts, ordered, not overlapping, the text at each
/// span equal to the recorded string, and everything between the spans unchanged.
pub fn check_edits(original: &str, edited: &str, edits: &[Edit]) -> Result<(), String> {
    let o: Vec<char> = original.chars().collect();
    let e: Vec<char> = edited.chars().collect();
    let (mut oi, mut ei) = (0usize, 0usize);
    for (n, ed) in edits.iter().enumerate() {
        let [os, oe] = ed.original_span;
        let [es, ee] = ed.edited_span;
        if os < oi || oe < os || oe > o.len() || es < ei || ee < es || ee > e.len() {
            return Err(format!("edit {n}: span out of order or out of the text"));
        }
        if o[oi..os] != e[ei..es] {
            return Err(format!("edit {n}: the text before it differs"));
        }
        if o[os..oe].iter().collect::<String>() != ed.original {
            return Err(format!(
                "edit {n}: the original text at its span is not \"{}\"",
                ed.original
            ));
        }
        if e[es..ee].iter().collect::<String>() != ed.edited {
            return Err(format!(
                "edit {n}: the edited text at its span is not \"{}\"",
                ed.edited
            ));
        }
        oi = oe;
        ei = ee;
    }
    if o[oi..] != e[ei..] {
        return Err("the text after the last edit differs".into());
    }
    Ok(())
}

/// The value of the record's item of kind `name` (the event's name), if it has one.
pub fn name_of(record: &[KvItem]) -> Option<&str> {
    record
        .iter()
        .find(|i| i.kind == "name")
        .map(|i| i.value.as_str())
}

/// Turns recorded edits of `text` back into byte-span replacements of it (the inverse of
/// [`apply_replacements`]).
pub fn to_replacements(text: &str, edits: &[Edit]) -> Vec<(usize, usize, String)> {
    let byte = |c: usize| text.char_indices().nth(c).map_or(text.len(), |(b, _)| b);
    edits
        .iter()
        .map(|e| {
            (
                byte(e.original_span[0]),
                byte(e.original_span[1]),
                e.edited.clone(),
            )
        })
        .collect()
}

/// The words the edits brought in (E) and the words they took out (O), each once, in
/// order: a word both sides share (an edit of "the upper bound" to "the lower bound" keeps
/// "the" and "bound") is in neither.
pub fn changed_words(edits: &[Edit]) -> (Vec<String>, Vec<String>) {
    let mut e: Vec<String> = Vec::new();
    let mut o: Vec<String> = Vec::new();
    for ed in edits {
        let before = crate::text::tokens(&ed.original);
        let after = crate::text::tokens(&ed.edited);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replacements_give_char_spans_that_check() {
        let text = "Jeanne née à Domrémy en 1412, jugée à Rouen.";
        let d = text.find("Domrémy").unwrap();
        let r = text.find("Rouen").unwrap();
        let reps = vec![
            (r, r + "Rouen".len(), "Lyon".to_owned()),
            (d, d + "Domrémy".len(), "Orléans".to_owned()),
        ];
        let (edited, edits) = apply_replacements(text, &reps).unwrap();
        assert_eq!(edited, "Jeanne née à Orléans en 1412, jugée à Lyon.");
        assert_eq!(edits[0].original, "Domrémy");
        assert_eq!(edits[0].original_span, [13, 20]);
        assert_eq!(edits[0].edited_span, [13, 20]);
        assert_eq!(edits[1].edited_span, [38, 42]);
        check_edits(text, &edited, &edits).unwrap();
        let mut bad = edits.clone();
        bad[1].edited_span = [37, 41];
        assert!(check_edits(text, &edited, &bad).is_err());
        assert!(check_edits(text, "something else", &edits).is_err());
    }

    #[test]
    fn an_empty_optional_text_is_null_in_the_file_and_reads_back() {
        let row = TextGenRow {
            id: "i".into(),
            domain: "cs".into(),
            source_id: "s".into(),
            origin: "o:1".into(),
            subject: "t".into(),
            source: "p".into(),
            edited_source: "q".into(),
            target: "d".into(),
            edited_key: String::new(),
            edited_words: vec![],
            original_words: vec![],
            aligned: false,
            lineage: vec![],
        };
        let v = serde_json::to_value(&row).unwrap();
        assert!(v["edited_key"].is_null(), "{v}");
        assert_eq!(serde_json::from_value::<TextGenRow>(v).unwrap(), row);
        let keyed = TextGenRow {
            edited_key: "location".into(),
            ..row
        };
        let v = serde_json::to_value(&keyed).unwrap();
        assert_eq!(v["edited_key"], "location");
        assert_eq!(serde_json::from_value::<TextGenRow>(v).unwrap(), keyed);
    }

    #[test]
    fn overlapping_replacements_are_refused() {
        let reps = vec![(0, 5, "a".to_owned()), (3, 8, "b".to_owned())];
        assert!(apply_replacements("abcdefghij", &reps)
            .unwrap_err()
            .contains("overlap"));
    }

    #[test]
    fn an_insertion_is_an_edit_with_an_empty_original() {
        let (edited, edits) = apply_replacements("A. C.", &[(3, 3, "B. ".to_owned())]).unwrap();
        assert_eq!(edited, "A. B. C.");
        assert_eq!(edits[0].original_span, [3, 3]);
        check_edits("A. C.", &edited, &edits).unwrap();
    }
}
