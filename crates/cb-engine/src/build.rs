//! Running one recipe end to end.

use crate::output::{append_line, Encoded, Encoder, Outputs, Written};
use crate::recipe::Recipe;
use crate::source::{Entry, Source, SourceOptions};
use crate::tally::{waits, Counts, Done, Ended, Finished, Ran};
use crate::{EngineError, Item};
use cb_llm::pricing::round_usd;
use cb_llm::Progress;
use cb_llm::{Llm, Role};
use cb_model::manifest::LlmTotals;
use cb_model::{Manifest, StageCounts};
use cb_step::{Corpus, Indexer, Registry, Routes, Step, StepCtx, StepFailure};
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

/// Builds one recipe: reads, runs the steps, writes the outputs. `routes` says who answers
/// each step and reads each reader check (nobody reads: the manifest and card say the rows
/// are not reader-verified).
///
/// A recipe that ends without its files (its budget, a failure, requests waiting in batch
/// files) stops its layers ([`Routes::stop_all`]): a round of its Batch API or batch files,
/// whose driver runs detached, uploads, submits or writes nothing after it.
pub async fn build_recipe(
    recipe: &Recipe,
    opts: &BuildOptions,
    routes: &Routes,
    progress: &dyn Progress,
) -> Result<BuildOutcome, EngineError> {
    let built = build_one(recipe, opts, routes, progress).await;
    if let Err(e) = &built {
        routes.stop_all(&format!("{} ended: {e}", recipe.name()));
    }
    built
}

async fn build_one(
    recipe: &Recipe,
    opts: &BuildOptions,
    routes: &Routes,
    progress: &dyn Progress,
) -> Result<BuildOutcome, EngineError> {
    let b = Build {
        name: recipe.name(),
        dir: opts.out.join(&recipe.benchmark).join(&recipe.domain),
        recipe,
        opts,
        routes,
        llm: routes.writer(),
        progress,
    };
    let steps = b.prepare()?;
    let source = Source::open(recipe, &opts.sources)?;
    let (corpus, total) = b.index(&source, &steps).await?;
    let runner = Arc::new(b.runner(steps, corpus));
    let mut out = b.outputs()?;
    let mut ran = b.run(&runner, &source, total, &mut out).await?;
    if let Some(e) = ran.broken.take() {
        return Err(e);
    }
    let manifest = b
        .account(&runner.steps, source, ran, &out)
        .map_err(|e| b.stopped(e))?;
    b.write(out, &manifest)?;
    Ok(b.finish(manifest))
}

/// One recipe of a build of several ([`build_recipes`]): the recipe, its options and its
/// routing table (its named models differ from recipe to recipe).
pub struct RecipeJob<'a> {
    pub recipe: &'a Recipe,
    pub opts: &'a BuildOptions,
    pub routes: &'a Routes,
}

