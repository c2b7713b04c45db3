//! `conflictbench eval recall|kre|conflictbank`: evaluates a model on a built benchmark with
//! the paper's metrics, through the same LLM layer (and flags) as `build` (ConflictBank's:
//! `cb_eval::conflictbank_run`); `conflictbench eval compare
//! RUN_DIR RUN_DIR...`: the differences between evaluation runs, paired item by item
//! (`cb_eval::compare`); `conflictbench eval conflictbank-predictions PRED_DIR`: ConflictBank's
//! figures from its own prediction files (`cb_eval::conflictbank`).
//!
//! The offline backend has no model to evaluate, so it is refused (exit code 2); `--dry-run`
//! counts the calls and writes nothing; `--backend replay` re-scores from the cache only.

use crate::config_error::config_err;
use crate::exit::Stopped;
use crate::flag_values::{range, real32, whole};
use crate::llm_args::LlmArgs;
use crate::llm_config::LlmSetup;
use crate::progress;
use crate::signals::Signals;
use crate::stdout::println_out;
use anyhow::Context;
use cb_eval::{EvalOptions, Sampling};
use cb_llm::{ranges, BackendKind};
use cb_llm::{Progress, Role};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// `eval BENCHMARK ...` evaluates a model; `eval compare ...` compares evaluations.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct EvalArgs {
    #[command(subcommand)]
    pub command: Option<EvalCommand>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Subcommand, Debug)]
pub enum EvalCommand {
    /// Compare evaluation runs of one benchmark, data and prompt set: each figure recomputed
    /// on the items, settings and seeds all runs share, and each run's difference to the
    /// first with a 95 % paired bootstrap interval (compare.json, compare.md, compare.html).
    Compare(CompareArgs),
    /// ConflictBank's figures from prediction files in the layout its `inference.py` writes
    /// (a folder of `<setting>.json`, `default.json` and `correct.json` among them), equal to
    /// what its `evaluate.py` computes: correct, replaced and uncertain accuracy, memorization
    /// ratio and average entropy over the questions right with no evidence and with the
    /// correct one.
    ConflictbankPredictions(CbPredictionsArgs),
}

