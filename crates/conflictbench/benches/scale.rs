//! Paper scale: the bundled `kre` SQuAD recipe on a synthetic SQuAD v2.0 source, the
//! `recall` EventKG recipe on a synthetic EventKG dump and the ConflictBank-style recipes
//! (`conflictbank-popqa`, `conflictbank-mquake`) on the shared PopQA and MQuAKE samples
//! repeated and perturbed to any number of facts (`common/cb_facts.rs`), each built by the real binary against
//! an in-process mock model ([`cb_mock::stand_in`], every step and the reader check answered),
//! online, through the Batch API and through batch files, and offline (the rules, no model),
//! at two sizes or more.
//!
//! `cargo bench -p conflictbench --bench scale` writes, for each size, the sources (seeded,
//! every question and event distinct; a few unanswerable questions, events without an English
//! description and events with too few items, so the recipes' filters have work), then runs
//! for each recipe, size and mode a fresh build in a child process:
//! - `offline`: `--backend offline` (the steps' rules; no reader, so no reader check);
//! - `online`: `--base-url` the mock;
//! - `batch`: `--batch` (input files of at most 48 MB, below the mock's request limit), the
//!   mock's Files and Batch APIs answering at the first poll;
//! - `files`: `--batch-dir DIR` (`--base-url` the mock, which names the endpoint and is never
//!   called by the build); while the build exits with 4 ("waiting for answers"),
//!   `conflictbench batches run-dir DIR --base-url` answers the shards against the mock and the
//!   build runs again.
//!
//! Per run it prints the wall time (every child of the mode together), the requests the mock
//! answered, the build's own counts from `runs.jsonl` (calls sent upstream and cache hits,
//! summed over the runs of a mode), the peak resident memory of the build child (`VmHWM` of
//! `/proc/PID/status`, *sampled* every 10 ms while it runs, the last value read kept: a peak
//! in the child's last milliseconds can be missed; for `files` the largest of its rounds, and
//! apart the peak of its first run, which only writes files, and the largest of the later
//! runs, which import answers and write the next files), the cache file's size (with its WAL),
//! the rows written, and whether the output folder (`runs.jsonl` aside) is the online build's
//! byte for byte (`=online`: when `online` ran before it for that recipe and size). Then, per
//! recipe and mode, the growth from each size to the next: items, calls, time, time per call,
//! peak memory, and the memory added per row kept.
//!
//! Settings (environment): `SCALE_KRE`, `SCALE_RECALL` and `SCALE_CB`, comma-separated sizes in
//! answerable questions, in events and in facts of each ConflictBank-style recipe (default
//! `2500,10000`, `12500,50000` and `10000,100000`; empty skips the recipe); `SCALE_MODES` (default `offline,online,batch,files`);
//! `SCALE_CONCURRENCY` (the build's `--concurrency`, default 16); `SCALE_SEED` (default 7);
//! `SCALE_KEEP=DIR` keeps the sources and outputs under `DIR` (a folder per source and per
//! run) instead of temporary folders; `BENCH_QUICK=1` for sizes `200,800`, `400,1600` and
//! `200,800`; `SCALE_CB_DOMAINS` (default `popqa,mquake`) the ConflictBank recipes measured;
//! `SCALE_BATCH_WINDOW=N` gives `batch` and `files` builds `--batch-window N`; `SCALE_BIN=PATH`
//! measures another conflictbench binary (an earlier version, to compare with).
//! Under `cargo test --all-targets` the binary only prints that it was skipped.
#![allow(clippy::print_stdout, clippy::print_stderr)]

#[path = "common/cb_facts.rs"]
mod cb_facts;
mod common;

use cb_mock::MockServer;
use common::{build_command, clean, env_or, run_sampled, workdir};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// The exit code of a `--batch-dir` build that waits for answers.
const WAITING: i32 = 4;
/// The most `--batch-dir` rounds a build may take before the bench gives up on it.
const MAX_ROUNDS: usize = 50;

/// A small seeded generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn new(seed: u64, stream: u64) -> Rng {
        Rng((seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len() as u64) as usize]
    }
}

