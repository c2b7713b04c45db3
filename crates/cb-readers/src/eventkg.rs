//! Reader `eventkg`: events of an EventKG dump, each joined with its labels, description,
//! time span, places, participants and neighbouring events into one record.
//!
//! # Input
//! A dump is a set of N-Quads files (`events.nq`, `entities.nq`, `relations_event_base.nq`,
//! `relations_events_other.nq`, `property_labels.nq`, `text_events.nq`, ...), read together
//! as one graph: [`crate::open_set`] takes the whole list, [`crate::open`] a one-file dump.
//! Files are read in the order given (the recipe's glob returns them sorted). Every line is
//! parsed on its own with `oxttl`'s N-Quads parser; the fourth term (the named graph that says
//! which source a statement came from) is optional, so the "light" dumps (plain N-Triples)
//! read too and give the same records, save two things that only the graph term can tell:
//! `description_graph` is then always `""`, and where several statements give one value
//! the first one seen wins (all have the same rank, see the joining rules).
//!
//! A line that does not parse is a [`ReadError::Record`] with code `malformed_nquads`, the
//! file and the 1-based line number of that file; none of its content is used and reading
//! goes on with the next line. Each line is handed to a fresh parser, because a shared
//! stream parser does not always resynchronise at the next line (an unterminated string
//! literal swallows the lines after it). Malformed lines are reported once, from the first
//! pass; the later passes skip them silently. Blank lines and `#` comments are skipped.
//!
//! # Which subjects are events
//! A subject with `rdf:type` `sem:Event`, `eventKG-s:EventSeries`,
//! `eventKG-s:EventSeriesEdition` or `eventKG-s:TextEvent`. Its position in the dump (the
//! file and line of its first such type line) is the dump order and the record's origin.
//!
//! # Options
//! - `limit` (non-negative integer): keep the first `limit` events in dump order.
//! - `sample` (non-negative integer): keep `sample` events drawn at random with `seed`. The
//!   draw is a bottom-k sample: every event gets a pseudo-random priority computed from the
//!   seed and its IRI (`cb_model::item_rng(seed, "eventkg", iri, "sample")`), and the
//!   `sample` events with the smallest priorities are kept (a reservoir of that size). This is
//!   a uniform sample of the distinct events that needs no memory for the events left out,
//!   and an event typed on several lines is still drawn once. The same seed and dump give
//!   the same selection. When both options are given, the sample is drawn first and the first
//!   `limit` of it in dump order are kept.
//! - `seed` (non-negative integer, default 42).
//! - `lang` (non-empty string, default `"en"`): the language of labels and descriptions. A
//!   literal matches when its tag is `lang` or starts with `lang-` (case-insensitive).
//!
//! Without `limit` or `sample` every event of the dump is selected (and memory grows with the
//! number of events, all of them being selected). Any other option is a [`ReadError::Config`]
//! naming it. Output records come in dump order.
//!
//! # Memory model: four streaming passes
//! Nothing holds the dump or all of its relations; what is kept grows with the number of
//! selected events (and the relations, entities and properties they touch):
//! 1. every line is parsed (malformed lines are reported here); the event type lines feed
//!    the selection (a bounded reservoir for `sample`, the first `limit` for `limit`);
//! 2. statements whose subject is a selected event (labels, descriptions, times, units,
//!    places, actors, parent, previous, next), statements that point at a selected event
//!    (`sem:hasSubEvent`, inverse `dbo:previousEvent`/`dbo:nextEvent`), and the ids of the
//!    reified relations whose `rdf:subject` or `rdf:object` is a selected event;
//! 3. the statements of those relations: both ends and `sem:roleType` (relation lines need
//!    not be contiguous, which is why they take a pass of their own);
//! 4. labels (language `lang`) and `rdf:type`s of everything still to be named: places,
//!    actors, the other ends of relations, neighbour events and role properties.
//!
//! Passes 2 to 4 look at the raw subject and object IRIs of a line first and parse only the
//! lines that can matter, so they cost little more than reading the files. Besides that
//! state, the reader keeps the positions of malformed lines (so that later passes skip them
//! without reporting them again) and their errors until they are yielded. The passes run on
//! the first call of `next`; records are then built one at a time as they are asked for.
//! The malformed-line errors come first (in dump order), then the records (in dump order),
//! then, if a file could not be read to its end, that File error, which ends the iteration
//! (no record is produced then).
//!
//! # Joining rules
//! - **Sources of a value.** When several statements give an event's label, description,
//!   begin or end, the graph decides, in this order: `wikipedia_<lang>`, `dbpedia_<lang>`,
//!   `wikidata`, `wce_<lang>`, `event_kg`, any other graph, no graph; between equals the first
//!   seen wins. `description_graph` names the graph of the chosen description (its local
//!   name, e.g. `wikipedia_en`; `""` when it came without a graph). Entity and property
//!   labels follow the same rule. A unit (granularity) line is taken as first seen.
//! - **Dates.** `sem:hasBeginTimeStamp`/`sem:hasEndTimeStamp` (`xsd:date`) with
//!   `eventKG-s:startUnitType`/`eventKG-s:endUnitType` (`time:unitDay`, `time:unitMonth`,
//!   `time:unitYear`, `eventKG-s:unitDecade`, `eventKG-s:unitCentury`; no unit means day),
//!   rendered by [`cb_model::date`] (`30 May 1431`, `May 1431`, `1431`, `1430s`,
//!   `15th century`, `490 BC`). A date that does not parse is left out (logged).
//! - **Places**: `sem:hasPlace`, as the English labels of the places, in dump order.
//! - **Roles**: reified relations (`rdf:subject`, `rdf:object`, `sem:roleType`) with the
//!   event at either end, the entity being the other end; relations typed
//!   `eventKG-s:LinkRelation` or `eventKG-s:MentionRelation`, or with no role type, are not
//!   roles. The role's name is the `rdfs:label` (language `lang`) of the role property when
//!   the dump has one (`property_labels.nq`), else its IRI's local name made readable
//!   (`dbo:commander` -> `commander`, `notableCommander` -> `notable commander`;
//!   `sem:hasActor` -> `participant`). Direct `sem:hasActor` links are roles named
//!   `participant`. Where the event is the relation's `rdf:object`, the role reads the other
//!   way round and its name gets " of" (an entity whose `significant event` is the event
//!   gives the role `significant event of`). A (role, entity) pair is kept once. The time
//!   stamps a relation may carry
//!   are not read (no field holds them).
//! - **Kinds** of role entities, from their `rdf:type`: an event type -> `event`; `sem:Place`
//!   only -> `place`; `sem:Actor` only -> `actor`; both -> `actor` for an actor-like role,
//!   else `place`; no known type -> `actor` for an actor-like role, else `other`. A role is
//!   actor-like when its name contains one of: participant, actor, commander, combatant,
//!   belligerent, organiser/organizer, founder, member, leader, winner, performer, signatory,
//!   attendee, candidate, victim, perpetrator, person, agent.
//! - **Neighbours**: parent from `sem:subEventOf`, else from `X sem:hasSubEvent <event>`;
//!   previous from `dbo:previousEvent`, else from `X dbo:nextEvent <event>`; next from
//!   `dbo:nextEvent`, else from `X dbo:previousEvent <event>`. First seen wins.
//! - Entities, places and events without a label in `lang` are left out silently.
//!
//! # Fields
//! | field | value |
//! |---|---|
//! | `event` | the event IRI |
//! | `name`, `description` | label and description in `lang`, or `""` |
//! | `description_graph` | graph local name of the chosen description, or `""` |
//! | `begin`, `end` | rendered dates, or `""` |
//! | `begin_iso`, `end_iso` | the `xsd:date` values as written, or `""` |
//! | `begin_granularity`, `end_granularity` | `day`/`month`/`year`/`decade`/`century`, or `""` |
//! | `places` | array of place labels |
//! | `roles` | array of `{"role", "entity", "kind"}`, sorted by role then entity |
//! | `parent`, `previous`, `next` | event labels, or `""` |
//! | `kv` | the ordered key-value record: array of [`cb_model::KvItem`] |
//! | `usable` | the number of `kv` items that are neither the name nor the description |
//!
//! `kv` holds, in this order and leaving out empty values: `name` (kind `name`),
//! `description` (`description`), `begin time` and `end time` (`date`), one `location` per
//! place (`place`), one item per role (key = role name, kind as above), `part of`,
//! `previous event`, `next event` (`event`). A key that is already used gets ` 2`, ` 3`, ...
//! appended (`location 2`, `participant 2`).
//!
//! Record id: the local name of the event IRI (`event_1300022`).

