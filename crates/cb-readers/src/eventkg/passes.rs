//! The four streaming passes (see the documentation of [`super`]) and the joined state
//! they leave.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;

use oxrdf::Quad;

use super::lines::{scan, Pos};
use super::options::Options;
use super::rank::{graph_rank, lang_matches};
use super::select::Selector;
use super::state::{push_unique, set_first, EventState, Named, Relation};
use super::terms::{
    graph_local, iri_of_object, iri_of_subject, literal_of, may_concern, parse_line,
};
use super::vocab::{
    DBO_NEXT, DBO_PREVIOUS, DC_DESCRIPTION, EKG_END_UNIT, EKG_START_UNIT, EVENT_TYPES,
    NON_ROLE_RELATIONS, RDFS_LABEL, RDF_OBJECT, RDF_SUBJECT, RDF_TYPE, SEM_ACTOR, SEM_BEGIN,
    SEM_END, SEM_HAS_ACTOR, SEM_HAS_PLACE, SEM_HAS_SUB_EVENT, SEM_PLACE, SEM_ROLE_TYPE,
    SEM_SUB_EVENT_OF,
};
use crate::ReadError;

/// What every pass reads: the dump's files, the malformed lines pass 1 found (skipped
/// without a word afterwards), and the language of labels.
struct Dump<'a> {
    files: &'a [(PathBuf, String)],
    malformed: HashSet<Pos>,
    lang: &'a str,
}

impl Dump<'_> {
    /// Streams into `f`, with the pass's `state`, the well-formed statements of the lines
    /// whose raw subject (or object, with `object_too`) IRI `wanted` accepts.
    fn statements<S>(
        &self,
        state: &mut S,
        object_too: bool,
        wanted: impl Fn(&S, &str) -> bool,
        mut f: impl FnMut(&mut S, &Quad),
    ) -> Result<(), ReadError> {
        scan(self.files, |pos, bytes| {
            if !may_concern(bytes, object_too, &|s| wanted(state, s))
                || self.malformed.contains(&pos)
            {
                return;
            }
            if let Ok(Some(q)) = parse_line(bytes) {
                f(state, &q);
            }
        })
    }
}

pub(super) fn run_passes(
    files: &[(PathBuf, String)],
    options: &Options,
    errors: &mut VecDeque<ReadError>,
) -> Result<Joined, ReadError> {
    let mut malformed = HashSet::new();
    let chosen = choose_events(files, options, errors, &mut malformed)?;
    if chosen.is_empty() {
        return Ok(Joined {
            events: VecDeque::new(),
            named: HashMap::new(),
        });
    }
    let dump = Dump {
        files,
        malformed,
        lang: options.lang.as_str(),
    };
    let mut events: Vec<EventState> = chosen
        .into_iter()
        .map(|(pos, iri)| EventState {
            iri,
            pos,
            ..EventState::default()
        })
        .collect();
    let index: HashMap<String, usize> = events
        .iter()
        .enumerate()
        .map(|(i, e)| (e.iri.clone(), i))
        .collect();
    let mut relations = event_facts(&dump, &mut events, &index)?;
    if !relations.is_empty() {
        relation_statements(&dump, &mut relations)?;
    }
    attach_roles(&relations, &index, &mut events);
    drop(relations);
    let mut named = to_be_named(&events);
    if !named.is_empty() {
        read_names(&dump, &mut named)?;
    }
    tracing::debug!(named = named.len(), "eventkg pass 4: labels read");
    Ok(Joined {
        events: events.into(),
        named,
    })
}

