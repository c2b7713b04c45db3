//! `conflictbench`: builds knowledge-conflict benchmarks (RECALL, KRE) from source datasets
//! through cached, resumable, rate-limited LLM calls.
//!
//! Exit codes: 0 done; 1 a build failed; 2 a configuration or argument error; 3 the budget
//! (`--max-cost`, `--max-tokens`) was reached: run the same command again to resume.

mod audit_cmd;
mod batch_cmd;
mod pool_cmd;
mod progress;

use anyhow::Context;
use cb_engine::recipe::{load_recipes, select};
use cb_engine::source::SourceOptions;
use cb_engine::{build_recipe, BuildOptions, EngineError};
use cb_llm::{pricing, ApiKey, BackendKind, Llm, LlmConfig, Price};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

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
        /// Folder of recipe files.
        #[arg(long, default_value = "recipes")]
        recipes: PathBuf,
    },
    /// Check generated or released benchmark files; report, HTML page, review sheet.
    Audit(Box<audit_cmd::AuditArgs>),
    /// Agreement of filled review sheets: per-item majority, percent agreement, Fleiss' kappa.
    Agreement(audit_cmd::AgreementArgs),
    /// List the Batch API batches in a cache's journal (state, counts), or cancel one.
    Batches(batch_cmd::BatchesArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Backend {
    /// Any OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp, Ollama).
    Openai,
    /// Deterministic rules, no network; labelled `offline` in every output.
    Offline,
    /// Answers only from the cache; a miss is an error.
    Replay,
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
    /// Folder of recipe files.
    #[arg(long, default_value = "recipes")]
    recipes: PathBuf,
    /// Folder of prompt templates.
    #[arg(long, default_value = "prompts")]
    prompts: PathBuf,
    /// Seed of every random choice (written in the manifest).
    #[arg(long, default_value_t = cb_engine::build::DEFAULT_SEED)]
    seed: u64,
    /// Model calls in flight at once.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Read at most N records of each source.
    #[arg(long)]
    limit: Option<usize>,
    /// Build from a seeded sample of N source records (drawn with `--seed`, kept in source
    /// order). Readers that select records themselves only (EventKG), so that memory grows
    /// with N, not with the dump.
    #[arg(long, value_name = "N")]
    sample: Option<usize>,
    /// Who answers: default `openai` when a base URL is set (flag or OPENAI_BASE_URL), else `offline`.
    #[arg(long, value_enum)]
    backend: Option<Backend>,
    /// Base URL of the OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1.
    #[arg(long, env = "OPENAI_BASE_URL")]
    base_url: Option<String>,
    /// Model name sent to the endpoint. For `replay`, default: the one in the previous manifest.
    #[arg(long)]
    model: Option<String>,
    /// Requests per minute (unlimited when absent).
    #[arg(long)]
    rpm: Option<u32>,
    /// Tokens per minute (unlimited when absent).
    #[arg(long)]
    tpm: Option<u32>,
    /// Retries of a call after 429, 5xx, a timeout or a broken connection.
    #[arg(long, default_value_t = 5)]
    max_retries: u32,
    /// First backoff delay in milliseconds (doubles each retry, with jitter).
    #[arg(long, default_value_t = 500)]
    backoff_ms: u64,
    /// Longest backoff delay in seconds.
    #[arg(long, default_value_t = 60)]
    backoff_max_s: u64,
    /// Seconds before a call times out.
    #[arg(long, default_value_t = 120)]
    timeout_s: u64,
    /// Stop cleanly (resumable, exit code 3) before the calls of this run cost more than this many USD.
    #[arg(long)]
    max_cost: Option<f64>,
    /// Stop cleanly (resumable, exit code 3) before the calls of this run use more tokens than this.
    #[arg(long)]
    max_tokens: Option<u64>,
    /// USD per million prompt tokens (default: the built-in table, 0 for unknown models).
    #[arg(long)]
    price_input: Option<f64>,
    /// USD per million completion tokens (default: the built-in table, 0 for unknown models).
    #[arg(long)]
    price_output: Option<f64>,
    /// Response cache (SQLite). Default: OUT/llm-cache.sqlite.
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Print how many calls would go upstream, their estimated tokens and cost; call nothing, write nothing.
    #[arg(long)]
    dry_run: bool,
    /// A malformed source record stops the build instead of becoming a reject.
    #[arg(long)]
    strict: bool,
    /// No progress bars.
    #[arg(long)]
    no_progress: bool,
    #[command(flatten)]
    batch: batch_cmd::BatchFlags,
    #[command(flatten)]
    pool: pool_cmd::PoolFlags,
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
            let code = match e.downcast_ref::<EngineError>() {
                Some(EngineError::Config(_)) => 2,
                Some(EngineError::Budget(_)) => 3,
                _ if e.downcast_ref::<ConfigError>().is_some() => 2,
                _ => 1,
            };
            eprintln!("error: {e:#}");
            if code == 3 {
                eprintln!("The responses received so far are cached: run the same command again to continue.");
            }
            ExitCode::from(code)
        }
    }
}