use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use oxrdf::{GraphName, NamedOrBlankNode, Quad, Term};
use rand::Rng;
use serde_json::{json, Map, Value};

use crate::util::{open_file, type_name};
use crate::{ReadError, ReaderOptions, Records, SourceRecord};
use cb_model::date::{parse_iso, Granularity};
use cb_model::{KvItem, Origin};

const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";
const RDF_SUBJECT: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#subject";
const RDF_OBJECT: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#object";
const RDFS_LABEL: &str = "http://www.w3.org/2000/01/rdf-schema#label";
const DC_DESCRIPTION: &str = "http://purl.org/dc/terms/description";
const SEM_EVENT: &str = "http://semanticweb.cs.vu.nl/2009/11/sem/Event";
const SEM_PLACE: &str = "http://semanticweb.cs.vu.nl/2009/11/sem/Place";
const SEM_ACTOR: &str = "http://semanticweb.cs.vu.nl/2009/11/sem/Actor";
const SEM_BEGIN: &str = "http://semanticweb.cs.vu.nl/2009/11/sem/hasBeginTimeStamp";
const SEM_END: &str = "http://semanticweb.cs.vu.nl/2009/11/sem/hasEndTimeStamp";
const SEM_HAS_PLACE: &str = "http://semanticweb.cs.vu.nl/2009/11/sem/hasPlace";
const SEM_HAS_ACTOR: &str = "http://semanticweb.cs.vu.nl/2009/11/sem/hasActor";
const SEM_SUB_EVENT_OF: &str = "http://semanticweb.cs.vu.nl/2009/11/sem/subEventOf";
const SEM_HAS_SUB_EVENT: &str = "http://semanticweb.cs.vu.nl/2009/11/sem/hasSubEvent";
const SEM_ROLE_TYPE: &str = "http://semanticweb.cs.vu.nl/2009/11/sem/roleType";
const EKG_START_UNIT: &str = "http://eventKG.l3s.uni-hannover.de/schema/startUnitType";
const EKG_END_UNIT: &str = "http://eventKG.l3s.uni-hannover.de/schema/endUnitType";
const DBO_PREVIOUS: &str = "http://dbpedia.org/ontology/previousEvent";
const DBO_NEXT: &str = "http://dbpedia.org/ontology/nextEvent";

