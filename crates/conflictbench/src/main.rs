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
mod config_error;
mod eval_cmd;
mod export_cmd;
mod folder_lock;
mod llm_args;
mod llm_config;
mod models_file;
mod pool_file;
mod preflight;
mod progress;
mod signals;
mod stdout;
mod structured_arg;
mod view_cmd;

use anyhow::Context;
use cb_engine::recipe::select;
use cb_engine::source::SourceOptions;
use cb_engine::{build_recipes, BuildOptions, EngineError, Progress, RecipeJob};
use cb_engine::{Routes, Who};
use clap::{Args, Parser, Subcommand};
use config_error::{config_err, ConfigError};
use llm_config::LlmSetup;
use signals::{Signals, Stopped};
use std::path::{Path, PathBuf};
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
    Build(Box<BuildArgs>),
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

#[derive(Args, Debug)]
struct BuildArgs {
    /// What to build: `kre`, `recall` or `all`.
    benchmark: String,
    /// Comma-separated domains (e.g. `cose,ecare`); default: the benchmark's default domains.
    #[arg(long, value_delimiter = ',')]
    domains: Vec<String>,
    /// Folder with one sub-folder per source (`commonsenseqa`, `cos_e`, `ecare`, ...).
    #[arg(long, default_value = "raw")]
    raw: PathBuf,
    /// Override a source's files: `SOURCE=PATH` (a file, or a folder searched with the recipe's patterns). Repeatable.
    #[arg(long = "input", value_name = "SOURCE=PATH")]
    inputs: Vec<String>,
    /// Output folder; results go to OUT/<benchmark>/<domain>/.
    #[arg(long, default_value = "generated")]
    out: PathBuf,
    /// Folder of recipe files (default: ./recipes when present, else the bundled ones).
    #[arg(long)]
    recipes: Option<PathBuf>,
    /// Folder of prompt templates (default: ./prompts when present, else the bundled ones).
    #[arg(long)]
    prompts: Option<PathBuf>,
    /// Seed of every random choice (written in the manifest).
    #[arg(long, default_value_t = cb_engine::build::DEFAULT_SEED)]
    seed: u64,
    /// Read at most N records of each source (N >= 1).
    #[arg(long, value_parser = build_args::at_least_one)]
    limit: Option<usize>,
    /// Build from a seeded sample of N source records (drawn with `--seed`, kept in source
    /// order). Readers that select records themselves only (EventKG), so that memory grows
    /// with N, not with the dump.
    #[arg(long, value_name = "N", value_parser = build_args::at_least_one)]
    sample: Option<usize>,
    #[command(flatten)]
    llm: llm_args::LlmArgs,
    /// A malformed source record stops the build instead of becoming a reject.
    #[arg(long)]
    strict: bool,
    /// No progress bars.
    #[arg(long)]
    no_progress: bool,
    #[command(flatten)]
    batch: llm_args::BatchFlags,
    #[command(flatten)]
    pool: llm_args::PoolFlags,
    #[command(flatten)]
    reader: llm_args::ReaderArgs,
    #[command(flatten)]
    models: llm_args::ModelFlags,
}

#[allow(clippy::print_stderr)] // the binary's own last word on stderr
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
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&cli.log)),
        )
        .with_writer(std::io::stderr)
        .with_ansi(progress::colour_on_stderr())
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if let Some(stopped) = e.downcast_ref::<Stopped>() {
                // Not an error: the line says what was kept and how to resume.
                eprintln!("{stopped}");
                return ExitCode::from(stopped.code);
            }
            let code = exit_code(&e);
            eprintln!("error: {}", said_once(&e));
            if code == 3 {
                eprintln!("The responses received so far are cached: run the same command again to continue.");
            }
            ExitCode::from(code)
        }
    }
}

