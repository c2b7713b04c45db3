//! `conflictbench audit` and `conflictbench agreement`: arguments and the code that runs
//! them on top of `cb-audit`.
//!
//! Exit codes: 0 when the audit ran, findings or not; 1 with `--fail-on` when a check of
//! that severity (or worse) fails; 2 for a bad argument or an input that cannot be read or
//! parsed (one sentence naming the file).

use anyhow::Context;
use cb_audit::sheet::{agreement, read_ratings, write_sheet};
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
    /// Write the self-contained HTML report here (failing rows, or the sample with --sample).
    #[arg(long, value_name = "PATH")]
    pub html: Option<PathBuf>,
    /// Write a review sheet (CSV) for human raters: the sample (100 rows when --sample is absent).
    #[arg(long, value_name = "PATH")]
    pub sheet: Option<PathBuf>,
    /// Rows in the stratified sample (by domain and by outcome) of the HTML page and the sheet;
    /// the checks always run on every row.
    #[arg(long, value_name = "N")]
    pub sample: Option<usize>,
    /// Seed of the sample.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Exit with code 1 when a check of this severity or worse fails.
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<FailOn>,
    #[command(flatten)]
    pub reader: crate::audit_reader::AuditReaderArgs,
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

fn input_err(e: AuditError) -> anyhow::Error {
    match e {
        AuditError::Write { .. } => anyhow::Error::new(e),
        other => crate::config_err(other.to_string()),
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the folder {}", dir.display()))?;
    }
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

#[allow(clippy::print_stdout)]
fn out(s: &str) {
    println!("{s}");
}

pub async fn run_audit(args: AuditArgs) -> anyhow::Result<()> {
    if args.sample == Some(0) {
        return Err(crate::config_err("--sample must be at least 1"));
    }
    let mut report = cb_audit::audit_paths(&args.paths).map_err(input_err)?;
    let read = crate::audit_reader::read(&args.reader, args.seed, &mut report).await?;
    out(&report.summary());
    if let Some(line) = read {
        out(&line);
    }
    if let Some(p) = &args.json {
        write_file(p, report.to_json().as_bytes())?;
        out(&format!("wrote {}", p.display()));
    }
    if let Some(p) = &args.html {
        let rows: Vec<usize> = match args.sample {
            Some(n) => sample::stratified_sample(&report.items, n, args.seed),
            None => (0..report.items.len())
                .filter(|&i| !report.items[i].failed.is_empty())
                .collect(),
        };
        let title = format!(
            "conflictbench audit: {}",
            args.paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        write_file(p, html::render(&report, &rows, &title).as_bytes())?;
        out(&format!(
            "wrote {} ({} rows shown)",
            p.display(),
            rows.len()
        ));
    }
    if let Some(p) = &args.sheet {
        let n = args.sample.unwrap_or(DEFAULT_SHEET_ROWS);
        let rows = sample::stratified_sample(&report.items, n, args.seed);
        let mut buf = Vec::new();
        write_sheet(&mut buf, &report, &rows).context("cannot write the review sheet")?;
        write_file(p, &buf)?;
        out(&format!(
            "wrote {} ({} rows to rate)",
            p.display(),
            rows.len()
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
        sheets.push((p.display().to_string(), read_ratings(p).map_err(input_err)?));
    }
    let a = agreement(&sheets).map_err(input_err)?;
    out(&a.summary());
    if let Some(p) = &args.json {
        let json = serde_json::to_string_pretty(&a).context("cannot serialise the agreement")?;
        write_file(p, json.as_bytes())?;
        out(&format!("wrote {}", p.display()));
    }
    Ok(())
}