/// `n` written in base-`syllables.len()` syllables, `digits` of them, capitalised: distinct
/// numbers give distinct words of the same length.
fn word(mut n: u64, syllables: &[&str], digits: usize) -> String {
    let base = syllables.len() as u64;
    let mut w = String::new();
    for _ in 0..digits {
        w.push_str(syllables[(n % base) as usize]);
        n /= base;
    }
    w[..1].to_uppercase() + &w[1..]
}

const TOWN: [&str; 16] = [
    "ka", "ri", "mo", "te", "lu", "sa", "ne", "vo", "di", "ba", "fe", "go", "hu", "pi", "ra", "zo",
];
const PERSON: [&str; 16] = [
    "ber", "tin", "dal", "mor", "wen", "gas", "lor", "ven", "hal", "cor", "fen", "dor", "mar",
    "sel", "tor", "wil",
];
const RIVER: [&str; 12] = [
    "ava", "ela", "ira", "ona", "uma", "eda", "ola", "ina", "era", "ysa", "ana", "esa",
];
const FIRST: [&str; 12] = [
    "Alice", "Bruno", "Clara", "Dmitri", "Edith", "Felix", "Greta", "Hugo", "Ines", "Jonas",
    "Karin", "Lucas",
];

/// Writes `raw/squad_v2/dev-v2.0.json`: `questions` answerable questions, three a paragraph
/// (who founded the town, when, which river), fifty paragraphs an article, and one
/// unanswerable question every tenth paragraph.
fn write_squad(raw: &Path, questions: usize, seed: u64) {
    let mut rng = Rng::new(seed, 1);
    let mut articles = Vec::new();
    let mut paragraphs = Vec::new();
    let mut asked = 0;
    for p in 0.. {
        if asked >= questions {
            break;
        }
        let town = word(p as u64, &TOWN, 5) + "ford";
        let river = word(p as u64 * 7 + rng.below(7), &RIVER, 3);
        let founder = format!("{} {}son", rng.pick(&FIRST), word(2 * p as u64, &PERSON, 3));
        let builder = format!(
            "{} {}son",
            rng.pick(&FIRST),
            word(2 * p as u64 + 1, &PERSON, 3)
        );
        let year = (1100 + rng.below(800)).to_string();
        let context = format!(
            "{town} is a market town on the {river} river. It was founded by {founder} in {year}, and {builder} later built its first stone bridge. Timber from the hills still floats down the {river} to {town}."
        );
        let start = |answer: &str| {
            context[..context.find(answer).expect("in context")]
                .chars()
                .count()
        };
        let mut qas = Vec::new();
        for (k, (question, answer)) in [
            (format!("Who founded {town}?"), founder.as_str()),
            (format!("In what year was {town} founded?"), year.as_str()),
            (format!("Which river flows past {town}?"), river.as_str()),
        ]
        .into_iter()
        .enumerate()
        {
            if asked < questions {
                qas.push(json!({
                    "id": format!("q{p:06}-{k}"), "question": question,
                    "answers": [{"text": answer, "answer_start": start(answer)}],
                    "is_impossible": false
                }));
                asked += 1;
            }
        }
        if p % 10 == 9 {
            qas.push(json!({
                "id": format!("q{p:06}-x"), "question": format!("Who was the first mayor of {town}?"),
                "answers": [], "plausible_answers": [{"text": builder, "answer_start": start(&builder)}],
                "is_impossible": true
            }));
        }
        paragraphs.push(json!({"context": context, "qas": qas}));
        if paragraphs.len() == 50 {
            let title = format!("Towns {}", articles.len() + 1);
            articles.push(json!({"title": title, "paragraphs": std::mem::take(&mut paragraphs)}));
        }
    }
    if !paragraphs.is_empty() {
        let title = format!("Towns {}", articles.len() + 1);
        articles.push(json!({"title": title, "paragraphs": paragraphs}));
    }
    let dir = raw.join("squad_v2");
    std::fs::create_dir_all(&dir).unwrap();
    let doc = json!({"version": "v2.0", "data": articles});
    std::fs::write(dir.join("dev-v2.0.json"), doc.to_string()).unwrap();
}