/// What went wrong, as every command's exit code says it: 2 a configuration or argument
/// error (a bad flag, recipe or input; a budget that cannot pay for one call), 3 the budget
/// reached (resumable), 1 anything else (a build or evaluation that failed). 0 and the
/// signal codes (130, 143) are decided before errors are.
fn exit_code(e: &anyhow::Error) -> u8 {
    use cb_eval::EvalError;
    use cb_llm::LlmError;
    let llm = |l: &LlmError| match l {
        LlmError::Config(_) => 2,
        LlmError::Budget(_) => 3,
        _ => 1,
    };
    if e.downcast_ref::<ConfigError>().is_some() {
        return 2;
    }
    if let Some(e) = e.downcast_ref::<EngineError>() {
        return match e {
            EngineError::Config(_) => 2,
            EngineError::Budget(_) => 3,
            EngineError::Llm(l) => llm(l),
            _ => 1,
        };
    }
    if let Some(e) = e.downcast_ref::<EvalError>() {
        return match e {
            EvalError::Config(_) | EvalError::Data(_) => 2,
            EvalError::Budget(_) => 3,
            EvalError::Llm(l) => llm(l),
            _ => 1,
        };
    }
    e.downcast_ref::<LlmError>().map_or(1, llm)
}

/// `e` and its causes joined by `: ` (as `{e:#}` prints them), a cause left out when the
/// text before it already says it: an error whose message embeds its source (`cannot write
/// PATH: {source}`) would otherwise print the OS error twice.
fn said_once(e: &anyhow::Error) -> String {
    let mut said = String::new();
    for cause in e.chain() {
        let c = cause.to_string();
        if said.contains(&c) {
            continue;
        }
        if !said.is_empty() {
            said.push_str(": ");
        }
        said.push_str(&c);
    }
    said
}

/// A `--batch-dir` build with requests waiting in files: exit code 4, and what to run. The
/// files said are this build's (`files`: those its layers' calls waited on) still without
/// an output file, whatever else the folder holds.
fn waiting_for(
    dir: &Path,
    recipes: &[String],
    files: std::collections::BTreeSet<PathBuf>,
) -> anyhow::Result<Stopped> {
    let files = cb_llm::batch_files::pending(files)
        .with_context(|| format!("cannot read {}", dir.display()))?;
    let requests: usize = files.iter().map(|f| f.requests).sum();
    let mut m = format!(
        "{} waiting for answers: {requests} requests in {} batch files in {}\n",
        recipes.join(", "),
        files.len(),
        dir.display()
    );
    for f in &files {
        m.push_str(&format!(
            "  {}  {} requests, model {}\n",
            f.path.display(),
            f.requests,
            f.model
        ));
    }
    let (first, model) = files
        .first()
        .map(|f| (f.path.clone(), f.model.as_str()))
        .unwrap_or_default();
    m.push_str(&format!(
        "Answer each file into the file beside it named .output.jsonl instead of .jsonl, for example\n  \
         conflictbench batches run-dir {dir} --base-url URL\n  \
         python -m vllm.entrypoints.openai.run_batch -i {input} -o {output} --model {model}\n  \
         python scripts/ray-batch.py {dir} --base-url URL   (Ray Data; --model-source M on GPUs)\n\
         then run this command again: it imports the answers and goes on (see README, \"Batch files\").",
        dir = dir.display(),
        input = first.display(),
        output = cb_llm::batch_files::output_path(&first).display(),
    ));
    Ok(Stopped {
        code: 4,
        message: m,
    })
}

/// `--out` must be a folder or not exist yet: a file (or a path through one) is a
/// configuration error, said with the OS's words, before anything is read or sent.
fn check_out(out: &std::path::Path) -> anyhow::Result<()> {
    let refused = |e: std::io::Error| config_err(format!("--out {}: {e}", out.display()));
    match std::fs::metadata(out) {
        Ok(m) if m.is_dir() => Ok(()),
        // Reading a file as a folder gives the OS's own "Not a directory".
        Ok(_) => std::fs::read_dir(out).map(|_| ()).map_err(refused),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(refused(e)),
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Recipes {
            explain: Some(kind),
            ..
        } => {
            let table = cb_steps::STEPS.explain(&kind).ok_or_else(|| {
                config_err(format!(
                    "unknown step kind '{kind}'; known: {}",
                    cb_steps::STEPS.kinds().collect::<Vec<_>>().join(", ")
                ))
            })?;
            println_out(table.trim_end());
            Ok(())
        }
        Command::Recipes { recipes, .. } => {
            let (files, all) = assets::recipes(recipes.as_deref())?;
            for r in all {
                let star = if r.default { "" } else { " (alternate)" };
                println_out(&format!(
                    "{:<8} {:<14} {}{star}",
                    r.benchmark, r.domain, r.description
                ));
            }
            println_out(&format!("(recipes: {})", files.origin()));
            Ok(())
        }
        Command::Init(args) => {
            println_out(&assets::init(&args)?);
            Ok(())
        }
        Command::Build(args) => build(*args).await,
        Command::Audit(args) => audit_cmd::run_audit(*args).await,
        Command::Agreement(args) => audit_cmd::run_agreement(args),
        Command::Eval(args) => eval_cmd::run(*args).await,
        Command::Batches(args) => batch_cmd::run(args).await,
        Command::Export(args) => export_cmd::run(args),
        Command::View(args) => view_cmd::run(*args).await,
    }
}