/// The `rdf:type`s that make a subject an event.
const EVENT_TYPES: [&str; 4] = [
    SEM_EVENT,
    "http://eventKG.l3s.uni-hannover.de/schema/EventSeries",
    "http://eventKG.l3s.uni-hannover.de/schema/EventSeriesEdition",
    "http://eventKG.l3s.uni-hannover.de/schema/TextEvent",
];

/// Relation types whose `rdf:subject`/`rdf:object` are not roles.
const NON_ROLE_RELATIONS: [&str; 2] = [
    "http://eventKG.l3s.uni-hannover.de/schema/LinkRelation",
    "http://eventKG.l3s.uni-hannover.de/schema/MentionRelation",
];

/// Words that make a role actor-like (see the module documentation).
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

/// The purpose string of the sampling priorities (part of the seeded generator's key).
const SAMPLE_PURPOSE: &str = "sample";

// ---------------------------------------------------------------- options

/// The options of the `eventkg` reader.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    limit: Option<usize>,
    sample: Option<usize>,
    seed: u64,
    lang: String,
}

impl Options {
    pub(crate) fn from_options(opts: &ReaderOptions) -> Result<Self, ReadError> {
        let mut options = Options {
            limit: None,
            sample: None,
            seed: 42,
            lang: "en".to_string(),
        };
        for (key, value) in opts {
            match key.as_str() {
                "limit" => options.limit = Some(count_option(key, value)?),
                "sample" => options.sample = Some(count_option(key, value)?),
                "seed" => {
                    options.seed = value.as_u64().ok_or_else(|| {
                        ReadError::Config(format!(
                            "reader `eventkg`: option `seed` must be a non-negative integer, \
                             not {}",
                            describe(value)
                        ))
                    })?
                }
                "lang" => match value {
                    Value::String(s) if !s.trim().is_empty() => {
                        options.lang = s.trim().to_ascii_lowercase()
                    }
                    other => {
                        return Err(ReadError::Config(format!(
                            "reader `eventkg`: option `lang` must be a non-empty string, not {}",
                            describe(other)
                        )))
                    }
                },
                other => {
                    return Err(ReadError::Config(format!(
                        "reader `eventkg` has no option `{other}` (options: limit, sample, seed, \
                         lang)"
                    )))
                }
            }
        }
        Ok(options)
    }
}

