//! The audit itself: rows read as a stream and checked one at a time into a [`Report`]
//! ([`audit_paths`], [`audit_rows`]), and what the report reads again of them.

use crate::checks::{self, Severity, CHECKS};
use crate::error::AuditError;
use crate::findings::{self, Findings};
use crate::item::{CheckSummary, FileSummary, Finding, Item, ItemKind};
use crate::load::{self, FileKind, Payload, Row};
use crate::readers;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The audit of a set of files.
///
/// Memory: the rows are read as a stream, checked one at a time and not kept. The report
/// keeps, for every row, its [`Outline`] (8 bytes); per check, its counts and three example
/// ids; the findings go to a temporary file ([`Findings`]). What the pages and the sheet show
/// of a row is read again from the files ([`Report::items_at`]).
#[derive(Debug, Serialize)]
pub struct Report {
    pub files: Vec<FileSummary>,
    /// Files of the folders walked that hold no KRE rows, with why (never silently left out).
    pub skipped: Vec<load::Skipped>,
    pub rows: usize,
    pub checks: Vec<CheckSummary>,
    /// Every failing (row, check), in row order, then the reader's.
    pub findings: Findings,
    /// Each row, in the audit's order, as the sample sees it.
    #[serde(skip)]
    pub outline: Vec<Outline>,
    /// The domains the outlines name.
    #[serde(skip)]
    domains: Vec<String>,
    /// Where the rows are read again from, in the audit's order.
    #[serde(skip)]
    sources: Vec<Source>,
    /// How many of the findings the rows' own checks made (the reader's come after).
    #[serde(skip)]
    row_findings: usize,
    /// What a reader model said of each row it read (`audit --reader-…`).
    #[serde(skip)]
    reader: BTreeMap<usize, ReaderLines>,
    /// With `audit --rate`: how many KRE rows the reader rated at each level of KRE
    /// appendix A.4 (and how many answers named no level).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub ratings: BTreeMap<String, usize>,
    /// The readers of the audited builds, from their manifests ([`readers`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub readers: Vec<readers::BuildReaders>,
    /// The two quality axes (misleading, plausible) of each audited build, measured or not
    /// ([`readers::axes_of_files`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub axes: Vec<readers::BuildAxes>,
}

/// One audited row as the report keeps it for every row: what the sample and the reader
/// choose rows by.
#[derive(Debug, Clone, Copy)]
pub struct Outline {
    /// The row's domain, an index into the report's domains ([`Report::domain`]).
    domain: u32,
    pub kind: ItemKind,
    /// Whether the row fails some check.
    pub failing: bool,
}

/// Where rows are read from again.
#[derive(Debug)]
enum Source {
    File(PathBuf, FileKind),
    /// Rows that were handed to [`audit_rows`].
    Rows(Vec<Row>),
}

/// What a reader model said of a row: the lines the page shows and the checks it failed.
#[derive(Debug, Default)]
struct ReaderLines {
    shown: Vec<String>,
    failed: Vec<(String, String)>,
}

/// One verdict of a reader model on an audited row: which item (its place in the audit, an
/// index into [`Report::outline`]), which check (a `reader_*` code), the line the page shows,
/// and the outcome (`Err` with the detail when it fails).
#[derive(Debug, Clone)]
pub struct ReaderResult {
    pub item: usize,
    pub check: &'static str,
    pub shown: String,
    pub outcome: Result<(), String>,
}

/// Audits every known file under `paths` (files or folders), a row at a time.
pub fn audit_paths(paths: &[PathBuf]) -> Result<Report, AuditError> {
    let found = load::find_files(paths)?;
    let mut a = Auditor::new()?;
    for (path, kind) in found.files {
        let mut seen = checks::FileChecks::default();
        let rows = load::for_each_row(&path, kind, |row| a.row(kind, &mut seen, &row))?;
        tracing::info!(file = %path.display(), rows, "read");
        a.files.push(FileSummary {
            path: path.display().to_string(),
            kind,
            rows,
        });
        a.sources.push(Source::File(path, kind));
    }
    let mut report = a.finish(found.skipped);
    report.readers = readers::of_files(&report.files)?;
    report.axes = readers::axes_of_files(&report.files)?;
    Ok(report)
}

/// Audits rows already read, grouped by file: `(file, kind, rows)`.
pub fn audit_rows(files: Vec<(String, FileKind, Vec<Row>)>) -> Result<Report, AuditError> {
    let mut a = Auditor::new()?;
    for (path, kind, rows) in files {
        let mut seen = checks::FileChecks::default();
        for row in &rows {
            a.row(kind, &mut seen, row)?;
        }
        a.files.push(FileSummary {
            path,
            kind,
            rows: rows.len(),
        });
        a.sources.push(Source::Rows(rows));
    }
    Ok(a.finish(Vec::new()))
}

