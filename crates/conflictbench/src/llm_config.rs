//! The run's LLM configuration, resolved once from its flags (as ripgrep goes from its
//! low-level arguments to its high-level ones): [`LlmSetup`] holds the backend, the settings
//! every layer shares (limits, retries, budget, cache, structured output), the default model
//! with its transport (online, an endpoint pool, the Batch API, batch files) and the reader.
//! Every command takes its LLM layers from here: `build` a writer per recipe and its reader
//! (every layer of the run comes from one roster, [`LlmSetup::roster`]: one budget, one cache
//! writer, one limiter and one pool a model; each recipe's routes: [`LlmSetup::routes`]),
//! `eval` the model under test, `audit` and `batches` their one endpoint
//! ([`reader_config`], [`api_key`]).

use crate::config_error::config_err;
use crate::llm_args::{Backend, BatchFlags, LlmArgs, ModelFlags, PoolFlags, ReaderArgs};
use anyhow::Context;
use cb_engine::{Recipe, Routes, Who};
use cb_llm::{
    pricing, ApiKey, BackendKind, BatchOptions, FilesOptions, Limits, Llm, LlmConfig, NamedBy,
    PoolConfig, Price, Role, Roster, Structured, Transport,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One endpoint reached alone, outside a build (`batches run-dir`, `batches --cancel`): the
/// openai backend at `base_url` for `model`, the key from `OPENAI_API_KEY`, everything else
/// as [`LlmConfig::offline`] leaves it.
pub fn endpoint_config(base_url: &str, model: &str) -> LlmConfig {
    let mut c = LlmConfig::offline();
    c.backend = BackendKind::Openai;
    c.base_url = base_url.to_owned();
    c.model = model.to_owned();
    c.api_key = api_key();
    c
}

/// The one layer of `audit --reader-base-url URL --reader-model M`: the reader of
/// [`reader_config`], on a roster of its own (its cache file `cache`, no budget).
pub fn audit_reader(
    cache: &Path,
    concurrency: usize,
    (base_url, model): (&str, &str),
) -> anyhow::Result<Llm> {
    let mut c = LlmConfig::offline();
    c.cache_path = Some(cache.to_path_buf());
    c.concurrency = concurrency;
    let c = reader_config(c, base_url.to_owned(), model.to_owned());
    Ok(Roster::new(None, None).layer(&Role::Reader, c)?)
}

/// The API key of the run, from `OPENAI_API_KEY` (empty when unset); it lives only in memory.
pub fn api_key() -> ApiKey {
    ApiKey::new(std::env::var("OPENAI_API_KEY").unwrap_or_default())
}

/// How the calls of a model that miss the cache travel, as the flags chose it.
#[derive(Debug, Clone)]
pub enum Carrier {
    Online,
    /// `--endpoint` / `--endpoints FILE`.
    Pool(PoolConfig),
    /// `--batch`, at `price_factor` of the online price.
    BatchApi {
        options: BatchOptions,
        price_factor: f64,
    },
    /// `--batch-dir DIR` (made absolute when the folder is made).
    Files {
        dir: PathBuf,
        max_lines: usize,
        max_bytes: usize,
        window: usize,
    },
}

/// One model as the run's settings name it, before a layer is made of it.
#[derive(Debug, Clone)]
pub struct ModelSpec {
    /// Its endpoint as the settings give it (`None`: a pool's first endpoint names the
    /// model, batch files' answers are recorded as from `batch-files`, a replay takes it
    /// from the previous manifest).
    pub base_url: Option<String>,
    pub model: Option<String>,
    /// USD per million prompt and completion tokens, where the settings give them (else
    /// the built-in table).
    pub price: (Option<f64>, Option<f64>),
    pub carrier: Carrier,
    /// The settings that name it, for the errors that say what to check.
    pub named_by: NamedBy,
    /// Its own concurrency, RPM and TPM, and structured-output form (else the run's).
    pub limits: Option<Limits>,
    pub structured: Option<Structured>,
}

/// Who reads a build's rows back.
#[derive(Debug, Clone)]
enum ReaderSetting {
    /// `--reader none`.
    Nobody,
    /// The flags name no reader: the writer reads (nobody for an offline build; a replay
    /// reads as the build it replays did).
    Writer,
    /// `--reader-base-url` and/or `--reader-model` (or a pool file's reader keys); what they
    /// leave out is the writer's.
    Named {
        base_url: Option<String>,
        model: Option<String>,
    },
    /// `--reader NAME`: a model of `--models`.
    Model(String),
}

/// The LLM configuration of one command, resolved from its flags.
#[derive(Debug)]
pub struct LlmSetup {
    backend: Backend,
    dry_run: bool,
    /// What every layer of the run shares: limits, retries, timeouts, budget, structured
    /// output (an offline configuration until a model is put in).
    shared: LlmConfig,
    /// The cache file of every layer that has one.
    cache: PathBuf,
    /// The model of every call that names no other.
    default: ModelSpec,
    reader: ReaderSetting,
    /// The named models (`--models FILE`), by name.
    named: BTreeMap<String, ModelSpec>,
    /// `--model-for STEP=NAME`: step name -> model name.
    model_for: BTreeMap<String, String>,
    /// The setting that names the reader, when one does (`--reader`, `--reader-base-url`,
    /// the pool file's reader keys), for the errors that refuse it beside a recipe's panel.
    reader_by: Option<String>,
    /// Every layer of the run: one cache writer, one budget, one limiter a model.
    roster: Roster,
}

impl LlmSetup {
    /// `build`'s configuration: the LLM flags with the transport (`--batch`, `--batch-dir`, a
    /// pool) and reader flags; `out` is where the default cache goes.
    pub fn for_build(
        llm: &LlmArgs,
        (batch, pool, reader): (&BatchFlags, &PoolFlags, &ReaderArgs),
        models: &ModelFlags,
        out: &Path,
    ) -> anyhow::Result<Self> {
        let limits = Limits {
            concurrency: llm.concurrency,
            rpm: llm.rpm,
            tpm: llm.tpm,
        };
        let breaker = (
            pool.pool_open_after,
            Duration::from_millis(pool.pool_cooldown_ms),
        );
        let pool = crate::pool_file::resolve(pool, limits).map_err(config_err)?;
        let (pool, pool_reader) = match pool {
            Some((p, r)) => (Some(p), r),
            None => (None, Default::default()),
        };
        let carrier = carrier(batch, pool)?;
        let mut setup = Self::new(llm, carrier, out);
        if let Some(path) = &models.models_file {
            let file = crate::models_file::read(path, limits, breaker).map_err(config_err)?;
            setup.named = file
                .into_iter()
                .map(|(name, m)| {
                    let spec = setup.named_spec(path, &name, m);
                    (name, spec)
                })
                .collect();
        }
        setup.reader_by = match (
            &reader.reader,
            &reader.reader_base_url,
            &reader.reader_model,
        ) {
            (Some(r), _, _) if r != "none" => Some(format!("--reader {r}")),
            (Some(_), _, _) => None,
            (None, None, None) => pool_reader
                .0
                .is_some()
                .then(|| "the pool file's reader keys".to_owned()),
            (None, _, _) => Some("--reader-base-url/--reader-model".to_owned()),
        };
        setup.reader = reader_setting(reader, pool_reader, &setup.known())?;
        for spec in &models.model_for {
            let (step, name) = spec
                .split_once('=')
                .ok_or_else(|| config_err(format!("--model-for {spec}: expected STEP=NAME")))?;
            if !setup.named.contains_key(name) {
                return Err(config_err(format!(
                    "--model-for {spec}: no model `{name}` in --models (known: {})",
                    setup.known_list()
                )));
            }
            if let Some(first) = setup.model_for.insert(step.to_owned(), name.to_owned()) {
                return Err(config_err(format!(
                    "--model-for {step}={first} and --model-for {spec}: a step has one model; give it once"
                )));
            }
        }
        Ok(setup)
    }

    /// A named model of `path` as the run reaches it: its pool, else `base_url` with the
    /// run's transport (`--batch`, `--batch-dir`, online).
    fn named_spec(&self, path: &Path, name: &str, m: crate::models_file::NamedModel) -> ModelSpec {
        let at = |key: &str| format!("models.{name}.{key} in {}", path.display());
        ModelSpec {
            base_url: m.base_url,
            model: Some(m.model),
            price: m.price,
            carrier: match m.pool {
                Some(p) => Carrier::Pool(p),
                None => match &self.default.carrier {
                    Carrier::Pool(_) => Carrier::Online,
                    c => c.clone(),
                },
            },
            named_by: NamedBy {
                base_url: at("base_url"),
                model: at("model"),
            },
            limits: Some(m.limits),
            structured: m.structured,
        }
    }

    /// The names of the named models.
    fn known(&self) -> Vec<&str> {
        self.named.keys().map(String::as_str).collect()
    }

    fn known_list(&self) -> String {
        if self.named.is_empty() {
            "none: give --models FILE".into()
        } else {
            self.known().join(", ")
        }
    }

    /// `eval`'s configuration: the model under test, online; `out` is where the default cache
    /// goes.
    pub fn for_eval(llm: &LlmArgs, out: &Path) -> Self {
        Self::new(llm, Carrier::Online, out)
    }

    fn new(llm: &LlmArgs, carrier: Carrier, out: &Path) -> Self {
        let mut shared = LlmConfig::offline();
        shared.concurrency = llm.concurrency;
        shared.rpm = llm.rpm;
        shared.tpm = llm.tpm;
        shared.max_retries = llm.max_retries;
        shared.backoff_base = Duration::from_millis(llm.backoff_ms);
        shared.backoff_max = Duration::from_secs(llm.backoff_max_s);
        shared.request_timeout = Duration::from_secs(llm.timeout_s.max(1));
        shared.max_cost_usd = llm.max_cost;
        shared.max_tokens = llm.max_tokens;
        shared.structured = llm.structured.into();
        let sends_nothing = matches!(carrier, Carrier::Files { .. });
        let backend = match llm.backend {
            Some(b) => b,
            None if llm.base_url.is_some()
                || matches!(carrier, Carrier::Pool(_))
                || sends_nothing =>
            {
                Backend::Openai
            }
            None => Backend::Offline,
        };
        Self {
            backend,
            dry_run: llm.dry_run,
            shared,
            cache: llm
                .cache
                .clone()
                .unwrap_or_else(|| out.join("llm-cache.sqlite")),
            default: ModelSpec {
                base_url: llm.base_url.clone(),
                model: llm.model.clone(),
                price: (llm.price_input, llm.price_output),
                carrier,
                named_by: NamedBy::default(),
                limits: None,
                structured: None,
            },
            reader: ReaderSetting::Writer,
            named: BTreeMap::new(),
            model_for: BTreeMap::new(),
            reader_by: None,
            roster: Roster::new(llm.max_cost, llm.max_tokens),
        }
    }

    /// Every layer of the run ([`Roster::stop_all`] stops them all).
    pub fn roster(&self) -> &Roster {
        &self.roster
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// `--dry-run`: count, call nothing, write nothing.
    pub fn dry_run(&self) -> bool {
        self.dry_run
    }

    /// The calls go through the Batch API (`--batch`): prices are the batch prices.
    pub fn batch_api(&self) -> bool {
        matches!(self.default.carrier, Carrier::BatchApi { .. })
    }

    /// `--batch-dir`: the folder of batch files, as given.
    pub fn batch_dir(&self) -> Option<&Path> {
        match &self.default.carrier {
            Carrier::Files { dir, .. } => Some(dir),
            _ => None,
        }
    }

    /// Checks every endpoint of the run before any work (`--base-url`, a pool's): a base URL
    /// that cannot be parsed, or a public host with no API key, is a configuration error.
    pub fn preflight(&self, recipes: &[&Recipe]) -> anyhow::Result<()> {
        self.preflight_readers(recipes)?;
        if self.backend == Backend::Offline {
            return Ok(());
        }
        let sends_nothing = matches!(self.default.carrier, Carrier::Files { .. });
        let calls = self.backend == Backend::Openai && !self.dry_run && !sends_nothing;
        let pool = match &self.default.carrier {
            Carrier::Pool(p) => p.endpoints.iter().map(|e| e.base_url.as_str()).collect(),
            _ => Vec::new(),
        };
        for url in self.default.base_url.iter().map(String::as_str).chain(pool) {
            crate::preflight::check_endpoint("--base-url", url, calls)?;
        }
        for spec in self.named.values() {
            let pool = match &spec.carrier {
                Carrier::Pool(p) => p.endpoints.iter().map(|e| e.base_url.as_str()).collect(),
                _ => Vec::new(),
            };
            for url in spec.base_url.iter().map(String::as_str).chain(pool) {
                crate::preflight::check_endpoint(&spec.named_by.base_url, url, calls)?;
            }
        }
        Ok(())
    }

    /// The endpoints of the build's readers (`--reader-base-url`, `--reader NAME`, the
    /// recipes' panels), checked whatever the writer's backend: an offline build's readers
    /// call their models too.
    fn preflight_readers(&self, recipes: &[&Recipe]) -> anyhow::Result<()> {
        let calls = !self.dry_run && self.backend != Backend::Replay;
        let mut names: Vec<String> = match &self.reader {
            ReaderSetting::Nobody => return Ok(()),
            ReaderSetting::Named {
                base_url: Some(u), ..
            } => {
                crate::preflight::check_endpoint("--reader-base-url", u, calls)?;
                Vec::new()
            }
            ReaderSetting::Model(n) => vec![n.clone()],
            _ => Vec::new(),
        };
        names.extend(
            recipes
                .iter()
                .flat_map(|r| &r.steps)
                .flat_map(|s| s.strs("readers").unwrap_or_default()),
        );
        for name in names {
            let Some(spec) = self.named.get(&name) else {
                continue;
            };
            let pool = match &spec.carrier {
                Carrier::Pool(p) => p.endpoints.iter().map(|e| e.base_url.as_str()).collect(),
                _ => Vec::new(),
            };
            for url in spec.base_url.iter().map(String::as_str).chain(pool) {
                crate::preflight::check_endpoint(&spec.named_by.base_url, url, calls)?;
            }
        }
        Ok(())
    }

    /// The writer's configuration (the default model). `previous` gives the endpoint and
    /// model a replay falls back on (a previous manifest), and `what` names the job in the
    /// error when there is none.
    pub fn writer(
        &self,
        previous: impl Fn() -> Option<(String, String)>,
        what: &str,
    ) -> anyhow::Result<LlmConfig> {
        let mut c = self.shared.clone();
        if self.backend == Backend::Offline {
            apply_carrier(&mut c, &self.default.carrier)?;
            return Ok(c);
        }
        let spec = &self.default;
        // A pool stands in for `--base-url` (its first endpoint names the run); batch files
        // name no server unless told: their answers are recorded as from `batch-files`.
        let stand_in = match &spec.carrier {
            Carrier::Pool(p) => p.endpoints.first().map(|e| e.base_url.clone()),
            Carrier::Files { .. } => Some(cb_llm::batch_files::ENDPOINT.to_owned()),
            _ => None,
        };
        let given = spec.base_url.clone().or(stand_in);
        let (base_url, model) = match (self.backend, &given, &spec.model) {
            (_, Some(u), Some(m)) => (u.clone(), m.clone()),
            (Backend::Replay, u, m) => {
                let prev = previous();
                let u = u.clone().or_else(|| prev.as_ref().map(|p| p.0.clone()));
                let m = m.clone().or_else(|| prev.as_ref().map(|p| p.1.clone()));
                match (u, m) {
                    (Some(u), Some(m)) => (u, m),
                    _ => return Err(config_err(format!(
                        "replay of {what}: give --base-url and --model, or build it once with a model so its manifest names them"
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
        self.model_config(spec, (base_url, model))
    }

    /// The configuration of `spec`'s model `model` at `base_url` in this run: its price
    /// (else the built-in table's), the run's backend, key and cache, its own limits and
    /// structured-output form where it sets them, its transport.
    fn model_config(
        &self,
        spec: &ModelSpec,
        (base_url, model): (String, String),
    ) -> anyhow::Result<LlmConfig> {
        let mut c = self.shared.clone();
        let builtin = pricing::builtin(&model).unwrap_or_default();
        c.price = Price {
            input_per_million: spec.price.0.unwrap_or(builtin.input_per_million),
            output_per_million: spec.price.1.unwrap_or(builtin.output_per_million),
        };
        c.backend = if self.dry_run {
            BackendKind::DryRun
        } else if self.backend == Backend::Replay {
            BackendKind::Replay
        } else {
            BackendKind::Openai
        };
        c.base_url = base_url;
        c.model = model;
        c.api_key = api_key();
        c.cache_path = Some(self.cache.clone());
        c.named_by = spec.named_by.clone();
        if let Some(limits) = spec.limits {
            limits.apply(&mut c);
        }
        if let Some(s) = spec.structured {
            c.structured = s;
        }
        apply_carrier(&mut c, &spec.carrier)?;
        Ok(c)
    }

    /// The configuration of the named model `name`, whatever the run's backend (a reader
    /// reads with its model in an offline build too).
    fn named_model_config(&self, name: &str) -> anyhow::Result<LlmConfig> {
        let spec = &self.named[name];
        let base_url = match (&spec.base_url, &spec.carrier) {
            (Some(u), _) => u.clone(),
            (None, Carrier::Pool(p)) => p
                .endpoints
                .first()
                .map(|e| e.base_url.clone())
                .unwrap_or_default(),
            (None, _) => unreachable!("a named model has a base_url or a pool"),
        };
        let model = spec.model.clone().unwrap_or_default();
        self.model_config(spec, (base_url, model))
    }

    /// Checks the selected recipes against the flags and the named models in one pass,
    /// before any work and before any file or cache is made: each named model is known; a
    /// step with a named model calls a model (not a rule step such as `pick_negative`), is
    /// not a reader check (readers are named by `--reader` or `readers = [...]`) and is in a
    /// build that calls models (an offline build would drop it); a recipe's panel is the
    /// only setting that names its readers; each `--model-for` names a step of the
    /// selection. `steps` are each recipe's steps, built ([`Recipe::load_steps`]).
    pub fn check_recipes(
        &self,
        recipes: &[(&Recipe, Vec<Box<dyn cb_engine::Step>>)],
    ) -> anyhow::Result<()> {
        let known = self.known();
        for (r, steps) in recipes {
            r.check_models(&known)?;
            for (i, (spec, step)) in r.steps.iter().zip(steps).enumerate() {
                self.check_step(r, i, (spec, step.as_ref()))?;
            }
        }
        for step in self.model_for.keys() {
            if !recipes
                .iter()
                .any(|(r, _)| r.steps.iter().any(|s| s.name() == step))
            {
                let names: std::collections::BTreeSet<&str> = recipes
                    .iter()
                    .flat_map(|(r, _)| r.steps.iter().map(|s| s.name()))
                    .collect();
                return Err(config_err(format!(
                    "--model-for {step}=...: no step `{step}` in the selected recipes (their steps: {})",
                    names.into_iter().collect::<Vec<_>>().join(", ")
                )));
            }
        }
        Ok(())
    }

    /// The routing rules of step `i` of `recipe` (see [`LlmSetup::check_recipes`]).
    fn check_step(
        &self,
        recipe: &Recipe,
        i: usize,
        (spec, step): (&cb_engine::recipe::StepSpec, &dyn cb_engine::Step),
    ) -> anyhow::Result<()> {
        let named = match (self.model_for.get(step.name()), &spec.model) {
            (Some(n), _) => Some((format!("--model-for {}={n}", step.name()), n)),
            (None, Some(m)) => Some((recipe.step_at(i, Some("model")), m)),
            (None, None) => None,
        };
        if let Some((at, name)) = named {
            if step.reads() {
                return Err(config_err(format!(
                    "{at}: a reader check is not routed by a step's model: name its reader with --reader {name}, or its panel with `readers = [\"{name}\"]` in the recipe"
                )));
            }
            if step.prompts().is_empty() {
                return Err(config_err(format!(
                    "{at}: step {} calls no model (its answer is worked out by rule), so model `{name}` would answer nothing: remove it",
                    step.name()
                )));
            }
            if self.backend == Backend::Offline {
                return Err(config_err(format!(
                    "{at}: model `{name}` would be dropped: this build runs offline (no --base-url); give --base-url (or --backend openai) to build with models, or remove the named model"
                )));
            }
        }
        if step.reads() && spec.strs("readers").is_some() {
            if let Some(by) = &self.reader_by {
                return Err(config_err(format!(
                    "{}: the recipe's panel (`readers`) and {by} both name the readers: keep one (the panel, or drop `readers` from the recipe)",
                    recipe.step_at(i, Some("readers"))
                )));
            }
        }
        Ok(())
    }

    /// The routing table of `recipe`: its writer (a replay's endpoint and reader come from
    /// the recipe's previous manifest, `manifest`), its reader, its steps' named models
    /// (`--model-for`, else the step's `model`) and its panels, each a layer of the run's
    /// roster (its cache, its budget, its model's limiter; counters of its own).
    pub fn routes(
        &self,
        recipe: &Recipe,
        manifest: &dyn Fn() -> Option<cb_model::Manifest>,
    ) -> anyhow::Result<Routes> {
        let previous = || manifest().and_then(|m| (!m.offline).then_some((m.endpoint, m.model)));
        let mut config = self.writer(previous, &recipe.name())?;
        // Each layer's batch files are the recipe's own (`LlmConfig::job`).
        config.job = Some(recipe.name());
        let writer = self
            .roster
            .layer(&Role::Writer, config.clone())
            .context("cannot set up the LLM layer")?;
        let mut routes = Routes::new(writer);
        let replayed = match config.backend {
            BackendKind::Replay => manifest(),
            _ => None,
        };
        if let Some((who, llm)) = self.reader(&routes, &config, replayed.as_ref())? {
            routes.set_reader(who, llm);
        }
        let mut layers: BTreeMap<String, Llm> = BTreeMap::new();
        let mut named = |name: &str| -> anyhow::Result<Llm> {
            if let Some(l) = layers.get(name) {
                return Ok(l.clone());
            }
            let mut c = self.named_model_config(name)?;
            c.job = Some(recipe.name());
            let l = self.roster.layer(&Role::Named(name.to_owned()), c)?;
            layers.insert(name.to_owned(), l.clone());
            Ok(l)
        };
        for step in &recipe.steps {
            let name = self.model_for.get(step.name()).or(step.model.as_ref());
            if let Some(name) = name {
                routes.set_step(step.name(), name, named(name)?);
            }
            let panel = step.strs("readers").unwrap_or_default();
            if !panel.is_empty() && !matches!(self.reader, ReaderSetting::Nobody) {
                let layers = panel
                    .into_iter()
                    .map(|n| named(&n).map(|l| (n, l)))
                    .collect::<anyhow::Result<Vec<_>>>()?;
                routes.set_panel(step.name(), layers);
            }
        }
        Ok(routes)
    }

    /// The reader of a build whose writer is `routes`' (configured by `config`), and who it
    /// answers as: `None` for `--reader none` and for an offline build without a reader
    /// named; the writer itself when the settings name its own endpoint and model or none;
    /// else a layer of the run's roster (`Role::Reader`, or the named model's role). A
    /// replay without reader flags reads as the build it replays did (`replayed`: that
    /// build's manifest, when there is one).
    fn reader(
        &self,
        routes: &Routes,
        config: &LlmConfig,
        replayed: Option<&cb_model::Manifest>,
    ) -> anyhow::Result<Option<(Who, Llm)>> {
        let offline = config.backend == BackendKind::Offline;
        let mut setting = self.reader.clone();
        if let (ReaderSetting::Writer, BackendKind::Replay, Some(m)) =
            (&setting, config.backend, replayed)
        {
            setting = match &m.reader {
                None => ReaderSetting::Nobody,
                Some(r) => ReaderSetting::Named {
                    base_url: Some(r.endpoint.clone()),
                    model: Some(r.model.clone()),
                },
            };
        }
        let (base_url, model) = match setting {
            ReaderSetting::Nobody => return Ok(None),
            ReaderSetting::Writer if offline => return Ok(None),
            ReaderSetting::Writer => (None, None),
            ReaderSetting::Named { base_url, model } => (base_url, model),
            ReaderSetting::Model(name) => {
                let role = Role::Named(name.clone());
                let mut c = self.named_model_config(&name)?;
                c.job.clone_from(&config.job);
                let llm = self.roster.layer(&role, c)?;
                return Ok(Some((Who::Named(name), llm)));
            }
        };
        let (base_url, model) = match (base_url, model, offline) {
            (Some(u), Some(m), _) => (u, m),
            (u, m, false) => (
                u.unwrap_or_else(|| config.base_url.clone()),
                m.unwrap_or_else(|| config.model.clone()),
            ),
            (None, _, true) => {
                return Err(config_err(
                    "an offline build reads with a model only when --reader-base-url names its endpoint",
                ))
            }
            (Some(_), None, true) => {
                return Err(config_err(
                    "an offline build reads with a model only when --reader-model names it",
                ))
            }
        };
        if !offline && base_url == config.base_url && model == config.model {
            return Ok(Some((Who::Build, routes.writer().clone())));
        }
        crate::preflight::check_endpoint(
            "--reader-base-url",
            &base_url,
            !self.dry_run && config.backend != BackendKind::Replay,
        )?;
        let mut c = reader_config(config.clone(), base_url, model);
        c.cache_path = Some(self.cache.clone());
        if self.dry_run {
            c.backend = BackendKind::DryRun;
        } else if config.backend == BackendKind::Replay {
            c.backend = BackendKind::Replay;
        }
        Ok(Some((Who::Reader, self.roster.layer(&Role::Reader, c)?)))
    }
}

/// The reader the flags (or a pool file's reader keys, where the flags name none) ask for.
/// `--reader none` with a reader named is a contradiction.
fn reader_setting(
    flags: &ReaderArgs,
    (pool_url, pool_model): crate::pool_file::Reader,
    known: &[&str],
) -> anyhow::Result<ReaderSetting> {
    let named = flags.reader_base_url.is_some() || flags.reader_model.is_some();
    if let Some(choice) = &flags.reader {
        if named {
            return Err(config_err(format!(
                "--reader {choice} cannot be combined with --reader-base-url or --reader-model"
            )));
        }
        if choice == "none" {
            return Ok(ReaderSetting::Nobody);
        }
        if !known.contains(&choice.as_str()) {
            let known = if known.is_empty() {
                "none: give --models FILE".to_owned()
            } else {
                known.join(", ")
            };
            return Err(config_err(format!(
                "--reader {choice}: expected none or the name of a model of --models (known: {known})"
            )));
        }
        return Ok(ReaderSetting::Model(choice.clone()));
    }
    let (base_url, model) = if named {
        (flags.reader_base_url.clone(), flags.reader_model.clone())
    } else {
        (pool_url, pool_model)
    };
    Ok(match (base_url, model) {
        (None, None) => ReaderSetting::Writer,
        (base_url, model) => ReaderSetting::Named { base_url, model },
    })
}

/// The transport the batch flags and the pool choose; a pool cannot be combined with
/// `--batch` or `--batch-dir`, nor `--batch-dir` name a file.
fn carrier(batch: &BatchFlags, pool: Option<PoolConfig>) -> anyhow::Result<Carrier> {
    let window = batch_window(batch)?;
    if pool.is_some() && (batch.batch || batch.batch_dir.is_some()) {
        return Err(config_err(
            "--batch or --batch-dir and an endpoint pool cannot be combined",
        ));
    }
    if let Some(dir) = &batch.batch_dir {
        if dir.exists() && !dir.is_dir() {
            return Err(config_err(format!(
                "--batch-dir {} names a file, not a folder: give the folder where the batch files go",
                dir.display()
            )));
        }
        return Ok(Carrier::Files {
            dir: dir.clone(),
            max_lines: batch.batch_dir_max_lines.max(1),
            max_bytes: batch.batch_max_mb.max(1) * 1024 * 1024,
            window,
        });
    }
    if batch.batch {
        if !(batch.batch_price_factor >= 0.0 && batch.batch_price_factor.is_finite()) {
            return Err(config_err("--batch-price-factor must be a number >= 0"));
        }
        return Ok(Carrier::BatchApi {
            options: BatchOptions {
                max_requests_per_file: batch.batch_max_requests.max(1),
                max_bytes_per_file: batch.batch_max_mb.max(1) * 1024 * 1024,
                poll_initial: Duration::from_millis(batch.batch_poll_ms.max(1)),
                window,
                ..BatchOptions::default()
            },
            price_factor: batch.batch_price_factor,
        });
    }
    Ok(match pool {
        Some(p) => Carrier::Pool(p),
        None => Carrier::Online,
    })
}

/// `--batch-window`: at least 1, and only where rounds are (`--batch`, `--batch-dir`);
/// [`cb_llm::BATCH_WINDOW`] when not given.
fn batch_window(batch: &BatchFlags) -> anyhow::Result<usize> {
    match batch.batch_window {
        None => Ok(cb_llm::BATCH_WINDOW),
        Some(0) => Err(config_err(
            "--batch-window 0: a round must take at least 1 item",
        )),
        Some(_) if !batch.batch && batch.batch_dir.is_none() => Err(config_err(
            "--batch-window sets the items a batch round takes: give it with --batch or --batch-dir",
        )),
        Some(n) => Ok(n),
    }
}

/// Puts the transport into a configuration: a pool (not for the offline backend, which
/// sends nothing) sums its endpoints' concurrency; the Batch API prices calls at its factor;
/// batch files need their folder, made here.
fn apply_carrier(c: &mut LlmConfig, carrier: &Carrier) -> anyhow::Result<()> {
    let batch_backend = matches!(c.backend, BackendKind::Openai | BackendKind::DryRun);
    match carrier {
        Carrier::Online => {}
        Carrier::Pool(pool) => {
            if c.backend != BackendKind::Offline {
                c.concurrency = Limits::of_pool(pool).concurrency;
                c.transport = Transport::Pool(pool.clone());
            }
        }
        Carrier::Files { .. } if !batch_backend => {
            return Err(config_err(
                "--batch-dir needs the openai backend (--model names the model the files ask for)",
            ))
        }
        Carrier::Files {
            dir,
            max_lines,
            max_bytes,
            window,
        } => {
            // Absolute: the journal names the files by their folder. A dry run writes
            // nothing, so it does not make the folder either.
            let made = if c.backend == BackendKind::DryRun {
                std::path::absolute(dir)
            } else {
                std::fs::create_dir_all(dir).and_then(|()| dir.canonicalize())
            };
            let dir =
                made.map_err(|e| config_err(format!("--batch-dir {}: {e}", dir.display())))?;
            c.transport = Transport::BatchFiles(FilesOptions {
                max_requests_per_file: *max_lines,
                max_bytes_per_file: *max_bytes,
                window: *window,
                ..FilesOptions::new(dir)
            });
        }
        Carrier::BatchApi { .. } if !batch_backend => {
            return Err(config_err(
                "--batch needs the openai backend (--base-url and --model)",
            ))
        }
        Carrier::BatchApi {
            options,
            price_factor,
        } => {
            c.price.input_per_million *= price_factor;
            c.price.output_per_million *= price_factor;
            c.transport = Transport::BatchApi(options.clone());
        }
    }
    Ok(())
}

/// `base` (limits, budget, cache, retries) turned to the reader `model` at `base_url`: an
/// OpenAI-compatible endpoint, no pool, the model's built-in price, the key from
/// `OPENAI_API_KEY`, named by `--reader-base-url` and `--reader-model`. The build's reader
/// and the audit's are made by it.
pub fn reader_config(mut base: LlmConfig, base_url: String, model: String) -> LlmConfig {
    base.backend = BackendKind::Openai;
    if matches!(base.transport, Transport::Pool(_)) {
        base.transport = Transport::Online;
    }
    base.price = pricing::builtin(&model).unwrap_or_default();
    base.api_key = api_key();
    base.base_url = base_url;
    base.model = model;
    base.named_by = NamedBy {
        base_url: "--reader-base-url".into(),
        model: "--reader-model".into(),
    };
    base
}