const EVENT: [&str; 16] = [
    "al", "be", "cy", "do", "ex", "fa", "gi", "ho", "iv", "ju", "ky", "le", "mu", "ny", "os", "pa",
];
const PLACE: [&str; 12] = [
    "dun", "kel", "mar", "tor", "ves", "bran", "cal", "fos", "gar", "lin", "nor", "rav",
];
const KINDS: [&str; 6] = [
    "Accord",
    "Council",
    "Expedition",
    "Festival",
    "Campaign",
    "Summit",
];
const MONTHS: [&str; 12] = [
    "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12",
];

const R: &str = "http://eventKG.l3s.uni-hannover.de/resource/";
const SEM: &str = "http://semanticweb.cs.vu.nl/2009/11/sem/";
const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";
const LABEL: &str = "http://www.w3.org/2000/01/rdf-schema#label";
const GRAPH: &str = "http://eventKG.l3s.uni-hannover.de/graph/";

/// Writes an EventKG dump of `events` events to `raw/eventkg/`: each with an English label,
/// begin and end days, a place and a participant (places and people shared between events);
/// every 20th has only a German description (`no_description`), every 25th no end, place or
/// participant (`too_few_items`).
fn write_eventkg(raw: &Path, events: usize, seed: u64) {
    let mut rng = Rng::new(seed, 2);
    let (places, actors) = (events / 8 + 20, events / 4 + 20);
    let (mut ev, mut base, mut ent) = (String::new(), String::new(), String::new());
    let date = |rng: &mut Rng, year: u64| {
        format!(
            "\"{year}-{}-{}\"^^<http://www.w3.org/2001/XMLSchema#date>",
            rng.pick(&MONTHS),
            10 + rng.below(19)
        )
    };
    for i in 0..events {
        let e = format!("<{R}event_{}>", 1_000_000 + i);
        let name = format!("{} {}", word(i as u64, &EVENT, 4), KINDS[i % KINDS.len()]);
        let g = |graph: &str| format!("<{GRAPH}{graph}>");
        writeln!(ev, "{e} <{RDF_TYPE}> <{SEM}Event> {} .", g("event_kg")).unwrap();
        writeln!(ev, "{e} <{LABEL}> \"{name}\"@en {} .", g("wikidata")).unwrap();
        let lang = if i % 20 == 19 { "de" } else { "en" };
        writeln!(
            ev,
            "{e} <http://purl.org/dc/terms/description> \"A {} of the synthetic chronicle, number {i}.\"@{lang} {} .",
            KINDS[i % KINDS.len()].to_lowercase(),
            g("wikipedia_en")
        )
        .unwrap();
        let year = 1100 + rng.below(780);
        let unit = "<http://eventKG.l3s.uni-hannover.de/schema/startUnitType> <http://www.w3.org/2006/time#unitDay>";
        writeln!(
            base,
            "{e} <{SEM}hasBeginTimeStamp> {} {} .",
            date(&mut rng, year),
            g("event_kg")
        )
        .unwrap();
        writeln!(base, "{e} {unit} .").unwrap();
        if i % 25 == 24 {
            continue;
        }
        let end_year = year + 1 + rng.below(3);
        writeln!(
            base,
            "{e} <{SEM}hasEndTimeStamp> {} {} .",
            date(&mut rng, end_year),
            g("event_kg")
        )
        .unwrap();
        writeln!(
            base,
            "{e} <http://eventKG.l3s.uni-hannover.de/schema/endUnitType> <http://www.w3.org/2006/time#unitDay> ."
        )
        .unwrap();
        let place = rng.below(places as u64);
        let actor = rng.below(actors as u64);
        writeln!(
            base,
            "{e} <{SEM}hasPlace> <{R}entity_{}> {} .",
            1_000_000 + place,
            g("wikidata")
        )
        .unwrap();
        writeln!(
            base,
            "{e} <{SEM}hasActor> <{R}entity_{}> {} .",
            2_000_000 + actor,
            g("wikidata")
        )
        .unwrap();
    }
    for p in 0..places {
        let e = format!("<{R}entity_{}>", 1_000_000 + p);
        let label = word(p as u64, &PLACE, 3) + "burg";
        writeln!(ent, "{e} <{RDF_TYPE}> <{SEM}Place> <{GRAPH}event_kg> .").unwrap();
        writeln!(ent, "{e} <{LABEL}> \"{label}\"@en <{GRAPH}wikidata> .").unwrap();
    }
    let mut names = Rng::new(seed, 3);
    for a in 0..actors {
        let e = format!("<{R}entity_{}>", 2_000_000 + a);
        let label = format!("{} {}ssen", names.pick(&FIRST), word(a as u64, &PERSON, 3));
        writeln!(ent, "{e} <{RDF_TYPE}> <{SEM}Actor> <{GRAPH}event_kg> .").unwrap();
        writeln!(ent, "{e} <{LABEL}> \"{label}\"@en <{GRAPH}wikidata> .").unwrap();
    }
    let dir = raw.join("eventkg");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("events.nq"), ev).unwrap();
    std::fs::write(dir.join("relations_event_base.nq"), base).unwrap();
    std::fs::write(dir.join("entities.nq"), ent).unwrap();
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Recipe {
    Kre,
    Recall,
    CbPopqa,
    CbMquake,
}

