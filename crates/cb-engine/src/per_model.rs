//! A build told model by model, from its routing table ([`Routes`]): which steps call each
//! model and what its calls came to (the manifest's `models`, counted from the rows' lineage
//! like the totals), what each model's layers sent this run (`runs.jsonl`), and who read
//! the rows and what they were told (the manifest's `reader`).

use cb_llm::{Llm, Role};
use cb_model::manifest::{LlmTotals, ModelUse, ReaderInfo, ReaderTally};
use cb_step::{CallRecord, Routes, Step};
use std::collections::BTreeMap;

/// The manifest's `reader`: the readers' tallies, who read (the build's reader, where a step
/// reads), and what the reader was told and asked: the system part of the reader check's
/// question and every question it put, word for word.
pub(crate) fn reader(
    routes: &Routes,
    steps: &[Box<dyn Step>],
    tally: ReaderTally,
) -> Option<ReaderInfo> {
    let reads = steps.iter().find(|s| s.reads());
    let who = routes.reader().filter(|_| reads.is_some()).map(|r| {
        let c = r.config();
        (
            c.backend.name().into(),
            c.model.clone(),
            r.endpoint().to_owned(),
        )
    });
    let mut info = tally.info(who)?;
    info.instruction = reads
        .and_then(|s| s.prompt())
        .map(|p| p.system.trim().to_owned())
        .filter(|i| !i.is_empty());
    // The questions it put: those of the checks asked of some row.
    info.questions = reads.map(|s| s.reader_questions()).unwrap_or_default();
    info.questions
        .retain(|q| info.checks.contains_key(&q.check));
    Some(info)
}

/// The calls of the items, by the named model they went to (`None`: the build's own model or
/// an unnamed reader) and the step that made them: calls, prompt and completion tokens.
#[derive(Debug, Default)]
pub(crate) struct CallTally(BTreeMap<(Option<String>, String), [u64; 3]>);

impl CallTally {
    pub(crate) fn add(&mut self, c: &CallRecord) {
        let t = self.0.entry((c.model.clone(), c.step.clone())).or_default();
        t[0] += 1;
        t[1] += c.prompt_tokens;
        t[2] += c.completion_tokens;
    }
}

/// The manifest's `models`: every model the build's steps call or its calls reached, the
/// build's own first, each with its steps and its calls, tokens and estimated cost at its
/// own price. Empty when the build's own model answers every call (no named model, no reader
/// of its own: one price covers them all).
pub(crate) fn uses(routes: &Routes, steps: &[Box<dyn Step>], calls: &CallTally) -> Vec<ModelUse> {
    if !routes.names_any() && !routes.figures().contains_key(&Role::Reader) {
        return Vec::new();
    }
    let mut by: BTreeMap<Role, (Vec<String>, [u64; 3])> = BTreeMap::new();
    by.entry(Role::Writer).or_default();
    for s in steps {
        for who in routes.of_step(s.name(), s.reads(), !s.prompts().is_empty()) {
            by.entry(who).or_default().0.push(s.name().to_owned());
        }
    }
    let reads: Vec<&str> = steps
        .iter()
        .filter(|s| s.reads())
        .map(|s| s.name())
        .collect();
    for ((model, step), t) in &calls.0 {
        let who = match model {
            Some(n) => Role::Named(n.clone()),
            None => routes.unnamed(reads.contains(&step.as_str())),
        };
        let e = by.entry(who).or_default();
        if !e.0.contains(step) {
            e.0.push(step.clone());
        }
        for (a, b) in e.1.iter_mut().zip(t) {
            *a += b;
        }
    }
    by.into_iter()
        .filter_map(|(who, (steps, t))| {
            let layer = *routes.layers_of(&who).first()?;
            Some(use_of(who, layer, steps, t))
        })
        .collect()
}

/// `runs.jsonl`'s `models`: what each named model's layers sent, found cached and spent this
/// run, by name. `None` without named models.
pub(crate) fn run_counters(routes: &Routes) -> Option<serde_json::Value> {
    if !routes.names_any() {
        return None;
    }
    let out: serde_json::Map<String, serde_json::Value> = routes
        .figures()
        .into_iter()
        .filter_map(|(who, s)| {
            let name = who.name()?.to_owned();
            Some((name, serde_json::to_value(s).unwrap_or_default()))
        })
        .collect();
    Some(serde_json::Value::Object(out))
}

/// One entry of the manifest's `models`.
fn use_of(who: Role, layer: &Llm, steps: Vec<String>, [calls, pt, ct]: [u64; 3]) -> ModelUse {
    let c = layer.config();
    let price = &c.price;
    ModelUse {
        name: who.name().map(str::to_owned),
        backend: c.backend.recorded_name().into(),
        model: c.model.clone(),
        endpoint: layer.endpoint().to_owned(),
        steps,
        totals: LlmTotals {
            calls,
            prompt_tokens: pt,
            completion_tokens: ct,
            estimated_cost_usd: cb_llm::pricing::round_usd(price.usd(pt, ct)),
            price_per_million: [price.input_per_million, price.output_per_million],
        },
    }
}
