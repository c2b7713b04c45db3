//! Seeded draws into a named field: `draw_from_pool` (another value of a field, from the
//! build's items that share a group field) and `pick_value` (one of a list of values).

use super::{field_list, fields_of, required, texts_of};
use crate::prelude::*;
use crate::reading::another_form;
use cb_model::{item_rng, text};
use cb_step::{Peer, View};
use rand::seq::SliceRandom;
use rand::Rng;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// Values kept per group of a pool (`pool_size`).
pub const POOL_SIZE: Range = Range::whole(1, 1_000_000);
/// Values drawn at once (`count`).
pub const COUNT: Range = Range::whole(1, 100);

/// The parameters of `draw_from_pool`.
pub const DRAW_PARAMS: &[Param] = &[
    Param { key: "value", ty: ParamType::Text, default: "(required)", meaning: "The field whose values make the pool (e.g. \"object\")." },
    Param { key: "group", ty: ParamType::Text, default: "none: one pool", meaning: "The field whose value groups the pool: a draw comes from the items with the item's own group (e.g. \"relation_id\": another object of the same relation)." },
    Param { key: "into", ty: ParamType::Text, default: "(required)", meaning: "The field written: the value drawn (a list when `count` is above 1)." },
    Param { key: "avoid", ty: ParamType::TextList, default: "[]", meaning: "Fields of the item (strings or lists of strings) that a drawn value may not be, nor another form of; the item's own `value` always is one." },
    Param { key: "prefer", ty: ParamType::Text, default: "none", meaning: "A field taken instead of a draw where the item has it as a non-empty string that passes `avoid` (MQuAKE's real later object)." },
    Param { key: "from_into", ty: ParamType::Text, default: "none", meaning: "A field written with where the value came from: \"source\" (the `prefer` field) or \"pool\"." },
    Param { key: "pool_size", ty: ParamType::Integer(POOL_SIZE), default: "512", meaning: "Values kept per group: the distinct values of smallest hash, the same sample whatever the source order, so memory is bounded by groups x pool_size." },
    Param { key: "count", ty: ParamType::Integer(COUNT), default: "1", meaning: "How many different values to draw (above 1 the field is a list)." },
];

/// The parameters of `pick_value`.
pub const PICK_PARAMS: &[Param] = &[
    Param {
        key: "values",
        ty: ParamType::TextList,
        default: "(required)",
        meaning: "The values to pick from (e.g. the styles \"news\", \"book\", \"wikipedia\").",
    },
    Param {
        key: "into",
        ty: ParamType::Text,
        default: "(required)",
        meaning: "The field written with the value picked.",
    },
];

/// The fields `draw_from_pool` reads and writes.
pub fn draw_fields(spec: &StepSpec) -> cb_step::StepFields {
    fields_of(spec, &["value", "group", "avoid"], &["into", "from_into"])
}

/// The fields `pick_value` writes.
pub fn pick_fields(spec: &StepSpec) -> cb_step::StepFields {
    fields_of(spec, &[], &["into"])
}

/// A pool of the values of one field, grouped by another: per group, the `size` distinct
/// values (by [`text::normalize`]) of smallest 64-bit FNV-1a hash of their normalised text,
/// a bottom-k sample that is the same whatever order the items come in. Memory: per group
/// at most `size` values (their text, a 24-byte `String` and an 8-byte hash in a B-tree),
/// whatever the number of items.
#[derive(Debug)]
pub struct Pool {
    value: String,
    group: Option<String>,
    size: usize,
    groups: HashMap<String, BTreeMap<u64, String>>,
}

impl Pool {
    fn new(value: String, group: Option<String>, size: usize) -> Self {
        Pool {
            value,
            group,
            size: size.max(1),
            groups: HashMap::new(),
        }
    }

    /// The key of the pool's view: every parameter it is made with.
    fn key(value: &str, group: Option<&str>, size: usize) -> String {
        format!("{value}\u{1f}{}\u{1f}{size}", group.unwrap_or(""))
    }