/// Builds several recipes at once, overlapped, each as [`build_recipe`] does (its own source
/// passes, window of items and output files): while one recipe runs its last items (the end of
/// its resample chains), the others keep the model busy, so a build of several recipes does not
/// drain between them. Layers that share one limiter keep the build's concurrency and rates
/// across its recipes. Gives each job's outcome, in the jobs' order; a failed recipe writes
/// nothing and the others go on.
pub async fn build_recipes(
    jobs: &[RecipeJob<'_>],
    progress: &dyn Progress,
) -> Vec<Result<BuildOutcome, EngineError>> {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::Poll;
    type Building<'f> = Pin<Box<dyn Future<Output = Result<BuildOutcome, EngineError>> + 'f>>;
    let mut building: Vec<Building<'_>> = jobs
        .iter()
        .map(|j| Box::pin(build_recipe(j.recipe, j.opts, j.routes, progress)) as Building<'_>)
        .collect();
    let mut done: Vec<Option<Result<BuildOutcome, EngineError>>> =
        jobs.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        for (f, d) in building.iter_mut().zip(done.iter_mut()) {
            if d.is_none() {
                if let Poll::Ready(r) = f.as_mut().poll(cx) {
                    *d = Some(r);
                }
            }
        }
        if done.iter().all(Option::is_some) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    done.into_iter().flatten().collect()
}

/// One recipe's build: what its stages share.
struct Build<'a> {
    recipe: &'a Recipe,
    opts: &'a BuildOptions,
    routes: &'a Routes,
    /// The writer ([`Routes::writer`]).
    llm: &'a Llm,
    progress: &'a dyn Progress,
    /// The recipe's name (`benchmark-domain`).
    name: String,
    /// Its output folder.
    dir: PathBuf,
}

/// What the steps see of one build: the steps themselves, the models, and the corpus.
struct Runner {
    steps: Vec<Box<dyn Step>>,
    routes: Routes,
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
            routes: &self.routes,
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
                if matches!(f, StepFailure::Fatal(_)) && !waits(&f) {
                    self.stop.store(true, Ordering::Relaxed);
                }
                return (item, Err((i, f)));
            }
        }
        (item, Ok(()))
    }

    /// Whether the reader check refused the item for its verdict on one of the two axes
    /// people rate (`reader_disagrees`: not misleading; `reader_implausible`: not believable;
    /// `reader_no_conflict`: a conflicting evidence that contradicts nothing, which raters
    /// judge too):
    /// its reject then carries the rows it would have written, for the rating sample.
    fn refused(&self, ended: &Ended) -> bool {
        matches!(ended, Err((i, StepFailure::Reject { reason, .. }))
            if (reason == "reader_disagrees" || reason == "reader_implausible" || reason == "reader_no_conflict")
                && self.steps[*i].reads())
    }
}

/// The items between the oldest one not yet written and the newest one read: those running
/// (at most the window) and those finished, waiting in source order for the ones before them
/// (at most the window too). A finished row is written as soon as every row before it is.
struct Window {
    /// The most items running at once, and the most waiting to be written.
    size: usize,
    tasks: tokio::task::JoinSet<(usize, Finished)>,
    /// Serialises each finished item's rows in its own task.
    encoder: Arc<Encoder>,
    /// Finished, by position, waiting for their turn.
    ready: BTreeMap<usize, Done>,
    /// The position of the next entry read, and of the next one to write.
    read: usize,
    written: usize,
    /// The source has no more entries (or the build is stopping).
    drained: bool,
}

impl Window {
    fn new(size: usize, encoder: Encoder) -> Self {
        Window {
            size: size.max(1),
            tasks: tokio::task::JoinSet::new(),
            encoder: Arc::new(encoder),
            ready: BTreeMap::new(),
            read: 0,
            written: 0,
            drained: false,
        }
    }

    /// Whether another entry may be read now.
    fn has_room(&self) -> bool {
        !self.drained && self.tasks.len() < self.size && self.ready.len() < self.size
    }

    /// Writes (or skips, once the build is failing) every entry whose turn has come.
    fn flush(&mut self, out: &mut Outputs, failing: bool) -> Result<(), EngineError> {
        while let Some(done) = self.ready.remove(&self.written) {
            self.written += 1;
            match done {
                Done::Row(rows) if !failing => out.row(rows?)?,
                Done::Reject(r) if !failing => out.reject(&r)?,
                _ => {}
            }
        }
        Ok(())
    }
}

/// Records the first pass reads between two yields to the runtime (a signal is seen between
/// them: the whole source of a limited build can take seconds to read).
const INDEX_YIELD: usize = 1024;

