//! The `eventkg` reader on the sample dump `raw/eventkg` (full and light forms) and on small
//! dumps written here.

mod common;

use common::{record_error, write};
use std::path::{Path, PathBuf};

use cb_readers::{open, open_set, resolve_inputs, ReadError, ReaderOptions, SourceRecord};
use serde_json::{json, Value};

fn sample_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../raw/eventkg")
}

fn nq_files(dir: &Path) -> Vec<PathBuf> {
    resolve_inputs(dir, &["*.nq".to_string()]).unwrap()
}

fn opts(v: Value) -> ReaderOptions {
    v.as_object().unwrap().clone()
}

/// Records and errors of a dump, in the order the iterator gives them.
fn read(paths: &[PathBuf], options: Value) -> (Vec<SourceRecord>, Vec<ReadError>) {
    let mut records = Vec::new();
    let mut errors = Vec::new();
    for item in open_set("eventkg", paths, &opts(options)).unwrap() {
        match item {
            Ok(r) => records.push(r),
            Err(e) => errors.push(e),
        }
    }
    (records, errors)
}

fn read_ok(paths: &[PathBuf], options: Value) -> Vec<SourceRecord> {
    let (records, errors) = read(paths, options);
    assert!(errors.is_empty(), "{errors:?}");
    records
}

fn named<'a>(records: &'a [SourceRecord], name: &str) -> &'a SourceRecord {
    records
        .iter()
        .find(|r| r.fields["name"] == name)
        .unwrap_or_else(|| panic!("no record named {name}"))
}

fn s<'a>(r: &'a SourceRecord, key: &str) -> &'a str {
    r.fields[key].as_str().unwrap()
}

/// `kv` as `key=value [kind]` strings.
fn kv(r: &SourceRecord) -> Vec<String> {
    r.fields["kv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            format!(
                "{}={} [{}]",
                i["key"].as_str().unwrap(),
                i["value"].as_str().unwrap(),
                i["kind"].as_str().unwrap()
            )
        })
        .collect()
}

/// Expands the short prefixes used in the test dumps (`<r:event_1>`, `<sem:Event>`, ...).
fn expand(text: &str) -> String {
    let prefixes = [
        ("<r:", "<http://eventKG.l3s.uni-hannover.de/resource/"),
        ("<s:", "<http://eventKG.l3s.uni-hannover.de/schema/"),
        ("<g:", "<http://eventKG.l3s.uni-hannover.de/graph/"),
        ("<sem:", "<http://semanticweb.cs.vu.nl/2009/11/sem/"),
        ("<rdf:", "<http://www.w3.org/1999/02/22-rdf-syntax-ns#"),
        ("<rdfs:", "<http://www.w3.org/2000/01/rdf-schema#"),
        ("<dct:", "<http://purl.org/dc/terms/"),
        ("<dbo:", "<http://dbpedia.org/ontology/"),
        ("<wdt:", "<http://www.wikidata.org/prop/direct/"),
        ("<time:", "<http://www.w3.org/2006/time#"),
        ("<xsd:", "<http://www.w3.org/2001/XMLSchema#"),
    ];
    let mut out = text.to_string();
    for (short, long) in prefixes {
        out = out.replace(short, long);
    }
    out
}

fn write_nq(dir: &Path, name: &str, lines: &str) -> PathBuf {
    write(dir, name, &expand(lines))
}

/// Removes the graph term of every line (the "light" form).
fn strip_graphs(text: &str) -> String {
    let marker = " <http://eventKG.l3s.uni-hannover.de/graph/";
    text.lines()
        .map(|line| match line.rfind(marker) {
            Some(at) if line.ends_with(" .") => format!("{} .\n", &line[..at]),
            _ => format!("{line}\n"),
        })
        .collect()
}

// ---------------------------------------------------------------- the sample dump

