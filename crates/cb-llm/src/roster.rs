//! The run-wide roster of models: every layer of one command is made here.
//!
//! A [`Roster`] owns what the layers of a run share: the cache (one writer a file), the one
//! [`Budget`] of the whole command (`--max-cost`, `--max-tokens`, whatever the mix of models,
//! recipes and transports: given once, when the roster is made) and each model's limiter and endpoint pool, keyed by a typed
//! [`Role`]. It hands out layers ([`Roster::layer`]), each with counters of its own, and
//! remembers every one it made, so that [`Roster::stop_all`] stops them all (a signal).

use crate::budget::Budget;
use crate::cache::Cache;
use crate::config::{BackendKind, LlmConfig, Transport};
use crate::error::LlmError;
use crate::form::FormState;
use crate::layer::{Llm, Route};
use crate::limiter::Limiter;
use crate::limits::Limits;
use crate::pool;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

/// Who answers a call, and what a layer answers for in the run: the writer (the default
/// model), a named model of `--models` (a step's, a reader's or a panel's: one name, one
/// limiter), or the build's reader (`--reader-base-url`/`--reader-model`). The roster makes
/// a layer a role; a recipe's routes (`cb_step::Routes`) say which role answers each step.
/// Ordered as manifests and the build line list the models: writer, named ones, reader.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    Writer,
    Named(String),
    Reader,
}

impl Role {
    /// The model's name, for a named one.
    pub fn name(&self) -> Option<&str> {
        match self {
            Role::Named(n) => Some(n),
            Role::Writer | Role::Reader => None,
        }
    }

    /// How the role names a layer's files in the journal, after its job.
    fn key(&self) -> String {
        match self {
            Role::Writer => "writer".into(),
            Role::Reader => "reader".into(),
            Role::Named(n) => format!("model:{n}"),
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Role::Writer => f.write_str("the writer"),
            Role::Reader => f.write_str("the reader"),
            Role::Named(n) => write!(f, "model {n}"),
        }
    }
}

/// The models of one command. Cheap to clone (`Arc` inside).
#[derive(Clone)]
pub struct Roster {
    inner: Arc<Inner>,
}

struct Inner {
    /// The one budget of the command: its caps, what is held and what was spent.
    budget: Arc<Budget>,
    /// The caches opened, by file: one writer a file (a dry run's are read-only).
    caches: Mutex<HashMap<PathBuf, Option<Cache>>>,
    /// One limiter a role: its first layer's limits.
    limiters: Mutex<HashMap<Role, Arc<Limiter>>>,
    /// One endpoint pool a role (its replicas' limiters and breakers).
    pools: Mutex<HashMap<Role, Arc<pool::Pool>>>,
    /// One structured-output form a role: its layers (one a recipe) find it out once,
    /// sending one probe, not one each.
    forms: Mutex<HashMap<Role, Arc<FormState>>>,
    /// Every layer made, with its role, for [`Roster::stop_all`].
    made: Mutex<Vec<(Role, Llm)>>,
    /// Set by [`Roster::stop_all`]: a layer made later starts stopped.
    stopped: OnceLock<String>,
}

impl std::fmt::Debug for Roster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Roster")
            .field(
                "layers",
                &self.inner.made.lock().map(|m| m.len()).unwrap_or(0),
            )
            .finish()
    }
}

impl Roster {
    /// A roster whose layers all spend from `budget` ([`Budget::default`]: no cap).
    pub fn new(budget: Budget) -> Self {
        Self {
            inner: Arc::new(Inner {
                budget: Arc::new(budget),
                caches: Mutex::default(),
                limiters: Mutex::default(),
                pools: Mutex::default(),
                forms: Mutex::default(),
                made: Mutex::default(),
                stopped: OnceLock::new(),
            }),
        }
    }