/// A report in the making: the rows are checked one at a time, in the audit's order.
struct Auditor {
    /// Per check: rows checked, rows failed, the first three failing ids.
    counts: BTreeMap<&'static str, (usize, usize, Vec<String>)>,
    findings: Findings,
    outline: Vec<Outline>,
    domains: Vec<String>,
    domain_ids: std::collections::HashMap<String, u32>,
    files: Vec<FileSummary>,
    sources: Vec<Source>,
}

impl Auditor {
    fn new() -> Result<Self, AuditError> {
        Ok(Auditor {
            counts: BTreeMap::new(),
            findings: Findings::new()?,
            outline: Vec::new(),
            domains: Vec::new(),
            domain_ids: std::collections::HashMap::new(),
            files: Vec::new(),
            sources: Vec::new(),
        })
    }

    /// Checks the next row (of a file of `kind`, whose rows before it `seen` knows).
    fn row(
        &mut self,
        kind: FileKind,
        seen: &mut checks::FileChecks,
        row: &Row,
    ) -> Result<(), AuditError> {
        let mut outcomes = checks::check_row(kind, &row.payload);
        outcomes.extend(seen.check(row));
        let mut failed = Vec::new();
        for (code, res) in outcomes {
            let c = self.counts.entry(code).or_default();
            c.0 += 1;
            if let Err(detail) = res {
                c.1 += 1;
                if c.2.len() < 3 {
                    c.2.push(row.id.clone());
                }
                failed.push((code, detail));
            }
        }
        let order = |code: &str| CHECKS.iter().position(|c| c.code == code);
        failed.sort_by_key(|(c, _)| order(c));
        let index = self.outline.len();
        for (code, detail) in failed.iter() {
            self.findings.push(
                index,
                &Finding {
                    file: row.file.clone(),
                    id: row.id.clone(),
                    domain: row.domain.clone(),
                    check: (*code).to_owned(),
                    severity: checks::info(code).map_or(Severity::Info, |i| i.severity),
                    detail: detail.clone(),
                },
            )?;
        }
        let next = self.domains.len() as u32;
        let domain = *self.domain_ids.entry(row.domain.clone()).or_insert(next);
        if domain == next {
            self.domains.push(row.domain.clone());
        }
        self.outline.push(Outline {
            domain,
            kind: kind_of(&row.payload),
            failing: !failed.is_empty(),
        });
        Ok(())
    }