/// An argument error (exit code 2).
#[derive(Debug)]
struct ConfigError(String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for ConfigError {}

fn config_err(m: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(ConfigError(m.into()))
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Recipes { recipes } => {
            let all = load_recipes(&recipes)?;
            for r in all {
                let star = if r.default { "" } else { " (alternate)" };
                println_out(&format!(
                    "{:<8} {:<14} {}{star}",
                    r.benchmark, r.domain, r.description
                ));
            }
            Ok(())
        }
        Command::Build(args) => build(*args).await,
        Command::Audit(args) => audit_cmd::run_audit(*args),
        Command::Agreement(args) => audit_cmd::run_agreement(args),
        Command::Batches(args) => batch_cmd::run(args).await,
    }
}

#[allow(clippy::print_stdout)]
fn println_out(s: &str) {
    println!("{s}");
}

async fn build(mut args: BuildArgs) -> anyhow::Result<()> {
    let pool = args
        .pool
        .resolve(args.concurrency, args.rpm, args.tpm)
        .map_err(config_err)?;
    if let Some(p) = &pool {
        if args.batch.batch {
            return Err(config_err(
                "--batch and an endpoint pool cannot be combined",
            ));
        }
        // The pool stands in for --base-url (its first endpoint makes the backend openai).
        args.base_url
            .get_or_insert_with(|| p.endpoints[0].base_url.clone());
    }
    let calls_in_flight = pool.as_ref().map_or(args.concurrency, |p| {
        p.endpoints.iter().map(|e| e.concurrency).sum()
    });
    let recipes = load_recipes(&args.recipes)?;
    let selected = select(&recipes, &args.benchmark, &args.domains)?;
    let mut inputs = BTreeMap::new();
    for spec in &args.inputs {
        let (k, v) = spec
            .split_once('=')
            .ok_or_else(|| config_err(format!("--input {spec}: expected SOURCE=PATH")))?;
        inputs.insert(k.to_owned(), PathBuf::from(v));
    }
    let backend = match args.backend {
        Some(b) => b,
        None if args.base_url.is_some() => Backend::Openai,
        None => Backend::Offline,
    };
    if args.concurrency == 0 {
        return Err(config_err("--concurrency must be at least 1"));
    }
    let opts = BuildOptions {
        sources: SourceOptions {
            raw: args.raw.clone(),
            inputs,
            limit: args.limit,
            sample: args.sample,
            seed: args.seed,
            strict: args.strict,
        },
        out: args.out.clone(),
        prompts: args.prompts.clone(),
        seed: args.seed,
        // A batch round holds every item waiting on the model, so none is held back.
        concurrency: if args.batch.batch {
            1 << 30
        } else {
            calls_in_flight.saturating_mul(2)
        },
        write: !args.dry_run,
        steps: cb_steps::STEPS,
    };
    let reporter = progress::Bars::new(!args.no_progress && !args.dry_run);
    let mut dry_totals = (0u64, 0u64, 0f64);
    for recipe in selected {
        let mut config = llm_config(&args, backend, recipe)?;
        args.batch.apply(&mut config).map_err(config_err)?;
        if config.backend != BackendKind::Offline {
            config.pool.clone_from(&pool);
            config.concurrency = calls_in_flight;
        }
        let llm = Llm::new(config.clone()).context("cannot set up the LLM layer")?;
        let outcome = build_recipe(recipe, &opts, &llm, &reporter).await?;
        let stats = llm.stats();
        if args.dry_run {
            // Completion estimate: the offline answer's length stands in for the model's.
            let cost = config.price.usd(stats.estimated_tokens, 0);
            dry_totals.0 += stats.upstream_calls;
            dry_totals.1 += stats.estimated_tokens;
            dry_totals.2 += cost;
            println_out(&format!(
                "{}: {} calls ({} cached, {} to make), ~{} tokens, ~${:.4}{}",
                outcome.recipe,
                stats.calls,
                stats.cache_hits,
                stats.upstream_calls,
                stats.estimated_tokens,
                cost,
                if args.batch.batch {
                    " at the batch price"
                } else {
                    ""
                }
            ));
        } else {
            println_out(&format!(
                "{}: {} rows, {} rejected -> {} [{} upstream calls, {} cache hits, ${:.4}]",
                outcome.recipe,
                outcome.rows,
                outcome.rejected,
                outcome.dir.display(),
                stats.upstream_calls,
                stats.cache_hits,
                stats.spent_usd
            ));
        }
    }
    if args.dry_run {
        println_out(&format!(
            "total: {} calls to make, ~{} tokens, ~${:.4} (estimate: 4 characters a token, answers as long as the offline ones)",
            dry_totals.0, dry_totals.1, dry_totals.2
        ));
    }
    Ok(())
}