/// Pass 1: validates every line (a malformed one is reported in `errors`, and its place
/// kept in `malformed`), and chooses the events from their type lines: the chosen events in
/// dump order.
fn choose_events(
    files: &[(PathBuf, String)],
    options: &Options,
    errors: &mut VecDeque<ReadError>,
    malformed: &mut HashSet<Pos>,
) -> Result<Vec<(Pos, String)>, ReadError> {
    let mut selector = Selector::new(options);
    let mut lines = 0u64;
    scan(files, |pos, bytes| {
        lines += 1;
        match parse_line(bytes) {
            Ok(Some(q)) => {
                if q.predicate.as_str() == RDF_TYPE {
                    if let (Some(s), Some(o)) = (iri_of_subject(&q), iri_of_object(&q)) {
                        if EVENT_TYPES.contains(&o) {
                            selector.offer(s, pos);
                        }
                    }
                }
            }
            Ok(None) => {}
            Err(message) => {
                malformed.insert(pos);
                errors.push_back(ReadError::Record {
                    file: files[pos.0].1.clone(),
                    line: pos.1,
                    id: None,
                    code: "malformed_nquads",
                    message: format!("malformed N-Quads line: {message}"),
                });
            }
        }
    })?;
    let chosen = selector.finish(options.limit);
    tracing::debug!(
        lines,
        malformed = malformed.len(),
        events = chosen.len(),
        "eventkg pass 1: events chosen"
    );
    Ok(chosen)
}

/// Pass 2: the facts of the chosen events, the statements that point at them, and the ids
/// of the reified relations with one of them at an end.
fn event_facts(
    dump: &Dump,
    events: &mut [EventState],
    index: &HashMap<String, usize>,
) -> Result<HashMap<String, Relation>, ReadError> {
    let mut relations: HashMap<String, Relation> = HashMap::new();
    let in_events = |_: &_, s: &str| index.contains_key(s);
    dump.statements(&mut relations, true, in_events, |relations, q| {
        let p = q.predicate.as_str();
        if let Some(&i) = iri_of_subject(q).and_then(|s| index.get(s)) {
            event_fact(&mut events[i], q, p, dump.lang);
        }
        if let (Some(s), Some(&j)) = (
            iri_of_subject(q),
            iri_of_object(q).and_then(|o| index.get(o)),
        ) {
            let e = &mut events[j];
            match p {
                SEM_HAS_SUB_EVENT => set_first(&mut e.parent_inverse, s),
                DBO_NEXT => set_first(&mut e.previous_inverse, s),
                DBO_PREVIOUS => set_first(&mut e.next_inverse, s),
                RDF_SUBJECT | RDF_OBJECT => {
                    relations.entry(s.to_string()).or_default();
                }
                _ => {}
            }
        }
    })?;
    tracing::debug!(
        relations = relations.len(),
        "eventkg pass 2: event facts read"
    );
    Ok(relations)
}

/// Pass 3: the statements of the relations pass 2 found: both ends, role types, and whether
/// a type says the relation is no role.
fn relation_statements(
    dump: &Dump,
    relations: &mut HashMap<String, Relation>,
) -> Result<(), ReadError> {
    let known = |r: &HashMap<String, Relation>, s: &str| r.contains_key(s);
    dump.statements(relations, false, known, |relations, q| {
        let (Some(s), Some(o)) = (iri_of_subject(q), iri_of_object(q)) else {
            return;
        };
        let Some(r) = relations.get_mut(s) else {
            return;
        };
        match q.predicate.as_str() {
            RDF_SUBJECT => set_first(&mut r.subject, o),
            RDF_OBJECT => set_first(&mut r.object, o),
            SEM_ROLE_TYPE => push_unique(&mut r.roles, o),
            RDF_TYPE if NON_ROLE_RELATIONS.contains(&o) => r.not_a_role = true,
            _ => {}
        }
    })
}

/// Each relation that is a role, added to the chosen events at its ends as (role, other
/// end, whether the event is the relation's object), each pair once.
fn attach_roles(
    relations: &HashMap<String, Relation>,
    index: &HashMap<String, usize>,
    events: &mut [EventState],
) {
    for r in relations.values() {
        if r.not_a_role {
            continue;
        }
        let (Some(s), Some(o)) = (&r.subject, &r.object) else {
            continue;
        };
        if s == o {
            continue;
        }
        for (end, other, inverse) in [(s, o, false), (o, s, true)] {
            if let Some(&i) = index.get(end.as_str()) {
                for role in &r.roles {
                    let pair = (role.clone(), other.clone(), inverse);
                    if !events[i].roles.contains(&pair) {
                        events[i].roles.push(pair);
                    }
                }
            }
        }
    }
}

