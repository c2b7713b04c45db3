//! ConflictBank-style rows (Su et al., 2024): what the `conflictbank-*` recipes write, one row
//! a fact, in `conflictbank.jsonl`.
//!
//! A row holds the fact (subject, relation, object with their Wikidata ids), the correct
//! evidence, one replaced object and three conflicting evidences that each make it hold
//! instead of the true object, one per cause of conflict:
//! - `misinformation`: the fact stated with the replaced object, another object of the same
//!   relation;
//! - `temporal`: the replaced object holding at another (later) time, the time stated;
//! - `semantic`: the subject's name read as another entity (described in the evidence), of
//!   which the replaced object holds.
//!
//! Each evidence is written in one of ConflictBank's three styles ([`Style`]). The QA is the
//! relation's question with four options `A`..`D`: the true object, the replaced object, the
//! uncertain answer, and one other object of the relation; its labels are what ConflictBank's
//! evaluation reads (`true_label`, `replaced_label`, `uncertain_label`).
//!
//! One replaced object serves the three causes, as in ConflictBank, whose QA pairs have one
//! replaced option each: a row's three conflicting settings share its question.

use serde::{Deserialize, Serialize};

/// The option letters of a ConflictBank question.
pub const CB_LETTERS: [&str; 4] = ["A", "B", "C", "D"];

/// The causes of conflict, in ConflictBank's order (also the names of its settings).
pub const CAUSES: [Cause; 3] = [Cause::Misinformation, Cause::Temporal, Cause::Semantic];

/// A cause of conflict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    Misinformation,
    Temporal,
    Semantic,
}

impl Cause {
    /// The name ConflictBank gives the setting of this cause alone.
    pub fn name(self) -> &'static str {
        match self {
            Cause::Misinformation => "misinformation",
            Cause::Temporal => "temporal",
            Cause::Semantic => "semantic",
        }
    }
}

/// The style an evidence is written in: ConflictBank's three.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Style {
    /// A news report.
    News,
    /// A passage of a book's narrative.
    Book,
    /// A Wikipedia-style encyclopedia entry.
    Wikipedia,
}

/// ConflictBank's styles, in order: a seeded draw picks among them.
pub const STYLES: [Style; 3] = [Style::News, Style::Book, Style::Wikipedia];

/// The fact a row is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CbFact {
    pub subject: String,
    pub subject_id: String,
    pub relation: String,
    pub relation_id: String,
    pub object: String,
    pub object_id: String,
}

/// An evidence: the claim it supports, its text and its style.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CbEvidence {
    /// The one-sentence claim the evidence supports (`"Douglas Adams is a citizen of
    /// France."`).
    pub claim: String,
    pub text: String,
    pub style: Style,
}

/// A conflicting evidence: its cause, and what the cause adds to the claim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CbConflict {
    pub cause: Cause,
    #[serde(flatten)]
    pub evidence: CbEvidence,
    /// Temporal: the time from which the replaced object holds (`"2031"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// Semantic: the other entity the subject's name is read as, described.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The multiple-choice question, as ConflictBank's evaluation reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CbQa {
    pub question: String,
    /// The options' texts, `A` to `D`.
    pub options: [String; 4],
    pub true_label: String,
    pub replaced_label: String,
    pub uncertain_label: String,
}

/// One ConflictBank-style row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CbRow {
    pub id: String,
    pub fact: CbFact,
    /// The object the conflicting evidences state instead of the true one.
    pub replaced_object: String,
    pub correct: CbEvidence,
    /// One per cause, in [`CAUSES`]' order.
    pub conflicts: Vec<CbConflict>,
    pub qa: CbQa,
}

impl CbRow {
    /// The conflicting evidence of a cause.
    pub fn conflict(&self, cause: Cause) -> Option<&CbConflict> {
        self.conflicts.iter().find(|c| c.cause == cause)
    }

