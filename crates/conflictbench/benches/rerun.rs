//! Re-running a build from its cache (issue 37): the bundled `kre` CoS-E recipe on copies of
//! the shared CommonsenseQA v1.11 / CoS-E v1.11 dev samples, built cold against an in-process
//! mock model, re-run warm on the same cache (no call, every answer a cache hit) and built
//! offline, by two binaries side by side in one run: BEFORE (`RERUN_BEFORE=PATH`, e.g. the
//! landed main's release build) and AFTER (this checkout's binary, as cargo builds it for the
//! bench: release).
//!
//! `cargo bench -p conflictbench --bench rerun` writes, for each size, a source of `copies`
//! copies of the shared samples with the ids suffixed (`-c0`, `-c1`, ...; 300 questions a
//! copy) and each question marked with its copy (` (set N)`), so that every copy asks requests
//! of its own and the cache holds an answer for each call, starts one mock for that size (the cache key holds the endpoint, so the warm runs
//! need the cold run's), then for each binary:
//! - `cold`: a build into a fresh folder against the mock (the negative explanation answered
//!   from the prompt, the reader check by [`cb_mock::stand_in`]);
//! - `warm`: the same command on the same folder and cache, `RERUN_REPEAT` times; each must
//!   send the mock nothing;
//! - `offline`: `--backend offline` into a folder of its own, `RERUN_REPEAT` times.
//!
//! Warm and offline runs alternate between the binaries, so a machine that slows down in the
//! middle slows both. With a BEFORE binary it then checks that AFTER reads BEFORE's cache
//! (`cross`: AFTER re-run on a copy of BEFORE's folder must send the mock nothing), and that
//! every output file of both binaries, cold and offline, is the same byte for byte (the
//! cache file and `runs.jsonl` left out: they hold times).
//!
//! Per run it prints the wall time (for warm and offline the fastest of the repeats: the
//! machine may be shared), the time per item, the requests the mock answered, the cache hits
//! of the run (`runs.jsonl`), the peak resident memory (`VmHWM` sampled every 10 ms, the
//! largest of the repeats) and the rows written; then, per size and mode, BEFORE's time over
//! AFTER's.
//!
//! Settings (environment): `RERUN_BEFORE` (the earlier binary; without it only AFTER runs),
//! `RERUN_COPIES` (comma-separated, default `8,41`: 2,400 and 12,300 questions; `BENCH_QUICK=1`
//! for `1,5`), `RERUN_REPEAT` (default 3), `RERUN_CONCURRENCY` (the build's `--concurrency`,
//! default 16), `RERUN_KEEP=DIR` keeps the sources and outputs under `DIR`. Under
//! `cargo test --all-targets` the binary only prints that it was skipped.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;
#[path = "../../../tests/common/fs.rs"]
mod fs;
use fs::copy_dir;

use cb_mock::{reader_script, MockServer, Reply};
use common::{build_command, children_cpu_s, clean, env_or, repo, run_sampled, workdir};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The shared samples the sources are copied from.
const QUESTIONS: &str = "commonsenseqa/dev_rand_split.v1.11.hf-layout.jsonl";
const EXPLANATIONS: &str = "cos_e/cose_dev_v1.11.jsonl";

/// Writes `copies` copies of the shared samples under `raw`, every id suffixed with its copy.
/// The samples are the first 300 lines of each file, and only 70 of the questions find their
/// explanation among the first 300 explanations: each of the others is given the id of an
/// explanation no question has, in order, so that every question joins (its golden context
/// is then another question's explanation, which is no harder to check).
fn write_source(raw: &Path, copies: usize) -> usize {
    let data = repo().join("../shared/data");
    let read = |rel: &str| -> Vec<Value> {
        std::fs::read_to_string(data.join(rel))
            .unwrap_or_else(|e| panic!("cannot read ../shared/data/{rel}: {e}"))
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let (mut questions, explanations) = (read(QUESTIONS), read(EXPLANATIONS));
    let id = |v: &Value| v["id"].as_str().unwrap().to_owned();
    let asked: std::collections::HashSet<String> = questions.iter().map(id).collect();
    let explained: std::collections::HashSet<String> = explanations.iter().map(id).collect();
    let mut spare = explanations.iter().map(id).filter(|e| !asked.contains(e));
    for q in &mut questions {
        if !explained.contains(&id(q)) {
            if let Some(e) = spare.next() {
                q["id"] = Value::String(e);
            }
        }
    }
    for (rel, records) in [(QUESTIONS, &questions), (EXPLANATIONS, &explanations)] {
        let mut out = String::new();
        for c in 0..copies {
            for v in records {
                let mut v = v.clone();
                v["id"] = Value::String(format!("{}-c{c}", id(&v)));
                // Each copy's questions read differently, so that every copy asks requests
                // of its own (the cache holds one answer a call, as for a real source).
                if let Some(Value::String(q)) = v.get_mut("question") {
                    q.push_str(&format!(" (set {c})"));
                }
                out.push_str(&v.to_string());
                out.push('\n');
            }
        }
        let path = raw.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, out).unwrap();
    }
    questions.len() * copies
}

