//! What a construction step is, for the engine that drives steps and for the crates that
//! implement them. The engine (`cb-engine`) knows no particular step and the steps
//! (`cb-steps`) know nothing of the engine: both depend on this crate only.
//!
//! - [`Step`]: one construction step; it reads fields of an [`Item`] and adds its own.
//! - [`StepCtx`]: what a run needs besides the item (the LLM layer, the template
//!   environment, the seed, the [`Corpus`]: the compact views of the whole build that the
//!   engine fills in a first pass, those the steps declare).
//! - [`Registry`]: the table from a recipe's `kind = "..."` to the step's constructor; the
//!   steps crate declares it, whoever builds hands it to the engine.
//! - [`ask()`]: how a step asks the model: render the prompt, call, validate, send an
//!   unusable answer back with the reason, record the lineage. Steps never learn which
//!   backend answered: each supplies its own rule-based answer for the offline backend.
//! - [`choice`]: how a multiple-choice question is asked and its letter read back, by the
//!   reader check of a build and by `conflictbench eval` alike.

pub mod ask;
pub mod choice;
pub mod corpus;
pub mod fields;
pub mod files;
pub mod item;
pub mod params;
pub mod prompt;
pub mod routes;
pub mod schema;
pub mod spec;
pub mod template;

pub use ask::{
    ask, clean_text_answer, extract_json, Ask, Guesses, LlmParams, Model, ModelBacked, ModelStep,
    OnInvalid, GUESS_CODES, WARNINGS_FIELD,
};
pub use corpus::{view, Corpus, Indexer, Peer, View, ViewSpec};
pub use files::Files;
pub use item::{CallRecord, Item};
pub use prompt::Prompt;
pub use routes::{Routes, Who};
pub use spec::StepSpec;

use std::future::Future;

use std::pin::Pin;

/// The item field (and the rows' column) that holds what the reader picked in each check of
/// the item; the old name of [`fields::READER`].
pub use fields::READER as READER_FIELD;

/// Errors that stop a build (as opposed to rejecting one item).
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// A recipe's step entry or a prompt is wrong.
    #[error("{0}")]
    Config(String),
    /// The budget is spent.
    #[error("{0}")]
    Budget(String),
    /// The LLM layer failed in a way that concerns the whole build (cache, replay miss).
    #[error("{0}")]
    Llm(#[from] cb_llm::LlmError),
}

/// Why a step did not produce its output for an item.
#[derive(Debug)]
pub enum StepFailure {
    /// The item goes to `rejects.jsonl`.
    Reject {
        reason: String,
        detail: String,
        raw: Option<String>,
        attempts: u32,
    },
    /// The build stops (budget spent, cache broken, replay miss).
    Fatal(StepError),
    /// Not run because another item's fatal failure is stopping the build.
    Cancelled,
}

impl StepFailure {
    /// A call that failed for good: a fatal error of the layer (budget, cache, replay miss)
    /// stops the build; any other rejects the item with its reason code, `context` before
    /// the error in the detail, and the requests it took after `earlier` ones.
    pub fn from_llm(e: cb_llm::LlmError, context: &str, earlier: u32) -> Self {
        if e.is_fatal() {
            return Self::Fatal(match e {
                cb_llm::LlmError::Budget(m) => StepError::Budget(m),
                other => StepError::Llm(other),
            });
        }
        Self::Reject {
            reason: e.reason_code(),
            detail: format!("{context}: {e}"),
            raw: e.raw().map(str::to_owned),
            attempts: earlier + e.attempts(),
        }
    }

    pub fn reject(reason: &str, detail: impl Into<String>) -> Self {
        Self::Reject {
            reason: reason.into(),
            detail: detail.into(),
            raw: None,
            attempts: 0,
        }
    }
}

/// What a step run needs besides the item.
pub struct StepCtx<'a> {
    /// Who answers each step and reads each reader check (decided when the recipe loaded).
    pub routes: &'a Routes,
    pub env: &'a minijinja::Environment<'static>,
    pub seed: u64,
    pub recipe: &'a str,
    /// The views of the whole build the steps declared ([`Step::views`]), for offline rules
    /// that draw from the other items.
    pub corpus: &'a Corpus,
}

impl StepCtx<'_> {
    /// The layer the calls of step `step` go to ([`Routes::llm_for`]).
    pub fn llm_for(&self, step: &str) -> &cb_llm::Llm {
        self.routes.llm_for(step)
    }

    /// Whether a step must work out its rule-based answer: the offline backend answers with
    /// it and the dry run counts its tokens; a model needs none. The rules draw from pools of
    /// the whole build, so computing them for every item of a model build made its time grow
    /// with the square of the input (`benches/scale.rs`).
    pub fn needs_rule_answer(&self) -> bool {
        matches!(
            self.routes.writer().config().backend,
            cb_llm::BackendKind::Offline | cb_llm::BackendKind::DryRun
        )
    }
}

/// The future a step's run returns.
pub type StepFuture<'a> = Pin<Box<dyn Future<Output = Result<(), StepFailure>> + Send + 'a>>;

/// One construction step, ready to run on items (concurrently: `&self`).
pub trait Step: Send + Sync + std::fmt::Debug {
    /// The name in manifests and rejects (the recipe's `name`, else its kind).
    fn name(&self) -> &str;

