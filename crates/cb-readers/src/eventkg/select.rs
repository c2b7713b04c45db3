//! Choosing the events while the type lines of pass 1 stream by: every event, the first
//! `limit`, or the seeded bottom-k `sample`.

use std::collections::{BinaryHeap, HashMap, HashSet};

use rand::Rng;

use super::lines::Pos;
use super::options::Options;

/// The purpose string of the sampling priorities (part of the seeded generator's key).
const SAMPLE_PURPOSE: &str = "sample";

/// Chooses the events while the type lines stream by.
pub(super) enum Selector {
    /// Every event (or the first `limit`): a set for the type lines seen twice.
    First {
        limit: Option<usize>,
        seen: HashSet<String>,
        chosen: Vec<(Pos, String)>,
    },
    /// A bottom-k sample: the `k` smallest priorities, in a max-heap.
    Sample {
        k: usize,
        seed: u64,
        heap: BinaryHeap<(u64, String)>,
        kept: HashMap<String, Pos>,
    },
}

impl Selector {
    pub(super) fn new(options: &Options) -> Self {
        match options.sample {
            Some(k) => Selector::Sample {
                k,
                seed: options.seed,
                heap: BinaryHeap::new(),
                kept: HashMap::new(),
            },
            None => Selector::First {
                limit: options.limit,
                seen: HashSet::new(),
                chosen: Vec::new(),
            },
        }
    }

    pub(super) fn offer(&mut self, iri: &str, pos: Pos) {
        match self {
            Selector::First {
                limit,
                seen,
                chosen,
            } => {
                if limit.is_some_and(|l| chosen.len() >= l) || seen.contains(iri) {
                    return;
                }
                seen.insert(iri.to_string());
                chosen.push((pos, iri.to_string()));
            }
            Selector::Sample {
                k,
                seed,
                heap,
                kept,
            } => {
                if *k == 0 || kept.contains_key(iri) {
                    return;
                }
                let priority: u64 =
                    cb_model::item_rng(*seed, "eventkg", iri, SAMPLE_PURPOSE).random();
                if heap.len() < *k {
                    heap.push((priority, iri.to_string()));
                    kept.insert(iri.to_string(), pos);
                    return;
                }
                let beats_worst = heap
                    .peek()
                    .is_some_and(|(p, worst)| (priority, iri) < (*p, worst.as_str()));
                if beats_worst {
                    if let Some((_, out)) = heap.pop() {
                        kept.remove(&out);
                    }
                    heap.push((priority, iri.to_string()));
                    kept.insert(iri.to_string(), pos);
                }
            }
        }
    }

    /// The chosen events in dump order (`limit` applied after a sample).
    pub(super) fn finish(self, limit: Option<usize>) -> Vec<(Pos, String)> {
        let mut chosen = match self {
            Selector::First { chosen, .. } => chosen,
            Selector::Sample { kept, .. } => {
                let mut v: Vec<(Pos, String)> =
                    kept.into_iter().map(|(iri, pos)| (pos, iri)).collect();
                v.sort();
                v
            }
        };
        if let Some(l) = limit {
            chosen.truncate(l);
        }
        chosen
    }
}