impl Recipe {
    fn name(self) -> &'static str {
        match self {
            Recipe::Kre => "kre",
            Recipe::Recall => "recall",
            Recipe::CbPopqa | Recipe::CbMquake => "conflictbank",
        }
    }

    fn domain(self) -> &'static str {
        match self {
            Recipe::Kre => "squad",
            Recipe::Recall => "eventkg",
            Recipe::CbPopqa => "popqa",
            Recipe::CbMquake => "mquake",
        }
    }

    /// The recipe's name in the tables.
    fn label(self) -> &'static str {
        match self {
            Recipe::Kre => "kre",
            Recipe::Recall => "recall",
            Recipe::CbPopqa => "conflictbank-popqa",
            Recipe::CbMquake => "conflictbank-mquake",
        }
    }

    fn write_source(self, raw: &Path, items: usize, seed: u64) {
        match self {
            Recipe::Kre => write_squad(raw, items, seed),
            Recipe::Recall => write_eventkg(raw, items, seed),
            Recipe::CbPopqa => cb_facts::write_popqa(&common::repo(), raw, items),
            Recipe::CbMquake => cb_facts::write_mquake(&common::repo(), raw, items),
        }
    }
}

/// What one build (one recipe, size and mode) measured.
#[derive(Debug, Clone)]
struct Run {
    recipe: Recipe,
    items: usize,
    mode: String,
    result: Figures,
}

#[derive(Debug, Clone, Copy, Default)]
struct Figures {
    wall_s: f64,
    mock_calls: u64,
    upstream: u64,
    cache_hits: u64,
    peak_mb: f64,
    cache_mb: f64,
    rows: u64,
    rounds: usize,
    /// `files`: the first build run's peak (it writes files, imports nothing) and the largest
    /// of the later runs' (each imports answers, then writes the next files).
    write_peak_mb: f64,
    import_peak_mb: f64,
    /// The output folder is the online build's, byte for byte (`None`: no online build of
    /// this recipe and size to compare with).
    same_as_online: Option<bool>,
}

/// The binary (`SCALE_BIN`, else this one) with none of the caller's endpoint, key or log
/// settings.
fn binary() -> Command {
    match std::env::var_os("SCALE_BIN") {
        Some(bin) => clean(Path::new(&bin)),
        None => clean(Path::new(env!("CARGO_BIN_EXE_conflictbench"))),
    }
}

/// `--batch-window N` when `SCALE_BATCH_WINDOW` sets one.
fn window_args() -> Vec<String> {
    std::env::var("SCALE_BATCH_WINDOW")
        .ok()
        .filter(|w| !w.trim().is_empty())
        .map(|w| vec!["--batch-window".to_owned(), w.trim().to_owned()])
        .unwrap_or_default()
}

/// A digest of each file of a build's output folder but `runs.jsonl` (by its path in the
/// folder), to compare the outputs of two modes.
fn digest(dir: &Path) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n != "runs.jsonl") {
                let mut h = DefaultHasher::new();
                std::fs::read(&p).unwrap().hash(&mut h);
                let name = p.strip_prefix(dir).unwrap().display().to_string();
                out.insert(name, h.finish());
            }
        }
    }
    out
}

