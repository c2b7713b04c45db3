//! Throughput and memory of the `eventkg` reader on synthetic dumps.
//!
//! `cargo bench -p cb-readers --bench eventkg_read` writes a dump of each size in
//! `EVENTKG_BENCH_SIZES_MB` (default `100,1024`) into a temporary folder (or into
//! `EVENTKG_BENCH_DIR` when set; the files are then kept), then reads it with
//! `{"sample": N}` (N = `EVENTKG_BENCH_SAMPLE`, default 1000) in a child process of its own,
//! so that the peak resident set (`VmHWM`) of each read is measured alone. The child prints
//! its resident set before reading and its peak after; the parent prints a table.
//!
//! The dumps have the generator's file names and line shapes: events with labels in two
//! languages, two descriptions and `owl:sameAs`; times, units and places; three reified
//! relations per event whose statements are written far apart; entities with types, labels
//! and links; property labels. Nearly all lines are about events the sample leaves out.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use cb_readers::{open_set, resolve_inputs, ReaderOptions};

const R: &str = "http://eventKG.l3s.uni-hannover.de/resource/";
const G: &str = "http://eventKG.l3s.uni-hannover.de/graph/";
const S: &str = "http://eventKG.l3s.uni-hannover.de/schema/";
const SEM: &str = "http://semanticweb.cs.vu.nl/2009/11/sem/";
const RDF: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#";
const RDFS: &str = "http://www.w3.org/2000/01/rdf-schema#";
const DCT: &str = "http://purl.org/dc/terms/";
const OWL: &str = "http://www.w3.org/2002/07/owl#";
const XSD_DATE: &str = "http://www.w3.org/2001/XMLSchema#date";
const WDT: &str = "http://www.wikidata.org/prop/direct/";

const WORDS: [&str; 16] = [
    "battle",
    "treaty",
    "army",
    "king",
    "city",
    "river",
    "council",
    "siege",
    "empire",
    "fleet",
    "rebellion",
    "election",
    "bishop",
    "province",
    "harbour",
    "parliament",
];

/// A small deterministic generator (xorshift), enough for synthetic text.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn words(&mut self, n: usize) -> String {
        let mut out = String::new();
        for i in 0..n {
            if i > 0 {
                out.push(' ');
            }
            out.push_str(WORDS[self.below(WORDS.len() as u64) as usize]);
        }
        out
    }
}

fn quad(w: &mut impl Write, s: &str, p: &str, o: &str, g: Option<&str>) -> std::io::Result<()> {
    match g {
        Some(g) => writeln!(w, "<{s}> <{p}> {o} <{G}{g}> ."),
        None => writeln!(w, "<{s}> <{p}> {o} ."),
    }
}

fn open_out(dir: &Path, name: &str) -> BufWriter<File> {
    BufWriter::with_capacity(1 << 20, File::create(dir.join(name)).unwrap())
}

