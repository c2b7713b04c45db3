//! `make_options`: the options of a multiple-choice question from named fields, in a seeded
//! order, each option's letter written to the field the recipe names (ConflictBank's
//! `true_label`, `replaced_label`, `uncertain_label`).

use super::{field_list, required};
use crate::prelude::*;
use crate::reading::another_form;
use cb_model::{item_rng, letter, text};
use rand::seq::SliceRandom;

/// The parameters of `make_options`.
pub const PARAMS: &[Param] = &[
    Param { key: "options", ty: ParamType::TextList, default: "(required)", meaning: "The fields whose values are the options (each a string), at least two." },
    Param { key: "labels", ty: ParamType::TextList, default: "[]", meaning: "Per option, in the same order, the field written with its letter (\"\" for none); no longer than `options`." },
    Param { key: "into", ty: ParamType::Text, default: "(required)", meaning: "The field written with the options' texts, in their letters' order." },
    Param { key: "order", ty: ParamType::Text, default: "\"seeded\"", meaning: "\"seeded\": a seeded order per item; \"given\": the order of `options`." },
];

/// The fields `make_options` reads (the options) and writes (the list and the labels).
pub fn fields(spec: &StepSpec) -> cb_step::StepFields {
    let mut writes: Vec<String> = spec.str("into").into_iter().collect();
    writes.extend(
        field_list(spec, "labels")
            .into_iter()
            .filter(|l| !l.is_empty()),
    );
    cb_step::StepFields {
        reads: field_list(spec, "options"),
        writes,
    }
}

/// `make_options` (see [`PARAMS`]).
#[derive(Debug)]
pub struct MakeOptions {
    name: String,
    options: Vec<String>,
    labels: Vec<String>,
    into: String,
    seeded: bool,
}

/// The step table's constructor.
pub fn build(spec: &StepSpec, _: &Files) -> Result<Box<dyn Step>, StepError> {
    let bad = |m: String| StepError::Config(format!("step {}: {m}", spec.name()));
    let options = field_list(spec, "options");
    if options.len() < 2 {
        return Err(bad("`options` must name at least two fields".into()));
    }
    let labels = field_list(spec, "labels");
    if labels.len() > options.len() {
        return Err(bad(format!(
            "`labels` names {} fields for {} options",
            labels.len(),
            options.len()
        )));
    }
    let seeded = match spec.str("order").as_deref() {
        None | Some("seeded") => true,
        Some("given") => false,
        Some(other) => {
            return Err(bad(format!(
                "unknown `order = {other:?}`; known: \"seeded\", \"given\""
            )))
        }
    };
    Ok(Box::new(MakeOptions {
        name: spec.name().to_owned(),
        options,
        labels,
        into: required(spec, "into")?,
        seeded,
    }))
}

/// Why two options cannot stand together: one is the other, or another form of it.
pub fn clash(a: &str, b: &str) -> Option<String> {
    if text::normalize(a) == text::normalize(b) {
        return Some(format!("\"{a}\" and \"{b}\" are the same option"));
    }
    another_form(a, b)
}

impl MakeOptions {
    fn apply(&self, item: &mut Item, ctx: &StepCtx<'_>) -> Result<(), StepFailure> {
        let texts: Vec<String> = self
            .options
            .iter()
            .map(|f| item.require(f).map(|t| t.trim().to_owned()))
            .collect::<Result<_, _>>()?;
        for (i, a) in texts.iter().enumerate() {
            if text::normalize(a).is_empty() {
                return Err(StepFailure::reject(
                    "options_not_distinct",
                    format!(
                        "{}: the option of `{}` is empty",
                        self.name, self.options[i]
                    ),
                ));
            }
            if let Some(why) = texts[..i].iter().find_map(|b| clash(a, b)) {
                return Err(StepFailure::reject(
                    "options_not_distinct",
                    format!("{}: {why}", self.name),
                ));
            }
        }
        let mut order: Vec<usize> = (0..texts.len()).collect();
        if self.seeded {
            let purpose = format!("options-{}", self.name);
            order.shuffle(&mut item_rng(ctx.seed, ctx.recipe, &item.id, &purpose));
        }
        let shown: Vec<String> = order.iter().map(|&i| texts[i].clone()).collect();
        for (slot, &i) in order.iter().enumerate() {
            if let Some(label) = self.labels.get(i).filter(|l| !l.is_empty()) {
                item.set(label, letter(slot));
            }
        }
        item.set(&self.into, shown);
        Ok(())
    }
}

impl Step for MakeOptions {
    fn name(&self) -> &str {
        &self.name
    }

    fn run<'a>(&'a self, item: &'a mut Item, ctx: &'a StepCtx<'_>) -> StepFuture<'a> {
        Box::pin(std::future::ready(self.apply(item, ctx)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_that_are_one_another_clash() {
        assert!(clash("writer", "Writer").is_some());
        assert!(clash("United States of America", "United States").is_some());
        assert!(clash("Uncertain", "writer").is_none());
    }
}