#[derive(Args, Debug)]
pub struct CbPredictionsArgs {
    /// The folder of prediction files.
    #[arg(value_name = "PRED_DIR")]
    pub dir: PathBuf,
    /// Also write the figures as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Evaluation output folders (each with results.json and predictions.jsonl); the first
    /// is the baseline.
    #[arg(value_name = "RUN_DIR", num_args = 2.., required = true)]
    pub runs: Vec<PathBuf>,
    /// Output folder for compare.json, compare.md and compare.html.
    /// Default: `generated/eval/<benchmark>/compare`.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Which benchmark: `recall`, `kre` or `conflictbank` (a ConflictBank-style build).
    // Required (the parser says so), unless `compare` is given: an `Option` only so that
    // `eval compare ...` leaves it out.
    #[arg(required = true)]
    pub benchmark: Option<String>,
    /// Benchmark files or folders. Default: `generated/<benchmark>`. KRE's released files
    /// (`cose.json`, ...) are read as they are.
    #[arg(long = "data", value_name = "PATH")]
    pub data: Vec<PathBuf>,
    /// Output folder for predictions.jsonl, results.json, results.md, results.html
    /// (ConflictBank: `<domain>/seed-<seed>/<setting>.json`, results.json, results.md).
    /// Default: `generated/eval/<benchmark>/<model>`.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Comma-separated domains (e.g. `eventkg,uj` or `cose,ecare`); default: all found.
    #[arg(long, value_delimiter = ',')]
    pub domains: Vec<String>,
    /// Comma-separated settings. RECALL: original, edited, none. KRE: memory, zero_shot,
    /// all_positive, all_negative, mixed, role_dependent, role_intuitive (memory always runs).
    /// ConflictBank: default, correct, misinformation, temporal, semantic,
    /// correct_misinformation, ..., misinformation_correct, ... (default and correct always
    /// run).
    #[arg(long, value_delimiter = ',')]
    pub settings: Vec<String>,
    /// Number of seeds (runs): seeds SEED, SEED+1, ... (1 to 1000).
    #[arg(long, default_value_t = 3, value_parser = whole::<u64>(range::SEEDS))]
    pub seeds: u64,
    /// First seed (option order, few-shot examples, the request's seed; 0 to
    /// 9223372036854775807, and the last seed no more).
    #[arg(long, default_value_t = 42, value_parser = whole::<u64>(ranges::SEED))]
    pub seed: u64,
    /// Evaluate at most N rows of each file (1 to 18446744073709551615).
    #[arg(long, value_parser = whole::<usize>(range::RECORDS))]
    pub limit: Option<usize>,
    /// Folder of prompt templates (the eval ones are in its `eval/`); default: `prompts/` of
    /// the current folder when it exists, else the ones built into the binary.
    #[arg(long)]
    pub prompts: Option<PathBuf>,
    /// Sampling temperature of the model under test (0 to 2).
    #[arg(long, default_value_t = 0.0, value_parser = real32(ranges::TEMPERATURE))]
    pub temperature: f32,
    /// Longest answer, in tokens (1 to 1000000).
    #[arg(long, default_value_t = 256, value_parser = whole::<u32>(ranges::ANSWER_TOKENS))]
    pub answer_tokens: u32,
    /// KRE: use KRE's instruction pool (the `instructions/` folder of its release) instead
    /// of our instruction.
    #[arg(long, value_name = "DIR")]
    pub kre_instructions: Option<PathBuf>,
    /// KRE: which instruction of the pool (`N.txt`).
    #[arg(long, default_value = "1")]
    pub instruction: String,
    /// KRE: take the pool's instructions that warn the context may mislead.
    #[arg(long)]
    pub hint: bool,
    /// KRE: use KRE's few-shot examples (the `prompt_examples/` folder of its release)
    /// instead of examples drawn from the benchmark's other rows.
    #[arg(long, value_name = "DIR")]
    pub kre_examples: Option<PathBuf>,
    /// ConflictBank: ask for the top N log-probabilities of each answer's first token
    /// (0 to 20; default 20, 0: ask for none), from which each prediction line's `prob` and
    /// the average entropy come. An endpoint that ignores the request sends none: entropy is
    /// then "not measured"; one that refuses it (HTTP 400) needs `--logprobs 0`.
    #[arg(long, value_name = "N", value_parser = whole::<u8>(range::LOGPROBS))]
    pub logprobs: Option<u8>,
    /// No progress bars.
    #[arg(long)]
    pub no_progress: bool,
    #[command(flatten)]
    pub llm: LlmArgs,
}

/// `eval conflictbank`'s `--logprobs` when not given: the most OpenAI sends, and vLLM's
/// default ceiling.
const DEFAULT_LOGPROBS: u8 = 20;

fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

pub async fn run(args: EvalArgs) -> anyhow::Result<()> {
    match args.command {
        Some(EvalCommand::Compare(c)) => compare(&c),
        Some(EvalCommand::ConflictbankPredictions(c)) => conflictbank_predictions(&c),
        None => run_eval(args.run).await,
    }
}

fn conflictbank_predictions(args: &CbPredictionsArgs) -> anyhow::Result<()> {
    let results = match cb_eval::conflictbank::evaluate_predictions(&args.dir) {
        Ok(r) => r,
        Err(cb_eval::EvalError::Config(m)) => return Err(config_err(m)),
        Err(e @ cb_eval::EvalError::Data(_)) => return Err(config_err(e.to_string())),
        Err(e) => return Err(e.into()),
    };
    if let Some(path) = &args.json {
        match cb_eval::conflictbank::write_json(path, &results) {
            Err(cb_eval::EvalError::Config(m)) => return Err(config_err(m)),
            other => other?,
        }
    }
    println_out(&cb_eval::conflictbank::markdown(&results));
    Ok(())
}