/// Everything the records will name: places, actors, neighbours, role properties and the
/// other ends of roles, each with nothing found yet.
fn to_be_named(events: &[EventState]) -> HashMap<String, Named> {
    let mut named: HashMap<String, Named> = HashMap::new();
    for e in events {
        let refs = e.places.iter().chain(&e.actors).chain(
            [
                &e.parent,
                &e.parent_inverse,
                &e.previous,
                &e.previous_inverse,
                &e.next,
                &e.next_inverse,
            ]
            .into_iter()
            .flatten(),
        );
        for iri in refs {
            named.entry(iri.clone()).or_default();
        }
        for (role, other, _) in &e.roles {
            named.entry(role.clone()).or_default();
            named.entry(other.clone()).or_default();
        }
    }
    named
}

/// Pass 4: the labels (in the chosen language) and types of everything to be named.
fn read_names(dump: &Dump, named: &mut HashMap<String, Named>) -> Result<(), ReadError> {
    let known = |n: &HashMap<String, Named>, s: &str| n.contains_key(s);
    dump.statements(named, false, known, |named, q| {
        let Some(n) = iri_of_subject(q).and_then(|s| named.get_mut(s)) else {
            return;
        };
        match q.predicate.as_str() {
            RDFS_LABEL => {
                if let Some((value, tag)) = literal_of(q) {
                    if lang_matches(tag, dump.lang) {
                        let graph = graph_local(q);
                        n.label
                            .offer(graph_rank(graph.as_deref(), dump.lang), value, graph);
                    }
                }
            }
            RDF_TYPE => match iri_of_object(q) {
                Some(SEM_PLACE) => n.place = true,
                Some(SEM_ACTOR) => n.actor = true,
                Some(t) if EVENT_TYPES.contains(&t) => n.event = true,
                _ => {}
            },
            _ => {}
        }
    })
}

/// The joined state after the passes: records are built from it one at a time.
pub(super) struct Joined {
    pub(super) events: VecDeque<EventState>,
    pub(super) named: HashMap<String, Named>,
}

/// Takes in one statement whose subject is a selected event.
fn event_fact(e: &mut EventState, q: &Quad, p: &str, lang: &str) {
    match p {
        RDFS_LABEL | DC_DESCRIPTION | SEM_BEGIN | SEM_END => {
            let Some((value, tag)) = literal_of(q) else {
                return;
            };
            // Labels and descriptions count in the chosen language only; dates have none.
            let slot = match p {
                RDFS_LABEL if lang_matches(tag, lang) => &mut e.label,
                DC_DESCRIPTION if lang_matches(tag, lang) => &mut e.description,
                SEM_BEGIN => &mut e.begin,
                SEM_END => &mut e.end,
                _ => return,
            };
            let graph = graph_local(q);
            slot.offer(graph_rank(graph.as_deref(), lang), value, graph);
        }
        _ => {
            let Some(o) = iri_of_object(q) else { return };
            match p {
                EKG_START_UNIT => set_first(&mut e.begin_unit, o),
                EKG_END_UNIT => set_first(&mut e.end_unit, o),
                SEM_HAS_PLACE => push_unique(&mut e.places, o),
                SEM_HAS_ACTOR => push_unique(&mut e.actors, o),
                SEM_SUB_EVENT_OF => set_first(&mut e.parent, o),
                DBO_PREVIOUS => set_first(&mut e.previous, o),
                DBO_NEXT => set_first(&mut e.next, o),
                _ => {}
            }
        }
    }
}