#[test]
fn sample_dump_joins_every_event_in_dump_order() {
    let paths = nq_files(&sample_dir());
    let records = read_ok(&paths, json!({}));
    assert_eq!(records.len(), 25);
    let mut ids: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
    ids.dedup();
    assert_eq!(ids.len(), 25, "an event typed twice came out twice");
    // Dump order: events.nq (files sorted) before text_events.nq, lines ascending.
    let order: Vec<(String, u64)> = records
        .iter()
        .map(|r| (r.origin.file.clone(), r.origin.line))
        .collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted);
    assert!(records
        .last()
        .unwrap()
        .origin
        .file
        .ends_with("text_events.nq"));

    // Enough events survive the recipe's filter (English description, >= 3 usable items).
    let editable = records
        .iter()
        .filter(|r| !s(r, "description").is_empty() && r.fields["usable"].as_u64().unwrap() >= 3)
        .count();
    assert!(editable >= 12, "{editable}");
    let french = named(&records, "French Revolution");
    assert_eq!(s(french, "description"), "");
    assert_eq!(s(french, "description_graph"), "");
    let collapse = named(&records, "Late Bronze Age collapse");
    assert_eq!(collapse.fields["usable"], 2);
}

#[test]
fn sample_dump_battle_of_hastings_is_fully_joined() {
    let records = read_ok(&nq_files(&sample_dir()), json!({}));
    let r = named(&records, "Battle of Hastings");
    assert_eq!(r.id, "event_1302458");
    assert!(r.origin.file.ends_with("events.nq"));
    assert_eq!(
        s(r, "event"),
        "http://eventKG.l3s.uni-hannover.de/resource/event_1302458"
    );
    assert_eq!(s(r, "description_graph"), "wikipedia_en");
    assert!(s(r, "description").starts_with("The Battle of Hastings was fought between"));
    assert_eq!(s(r, "begin"), "14 October 1066");
    assert_eq!(s(r, "begin_iso"), "1066-10-14");
    assert_eq!(s(r, "begin_granularity"), "day");
    assert_eq!(s(r, "end"), "14 October 1066");
    assert_eq!(r.fields["places"], json!(["Battle, East Sussex"]));
    assert_eq!(
        r.fields["roles"],
        json!([
            {"role": "commander", "entity": "Harold Godwinson", "kind": "actor"},
            {"role": "commander", "entity": "William the Conqueror", "kind": "actor"},
            {"role": "participant", "entity": "Duchy of Normandy", "kind": "actor"},
            {"role": "participant", "entity": "Kingdom of England", "kind": "actor"},
        ])
    );
    assert_eq!(s(r, "parent"), "Norman Conquest");
    assert_eq!(s(r, "previous"), "Battle of Stamford Bridge");
    assert_eq!(s(r, "next"), "");
    assert_eq!(
        kv(r)[2..],
        [
            "begin time=14 October 1066 [date]",
            "end time=14 October 1066 [date]",
            "location=Battle, East Sussex [place]",
            "commander=Harold Godwinson [actor]",
            "commander 2=William the Conqueror [actor]",
            "participant=Duchy of Normandy [actor]",
            "participant 2=Kingdom of England [actor]",
            "part of=Norman Conquest [event]",
            "previous event=Battle of Stamford Bridge [event]",
        ]
    );
    assert_eq!(kv(r)[0], "name=Battle of Hastings [name]");
    assert!(kv(r)[1].starts_with("description=The Battle of Hastings was fought"));
    assert_eq!(r.fields["usable"], 9);
}