fn describe(value: &Value) -> String {
    match value {
        Value::String(s) if s.trim().is_empty() => "an empty string".to_string(),
        Value::Number(n) => format!("the number {n}"),
        other => type_name(other).to_string(),
    }
}

fn count_option(key: &str, value: &Value) -> Result<usize, ReadError> {
    value
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| {
            ReadError::Config(format!(
                "reader `eventkg`: option `{key}` must be a non-negative integer, not {}",
                describe(value)
            ))
        })
}

// ---------------------------------------------------------------- opening

/// Opens the dump made of `paths` (read in that order). Bad options -> Config error; a file
/// that cannot be opened -> File error naming it; no file -> Config error.
pub(crate) fn open(paths: &[PathBuf], opts: &ReaderOptions) -> Result<Records, ReadError> {
    let options = Options::from_options(opts)?;
    if paths.is_empty() {
        return Err(ReadError::Config(
            "reader `eventkg`: the dump has no file".to_string(),
        ));
    }
    let files: Vec<(PathBuf, String)> = paths
        .iter()
        .map(|p| (p.clone(), p.display().to_string()))
        .collect();
    for (path, name) in &files {
        open_file(path, name)?;
    }
    Ok(Box::new(EventKgRecords {
        files,
        options,
        out: None,
    }))
}

/// The iterator: the passes run on the first call of `next`; then the malformed-line errors
/// come out first (in dump order), then the records (in dump order), then a fatal error if a
/// file could not be read to its end.
struct EventKgRecords {
    files: Vec<(PathBuf, String)>,
    options: Options,
    out: Option<Output>,
}

/// What the passes left for the iterator to hand out. Records are built one at a time from
/// the joined state, so the built records are never all held at once.
struct Output {
    errors: VecDeque<ReadError>,
    joined: Option<Joined>,
    fatal: Option<ReadError>,
}

impl Iterator for EventKgRecords {
    type Item = Result<SourceRecord, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        let out = self
            .out
            .get_or_insert_with(|| run(&self.files, &self.options));
        if let Some(e) = out.errors.pop_front() {
            return Some(Err(e));
        }
        if let Some(joined) = out.joined.as_mut() {
            if let Some(event) = joined.events.pop_front() {
                return Some(Ok(build_record(&event, &joined.named, &self.files)));
            }
            out.joined = None;
        }
        out.fatal.take().map(Err)
    }
}

