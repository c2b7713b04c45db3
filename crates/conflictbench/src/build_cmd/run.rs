//! The orchestration of a build: every recipe's routes made before the first one builds,
//! the recipes built at once, a signal's stop, and each recipe's line said in the
//! selection's order.

use super::dry::DryTotals;
use crate::exit::{Exit, Stopped};
use crate::llm_config::LlmSetup;
use crate::progress;
use crate::signals::Signals;
use crate::stdout::println_out;
use cb_engine::Routes;
use cb_engine::{build_recipes, BuildOptions, EngineError, Progress, RecipeJob};
use cb_llm::Role;

/// The longest a stopped build waits for the calls its cancelled tasks left under way
/// before it records its counts ([`cb_llm::Roster::settled`]).
const SETTLING: std::time::Duration = std::time::Duration::from_secs(5);

/// What every recipe of a `build` is built with.
pub(super) struct BuildRun {
    pub(super) setup: LlmSetup,
    pub(super) opts: BuildOptions,
    pub(super) reporter: progress::Bars,
}

/// One recipe of a build, with its routing table (who answers what).
pub(super) struct Job<'r> {
    recipe: &'r cb_engine::Recipe,
    routes: Routes,
}

/// A recipe built, with the routes that built it.
pub(super) struct Built {
    pub(super) outcome: cb_engine::BuildOutcome,
    pub(super) routes: Routes,
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
struct BarsAndFinished<'a> {
    bars: &'a progress::Bars,
    finished: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

impl Progress for BarsAndFinished<'_> {
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
        self.finished
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
    pub(super) fn say(
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
            if self.setup.mode().dry_run() {
                let (recipe, routes) = (&built.outcome.recipe, &built.routes);
                println_out(&dry_totals.add(recipe, routes, self.setup.batch_api()));
            } else {
                println_out(&built.line());
            }
        }
        if let Some(e) = failed {
            return Err(e.into());
        }
        if let Some(folder) = self.setup.batch_folder() {
            if !waiting.is_empty() {
                return Err(anyhow::Error::new(folder.waiting(&waiting, files)?));
            }
        }
        if self.setup.mode().dry_run() {
            println_out(&dry_totals.line());
        }
        Ok(())
    }

    /// Every recipe's routes, made before the first one builds. The recipes' layers are each
    /// their own (own counters: each recipe's line and `runs.jsonl` say what it spent), all
    /// of the run's one roster: one cache writer and one budget for the whole command, and
    /// one limiter a model, so recipes built at once keep `--concurrency` and the rates
    /// against the endpoint.
    pub(super) fn prepare<'r>(
        &self,
        selected: &[&'r cb_engine::Recipe],
    ) -> anyhow::Result<Vec<Job<'r>>> {
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
    pub(super) async fn build_all(
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
        let progress = BarsAndFinished {
            bars: &self.reporter,
            finished: Default::default(),
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
        let (s, roles) = tokio::select! {
            r = build_recipes(&engine_jobs, &progress) => return Ok(r),
            stopped = stop_on_signal => stopped,
        };
        // The build is dropped, its tasks cancelled; one another thread was running may still
        // be sending a call it had counted, or accounting an answer that came: the record
        // waits for them (at once, unless a thread is held up).
        let settled = self.setup.roster().settled();
        if tokio::time::timeout(SETTLING, settled).await.is_err() {
            tracing::warn!(
                "calls still under way {SETTLING:?} after the stop: the counts recorded may miss them"
            );
        }
        let done = progress.finished.lock().expect("finished lock").clone();
        let left: Vec<&Job<'_>> = jobs
            .iter()
            .filter(|j| !done.contains(&j.recipe.name()))
            .collect();
        Err(self.stopped(&left, s, &roles))
    }

    /// The error of a build stopped by `signal` while building the recipes `left`: what was
    /// kept and how to resume (each one's run is recorded as stopped).
    fn stopped(
        &self,
        left: &[&Job<'_>],
        (signal, code): (&str, Exit),
        roles: &[String],
    ) -> anyhow::Error {
        let why = format!("stopped by {signal}");
        let mut sent = cb_llm::StatsSnapshot::default();
        for job in left {
            self.reporter.finish(&job.recipe.name(), 0, 0);
            let (opts, routes) = (&self.opts, &job.routes);
            if let Err(w) = cb_engine::build::record_stopped(job.recipe, opts, routes, &why) {
                tracing::warn!(error = %w, "cannot record the stopped run");
            }
            sent += job.routes.total();
        }
        let (calls, hits, usd) = (sent.upstream_calls, sent.cache_hits, sent.spent_usd);
        let names: Vec<String> = left.iter().map(|j| j.recipe.name()).collect();
        let name = names.join(", ");
        let message = if self.setup.mode().dry_run() {
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
                Role::Writer => continue,
                Role::Reader => "reader",
                Role::Named(n) => n.as_str(),
            };
            others.push_str(&format!(
                "; {name}: {} upstream calls, {} cache hits, ${:.4}",
                s.upstream_calls, s.cache_hits, s.spent_usd
            ));
        }
        let stats = figures.get(&Role::Writer).copied().unwrap_or_default();
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