#[test]
fn sample_dump_other_joins() {
    let records = read_ok(&nq_files(&sample_dir()), json!({}));
    // Parent through the inverse `sem:hasSubEvent`; a role where the event is rdf:object.
    let trial = named(&records, "Trial of Joan of Arc");
    assert_eq!(s(trial, "parent"), "Hundred Years' War");
    assert_eq!(s(trial, "end"), "30 May 1431");
    // Pierre Cauchon is the relation's subject and the trial its object: the role reads "of".
    assert!(kv(trial).contains(&"significant event of=Pierre Cauchon [actor]".to_string()));
    // Month granularity; a participant with only a German label is left out.
    let vienna = named(&records, "Congress of Vienna");
    assert_eq!(s(vienna, "begin"), "September 1814");
    assert_eq!(s(vienna, "begin_granularity"), "month");
    assert_eq!(s(vienna, "description_graph"), "dbpedia_en");
    assert_eq!(vienna.fields["roles"].as_array().unwrap().len(), 3);
    // Years BC, decades, centuries.
    let marathon = named(&records, "Battle of Marathon");
    assert_eq!(s(marathon, "begin"), "490 BC");
    assert_eq!(s(marathon, "begin_granularity"), "year");
    let caesar = named(&records, "Assassination of Julius Caesar");
    assert_eq!(s(caesar, "begin"), "15 March 44 BC");
    assert!(kv(caesar).contains(&"victim=Julius Caesar [actor]".to_string()));
    let dust = named(&records, "Dust Bowl");
    assert_eq!((s(dust, "begin"), s(dust, "end")), ("1930s", "1936"));
    assert_eq!(s(dust, "begin_granularity"), "decade");
    let collapse = named(&records, "Late Bronze Age collapse");
    assert_eq!(s(collapse, "begin"), "12th century BC");
    // Previous and next from dbo links; roles labelled by property_labels.nq.
    let apollo = named(&records, "Apollo 11");
    assert_eq!(
        (s(apollo, "previous"), s(apollo, "next")),
        ("Apollo 10", "Apollo 12")
    );
    assert_eq!(
        apollo.fields["places"],
        json!(["Kennedy Space Center", "Mare Tranquillitatis"])
    );
    assert!(kv(apollo).contains(&"crew member 3=Neil Armstrong [actor]".to_string()));
    // A direct sem:hasActor link is a participant; places are not roles of link counts.
    let wall = named(&records, "Fall of the Berlin Wall");
    assert!(kv(wall).contains(&"participant 2=Günter Schabowski [actor]".to_string()));
    assert_eq!(s(wall, "parent"), "Revolutions of 1989");
    for r in &records {
        let keys: Vec<&str> = r.fields["kv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["key"].as_str().unwrap())
            .collect();
        let mut unique = keys.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), keys.len(), "{}: {keys:?}", r.id);
        let usable = keys.len()
            - usize::from(keys.contains(&"name"))
            - usize::from(keys.contains(&"description"));
        assert_eq!(r.fields["usable"], usable, "{}", r.id);
    }
}

#[test]
fn lang_option_picks_labels_and_descriptions() {
    let records = read_ok(&nq_files(&sample_dir()), json!({"lang": "de"}));
    let trial = records
        .iter()
        .find(|r| {
            r.id == named(
                &read_ok(&nq_files(&sample_dir()), json!({})),
                "Trial of Joan of Arc",
            )
            .id
        })
        .unwrap();
    assert_eq!(s(trial, "name"), "Prozess gegen Jeanne d'Arc");
    assert_eq!(s(trial, "description_graph"), "wikipedia_de");
    assert!(s(trial, "description").starts_with("Der Prozess"));
    assert!(kv(trial).contains(&"Teilnehmer=Jeanne d'Arc [actor]".to_string()));
    assert_eq!(s(trial, "begin"), "9 January 1431");
}

#[test]
fn light_form_gives_the_same_records() {
    let dir = tempfile::tempdir().unwrap();
    let full_paths = nq_files(&sample_dir());
    for p in &full_paths {
        let text = std::fs::read_to_string(p).unwrap();
        let light = strip_graphs(&text);
        assert!(!light.contains("/graph/"));
        write(dir.path(), p.file_name().unwrap().to_str().unwrap(), &light);
    }
    let full = read_ok(&full_paths, json!({}));
    let light = read_ok(&nq_files(dir.path()), json!({}));
    assert_eq!(full.len(), light.len());
    for (f, l) in full.iter().zip(&light) {
        assert_eq!(f.id, l.id);
        assert_eq!(f.origin.line, l.origin.line);
        assert_eq!(s(l, "description_graph"), "");
        let mut ff = f.fields.clone();
        let mut lf = l.fields.clone();
        ff.remove("description_graph");
        lf.remove("description_graph");
        assert_eq!(ff, lf, "{}", f.id);
    }
}

// ---------------------------------------------------------------- small dumps

