//! What an audit reports of rows and files: an audited row ([`Item`]), a failing check on a
//! row ([`Finding`]), a check over all rows ([`CheckSummary`]) and a file ([`FileSummary`]).

use crate::checks::Severity;
use crate::load::FileKind;
use serde::Serialize;

/// What kind of row an item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    Kre,
    QaA,
    QaNa,
    TextGeneration,
    /// A ConflictBank-style row (`conflictbank.jsonl`).
    ConflictBank,
}

impl ItemKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Kre => "kre",
            ItemKind::QaA => "qa_a",
            ItemKind::QaNa => "qa_na",
            ItemKind::TextGeneration => "text_generation",
            ItemKind::ConflictBank => "conflictbank",
        }
    }
}

/// One audited row, in the form the report, the HTML page and the sheet show it.
#[derive(Debug, Clone, Serialize)]
pub struct Item {
    pub file: String,
    pub id: String,
    /// Unique over an audit: `<file name>#<id>` (released KRE ids already have that form).
    pub item_id: String,
    pub domain: String,
    pub kind: ItemKind,
    pub question: String,
    /// Choices (KRE) or options (QA), in order.
    pub options: Vec<String>,
    /// The golden answer text.
    pub answer: String,
    /// KRE: the negative answer; QA: the edited answer; text generation: E joined by `; `.
    pub other_answer: String,
    /// KRE: golden context; QA: context; text generation: source.
    pub original: String,
    /// The options `answer` and `other_answer` are, when the row says (KRE: the `answer`
    /// and `candidate` letters; QA: `answer_option` and the edited answer's option).
    pub answer_option: Option<usize>,
    pub other_option: Option<usize>,
    /// KRE: negative context; QA: edited context; text generation: edited source.
    pub edited: String,
    /// Failing checks: (code, detail), catalogue order.
    pub failed: Vec<(String, String)>,
    /// What a reader model answered, one line per check (`audit --reader-…`), for the page.
    pub reader: Vec<String>,
}

impl Item {
    pub fn fails(&self, code: &str) -> bool {
        self.failed.iter().any(|(c, _)| c == code)
    }
}

/// The result of one check over all rows.
#[derive(Debug, Clone, Serialize)]
pub struct CheckSummary {
    pub code: &'static str,
    pub severity: Severity,
    pub meaning: &'static str,
    pub applies_to: &'static str,
    pub threshold: Option<&'static str>,
    /// Rows it ran on.
    pub checked: usize,
    pub failed: usize,
    /// `failed / checked` (0 when nothing was checked).
    pub rate: f64,
    /// The first three failing ids.
    pub examples: Vec<String>,
}

/// One failing (row, check).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Finding {
    pub file: String,
    pub id: String,
    pub domain: String,
    pub check: String,
    pub severity: Severity,
    pub detail: String,
}

/// One audited file.
#[derive(Debug, Clone, Serialize)]
pub struct FileSummary {
    pub path: String,
    pub kind: FileKind,
    pub rows: usize,
}