fn compare(args: &CompareArgs) -> anyhow::Result<()> {
    let c = cb_eval::compare::compare(&args.runs)?;
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("generated/eval")
            .join(file_safe(&c.benchmark))
            .join("compare")
    });
    cb_eval::compare::write_all(&out, &c)?;
    println_out(&cb_eval::compare::markdown(&c));
    let significant = c
        .figures
        .iter()
        .flat_map(|f| &f.differences)
        .filter(|d| d.excludes_zero)
        .count();
    println_out(&format!(
        "{} figures compared on {} shared rows, {significant} differences exclude 0 -> {}",
        c.figures.len(),
        c.shared_rows,
        out.display()
    ));
    Ok(())
}

async fn run_eval(args: RunArgs) -> anyhow::Result<()> {
    let bench = args.benchmark.as_deref().unwrap_or_default();
    if !["recall", "kre", "conflictbank"].contains(&bench) {
        return Err(config_err(format!(
            "unknown benchmark {bench:?}: expected recall, kre or conflictbank"
        )));
    }
    let model = args.llm.model.clone().unwrap_or_default();
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("generated/eval")
            .join(bench)
            .join(file_safe(&model))
    });
    let setup = LlmSetup::for_eval(&args.llm, &out);
    if setup.mode().backend() == BackendKind::Offline {
        return Err(config_err(
            "eval needs a model under test: give --base-url and --model (or --backend replay); the offline backend has no answers of its own to evaluate",
        ));
    }
    seeds_in_range(&args)?;
    let data = if args.data.is_empty() {
        vec![PathBuf::from("generated").join(bench)]
    } else {
        args.data.clone()
    };
    if bench != "conflictbank" && args.logprobs.is_some() {
        return Err(config_err(format!(
            "--logprobs is a flag of `eval conflictbank` (its entropy); `eval {bench}` scores the answer's text only"
        )));
    }
    if bench != "kre" {
        // Before the output folder or the cache is made.
        kre_flags_refused(&args, bench)?;
    }
    if bench == "conflictbank" {
        cb_eval::conflictbank_export::find_rows_in(&data).map_err(|e| config_err(e.to_string()))?;
    }
    setup.check_endpoints(&[])?;
    let config = setup.writer(|| None, &format!("the {bench} evaluation"))?;
    let created = crate::created::Created::before(config.cache_path.as_deref(), &[]);
    // One command per output folder, before the first file is made there.
    let out_was_there = out.exists();
    let held = crate::folder_lock::lock(&out, crate::folder_lock::FOLDER, "--out")?;
    // One writer a cache (a replay or a dry run only reads it).
    let cache_held = match &config.cache_path {
        Some(c) if setup.mode().writes_cache() => {
            match crate::folder_lock::for_file(c, "--cache") {
                Ok(h) => Some(h),
                Err(e) => {
                    drop(held);
                    if !out_was_there {
                        let _ = std::fs::remove_dir(&out);
                    }
                    created.undo();
                    return Err(e);
                }
            }
        }
        _ => None,
    };
    let result = until_stopped(&args, (&setup, config), data, &out).await;
    drop(cache_held);
    drop(held);
    if (result.is_err() || setup.mode().dry_run()) && !out_was_there {
        // Made for the lock only (the cache elsewhere; a dry run writes nothing): removed
        // when empty.
        let _ = std::fs::remove_dir(&out);
    }
    if result.is_err() {
        created.undo();
    }
    result
}

/// The last of `--seeds` seeds from `--seed` still fits a request's seed.
fn seeds_in_range(args: &RunArgs) -> anyhow::Result<()> {
    let most = ranges::SEED.max_whole().unwrap_or(u64::MAX);
    if args
        .seed
        .checked_add(args.seeds - 1)
        .is_none_or(|last| last > most)
    {
        return Err(config_err(format!(
            "--seed {} with --seeds {}: the last seed would pass {most}, the largest a request's seed may be",
            args.seed, args.seeds
        )));
    }
    Ok(())
}