async fn build(args: BuildArgs) -> anyhow::Result<()> {
    check_out(&args.out)?;
    let setup = LlmSetup::for_build(
        &args.llm,
        (&args.batch, &args.pool, &args.reader),
        &args.models,
        &args.out,
    )?;
    let (_, recipes) = assets::recipes(args.recipes.as_deref())?;
    let selected = select(&recipes, &args.benchmark, &args.domains)?;
    let prompts = assets::prompt_files(args.prompts.as_deref())?;
    // Every selected recipe's steps are checked and built, and every route decided, before
    // the first one builds and before any file or cache is made.
    let mut built = Vec::new();
    for r in &selected {
        r.check_steps(&cb_steps::STEPS)?;
        built.push((*r, r.load_steps(&cb_steps::STEPS, &prompts)?));
    }
    setup.check_recipes(&built)?;
    let inputs = build_args::inputs(&args.inputs, &selected)?;
    if args.llm.concurrency == 0 {
        return Err(config_err("--concurrency must be at least 1"));
    }
    setup.preflight(&selected)?;
    let run = BuildRun {
        opts: BuildOptions {
            sources: SourceOptions {
                raw: args.raw.clone(),
                inputs,
                limit: args.limit,
                sample: args.sample,
                seed: args.seed,
                strict: args.strict,
            },
            out: args.out.clone(),
            prompts,
            seed: args.seed,
            write: !setup.dry_run(),
            steps: cb_steps::STEPS,
        },
        reporter: progress::Bars::new(!args.no_progress && !setup.dry_run()),
        setup,
    };
    // One build per folder (its --out, its --batch-dir), taken before the first file is
    // made; a dry run makes none.
    let _held = if run.setup.dry_run() {
        Vec::new()
    } else {
        folder_lock::for_build(&args.out, run.setup.batch_dir())?
    };
    let prepared = run.prepare(&selected)?;
    let outcomes = run.build_all(&prepared).await?;
    run.say(prepared, outcomes)
}

/// What every recipe of a `build` is built with.
struct BuildRun {
    setup: LlmSetup,
    opts: BuildOptions,
    reporter: progress::Bars,
}

/// One recipe of a build, with its routing table (who answers what).
struct Job<'r> {
    recipe: &'r cb_engine::Recipe,
    routes: Routes,
}

/// A recipe built, with the routes that built it.
struct Built {
    outcome: cb_engine::BuildOutcome,
    routes: Routes,
}

impl Job<'_> {
    fn built(self, outcome: cb_engine::BuildOutcome) -> Built {
        Built {
            outcome,
            routes: self.routes,
        }
    }
}

/// The engine's progress hooks, passed on to the bars, with the recipes finished so far (a
/// signal records the others as stopped).
struct Finishing<'a> {
    bars: &'a progress::Bars,
    done: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

impl Progress for Finishing<'_> {
    fn shows_total(&self) -> bool {
        self.bars.shows_total()
    }
    fn start(&self, recipe: &str, total: u64) {
        self.bars.start(recipe, total);
    }
    fn item_done(&self, recipe: &str, llm: &cb_llm::StatsSnapshot) {
        self.bars.item_done(recipe, llm);
    }
    fn finish(&self, recipe: &str, rows: u64, rejected: u64) {
        self.done
            .lock()
            .expect("finished lock")
            .insert(recipe.to_owned());
        self.bars.finish(recipe, rows, rejected);
    }
}

