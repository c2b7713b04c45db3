//! A build with named models (`--models`, issue 31) told model by model: which steps call
//! each model, and what its calls came to (the manifest's `models`, counted from the rows'
//! lineage like the totals), and what each named layer sent this run (`runs.jsonl`).

use cb_llm::{Llm, StatsSnapshot};
use cb_model::manifest::{LlmTotals, ModelUse};
use cb_step::{CallRecord, Step, StepModels};
use std::collections::BTreeMap;

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

/// Who answered a call: the build's own model, a named one, or a reader named by
/// `--reader-base-url`/`--reader-model` (in this order in the manifest).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Who {
    Build,
    Named(String),
    Reader,
}

/// The layers of a build: its own, its reader, and its named models.
pub(crate) struct Layers<'a> {
    pub llm: &'a Llm,
    pub reader: Option<&'a Llm>,
    pub named: &'a StepModels,
}

impl Layers<'_> {
    /// The build's reader is a model of its own that no name gives.
    fn unnamed_reader(&self) -> Option<&Llm> {
        let r = self.reader?;
        let own =
            r.endpoint() == self.llm.endpoint() && r.config().model == self.llm.config().model;
        (self.named.reader_name().is_none() && !own).then_some(r)
    }

    /// Who answers an unnamed call of a step that reads (`reads`) or not.
    fn unnamed(&self, reads: bool) -> Who {
        if reads && self.unnamed_reader().is_some() {
            Who::Reader
        } else {
            Who::Build
        }
    }

    /// The models step `s` calls, by the configuration.
    fn of_step(&self, s: &dyn Step) -> Vec<Who> {
        if s.reads() {
            let readers = self.named.readers(s.name());
            if !readers.is_empty() {
                return readers.iter().map(|(n, _)| Who::Named(n.clone())).collect();
            }
            return match (self.reader, self.named.reader_name()) {
                (None, _) => Vec::new(),
                (Some(_), Some(n)) => vec![Who::Named(n.to_owned())],
                (Some(_), None) => vec![self.unnamed(true)],
            };
        }
        match self.named.get(s.name()) {
            Some((n, _)) => vec![Who::Named(n.to_owned())],
            None if !s.prompts().is_empty() => vec![Who::Build],
            None => Vec::new(),
        }
    }

    /// The layers that answer as `who` (a name may have several: a step's and a reader's).
    fn layers(&self, who: &Who) -> Vec<&Llm> {
        match who {
            Who::Build => vec![self.llm],
            Who::Reader => self.unnamed_reader().into_iter().collect(),
            Who::Named(n) => {
                let steps = self.named.iter().filter(|(_, m, _)| m == n).map(|t| t.2);
                let readers = self.named.iter_readers().filter(|(m, _)| m == n);
                let reader = self
                    .reader
                    .filter(|_| self.named.reader_name() == Some(n.as_str()));
                steps.chain(readers.map(|(_, l)| l)).chain(reader).collect()
            }
        }
    }

    /// The manifest's `models`: every model the build's steps call or its calls reached, the
    /// build's own first, each with its steps and its calls, tokens and estimated cost at its
    /// own price. Empty without named models.
    pub(crate) fn uses(&self, steps: &[Box<dyn Step>], calls: &CallTally) -> Vec<ModelUse> {
        if self.named.is_empty() {
            return Vec::new();
        }
        let mut by: BTreeMap<Who, (Vec<String>, [u64; 3])> = BTreeMap::new();
        by.entry(Who::Build).or_default();
        for s in steps {
            for who in self.of_step(s.as_ref()) {
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
                Some(n) => Who::Named(n.clone()),
                None => self.unnamed(reads.contains(&step.as_str())),
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
                let layer = *self.layers(&who).first()?;
                Some(use_of(who, layer, steps, t))
            })
            .collect()
    }

    /// `runs.jsonl`'s `models`: what each named model's own layers sent, found cached and
    /// spent this run, by name (a reader named by `--reader` counts with the build's layer,
    /// whose counters it shares). `None` without named models.
    pub(crate) fn run_counters(&self) -> Option<serde_json::Value> {
        if self.named.is_empty() {
            return None;
        }
        let mut by: BTreeMap<&str, Vec<&Llm>> = BTreeMap::new();
        for (_, n, l) in self.named.iter() {
            by.entry(n).or_default().push(l);
        }
        for (n, l) in self.named.iter_readers() {
            by.entry(n).or_default().push(l);
        }
        let out: serde_json::Map<String, serde_json::Value> = by
            .into_iter()
            .map(|(n, ls)| {
                let s = sum(ls.iter().map(|l| l.stats()));
                (n.to_owned(), serde_json::to_value(s).unwrap_or_default())
            })
            .collect();
        Some(serde_json::Value::Object(out))
    }
}

/// One entry of the manifest's `models`.
fn use_of(who: Who, layer: &Llm, steps: Vec<String>, [calls, pt, ct]: [u64; 3]) -> ModelUse {
    let c = layer.config();
    let price = &c.price;
    ModelUse {
        name: match who {
            Who::Named(n) => Some(n),
            Who::Build | Who::Reader => None,
        },
        backend: match c.backend {
            cb_llm::BackendKind::Replay => cb_llm::BackendKind::Openai.name().into(),
            b => b.name().into(),
        },
        model: c.model.clone(),
        endpoint: layer.endpoint().to_owned(),
        steps,
        totals: LlmTotals {
            calls,
            prompt_tokens: pt,
            completion_tokens: ct,
            estimated_cost_usd: (price.usd(pt, ct) * 1e6).round() / 1e6,
            price_per_million: [price.input_per_million, price.output_per_million],
        },
    }
}

/// The counters of several layers of one model, added up.
fn sum(all: impl Iterator<Item = StatsSnapshot>) -> StatsSnapshot {
    all.fold(StatsSnapshot::default(), |a, s| StatsSnapshot {
        calls: a.calls + s.calls,
        upstream_calls: a.upstream_calls + s.upstream_calls,
        cache_hits: a.cache_hits + s.cache_hits,
        retries: a.retries + s.retries,
        failures: a.failures + s.failures,
        prompt_tokens: a.prompt_tokens + s.prompt_tokens,
        completion_tokens: a.completion_tokens + s.completion_tokens,
        spent_usd: a.spent_usd + s.spent_usd,
        estimated_tokens: a.estimated_tokens + s.estimated_tokens,
        batches: a.batches + s.batches,
    })
}