#[test]
fn description_priority_is_by_graph_then_first_seen() {
    let dir = tempfile::tempdir().unwrap();
    let events = write_nq(
        dir.path(),
        "events.nq",
        r#"<r:event_1> <rdf:type> <sem:Event> <g:event_kg> .
<r:event_1> <rdfs:label> "One"@en .
<r:event_1> <dct:description> "from no graph"@en .
<r:event_1> <dct:description> "from wikidata"@en <g:wikidata> .
<r:event_1> <dct:description> "from wikipedia"@en-GB <g:wikipedia_en> .
<r:event_1> <dct:description> "auf Deutsch"@de <g:wikipedia_de> .
<r:event_2> <rdf:type> <sem:Event> .
<r:event_2> <dct:description> "first wikidata"@en <g:wikidata> .
<r:event_2> <dct:description> "second wikidata"@en <g:wikidata> .
<r:event_2> <dct:description> "from dbpedia"@en <g:dbpedia_en> .
<r:event_3> <rdf:type> <s:EventSeries> .
<r:event_3> <dct:description> "no graph"@en .
<r:event_3> <dct:description> "from yago"@en <g:yago> .
<r:event_3> <dct:description> "from wce"@en <g:wce_en> .
<r:event_3> <dct:description> "from event_kg"@en <g:event_kg> .
"#,
    );
    let records = read_ok(&[events], json!({}));
    let got: Vec<(&str, &str)> = records
        .iter()
        .map(|r| (s(r, "description"), s(r, "description_graph")))
        .collect();
    assert_eq!(
        got,
        [
            ("from wikipedia", "wikipedia_en"),
            ("from dbpedia", "dbpedia_en"),
            ("from wce", "wce_en"),
        ]
    );
    assert_eq!(s(&records[1], "name"), "");
    assert_eq!(records[1].fields["usable"], 0);
}

