//! `compose`: a field written by a minijinja template over the item's fields, without a
//! model (a one-sentence claim, a question, a fixed option such as "Uncertain").

use super::required;
use crate::prelude::*;
use std::collections::BTreeSet;

/// The name the one template of a step's own environment has.
const NAME: &str = "compose";

/// The parameters of `compose`.
pub const PARAMS: &[Param] = &[
    Param { key: "template", ty: ParamType::Text, default: "(required)", meaning: "A minijinja template over the item's fields (those it names are the fields the step reads); its text, trimmed, is written." },
    Param { key: "into", ty: ParamType::Text, default: "(required)", meaning: "The field written." },
];

/// The item fields a template names (its undeclared variables), sorted; `None` when it
/// does not compile.
pub fn names_in(template: &str) -> Option<BTreeSet<String>> {
    let mut env = cb_step::template::environment();
    env.add_template_owned(NAME, template.to_owned()).ok()?;
    let t = env.get_template(NAME).ok()?;
    Some(t.undeclared_variables(false).into_iter().collect())
}

/// The fields `compose` reads (those its template names) and writes.
pub fn fields(spec: &StepSpec) -> cb_step::StepFields {
    let reads = spec
        .str("template")
        .and_then(|t| names_in(&t))
        .unwrap_or_default();
    cb_step::StepFields {
        reads: reads.into_iter().collect(),
        writes: spec.str("into").into_iter().collect(),
    }
}

/// `compose` (see [`PARAMS`]).
#[derive(Debug)]
pub struct Compose {
    name: String,
    into: String,
    env: minijinja::Environment<'static>,
}

/// The step table's constructor: the template must compile.
pub fn build(spec: &StepSpec, _: &Files) -> Result<Box<dyn Step>, StepError> {
    let template = required(spec, "template")?;
    let mut env = cb_step::template::environment();
    env.add_template_owned(NAME, template).map_err(|e| {
        StepError::Config(format!(
            "step {}: `template` does not compile: {e}",
            spec.name()
        ))
    })?;
    Ok(Box::new(Compose {
        name: spec.name().to_owned(),
        into: required(spec, "into")?,
        env,
    }))
}

/// Renders `env`'s one template over `item`'s fields (a step's own template).
pub(crate) fn render(env: &minijinja::Environment<'static>, item: &Item) -> Result<String, String> {
    let vars = minijinja::Value::from_serialize(&item.fields);
    env.get_template(NAME)
        .and_then(|t| t.render(vars))
        .map(|s| s.trim().to_owned())
        .map_err(|e| format!("{e:#}"))
}

/// A step's own environment holding `template` as its one template; `None` when it does
/// not compile.
pub(crate) fn own_environment(template: &str) -> Option<minijinja::Environment<'static>> {
    let mut env = cb_step::template::environment();
    env.add_template_owned(NAME, template.to_owned()).ok()?;
    Some(env)
}

impl Compose {
    fn apply(&self, item: &mut Item) -> Result<(), StepFailure> {
        let text = render(&self.env, item)
            .map_err(|e| StepFailure::reject("bad_template", format!("{}: {e}", self.name)))?;
        if text.is_empty() {
            return Err(StepFailure::reject(
                "empty",
                format!(
                    "{}: the template gives an empty text for this item",
                    self.name
                ),
            ));
        }
        item.set(&self.into, text);
        Ok(())
    }
}

impl Step for Compose {
    fn name(&self) -> &str {
        &self.name
    }

    fn run<'a>(&'a self, item: &'a mut Item, _: &'a StepCtx<'_>) -> StepFuture<'a> {
        Box::pin(std::future::ready(self.apply(item)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fields_read_are_those_the_template_names() {
        let names =
            names_in("{{ subject }}'s {{ relation|lower }} is {% if x %}{{ object }}{% endif %}.")
                .unwrap();
        assert_eq!(
            names.into_iter().collect::<Vec<_>>(),
            ["object", "relation", "subject", "x"]
        );
        assert!(names_in("{{ unclosed").is_none());
    }
}
