//! `conflictbench build`: the selected recipes built at once through the run's LLM layers.
//!
//! The flags are resolved once ([`LlmSetup`]), every recipe and route is checked before the
//! first file or cache is made, then the recipes are built overlapped (`run`: the
//! orchestration and the lines it says), a signal stops them all (`signals`), and a dry run
//! sums its estimates (`dry`).

mod dry;
mod run;

use crate::config_error::config_err;
use crate::llm_config::LlmSetup;
use crate::{assets, flag_values, llm_args, progress};
use cb_engine::recipe::select;
use cb_engine::source::SourceOptions;
use cb_engine::{BuildOptions, Recipe};
use clap::Args;
use run::BuildRun;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct BuildArgs {
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
    /// Seed of every random choice (written in the manifest; 0 to 18446744073709551615).
    #[arg(long, default_value_t = cb_engine::build::DEFAULT_SEED, value_parser = flag_values::whole::<u64>(flag_values::range::SEED))]
    seed: u64,
    /// Read at most N records of each source (1 to 18446744073709551615).
    #[arg(long, value_parser = flag_values::whole::<usize>(flag_values::range::RECORDS))]
    limit: Option<usize>,
    /// Build from a seeded sample of N source records (drawn with `--seed`, kept in source
    /// order). Readers that select records themselves only (EventKG), so that memory grows
    /// with N, not with the dump (1 to 18446744073709551615).
    #[arg(long, value_name = "N", value_parser = flag_values::whole::<usize>(flag_values::range::RECORDS))]
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

/// `conflictbench build`: checks every flag, recipe and route, then builds the selected
/// recipes at once and says each one's outcome.
pub async fn run(args: BuildArgs) -> anyhow::Result<()> {
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
    setup.check_prices(&selected)?;
    let inputs = inputs(&args.inputs, &selected)?;
    setup.check_endpoints(&selected)?;
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
            write: !setup.mode().dry_run(),
            steps: cb_steps::STEPS,
        },
        reporter: progress::Bars::new(!args.no_progress && !setup.mode().dry_run()),
        setup,
    };
    // A configuration error found once the layers are made (a budget that cannot pay for one
    // call) leaves no file behind, in a new folder or an old one.
    let out = &args.out;
    let folders: Vec<PathBuf> = std::iter::once(out.clone())
        .chain(
            selected
                .iter()
                .map(|r| out.join(&r.benchmark).join(&r.domain)),
        )
        .chain(run.setup.batch_folder().map(|f| f.given().to_path_buf()))
        .collect();
    let folders: Vec<&std::path::Path> = folders.iter().map(PathBuf::as_path).collect();
    let created = crate::created::Created::before(Some(run.setup.cache()), &folders);
    let result = async {
        // One build per folder (its --out, its --batch-dir) and per cache, taken before the
        // first file is made. Released (its note removed) before anything is undone.
        let _held = run.setup.lock_build(&args.out)?;
        let prepared = run.prepare(&selected)?;
        let outcomes = run.build_all(&prepared).await?;
        run.say(prepared, outcomes)
    }
    .await;
    if result
        .as_ref()
        .is_err_and(|e| crate::exit::exit_code(e) == crate::exit::Exit::Config)
    {
        created.undo();
    }
    result
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

/// Parses the `--input SOURCE=PATH` overrides and checks that each names a source (primary
/// or joined) of the selected recipes.
fn inputs(specs: &[String], recipes: &[&Recipe]) -> anyhow::Result<BTreeMap<String, PathBuf>> {
    let known: BTreeSet<&str> = recipes
        .iter()
        .flat_map(|r| {
            std::iter::once(r.source.name.as_str())
                .chain(r.join.iter().map(|j| j.source.name.as_str()))
        })
        .collect();
    let mut out = BTreeMap::new();
    for spec in specs {
        let (k, v) = spec
            .split_once('=')
            .ok_or_else(|| config_err(format!("--input {spec}: expected SOURCE=PATH")))?;
        if !known.contains(k) {
            let names: Vec<String> = recipes.iter().map(|r| r.name()).collect();
            return Err(config_err(format!(
                "--input {spec}: no source `{k}` in the selected recipes ({}); their sources: {}",
                names.join(", "),
                known.iter().copied().collect::<Vec<_>>().join(", ")
            )));
        }
        out.insert(k.to_owned(), PathBuf::from(v));
    }
    Ok(out)
}