/// The mock model: a short passage that names the chosen answer for the negative
/// explanation, the option the context names for the reader check.
fn model() -> cb_mock::Responder {
    cb_mock::responder(|req| {
        let last = req.last_user();
        if let Some(rest) = last.split("Chosen answer: ").nth(1) {
            let chosen = rest.lines().next().unwrap_or("").trim();
            return Reply::Content(format!(
                "Most people in this situation turn to {chosen}, because that is where such everyday needs are usually met."
            ));
        }
        if last.contains("Answer with the letter") {
            let picked = reader_script::parse(last)
                .map_or_else(|| "None".to_owned(), |q| reader_script::follow_context(&q));
            return Reply::Content(picked);
        }
        cb_mock::stand_in::answer(req)
    })
}

/// What one kind of run of one binary measured (the fastest repeat's time, the largest
/// peak).
#[derive(Debug, Clone, Copy, Default)]
struct Figures {
    wall_s: f64,
    cpu_s: f64,
    mock_calls: u64,
    cache_hits: u64,
    peak_mb: f64,
    rows: u64,
    runs: usize,
}

impl Figures {
    fn add(&mut self, r: Once) {
        let Once {
            wall_s,
            cpu_s,
            mock_calls,
            cache_hits,
            peak_kb,
            rows,
        } = r;
        let first = self.runs == 0;
        self.wall_s = if first {
            wall_s
        } else {
            self.wall_s.min(wall_s)
        };
        self.cpu_s = if first { cpu_s } else { self.cpu_s.min(cpu_s) };
        self.mock_calls = self.mock_calls.max(mock_calls);
        self.cache_hits = cache_hits;
        self.peak_mb = self.peak_mb.max(peak_kb as f64 / 1024.0);
        self.rows = rows;
        self.runs += 1;
    }
}

/// `conflictbench build kre --domains cose` of `raw` into `out` with `bin`, then `extra`.
fn build(
    bin: &Path,
    raw: &Path,
    out: &Path,
    concurrency: usize,
    extra: &[&str],
) -> std::process::Command {
    build_command(clean(bin), ("kre", "cose"), (raw, out), concurrency, extra)
}

/// What one build measured.
#[derive(Debug, Clone, Copy)]
struct Once {
    wall_s: f64,
    /// User and system CPU time of the build process.
    cpu_s: f64,
    /// Requests the mock answered during the build.
    mock_calls: u64,
    /// Cache hits of the run (`runs.jsonl`).
    cache_hits: u64,
    peak_kb: u64,
    rows: u64,
}

/// One build.
fn run_once(mock: &MockServer, cmd: std::process::Command, out: &Path, what: &str) -> Once {
    let before = mock.request_count() as u64;
    let cpu = children_cpu_s();
    let start = Instant::now();
    let (code, stderr, peak) = run_sampled(cmd);
    let wall = start.elapsed().as_secs_f64();
    let cpu = children_cpu_s() - cpu;
    assert_eq!(code, Some(0), "{what} build failed: {stderr}");
    let calls = mock.request_count() as u64 - before;
    let dir = out.join("kre/cose");
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let runs = std::fs::read_to_string(dir.join("runs.jsonl")).unwrap();
    let last: Value = serde_json::from_str(runs.lines().last().unwrap()).unwrap();
    let hits = last["llm"]["cache_hits"].as_u64().unwrap_or(0);
    Once {
        wall_s: wall,
        cpu_s: cpu,
        mock_calls: calls,
        cache_hits: hits,
        peak_kb: peak,
        rows: manifest["rows"].as_u64().unwrap_or(0),
    }
}

/// Every file under `dir` but the cache and `runs.jsonl`, by path relative to `dir`.
fn outputs(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                todo.push(p);
            } else if name != "runs.jsonl" && !name.starts_with("llm-cache.sqlite") {
                let rel = p.strip_prefix(dir).unwrap().to_path_buf();
                files.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    files
}

/// Panics unless `a` and `b` hold the same files with the same bytes.
fn assert_same(a: &Path, b: &Path, what: &str) -> usize {
    let (x, y) = (outputs(a), outputs(b));
    let names = |m: &BTreeMap<PathBuf, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&x), names(&y), "{what}: different files");
    for (name, bytes) in &x {
        assert!(bytes == &y[name], "{what}: {} differs", name.display());
    }
    x.len()
}

/// The binaries compared: BEFORE (when given) and AFTER.
fn binaries() -> Vec<(&'static str, PathBuf)> {
    let mut bins = Vec::new();
    if let Some(before) = std::env::var_os("RERUN_BEFORE") {
        let before = PathBuf::from(before);
        assert!(
            before.is_file(),
            "RERUN_BEFORE: no file {}",
            before.display()
        );
        bins.push(("before", before));
    }
    bins.push(("after", PathBuf::from(env!("CARGO_BIN_EXE_conflictbench"))));
    bins
}

