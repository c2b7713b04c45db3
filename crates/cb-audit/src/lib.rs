//! The audit of KRE, RECALL and ConflictBank-style files: invariant checks with stable codes, a report (terminal
//! summary, JSON with every failing row, a self-contained HTML page with word-level diffs),
//! a seeded stratified review sheet for human raters, and the agreement of filled sheets
//! (percent agreement, Fleiss' kappa).
//!
//! Memory is bounded by a record, not the files: rows are read one at a time
//! ([`load::for_each_row`]: a line of JSONL, a record of a JSON array) and checked as they
//! come; the report keeps 8 bytes a row ([`Outline`]), per file what the duplicate checks
//! need ([`checks::FileChecks`]: hashes and first ids), and writes the findings to a
//! temporary file ([`Findings`]) that the JSON report streams back. The rows a page or a
//! sheet shows are read again ([`Report::items_at`]); without `--sample` the page shows a
//! check's failing rows up to a bound, else a seeded sample of them
//! ([`Report::failing_sample`]), with the counts over every row.
//!
//! The library prints nothing: it returns values and formatted text; the CLI writes them.

pub mod checks;
pub mod conflictbank;
pub mod diff;
mod error;
pub mod findings;
pub mod html;
mod item;
pub mod load;
pub mod readers;
mod report;
pub mod sample;
pub mod sheet;

pub use checks::{CheckInfo, Severity, CHECKS};
pub use findings::Findings;
pub use load::{FileKind, Payload, Row};

/// Everything that can stop an audit or an agreement.
pub use error::AuditError;
pub use item::{CheckSummary, FileSummary, Finding, Item, ItemKind};
pub use report::{audit_paths, audit_rows, item_of, FailingSample, Outline, ReaderResult, Report};
