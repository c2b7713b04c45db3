//! Running one recipe end to end.

use crate::output::{append_line, OutFile};
use crate::recipe::Recipe;
use crate::source::{self, Loaded, SourceOptions};
use crate::{EngineError, Item};
use cb_llm::Llm;
use cb_llm::Progress;
use cb_model::manifest::LlmTotals;
use cb_model::{CheckTally, Manifest, Reject, StageCounts};
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
    let b = Build {
        name: recipe.name(),
        dir: opts.out.join(&recipe.benchmark).join(&recipe.domain),
        recipe,
        opts,
        llm,
        reader,
        progress,
    };
    let steps = b.prepare()?;
    let (mut loaded, corpus) = b.load()?;
    let runner = Arc::new(b.runner(steps, corpus));
    let ran = b.run(&runner, std::mem::take(&mut loaded.entries)).await?;
    let accounted = b
        .account(&runner.steps, loaded, ran)
        .map_err(|e| b.stopped(e))?;
    b.write(&accounted)?;
    Ok(b.finish(accounted.manifest))
}

/// One recipe's build: what its stages share.
struct Build<'a> {
    recipe: &'a Recipe,
    opts: &'a BuildOptions,
    llm: &'a Llm,
    reader: Option<&'a Llm>,
    progress: &'a dyn Progress,
    /// The recipe's name (`benchmark-domain`).
    name: String,
    /// Its output folder.
    dir: PathBuf,
}

/// Where an item ended: finished, or rejected by step `usize`.
type Ended = Result<(), (usize, StepFailure)>;

/// What the steps see of one build: the steps themselves, the models, and the corpus.
struct Runner {
    steps: Vec<Box<dyn Step>>,
    llm: Llm,
    reader: Option<Llm>,
    env: Environment<'static>,
    seed: u64,
    recipe: String,
    corpus: Corpus,
    /// Set by a fatal failure: the items still running end as cancelled.
    stop: AtomicBool,
}

impl Runner {
    /// Runs one item through the steps in recipe order, up to the first that does not pass it.
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

/// What running the items gave, before the accounting.
struct Ran {
    /// One per loaded entry, in source order: the finished item or the reject (`None`: an
    /// item cancelled, or ended by a fatal failure).
    slots: Vec<Option<Result<Item, Reject>>>,
    counts: Counts,
    /// The first fatal failure of a step (it stopped the others).
    fatal: Option<EngineError>,
}

/// What a run counts for the manifest.
struct Counts {
    /// Per step: in, rejected and reasons (out is set by the accounting).
    steps: Vec<StageCounts>,
    /// Calls and tokens of the items' model calls (the price is set by the accounting).
    llm: LlmTotals,
    /// Per reader check: how many rows it was asked for and how many it passed.
    reader_checks: BTreeMap<String, CheckTally>,
}

impl Ran {
    /// Takes in one item that ended: its reader verdicts, its calls, the steps it entered and
    /// the one that rejected it, and its slot.
    fn add(&mut self, steps: &[Box<dyn Step>], slot: usize, item: Item, ended: Ended) {
        if let Some(r) = item
            .fields
            .get(cb_step::READER_FIELD)
            .and_then(|v| serde_json::from_value::<cb_step::choice::ReaderRecord>(v.clone()).ok())
        {
            for v in r.checks {
                let t = self.counts.reader_checks.entry(v.check).or_default();
                t.asked += 1;
                t.passed += u64::from(v.passed);
            }
        }
        for c in &item.calls {
            self.counts.llm.calls += 1;
            self.counts.llm.prompt_tokens += c.prompt_tokens;
            self.counts.llm.completion_tokens += c.completion_tokens;
        }
        let reached = match &ended {
            Ok(()) => steps.len(),
            Err((i, _)) => *i + 1,
        };
        for c in self.counts.steps.iter_mut().take(reached) {
            c.in_ += 1;
        }
        match ended {
            Ok(()) => self.slots[slot] = Some(Ok(item)),
            Err((_, StepFailure::Fatal(e))) => {
                self.fatal.get_or_insert(e.into());
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
                let c = &mut self.counts.steps[i];
                c.rejected += 1;
                *c.reasons.entry(reason.clone()).or_default() += 1;
                self.slots[slot] = Some(Err(Reject {
                    id: item.id.clone(),
                    origin: item.origin.to_string(),
                    stage: steps[i].name().to_owned(),
                    reason,
                    detail,
                    raw_response: raw,
                    attempts,
                }));
            }
        }
    }
}

/// What the accounting gives the writer: the serialised output files and the manifest.
struct Accounted {
    files: Vec<OutFile>,
    manifest: Manifest,
}

impl Build<'_> {
    /// Prepare: checks the recipe's steps against the step table before any work
    /// ([`Recipe::check_steps`]), builds them with their prompts, and removes the temporary
    /// files a killed build left in the output folder.
    fn prepare(&self) -> Result<Vec<Box<dyn Step>>, EngineError> {
        self.recipe.check_steps(&self.opts.steps)?;
        let steps = self
            .recipe
            .steps
            .iter()
            .map(|s| self.opts.steps.build(s, &self.opts.prompts))
            .collect::<Result<Vec<_>, _>>()?;
        if self.opts.write {
            crate::output::remove_stale_temp_files(&self.dir)?;
        }
        Ok(steps)
    }