    /// The group of an item's fields ("" without a group field; a number or other value as
    /// its JSON text).
    fn group_of(&self, fields: &serde_json::Map<String, Value>) -> Option<String> {
        let Some(g) = &self.group else {
            return Some(String::new());
        };
        match fields.get(g)? {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    }

    /// The values kept for a group, in hash order.
    pub fn values(&self, group: &str) -> impl Iterator<Item = &str> {
        self.groups
            .get(group)
            .into_iter()
            .flat_map(|m| m.values().map(String::as_str))
    }
}

/// 64-bit FNV-1a: a hash that every build and version computes alike.
fn fnv1a(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl View for Pool {
    fn add(&mut self, peer: Peer<'_>) {
        let Some(group) = self.group_of(peer.fields) else {
            return;
        };
        let Some(v) = peer.fields.get(&self.value).and_then(Value::as_str) else {
            return;
        };
        let v = v.trim();
        let norm = text::normalize(v);
        if norm.is_empty() {
            return;
        }
        let h = fnv1a(&norm);
        let kept = self.groups.entry(group).or_default();
        if kept.contains_key(&h) {
            return;
        }
        if kept.len() < self.size {
            kept.insert(h, v.to_owned());
        } else if kept.last_key_value().is_some_and(|(max, _)| h < *max) {
            kept.pop_last();
            kept.insert(h, v.to_owned());
        }
    }
}

/// `draw_from_pool` (see [`DRAW_PARAMS`]).
#[derive(Debug)]
pub struct DrawFromPool {
    name: String,
    value: String,
    group: Option<String>,
    into: String,
    avoid: Vec<String>,
    prefer: Option<String>,
    from_into: Option<String>,
    pool_size: usize,
    count: usize,
}

/// The step table's constructor of `draw_from_pool`.
pub fn build_draw(spec: &StepSpec, _: &Files) -> Result<Box<dyn Step>, StepError> {
    Ok(Box::new(DrawFromPool {
        name: spec.name().to_owned(),
        value: required(spec, "value")?,
        group: spec.str("group"),
        into: required(spec, "into")?,
        avoid: field_list(spec, "avoid"),
        prefer: spec.str("prefer"),
        from_into: spec.str("from_into"),
        pool_size: spec.int("pool_size").map_or(512, |n| n as usize),
        count: spec.int("count").map_or(1, |n| n as usize),
    }))
}

/// Whether `candidate` is one of `avoid` or another form of one ([`another_form`]).
fn clashes(candidate: &str, avoid: &[String]) -> bool {
    let c = text::normalize(candidate);
    avoid
        .iter()
        .any(|a| text::normalize(a) == c || another_form(candidate, a).is_some())
}

impl DrawFromPool {
    fn key(&self) -> String {
        Pool::key(&self.value, self.group.as_deref(), self.pool_size)
    }

    /// What the item's draws must keep clear of: its own value and the `avoid` fields.
    fn avoided(&self, item: &Item) -> Vec<String> {
        let mut out = texts_of(item, &self.value);
        for f in &self.avoid {
            out.extend(texts_of(item, f));
        }
        out.retain(|a| !text::normalize(a).is_empty());
        out
    }

    fn apply(&self, item: &mut Item, ctx: &StepCtx<'_>) -> Result<(), StepFailure> {
        let mut avoid = self.avoided(item);
        let preferred = self
            .prefer
            .as_ref()
            .and_then(|p| item.get_text(p))
            .map(str::trim)
            .filter(|p| !p.is_empty() && !clashes(p, &avoid))
            .map(str::to_owned);
        let mut drawn = Vec::new();
        if let Some(p) = preferred.clone() {
            avoid.push(p.clone());
            drawn.push(p);
        }
        if drawn.len() < self.count {
            let pool = ctx.corpus.view_keyed::<Pool>(&self.key());
            let group = pool.group_of(&item.fields).unwrap_or_default();
            let mut candidates: Vec<&str> = pool.values(&group).collect();
            let mut rng = item_rng(
                ctx.seed,
                ctx.recipe,
                &item.id,
                &format!("draw-{}", self.name),
            );
            candidates.shuffle(&mut rng);
            for c in candidates {
                if drawn.len() == self.count {
                    break;
                }
                if !clashes(c, &avoid) {
                    avoid.push(c.to_owned());
                    drawn.push(c.to_owned());
                }
            }
        }
        if drawn.len() < self.count {
            return Err(StepFailure::reject(
                "no_other_value",
                format!(
                    "{}: the pool of `{}`{} holds {} value(s) other than the item's own and those it avoids; {} needed",
                    self.name,
                    self.value,
                    self.group.as_ref().map_or(String::new(), |g| format!(" for its `{g}`")),
                    drawn.len(),
                    self.count
                ),
            ));
        }
        if let Some(f) = &self.from_into {
            item.set(
                f,
                if preferred.is_some() {
                    "source"
                } else {
                    "pool"
                },
            );
        }
        if self.count == 1 {
            item.set(&self.into, drawn.swap_remove(0));
        } else {
            item.set(&self.into, drawn);
        }
        Ok(())
    }
}

impl Step for DrawFromPool {
    fn name(&self) -> &str {
        &self.name
    }

    fn views(&self) -> Vec<cb_step::ViewSpec> {
        let (value, group, size) = (self.value.clone(), self.group.clone(), self.pool_size);
        vec![cb_step::view_keyed(self.key(), move || {
            Pool::new(value.clone(), group.clone(), size)
        })]
    }

    fn run<'a>(&'a self, item: &'a mut Item, ctx: &'a StepCtx<'_>) -> StepFuture<'a> {
        Box::pin(std::future::ready(self.apply(item, ctx)))
    }
}

/// `pick_value` (see [`PICK_PARAMS`]).
#[derive(Debug)]
pub struct PickValue {
    name: String,
    values: Vec<String>,
    into: String,
}

/// The step table's constructor of `pick_value`.
pub fn build_pick(spec: &StepSpec, _: &Files) -> Result<Box<dyn Step>, StepError> {
    let values = spec.strs("values").unwrap_or_default();
    if values.is_empty() {
        return Err(StepError::Config(format!(
            "step {}: `values` must list at least one value to pick from",
            spec.name()
        )));
    }
    Ok(Box::new(PickValue {
        name: spec.name().to_owned(),
        values,
        into: required(spec, "into")?,
    }))
}

impl Step for PickValue {
    fn name(&self) -> &str {
        &self.name
    }

    fn run<'a>(&'a self, item: &'a mut Item, ctx: &'a StepCtx<'_>) -> StepFuture<'a> {
        let mut rng = item_rng(
            ctx.seed,
            ctx.recipe,
            &item.id,
            &format!("pick-{}", self.name),
        );
        let v = self.values[rng.random_range(0..self.values.len())].clone();
        item.set(&self.into, v);
        Box::pin(std::future::ready(Ok(())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map};

    fn peer_fields(object: &str, relation: &str) -> Map<String, Value> {
        json!({"object": object, "relation_id": relation})
            .as_object()
            .unwrap()
            .clone()
    }

    #[test]
    fn a_pool_keeps_a_bounded_sample_per_group_whatever_the_order() {
        let names: Vec<String> = (0..50).map(|i| format!("City {i}")).collect();
        let fill = |order: &[String]| {
            let mut p = Pool::new("object".into(), Some("relation_id".into()), 8);
            for n in order {
                p.add(Peer {
                    id: n,
                    fields: &peer_fields(n, "P19"),
                });
                p.add(Peer {
                    id: n,
                    fields: &peer_fields("writer", "P106"),
                });
            }
            p
        };
        let a = fill(&names);
        let mut rev = names.clone();
        rev.reverse();
        let b = fill(&rev);
        let got: Vec<&str> = a.values("P19").collect();
        assert_eq!(got.len(), 8);
        assert_eq!(got, b.values("P19").collect::<Vec<_>>());
        // One distinct value in the other group, however often it is met.
        assert_eq!(a.values("P106").collect::<Vec<_>>(), ["writer"]);
        assert_eq!(a.values("P27").count(), 0);
    }

    #[test]
    fn a_value_clashes_with_itself_and_its_other_forms() {
        let avoid = vec!["United States".to_owned()];
        assert!(clashes("united states", &avoid));
        assert!(clashes("United States of America", &avoid));
        assert!(!clashes("France", &avoid));
    }
}