    fn finish(mut self, skipped: Vec<load::Skipped>) -> Report {
        let checks = CHECKS
            .iter()
            .map(|c| {
                let (checked, failed, examples) = self.counts.remove(c.code).unwrap_or_default();
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
            rows: self.outline.len(),
            files: self.files,
            skipped,
            checks,
            row_findings: self.findings.len(),
            findings: self.findings,
            outline: self.outline,
            domains: self.domains,
            sources: self.sources,
            reader: BTreeMap::new(),
            ratings: BTreeMap::new(),
            readers: Vec::new(),
            axes: Vec::new(),
        }
    }
}

fn kind_of(payload: &Payload) -> ItemKind {
    match payload {
        Payload::Kre(_) => ItemKind::Kre,
        Payload::Qa(r) if r.task == "qa_na" => ItemKind::QaNa,
        Payload::Qa(_) => ItemKind::QaA,
        Payload::TextGen(_) => ItemKind::TextGeneration,
        Payload::Cb(_) => ItemKind::ConflictBank,
    }
}

/// What [`item_of`] takes from a row's payload.
struct Parts {
    kind: ItemKind,
    question: String,
    options: Vec<String>,
    answer: String,
    other_answer: String,
    original: String,
    edited: String,
    /// The options the row says `answer` and `other_answer` are.
    letters: (Option<usize>, Option<usize>),
}

fn parts_of(payload: Payload) -> Parts {
    let kind = kind_of(&payload);
    match payload {
        Payload::Kre(r) => {
            let gold = cb_model::letter_index(&r.answer);
            let golden = gold
                .and_then(|i| r.choices.get(i).cloned())
                .unwrap_or_default();
            let negative = cb_model::negative_option(&r.choices, &r.candidate, &r.negative_answer);
            Parts {
                kind,
                question: r.question,
                options: r.choices,
                answer: golden,
                other_answer: r.negative_answer,
                original: r.golden_context,
                edited: r.negative_context,
                letters: (gold, negative),
            }
        }
        Payload::Qa(r) => Parts {
            kind,
            letters: (
                cb_model::letter_index(&r.answer_option),
                r.options.iter().position(|o| *o == r.edited_answer),
            ),
            question: r.question,
            options: r.options,
            answer: r.answer,
            other_answer: r.edited_answer,
            original: r.context,
            edited: r.edited_context,
        },
        Payload::TextGen(r) => Parts {
            kind,
            question: String::new(),
            options: Vec::new(),
            answer: r.original_words.join("; "),
            other_answer: r.edited_words.join("; "),
            original: checks::source_text(&r.source),
            edited: checks::source_text(&r.edited_source),
            letters: (None, None),
        },
        // The correct evidence beside the conflicting ones, each under its cause.
        Payload::Cb(r) => Parts {
            kind,
            letters: (
                cb_model::letter_index(&r.qa.true_label),
                cb_model::letter_index(&r.qa.replaced_label),
            ),
            answer: r.fact.object.clone(),
            other_answer: r.replaced_object.clone(),
            original: r.correct.text.clone(),
            edited: r
                .conflicts
                .iter()
                .map(|c| format!("{}: {}", c.cause.name(), c.evidence.text))
                .collect::<Vec<_>>()
                .join("\n\n"),
            question: r.qa.question,
            options: r.qa.options.to_vec(),
        },
    }
}

/// The item of a row, as the page and the sheet show it, with its failing checks (code,
/// detail).
pub fn item_of(row: Row, failed: Vec<(String, String)>) -> Item {
    let file_name = std::path::Path::new(&row.file)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let item_id = if row.id.starts_with(&format!("{file_name}#")) {
        row.id.clone()
    } else {
        format!("{file_name}#{}", row.id)
    };
    let p = parts_of(row.payload);
    Item {
        answer_option: p.letters.0.filter(|i| p.options.get(*i) == Some(&p.answer)),
        other_option: p
            .letters
            .1
            .filter(|i| p.options.get(*i) == Some(&p.other_answer)),
        file: row.file,
        id: row.id,
        item_id,
        domain: row.domain,
        kind: p.kind,
        question: p.question,
        options: p.options,
        answer: p.answer,
        other_answer: p.other_answer,
        original: p.original,
        edited: p.edited,
        failed,
        reader: Vec::new(),
    }
}

/// The failing checks of each row from the findings, read alongside the rows.
struct RowFindings {
    findings: std::iter::Peekable<std::iter::Take<findings::FindingsIter>>,
}

impl RowFindings {
    /// The failing checks of row `row` (rows asked in increasing order).
    fn of(&mut self, row: usize) -> Result<Vec<(String, String)>, AuditError> {
        let mut failed = Vec::new();
        while let Some(next) = self.findings.peek() {
            match next {
                Ok((r, _)) if *r != row => break,
                _ => {}
            }
            if let Some(next) = self.findings.next() {
                let (_, f) = next?;
                failed.push((f.check, f.detail));
            }
        }
        Ok(failed)
    }
}

/// The rows of the sample that [`Report::failing_sample`] draws, and a sentence for the page
/// when failing rows were left out.
#[derive(Debug, Clone)]
pub struct FailingSample {
    /// Places of the rows in the audit, in increasing order.
    pub rows: Vec<usize>,
    pub note: Option<String>,
}

impl Report {
    /// The domain of a row.
    pub fn domain(&self, row: &Outline) -> &str {
        &self.domains[row.domain as usize]
    }

    /// Reads the rows again, in the audit's order, and hands `each` the item of every row
    /// whose place `wanted` accepts, with its failing checks and what a reader said of it.
    /// Memory is bounded by a record and what `each` keeps.
    pub fn for_each_item(
        &self,
        mut wanted: impl FnMut(usize) -> bool,
        mut each: impl FnMut(usize, Item) -> Result<(), AuditError>,
    ) -> Result<(), AuditError> {
        let mut findings = RowFindings {
            findings: self.findings.iter()?.take(self.row_findings).peekable(),
        };
        let mut index = 0;
        let mut one = |row: Row| -> Result<(), AuditError> {
            let i = index;
            index += 1;
            let mut failed = findings.of(i)?;
            if !wanted(i) {
                return Ok(());
            }
            let reader = self.reader.get(&i);
            failed.extend(reader.iter().flat_map(|r| r.failed.iter().cloned()));
            let mut item = item_of(row, failed);
            item.reader = reader.map(|r| r.shown.clone()).unwrap_or_default();
            each(i, item)
        };
        for source in &self.sources {
            match source {
                Source::File(path, kind) => {
                    load::for_each_row(path, *kind, &mut one)?;
                }
                Source::Rows(rows) => rows.iter().try_for_each(|r| one(r.clone()))?,
            }
        }
        if index != self.rows {
            return Err(AuditError::Input(format!(
                "the audited files changed while the audit read them: {} rows, then {index}",
                self.rows
            )));
        }
        Ok(())
    }

