//! Running one recipe end to end.

use crate::output::append_line;
use crate::recipe::Recipe;
use crate::source::{self, SourceOptions};
use crate::{EngineError, Item};
use cb_llm::Llm;
use cb_llm::Progress;
use cb_model::manifest::LlmTotals;
use cb_model::{Manifest, Reject, StageCounts};
use cb_step::{Corpus, Peer, Registry, Step, StepCtx, StepFailure};
use minijinja::Environment;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The seed used when none is given; written in every manifest.
pub const DEFAULT_SEED: u64 = 42;

/// Options of a build that are not part of the recipe.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    pub sources: SourceOptions,
    pub out: PathBuf,
    /// Where prompt templates are read from.
    pub prompts: crate::Files,
    pub seed: u64,
    /// Items processed at once (the LLM layer has its own bound on calls in flight).
    pub concurrency: usize,
    /// Write nothing (the dry run only counts).
    pub write: bool,
    /// The step kinds recipes may name (the steps crate's table).
    pub steps: Registry,
}

/// What a recipe build produced.
#[derive(Debug, Clone)]
pub struct BuildOutcome {
    pub recipe: String,
    pub dir: PathBuf,
    pub rows: u64,
    pub rejected: u64,
    pub manifest: Manifest,
}

struct Runner {
    steps: Vec<Box<dyn Step>>,
    llm: Llm,
    reader: Option<Llm>,
    env: Environment<'static>,
    seed: u64,
    recipe: String,
    corpus: Corpus,
    stop: AtomicBool,
}

/// Where an item ended: finished, or rejected by step `usize`.
type Ended = Result<(), (usize, StepFailure)>;

impl Runner {
    async fn process(&self, mut item: Item) -> (Item, Ended) {
        let ctx = StepCtx {
            llm: &self.llm,
            reader: self.reader.as_ref(),
            env: &self.env,
            seed: self.seed,
            recipe: &self.recipe,
            corpus: &self.corpus,
        };
        for (i, step) in self.steps.iter().enumerate() {
            if self.stop.load(Ordering::Relaxed) {
                return (item, Err((i, StepFailure::Cancelled)));
            }
            if let Err(f) = step.run(&mut item, &ctx).await {
                if matches!(f, StepFailure::Fatal(_)) {
                    self.stop.store(true, Ordering::Relaxed);
                }
                return (item, Err((i, f)));
            }
        }
        (item, Ok(()))
    }
}