// ---------------------------------------------------------------- line access

/// A position in the dump: (file index, 1-based line).
type Pos = (usize, u64);

/// Streams every line of every file (line end and a first-line BOM removed, blank lines
/// skipped) into `f`. A read failure is a File error naming the file.
fn scan(files: &[(PathBuf, String)], mut f: impl FnMut(Pos, &[u8])) -> Result<(), ReadError> {
    let mut buf = Vec::with_capacity(4096);
    for (index, (path, name)) in files.iter().enumerate() {
        let mut reader = BufReader::with_capacity(1 << 20, open_file(path, name)?);
        let mut line = 0u64;
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    return Err(ReadError::File {
                        file: name.clone(),
                        message: format!("read error after line {line}: {e}"),
                    })
                }
            }
            line += 1;
            let mut bytes: &[u8] = &buf;
            if line == 1 {
                bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
            }
            bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
            bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
            if bytes.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            f((index, line), bytes);
        }
    }
    Ok(())
}

/// Parses one line on its own. `Ok(None)` for a comment; `Err(message)` when the line is not
/// exactly one valid statement.
fn parse_line(bytes: &[u8]) -> Result<Option<Quad>, String> {
    let mut quad = None;
    for item in oxttl::NQuadsParser::new().for_slice(bytes) {
        match item {
            Ok(q) => {
                if quad.is_some() {
                    return Err("more than one statement on the line".to_string());
                }
                quad = Some(q);
            }
            Err(e) => {
                let column = e.location().start.column + 1;
                return Err(format!("column {column}: {}", e.message()));
            }
        }
    }
    Ok(quad)
}

/// The raw subject IRI of a line and its object IRI (`None` where the object is not a plain
/// IRI), taken without parsing; `None` when the line does not have that simple shape, in
/// which case the caller must parse it to know.
fn raw_terms(bytes: &[u8]) -> Option<(&[u8], Option<&[u8]>)> {
    fn iri(rest: &[u8]) -> Option<(&[u8], &[u8])> {
        let rest = rest.trim_ascii_start();
        let body = rest.strip_prefix(b"<")?;
        let end = body.iter().position(|&b| b == b'>')?;
        let value = &body[..end];
        if value.contains(&b'\\') {
            return None;
        }
        Some((value, &body[end + 1..]))
    }
    let (subject, rest) = iri(bytes)?;
    let (_predicate, rest) = iri(rest)?;
    let rest = rest.trim_ascii_start();
    if rest.first() == Some(&b'<') {
        let (object, _) = iri(rest)?;
        Some((subject, Some(object)))
    } else {
        Some((subject, None))
    }
}

/// Whether a line may be about one of the IRIs `wanted` accepts (as subject, or as object
/// when `objects_too`): true when in doubt.
fn may_concern(bytes: &[u8], objects_too: bool, wanted: &dyn Fn(&str) -> bool) -> bool {
    if bytes.trim_ascii_start().first() == Some(&b'#') {
        return false;
    }
    let Some((subject, object)) = raw_terms(bytes) else {
        return true;
    };
    let hit = |raw: &[u8]| std::str::from_utf8(raw).map_or(true, wanted);
    hit(subject) || (objects_too && object.is_some_and(hit))
}

fn iri_of_subject(q: &Quad) -> Option<&str> {
    match &q.subject {
        NamedOrBlankNode::NamedNode(n) => Some(n.as_str()),
        NamedOrBlankNode::BlankNode(_) => None,
    }
}

fn iri_of_object(q: &Quad) -> Option<&str> {
    match &q.object {
        Term::NamedNode(n) => Some(n.as_str()),
        _ => None,
    }
}

