//! `conflictbench audit` and `conflictbench agreement`: arguments and the code that runs
//! them on top of `cb-audit`.
//!
//! Exit codes: 0 when the audit ran, findings or not; 1 with `--fail-on` when a check of
//! that severity (or worse) fails; 2 for a bad argument or an input that cannot be read or
//! parsed (one sentence naming the file).

use crate::flag_values::{range, whole};
use anyhow::Context;
use cb_audit::sheet::{read_sheet, sheet_agreement, write_sheet};
use cb_audit::{html, sample, AuditError, Severity};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct AuditArgs {
    /// Files or folders to audit: released KRE `*.json`, our builds (`generated/`,
    /// `generated/kre/cose`), RECALL `qa_a.jsonl`, `qa_na.jsonl`, `text_generation.jsonl`.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Write the machine-readable report (checks, counts, every failing row) here. Without
    /// it no JSON file is written.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Write the self-contained HTML report here: the failing rows (of a check failing more
    /// than 100 rows, a seeded sample of 100), or the sample with --sample.
    #[arg(long, value_name = "PATH")]
    pub html: Option<PathBuf>,
    /// Write a review sheet (CSV) for human raters: the sample (100 rows when --sample is absent).
    #[arg(long, value_name = "PATH")]
    pub sheet: Option<PathBuf>,
    /// Rows in the stratified sample (by domain and by outcome) of the HTML page and the sheet;
    /// the checks always run on every row (1 to 1000000).
    #[arg(long, value_name = "N", value_parser = whole::<usize>(range::RATED_ROWS))]
    pub sample: Option<usize>,
    /// Seed of the sample (0 to 18446744073709551615).
    #[arg(long, default_value_t = 42, value_parser = whole::<u64>(range::SEED))]
    pub seed: u64,
    /// Exit with code 1 when a check of this severity or worse fails.
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<FailOn>,
    #[command(flatten)]
    pub reader: crate::audit_reader_checks::AuditReaderArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
    Info,
}

#[derive(Args, Debug)]
pub struct AgreementArgs {
    /// Filled review sheets (CSV with `item_id` and `rating` columns), one per rater.
    #[arg(required = true, num_args = 2..)]
    pub sheets: Vec<PathBuf>,
    /// Also write the result as JSON here.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
}

/// Rows of the sheet when `--sheet` is given without `--sample`.
const DEFAULT_SHEET_ROWS: usize = 100;

/// Failing rows of a check the HTML page shows without `--sample`: all of them up to this
/// many, else a seeded sample of this many (the counts are over every row).
const PAGE_ROWS_PER_CHECK: usize = 100;

fn input_err(e: AuditError) -> anyhow::Error {
    match e {
        AuditError::Write { .. } => anyhow::Error::new(e),
        other => crate::config_error::config_err(other.to_string()),
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    std::io::Write::write_all(&mut create_file(path)?, bytes)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Creates `path` (and its folder), to be written as a stream.
fn create_file(path: &Path) -> anyhow::Result<std::fs::File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the folder {}", dir.display()))?;
    }
    std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))
}

fn out(s: &str) {
    crate::stdout::println_out(s);
}

pub async fn run_audit(args: AuditArgs) -> anyhow::Result<()> {
    let mut report = cb_audit::audit_paths(&args.paths).map_err(input_err)?;
    let read = crate::audit_reader_checks::read(&args.reader, args.seed, &mut report).await?;
    out(&report.summary());
    if let Some(line) = read {
        out(&line);
    }
    if let Some(p) = &args.json {
        let file = create_file(p)?;
        report
            .write_json(file)
            .with_context(|| format!("cannot write {}", p.display()))?;
        out(&format!("wrote {}", p.display()));
    }
    if let Some(p) = &args.html {
        let shown = match args.sample {
            Some(n) => cb_audit::FailingSample {
                rows: sample::stratified_sample(&report, n, args.seed),
                note: None,
            },
            None => report
                .failing_sample(PAGE_ROWS_PER_CHECK, args.seed)
                .map_err(input_err)?,
        };
        let items = report.items_at(&shown.rows).map_err(input_err)?;
        let title = format!(
            "conflictbench audit: {}",
            args.paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let page = html::render(&report, &items, &title, shown.note.as_deref());
        write_file(p, page.as_bytes())?;
        out(&format!(
            "wrote {} ({} rows shown)",
            p.display(),
            items.len()
        ));
    }
    if let Some(p) = &args.sheet {
        let n = args.sample.unwrap_or(DEFAULT_SHEET_ROWS);
        let rows = sample::stratified_sample(&report, n, args.seed);
        let items = report.items_at(&rows).map_err(input_err)?;
        let mut buf = Vec::new();
        write_sheet(&mut buf, &items).context("cannot write the review sheet")?;
        write_file(p, &buf)?;
        out(&format!(
            "wrote {} ({} rows to rate)",
            p.display(),
            items.len()
        ));
    }
    if let Some(f) = args.fail_on {
        let sev = match f {
            FailOn::Error => Severity::Error,
            FailOn::Warning => Severity::Warning,
            FailOn::Info => Severity::Info,
        };
        let n = report.failing(sev);
        if n > 0 {
            anyhow::bail!(
                "{n} check(s) of severity {} or worse failed (--fail-on)",
                sev.as_str()
            );
        }
    }
    Ok(())
}

pub fn run_agreement(args: AgreementArgs) -> anyhow::Result<()> {
    let mut sheets = Vec::new();
    for p in &args.sheets {
        // A pipe would be waited on for a writer that may never come.
        if std::fs::metadata(p).is_ok_and(|m| !m.is_file()) {
            return Err(crate::config_error::config_err(format!(
                "{}: not a regular file (a folder, a pipe, a socket or a device): give a filled review sheet (CSV)",
                p.display()
            )));
        }
        sheets.push((p.display().to_string(), read_sheet(p).map_err(input_err)?));
    }
    let a = sheet_agreement(&sheets).map_err(input_err)?;
    out(&a.summary());
    if let Some(p) = &args.json {
        let json = serde_json::to_string_pretty(&a).context("cannot serialise the agreement")?;
        write_file(p, json.as_bytes())?;
        out(&format!("wrote {}", p.display()));
    }
    Ok(())
}
