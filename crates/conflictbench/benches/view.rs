//! The viewer at two sizes: `conflictbench view` over a synthetic KRE build of 6,000 and of
//! 36,000 rows (the released cose rows of `../shared/data/kre/cose.json`, copied with fresh
//! ids until the size is reached, a reader column on each row, a reject for every tenth).
//!
//! `cargo bench -p conflictbench --bench view` prints, per size: the time from starting the
//! server to the first page served (every row indexed: counts, rejects, reader verdicts), to
//! the end of the audit that runs behind it (checks and the rating sample), the time of the
//! overview once served, of a page filtered by an audit check, by a reader verdict, by a
//! reject reason, and of a full-text search (the median of 5 requests each), then the server's
//! peak resident memory (`VmHWM` of `/proc/PID/status`, read after the requests) and the
//! growth from the first size to the second. `VIEW_SIZES` (default `6000,36000`) sets the
//! sizes. Then the CPU time the server spends left alone (the audit done, no request) over
//! `VIEW_IDLE_S` seconds (default 20) at the first size: the sum over its threads of
//! `/proc/PID/task/*/schedstat`. `VIEW_BIN` runs another `conflictbench` binary instead (an
//! earlier one, to compare). Under `cargo test --all-targets` the binary only prints that it
//! was skipped.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

use common::{clean, env_or, repo};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Writes `dir/kre/cose/` with `n` rows and n/10 rejects.
fn write_build(dir: &Path, released: &[Value], n: usize) {
    let d = dir.join("kre/cose");
    std::fs::create_dir_all(&d).unwrap();
    let mut rows = std::io::BufWriter::new(std::fs::File::create(d.join("cose.jsonl")).unwrap());
    let mut rejects =
        std::io::BufWriter::new(std::fs::File::create(d.join("rejects.jsonl")).unwrap());
    for i in 0..n {
        let mut r = released[i % released.len()].clone();
        let o = r.as_object_mut().unwrap();
        if let Some(g) = o.remove(" golden_context") {
            o.insert("golden_context".into(), g);
        }
        o.insert("id".into(), json!(format!("kre-cose/{i}")));
        o.insert("domain".into(), json!("cose"));
        let passed = i % 7 != 0;
        o.insert("reader".into(), json!({"model": "reader", "endpoint": "e", "votes": 1, "checks": [
            {"check": "negative", "expected": "B", "picks": ["B"], "how": ["letter"], "pick": "B", "passed": true},
            {"check": "control", "expected": "A", "picks": ["A"], "how": ["letter"], "pick": "A", "passed": passed}]}));
        writeln!(rows, "{r}").unwrap();
        if i % 10 == 0 {
            let reason = ["reader_disagrees", "echo", "bad_json"][i % 3];
            let rej = json!({"id": format!("rej-{i}"), "origin": format!("x:{i}"), "stage": "negative_context",
                "reason": reason, "detail": "synthetic", "raw_response": "…", "attempts": 2});
            writeln!(rejects, "{rej}").unwrap();
        }
    }
    rows.flush().unwrap();
    rejects.flush().unwrap();
}

fn get(port: u16, path: &str) -> (u16, usize) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let status = String::from_utf8_lossy(&out[..out.len().min(12)])
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, out.len())
}