/// Writes a dump of about `target` bytes into `dir`; returns its size in bytes.
fn generate(dir: &Path, target: u64) -> std::io::Result<u64> {
    std::fs::create_dir_all(dir)?;
    let mut events = open_out(dir, "events.nq");
    let mut base = open_out(dir, "relations_event_base.nq");
    let mut entities = open_out(dir, "entities.nq");
    let mut props = open_out(dir, "property_labels.nq");
    for (p, label) in [("P710", "participant"), ("P1029", "crew member")] {
        quad(
            &mut props,
            &format!("{WDT}{p}"),
            &format!("{RDFS}label"),
            &format!("\"{label}\"@en"),
            None,
        )?;
    }
    props.flush()?;
    // Relations are written in blocks: all rdf:type lines of a block, then all subjects,
    // then objects, then role types, so the statements of one relation are far apart.
    let mut relations = open_out(dir, "relations_events_other.nq");
    let mut block: Vec<(u64, u64, u64, u64)> = Vec::new();
    let mut g = Gen(0x9E37_79B9_7F4A_7C15);
    let mut since_check = 0u32;
    let mut event = 0u64;
    let mut relation = 0u64;
    loop {
        event += 1;
        let e = format!("{R}event_{event}");
        quad(
            &mut events,
            &e,
            &format!("{RDF}type"),
            &format!("<{SEM}Event>"),
            Some("event_kg"),
        )?;
        let title = g.words(3);
        quad(
            &mut events,
            &e,
            &format!("{RDFS}label"),
            &format!("\"The {title} of {event}\"@en"),
            Some("wikidata"),
        )?;
        quad(
            &mut events,
            &e,
            &format!("{RDFS}label"),
            &format!("\"Die {title} von {event}\"@de"),
            Some("wikidata"),
        )?;
        let d1 = g.words(22);
        quad(
            &mut events,
            &e,
            &format!("{DCT}description"),
            &format!("\"A {d1}.\"@en"),
            Some("wikipedia_en"),
        )?;
        let d2 = g.words(8);
        quad(
            &mut events,
            &e,
            &format!("{DCT}description"),
            &format!("\"{d2}\"@en"),
            Some("wikidata"),
        )?;
        quad(
            &mut events,
            &e,
            &format!("{OWL}sameAs"),
            &format!("<http://www.wikidata.org/entity/Q{}>", 100_000 + event),
            Some("wikidata"),
        )?;

        let year = 1000 + g.below(1000);
        let month = 1 + g.below(12);
        let day = 1 + g.below(28);
        quad(
            &mut base,
            &e,
            &format!("{SEM}hasBeginTimeStamp"),
            &format!("\"{year}-{month:02}-{day:02}\"^^<{XSD_DATE}>"),
            Some("event_kg"),
        )?;
        quad(
            &mut base,
            &e,
            &format!("{SEM}hasEndTimeStamp"),
            &format!("\"{year}-{month:02}-{:02}\"^^<{XSD_DATE}>", day + 1),
            Some("event_kg"),
        )?;
        quad(
            &mut base,
            &e,
            &format!("{S}startUnitType"),
            "<http://www.w3.org/2006/time#unitDay>",
            None,
        )?;
        let place = 2 * event;
        let person = 2 * event + 1;
        quad(
            &mut base,
            &e,
            &format!("{SEM}hasPlace"),
            &format!("<{R}entity_{place}>"),
            Some("wikidata"),
        )?;

        for (id, ty, name) in [(place, "Place", g.words(2)), (person, "Actor", g.words(2))] {
            let x = format!("{R}entity_{id}");
            quad(
                &mut entities,
                &x,
                &format!("{RDF}type"),
                &format!("<{SEM}{ty}>"),
                Some("event_kg"),
            )?;
            quad(
                &mut entities,
                &x,
                &format!("{RDFS}label"),
                &format!("\"{name} {id}\"@en"),
                Some("wikidata"),
            )?;
            quad(
                &mut entities,
                &x,
                &format!("{OWL}sameAs"),
                &format!("<http://www.wikidata.org/entity/Q{}>", 5_000_000 + id),
                Some("wikidata"),
            )?;
        }
        for k in 0..3 {
            relation += 1;
            let other = if k == 0 {
                person
            } else {
                2 * (1 + g.below(event)) + 1
            };
            block.push((relation, event, other, k % 2));
        }
        if block.len() >= 3000 {
            write_relations(&mut relations, &block)?;
            block.clear();
        }
        since_check += 1;
        if since_check == 1000 {
            since_check = 0;
            let written: u64 = [&events, &base, &entities, &relations]
                .iter()
                .map(|w| w.get_ref().metadata().map(|m| m.len()).unwrap_or(0))
                .sum();
            if written >= target {
                break;
            }
        }
    }
    write_relations(&mut relations, &block)?;
    for w in [&mut events, &mut base, &mut entities, &mut relations] {
        w.flush()?;
    }
    std::fs::write(dir.join("events.count"), event.to_string())?;
    let total = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum();
    Ok(total)
}

fn write_relations(w: &mut impl Write, block: &[(u64, u64, u64, u64)]) -> std::io::Result<()> {
    for (r, _, _, _) in block {
        quad(
            w,
            &format!("{R}relation_{r}"),
            &format!("{RDF}type"),
            &format!("<{S}Relation>"),
            Some("wikidata"),
        )?;
    }
    for (r, e, _, _) in block {
        quad(
            w,
            &format!("{R}relation_{r}"),
            &format!("{RDF}subject"),
            &format!("<{R}event_{e}>"),
            Some("wikidata"),
        )?;
    }
    for (r, _, o, _) in block {
        quad(
            w,
            &format!("{R}relation_{r}"),
            &format!("{RDF}object"),
            &format!("<{R}entity_{o}>"),
            Some("wikidata"),
        )?;
    }
    for (r, _, _, k) in block {
        let p = if *k == 0 { "P710" } else { "P1029" };
        quad(
            w,
            &format!("{R}relation_{r}"),
            &format!("{SEM}roleType"),
            &format!("<{WDT}{p}>"),
            Some("wikidata"),
        )?;
    }
    Ok(())
}

