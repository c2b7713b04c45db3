//! Throughput and memory of the fact readers (`popqa`, `mquake`) on large synthetic arrays.
//!
//! `cargo bench -p cb-readers --bench facts_read` writes, for each size in
//! `FACTS_BENCH_SIZES` (default `10000,100000` elements), a PopQA array (the team's sample
//! `raw/popqa/popqa.json` repeated with new ids, half of the records with their paragraphs as
//! Python-literal text) and an MQuAKE-CF array (`raw/mquake/MQuAKE-CF.json` repeated with new
//! case ids, read with `distinct = false`), then reads each in a child process of its own, so
//! that the peak resident set (`VmHWM`) of each read is measured alone, and prints a table.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use cb_readers::{open, ReaderOptions};
use serde_json::{json, Value};

fn raw(rel: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../raw")
        .join(rel);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Writes `n` elements made from `base`, each changed by `vary`, as one indented array.
fn write_array(path: &Path, n: usize, base: &[Value], vary: impl Fn(&mut Value, usize)) -> u64 {
    let mut w = BufWriter::new(std::fs::File::create(path).unwrap());
    w.write_all(b"[\n").unwrap();
    for i in 0..n {
        let mut v = base[i % base.len()].clone();
        vary(&mut v, i);
        if i > 0 {
            w.write_all(b",\n").unwrap();
        }
        serde_json::to_writer_pretty(&mut w, &v).unwrap();
    }
    w.write_all(b"\n]\n").unwrap();
    w.flush().unwrap();
    std::fs::metadata(path).unwrap().len()
}

/// The paragraphs as Python's `str()` of the list writes them.
fn python_literal(paragraphs: &Value) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"));
    let items: Vec<String> = paragraphs
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            format!(
                "{{'title': {}, 'text': {}, 'is_supporting': True}}",
                quote(p["title"].as_str().unwrap()),
                quote(p["text"].as_str().unwrap())
            )
        })
        .collect();
    format!("[{}]", items.join(", "))
}

/// A `/proc/self/status` value in kB, or 0 where unavailable.
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

/// The child: reads one file, prints `records errors wall_s rss_before_kb hwm_kb`.
fn child(reader: &str, path: &Path) {
    let mut opts = ReaderOptions::new();
    if reader == "mquake" {
        opts.insert("distinct".into(), json!(false));
    }
    let rss_before = status_kb("VmRSS:");
    let start = Instant::now();
    let (mut records, mut errors) = (0u64, 0u64);
    for item in open(reader, path, &opts).unwrap() {
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
        "RESULT {records} {errors} {wall:.3} {rss_before} {}",
        status_kb("VmHWM:")
    );
}

fn main() {
    if let (Ok(reader), Ok(path)) = (
        std::env::var("FACTS_BENCH_READER"),
        std::env::var("FACTS_BENCH_FILE"),
    ) {
        child(&reader, Path::new(&path));
        return;
    }
    if !std::env::args().any(|a| a == "--bench") {
        println!("facts_read: skipped (run it with `cargo bench`)");
        return;
    }
    let sizes: Vec<usize> = std::env::var("FACTS_BENCH_SIZES")
        .unwrap_or_else(|_| "10000,100000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let popqa = raw("popqa/popqa.json");
    let mquake = raw("mquake/MQuAKE-CF.json");
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    println!(
        "{:>7} {:>9} {:>8} {:>9} {:>8} {:>10} {:>14} {:>12}",
        "reader",
        "elements",
        "file MB",
        "records",
        "wall s",
        "records/s",
        "RSS before MB",
        "peak RSS MB"
    );
    for n in sizes {
        for reader in ["popqa", "mquake"] {
            let path = dir.path().join(format!("{reader}_{n}.json"));
            let bytes = if reader == "popqa" {
                write_array(&path, n, &popqa, |v, i| {
                    v["id"] = json!(i);
                    if i % 2 == 1 && v["paragraphs"].is_array() {
                        v["paragraphs"] = Value::String(python_literal(&v["paragraphs"]));
                    }
                })
            } else {
                write_array(&path, n, &mquake, |v, i| v["case_id"] = json!(i))
            };
            let out = Command::new(&exe)
                .env("FACTS_BENCH_READER", reader)
                .env("FACTS_BENCH_FILE", &path)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            let Some(line) = text.lines().find_map(|l| l.strip_prefix("RESULT ")) else {
                eprintln!(
                    "{reader} {n}: no result: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                continue;
            };
            let f: Vec<f64> = line.split(' ').filter_map(|x| x.parse().ok()).collect();
            let [records, errors, wall, before, peak] = f[..] else {
                continue;
            };
            assert_eq!(errors, 0.0, "{reader} {n}: read errors");
            println!(
                "{reader:>7} {n:>9} {:>8.1} {records:>9} {wall:>8.2} {:>10.0} {:>14.1} {:>12.1}",
                bytes as f64 / 1e6,
                records / wall,
                before / 1024.0,
                peak / 1024.0
            );
        }
    }
}