impl BuildRun {
    /// Says each recipe's outcome, in the selection's order: its line (or its dry-run
    /// estimate), then the run's error: the first recipe that failed, else the recipes whose
    /// requests wait in batch files.
    fn say(
        &self,
        prepared: Vec<Job<'_>>,
        outcomes: Vec<Result<cb_engine::BuildOutcome, EngineError>>,
    ) -> anyhow::Result<()> {
        let mut dry_totals = DryTotals::default();
        // --batch-dir: recipes whose requests wait in batch files (the others still build).
        let mut waiting = Vec::new();
        // The first recipe (in the selection's order) that failed gives the run's error, once
        // every built recipe has said its line.
        let mut failed = None;
        let files = prepared
            .iter()
            .flat_map(|j| j.routes.layers())
            .flat_map(|(_, l)| l.waiting_files())
            .collect();
        for (job, outcome) in prepared.into_iter().zip(outcomes) {
            let outcome = match outcome {
                Ok(o) => o,
                Err(EngineError::Llm(cb_llm::LlmError::Waiting(_))) => {
                    self.reporter.finish(&job.recipe.name(), 0, 0);
                    waiting.push(job.recipe.name());
                    continue;
                }
                Err(e) => {
                    failed.get_or_insert(e);
                    continue;
                }
            };
            let built = job.built(outcome);
            if self.setup.dry_run() {
                println_out(&dry_totals.add(&built, self.setup.batch_api()));
            } else {
                println_out(&built.line());
            }
        }
        if let Some(e) = failed {
            return Err(e.into());
        }
        if let Some(dir) = self.setup.batch_dir() {
            if !waiting.is_empty() {
                return Err(anyhow::Error::new(waiting_for(dir, &waiting, files)?));
            }
        }
        if self.setup.dry_run() {
            println_out(&dry_totals.line());
        }
        Ok(())
    }