#[test]
fn roles_dates_and_kinds_from_a_small_dump() {
    let dir = tempfile::tempdir().unwrap();
    let events = write_nq(
        dir.path(),
        "events.nq",
        r#"<r:event_1> <rdf:type> <sem:Event> <g:event_kg> .
<r:event_1> <rdfs:label> "Siege"@en <g:wikidata> .
<r:event_2> <rdf:type> <sem:Event> <g:event_kg> .
<r:event_2> <rdfs:label> "War"@en <g:wikidata> .
<r:event_3> <rdf:type> <s:EventSeriesEdition> .
<r:event_3> <rdfs:label> "Earlier siege"@en .
"#,
    );
    let base = write_nq(
        dir.path(),
        "relations_event_base.nq",
        r#"<r:event_1> <sem:hasBeginTimeStamp> "1429-04-01"^^<xsd:date> <g:event_kg> .
<r:event_1> <s:startUnitType> <time:unitMonth> .
<r:event_1> <sem:hasEndTimeStamp> "1429-05-08"^^<xsd:date> <g:wikidata> .
<r:event_1> <sem:hasPlace> <r:entity_1> <g:wikidata> .
<r:event_1> <sem:hasPlace> <r:entity_9> <g:wikidata> .
<r:event_1> <sem:hasActor> <r:entity_2> <g:event_kg> .
<r:event_2> <sem:hasSubEvent> <r:event_1> .
<r:event_3> <dbo:nextEvent> <r:event_1> <g:dbpedia_en> .
<r:event_2> <sem:hasBeginTimeStamp> "1337-01-01"^^<xsd:date> .
<r:event_2> <s:startUnitType> <s:unitCentury> .
<r:event_2> <sem:hasEndTimeStamp> "not a date"^^<xsd:date> .
"#,
    );
    // The statements of one relation are spread over two files and interleaved.
    let other = write_nq(
        dir.path(),
        "relations_events_other.nq",
        r#"<r:relation_1> <rdf:subject> <r:event_1> <g:wikidata> .
<r:relation_2> <rdf:object> <r:entity_3> <g:dbpedia_en> .
<r:relation_1> <sem:roleType> <wdt:P710> <g:wikidata> .
<r:relation_3> <rdf:subject> <r:event_1> <g:dbpedia_en> .
<r:relation_2> <sem:roleType> <dbo:notableCommander> <g:dbpedia_en> .
<r:relation_3> <rdf:object> <r:entity_4> <g:dbpedia_en> .
<r:relation_3> <sem:roleType> <dbo:followedBy> <g:dbpedia_en> .
<r:relation_4> <rdf:subject> <r:event_1> <g:wikipedia_en> .
<r:relation_4> <rdf:type> <s:LinkRelation> <g:wikipedia_en> .
<r:relation_4> <rdf:object> <r:entity_1> <g:wikipedia_en> .
<r:relation_4> <sem:roleType> <wdt:P710> <g:wikipedia_en> .
<r:relation_5> <rdf:subject> <r:event_1> <g:wikidata> .
<r:relation_5> <rdf:object> <r:entity_3> <g:wikidata> .
<r:relation_6> <rdf:subject> <r:event_1> <g:wikidata> .
<r:relation_6> <rdf:object> <r:entity_5> <g:wikidata> .
<r:relation_6> <sem:roleType> <wdt:P710> <g:wikidata> .
"#,
    );
    let entities = write_nq(
        dir.path(),
        "entities.nq",
        r#"<r:relation_1> <rdf:object> <r:entity_2> <g:wikidata> .
<r:relation_2> <rdf:subject> <r:event_1> <g:dbpedia_en> .
<r:entity_1> <rdf:type> <sem:Place> <g:event_kg> .
<r:entity_1> <rdfs:label> "Orléans"@en <g:wikidata> .
<r:entity_9> <rdfs:label> "Orléans"@fr <g:wikidata> .
<r:entity_2> <rdf:type> <sem:Actor> <g:event_kg> .
<r:entity_2> <rdfs:label> "Joan of Arc"@en <g:wikidata> .
<r:entity_3> <rdfs:label> "Jean de Dunois"@en <g:wikidata> .
<r:entity_4> <rdfs:label> "Loire campaign"@en <g:wikidata> .
<r:entity_5> <rdfs:label> "Saint-Loup"@de <g:wikidata> .
"#,
    );
    let labels = write_nq(
        dir.path(),
        "property_labels.nq",
        r#"<wdt:P710> <rdfs:label> "participant"@en .
<wdt:P710> <rdfs:label> "Teilnehmer"@de .
"#,
    );
    let records = read_ok(&[entities, events, labels, other, base], json!({}));
    assert_eq!(records.len(), 3);
    let siege = named(&records, "Siege");
    assert_eq!(s(siege, "begin"), "April 1429");
    assert_eq!(s(siege, "begin_granularity"), "month");
    assert_eq!(s(siege, "end"), "8 May 1429");
    assert_eq!(s(siege, "end_granularity"), "day");
    assert_eq!(siege.fields["places"], json!(["Orléans"]));
    assert_eq!(s(siege, "parent"), "War");
    assert_eq!(s(siege, "previous"), "Earlier siege");
    // hasActor and the P710 relation give the same pair once; a relation without a role
    // type, a link relation and an entity without an English label give nothing.
    assert_eq!(
        siege.fields["roles"],
        json!([
            {"role": "followed by", "entity": "Loire campaign", "kind": "other"},
            {"role": "notable commander", "entity": "Jean de Dunois", "kind": "actor"},
            {"role": "participant", "entity": "Joan of Arc", "kind": "actor"},
        ])
    );
    assert_eq!(
        kv(siege),
        [
            "name=Siege [name]",
            "begin time=April 1429 [date]",
            "end time=8 May 1429 [date]",
            "location=Orléans [place]",
            "followed by=Loire campaign [other]",
            "notable commander=Jean de Dunois [actor]",
            "participant=Joan of Arc [actor]",
            "part of=War [event]",
            "previous event=Earlier siege [event]",
        ]
    );
    assert_eq!(siege.fields["usable"], 8);
    let war = named(&records, "War");
    assert_eq!(s(war, "begin"), "14th century");
    assert_eq!(s(war, "begin_granularity"), "century");
    assert_eq!((s(war, "end"), s(war, "end_iso")), ("", ""));
    let earlier = named(&records, "Earlier siege");
    assert_eq!(s(earlier, "next"), "Siege");
}

