//! Building routes: each model's configuration in this run (price, backend, key, cache,
//! limits, transport) and each recipe's routing table, every layer from the run's roster.

use super::endpoint::{api_key, check_endpoint, reader_config};
use super::{LlmSetup, ModelSpec, ReaderSetting, TransportSetting};
use crate::config_error::config_err;
use anyhow::Context;
use cb_engine::{Recipe, Routes};
use cb_llm::{pricing, BackendKind, Limits, Llm, LlmConfig, Price, Role, Transport};
use std::collections::BTreeMap;

impl LlmSetup {
    /// The writer's configuration (the default model). `previous` gives the endpoint and
    /// model a replay falls back on (a previous manifest), and `what` names the job in the
    /// error when there is none.
    pub fn writer(
        &self,
        previous: impl Fn() -> Option<(String, String)>,
        what: &str,
    ) -> anyhow::Result<LlmConfig> {
        let mut c = self.shared.clone();
        if self.mode.backend() == BackendKind::Offline {
            self.default.transport.apply(&mut c)?;
            return Ok(c);
        }
        let spec = &self.default;
        // A pool stands in for `--base-url` (its first endpoint names the run); batch files
        // name no server unless told: their answers are recorded as from `batch-files`.
        let given = spec
            .base_url
            .clone()
            .or_else(|| spec.transport.stand_in_endpoint());
        let (base_url, model) = match (self.mode.replays(), &given, &spec.model) {
            (_, Some(u), Some(m)) => (u.clone(), m.clone()),
            (true, u, m) => {
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
        c.price = price_of(spec.price, &model).unwrap_or_default();
        c.backend = self.mode.model_backend();
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
        spec.transport.apply(&mut c)?;
        Ok(c)
    }

    /// The configuration of the named model `name`, whatever the run's backend (a reader
    /// reads with its model in an offline build too).
    fn named_model_config(&self, name: &str) -> anyhow::Result<LlmConfig> {
        let spec = &self.named[name];
        let base_url = match (&spec.base_url, &spec.transport) {
            (Some(u), _) => u.clone(),
            (None, TransportSetting::Pool(p)) => p
                .endpoints
                .first()
                .map(|e| e.base_url.clone())
                .unwrap_or_default(),
            (None, _) => unreachable!("a named model has a base_url or a pool"),
        };
        let model = spec.model.clone().unwrap_or_default();
        self.model_config(spec, (base_url, model))
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

    /// The price of the reader `model` at the online price: `--reader-price-input` and
    /// `--reader-price-output`, else the writer's price when it is the writer's model, else
    /// the built-in table; `None` when nothing gives it.
    pub(super) fn reader_price(&self, model: &str) -> Option<Price> {
        let given = match (&self.reader_price, &self.default.model) {
            ((None, None), Some(writer)) if writer == model => self.default.price,
            (given, _) => *given,
        };
        price_of(given, model)
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
    ) -> anyhow::Result<Option<(Role, Llm)>> {
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
                return Ok(Some((Role::Named(name), llm)));
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
            return Ok(Some((Role::Writer, routes.writer().clone())));
        }
        // With batch files the reader's requests go into the files too (its model in their
        // lines): it sends nothing, and with no base URL named its answers are recorded as
        // from `batch-files`, as the writer's are: no URL to check.
        let transport = &self.default.transport;
        let sends = self.mode.sends() && transport.sends();
        if transport.sends() || transport.stand_in_endpoint().as_deref() != Some(base_url.as_str())
        {
            check_endpoint("--reader-base-url", &base_url, sends)?;
        }
        let mut c = reader_config(config.clone(), base_url, model);
        c.cache_path = Some(self.cache.clone());
        // Its own price (at the batch price when its calls go in batches) and its own limits
        // (the run's flags: never a pool's endpoints' concurrency together).
        c.price = self.reader_price(&c.model).unwrap_or_default();
        if let (Transport::BatchApi(_), TransportSetting::BatchApi { price_factor, .. }) =
            (&c.transport, &self.default.transport)
        {
            c.price.input_per_million *= price_factor;
            c.price.output_per_million *= price_factor;
        }
        Limits::of(&self.shared).apply(&mut c);
        c.backend = self.mode.model_backend();
        Ok(Some((Role::Reader, self.roster.layer(&Role::Reader, c)?)))
    }
}

/// The price of `model` as `given` (the flags' or a models file's USD per million prompt and
/// completion tokens), the built-in table filling in what is not given; `None` when neither
/// gives both.
pub(super) fn price_of(given: (Option<f64>, Option<f64>), model: &str) -> Option<Price> {
    let builtin = pricing::builtin(model);
    Some(Price {
        input_per_million: given.0.or(builtin.map(|b| b.input_per_million))?,
        output_per_million: given.1.or(builtin.map(|b| b.output_per_million))?,
    })
}
