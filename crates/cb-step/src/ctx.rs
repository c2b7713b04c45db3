//! What a step run needs besides the item ([`StepCtx`]): the recipe's routes, the template
//! environment, the seed and the build's views.

use crate::corpus::Corpus;
use crate::routes::Routes;

/// What a step run needs besides the item.
pub struct StepCtx<'a> {
    /// Who answers each step and reads each reader check (decided when the recipe loaded).
    pub routes: &'a Routes,
    pub env: &'a minijinja::Environment<'static>,
    pub seed: u64,
    pub recipe: &'a str,
    /// The views of the whole build the steps declared ([`crate::Step::views`]), for offline rules
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