impl Build<'_> {
    /// Prepare: checks the recipe's steps against the step table before any work
    /// ([`Recipe::check_steps`]), builds them with their prompts, and removes the temporary
    /// files a killed build left in the output folder.
    fn prepare(&self) -> Result<Vec<Box<dyn Step>>, EngineError> {
        self.recipe.check_steps(&self.opts.steps)?;
        let steps = self
            .recipe
            .load_steps(&self.opts.steps, &self.opts.prompts)?;
        if self.opts.write {
            crate::output::remove_stale_temp_files(&self.dir)?;
        }
        Ok(steps)
    }

    /// The first pass over the source: the views the steps declare ([`Step::views`]), filled
    /// item by item from the whole source, `--limit` aside ([`Source::pass_whole`]), and the
    /// number of items within the limit (the progress display's total). Nothing of the items
    /// is kept but what the views keep. No pass (and a total of 0) when no step declares a
    /// view and no progress display shows the total: it would only count. It yields to the
    /// runtime every [`INDEX_YIELD`] records, so that a signal stops a long pass at once.
    async fn index(
        &self,
        source: &Source<'_>,
        steps: &[Box<dyn Step>],
    ) -> Result<(Corpus, u64), EngineError> {
        let mut ix = Indexer::new(steps.iter().flat_map(|s| s.views()));
        if ix.is_empty() && !self.progress.shows_total() {
            return Ok((ix.finish(), 0));
        }
        let (pass, limit) = if ix.is_empty() {
            (source.pass()?, usize::MAX)
        } else {
            (source.pass_whole()?, source.limit())
        };
        let mut items = 0;
        for (n, entry) in pass.enumerate() {
            if let Ok(item) = entry? {
                items += u64::from(item.index < limit);
                ix.add(&item.id, &item.fields);
            }
            if n % INDEX_YIELD == INDEX_YIELD - 1 {
                tokio::task::yield_now().await;
            }
        }
        Ok((ix.finish(), items))
    }

    /// The runner of this build's steps over `corpus`.
    fn runner(&self, steps: Vec<Box<dyn Step>>, corpus: Corpus) -> Runner {
        Runner {
            steps,
            routes: self.routes.clone(),
            env: cb_step::template::environment(),
            seed: self.opts.seed,
            recipe: self.name.clone(),
            corpus,
            stop: AtomicBool::new(false),
        }
    }

    /// The output files, empty and temporary until the build commits them.
    fn outputs(&self) -> Result<Outputs, EngineError> {
        let r = self.recipe;
        let written = match (&r.rows, r.format.as_str()) {
            (Some(rows), _) => {
                let offline = matches!(self.llm.config().backend, cb_llm::BackendKind::Offline);
                Written::Rows(Arc::clone(rows), offline)
            }
            (None, "recall") => Written::Recall,
            (None, _) => Written::Kre,
        };
        Outputs::create(&self.dir, written, &r.domain, &self.name, self.opts.write)
    }

    /// Run: the second pass over the source, every item through the steps, concurrently, at
    /// most as many at once as the LLM layer's transport keeps busy
    /// ([`cb_llm::LlmConfig::items_in_flight`]: four times its calls in flight, or the batch
    /// window for rounds), each finished row and reject written in source order as soon as
    /// those before it are ([`Window`]). Counts as items end: the steps' counts, the LLM totals
    /// and the reader's check tallies. A fatal failure stops reading, cancels the items still
    /// running and is handed to the accounting; an item waiting on batch files is let go and
    /// the build reads on (so one run writes the requests of the whole source, a window at a
    /// time), then ends waiting.
    async fn run(
        &self,
        runner: &Arc<Runner>,
        source: &Source<'_>,
        total: u64,
        out: &mut Outputs,
    ) -> Result<Ran, EngineError> {
        let mut ran = Ran {
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
                readers: Default::default(),
                models: Default::default(),
            },
            loading: Default::default(),
            fatal: None,
            waiting: None,
            broken: None,
        };
        self.progress.start(&self.name, total);
        let mut pass = source.pass()?;
        let mut w = Window::new(self.llm.config().items_in_flight(), out.encoder());
        loop {
            while w.has_room() {
                match pass.next() {
                    None => w.drained = true,
                    Some(Err(e)) => self.fail(&mut ran, &mut w, runner, e),
                    Some(Ok(entry)) => self.admit(&mut w, runner, entry),
                }
            }
            let failing = ran.fatal.is_some() || ran.broken.is_some() || ran.waiting.is_some();
            if let Err(e) = w.flush(out, failing) {
                self.fail(&mut ran, &mut w, runner, e);
            }
            let Some(joined) = w.tasks.join_next().await else {
                if w.drained {
                    break;
                }
                continue;
            };
            let (slot, finished) = joined.map_err(|e| {
                let how = if e.is_panic() { "panicked" } else { "was cancelled" };
                EngineError::Lost(format!(
                    "{}: a task building one of its items {how}; nothing was written for the recipe ({e})",
                    self.name
                ))
            })?;
            self.progress.item_done(&self.name, &self.routes.total());
            let done = ran.add(&runner.steps, finished);
            w.drained |= ran.fatal.is_some();
            w.ready.insert(slot, done);
        }
        ran.loading = pass.finish();
        Ok(ran)
    }

    /// Starts one entry read from the source: an item runs through the steps, a loading
    /// reject waits for its turn to be written.
    fn admit(&self, w: &mut Window, runner: &Arc<Runner>, entry: Entry) {
        let slot = w.read;
        w.read += 1;
        match entry {
            Ok(item) => {
                let (runner, encoder) = (Arc::clone(runner), Arc::clone(&w.encoder));
                w.tasks.spawn(async move {
                    let (item, ended) = runner.process(item).await;
                    let rows = match ended {
                        Ok(()) => encoder.encode(&item),
                        Err(_) => Ok(Encoded::default()),
                    };
                    let refused = runner.refused(&ended).then(|| encoder.refused(&item));
                    let finished = Finished {
                        item,
                        ended,
                        rows,
                        refused,
                    };
                    (slot, finished)
                });
            }
            Err(r) => {
                w.ready.insert(slot, Done::Reject(r));
            }
        }
    }

    /// A failure of the source or the writer: reading stops, the items still running are
    /// cancelled, and the first such failure ends the build.
    fn fail(&self, ran: &mut Ran, w: &mut Window, runner: &Runner, e: EngineError) {
        runner.stop.store(true, Ordering::Relaxed);
        w.drained = true;
        ran.broken.get_or_insert(e);
    }

    /// Account: the partial-failure rule (a fatal failure, or an endpoint that never
    /// answered, is the `Err` and nothing is written), each step's out = in - rejected, the
    /// LLM totals priced, and the manifest (with a warning when the reader failed its control
    /// questions).
    fn account(
        &self,
        steps: &[Box<dyn Step>],
        source: Source<'_>,
        ran: Ran,
        out: &Outputs,
    ) -> Result<Manifest, EngineError> {
        let Ran {
            mut counts,
            loading,
            fatal,
            waiting,
            ..
        } = ran;
        if let Some(e) = fatal
            .or(waiting)
            .or_else(|| endpoint_never_answered(&self.name, self.llm, &counts.llm, &counts.steps))
        {
            return Err(e);
        }
        for c in &mut counts.steps {
            c.out = c.in_ - c.rejected;
        }
        let price = &self.llm.config().price;
        counts.llm.price_per_million = [price.input_per_million, price.output_per_million];
        counts.llm.estimated_cost_usd =
            round_usd(price.usd(counts.llm.prompt_tokens, counts.llm.completion_tokens));
        let mut manifest = self.manifest(steps, source, loading, counts, out);
        if !manifest.models.is_empty() {
            // Each model at its own price.
            let each = manifest.models.iter().map(|m| m.totals.estimated_cost_usd);
            manifest.llm.estimated_cost_usd = round_usd(each.sum());
        }
        // A dry run asked no reader anything: it warns of nothing they said.
        if let Some(r) = manifest.reader.as_ref().filter(|_| self.opts.write) {
            if let (Some(w), Some(why)) = (r.warning(), r.untrusted()) {
                tracing::warn!(
                    recipe = %self.name,
                    "{w}; the card does not call the rows reader-verified: {}",
                    why.advice()
                );
            } else if let Some(n) = r.no_answer_note() {
                tracing::info!(recipe = %self.name, "{n}");
            }
        }
        Ok(manifest)
    }

    /// The manifest: the recipe, the configuration, the inputs and prompts, every stage's
    /// counts (loading's, then the steps'), the rows, rejects and files, and the reader (when
    /// a step reads) with its check tallies.
    fn manifest(
        &self,
        steps: &[Box<dyn Step>],
        source: Source<'_>,
        (mut stages, filtered): (Vec<StageCounts>, BTreeMap<String, u64>),
        counts: Counts,
        out: &Outputs,
    ) -> Manifest {
        let (recipe, cfg) = (self.recipe, self.llm.config());
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
            backend: cfg.backend.recorded_name().into(),
            offline: matches!(cfg.backend, cb_llm::BackendKind::Offline),
            model: cfg.model.clone(),
            endpoint: self.llm.endpoint().to_owned(),
            seed: self.opts.seed,
            inputs: source.inputs,
            prompts: steps
                .iter()
                .flat_map(|s| s.prompts())
                .map(|p| (p.name.clone(), p.hash.clone()))
                .collect::<BTreeMap<_, _>>(),
            prompts_from: self.opts.prompts.origin(),
            stages,
            filtered,
            rows: out.rows(),
            rejected: out.rejected(),
            models: crate::per_model::uses(self.routes, steps, &counts.models),
            llm: counts.llm,
            files: out.paths().collect(),
            data_files: out.data_files(&card.split),
            card,
            reader: crate::per_model::reader(self.routes, steps, counts.readers),
        }
    }

    /// A build stopped by `e` (a fatal failure or the partial-failure rule): nothing is
    /// written, but what this run sent and spent is recorded in `runs.jsonl` (not by a dry
    /// run, nor for a configuration error: that run sent nothing). Gives `e` back.
    fn stopped(&self, e: EngineError) -> EngineError {
        if self.opts.write && !e.is_config() {
            if let Err(w) = record_run(&self.dir, self.routes, Some(&e.to_string())) {
                tracing::warn!(error = %w, "cannot record the stopped run");
            }
        }
        e
    }

    /// Write (not in a dry run): the output files renamed into place, the card and the
    /// manifest (each atomically), this run's line of `runs.jsonl`, and the benchmark card
    /// from the manifests on disk (one recipe at a time, as recipes may build together).
    fn write(&self, out: Outputs, manifest: &Manifest) -> Result<(), EngineError> {
        if !self.opts.write {
            return Ok(());
        }
        let card = crate::card::render(self.recipe, manifest);
        out.commit(&card, manifest)?;
        record_run(&self.dir, self.routes, None)?;
        static BENCHMARK_CARD: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one_at_a_time = BENCHMARK_CARD.lock().unwrap_or_else(|e| e.into_inner());
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
    routes: &Routes,
    why: &str,
) -> Result<(), EngineError> {
    if !opts.write {
        return Ok(());
    }
    let dir = opts.out.join(&recipe.benchmark).join(&recipe.domain);
    record_run(&dir, routes, Some(why))
}

/// Appends this run's line to `runs.jsonl`: when, the backend, the writer's counters (what
/// was spent), an unnamed reader's and each named model's, and for a run that stopped early,
/// why.
fn record_run(dir: &Path, routes: &Routes, stopped: Option<&str>) -> Result<(), EngineError> {
    let llm = routes.writer();
    let mut run = serde_json::json!({
        "unix_time": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        "backend": llm.config().backend.name(),
        "transport": llm.transport(),
        "structured": llm.structured_form(),
        "llm": llm.stats(),
    });
    if let Some(reader) = routes.figures().get(&Role::Reader) {
        run["reader"] = serde_json::to_value(reader).unwrap_or_default();
    }
    if let Some(models) = crate::per_model::run_counters(routes) {
        run["models"] = models;
    }
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