    /// Load: the source's items and rejects in source order ([`source::load`]), and the
    /// corpus of peers the steps may look at (every loaded item).
    fn load(&self) -> Result<(Loaded, Corpus), EngineError> {
        let loaded = source::load(self.recipe, &self.opts.sources)?;
        let peers = loaded
            .entries
            .iter()
            .filter_map(|e| e.as_ref().ok())
            .map(|i| Peer {
                id: i.id.clone(),
                fields: i.fields.clone(),
            })
            .collect();
        Ok((loaded, Corpus::new(peers)))
    }

    /// The runner of this build's steps over `corpus`.
    fn runner(&self, steps: Vec<Box<dyn Step>>, corpus: Corpus) -> Runner {
        Runner {
            steps,
            llm: self.llm.clone(),
            reader: self.reader.cloned(),
            env: cb_step::template::environment(),
            seed: self.opts.seed,
            recipe: self.name.clone(),
            corpus,
            stop: AtomicBool::new(false),
        }
    }

    /// Run: every loaded item through the steps, concurrently, at most as many at once as
    /// the LLM layer's transport keeps busy ([`cb_llm::LlmConfig::items_in_flight`]: twice
    /// its calls in flight, or every item for a batch round); rejects from loading keep their slots. Collects
    /// as items end: their slots, the steps' counts, the LLM totals and the reader's check
    /// tallies. A fatal failure does not end the run here: it stops the items still running
    /// and is handed to the accounting.
    async fn run(
        &self,
        runner: &Arc<Runner>,
        entries: Vec<Result<Item, Reject>>,
    ) -> Result<Ran, EngineError> {
        let mut ran = Ran {
            slots: Vec::new(),
            counts: Counts {
                steps: runner
                    .steps
                    .iter()
                    .map(|s| StageCounts {
                        name: s.name().to_owned(),
                        ..Default::default()
                    })
                    .collect(),
                llm: LlmTotals::default(),
                reader_checks: BTreeMap::new(),
            },
            fatal: None,
        };
        let mut work = Vec::new();
        for entry in entries {
            match entry {
                Ok(item) => {
                    work.push((ran.slots.len(), item));
                    ran.slots.push(None);
                }
                Err(r) => ran.slots.push(Some(Err(r))),
            }
        }
        self.progress.start(&self.name, work.len() as u64);

        let in_flight = self.llm.config().items_in_flight();
        let limit = Arc::new(tokio::sync::Semaphore::new(in_flight));
        let mut tasks = tokio::task::JoinSet::new();
        for (slot, item) in work {
            let runner = Arc::clone(runner);
            let limit = Arc::clone(&limit);
            tasks.spawn(async move {
                let _permit = limit.acquire_owned().await.expect("semaphore never closed");
                (slot, runner.process(item).await)
            });
        }
        while let Some(joined) = tasks.join_next().await {
            let (slot, (item, ended)) =
                joined.map_err(|e| EngineError::Config(format!("a build task failed: {e}")))?;
            self.progress.item_done(&self.name, &self.llm.stats());
            ran.add(&runner.steps, slot, item, ended);
        }
        Ok(ran)
    }