fn llm_config(
    args: &BuildArgs,
    backend: Backend,
    recipe: &cb_engine::Recipe,
) -> anyhow::Result<LlmConfig> {
    let mut c = LlmConfig::offline();
    c.concurrency = args.concurrency;
    c.rpm = args.rpm;
    c.tpm = args.tpm;
    c.max_retries = args.max_retries;
    c.backoff_base = Duration::from_millis(args.backoff_ms);
    c.backoff_max = Duration::from_secs(args.backoff_max_s);
    c.request_timeout = Duration::from_secs(args.timeout_s.max(1));
    c.max_cost_usd = args.max_cost;
    c.max_tokens = args.max_tokens;
    if backend == Backend::Offline {
        return Ok(c);
    }
    let previous = || -> Option<(String, String)> {
        let p = args
            .out
            .join(&recipe.benchmark)
            .join(&recipe.domain)
            .join("manifest.json");
        let m: cb_model::Manifest = serde_json::from_slice(&std::fs::read(p).ok()?).ok()?;
        (!m.offline).then_some((m.endpoint, m.model))
    };
    let (base_url, model) = match (backend, &args.base_url, &args.model) {
        (_, Some(u), Some(m)) => (u.clone(), m.clone()),
        (Backend::Replay, u, m) => {
            let prev = previous();
            let u = u.clone().or_else(|| prev.as_ref().map(|p| p.0.clone()));
            let m = m.clone().or_else(|| prev.as_ref().map(|p| p.1.clone()));
            match (u, m) {
                (Some(u), Some(m)) => (u, m),
                _ => return Err(config_err(format!(
                    "replay of {}: give --base-url and --model, or build it once with a model so its manifest names them",
                    recipe.name()
                ))),
            }
        }
        (_, None, _) => {
            return Err(config_err(
                "--backend openai needs --base-url (or OPENAI_BASE_URL)",
            ))
        }
        (_, Some(_), None) => return Err(config_err("--backend openai needs --model")),
    };
    let builtin = pricing::builtin(&model).unwrap_or_default();
    c.price = Price {
        input_per_million: args.price_input.unwrap_or(builtin.input_per_million),
        output_per_million: args.price_output.unwrap_or(builtin.output_per_million),
    };
    c.backend = if args.dry_run {
        BackendKind::DryRun
    } else if backend == Backend::Replay {
        BackendKind::Replay
    } else {
        BackendKind::Openai
    };
    c.base_url = base_url;
    c.model = model;
    c.api_key = ApiKey::new(std::env::var("OPENAI_API_KEY").unwrap_or_default());
    c.cache_path = Some(
        args.cache
            .clone()
            .unwrap_or_else(|| args.out.join("llm-cache.sqlite")),
    );
    Ok(c)
}