/// `conflictbench build RECIPE --domains DOMAIN` of `raw` into `out`, the repository's
/// recipes and prompts, then `extra` (the backend and its model).
fn build(recipe: Recipe, raw: &Path, out: &Path, concurrency: usize, extra: &[&str]) -> Command {
    build_command(
        binary(),
        (recipe.name(), recipe.domain()),
        (raw, out),
        concurrency,
        extra,
    )
}

/// One build of `recipe` on `raw` in `mode` against `mock` (one for every mode of a recipe and
/// size: the endpoint is in the cache keys and the manifest, so the modes' files can be the
/// same); `online`: the digest of this recipe and size's online build, when it ran (an online
/// build sets it).
fn measure(
    mock: &MockServer,
    (recipe, items, raw): (Recipe, usize, &Path),
    mode: &str,
    concurrency: usize,
    online: &mut Option<BTreeMap<String, u64>>,
) -> Run {
    let base = mock.base_url();
    let (requests, submissions) = (mock.request_count(), mock.batch_submissions().len());
    let (_tmp, work) = workdir("SCALE_KEEP", &format!("{}-{items}-{mode}", recipe.label()));
    let out = work.join("out");
    let mut f = Figures::default();
    let start = Instant::now();
    let model = ["--backend", "openai", "--model", "m"];
    match mode {
        "offline" => {
            let extra = ["--backend", "offline"];
            let (code, stderr, peak) = run_sampled(build(recipe, raw, &out, concurrency, &extra));
            assert_eq!(code, Some(0), "offline build failed: {stderr}");
            f.peak_mb = peak as f64 / 1024.0;
            f.rounds = 1;
        }
        "online" | "batch" => {
            let mut extra = model.to_vec();
            extra.extend(["--base-url", base.as_str()]);
            let window = window_args();
            if mode == "batch" {
                // Input files below the mock's 64 MiB request limit (a provider's is 200 MB).
                extra.extend(["--batch", "--batch-poll-ms", "20", "--batch-max-mb", "48"]);
                extra.extend(window.iter().map(String::as_str));
            }
            let (code, stderr, peak) = run_sampled(build(recipe, raw, &out, concurrency, &extra));
            assert_eq!(code, Some(0), "{mode} build failed: {stderr}");
            f.peak_mb = peak as f64 / 1024.0;
            f.rounds = 1;
        }
        "files" => files_rounds(recipe, raw, &work, &out, &base, concurrency, &mut f),
        other => panic!("unknown mode {other:?} (offline, online, batch, files)"),
    }
    f.wall_s = start.elapsed().as_secs_f64();
    let submitted = mock.batch_submissions().len() - submissions;
    f.mock_calls = (mock.request_count() - requests + submitted) as u64;
    let dir = out.join(recipe.name()).join(recipe.domain());
    let files = digest(&dir);
    if mode == "online" {
        *online = Some(files);
    } else if let Some(o) = online.as_ref() {
        f.same_as_online = Some(*o == files);
        let differ: Vec<&String> = o
            .keys()
            .chain(files.keys())
            .filter(|k| o.get(*k) != files.get(*k))
            .collect();
        if !differ.is_empty() {
            eprintln!(
                "scale: {} {items} {mode}: not the online build's: {differ:?}",
                recipe.label()
            );
        }
    }
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    f.rows = manifest["rows"].as_u64().unwrap_or(0);
    for line in std::fs::read_to_string(dir.join("runs.jsonl"))
        .unwrap()
        .lines()
    {
        let r: Value = serde_json::from_str(line).unwrap();
        f.upstream += r["llm"]["upstream_calls"].as_u64().unwrap_or(0);
        f.cache_hits += r["llm"]["cache_hits"].as_u64().unwrap_or(0);
    }
    f.cache_mb = ["llm-cache.sqlite", "llm-cache.sqlite-wal"]
        .iter()
        .filter_map(|n| std::fs::metadata(out.join(n)).ok())
        .map(|m| m.len() as f64 / 1e6)
        .sum();
    Run {
        recipe,
        items,
        mode: mode.to_owned(),
        result: f,
    }
}

