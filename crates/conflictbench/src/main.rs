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
mod audit_reader_checks;
mod batch_cmd;
mod build_cmd;
mod config_error;
mod created;
mod eval_cmd;
mod exit;
mod export_cmd;
mod flag_values;
mod folder_lock;
mod llm_args;
mod llm_config;
mod models_file;
mod pool_file;
mod progress;
mod recipes_cmd;
mod signals;
mod stdout;
mod structured_arg;
mod view_cmd;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
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
    /// Agreement of filled review sheets, on both scales (misleading, plausible): per-item
    /// majority, percent agreement, Fleiss' kappa.
    Agreement(audit_cmd::AgreementArgs),
    /// Evaluate a model on a built benchmark with the paper's metrics; `eval compare` compares evaluations.
    Eval(Box<eval_cmd::EvalArgs>),
    /// List the batches in a cache's journal (state, counts), cancel one, or answer a
    /// `--batch-dir` folder (`batches run-dir`).
    Batches(batch_cmd::BatchesArgs),
    /// Export a built benchmark for another tool: `export lm-eval BUILD_DIR OUT_DIR` writes
    /// lm-evaluation-harness tasks; `export conflictbank BUILD_DIR OUT_DIR` writes
    /// ConflictBank's evaluation input.
    Export(export_cmd::ExportArgs),
    /// Serve a local page over a build: rows, rejects, lineage, live progress, and rating
    /// the review sample beside the readers' verdicts.
    View(Box<view_cmd::ViewArgs>),
}

/// The command line as clap reads it: every command's flags, where `--concurrency -1`
/// is a value (refused by the flag's range, which the message states), not an unknown flag.
fn command() -> clap::Command {
    fn negative_numbers(cmd: clap::Command) -> clap::Command {
        let names: Vec<String> = cmd
            .get_subcommands()
            .map(|s| s.get_name().to_owned())
            .collect();
        names.iter().fold(cmd.allow_negative_numbers(true), |c, n| {
            c.mut_subcommand(n, negative_numbers)
        })
    }
    negative_numbers(Cli::command())
}