    /// The prompt template this step renders, if it calls the model.
    fn prompt(&self) -> Option<&Prompt> {
        None
    }

    /// Every template the step renders (the manifest records their hashes).
    fn prompts(&self) -> Vec<&Prompt> {
        self.prompt().into_iter().collect()
    }

    /// Whether the step asks the reader (the build's manifest then names it).
    fn reads(&self) -> bool {
        false
    }

    /// The views of the whole build the step reads through [`StepCtx::corpus`]; the engine
    /// fills them in a first pass over the source before any item runs.
    fn views(&self) -> Vec<ViewSpec> {
        Vec::new()
    }

    /// Runs the step on `item`: adds its fields, or says why the item ends here.
    fn run<'a>(&'a self, item: &'a mut Item, ctx: &'a StepCtx<'_>) -> StepFuture<'a>;
}

/// Builds a step from its recipe entry; prompts are read from the folder given.
pub type Constructor = fn(&StepSpec, &Files) -> Result<Box<dyn Step>, StepError>;

/// The item fields a step needs (`reads`: present before it runs) and those it adds
/// (`writes`), for a recipe entry (a RECALL step's depend on its `mode`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepFields {
    pub reads: Vec<&'static str>,
    pub writes: Vec<&'static str>,
}

impl StepFields {
    pub fn new(reads: &[&'static str], writes: &[&'static str]) -> Self {
        StepFields {
            reads: reads.to_vec(),
            writes: writes.to_vec(),
        }
    }
}

/// One kind of the step table: its name in recipes, its constructor, the parameters it
/// takes (slices of [`params::Param`]s, e.g. [`params::MODEL_PARAMS`] and its own) and the
/// fields it reads and writes.
#[derive(Debug, Clone, Copy)]
pub struct StepKind {
    pub kind: &'static str,
    pub build: Constructor,
    pub params: &'static [&'static [params::Param]],
    pub fields: fn(&StepSpec) -> StepFields,
}

/// The step kinds a build knows, in the order the unknown-kind error lists them.
#[derive(Debug, Clone, Copy)]
pub struct Registry {
    kinds: &'static [StepKind],
}

impl Registry {
    pub const fn new(kinds: &'static [StepKind]) -> Self {
        Self { kinds }
    }

    /// The known kinds, in table order.
    pub fn kinds(&self) -> impl Iterator<Item = &'static str> {
        self.kinds.iter().map(|k| k.kind)
    }

    fn kind(&self, kind: &str) -> Result<&StepKind, params::ParamError> {
        self.kinds
            .iter()
            .find(|k| k.kind == kind)
            .ok_or_else(|| params::ParamError {
                key: Some("kind".into()),
                message: format!(
                    "unknown step kind '{kind}'; known: {}",
                    self.kinds().collect::<Vec<_>>().join(", ")
                ),
            })
    }

    /// Checks a recipe entry before anything is built: its kind is known, its parameters
    /// are the kind's, each of its type.
    pub fn check(&self, spec: &StepSpec) -> Result<(), params::ParamError> {
        params::check(spec, self.kind(&spec.kind)?.params)
    }

    /// The fields a (checked) recipe entry's step reads and writes.
    pub fn fields(&self, spec: &StepSpec) -> Result<StepFields, params::ParamError> {
        Ok((self.kind(&spec.kind)?.fields)(spec))
    }

    /// The parameters of `kind`, as a table (`None` for an unknown kind).
    pub fn explain(&self, kind: &str) -> Option<String> {
        self.kind(kind)
            .ok()
            .map(|k| params::explain(k.kind, k.params))
    }

    /// Builds the step a recipe entry names, once [`Registry::check`] accepts it.
    pub fn build(&self, spec: &StepSpec, prompts: &Files) -> Result<Box<dyn Step>, StepError> {
        self.check(spec)
            .map_err(|e| StepError::Config(format!("step {}: {}", spec.name(), e.message)))?;
        (self.kind(&spec.kind).expect("checked").build)(spec, prompts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Noop(String);

    impl Step for Noop {
        fn name(&self) -> &str {
            &self.0
        }
        fn run<'a>(&'a self, _: &'a mut Item, _: &'a StepCtx<'_>) -> StepFuture<'a> {
            Box::pin(std::future::ready(Ok(())))
        }
    }

    fn noop(spec: &StepSpec, _: &Files) -> Result<Box<dyn Step>, StepError> {
        Ok(Box::new(Noop(spec.name().to_owned())))
    }

    #[test]
    fn a_kind_maps_to_its_step_and_an_unknown_one_lists_the_known() {
        const TABLE: Registry = Registry::new(&[
            StepKind {
                kind: "first",
                build: noop,
                params: &[],
                fields: |_| StepFields::default(),
            },
            StepKind {
                kind: "second",
                build: noop,
                params: &[],
                fields: |_| StepFields::default(),
            },
        ]);
        let spec: StepSpec = toml::from_str("kind = \"second\"\nname = \"mine\"").unwrap();
        assert_eq!(
            TABLE.build(&spec, &Files::Dir(".".into())).unwrap().name(),
            "mine"
        );
        let spec: StepSpec = toml::from_str("kind = \"third\"").unwrap();
        let e = TABLE
            .build(&spec, &Files::Dir(".".into()))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "step third: unknown step kind 'third'; known: first, second"
        );
    }
}