/// Builds one recipe: reads, runs the steps, writes the outputs. `reader` answers the
/// recipe's reader checks (`None`: nobody reads, and the manifest and card say the rows are
/// not reader-verified).
pub async fn build_recipe(
    recipe: &Recipe,
    opts: &BuildOptions,
    llm: &Llm,
    reader: Option<&Llm>,
    progress: &dyn Progress,
) -> Result<BuildOutcome, EngineError> {
    let name = recipe.name();
    recipe.check_steps(&opts.steps)?;
    let steps = recipe
        .steps
        .iter()
        .map(|s| opts.steps.build(s, &opts.prompts))
        .collect::<Result<Vec<_>, _>>()?;
    let dir = opts.out.join(&recipe.benchmark).join(&recipe.domain);
    if opts.write {
        crate::output::remove_stale_temp_files(&dir)?;
    }
    let loaded = source::load(recipe, &opts.sources)?;
    let peers = loaded
        .entries
        .iter()
        .filter_map(|e| e.as_ref().ok())
        .map(|i| Peer {
            id: i.id.clone(),
            fields: i.fields.clone(),
        })
        .collect();
    let runner = Arc::new(Runner {
        steps,
        llm: llm.clone(),
        reader: reader.cloned(),
        env: cb_step::template::environment(),
        seed: opts.seed,
        recipe: name.clone(),
        corpus: Corpus::new(peers),
        stop: AtomicBool::new(false),
    });

    let mut slots: Vec<Option<Result<Item, Reject>>> = Vec::new();
    let mut work = Vec::new();
    for entry in loaded.entries {
        match entry {
            Ok(item) => {
                work.push((slots.len(), item));
                slots.push(None);
            }
            Err(r) => slots.push(Some(Err(r))),
        }
    }
    progress.start(&name, work.len() as u64);

    let limit = Arc::new(tokio::sync::Semaphore::new(opts.concurrency.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for (slot, item) in work {
        let runner = Arc::clone(&runner);
        let limit = Arc::clone(&limit);
        tasks.spawn(async move {
            let _permit = limit.acquire_owned().await.expect("semaphore never closed");
            (slot, runner.process(item).await)
        });
    }
    let n_steps = runner.steps.len();
    let mut step_counts: Vec<StageCounts> = runner
        .steps
        .iter()
        .map(|s| StageCounts {
            name: s.name().to_owned(),
            ..Default::default()
        })
        .collect();
    let mut totals = LlmTotals::default();
    let mut reader_checks: BTreeMap<String, cb_model::CheckTally> = BTreeMap::new();
    let mut fatal: Option<EngineError> = None;
    while let Some(joined) = tasks.join_next().await {
        let (slot, (item, ended)) =
            joined.map_err(|e| EngineError::Config(format!("a build task failed: {e}")))?;
        progress.item_done(&name, &llm.stats());
        if let Some(r) = item
            .fields
            .get(cb_step::READER_FIELD)
            .and_then(|v| serde_json::from_value::<cb_step::choice::ReaderRecord>(v.clone()).ok())
        {
            for v in r.checks {
                let t = reader_checks.entry(v.check).or_default();
                t.asked += 1;
                t.passed += u64::from(v.passed);
            }
        }
        for c in &item.calls {
            totals.calls += 1;
            totals.prompt_tokens += c.prompt_tokens;
            totals.completion_tokens += c.completion_tokens;
        }
        let reached = match &ended {
            Ok(()) => n_steps,
            Err((i, _)) => *i + 1,
        };
        for c in step_counts.iter_mut().take(reached) {
            c.in_ += 1;
        }
        match ended {
            Ok(()) => slots[slot] = Some(Ok(item)),
            Err((_, StepFailure::Fatal(e))) => {
                fatal.get_or_insert(e.into());
            }
            Err((_, StepFailure::Cancelled)) => {}
            Err((
                i,
                StepFailure::Reject {
                    reason,
                    detail,
                    raw,
                    attempts,
                },
            )) => {
                let c = &mut step_counts[i];
                c.rejected += 1;
                *c.reasons.entry(reason.clone()).or_default() += 1;
                slots[slot] = Some(Err(Reject {
                    id: item.id.clone(),
                    origin: item.origin.to_string(),
                    stage: runner.steps[i].name().to_owned(),
                    reason,
                    detail,
                    raw_response: raw,
                    attempts,
                }));
            }
        }
    }
    if let Some(e) = fatal.or_else(|| endpoint_never_answered(&name, llm, &totals, &step_counts)) {
        // Nothing is written, but what this run sent and spent is recorded.
        if opts.write {
            if let Err(w) = record_run(&dir, llm, Some(&e.to_string())) {
                tracing::warn!(error = %w, "cannot record the stopped run");
            }
        }
        return Err(e);
    }
    for c in &mut step_counts {
        c.out = c.in_ - c.rejected;
    }

    let mut items = Vec::new();
    let mut rejects = Vec::new();
    for s in slots.into_iter().flatten() {
        match s {
            Ok(i) => items.push(i),
            Err(r) => rejects.push(r),
        }
    }
    let cfg = llm.config();
    totals.price_per_million = [cfg.price.input_per_million, cfg.price.output_per_million];
    totals.estimated_cost_usd = round6(
        cfg.price
            .usd(totals.prompt_tokens, totals.completion_tokens),
    );
    let offline = matches!(cfg.backend, cb_llm::BackendKind::Offline);
    let mut stages = loaded.stages;
    stages.extend(step_counts);
    let files = crate::output::out_files(&recipe.format, &recipe.domain, &name, &items, &rejects);
    let card = crate::hub::complete(&recipe.card, &recipe.format);
    let manifest = Manifest {
        tool: "conflictbench".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        benchmark: recipe.benchmark.clone(),
        domain: recipe.domain.clone(),
        recipe: recipe.file.clone(),
        recipe_hash: recipe.hash.clone(),
        recipe_from: recipe.origin.clone(),
        description: recipe.description.clone(),
        // A replay re-reads the answers of an `openai` build; its manifest is that build's.
        // The run's own mode is in `runs.jsonl`.
        backend: match cfg.backend {
            cb_llm::BackendKind::Replay => cb_llm::BackendKind::Openai.name().into(),
            b => b.name().into(),
        },
        offline,
        model: cfg.model.clone(),
        endpoint: llm.endpoint().to_owned(),
        seed: opts.seed,
        inputs: loaded.inputs,
        prompts: runner
            .steps
            .iter()
            .flat_map(|s| s.prompts())
            .map(|p| (p.name.clone(), p.hash.clone()))
            .collect::<BTreeMap<_, _>>(),
        prompts_from: opts.prompts.origin(),
        stages,
        filtered: loaded.filtered,
        rows: items.len() as u64,
        rejected: rejects.len() as u64,
        llm: totals,
        files: files
            .iter()
            .map(|f| f.path.clone())
            .chain(["README.md".into(), "manifest.json".into()])
            .collect(),
        data_files: files
            .iter()
            .filter_map(|f| f.data_file(&card.split))
            .collect(),
        card,
        reader: reader
            .filter(|_| runner.steps.iter().any(|s| s.reads()))
            .map(|r| cb_model::ReaderInfo {
                backend: r.config().backend.name().into(),
                model: r.config().model.clone(),
                endpoint: r.endpoint().to_owned(),
                checks: reader_checks,
            }),
    };
    if let Some((passed, asked)) = manifest.reader.as_ref().and_then(|r| r.weak_control()) {
        tracing::warn!(
            recipe = %name,
            "the reader passed only {passed} of {asked} control questions (the golden context leading to the golden answer): its verdicts are unreliable; choose a stronger reader (README: the reader check)"
        );
    }
    if opts.write {
        let card = crate::card::render(recipe, &manifest);
        crate::output::write_outputs(&dir, &files, &card, &manifest)?;
        record_run(&dir, llm, None)?;
        crate::hub::write_benchmark_card(&opts.out, &recipe.benchmark)?;
    }
    progress.finish(&name, manifest.rows, manifest.rejected);
    Ok(BuildOutcome {
        recipe: name,
        dir,
        rows: manifest.rows,
        rejected: manifest.rejected,
        manifest,
    })
}

/// Appends the line of a build of `recipe` stopped from outside (a signal: its
/// [`build_recipe`] future was dropped) to the recipe's `runs.jsonl`, as a build stopped by an
/// error is recorded: what it sent and spent, and `stopped` saying why. Nothing else is
/// written or removed; a dry run (`opts.write` false) writes nothing at all.
pub fn record_stopped(
    recipe: &Recipe,
    opts: &BuildOptions,
    llm: &Llm,
    why: &str,
) -> Result<(), EngineError> {
    if !opts.write {
        return Ok(());
    }
    let dir = opts.out.join(&recipe.benchmark).join(&recipe.domain);
    record_run(&dir, llm, Some(why))
}

/// Appends this run's line to `runs.jsonl`: when, the backend, the LLM layer's counters (what
/// was spent), and for a run that stopped early, why.
fn record_run(dir: &Path, llm: &Llm, stopped: Option<&str>) -> Result<(), EngineError> {
    let mut run = serde_json::json!({
        "unix_time": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        "backend": llm.config().backend.name(),
        "transport": llm.transport(),
        "structured": llm.structured_form(),
        "llm": llm.stats(),
    });
    if let Some(why) = stopped {
        run["stopped"] = serde_json::Value::String(why.to_owned());
    }
    std::fs::create_dir_all(dir).map_err(|source| EngineError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    append_line(&dir.join("runs.jsonl"), &run.to_string())
}

/// The partial-failure rule: a recipe whose model calls got no answer at all while some
/// failed in transport (connection, timeout, 408/429/5xx, malformed 200, after every retry)
/// fails as a whole and writes nothing, so a dead or broken endpoint never replaces a build.
/// Once any answer came, transport rejects are written as rejects and a re-run retries them
/// (they are never cached).
fn endpoint_never_answered(
    recipe: &str,
    llm: &Llm,
    totals: &LlmTotals,
    steps: &[StageCounts],
) -> Option<EngineError> {
    let mut failed: BTreeMap<&str, u64> = BTreeMap::new();
    for (reason, n) in steps.iter().flat_map(|s| &s.reasons) {
        if cb_llm::is_transport_reason(reason) {
            *failed.entry(reason).or_default() += n;
        }
    }
    if totals.calls > 0 || failed.is_empty() {
        return None;
    }
    let reasons: Vec<String> = failed.iter().map(|(r, n)| format!("{n} {r}")).collect();
    Some(EngineError::Llm(cb_llm::LlmError::Endpoint(format!(
        "the endpoint {} gave no answer for {recipe} ({}); nothing was written: run the same command again once it answers",
        llm.endpoint(),
        reasons.join(", ")
    ))))
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}