/// KRE's own flags, refused for RECALL and ConflictBank (their prompts have no instruction
/// or examples to choose).
fn kre_flags_refused(args: &RunArgs, bench: &str) -> anyhow::Result<()> {
    let given = [
        (args.kre_instructions.is_some(), "--kre-instructions"),
        (args.instruction != "1", "--instruction"),
        (args.hint, "--hint"),
        (args.kre_examples.is_some(), "--kre-examples"),
    ];
    match given.iter().find(|(g, _)| *g) {
        Some((_, flag)) => Err(config_err(format!(
            "{flag} is a flag of `eval kre`: the prompts of `eval {bench}` (prompts/eval/) have no instruction or examples to choose"
        ))),
        None => Ok(()),
    }
}

/// [`evaluate`], stopped by SIGINT or SIGTERM as a build is: the model under test sends
/// nothing more, the evaluation is dropped (every answer received is in the cache: the
/// writer commits before it answers), and the stop says what was done, what is left and how
/// to resume ([`Stopped`]: exit 130 or 143).
async fn until_stopped(
    args: &RunArgs,
    (setup, config): (&LlmSetup, cb_llm::LlmConfig),
    data: Vec<PathBuf>,
    out: &Path,
) -> anyhow::Result<()> {
    let mut signals = Signals::new();
    let counted = Counted {
        bars: progress::Bars::new(!args.no_progress && !setup.mode().dry_run()),
        seen: Mutex::default(),
    };
    let stop = async {
        let s = signals.next().await;
        let why = format!("the evaluation was stopped by {}", s.0);
        setup.roster().stop_all(&why);
        s
    };
    let (signal, code) = tokio::select! {
        r = evaluate(args, (setup, config), data, out, &counted) => return r,
        s = stop => s,
    };
    // A call another thread was accounting may still be under way: the figures wait for it.
    if tokio::time::timeout(SETTLING, setup.roster().settled())
        .await
        .is_err()
    {
        tracing::warn!(
            "calls still under way {SETTLING:?} after the stop: the figures said may miss them"
        );
    }
    let seen = counted.seen.lock().expect("eval counts").clone();
    for name in &seen.started {
        counted.bars.finish(name, 0, 0);
    }
    let bench = args.benchmark.as_deref().unwrap_or_default();
    let s = seen.llm;
    let message = if setup.mode().dry_run() {
        format!(
            "stopped by {signal} during the dry run of the {bench} evaluation: nothing was written"
        )
    } else {
        format!(
            "stopped by {signal} during the {bench} evaluation: {} of {} answers of the runs started are in, {} left (and the runs not started); nothing written to {}; the answers received so far are cached ({} calls sent, {} cache hits, ${:.4}); run the same command again to resume",
            seen.done,
            seen.total,
            seen.total.saturating_sub(seen.done),
            out.display(),
            s.upstream_calls,
            s.cache_hits,
            s.spent_usd
        )
    };
    Err(anyhow::Error::new(Stopped { code, message }))
}

/// The longest a stopped evaluation waits for the calls under way before it says its figures.
const SETTLING: std::time::Duration = std::time::Duration::from_secs(5);

/// The progress hooks passed on to the bars, with what a stop says: the runs started, their
/// answers in and the layer's last counters.
struct Counted {
    bars: progress::Bars,
    seen: Mutex<Seen>,
}

#[derive(Clone, Default)]
struct Seen {
    started: Vec<String>,
    total: u64,
    done: u64,
    llm: cb_llm::StatsSnapshot,
}

impl cb_llm::Progress for Counted {
    fn shows_total(&self) -> bool {
        self.bars.shows_total()
    }
    fn start(&self, name: &str, total: u64) {
        {
            let mut seen = self.seen.lock().expect("eval counts");
            seen.started.push(name.to_owned());
            seen.total += total;
        }
        self.bars.start(name, total);
    }
    fn item_done(&self, name: &str, llm: &cb_llm::StatsSnapshot) {
        {
            let mut seen = self.seen.lock().expect("eval counts");
            seen.done += 1;
            seen.llm = *llm;
        }
        self.bars.item_done(name, llm);
    }
    fn finish(&self, name: &str, rows: u64, rejected: u64) {
        self.seen
            .lock()
            .expect("eval counts")
            .started
            .retain(|n| n != name);
        self.bars.finish(name, rows, rejected);
    }
}

