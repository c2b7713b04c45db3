//! The run's LLM configuration, resolved once from its flags (as ripgrep goes from its
//! low-level arguments to its high-level ones): [`LlmSetup`] holds the run's [`Mode`] (its
//! backend, or a dry run of it), the settings every layer shares (limits, retries, budget,
//! cache, structured output), the default model with its transport (`transport`: online, an
//! endpoint pool, the Batch API, or a [`BatchFolder`]) and the reader.
//! Every command takes its LLM layers from here: `build` a writer per recipe and its reader
//! (every layer of the run comes from one roster, [`LlmSetup::roster`]: one budget, one cache
//! writer, one limiter and one pool a model; each recipe's routes: [`LlmSetup::routes`]),
//! `eval` the model under test, `audit` and `batches` their one endpoint
//! ([`endpoint::reader_config`], [`endpoint::api_key`]).

mod endpoint;
mod endpoint_checks;
mod flags;
mod mode;
mod routes;
mod rules;
mod transport;

pub use endpoint::{audit_reader, check_endpoint, endpoint_config};
pub use mode::Mode;
pub use transport::BatchFolder;

use transport::TransportSetting;

use cb_llm::{Limits, LlmConfig, NamedBy, Roster, Structured};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    pub transport: TransportSetting,
    /// The settings that name it, for the errors that say what to check.
    pub named_by: NamedBy,
    /// Its own concurrency, RPM and TPM, and structured-output form (else the run's).
    pub limits: Option<Limits>,
    pub structured: Option<Structured>,
}

impl ModelSpec {
    /// The endpoints it is reached at: its base URL as given, then a pool's.
    fn endpoints(&self) -> impl Iterator<Item = &str> {
        let pool = match &self.transport {
            TransportSetting::Pool(p) => p.endpoints.as_slice(),
            _ => &[],
        };
        self.base_url
            .iter()
            .map(String::as_str)
            .chain(pool.iter().map(|e| e.base_url.as_str()))
    }
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
    /// Who answers, and whether the run only counts: decided once from the flags.
    mode: Mode,
    /// What every layer of the run shares: limits, retries, timeouts, budget, structured
    /// output (an offline configuration until a model is put in).
    shared: LlmConfig,
    /// The cache file of every layer that has one.
    cache: PathBuf,
    /// The model of every call that names no other.
    default: ModelSpec,
    reader: ReaderSetting,
    /// `--reader-price-input`, `--reader-price-output`.
    reader_price: (Option<f64>, Option<f64>),
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
    /// Every layer of the run ([`Roster::stop_all`] stops them all).
    pub fn roster(&self) -> &Roster {
        &self.roster
    }

    /// Who answers, and whether the run only counts (`--dry-run`).
    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn cache(&self) -> &Path {
        &self.cache
    }

    /// The calls go through the Batch API (`--batch`): prices are the batch prices.
    pub fn batch_api(&self) -> bool {
        matches!(self.default.transport, TransportSetting::BatchApi { .. })
    }

    /// `--batch-dir`: the folder where the requests wait.
    pub fn batch_folder(&self) -> Option<&BatchFolder> {
        self.default.transport.folder()
    }

    /// The locks of a build writing to `out`, each folder made as it is locked: none for a
    /// dry run (it writes nothing); `out`, the batch folder (unless it is `out`) and the
    /// cache (unless a replay, which only reads it).
    pub fn lock_build(&self, out: &Path) -> anyhow::Result<Vec<crate::folder_lock::Held>> {
        if self.mode.dry_run() {
            return Ok(Vec::new());
        }
        let cache = self.mode.writes_cache().then_some(self.cache.as_path());
        let folder = || match self.batch_folder() {
            Some(f) => f.lock(out),
            None => Ok(None),
        };
        crate::folder_lock::for_build(out, folder, cache)
    }

    /// The names of the named models.
    fn known(&self) -> Vec<&str> {
        self.named.keys().map(String::as_str).collect()
    }

    /// The names of the named models as the errors say them.
    fn known_list(&self) -> String {
        if self.named.is_empty() {
            "none: give --models FILE".into()
        } else {
            self.known().join(", ")
        }
    }
}
