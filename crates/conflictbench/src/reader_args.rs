//! Who reads a build's rows back (the recipes' `reader_check` step, and `audit --reader-…`):
//! `--reader-base-url`, `--reader-model`, `--reader none`, and the reader keys of a pool file.

use crate::config_err;
use cb_llm::{pricing, BackendKind, Llm, LlmConfig};
use clap::{Args, ValueEnum};
use std::path::Path;

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ReaderChoice {
    /// Nobody reads: the reader checks pass every row and the build says it is not
    /// reader-verified.
    None,
}

#[derive(Args, Debug, Clone, Default)]
pub struct ReaderArgs {
    /// `none`: skip the reader check. By default a model build reads with its own endpoint
    /// and model, and an offline build reads with nobody.
    #[arg(long, value_enum)]
    pub reader: Option<ReaderChoice>,
    /// Base URL of the model that reads the rows back (default: the build's own --base-url).
    #[arg(long, value_name = "URL")]
    pub reader_base_url: Option<String>,
    /// Model that reads the rows back (default: the build's own --model).
    #[arg(long, value_name = "NAME")]
    pub reader_model: Option<String>,
}

impl ReaderArgs {
    /// Whether a reader other than the writer itself is named.
    fn names_one(&self) -> bool {
        self.reader_base_url.is_some() || self.reader_model.is_some()
    }

    /// Takes the reader of a pool file where the flags name none.
    pub fn or_from(&mut self, base_url: Option<String>, model: Option<String>) {
        if self.reader.is_none() && !self.names_one() {
            self.reader_base_url = base_url;
            self.reader_model = model;
        }
    }

    /// For a replay without reader flags: the reader of the build replayed (`None`: it had
    /// none).
    pub fn or_replay(&mut self, previous: Option<&cb_model::ReaderInfo>) {
        if self.reader.is_some() || self.names_one() {
            return;
        }
        match previous {
            None => self.reader = Some(ReaderChoice::None),
            Some(r) => {
                self.reader_base_url = Some(r.endpoint.clone());
                self.reader_model = Some(r.model.clone());
            }
        }
    }

    /// Checks the flags alone: `--reader none` with a reader named is a contradiction.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.reader == Some(ReaderChoice::None) && self.names_one() {
            return Err(config_err(
                "--reader none cannot be combined with --reader-base-url or --reader-model",
            ));
        }
        Ok(())
    }

    /// The reader of a build whose model layer is `writer` (configured by `config`): `None`
    /// for `--reader none` and for an offline build without a reader named; the writer
    /// itself when the flags name its own endpoint and model or none; else a layer for the
    /// named model that shares the writer's cache file and budget (an offline writer has no
    /// cache: the reader then opens `OUT/llm-cache.sqlite`, or `--cache`).
    pub fn reader(
        &self,
        writer: &Llm,
        config: &LlmConfig,
        dry_run: bool,
        default_cache: &Path,
    ) -> anyhow::Result<Option<Llm>> {
        let offline = config.backend == BackendKind::Offline;
        if self.reader == Some(ReaderChoice::None) || (offline && !self.names_one()) {
            return Ok(None);
        }
        let base_url = match (&self.reader_base_url, offline) {
            (Some(u), _) => u.clone(),
            (None, false) => config.base_url.clone(),
            (None, true) => {
                return Err(config_err(
                    "an offline build reads with a model only when --reader-base-url names its endpoint",
                ))
            }
        };
        let model = match (&self.reader_model, offline) {
            (Some(m), _) => m.clone(),
            (None, false) => config.model.clone(),
            (None, true) => {
                return Err(config_err(
                    "an offline build reads with a model only when --reader-model names it",
                ))
            }
        };
        if !offline && base_url == config.base_url && model == config.model {
            return Ok(Some(writer.clone()));
        }
        crate::preflight::check_endpoint(
            &base_url,
            !dry_run && config.backend != BackendKind::Replay,
        )?;
        let mut c = reader_config(config.clone(), base_url, model);
        if dry_run {
            c.backend = BackendKind::DryRun;
        } else if config.backend == BackendKind::Replay {
            c.backend = BackendKind::Replay;
        }
        let llm = if offline {
            c.cache_path = Some(
                config
                    .cache_path
                    .clone()
                    .unwrap_or_else(|| default_cache.to_path_buf()),
            );
            Llm::new(c)
        } else {
            writer.reader(c)
        };
        Ok(Some(llm.map_err(anyhow::Error::new)?))
    }
}

/// `base` (limits, budget, cache, retries) turned to the reader `model` at `base_url`: an
/// OpenAI-compatible endpoint, no pool, the model's built-in price, the key from
/// `OPENAI_API_KEY`. The build's reader and the audit's are made by it.
pub fn reader_config(mut base: LlmConfig, base_url: String, model: String) -> LlmConfig {
    base.backend = BackendKind::Openai;
    if matches!(base.transport, cb_llm::Transport::Pool(_)) {
        base.transport = cb_llm::Transport::Online;
    }
    base.price = pricing::builtin(&model).unwrap_or_default();
    base.api_key = crate::llm_args::api_key();
    base.base_url = base_url;
    base.model = model;
    base
}
