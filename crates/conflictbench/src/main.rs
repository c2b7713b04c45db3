//! `conflictbench`: builds knowledge-conflict benchmarks (RECALL, KRE) from source datasets
//! through cached, resumable, rate-limited LLM calls.
//!
//! Exit codes: 0 done; 1 a build failed; 2 a configuration or argument error; 3 the budget
//! (`--max-cost`, `--max-tokens`) was reached: run the same command again to resume; 4 a
//! `--batch-dir` build whose requests wait in batch files: answer them, then run the same
//! command again; 130 or
//! 143 a build stopped by SIGINT (Ctrl-C) or SIGTERM: what it got is cached, run the same
//! command again to resume.

mod assets;
mod audit_cmd;
mod audit_reader;
mod batch_cmd;
mod build_args;
mod build_cmd;
mod config_error;
mod created;
mod eval_cmd;
mod exit;
mod export_cmd;
mod folder_lock;
mod llm_args;
mod llm_config;
mod models_file;
mod pool_file;
mod preflight;
mod progress;
mod recipes_cmd;
mod signals;
mod stdout;
mod structured_arg;
mod view_cmd;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use stdout::println_out;

/// A build allocates and frees many small strings per row (prompts, keys, words), from
/// several threads at once; mimalloc's thread-local free lists make that about a tenth of the
/// CPU time of a re-run cheaper than the system allocator (BENCHMARKS.md, issue 37).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "conflictbench",
    version,
    about = "Build knowledge-conflict benchmarks (RECALL, KRE) with cached, resumable LLM calls."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log filter (tracing syntax), e.g. `info` or `cb_llm=debug`. Also RUST_LOG.
    #[arg(long, global = true, default_value = "warn", env = "CONFLICTBENCH_LOG")]
    log: String,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Build a benchmark (or all) from the source datasets.
    Build(Box<build_cmd::BuildArgs>),
    /// List the recipes (benchmark, domain, description).
    Recipes {
        /// Folder of recipe files (default: ./recipes when present, else the bundled ones).
        #[arg(long)]
        recipes: Option<PathBuf>,
        /// Print the parameters a step kind takes (type, default, meaning) instead.
        #[arg(long, value_name = "KIND")]
        explain: Option<String>,
    },
    /// Write the bundled recipes and prompts into DIR/recipes and DIR/prompts, to start a new domain from them.
    Init(assets::InitArgs),
    /// Check generated or released benchmark files; report, HTML page, review sheet.
    Audit(Box<audit_cmd::AuditArgs>),
    /// Agreement of filled review sheets: per-item majority, percent agreement, Fleiss' kappa.
    Agreement(audit_cmd::AgreementArgs),
    /// Evaluate a model on a built benchmark with the paper's metrics; `eval compare` compares evaluations.
    Eval(Box<eval_cmd::EvalArgs>),
    /// List the batches in a cache's journal (state, counts), cancel one, or answer a
    /// `--batch-dir` folder (`batches run-dir`).
    Batches(batch_cmd::BatchesArgs),
    /// Export a built benchmark for another tool: `export lm-eval BUILD_DIR OUT_DIR` writes
    /// lm-evaluation-harness tasks.
    Export(export_cmd::ExportArgs),
    /// Serve a local page over a build: rows, rejects, lineage, live progress, and rating
    /// the review sample beside the readers' verdicts.
    View(Box<view_cmd::ViewArgs>),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    stdout::start_stderr();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&cli.log)),
        )
        .with_writer(stdout::Quiet)
        .with_ansi(progress::colour_on_stderr())
        // Its own errors would go to the same closed stream (and panic there).
        .log_internal_errors(false)
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            stdout::eprintln_err(&format!("error: cannot start the async runtime: {e}"));
            stdout::flush_stderr();
            return ExitCode::from(1);
        }
    };
    let code = match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => exit::report(&e),
    };
    stdout::flush_stderr();
    code
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Recipes { recipes, explain } => recipes_cmd::run(recipes.as_deref(), explain),
        Command::Init(args) => {
            println_out(&assets::init(&args)?);
            Ok(())
        }
        Command::Build(args) => build_cmd::run(*args).await,
        Command::Audit(args) => audit_cmd::run_audit(*args).await,
        Command::Agreement(args) => audit_cmd::run_agreement(args),
        Command::Eval(args) => eval_cmd::run(*args).await,
        Command::Batches(args) => batch_cmd::run(args).await,
        Command::Export(args) => export_cmd::run(args),
        Command::View(args) => view_cmd::run(*args).await,
    }
}