    /// Every recipe's routes, made before the first one builds. The recipes' layers are each
    /// their own (own counters: each recipe's line and `runs.jsonl` say what it spent), all
    /// of the run's one roster: one cache writer and one budget for the whole command, and
    /// one limiter a model, so recipes built at once keep `--concurrency` and the rates
    /// against the endpoint.
    fn prepare<'r>(&self, selected: &[&'r cb_engine::Recipe]) -> anyhow::Result<Vec<Job<'r>>> {
        selected.iter().map(|r| self.job(r)).collect()
    }

    /// One recipe's routes (a replay's endpoint and reader come from the recipe's previous
    /// manifest).
    fn job<'r>(&self, recipe: &'r cb_engine::Recipe) -> anyhow::Result<Job<'r>> {
        let manifest = || -> Option<cb_model::Manifest> {
            let p = self
                .opts
                .out
                .join(&recipe.benchmark)
                .join(&recipe.domain)
                .join("manifest.json");
            serde_json::from_slice(&std::fs::read(p).ok()?).ok()
        };
        let routes = self.setup.routes(recipe, &manifest)?;
        Ok(Job { recipe, routes })
    }

    /// Builds every recipe at once ([`cb_engine::build_recipes`]): each one's outcome, in
    /// order. A signal stops the build with [`Stopped`].
    async fn build_all(
        &self,
        jobs: &[Job<'_>],
    ) -> anyhow::Result<Vec<Result<cb_engine::BuildOutcome, EngineError>>> {
        let engine_jobs: Vec<RecipeJob<'_>> = jobs
            .iter()
            .map(|j| RecipeJob {
                recipe: j.recipe,
                opts: &self.opts,
                routes: &j.routes,
            })
            .collect();
        let progress = Finishing {
            bars: &self.reporter,
            done: Default::default(),
        };
        let mut signals = Signals::new();
        // A signal drops the build future: its tasks stop, and every answer already handed
        // out is committed to the cache (the writer commits before it answers), so a re-run
        // resumes without paying for any of them again.
        // On a signal the layers stop sending before the build is dropped: its tasks run on
        // other threads until then, and a call they sent in that moment would be paid for
        // and never received.
        // The roster stops every layer it ever made: writers, readers, named models, panels,
        // of every recipe.
        let stop_on_signal = async {
            let s = signals.next().await;
            let roles = self
                .setup
                .roster()
                .stop_all(&format!("the build was stopped by {}", s.0));
            let roles: Vec<String> = roles.iter().map(ToString::to_string).collect();
            tracing::info!("{}: stopped {}", s.0, roles.join(", "));
            (s, roles)
        };
        tokio::select! {
            r = build_recipes(&engine_jobs, &progress) => Ok(r),
            (s, roles) = stop_on_signal => {
                let done = progress.done.lock().expect("finished lock").clone();
                let left: Vec<&Job<'_>> =
                    jobs.iter().filter(|j| !done.contains(&j.recipe.name())).collect();
                Err(self.stopped(&left, s, &roles))
            }
        }
    }

    /// The error of a build stopped by `signal` while building the recipes `left`: what was
    /// kept and how to resume (each one's run is recorded as stopped).
    fn stopped(
        &self,
        left: &[&Job<'_>],
        (signal, code): (&str, u8),
        roles: &[String],
    ) -> anyhow::Error {
        let why = format!("stopped by {signal}");
        let (mut calls, mut hits, mut usd) = (0, 0, 0.0);
        for job in left {
            self.reporter.finish(&job.recipe.name(), 0, 0);
            let (opts, routes) = (&self.opts, &job.routes);
            if let Err(w) = cb_engine::build::record_stopped(job.recipe, opts, routes, &why) {
                tracing::warn!(error = %w, "cannot record the stopped run");
            }
            let stats = job.routes.total();
            (calls, hits, usd) = (
                calls + stats.upstream_calls,
                hits + stats.cache_hits,
                usd + stats.spent_usd,
            );
        }
        let names: Vec<String> = left.iter().map(|j| j.recipe.name()).collect();
        let name = names.join(", ");
        let message = if self.setup.dry_run() {
            format!("{why} during the dry run of {name}: nothing was written")
        } else {
            format!(
                "{why} while building {name} (every model stopped: {}): the answers received so far are cached ({calls} calls sent, {hits} cache hits, ${usd:.4}); run the same command again to resume",
                roles.join(", ")
            )
        };
        anyhow::Error::new(Stopped { code, message })
    }
}

impl Built {
    /// The line a built recipe prints: rows, rejects, where, and what the calls cost: the
    /// writer's, then an unnamed reader's and each named model's (the routing table's
    /// figures, every layer counted once).
    fn line(&self) -> String {
        let figures = self.routes.figures();
        let mut others = String::new();
        for (who, s) in &figures {
            let name = match who {
                Who::Build => continue,
                Who::Reader => "reader",
                Who::Named(n) => n.as_str(),
            };
            others.push_str(&format!(
                "; {name}: {} upstream calls, {} cache hits, ${:.4}",
                s.upstream_calls, s.cache_hits, s.spent_usd
            ));
        }
        let stats = figures.get(&Who::Build).copied().unwrap_or_default();
        let o = &self.outcome;
        format!(
            "{}: {} rows, {} rejected -> {} [{} upstream calls, {} cache hits, ${:.4}{others}]",
            o.recipe,
            o.rows,
            o.rejected,
            o.dir.display(),
            stats.upstream_calls,
            stats.cache_hits,
            stats.spent_usd,
        )
    }
}

/// A dry run's totals over its recipes: calls to make, estimated tokens, estimated cost.
#[derive(Default)]
struct DryTotals {
    calls: u64,
    tokens: u64,
    usd: f64,
}

impl DryTotals {
    /// Adds a recipe's dry run and says it in one line (`batch`: priced at the batch price):
    /// the writer's calls, then each other model's (an unnamed reader, named models, panels),
    /// every layer of the routing table once.
    fn add(&mut self, built: &Built, batch: bool) -> String {
        let mut parts = Vec::new();
        for (who, s) in built.routes.figures() {
            let price = built.routes.layers_of(&who)[0].config().price;
            // Completion estimate: the offline answer's length stands in for the model's.
            let cost = price.usd(s.estimated_tokens, 0);
            self.calls += s.upstream_calls;
            self.tokens += s.estimated_tokens;
            self.usd += cost;
            let said = format!(
                "{} calls ({} cached, {} to make), ~{} tokens, ~${cost:.4}",
                s.calls, s.cache_hits, s.upstream_calls, s.estimated_tokens
            );
            parts.push(match who {
                Who::Build => format!("{said}{}", if batch { " at the batch price" } else { "" }),
                Who::Reader => format!("; reader: {said}"),
                Who::Named(n) => format!("; {n}: {said}"),
            });
        }
        format!("{}: {}", built.outcome.recipe, parts.concat())
    }

    fn line(&self) -> String {
        format!(
            "total: {} calls to make, ~{} tokens, ~${:.4} (estimate: 4 characters a token, answers as long as the offline ones)",
            self.calls, self.tokens, self.usd
        )
    }
}
