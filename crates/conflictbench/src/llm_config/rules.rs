//! The routing rules: the selected recipes checked against the flags and the named models
//! in one pass, before any work and before any file or cache is made.

use super::routes::price_of;
use super::{LlmSetup, ReaderSetting};
use crate::config_error::config_err;
use cb_engine::Recipe;
use cb_llm::BackendKind;

impl LlmSetup {
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
            if self.mode.backend() == BackendKind::Offline {
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

    /// Under `--max-cost`, every model the build may call has a price: the writer (unless
    /// offline), the reader, each named model a step, `--model-for`, `--reader NAME` or a
    /// panel calls. A model the built-in table does not know and the settings do not price
    /// would cost 0 whatever it spends, out of the budget's sight: refused, naming the model
    /// and how to price it. A replay calls nothing and is not checked.
    pub fn check_prices(&self, recipes: &[&Recipe]) -> anyhow::Result<()> {
        let Some(max) = self.shared.max_cost_usd else {
            return Ok(());
        };
        if self.mode.replays() {
            return Ok(());
        }
        let unpriced = |model: &str, by: &str, how: &str| {
            config_err(format!(
                "--max-cost {max}: model `{model}` ({by}) has no known price, so the budget cannot see what it spends: give {how} (USD per million tokens)"
            ))
        };
        let writer = self.default.model.as_deref();
        if let (Some(m), false) = (writer, self.mode.backend() == BackendKind::Offline) {
            if price_of(self.default.price, m).is_none() {
                return Err(unpriced(m, "--model", "--price-input and --price-output"));
            }
        }
        let mut named: Vec<String> = self.model_for.values().cloned().collect();
        match &self.reader {
            ReaderSetting::Named { model, .. } => {
                if let Some(m) = model.as_deref().or(writer) {
                    if self.reader_price(m).is_none() {
                        let how = "--reader-price-input and --reader-price-output";
                        return Err(unpriced(m, "the reader", how));
                    }
                }
            }
            ReaderSetting::Model(name) => named.push(name.clone()),
            _ => {}
        }
        let reads = !matches!(self.reader, ReaderSetting::Nobody);
        for spec in recipes.iter().flat_map(|r| &r.steps) {
            named.extend(spec.model.clone());
            if reads {
                named.extend(spec.strs("readers").unwrap_or_default());
            }
        }
        for name in named {
            let Some(spec) = self.named.get(&name) else {
                continue;
            };
            let model = spec.model.as_deref().unwrap_or_default();
            if price_of(spec.price, model).is_none() {
                let how = format!("`price_input` and `price_output` in [models.{name}]");
                return Err(unpriced(model, &spec.named_by.model, &how));
            }
        }
        Ok(())
    }
}