/// A `--batch-dir` build: build runs, each followed by `batches run-dir` against the mock,
/// until the build ends; the peak is the largest of its runs'.
fn files_rounds(
    recipe: Recipe,
    raw: &Path,
    work: &Path,
    out: &Path,
    base: &str,
    concurrency: usize,
    f: &mut Figures,
) {
    let dir = work.join("batches");
    let dir_arg = dir.to_str().unwrap();
    let window = window_args();
    loop {
        // `--base-url` names the endpoint the answers come from (no call is made), so that
        // the files can be compared with the online build's.
        let mut extra = vec![
            "--backend",
            "openai",
            "--model",
            "m",
            "--base-url",
            base,
            "--batch-dir",
            dir_arg,
        ];
        extra.extend(window.iter().map(String::as_str));
        let (code, stderr, peak) = run_sampled(build(recipe, raw, out, concurrency, &extra));
        let peak = peak as f64 / 1024.0;
        f.peak_mb = f.peak_mb.max(peak);
        if f.rounds == 0 {
            f.write_peak_mb = peak;
        } else {
            f.import_peak_mb = f.import_peak_mb.max(peak);
        }
        f.rounds += 1;
        match code {
            Some(0) => break,
            Some(WAITING) if f.rounds < MAX_ROUNDS => {}
            _ => panic!("files build round {} exited {code:?}: {stderr}", f.rounds),
        }
        let (files, lines) = input_files(&dir);
        eprintln!(
            "scale: {} files round {}: {files} input files in all, the longest {lines} lines",
            recipe.label(),
            f.rounds
        );
        let mut exec = binary();
        exec.args(["batches", "run-dir", dir_arg, "--base-url", base]);
        let (code, stderr, _) = run_sampled(exec);
        assert_eq!(code, Some(0), "batches run-dir failed: {stderr}");
    }
}

/// The input files of a batch folder (`requests-NNNNN.jsonl`) and the most lines one holds.
fn input_files(dir: &Path) -> (usize, usize) {
    let mut longest = 0;
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("requests-") && !name.ends_with(".output.jsonl") {
            n += 1;
            let text = std::fs::read_to_string(&p).unwrap();
            longest = longest.max(text.lines().count());
        }
    }
    (n, longest)
}