#[test]
fn repeated_keys_are_numbered() {
    let dir = tempfile::tempdir().unwrap();
    let events = write_nq(
        dir.path(),
        "events.nq",
        r#"<r:event_1> <rdf:type> <sem:Event> .
<r:event_1> <rdfs:label> "Meeting"@en .
<r:event_1> <sem:hasPlace> <r:entity_1> .
<r:event_1> <sem:hasPlace> <r:entity_2> .
<r:event_1> <sem:hasPlace> <r:entity_3> .
<r:relation_1> <rdf:subject> <r:event_1> .
<r:relation_1> <rdf:object> <r:entity_4> .
<r:relation_1> <sem:roleType> <dbo:location> .
<r:entity_1> <rdfs:label> "A"@en .
<r:entity_2> <rdfs:label> "B"@en .
<r:entity_3> <rdfs:label> "C"@en .
<r:entity_4> <rdfs:label> "D"@en .
"#,
    );
    let records = read_ok(&[events], json!({}));
    assert_eq!(
        kv(&records[0]),
        [
            "name=Meeting [name]",
            "location=A [place]",
            "location 2=B [place]",
            "location 3=C [place]",
            "location 4=D [other]",
        ]
    );
}

#[test]
fn malformed_lines_are_reported_once_and_reading_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let full_paths = nq_files(&sample_dir());
    let mut broken_lines = Vec::new();
    for p in &full_paths {
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        let mut lines: Vec<String> = std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        if name == "events.nq" {
            // An unterminated literal, then a line missing its final dot.
            lines.insert(3, "<http://x/a> <http://x/b> \"never closed .".to_string());
            lines.insert(10, "<http://x/a> <http://x/b> <http://x/c>".to_string());
            broken_lines.push((name.clone(), 4u64));
            broken_lines.push((name.clone(), 11u64));
        }
        if name == "relations_events_other.nq" {
            lines.insert(0, "this is not N-Quads".to_string());
            broken_lines.push((name.clone(), 1u64));
        }
        write(dir.path(), &name, &(lines.join("\n") + "\n"));
    }
    let (records, errors) = read(&nq_files(dir.path()), json!({}));
    let mut got: Vec<(String, u64)> = errors
        .iter()
        .map(|e| {
            let (file, line, code, message) = record_error(e);
            assert_eq!(code, "malformed_nquads");
            assert!(!message.is_empty());
            let name = Path::new(file).file_name().unwrap().to_str().unwrap();
            (name.to_string(), line)
        })
        .collect();
    got.sort();
    broken_lines.sort();
    assert_eq!(got, broken_lines);
    assert!(errors.iter().all(|e| !e.is_fatal()));
    // Every event still comes out, with the same content.
    let expected = read_ok(&full_paths, json!({}));
    assert_eq!(records.len(), expected.len());
    for (a, b) in records.iter().zip(&expected) {
        assert_eq!(a.fields, b.fields);
    }
}

#[test]
fn limit_keeps_the_first_events() {
    let paths = nq_files(&sample_dir());
    let all = read_ok(&paths, json!({}));
    let first = read_ok(&paths, json!({"limit": 3}));
    let ids: Vec<&str> = first.iter().map(|r| r.id.as_str()).collect();
    let want: Vec<&str> = all[..3].iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, want);
    assert_eq!(first[0].fields, all[0].fields);
    assert!(read_ok(&paths, json!({"limit": 0})).is_empty());
    assert_eq!(read_ok(&paths, json!({"limit": 1000})).len(), all.len());
}

