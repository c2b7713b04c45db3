//! The audit of KRE and RECALL files: invariant checks with stable codes, a report (terminal
//! summary, JSON with every failing row, a self-contained HTML page with word-level diffs),
//! a seeded stratified review sheet for human raters, and the agreement of filled sheets
//! (percent agreement, Fleiss' kappa).
//!
//! The library prints nothing: it returns values and formatted text; the CLI writes them.

pub mod checks;
pub mod diff;
pub mod html;
pub mod load;
pub mod sample;
pub mod sheet;

pub use checks::{CheckInfo, Severity, CHECKS};
pub use load::{FileKind, Payload, Row};

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Everything that can stop an audit or an agreement.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {location}: {message}")]
    Parse {
        path: String,
        location: String,
        message: String,
    },
    #[error("{0}")]
    Input(String),
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: line {line}: {message}")]
    Sheet {
        path: String,
        line: u64,
        message: String,
    },
}

/// What kind of row an item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    Kre,
    QaA,
    QaNa,
    TextGeneration,
}

impl ItemKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Kre => "kre",
            ItemKind::QaA => "qa_a",
            ItemKind::QaNa => "qa_na",
            ItemKind::TextGeneration => "text_generation",
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
#[derive(Debug, Clone, Serialize)]
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

/// The audit of a set of files.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub files: Vec<FileSummary>,
    /// Files of the folders walked that hold no KRE rows, with why (never silently left out).
    pub skipped: Vec<load::Skipped>,
    pub rows: usize,
    pub checks: Vec<CheckSummary>,
    pub findings: Vec<Finding>,
    /// Every row, for the HTML page and the sheet (not in the JSON).
    #[serde(skip)]
    pub items: Vec<Item>,
    /// With `audit --rate`: how many KRE rows the reader rated at each level of KRE
    /// appendix A.4 (and how many answers named no level).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub ratings: BTreeMap<String, usize>,
}

/// One verdict of a reader model on an audited row: which item (index into
/// [`Report::items`]), which check (a `reader_*` code), the line the page shows, and the
/// outcome (`Err` with the detail when it fails).
#[derive(Debug, Clone)]
pub struct ReaderResult {
    pub item: usize,
    pub check: &'static str,
    pub shown: String,
    pub outcome: Result<(), String>,
}

/// Audits every known file under `paths` (files or folders).
pub fn audit_paths(paths: &[PathBuf]) -> Result<Report, AuditError> {
    let found = load::find_files(paths)?;
    let mut rows_by_file = Vec::new();
    for (path, kind) in found.files {
        let rows = load::read_rows(&path, kind)?;
        tracing::info!(file = %path.display(), rows = rows.len(), "read");
        rows_by_file.push((path.display().to_string(), kind, rows));
    }
    Ok(Report {
        skipped: found.skipped,
        ..audit_rows(rows_by_file)
    })
}

/// Audits rows already read, grouped by file: `(file, kind, rows)`.
pub fn audit_rows(files: Vec<(String, FileKind, Vec<Row>)>) -> Report {
    let mut counts: BTreeMap<&'static str, (usize, usize, Vec<String>)> = BTreeMap::new();
    let mut findings = Vec::new();
    let mut items = Vec::new();
    let mut summaries = Vec::new();
    for (path, kind, rows) in files {
        summaries.push(FileSummary {
            path: path.clone(),
            kind,
            rows: rows.len(),
        });
        let file_outcomes = checks::check_file(&rows);
        for (row, file_out) in rows.into_iter().zip(file_outcomes) {
            let mut outcomes = checks::check_row(kind, &row.payload);
            outcomes.extend(file_out);
            let mut failed = Vec::new();
            for (code, res) in outcomes {
                let c = counts.entry(code).or_default();
                c.0 += 1;
                if let Err(detail) = res {
                    c.1 += 1;
                    if c.2.len() < 3 {
                        c.2.push(row.id.clone());
                    }
                    failed.push((code.to_owned(), detail));
                }
            }
            let order = |code: &str| CHECKS.iter().position(|c| c.code == code);
            failed.sort_by_key(|(c, _)| order(c));
            for (code, detail) in &failed {
                findings.push(Finding {
                    file: row.file.clone(),
                    id: row.id.clone(),
                    domain: row.domain.clone(),
                    check: code.clone(),
                    severity: checks::info(code).map_or(Severity::Info, |i| i.severity),
                    detail: detail.clone(),
                });
            }
            items.push(item_of(row, failed));
        }
    }
    let checks = CHECKS
        .iter()
        .map(|c| {
            let (checked, failed, examples) = counts.remove(c.code).unwrap_or_default();
            CheckSummary {
                code: c.code,
                severity: c.severity,
                meaning: c.meaning,
                applies_to: c.applies_to,
                threshold: c.threshold,
                checked,
                failed,
                rate: if checked == 0 {
                    0.0
                } else {
                    failed as f64 / checked as f64
                },
                examples,
            }
        })
        .collect();
    Report {
        rows: items.len(),
        files: summaries,
        skipped: Vec::new(),
        checks,
        findings,
        items,
        ratings: BTreeMap::new(),
    }
}