    /// Account: the partial-failure rule (a fatal failure, or an endpoint that never
    /// answered, is the `Err` and nothing is written), each step's out = in - rejected, the
    /// rows and rejects in source order serialised once, the LLM totals priced, and the
    /// manifest (with a warning when the reader failed its control questions).
    fn account(
        &self,
        steps: &[Box<dyn Step>],
        loaded: Loaded,
        ran: Ran,
    ) -> Result<Accounted, EngineError> {
        let Ran {
            slots,
            mut counts,
            fatal,
        } = ran;
        if let Some(e) = fatal
            .or_else(|| endpoint_never_answered(&self.name, self.llm, &counts.llm, &counts.steps))
        {
            return Err(e);
        }
        for c in &mut counts.steps {
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
        let price = &self.llm.config().price;
        counts.llm.price_per_million = [price.input_per_million, price.output_per_million];
        counts.llm.estimated_cost_usd =
            round6(price.usd(counts.llm.prompt_tokens, counts.llm.completion_tokens));
        let r = self.recipe;
        let files = crate::output::out_files(&r.format, &r.domain, &self.name, &items, &rejects)?;
        let manifest = self.manifest(steps, loaded, counts, &files, &items, &rejects);
        if let Some((passed, asked)) = manifest.reader.as_ref().and_then(|r| r.weak_control()) {
            tracing::warn!(
                recipe = %self.name,
                "the reader passed only {passed} of {asked} control questions (the golden context leading to the golden answer): its verdicts are unreliable; choose a stronger reader (README: the reader check)"
            );
        }
        Ok(Accounted { files, manifest })
    }

    /// The manifest: the recipe, the configuration, the inputs and prompts, every stage's
    /// counts (loading's, then the steps'), the rows, rejects and files, and the reader (when
    /// a step reads) with its check tallies.
    fn manifest(
        &self,
        steps: &[Box<dyn Step>],
        loaded: Loaded,
        counts: Counts,
        files: &[OutFile],
        items: &[Item],
        rejects: &[Reject],
    ) -> Manifest {
        let (recipe, cfg) = (self.recipe, self.llm.config());
        let mut stages = loaded.stages;
        stages.extend(counts.steps);
        let card = crate::hub::complete(&recipe.card, &recipe.format);
        Manifest {
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
            offline: matches!(cfg.backend, cb_llm::BackendKind::Offline),
            model: cfg.model.clone(),
            endpoint: self.llm.endpoint().to_owned(),
            seed: self.opts.seed,
            inputs: loaded.inputs,
            prompts: steps
                .iter()
                .flat_map(|s| s.prompts())
                .map(|p| (p.name.clone(), p.hash.clone()))
                .collect::<BTreeMap<_, _>>(),
            prompts_from: self.opts.prompts.origin(),
            stages,
            filtered: loaded.filtered,
            rows: items.len() as u64,
            rejected: rejects.len() as u64,
            llm: counts.llm,
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
            reader: self
                .reader
                .filter(|_| steps.iter().any(|s| s.reads()))
                .map(|r| cb_model::ReaderInfo {
                    backend: r.config().backend.name().into(),
                    model: r.config().model.clone(),
                    endpoint: r.endpoint().to_owned(),
                    checks: counts.reader_checks,
                }),
        }
    }

    /// A build stopped by `e` (a fatal failure or the partial-failure rule): nothing is
    /// written, but what this run sent and spent is recorded in `runs.jsonl` (not by a dry
    /// run). Gives `e` back.
    fn stopped(&self, e: EngineError) -> EngineError {
        if self.opts.write {
            if let Err(w) = record_run(&self.dir, self.llm, Some(&e.to_string())) {
                tracing::warn!(error = %w, "cannot record the stopped run");
            }
        }
        e
    }

    /// Write (not in a dry run): the output files, the card and the manifest (each atomically),
    /// this run's line of `runs.jsonl`, and the benchmark card from the manifests on disk.
    fn write(&self, accounted: &Accounted) -> Result<(), EngineError> {
        if !self.opts.write {
            return Ok(());
        }
        let card = crate::card::render(self.recipe, &accounted.manifest);
        crate::output::write_outputs(&self.dir, &accounted.files, &card, &accounted.manifest)?;
        record_run(&self.dir, self.llm, None)?;
        crate::hub::write_benchmark_card(&self.opts.out, &self.recipe.benchmark)
    }

    /// The build's outcome, said to the progress display.
    fn finish(self, manifest: Manifest) -> BuildOutcome {
        self.progress
            .finish(&self.name, manifest.rows, manifest.rejected);
        BuildOutcome {
            recipe: self.name,
            dir: self.dir,
            rows: manifest.rows,
            rejected: manifest.rejected,
            manifest,
        }
    }
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
