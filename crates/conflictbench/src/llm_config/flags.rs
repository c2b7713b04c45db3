//! Flag resolution: the flags, the pool file and the models file resolved into one
//! [`LlmSetup`] (the transport, the default model, the reader, the named models and which
//! step each answers).

use super::{LlmSetup, Mode, ModelSpec, ReaderSetting, TransportSetting};
use crate::config_error::config_err;
use crate::llm_args::{BatchFlags, LlmArgs, ModelFlags, PoolFlags, ReaderArgs};
use cb_llm::{Limits, LlmConfig, NamedBy, Roster};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

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
        let transport = TransportSetting::resolve(batch, pool)?;
        let mut setup = Self::new(llm, transport, out);
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
        let pooled_reader = pool_reader.0.is_some();
        setup.reader = setup.reader_setting(reader, pool_reader)?;
        let priced = reader.reader_price_input.is_some() || reader.reader_price_output.is_some();
        let own_reader =
            reader.reader_base_url.is_some() || reader.reader_model.is_some() || pooled_reader;
        if priced && !own_reader {
            return Err(config_err(
                "--reader-price-input/--reader-price-output price the reader named by \
                 --reader-model or --reader-base-url (or a pool file's reader keys), and none is \
                 named: the build reads with its own model at its own price (--price-input, \
                 --price-output), with --reader NAME at the models file's price, or not at all",
            ));
        }
        setup.reader_price = (reader.reader_price_input, reader.reader_price_output);
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

    /// The reader the flags (or a pool file's reader keys, where the flags name none) ask for.
    /// `--reader none` with a reader named is a contradiction.
    fn reader_setting(
        &self,
        flags: &ReaderArgs,
        (pool_url, pool_model): crate::pool_file::Reader,
    ) -> anyhow::Result<ReaderSetting> {
        let named = flags.reader_base_url.is_some() || flags.reader_model.is_some();
        if (pool_url.is_some() || pool_model.is_some()) && (named || flags.reader.is_some()) {
            let flag = flags.reader.as_ref().map_or_else(
                || "--reader-base-url/--reader-model".to_owned(),
                |r| format!("--reader {r}"),
            );
            return Err(config_err(format!(
                "the pool file's reader_base_url/reader_model (--endpoints) and {flag} both name the reader: keep one"
            )));
        }
        if let Some(choice) = &flags.reader {
            if named {
                return Err(config_err(format!(
                    "--reader {choice} cannot be combined with --reader-base-url or --reader-model"
                )));
            }
            if choice == "none" {
                return Ok(ReaderSetting::Nobody);
            }
            if !self.named.contains_key(choice) {
                return Err(config_err(format!(
                    "--reader {choice}: expected none or the name of a model of --models (known: {})",
                    self.known_list()
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

    /// A named model of `path` as the run reaches it: its pool, else `base_url` with the
    /// run's transport (`--batch`, `--batch-dir`, online).
    fn named_spec(&self, path: &Path, name: &str, m: crate::models_file::NamedModel) -> ModelSpec {
        let at = |key: &str| format!("models.{name}.{key} in {}", path.display());
        ModelSpec {
            base_url: m.base_url,
            model: Some(m.model),
            price: m.price,
            transport: match m.pool {
                Some(p) => TransportSetting::Pool(p),
                None => match &self.default.transport {
                    TransportSetting::Pool(_) => TransportSetting::Online,
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

    /// `eval`'s configuration: the model under test, online; `out` is where the default cache
    /// goes.
    pub fn for_eval(llm: &LlmArgs, out: &Path) -> Self {
        Self::new(llm, TransportSetting::Online, out)
    }

    fn new(llm: &LlmArgs, transport: TransportSetting, out: &Path) -> Self {
        let mut shared = LlmConfig::offline();
        shared.concurrency = llm.concurrency;
        shared.rpm = llm.rpm;
        shared.tpm = llm.tpm;
        shared.max_retries = llm.max_retries;
        shared.backoff_base = Duration::from_millis(llm.backoff_ms);
        shared.backoff_max = Duration::from_secs(llm.backoff_max_s);
        shared.request_timeout = Duration::from_secs(llm.timeout_s);
        shared.max_cost_usd = llm.max_cost;
        shared.max_tokens = llm.max_tokens;
        shared.structured = llm.structured.into();
        let names_endpoint = llm.base_url.is_some() || transport.names_endpoint();
        Self {
            mode: Mode::of(llm.backend, llm.dry_run, names_endpoint),
            shared,
            cache: llm
                .cache
                .clone()
                .unwrap_or_else(|| out.join("llm-cache.sqlite")),
            default: ModelSpec {
                base_url: llm.base_url.clone(),
                model: llm.model.clone(),
                price: (llm.price_input, llm.price_output),
                transport,
                named_by: NamedBy::default(),
                limits: None,
                structured: None,
            },
            reader: ReaderSetting::Writer,
            reader_price: (None, None),
            named: BTreeMap::new(),
            model_for: BTreeMap::new(),
            reader_by: None,
            roster: Roster::new(llm.max_cost, llm.max_tokens),
        }
    }
}