fn sizes(var: &str, default: &str, quick: &str) -> Vec<usize> {
    let fallback = if std::env::var("BENCH_QUICK").is_ok_and(|v| v == "1") {
        quick
    } else {
        default
    };
    std::env::var(var)
        .unwrap_or_else(|_| fallback.to_owned())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

fn row(r: &Run) -> String {
    let f = r.result;
    let files_peak = |mb: f64| {
        if r.mode == "files" {
            format!("{mb:.0}")
        } else {
            "-".to_owned()
        }
    };
    let same = match f.same_as_online {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "-",
    };
    format!(
        "| {} | {} | {} | {:.1} | {} | {} | {} | {} | {:.0} | {} | {} | {:.1} | {} | {same} |",
        r.recipe.label(),
        r.mode,
        r.items,
        f.wall_s,
        f.mock_calls,
        f.upstream,
        f.cache_hits,
        f.rounds,
        f.peak_mb,
        files_peak(f.write_peak_mb),
        files_peak(f.import_peak_mb),
        f.cache_mb,
        f.rows
    )
}

/// The growth from one size to the next of the same recipe and mode.
fn growth(a: &Run, b: &Run) -> String {
    let (x, y) = (a.result, b.result);
    let per_call = |f: Figures| 1e3 * f.wall_s / f.mock_calls.max(1) as f64;
    let per_row = if y.rows > x.rows {
        format!(
            "{:.2} KB",
            (y.peak_mb - x.peak_mb) * 1024.0 / (y.rows - x.rows) as f64
        )
    } else {
        "-".to_owned()
    };
    // The peak's growth, and for `files` that of its writing run and its importing runs.
    let times = |p: f64, q: f64| format!("x{:.2}", q / p.max(1e-9));
    let runs = if a.mode == "files" {
        format!(
            "{} | {}",
            times(x.write_peak_mb, y.write_peak_mb),
            times(x.import_peak_mb, y.import_peak_mb)
        )
    } else {
        "- | -".to_owned()
    };
    format!(
        "| {} | {} | {} -> {} | x{:.2} | x{:.2} | x{:.2} | {:.3} -> {:.3} | {:.0} -> {:.0} | {} | {runs} | {} | {:.1} -> {:.1} KB |",
        a.recipe.label(),
        a.mode,
        a.items,
        b.items,
        b.items as f64 / a.items as f64,
        y.mock_calls as f64 / x.mock_calls.max(1) as f64,
        y.wall_s / x.wall_s,
        per_call(x),
        per_call(y),
        x.peak_mb,
        y.peak_mb,
        times(x.peak_mb, y.peak_mb),
        per_row,
        x.peak_mb * 1024.0 / x.rows.max(1) as f64,
        y.peak_mb * 1024.0 / y.rows.max(1) as f64,
    )
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this binary without it.
    if !std::env::args().any(|a| a == "--bench") {
        println!("scale: skipped (run it with `cargo bench`)");
        return;
    }
    let plan = [
        (Recipe::Kre, sizes("SCALE_KRE", "2500,10000", "200,800")),
        (
            Recipe::Recall,
            sizes("SCALE_RECALL", "12500,50000", "400,1600"),
        ),
        (
            Recipe::CbPopqa,
            sizes("SCALE_CB", "10000,100000", "200,800"),
        ),
        (
            Recipe::CbMquake,
            sizes("SCALE_CB", "10000,100000", "200,800"),
        ),
    ];
    // `SCALE_CB_DOMAINS`: which of the ConflictBank recipes (default `popqa,mquake`).
    let cb = std::env::var("SCALE_CB_DOMAINS").unwrap_or_else(|_| "popqa,mquake".to_owned());
    let plan: Vec<_> = plan
        .into_iter()
        .filter(|(r, _)| {
            r.name() != "conflictbank" || cb.split(',').any(|d| d.trim() == r.domain())
        })
        .collect();
    let modes: Vec<String> = std::env::var("SCALE_MODES")
        .unwrap_or_else(|_| "offline,online,batch,files".to_owned())
        .split(',')
        .map(|m| m.trim().to_owned())
        .filter(|m| !m.is_empty())
        .collect();
    let concurrency = env_or("SCALE_CONCURRENCY", 16);
    let seed = env_or("SCALE_SEED", 7u64);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let header = "| recipe | mode | items | wall s | mock calls | upstream | cache hits | build runs | peak MB | write run MB | import runs MB | cache MB | rows | =online |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|";
    println!("{header}");
    let total = Instant::now();
    let mut runs = Vec::new();
    for (recipe, items) in &plan {
        for &n in items {
            let (_tmp, raw) = workdir("SCALE_KEEP", &format!("{}-{n}-raw", recipe.label()));
            let t = Instant::now();
            recipe.write_source(&raw, n, seed);
            eprintln!(
                "scale: {} source of {n} items written in {:.1} s",
                recipe.label(),
                t.elapsed().as_secs_f64()
            );
            let mut online = None;
            let mock = rt.block_on(MockServer::start(cb_mock::stand_in::model()));
            for mode in &modes {
                let r = measure(&mock, (*recipe, n, &raw), mode, concurrency, &mut online);
                println!("{}", row(&r));
                runs.push(r);
            }
        }
    }
    println!(
        "\nAll of it in {:.0} s.\n\n{header}",
        total.elapsed().as_secs_f64()
    );
    for r in &runs {
        println!("{}", row(r));
    }
    println!(
        "\n| recipe | mode | items | items x | mock calls x | wall time x | ms per call | peak MB | peak x | write run x | import runs x | peak added per row kept | peak per row |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for (i, a) in runs.iter().enumerate() {
        let next = runs[i + 1..]
            .iter()
            .find(|b| b.recipe == a.recipe && b.mode == a.mode);
        if let Some(b) = next {
            println!("{}", growth(a, b));
        }
    }
}