    /// A new layer for `role`, configured by `config` (its endpoint, model, price,
    /// transport; its cache file): its own counters; the roster's cache for that file, the
    /// roster's budget, and the limiter (and pool) of `role`, made with `config`'s limits by
    /// the role's first layer. Its batch files are recorded as those of `config.job` and
    /// `role` (`kre-cose/writer`).
    pub fn layer(&self, role: &Role, config: LlmConfig) -> Result<Llm, LlmError> {
        let cache = self.cache(&config)?;
        if config.backend == BackendKind::Replay && cache.is_none() {
            return Err(LlmError::Config(
                "the replay backend needs a cache file".into(),
            ));
        }
        let pool = match (config.backend, &config.transport) {
            (BackendKind::Openai, Transport::Pool(p)) => Some(self.pool(role, || {
                pool::Pool::new(&config, p, cache.as_ref()).map(Arc::new)
            })?),
            _ => None,
        };
        let route = Route::new(&config, cache.as_ref(), pool)?;
        let limiter = Arc::clone(
            self.inner
                .limiters
                .lock()
                .expect("limiters lock")
                .entry(role.clone())
                .or_insert_with(|| Arc::new(Limits::of(&config).limiter())),
        );
        let form = Arc::clone(
            self.inner
                .forms
                .lock()
                .expect("forms lock")
                .entry(role.clone())
                .or_default(),
        );
        let owner = config
            .job
            .as_ref()
            .map_or_else(String::new, |job| format!("{job}/{}", role.key()));
        let llm = Llm::assemble(
            config,
            cache,
            route,
            (limiter, form),
            (Arc::clone(&self.inner.budget), owner),
        );
        if let Some(why) = self.inner.stopped.get() {
            llm.stop(why);
        }
        self.inner
            .made
            .lock()
            .expect("made lock")
            .push((role.clone(), llm.clone()));
        Ok(llm)
    }

    /// The run's one budget: its caps and what its layers spent and hold.
    pub fn budget(&self) -> &Budget {
        &self.inner.budget
    }

    /// Stops every layer the roster made (and any it makes later): each call not yet sent
    /// fails at once with `why`. Says how many layers of which roles it stopped.
    pub fn stop_all(&self, why: &str) -> Vec<Role> {
        let _ = self.inner.stopped.set(why.to_owned());
        let made = self.inner.made.lock().expect("made lock");
        let mut roles = Vec::new();
        for (role, llm) in made.iter() {
            llm.stop(why);
            if !roles.contains(role) {
                roles.push(role.clone());
            }
        }
        roles
    }

    /// Returns once no call of any layer the roster made is under way ([`Llm::settled`]):
    /// after [`Roster::stop_all`] and the cancellation of the tasks that made the calls, the
    /// layers' counters are final.
    pub async fn settled(&self) {
        let made: Vec<Llm> = {
            let made = self.inner.made.lock().expect("made lock");
            made.iter().map(|(_, llm)| llm.clone()).collect()
        };
        for llm in made {
            llm.settled().await;
        }
    }

    /// The cache of `config`'s file, opened once (read-only for a dry run, which creates
    /// none).
    fn cache(&self, config: &LlmConfig) -> Result<Option<Cache>, LlmError> {
        let Some(path) = &config.cache_path else {
            return Ok(None);
        };
        let mut caches = self.inner.caches.lock().expect("caches lock");
        if let Some(c) = caches.get(path) {
            return Ok(c.clone());
        }
        let c = match config.backend {
            BackendKind::DryRun => Cache::open_read_only(path)?,
            _ => Some(Cache::open(path)?),
        };
        caches.insert(path.clone(), c.clone());
        Ok(c)
    }

    /// The pool of `role`, made by `make` when there is none yet.
    fn pool(
        &self,
        role: &Role,
        make: impl FnOnce() -> Result<Arc<pool::Pool>, LlmError>,
    ) -> Result<Arc<pool::Pool>, LlmError> {
        let mut m = self.inner.pools.lock().expect("pools lock");
        if let Some(p) = m.get(role) {
            return Ok(Arc::clone(p));
        }
        let p = make()?;
        m.insert(role.clone(), Arc::clone(&p));
        Ok(p)
    }
}
impl Llm {
    /// A layer of its own, with no budget cap: a one-layer [`Roster`] (its cache, its
    /// limiter). A capped layer, and the layers of a run with several models, come from a
    /// roster made with their [`Budget`].
    pub fn new(config: LlmConfig) -> Result<Self, LlmError> {
        Roster::new(Budget::default()).layer(&Role::Writer, config)
    }
}
