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
//! What is kept, item by item (64-bit, IRIs of about 60 bytes; "about" since allocators
//! round up). No file is ever held whole: each pass streams the files a line at a time
//! through a 1 MiB buffer, one line parsed at a time. Nor are all statements: only those of
//! the chosen events are taken in, as the fields below.
//! - **While choosing (pass 1)**: per chosen event, its IRI twice and its position, about
//!   200 bytes (every event of the dump without `limit` or `sample`, the first `limit`, or
//!   the `sample` of the reservoir); per malformed line, its position in a set (about
//!   30 bytes) and its error until it is yielded (about 150 bytes and the parser's message).
//!   Malformed lines are the one thing kept for every line that has it, chosen or not.
//! - **Per chosen event, passes 2 to the record**: its state (`state::EventState`, 528
//!   bytes inline) with its strings (IRI, label, description, dates and unit IRIs), an IRI
//!   per place, actor and neighbour, and per role two IRIs (about 170 bytes); and its IRI
//!   again in the index from IRI to event (about 100 bytes). About 1 to 2 KB an event,
//!   mostly its description and roles. An event's state is freed when its record is built.
//! - **Per reified relation touching a chosen event (passes 2 and 3 only)**: its id, both
//!   ends and its role types, about 350 bytes; freed once the roles are attached.
//! - **Per entity, neighbour event or role property to be named (pass 4 to the last
//!   record)**: its IRI, its chosen label with the label's graph and three flags, about
//!   200 bytes.
//!
//! So a build of `sample` (or `limit`) events needs memory in proportion to them, whatever
//! the dump's size, save the malformed lines; without either, every event of the dump is
//! chosen and kept until its record is built (about 1 to 2 KB each, so about 1 to 2 GB a
//! million events).
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
//
// The files, one job each: `vocab` (the IRIs the reader knows), `options` (the reader's
// options), `lines` (streaming the dump line by line), `terms` (N-Quads lines and their
// terms), `rank` (which source of a value wins), `select` (choosing the events: `limit`, the
// seeded `sample`), `state` (what the passes gather per event and per named thing), `passes`
// (the four streaming passes) and `record` (an event rendered as its record); this file opens
// the dump and hands out what the passes joined.

mod lines;
mod options;
mod passes;
mod rank;
mod record;
mod select;
mod state;
mod terms;
mod vocab;

use std::collections::VecDeque;
use std::path::PathBuf;

use crate::util::open_file;
use crate::{ReadError, ReaderOptions, Records, SourceRecord};

use options::Options;
use passes::{run_passes, Joined};
use record::build_record;

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