fn item_of(row: Row, failed: Vec<(String, String)>) -> Item {
    let file_name = std::path::Path::new(&row.file)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let item_id = if row.id.starts_with(&format!("{file_name}#")) {
        row.id.clone()
    } else {
        format!("{file_name}#{}", row.id)
    };
    let base = |kind,
                question,
                options: Vec<String>,
                answer: String,
                other_answer: String,
                original,
                edited,
                letters: (Option<usize>, Option<usize>)| Item {
        answer_option: letters.0.filter(|i| options.get(*i) == Some(&answer)),
        other_option: letters.1.filter(|i| options.get(*i) == Some(&other_answer)),
        file: row.file.clone(),
        id: row.id.clone(),
        item_id: item_id.clone(),
        domain: row.domain.clone(),
        kind,
        question,
        options,
        answer,
        other_answer,
        original,
        edited,
        failed: failed.clone(),
        reader: Vec::new(),
    };
    match row.payload {
        Payload::Kre(r) => {
            let gold = cb_model::letter_index(&r.answer);
            let golden = gold
                .and_then(|i| r.choices.get(i).cloned())
                .unwrap_or_default();
            let negative = cb_model::negative_option(&r.choices, &r.candidate, &r.negative_answer);
            base(
                ItemKind::Kre,
                r.question,
                r.choices,
                golden,
                r.negative_answer,
                r.golden_context,
                r.negative_context,
                (gold, negative),
            )
        }
        Payload::Qa(r) => {
            let letters = (
                cb_model::letter_index(&r.answer_option),
                r.options.iter().position(|o| *o == r.edited_answer),
            );
            base(
                if r.task == "qa_na" {
                    ItemKind::QaNa
                } else {
                    ItemKind::QaA
                },
                r.question,
                r.options,
                r.answer,
                r.edited_answer,
                r.context,
                r.edited_context,
                letters,
            )
        }
        Payload::TextGen(r) => base(
            ItemKind::TextGeneration,
            String::new(),
            Vec::new(),
            r.original_words.join("; "),
            r.edited_words.join("; "),
            checks::source_text(&r.source),
            checks::source_text(&r.edited_source),
            (None, None),
        ),
    }
}

impl Report {
    /// Adds what a reader model answered: each result is counted in its check (checked,
    /// failed, examples), a failure becomes a finding and a failed check of its row, and
    /// every result a line of its row on the page.
    pub fn add_reader_results(&mut self, results: Vec<ReaderResult>) {
        for r in results {
            let Some(item) = self.items.get_mut(r.item) else {
                continue;
            };
            item.reader.push(r.shown);
            let Some(c) = self.checks.iter_mut().find(|c| c.code == r.check) else {
                continue;
            };
            c.checked += 1;
            if let Err(detail) = r.outcome {
                c.failed += 1;
                if c.examples.len() < 3 {
                    c.examples.push(item.id.clone());
                }
                self.findings.push(Finding {
                    file: item.file.clone(),
                    id: item.id.clone(),
                    domain: item.domain.clone(),
                    check: r.check.to_owned(),
                    severity: c.severity,
                    detail: detail.clone(),
                });
                item.failed.push((r.check.to_owned(), detail));
            }
            c.rate = c.failed as f64 / c.checked as f64;
        }
    }

    /// The summary for a terminal: files, then one line per check that ran (code, severity,
    /// failed / checked, rate, up to three example ids).
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "audited {} rows in {} file(s):",
            self.rows,
            self.files.len()
        );
        for f in &self.files {
            let _ = writeln!(s, "  {} ({:?}, {} rows)", f.path, f.kind, f.rows);
        }
        for f in &self.skipped {
            let _ = writeln!(s, "  skipped {}: {}", f.path, f.reason);
        }
        let _ = writeln!(
            s,
            "{:<40} {:<8} {:>13} {:>7}  examples",
            "check", "severity", "failed/rows", "rate"
        );
        for c in self.checks.iter().filter(|c| c.checked > 0) {
            let _ = writeln!(
                s,
                "{:<40} {:<8} {:>13} {:>6.1}%  {}",
                c.code,
                c.severity.as_str(),
                format!("{}/{}", c.failed, c.checked),
                100.0 * c.rate,
                c.examples.join(", ")
            );
        }
        if !self.ratings.is_empty() {
            let levels: Vec<String> = self
                .ratings
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            let _ = writeln!(s, "reader ratings (KRE A.4): {}", levels.join(", "));
        }
        let errors = self.failing(Severity::Error);
        let _ = write!(
            s,
            "{} finding(s); {} error-severity check(s) failing",
            self.findings.len(),
            errors
        );
        s
    }

    /// How many checks of `severity` or worse fail on at least one row.
    pub fn failing(&self, severity: Severity) -> usize {
        self.checks
            .iter()
            .filter(|c| c.severity <= severity && c.failed > 0)
            .count()
    }

    /// The summary of one check.
    pub fn check(&self, code: &str) -> Option<&CheckSummary> {
        self.checks.iter().find(|c| c.code == code)
    }

    /// The machine-readable report (pretty JSON): files, checks with their counts and
    /// thresholds, every finding.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}