#[test]
fn sample_is_seeded_and_in_dump_order() {
    let paths = nq_files(&sample_dir());
    let all: Vec<String> = read_ok(&paths, json!({}))
        .into_iter()
        .map(|r| r.id)
        .collect();
    let ids = |v: Value| -> Vec<String> { read_ok(&paths, v).into_iter().map(|r| r.id).collect() };
    let a = ids(json!({"sample": 6, "seed": 7}));
    assert_eq!(a.len(), 6);
    assert_eq!(a, ids(json!({"sample": 6, "seed": 7})));
    // In dump order: a subsequence of all events.
    let positions: Vec<usize> = a
        .iter()
        .map(|id| all.iter().position(|x| x == id).unwrap())
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    // Another seed, another selection; the default seed is 42.
    let seeds: Vec<Vec<String>> = (1..6)
        .map(|seed| ids(json!({"sample": 6, "seed": seed})))
        .collect();
    assert!(seeds.iter().any(|s| *s != a));
    assert_eq!(
        ids(json!({"sample": 6})),
        ids(json!({"sample": 6, "seed": 42}))
    );
    // A sample as large as the dump is the dump; a limit cuts the sample.
    assert_eq!(ids(json!({"sample": 100})), all);
    let b = ids(json!({"sample": 6, "seed": 7, "limit": 2}));
    assert_eq!(b, a[..2]);
}

#[test]
fn sample_counts_an_event_typed_on_several_lines_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for i in 0..30 {
        text.push_str(&format!("<r:event_{i}> <rdf:type> <sem:Event> .\n"));
    }
    for i in 0..30 {
        text.push_str(&format!(
            "<r:event_{i}> <rdf:type> <s:EventSeriesEdition> .\n"
        ));
    }
    let path = write_nq(dir.path(), "events.nq", &text);
    for seed in 0..20 {
        let records = read_ok(
            std::slice::from_ref(&path),
            json!({"sample": 10, "seed": seed}),
        );
        let mut ids: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids.len(), 10);
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 10);
        assert!(records.iter().all(|r| r.origin.line <= 30));
    }
}

#[test]
fn bad_options_are_config_errors() {
    let paths = nq_files(&sample_dir());
    for (options, needle) in [
        (json!({"bogus": 1}), "bogus"),
        (json!({"limit": "ten"}), "limit"),
        (json!({"sample": -1}), "sample"),
        (json!({"seed": 1.5}), "seed"),
        (json!({"lang": ""}), "lang"),
    ] {
        match open_set("eventkg", &paths, &opts(options.clone())) {
            Err(e @ ReadError::Config(_)) => {
                assert!(e.to_string().contains(needle), "{options}: {e}")
            }
            Err(e) => panic!("{options}: expected a config error, got {e:?}"),
            Ok(_) => panic!("{options}: accepted"),
        }
    }
}

#[test]
fn open_reads_a_one_file_dump_and_open_set_chains_other_readers() {
    let dir = tempfile::tempdir().unwrap();
    let events = write_nq(
        dir.path(),
        "events.nq",
        "<r:event_1> <rdf:type> <sem:Event> .\n<r:event_1> <rdfs:label> \"One\"@en .\n",
    );
    let records: Vec<SourceRecord> = open("eventkg", &events, &ReaderOptions::new())
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(records.len(), 1);
    assert_eq!(s(&records[0], "name"), "One");
    // A folder is read as the dump of its `*.nq` files.
    let whole: Vec<String> = open("eventkg", &sample_dir(), &ReaderOptions::new())
        .unwrap()
        .map(|r| r.unwrap().id)
        .collect();
    assert_eq!(whole.len(), 25);
    let missing = dir.path().join("absent.nq");
    assert!(matches!(
        open_set(
            "eventkg",
            &[events.clone(), missing.clone()],
            &ReaderOptions::new()
        ),
        Err(ReadError::File { .. })
    ));

    // Another reader reads the files one after the other, lazily.
    let a = write(dir.path(), "a.jsonl", "{\"id\": \"1\"}\n");
    let b = write(dir.path(), "b.jsonl", "{\"id\": \"2\"}\n");
    let o = opts(json!({"id_field": "id"}));
    let items: Vec<_> = open_set("jsonl", &[a.clone(), b, missing], &o)
        .unwrap()
        .collect();
    assert_eq!(items.len(), 3);
    assert_eq!(items[0].as_ref().unwrap().id, "1");
    assert_eq!(items[1].as_ref().unwrap().id, "2");
    assert!(matches!(items[2], Err(ReadError::File { .. })));
    assert!(matches!(
        open_set("jsonl", &[], &o),
        Err(ReadError::Config(_))
    ));
}