#[allow(clippy::print_stderr)] // the binary's own last word on stderr
fn main() -> ExitCode {
    let cli = match command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                exit::Exit::Config.into()
            } else {
                exit::Exit::Done.into()
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
            return exit::Exit::Failure.into();
        }
    };
    let code = match runtime.block_on(run(cli)) {
        Ok(()) => exit::Exit::Done.into(),
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

#[cfg(test)]
mod tests {
    use super::command;
    use cb_model::Range;
    use std::any::TypeId;

    /// Whether `arg` takes a number: its value parser gives one of Rust's number types.
    fn numeric(arg: &clap::Arg) -> bool {
        let t = arg.get_value_parser().type_id();
        [
            TypeId::of::<u8>(),
            TypeId::of::<u16>(),
            TypeId::of::<u32>(),
            TypeId::of::<u64>(),
            TypeId::of::<u128>(),
            TypeId::of::<usize>(),
            TypeId::of::<i8>(),
            TypeId::of::<i16>(),
            TypeId::of::<i32>(),
            TypeId::of::<i64>(),
            TypeId::of::<i128>(),
            TypeId::of::<isize>(),
            TypeId::of::<f32>(),
            TypeId::of::<f64>(),
        ]
        .iter()
        .any(|n| t == *n)
    }

    /// Every command and subcommand under `cmd`, each with the words that make it parse but
    /// for the flag tried: its path, and a value for each argument it requires.
    fn commands(cmd: &clap::Command, path: &[String], out: &mut Vec<(Vec<String>, clap::Command)>) {
        let mut words = path.to_vec();
        for a in cmd.get_arguments().filter(|a| a.is_required_set()) {
            if let Some(long) = a.get_long() {
                words.push(format!("--{long}"));
            }
            let n = a.get_num_args().map_or(1, |r| r.min_values().max(1));
            words.extend(std::iter::repeat_n("x".to_owned(), n));
        }
        out.push((words, cmd.clone()));
        for sub in cmd.get_subcommands() {
            let mut p = path.to_vec();
            p.push(sub.get_name().to_owned());
            commands(sub, &p, out);
        }
    }

    /// The range a refusal states ("must be a whole number from 1 to 10000", "must be a
    /// number above 0, at most 1").
    fn stated(message: &str) -> Option<Range> {
        let said = message.split("must be ").nth(1)?.lines().next()?;
        let said = said.split(" (").next()?.trim();
        let num = |s: &str| s.trim().parse::<f64>().ok();
        if let Some(r) = said.strip_prefix("a whole number from ") {
            let (a, b) = r.split_once(" to ")?;
            return Some(Range::whole(a.parse().ok()?, b.parse().ok()?));
        }
        if let Some(r) = said.strip_prefix("a number from ") {
            let (a, b) = r.split_once(" to ")?;
            return Some(Range::real(num(a)?, num(b)?));
        }
        let r = said.strip_prefix("a number above ")?;
        let (a, b) = r.split_once(", at most ")?;
        Some(Range::above(num(a)?, num(b)?))
    }

    /// How the help of a flag states `range`.
    fn in_help(range: Range) -> String {
        match range {
            Range::Whole { min, max } => format!("{min} to {max}"),
            Range::Real {
                min,
                open_min: false,
                max,
            } => format!("{min} to {max}"),
            Range::Real { min, max, .. } => format!("above {min}, at most {max}"),
        }
    }

    /// Every numeric flag of every command, found in the command line's definition (so a new
    /// one cannot be left out), states its range in its help, takes both ends, and refuses
    /// 0 (where outside), its largest value plus one, NaN, infinity and a negative value:
    /// clap's error, exit code 2 before the command runs (so before any file is made), naming
    /// the flag and the range.
    #[test]
    fn every_numeric_flag_refuses_a_value_outside_its_stated_range() {
        let mut all = Vec::new();
        commands(&command(), &["conflictbench".to_owned()], &mut all);
        let mut tried = Vec::new();
        for (words, cmd) in &all {
            for arg in cmd.get_arguments().filter(|a| numeric(a)) {
                let long = arg.get_long().expect("a numeric flag has a long name");
                let flag = format!("--{long}");
                let parse = |v: &str| {
                    let mut argv = words.clone();
                    argv.extend([flag.clone(), v.to_owned()]);
                    command().try_get_matches_from(argv)
                };
                let what = format!("{} {flag}", words.join(" "));
                let e = parse("nan").expect_err(&what);
                let range = stated(&e.to_string())
                    .unwrap_or_else(|| panic!("{what}: no range stated: {e}"));
                let help = format!(
                    "{} {}",
                    arg.get_help().map(ToString::to_string).unwrap_or_default(),
                    arg.get_long_help()
                        .map(ToString::to_string)
                        .unwrap_or_default()
                );
                assert!(
                    help.contains(&in_help(range)),
                    "{what}: the help does not state {range}: {help}"
                );
                let (low, high, over, zero_in) = match range {
                    Range::Whole { min, max } => (
                        min.to_string(),
                        max.to_string(),
                        (u128::from(max) + 1).to_string(),
                        min == 0,
                    ),
                    Range::Real { min, open_min, max } => (
                        if open_min {
                            format!("{max}")
                        } else {
                            format!("{min}")
                        },
                        format!("{max}"),
                        format!("{}", max + 1.0),
                        min == 0.0 && !open_min,
                    ),
                };
                for ok in [&low, &high] {
                    if let Err(e) = parse(ok) {
                        panic!("{what} {ok}: refused, yet inside {range}: {e}");
                    }
                }
                let mut bad = vec![over.as_str(), "nan", "NaN", "inf", "1e400", "-1"];
                if !zero_in {
                    bad.push("0");
                }
                for v in bad {
                    let e = parse(v).expect_err(&format!("{what} {v}: taken"));
                    let said = e.to_string();
                    assert_eq!(
                        e.exit_code(),
                        i32::from(crate::exit::Exit::Config.code()),
                        "{what} {v}: {said}"
                    );
                    assert_eq!(
                        e.kind(),
                        clap::error::ErrorKind::ValueValidation,
                        "{what} {v}: {said}"
                    );
                    assert!(said.contains(&format!("'{flag} ")), "{what} {v}: {said}");
                    assert!(
                        said.contains(&format!("must be {range}")),
                        "{what} {v}: {said}"
                    );
                }
                tried.push(what);
            }
        }
        // build, eval, audit, batches run-dir, view and export all have numeric flags.
        for c in ["build", "eval", "audit", "run-dir", "view", "lm-eval"] {
            assert!(
                tried.iter().any(|t| t.contains(&format!(" {c} "))),
                "{c}: no numeric flag found: {tried:?}"
            );
        }
        assert!(tried.len() >= 40, "{}: {tried:#?}", tried.len());
    }
}