    /// The items of the rows at `rows` (places in the audit), in the audit's order, read
    /// again from the files.
    pub fn items_at(&self, rows: &[usize]) -> Result<Vec<Item>, AuditError> {
        let wanted: std::collections::BTreeSet<usize> = rows.iter().copied().collect();
        let mut items = Vec::with_capacity(wanted.len());
        self.for_each_item(
            |i| wanted.contains(&i),
            |_, item| {
                items.push(item);
                Ok(())
            },
        )?;
        Ok(items)
    }

    /// The failing rows a page shows without `--sample`: for each check, every row that
    /// fails it when there are at most `per_check`, else a sample of `per_check` of them,
    /// seeded by `seed` and the check (reservoir sampling over the findings, so that memory
    /// is bounded by `per_check` a check). With no check over `per_check`, these are all the
    /// failing rows.
    pub fn failing_sample(&self, per_check: usize, seed: u64) -> Result<FailingSample, AuditError> {
        use rand::Rng;
        let mut kept: BTreeMap<String, (usize, Vec<usize>, rand_chacha::ChaCha20Rng)> =
            BTreeMap::new();
        for f in self.findings.iter()? {
            let (row, f) = f?;
            let (seen, rows, rng) = kept.entry(f.check).or_insert_with_key(|code| {
                let rng = cb_model::item_rng(seed, "audit-page", code, "failing rows");
                (0, Vec::new(), rng)
            });
            *seen += 1;
            if rows.len() < per_check {
                rows.push(row);
            } else {
                let j = rng.random_range(0..*seen);
                if j < per_check {
                    rows[j] = row;
                }
            }
        }
        let sampled: Vec<String> = kept
            .iter()
            .filter(|(_, (seen, _, _))| *seen > per_check)
            .map(|(code, (seen, _, _))| format!("{code} ({seen})"))
            .collect();
        let mut rows: Vec<usize> = kept.into_values().flat_map(|(_, rows, _)| rows).collect();
        rows.sort_unstable();
        rows.dedup();
        let note = (!sampled.is_empty()).then(|| {
            format!(
                "Rows shown: for each check, its failing rows, or a seeded sample of {per_check} of them where it fails more rows: {}. The counts are over every row.",
                sampled.join(", ")
            )
        });
        Ok(FailingSample { rows, note })
    }

    /// Adds what a reader model answered: each result is counted in its check (checked,
    /// failed, examples), a failure becomes a finding and a failed check of its row, and
    /// every result a line of its row on the page. The rows named are read again for their
    /// ids.
    pub fn add_reader_results(&mut self, results: Vec<ReaderResult>) -> Result<(), AuditError> {
        let named: std::collections::BTreeSet<usize> = results.iter().map(|r| r.item).collect();
        let mut who = std::collections::HashMap::new();
        self.for_each_item(
            |i| named.contains(&i),
            |i, item| {
                who.insert(i, (item.file, item.id, item.domain));
                Ok(())
            },
        )?;
        for r in results {
            let Some((file, id, domain)) = who.get(&r.item) else {
                continue;
            };
            let lines = self.reader.entry(r.item).or_default();
            lines.shown.push(r.shown);
            let Some(c) = self.checks.iter_mut().find(|c| c.code == r.check) else {
                continue;
            };
            c.checked += 1;
            if let Err(detail) = r.outcome {
                c.failed += 1;
                if c.examples.len() < 3 {
                    c.examples.push(id.clone());
                }
                let finding = Finding {
                    file: file.clone(),
                    id: id.clone(),
                    domain: domain.clone(),
                    check: r.check.to_owned(),
                    severity: c.severity,
                    detail: detail.clone(),
                };
                self.findings.push(r.item, &finding)?;
                lines.failed.push((r.check.to_owned(), detail));
                self.outline[r.item].failing = true;
            }
            c.rate = c.failed as f64 / c.checked as f64;
        }
        Ok(())
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
        s.push_str(&readers::summary(&self.readers));
        s.push_str(&readers::axes_summary(&self.axes));
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

    /// [`Report::to_json`] written to `out` as it is made, the findings streamed from their
    /// file.
    pub fn write_json(&self, out: impl std::io::Write) -> Result<(), serde_json::Error> {
        let mut out = std::io::BufWriter::new(out);
        serde_json::to_writer_pretty(&mut out, self)?;
        std::io::Write::flush(&mut out).map_err(serde_json::Error::io)
    }
}