    /// What is wrong with the row's shape, each a sentence; empty when nothing is. A row
    /// must have: the three causes once each, in order; non-empty texts; letters `A`..`D`,
    /// three different ones for the true, replaced and uncertain options; the true option's
    /// text the fact's object and the replaced option's the replaced object; four different
    /// options; a replaced object other than the object.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        let causes: Vec<Cause> = self.conflicts.iter().map(|c| c.cause).collect();
        if causes != CAUSES {
            out.push(format!(
                "the conflicts are {causes:?}, not misinformation, temporal and semantic in that order"
            ));
        }
        let texts = std::iter::once(("correct evidence", &self.correct.text))
            .chain(
                self.conflicts
                    .iter()
                    .map(|c| (c.cause.name(), &c.evidence.text)),
            )
            .chain([("question", &self.qa.question)]);
        for (what, text) in texts {
            if text.trim().is_empty() {
                out.push(format!("the {what} is empty"));
            }
        }
        let index = |label: &str| CB_LETTERS.iter().position(|l| *l == label);
        let labels = [
            ("true_label", &self.qa.true_label),
            ("replaced_label", &self.qa.replaced_label),
            ("uncertain_label", &self.qa.uncertain_label),
        ];
        let mut seen = Vec::new();
        for (key, label) in labels {
            match index(label) {
                None => out.push(format!("`{key}` is `{label}`, not a letter A to D")),
                Some(i) if seen.contains(&i) => {
                    out.push(format!("`{key}` is `{label}`, the letter of another label"))
                }
                Some(i) => seen.push(i),
            }
        }
        let option = |label: &str| index(label).map(|i| self.qa.options[i].as_str());
        if let Some(text) = option(&self.qa.true_label) {
            if text != self.fact.object {
                out.push(format!(
                    "the true option is `{text}`, not the object `{}`",
                    self.fact.object
                ));
            }
        }
        if let Some(text) = option(&self.qa.replaced_label) {
            if text != self.replaced_object {
                out.push(format!(
                    "the replaced option is `{text}`, not the replaced object `{}`",
                    self.replaced_object
                ));
            }
        }
        let mut options: Vec<String> = self
            .qa
            .options
            .iter()
            .map(|o| o.trim().to_lowercase())
            .collect();
        options.sort();
        options.dedup();
        if options.len() != 4 {
            out.push("two options are the same".to_string());
        }
        if self
            .replaced_object
            .trim()
            .eq_ignore_ascii_case(self.fact.object.trim())
        {
            out.push("the replaced object is the object".to_string());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> CbRow {
        let evidence = |claim: &str, style| CbEvidence {
            claim: claim.into(),
            text: format!("{claim} Written at length."),
            style,
        };
        let conflict = |cause, time: Option<&str>, description: Option<&str>| CbConflict {
            cause,
            evidence: evidence("Douglas Adams is a citizen of France.", Style::News),
            time: time.map(Into::into),
            description: description.map(Into::into),
        };
        CbRow {
            id: "1-0".into(),
            fact: CbFact {
                subject: "Douglas Adams".into(),
                subject_id: "Q42".into(),
                relation: "country of citizenship".into(),
                relation_id: "P27".into(),
                object: "United Kingdom".into(),
                object_id: "Q145".into(),
            },
            replaced_object: "France".into(),
            correct: evidence(
                "Douglas Adams is a citizen of the United Kingdom.",
                Style::Wikipedia,
            ),
            conflicts: vec![
                conflict(Cause::Misinformation, None, None),
                conflict(Cause::Temporal, Some("2031"), None),
                conflict(Cause::Semantic, None, Some("a French racing driver")),
            ],
            qa: CbQa {
                question: "What is the country of citizenship of Douglas Adams?".into(),
                options: [
                    "France".into(),
                    "Uncertain".into(),
                    "United Kingdom".into(),
                    "Spain".into(),
                ],
                true_label: "C".into(),
                replaced_label: "A".into(),
                uncertain_label: "B".into(),
            },
        }
    }

    #[test]
    fn a_good_row_has_no_problem_and_reads_back() {
        let row = sample();
        assert!(row.problems().is_empty(), "{:?}", row.problems());
        let text = serde_json::to_string(&row).unwrap();
        assert!(text.contains(r#""cause":"temporal","claim":"#), "{text}");
        assert!(text.contains(r#""time":"2031""#));
        let back: CbRow = serde_json::from_str(&text).unwrap();
        assert_eq!(back, row);
        assert_eq!(
            row.conflict(Cause::Semantic)
                .unwrap()
                .description
                .as_deref(),
            Some("a French racing driver")
        );
    }

    #[test]
    fn problems_name_what_is_wrong() {
        let mut row = sample();
        row.qa.uncertain_label = "C".into();
        row.qa.replaced_label = "E".into();
        row.conflicts.swap(0, 1);
        row.qa.options[3] = "france".into();
        let p = row.problems().join(" | ");
        assert!(
            p.contains("not misinformation, temporal and semantic"),
            "{p}"
        );
        assert!(p.contains("`replaced_label` is `E`"), "{p}");
        assert!(
            p.contains("`uncertain_label` is `C`, the letter of another label"),
            "{p}"
        );
        assert!(p.contains("two options are the same"), "{p}");
        let mut row = sample();
        row.qa.true_label = "D".into();
        row.qa.replaced_label = "C".into();
        let p = row.problems().join(" | ");
        assert!(p.contains("the true option is `Spain`"), "{p}");
        assert!(p.contains("the replaced option is `United Kingdom`"), "{p}");
    }
}