/// One size: every binary cold, warm and offline, then the cross checks.
fn measure_size(
    rt: &tokio::runtime::Runtime,
    copies: usize,
    repeat: usize,
    concurrency: usize,
) -> Vec<(String, usize, String, Figures)> {
    let bins = binaries();
    let (_raw_tmp, raw) = workdir("RERUN_KEEP", &format!("raw-{copies}"));
    let items = write_source(&raw, copies);
    let mock = rt.block_on(MockServer::start(model()));
    let base = mock.base_url();
    let online = [
        "--backend",
        "openai",
        "--model",
        "m",
        "--base-url",
        base.as_str(),
    ];
    let (_work_tmp, work) = workdir("RERUN_KEEP", &format!("out-{copies}"));
    let dir = |label: &str, mode: &str| work.join(format!("{label}-{mode}"));
    let mut figures: BTreeMap<(&str, &str), Figures> = BTreeMap::new();
    for (label, bin) in &bins {
        let out = dir(label, "model");
        let r = run_once(
            &mock,
            build(bin, &raw, &out, concurrency, &online),
            &out,
            "cold",
        );
        figures.entry((*label, "cold")).or_default().add(r);
    }
    for _ in 0..repeat {
        for (label, bin) in &bins {
            let out = dir(label, "model");
            let r = run_once(
                &mock,
                build(bin, &raw, &out, concurrency, &online),
                &out,
                "warm",
            );
            assert_eq!(r.mock_calls, 0, "{label}'s warm re-run called the model");
            figures.entry((*label, "warm")).or_default().add(r);
            let out = dir(label, "offline");
            let offline = ["--backend", "offline"];
            let r = run_once(
                &mock,
                build(bin, &raw, &out, concurrency, &offline),
                &out,
                "offline",
            );
            figures.entry((*label, "offline")).or_default().add(r);
        }
    }
    if bins.len() == 2 {
        let cross = work.join("cross");
        copy_dir(&dir("before", "model"), &cross);
        let r = run_once(
            &mock,
            build(&bins[1].1, &raw, &cross, concurrency, &online),
            &cross,
            "cross",
        );
        assert_eq!(
            r.mock_calls, 0,
            "AFTER on BEFORE's cache called the model: the cache keys changed"
        );
        figures.entry(("after", "cross")).or_default().add(r);
        for mode in ["model", "offline"] {
            let n = assert_same(&dir("before", mode), &dir("after", mode), mode);
            eprintln!("rerun: {copies} copies, {mode}: {n} output files identical");
        }
        assert_same(&dir("before", "model"), &cross, "cross");
    }
    figures
        .into_iter()
        .map(|((label, mode), f)| (label.to_owned(), items, mode.to_owned(), f))
        .collect()
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this binary without it.
    if !std::env::args().any(|a| a == "--bench") {
        println!("rerun: skipped (run it with `cargo bench`)");
        return;
    }
    let quick = std::env::var("BENCH_QUICK").is_ok_and(|v| v == "1");
    let copies: Vec<usize> = std::env::var("RERUN_COPIES")
        .unwrap_or_else(|_| if quick { "1,5" } else { "8,41" }.to_owned())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let repeat = env_or("RERUN_REPEAT", 3usize).max(1);
    let concurrency = env_or("RERUN_CONCURRENCY", 16usize);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut all = Vec::new();
    for &c in &copies {
        let t = Instant::now();
        let runs = measure_size(&rt, c, repeat, concurrency);
        eprintln!(
            "rerun: {c} copies measured in {:.0} s",
            t.elapsed().as_secs_f64()
        );
        all.extend(runs);
    }
    println!("| items | binary | mode | wall s | ms per item | CPU s | CPU ms per item | mock calls | cache hits | peak MB | rows | runs |\n|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (label, items, mode, f) in &all {
        println!(
            "| {items} | {label} | {mode} | {:.2} | {:.3} | {:.2} | {:.3} | {} | {} | {:.0} | {} | {} |",
            f.wall_s,
            1e3 * f.wall_s / *items as f64,
            f.cpu_s,
            1e3 * f.cpu_s / *items as f64,
            f.mock_calls,
            f.cache_hits,
            f.peak_mb,
            f.rows,
            f.runs
        );
    }
    println!("\n| items | mode | before s | after s | before / after | before CPU s | after CPU s | before / after (CPU) |\n|---:|---|---:|---:|---:|---:|---:|---:|");
    for (label, items, mode, f) in &all {
        if label != "after" {
            continue;
        }
        let b = all
            .iter()
            .find(|(l, i, m, _)| l == "before" && i == items && m == mode);
        if let Some((_, _, _, b)) = b {
            println!(
                "| {items} | {mode} | {:.2} | {:.2} | x{:.2} | {:.2} | {:.2} | x{:.2} |",
                b.wall_s,
                f.wall_s,
                b.wall_s / f.wall_s,
                b.cpu_s,
                f.cpu_s,
                b.cpu_s / f.cpu_s.max(0.01)
            );
        }
    }
}