/// A literal object's value and language tag (`""` when it has none).
fn literal_of(q: &Quad) -> Option<(&str, &str)> {
    match &q.object {
        Term::Literal(l) => Some((l.value(), l.language().unwrap_or(""))),
        _ => None,
    }
}

fn graph_local(q: &Quad) -> Option<String> {
    match &q.graph_name {
        GraphName::NamedNode(n) => Some(local_name(n.as_str()).to_string()),
        _ => None,
    }
}

/// The local name of an IRI: what follows its last `/` or `#`.
fn local_name(iri: &str) -> &str {
    iri.rsplit(['/', '#']).next().unwrap_or(iri)
}

// ---------------------------------------------------------------- ranking of sources

/// The rank of a statement's graph (lower is better), see the module documentation.
fn graph_rank(graph: Option<&str>, lang: &str) -> u8 {
    let Some(g) = graph else { return 6 };
    let with_lang = |prefix: &str| {
        g.strip_prefix(prefix)
            .is_some_and(|rest| rest.eq_ignore_ascii_case(lang))
    };
    if with_lang("wikipedia_") {
        0
    } else if with_lang("dbpedia_") {
        1
    } else if g == "wikidata" {
        2
    } else if with_lang("wce_") {
        3
    } else if g == "event_kg" {
        4
    } else {
        5
    }
}

/// Whether a language tag matches the wanted language.
fn lang_matches(tag: &str, lang: &str) -> bool {
    tag.eq_ignore_ascii_case(lang)
        || (tag.len() > lang.len()
            && tag.as_bytes()[lang.len()] == b'-'
            && tag[..lang.len()].eq_ignore_ascii_case(lang))
}

/// The best value seen so far: the lowest rank wins, the first seen between equals.
#[derive(Debug, Default, Clone)]
struct Best {
    value: Option<(u8, String, String)>,
}

impl Best {
    fn offer(&mut self, rank: u8, value: &str, graph: Option<String>) {
        if self.value.as_ref().is_none_or(|(r, _, _)| rank < *r) {
            self.value = Some((rank, value.to_string(), graph.unwrap_or_default()));
        }
    }

    fn get(&self) -> &str {
        self.value.as_ref().map_or("", |(_, v, _)| v.as_str())
    }

    fn graph(&self) -> &str {
        self.value.as_ref().map_or("", |(_, _, g)| g.as_str())
    }
}

// ---------------------------------------------------------------- selection

