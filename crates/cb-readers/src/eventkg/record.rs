//! An event rendered as its record: role names and kinds, dates, the key-value record with
//! unique keys, and the fields.

use std::collections::HashMap;
use std::path::PathBuf;

use serde_json::{json, Map, Value};

use super::state::{EventState, Named};
use super::terms::local_name;
use super::vocab::SEM_HAS_ACTOR;
use crate::SourceRecord;
use cb_model::date::{parse_iso, Granularity};
use cb_model::{KvItem, Origin};

/// Words that make a role actor-like (see the documentation of [`super`]).
const ACTOR_WORDS: [&str; 19] = [
    "participant",
    "actor",
    "commander",
    "combatant",
    "belligerent",
    "organiser",
    "organizer",
    "founder",
    "member",
    "leader",
    "winner",
    "performer",
    "signatory",
    "attendee",
    "candidate",
    "victim",
    "perpetrator",
    "person",
    "agent",
];

/// A role property's readable name when the dump has no label for it.
fn readable_role(iri: &str) -> String {
    if iri == SEM_HAS_ACTOR {
        return "participant".to_string();
    }
    let local = local_name(iri);
    let mut words: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut prev: Option<char> = None;
    for c in local.chars() {
        if c == '_' || c == '-' || c == ' ' {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
        } else if c.is_uppercase() && prev.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit()) {
            words.push(std::mem::take(&mut current));
            current.push(c);
        } else {
            current.push(c);
        }
        prev = Some(c);
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
        .into_iter()
        .map(|w| {
            // Lower-case a plain word ("Commander"), keep codes and acronyms ("P710", "UN").
            let rest: Vec<char> = w.chars().skip(1).collect();
            if rest.iter().any(|c| c.is_alphabetic()) && rest.iter().all(|c| !c.is_uppercase()) {
                w.to_lowercase()
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn actor_like(role: &str) -> bool {
    let role = role.to_lowercase();
    ACTOR_WORDS.iter().any(|w| role.contains(w))
}

fn kind_of(n: Option<&Named>, role: &str) -> &'static str {
    let (place, actor, event) = n.map_or((false, false, false), |n| (n.place, n.actor, n.event));
    if event {
        "event"
    } else if place && actor {
        if actor_like(role) {
            "actor"
        } else {
            "place"
        }
    } else if place {
        "place"
    } else if actor || actor_like(role) {
        "actor"
    } else {
        "other"
    }
}

/// A rendered date, its ISO form and granularity name; empty strings when absent or bad.
fn render_date(event: &str, iso: &str, unit: Option<&str>) -> (String, String, String) {
    if iso.is_empty() {
        return Default::default();
    }
    let granularity = match unit {
        None => Granularity::Day,
        Some(u) => match Granularity::parse(u) {
            Some(g) => g,
            None => {
                tracing::warn!(event, unit = u, "eventkg: unknown time unit, taken as day");
                Granularity::Day
            }
        },
    };
    match parse_iso(iso, granularity) {
        Some(d) => {
            let name = match d.granularity {
                Granularity::Day => "day",
                Granularity::Month => "month",
                Granularity::Year => "year",
                Granularity::Decade => "decade",
                Granularity::Century => "century",
            };
            (d.render(), iso.to_string(), name.to_string())
        }
        None => {
            tracing::warn!(event, date = iso, "eventkg: date does not parse, left out");
            Default::default()
        }
    }
}

/// The ordered key-value record with unique keys; empty values are left out.
struct Kv {
    items: Vec<KvItem>,
    used: HashMap<String, usize>,
}

impl Kv {
    fn push(&mut self, key: &str, value: &str, kind: &str) {
        if value.is_empty() {
            return;
        }
        let n = self.used.entry(key.to_string()).or_insert(0);
        *n += 1;
        let mut unique = if *n == 1 {
            key.to_string()
        } else {
            format!("{key} {n}")
        };
        // A numbered key may itself be a key of its own ("participant 2"): skip on.
        while *n > 1 && self.items.iter().any(|i| i.key == unique) {
            *n += 1;
            unique = format!("{key} {n}");
        }
        self.items.push(KvItem {
            key: unique,
            value: value.to_string(),
            kind: kind.to_string(),
        });
    }
}

/// An event's values as its record shows them: dates rendered, entities by their labels.
struct Shown {
    begin: (String, String, String),
    end: (String, String, String),
    places: Vec<String>,
    /// (role label, entity label, kind), sorted.
    roles: Vec<(String, String, &'static str)>,
    parent: String,
    previous: String,
    next: String,
}

impl Shown {
    fn of(e: &EventState, named: &HashMap<String, Named>) -> Self {
        let label = |iri: &Option<String>, inverse: &Option<String>| -> String {
            iri.iter()
                .chain(inverse)
                .map(|i| named.get(i).map_or("", |n| n.label.get()))
                .find(|l| !l.is_empty())
                .unwrap_or("")
                .to_string()
        };
        Shown {
            begin: render_date(&e.iri, e.begin.get(), e.begin_unit.as_deref()),
            end: render_date(&e.iri, e.end.get(), e.end_unit.as_deref()),
            places: place_labels(e, named),
            roles: role_labels(e, named),
            parent: label(&e.parent, &e.parent_inverse),
            previous: label(&e.previous, &e.previous_inverse),
            next: label(&e.next, &e.next_inverse),
        }
    }

    /// The ordered key-value record.
    fn kv(&self, e: &EventState) -> Vec<KvItem> {
        let mut kv = Kv {
            items: Vec::new(),
            used: HashMap::new(),
        };
        kv.push("name", e.label.get(), "name");
        kv.push("description", e.description.get(), "description");
        kv.push("begin time", &self.begin.0, "date");
        kv.push("end time", &self.end.0, "date");
        for p in &self.places {
            kv.push("location", p, "place");
        }
        for (role, entity, kind) in &self.roles {
            kv.push(role, entity, kind);
        }
        kv.push("part of", &self.parent, "event");
        kv.push("previous event", &self.previous, "event");
        kv.push("next event", &self.next, "event");
        kv.items
    }
}

/// The labels of the event's places, each once, in dump order.
fn place_labels(e: &EventState, named: &HashMap<String, Named>) -> Vec<String> {
    let mut places: Vec<String> = Vec::new();
    for p in &e.places {
        let l = named.get(p).map_or("", |n| n.label.get());
        if !l.is_empty() && !places.iter().any(|x| x == l) {
            places.push(l.to_string());
        }
    }
    places
}

/// The event's roles as (role label, entity label, kind), each pair once, sorted: the
/// direct participants, then the reified relations.
fn role_labels(
    e: &EventState,
    named: &HashMap<String, Named>,
) -> Vec<(String, String, &'static str)> {
    let mut roles: Vec<(String, String, &'static str)> = Vec::new();
    let direct = e.actors.iter().map(|a| ("participant".to_string(), a));
    // Where the event is the relation's object the role reads the other way round
    // (Pierre Cauchon's "significant event" is the trial): its label gets " of".
    let reified = e.roles.iter().map(|(role, other, inverse)| {
        let role_label = named
            .get(role)
            .map(|n| n.label.get())
            .filter(|l| !l.is_empty())
            .map_or_else(|| readable_role(role), str::to_string);
        let role_label = if *inverse && !role_label.is_empty() {
            format!("{role_label} of")
        } else {
            role_label
        };
        (role_label, other)
    });
    for (role, other) in direct.chain(reified) {
        let n = named.get(other);
        let entity = n.map_or("", |n| n.label.get());
        if entity.is_empty() || role.is_empty() {
            continue;
        }
        let kind = kind_of(n, &role);
        if !roles.iter().any(|(r, en, _)| *r == role && en == entity) {
            roles.push((role, entity.to_string(), kind));
        }
    }
    roles.sort();
    roles
}

pub(super) fn build_record(
    e: &EventState,
    named: &HashMap<String, Named>,
    files: &[(PathBuf, String)],
) -> SourceRecord {
    let shown = Shown::of(e, named);
    let kv = shown.kv(e);
    let usable = kv
        .iter()
        .filter(|i| i.kind != "name" && i.kind != "description")
        .count();
    let Shown {
        begin: (begin, begin_iso, begin_granularity),
        end: (end, end_iso, end_granularity),
        ..
    } = &shown;
    let mut fields = Map::new();
    fields.insert("event".into(), json!(e.iri));
    fields.insert("name".into(), json!(e.label.get()));
    fields.insert("description".into(), json!(e.description.get()));
    fields.insert("description_graph".into(), json!(e.description.graph()));
    fields.insert("begin".into(), json!(begin));
    fields.insert("end".into(), json!(end));
    fields.insert("begin_iso".into(), json!(begin_iso));
    fields.insert("end_iso".into(), json!(end_iso));
    fields.insert("begin_granularity".into(), json!(begin_granularity));
    fields.insert("end_granularity".into(), json!(end_granularity));
    fields.insert("places".into(), json!(shown.places));
    let roles = shown.roles.iter();
    let roles = roles.map(|(r, en, k)| json!({"role": r, "entity": en, "kind": k}));
    fields.insert("roles".into(), Value::Array(roles.collect()));
    fields.insert("parent".into(), json!(shown.parent));
    fields.insert("previous".into(), json!(shown.previous));
    fields.insert("next".into(), json!(shown.next));
    let kv = serde_json::to_value(&kv).unwrap_or(Value::Array(Vec::new()));
    fields.insert("kv".into(), kv);
    fields.insert("usable".into(), json!(usable));
    SourceRecord {
        id: local_name(&e.iri).to_string(),
        origin: Origin {
            file: files[e.pos.0].1.clone(),
            line: e.pos.1,
        },
        fields,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_names_are_made_readable() {
        assert_eq!(
            readable_role("http://dbpedia.org/ontology/commander"),
            "commander"
        );
        assert_eq!(
            readable_role("http://dbpedia.org/ontology/notableCommander"),
            "notable commander"
        );
        assert_eq!(
            readable_role("http://www.wikidata.org/prop/direct/P710"),
            "P710"
        );
        assert_eq!(readable_role(SEM_HAS_ACTOR), "participant");
        assert_eq!(readable_role("http://x/signed_by"), "signed by");
    }

    #[test]
    fn kinds_follow_types_then_the_role() {
        let place = Named {
            place: true,
            ..Named::default()
        };
        let both = Named {
            place: true,
            actor: true,
            ..Named::default()
        };
        assert_eq!(kind_of(Some(&place), "participant"), "place");
        assert_eq!(kind_of(Some(&both), "participant"), "actor");
        assert_eq!(kind_of(Some(&both), "location"), "place");
        assert_eq!(kind_of(None, "commander"), "actor");
        assert_eq!(kind_of(None, "follows"), "other");
    }
}