/// The evaluation proper, from opening the LLM layer (and its cache) on: the model under test
/// is the writer of `setup`'s roster, configured by `config`; the layer is closed when this
/// returns (a failed run's cache is then removed, see [`crate::created::Created`]).
async fn evaluate(
    args: &RunArgs,
    (setup, config): (&LlmSetup, cb_llm::LlmConfig),
    data: Vec<PathBuf>,
    out: &Path,
    bars: &Counted,
) -> anyhow::Result<()> {
    let bench = args.benchmark.as_deref().unwrap_or_default();
    let llm = setup
        .roster()
        .layer(&Role::Writer, config.clone())
        .context("cannot set up the LLM layer")?;
    let opts = EvalOptions {
        data,
        prompts: crate::assets::prompt_files(args.prompts.as_deref())?,
        domains: args.domains.clone(),
        settings: args.settings.clone(),
        seeds: (0..args.seeds).map(|i| args.seed + i).collect(),
        limit: args.limit,
        sampling: Sampling {
            temperature: args.temperature,
            max_tokens: args.answer_tokens,
        },
        concurrency: args.llm.concurrency,
        kre_instructions: args.kre_instructions.clone(),
        instruction: args.instruction.clone(),
        hint: args.hint,
        kre_examples: args.kre_examples.clone(),
        logprobs: (bench == "conflictbank").then(|| args.logprobs.unwrap_or(DEFAULT_LOGPROBS)),
    };
    if bench == "conflictbank" {
        return conflictbank(&llm, &opts, bars, (setup, &config), out).await;
    }
    let (results, predictions) = if bench == "recall" {
        cb_eval::recall::evaluate(&llm, &opts, bars).await?
    } else {
        cb_eval::kre::evaluate(&llm, &opts, bars).await?
    };
    let stats = llm.stats();
    if dry_run_said(bench, setup, &config, &stats) {
        return Ok(());
    }
    cb_eval::report::write_all(out, &results, &predictions)?;
    println_out(&cb_eval::report::markdown(&results));
    println_out(&format!(
        "{} predictions -> {} [{} upstream calls, {} cache hits, ${:.4}]",
        predictions.len(),
        out.display(),
        stats.upstream_calls,
        stats.cache_hits,
        stats.spent_usd
    ));
    Ok(())
}

/// In a dry run, says what the evaluation of `bench` would ask and cost, and returns true
/// (nothing is written then).
fn dry_run_said(
    bench: &str,
    setup: &LlmSetup,
    config: &cb_llm::LlmConfig,
    stats: &cb_llm::StatsSnapshot,
) -> bool {
    if setup.mode().dry_run() {
        let cost = config.price.usd(stats.estimated_tokens, 0);
        println_out(&format!(
            "{bench} eval: {} calls ({} cached, {} to make), ~{} prompt tokens, ~${cost:.4}; nothing written",
            stats.calls, stats.cache_hits, stats.upstream_calls, stats.estimated_tokens
        ));
    }
    setup.mode().dry_run()
}

/// `eval conflictbank`: the model asked in ConflictBank's settings, its prediction folders and
/// figures written to `out` (nothing in a dry run).
async fn conflictbank(
    llm: &cb_llm::Llm,
    opts: &EvalOptions,
    bars: &Counted,
    (setup, config): (&LlmSetup, &cb_llm::LlmConfig),
    out: &Path,
) -> anyhow::Result<()> {
    let e = cb_eval::conflictbank_run::evaluate(llm, opts, bars).await?;
    let stats = llm.stats();
    if dry_run_said("conflictbank", setup, config, &stats) {
        return Ok(());
    }
    cb_eval::conflictbank_run::write_all(out, &e)?;
    println_out(&cb_eval::conflictbank_run::markdown(&e));
    println_out(&format!(
        "prediction folders ({}) -> {} [{} upstream calls, {} cache hits, ${:.4}]",
        e.runs.len(),
        out.display(),
        stats.upstream_calls,
        stats.cache_hits,
        stats.spent_usd
    ));
    Ok(())
}