/// A `/proc/self/status` value in kB (`VmRSS`, `VmHWM`), or 0 where unavailable.
fn status_kb(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// The child: reads the dump once and prints `records wall_s bytes rss_before_kb hwm_kb`.
fn child(dir: &Path, sample: u64) {
    let paths = resolve_inputs(dir, &["*.nq".to_string()]).unwrap();
    let bytes: u64 = paths
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .sum();
    let rss_before = status_kb("VmRSS:");
    let mut opts = ReaderOptions::new();
    opts.insert("sample".into(), sample.into());
    let start = Instant::now();
    let mut records = 0u64;
    let mut errors = 0u64;
    for item in open_set("eventkg", &paths, &opts).unwrap() {
        match item {
            Ok(r) => {
                records += 1;
                std::hint::black_box(r);
            }
            Err(_) => errors += 1,
        }
    }
    let wall = start.elapsed().as_secs_f64();
    println!(
        "RESULT {records} {errors} {wall:.3} {bytes} {rss_before} {}",
        status_kb("VmHWM:")
    );
}

fn main() {
    if let Ok(dir) = std::env::var("EVENTKG_BENCH_CHILD") {
        let sample = std::env::var("EVENTKG_BENCH_SAMPLE")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1000);
        child(Path::new(&dir), sample);
        return;
    }
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this binary without it,
    // and then it must not write gigabytes.
    if !std::env::args().any(|a| a == "--bench") {
        println!("eventkg_read: skipped (run it with `cargo bench`)");
        return;
    }
    let sizes: Vec<u64> = std::env::var("EVENTKG_BENCH_SIZES_MB")
        .unwrap_or_else(|_| "100,1024".to_string())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let sample: u64 = std::env::var("EVENTKG_BENCH_SAMPLE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let keep = std::env::var("EVENTKG_BENCH_DIR").ok().map(PathBuf::from);
    let temp = tempfile::tempdir().unwrap();
    let root = keep.clone().unwrap_or_else(|| temp.path().to_path_buf());
    let exe = std::env::current_exe().unwrap();
    println!(
        "eventkg_read: sample = {sample}, dumps under {}",
        root.display()
    );
    println!(
        "{:>9} {:>10} {:>8} {:>8} {:>8} {:>14} {:>16} {:>13}",
        "dump MB",
        "events",
        "records",
        "wall s",
        "MB/s",
        "gen RSS MB",
        "RSS before MB",
        "peak RSS MB"
    );
    for mb in sizes {
        let dir = root.join(format!("dump_{mb}mb"));
        let _bytes: u64 = if dir.join("events.nq").is_file() && keep.is_some() {
            std::fs::read_dir(&dir)
                .unwrap()
                .filter_map(Result::ok)
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        } else {
            generate(&dir, mb * 1_000_000).unwrap()
        };
        let gen_rss = status_kb("VmRSS:");
        let events = std::fs::read_to_string(dir.join("events.count")).unwrap_or_default();
        let out = Command::new(&exe)
            .env("EVENTKG_BENCH_CHILD", &dir)
            .env("EVENTKG_BENCH_SAMPLE", sample.to_string())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let Some(line) = text.lines().find(|l| l.starts_with("RESULT ")) else {
            eprintln!("child failed: {}", String::from_utf8_lossy(&out.stderr));
            continue;
        };
        let v: Vec<f64> = line[7..]
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        let (records, errors, wall, read_bytes, rss_before, hwm) =
            (v[0], v[1], v[2], v[3], v[4], v[5]);
        assert_eq!(errors, 0.0);
        println!(
            "{:>9.0} {:>10} {:>8.0} {:>8.2} {:>8.1} {:>14.1} {:>16.1} {:>13.1}",
            read_bytes / 1e6,
            events.trim(),
            records,
            wall,
            read_bytes / 1e6 / wall,
            gen_rss as f64 / 1024.0,
            rss_before / 1024.0,
            hwm / 1024.0
        );
        if keep.is_none() {
            std::fs::remove_dir_all(&dir).ok();
        }
    }
}