fn body(port: u16, path: &str) -> String {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

fn median_ms(port: u16, path: &str) -> f64 {
    let mut t: Vec<f64> = (0..5)
        .map(|_| {
            let start = Instant::now();
            let (status, _) = get(port, path);
            assert_eq!(status, 200, "{path}");
            start.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[2]
}

fn peak_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// CPU time of every thread of `pid` so far, in seconds.
fn cpu_s(pid: u32) -> f64 {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    let ns: u64 = tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    ns as f64 / 1e9
}

/// The `conflictbench` binary measured: `VIEW_BIN`, else this build's.
fn binary() -> std::path::PathBuf {
    std::env::var_os("VIEW_BIN")
        .map(Into::into)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_conflictbench").into())
}

type Measured = (f64, f64, Vec<(&'static str, f64)>, u64, Option<f64>);

/// (first page ms, audit done ms, per-page medians, peak KiB, CPU seconds over `idle`
/// seconds left alone when asked) for a build of `n` rows.
fn measure(released: &[Value], n: usize, idle: Option<u64>) -> Measured {
    let d = tempfile::tempdir().unwrap();
    write_build(d.path(), released, n);
    let start = Instant::now();
    let mut child = clean(&binary())
        .arg("view")
        .arg(d.path())
        .args(["--port", "0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdout.read_line(&mut line).unwrap();
    let port: u16 = line
        .split("http://127.0.0.1:")
        .nth(1)
        .and_then(|s| s.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    assert_eq!(get(port, "/").0, 200);
    let first = start.elapsed().as_secs_f64() * 1000.0;
    while body(port, "/").contains("cb-auditing") {
        std::thread::sleep(Duration::from_millis(20));
    }
    let audited = start.elapsed().as_secs_f64() * 1000.0;
    let idle_cpu = idle.map(|secs| {
        let before = cpu_s(child.id());
        std::thread::sleep(Duration::from_secs(secs));
        cpu_s(child.id()) - before
    });
    let row = first_row(port);
    let pages = [
        ("overview", "/"),
        ("check filter", "/rows?check=kre_golden_context_short"),
        ("verdict filter", "/rows?verdict=failed"),
        ("reject reason", "/rejects?reason=1"),
        ("search", "/rows?q=bookshelf"),
        ("row", row.as_str()),
    ];
    let times = pages
        .iter()
        .map(|(name, p)| (*name, median_ms(port, p)))
        .collect();
    std::thread::sleep(Duration::from_millis(50));
    let peak = peak_kb(child.id());
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdout);
    (first, audited, times, peak, idle_cpu)
}

/// A row's address, as the rows page links it (`/row/N` before the links named the file).
fn first_row(port: u16) -> String {
    let page = body(port, "/rows");
    page.split("class=\"cb-open\" href=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or("/row/0")
        .replace("&amp;", "&")
        .replace("&#x2f;", "/")
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this binary without it.
    if !std::env::args().any(|a| a == "--bench") {
        println!("view: skipped (run it with `cargo bench`)");
        return;
    }
    let data = repo().join("../shared/data/kre/cose.json");
    let released: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(&data).unwrap_or_else(|e| panic!("{}: {e}", data.display())),
    )
    .unwrap();
    let sizes: Vec<usize> = env_or::<String>("VIEW_SIZES", "6000,36000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let idle: u64 = env_or("VIEW_IDLE_S", 20);
    let mut peaks = Vec::new();
    for (k, n) in sizes.into_iter().enumerate() {
        let (first, audited, times, peak, idle_cpu) =
            measure(&released, n, (k == 0 && idle > 0).then_some(idle));
        println!("view: {n} rows: first page {first:.0} ms (from the start: every row indexed)");
        println!("view: {n} rows: audit done {audited:.0} ms (from the start: checks and sample)");
        for (name, ms) in times {
            println!("view: {n} rows: {name:<15} {ms:>8.1} ms");
        }
        println!("view: {n} rows: peak memory {:.1} MB", peak as f64 / 1024.0);
        if let Some(cpu) = idle_cpu {
            println!(
                "view: {n} rows: idle CPU {cpu:.3} s over {idle} s left alone ({:.2} % of a core)",
                100.0 * cpu / idle as f64
            );
        }
        peaks.push((n, peak));
    }
    if let [(a, pa), (b, pb), ..] = peaks[..] {
        println!(
            "view: {a} -> {b} rows (x{:.1}): peak memory x{:.2}",
            b as f64 / a as f64,
            pb as f64 / pa as f64
        );
    }
}