/// Chooses the events while the type lines stream by.
enum Selector {
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
    fn new(options: &Options) -> Self {
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

    fn offer(&mut self, iri: &str, pos: Pos) {
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
    fn finish(self, limit: Option<usize>) -> Vec<(Pos, String)> {
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

// ---------------------------------------------------------------- per-event state

#[derive(Debug, Default)]
struct EventState {
    iri: String,
    pos: Pos,
    label: Best,
    description: Best,
    begin: Best,
    end: Best,
    begin_unit: Option<String>,
    end_unit: Option<String>,
    places: Vec<String>,
    actors: Vec<String>,
    parent: Option<String>,
    parent_inverse: Option<String>,
    previous: Option<String>,
    previous_inverse: Option<String>,
    next: Option<String>,
    next_inverse: Option<String>,
    /// (role property IRI, other end IRI, whether the event is the relation's object).
    roles: Vec<(String, String, bool)>,
}

/// A reified relation touching a selected event.
#[derive(Debug, Default)]
struct Relation {
    subject: Option<String>,
    object: Option<String>,
    roles: Vec<String>,
    not_a_role: bool,
}

/// Label and types of an entity, event or property to be named.
#[derive(Debug, Default)]
struct Named {
    label: Best,
    place: bool,
    actor: bool,
    event: bool,
}

fn push_unique(list: &mut Vec<String>, value: &str) {
    if !list.iter().any(|v| v == value) {
        list.push(value.to_string());
    }
}

fn set_first(slot: &mut Option<String>, value: &str) {
    if slot.is_none() {
        *slot = Some(value.to_string());
    }
}

// ---------------------------------------------------------------- the passes

/// Runs the passes and returns what the iterator yields.
fn run(files: &[(PathBuf, String)], options: &Options) -> Output {
    let mut errors = VecDeque::new();
    match run_passes(files, options, &mut errors) {
        Ok(joined) => Output {
            errors,
            joined: Some(joined),
            fatal: None,
        },
        Err(fatal) => Output {
            errors,
            joined: None,
            fatal: Some(fatal),
        },
    }
}

fn run_passes(
    files: &[(PathBuf, String)],
    options: &Options,
    errors: &mut VecDeque<ReadError>,
) -> Result<Joined, ReadError> {
    let lang = options.lang.as_str();

    // Pass 1: validate every line, choose the events.
    let mut selector = Selector::new(options);
    let mut malformed: HashSet<Pos> = HashSet::new();
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
    if chosen.is_empty() {
        return Ok(Joined {
            events: VecDeque::new(),
            named: HashMap::new(),
        });
    }
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

    // Pass 2: facts of the events, statements pointing at them, relation ids.
    let mut relations: HashMap<String, Relation> = HashMap::new();
    let in_events = |s: &str| index.contains_key(s);
    scan(files, |pos, bytes| {
        if !may_concern(bytes, true, &in_events) || malformed.contains(&pos) {
            return;
        }
        let Ok(Some(q)) = parse_line(bytes) else {
            return;
        };
        let p = q.predicate.as_str();
        if let Some(&i) = iri_of_subject(&q).and_then(|s| index.get(s)) {
            event_fact(&mut events[i], &q, p, lang);
        }
        if let (Some(s), Some(&j)) = (
            iri_of_subject(&q),
            iri_of_object(&q).and_then(|o| index.get(o)),
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

    // Pass 3: the statements of those relations.
    if !relations.is_empty() {
        scan(files, |pos, bytes| {
            if !may_concern(bytes, false, &|s| relations.contains_key(s))
                || malformed.contains(&pos)
            {
                return;
            }
            let Ok(Some(q)) = parse_line(bytes) else {
                return;
            };
            let (Some(s), Some(o)) = (iri_of_subject(&q), iri_of_object(&q)) else {
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
        })?;
    }
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
    drop(relations);

    // Pass 4: labels and types of everything to be named.
    let mut named: HashMap<String, Named> = HashMap::new();
    for e in &events {
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
    if !named.is_empty() {
        let keys: HashSet<String> = named.keys().cloned().collect();
        let wanted = |s: &str| keys.contains(s);
        scan(files, |pos, bytes| {
            if !may_concern(bytes, false, &wanted) || malformed.contains(&pos) {
                return;
            }
            let Ok(Some(q)) = parse_line(bytes) else {
                return;
            };
            let Some(n) = iri_of_subject(&q).and_then(|s| named.get_mut(s)) else {
                return;
            };
            match q.predicate.as_str() {
                RDFS_LABEL => {
                    if let Some((value, tag)) = literal_of(&q) {
                        if lang_matches(tag, lang) {
                            let graph = graph_local(&q);
                            n.label
                                .offer(graph_rank(graph.as_deref(), lang), value, graph);
                        }
                    }
                }
                RDF_TYPE => match iri_of_object(&q) {
                    Some(SEM_PLACE) => n.place = true,
                    Some(SEM_ACTOR) => n.actor = true,
                    Some(t) if EVENT_TYPES.contains(&t) => n.event = true,
                    _ => {}
                },
                _ => {}
            }
        })?;
    }
    tracing::debug!(named = named.len(), "eventkg pass 4: labels read");

    Ok(Joined {
        events: events.into(),
        named,
    })
}

/// The joined state after the passes: records are built from it one at a time.
struct Joined {
    events: VecDeque<EventState>,
    named: HashMap<String, Named>,
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

// ---------------------------------------------------------------- records

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

fn build_record(
    e: &EventState,
    named: &HashMap<String, Named>,
    files: &[(PathBuf, String)],
) -> SourceRecord {
    let label = |iri: &Option<String>, inverse: &Option<String>| -> String {
        iri.iter()
            .chain(inverse)
            .map(|i| named.get(i).map_or("", |n| n.label.get()))
            .find(|l| !l.is_empty())
            .unwrap_or("")
            .to_string()
    };
    let (begin, begin_iso, begin_granularity) =
        render_date(&e.iri, e.begin.get(), e.begin_unit.as_deref());
    let (end, end_iso, end_granularity) = render_date(&e.iri, e.end.get(), e.end_unit.as_deref());
    let mut places: Vec<String> = Vec::new();
    for p in &e.places {
        let l = named.get(p).map_or("", |n| n.label.get());
        if !l.is_empty() && !places.iter().any(|x| x == l) {
            places.push(l.to_string());
        }
    }
    // (role label, entity label, kind)
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
    let parent = label(&e.parent, &e.parent_inverse);
    let previous = label(&e.previous, &e.previous_inverse);
    let next = label(&e.next, &e.next_inverse);

    let mut kv = Kv {
        items: Vec::new(),
        used: HashMap::new(),
    };
    kv.push("name", e.label.get(), "name");
    kv.push("description", e.description.get(), "description");
    kv.push("begin time", &begin, "date");
    kv.push("end time", &end, "date");
    for p in &places {
        kv.push("location", p, "place");
    }
    for (role, entity, kind) in &roles {
        kv.push(role, entity, kind);
    }
    kv.push("part of", &parent, "event");
    kv.push("previous event", &previous, "event");
    kv.push("next event", &next, "event");
    let usable = kv
        .items
        .iter()
        .filter(|i| i.kind != "name" && i.kind != "description")
        .count();

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
    fields.insert("places".into(), json!(places));
    fields.insert(
        "roles".into(),
        Value::Array(
            roles
                .iter()
                .map(|(r, en, k)| json!({"role": r, "entity": en, "kind": k}))
                .collect(),
        ),
    );
    fields.insert("parent".into(), json!(parent));
    fields.insert("previous".into(), json!(previous));
    fields.insert("next".into(), json!(next));
    fields.insert(
        "kv".into(),
        serde_json::to_value(&kv.items).unwrap_or(Value::Array(Vec::new())),
    );
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
    fn graphs_rank_in_the_documented_order() {
        let ranks: Vec<u8> = [
            Some("wikipedia_en"),
            Some("dbpedia_en"),
            Some("wikidata"),
            Some("wce_en"),
            Some("event_kg"),
            Some("yago"),
            None,
        ]
        .into_iter()
        .map(|g| graph_rank(g, "en"))
        .collect();
        assert_eq!(ranks, [0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(graph_rank(Some("wikipedia_de"), "en"), 5);
        assert_eq!(graph_rank(Some("wikipedia_de"), "de"), 0);
    }

    #[test]
    fn languages_match_on_the_primary_tag() {
        assert!(lang_matches("en", "en"));
        assert!(lang_matches("en-GB", "en"));
        assert!(lang_matches("EN", "en"));
        assert!(!lang_matches("eng", "en"));
        assert!(!lang_matches("de", "en"));
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

    #[test]
    fn raw_terms_read_subject_and_object() {
        let line = b"<http://a/s> <http://a/p> <http://a/o> <http://g> .";
        assert_eq!(
            raw_terms(line),
            Some((&b"http://a/s"[..], Some(&b"http://a/o"[..])))
        );
        let line = b"<http://a/s> <http://a/p> \"x\"@en .";
        assert_eq!(raw_terms(line), Some((&b"http://a/s"[..], None)));
        assert_eq!(raw_terms(b"_:b <http://a/p> <http://a/o> ."), None);
    }
}
