//! What a step is ([`Step`], run on an item with a [`StepCtx`](crate::StepCtx)) and the table of the kinds of
//! step a recipe may name ([`Registry`]).

use crate::corpus::ViewSpec;
use crate::ctx::StepCtx;
use crate::error::{StepError, StepFailure};
use crate::files::Files;
use crate::item::Item;
use crate::params;
use crate::prompt::Prompt;
use crate::spec::StepSpec;
use std::future::Future;
use std::pin::Pin;

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

    /// A reading step's questions, word for word (`[...]` for what each row fills in), every
    /// one it may put; the manifest keeps those it put and the card quotes them.
    fn reader_questions(&self) -> Vec<cb_model::manifest::ReaderQuestion> {
        Vec::new()
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
/// (`writes`), for a recipe entry (a RECALL step's depend on its `mode`; a general step's
/// are its parameters, the field names the recipe gives it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepFields {
    pub reads: Vec<String>,
    pub writes: Vec<String>,
}

impl StepFields {
    pub fn new(reads: &[&str], writes: &[&str]) -> Self {
        let own = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect();
        StepFields {
            reads: own(reads),
            writes: own(writes),
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

    /// Every parameter `kind` takes beside `kind` and `name` (none for an unknown kind).
    pub fn params(&self, kind: &str) -> impl Iterator<Item = &'static params::Param> {
        let found: &'static [&'static [params::Param]] = self
            .kinds
            .iter()
            .find(|k| k.kind == kind)
            .map_or(&[], |k| k.params);
        found.iter().flat_map(|ps| ps.iter())
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
