//! Slots kept busy by a build of several recipes: `build kre` over CoS-E, e-CARE, SQuAD and
//! MuSiQue against the in-process mock model ([`cb_mock::stand_in`]) with a latency on every
//! reply, read from the mock's journal.
//!
//! `cargo bench -p conflictbench --bench overlap` writes a source of `OVERLAP_ITEMS` records a
//! domain (default 700): copies of the `../shared/data` samples, each copy's ids and question
//! (or premise) made distinct (`-copyN`, so no two items share a prompt and a cache answer),
//! cut to that many by `--limit`. It then builds the four domains in one
//! `conflictbench build kre` with `--concurrency OVERLAP_CONCURRENCY` (default 256) against a
//! fresh mock answering after `OVERLAP_LATENCY_MS` (default 500), and from the journal (each
//! entry's arrival; its reply goes out a latency later) gives the mean fraction of the slots
//! in flight from the first call until the last 2 % of the calls start: the recipes' ends,
//! where the resample chains leave slots idle, are inside that window, the build's own tail
//! is not. `OVERLAP_BEFORE=BINARY` measures another binary the same way first (an earlier
//! `conflictbench` that built the recipes one after another). Without `../shared/data` the
//! bench says so and measures nothing (under `CI=true` it fails).
//! Under `cargo test --all-targets` the binary only prints that it was skipped.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

use cb_mock::{JournalEntry, MockServer};
use common::{clean, env_or, repo};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// `s` with `-copyN` appended for copy `n` > 0 (copy 0 keeps the original).
fn copied(s: &str, n: usize) -> String {
    if n == 0 {
        s.to_owned()
    } else {
        format!("{s}-copy{n}")
    }
}

/// Writes `copies` copies of the JSONL file `from` to `to`, the string fields `id` and `text`
/// (when given) of each copy made distinct, so that no copy's prompts are another's.
fn copy_jsonl(from: &Path, to: &Path, (id, field): (&str, Option<&str>), copies: usize) {
    let text = std::fs::read_to_string(from).unwrap();
    let mut out = String::new();
    for n in 0..copies {
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let mut v: Value = serde_json::from_str(line).unwrap();
            let old = v[id].as_str().unwrap().to_owned();
            v[id] = Value::String(copied(&old, n));
            if let Some(t) = field {
                let old = v[t].as_str().unwrap().to_owned();
                v[t] = Value::String(copied(&old, n));
            }
            out.push_str(&v.to_string());
            out.push('\n');
        }
    }
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::write(to, out).unwrap();
}

/// Writes `copies` copies of the SQuAD v2.0 file `from` to `to`: every article repeated, its
/// questions' ids and texts made distinct.
fn copy_squad(from: &Path, to: &Path, copies: usize) {
    let doc: Value = serde_json::from_slice(&std::fs::read(from).unwrap()).unwrap();
    let mut data = Vec::new();
    for n in 0..copies {
        for article in doc["data"].as_array().unwrap() {
            let mut a = article.clone();
            for p in a["paragraphs"].as_array_mut().unwrap() {
                for q in p["qas"].as_array_mut().unwrap() {
                    let old = q["id"].as_str().unwrap().to_owned();
                    q["id"] = Value::String(copied(&old, n));
                    let old = q["question"].as_str().unwrap().to_owned();
                    q["question"] = Value::String(copied(&old, n));
                }
            }
            data.push(a);
        }
    }
    let out = serde_json::json!({ "version": doc["version"], "data": data });
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::write(to, out.to_string()).unwrap();
}

/// The four domains' sources under `raw`, at least `items` records each.
fn write_sources(shared: &Path, raw: &Path, items: usize) {
    let copies = |records: usize| items.div_ceil(records.max(1));
    let lines = |p: &Path| std::fs::read_to_string(p).unwrap().lines().count();
    let csqa = "commonsenseqa/dev_rand_split.v1.11.hf-layout.jsonl";
    let cose = "cos_e/cose_dev_v1.11.jsonl";
    let n = copies(lines(&shared.join(csqa)));
    copy_jsonl(
        &shared.join(csqa),
        &raw.join(csqa),
        ("id", Some("question")),
        n,
    );
    copy_jsonl(&shared.join(cose), &raw.join(cose), ("id", None), n);
    let ecare = "ecare/dev_full.jsonl";
    let n = copies(lines(&shared.join(ecare)));
    copy_jsonl(
        &shared.join(ecare),
        &raw.join(ecare),
        ("index", Some("premise")),
        n,
    );
    let musique = shared.join("musique/musique_ans_v1.0_train.sample.jsonl");
    let to = raw.join("musique/musique_ans_v1.0_dev.jsonl");
    let n = copies(lines(&musique));
    copy_jsonl(&musique, &to, ("id", Some("question")), n);
    let squad = shared.join("squad_v2/dev-v2.0.normans.json");
    let doc: Value = serde_json::from_slice(&std::fs::read(&squad).unwrap()).unwrap();
    let questions: usize = doc["data"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|a| a["paragraphs"].as_array().unwrap())
        .map(|p| p["qas"].as_array().unwrap().len())
        .sum();
    copy_squad(
        &squad,
        &raw.join("squad_v2/dev-v2.0.json"),
        copies(questions),
    );
}

/// Mean fraction of `slots` in flight (arrival to arrival + `latency`) from the first call
/// until the last 2 % of the calls start, with the calls and that window's length.
fn busy(journal: &[JournalEntry], latency: Duration, slots: usize) -> (f64, usize, f64) {
    let mut at: Vec<Instant> = journal.iter().map(|e| e.at).collect();
    at.sort();
    let (Some(&t0), n) = (at.first(), at.len()) else {
        return (0.0, 0, 0.0);
    };
    let t1 = at[(n * 98 / 100).min(n - 1)];
    let window = t1.duration_since(t0).as_secs_f64();
    let in_flight: f64 = at
        .iter()
        .map(|&a| {
            let (start, end) = (a.max(t0), (a + latency).min(t1));
            end.saturating_duration_since(start).as_secs_f64()
        })
        .sum();
    if std::env::var_os("OVERLAP_TRACE").is_some() {
        trace(&at, latency, slots);
    }
    (in_flight / (slots as f64 * window.max(1e-9)), n, window)
}

/// `OVERLAP_TRACE`: the calls in flight every half second, as a fraction of `slots`.
fn trace(at: &[Instant], latency: Duration, slots: usize) {
    let (t0, last) = (at[0], at[at.len() - 1] + latency);
    let mut t = t0;
    let mut line = String::new();
    while t < last {
        let n = at.iter().filter(|&&a| a <= t && t < a + latency).count();
        line.push_str(&format!(" {:.0}", n as f64 * 100.0 / slots as f64));
        t += Duration::from_millis(250);
    }
    eprintln!("in flight every 250 ms (% of the slots):{line}");
}

/// `bin`'s `build kre --domains DOMAINS` of `raw` into `out` against the mock at `base`.
fn kre(bin: &Path, domains: &str, (raw, out): (&Path, &Path), base: &str) -> Command {
    let slots: usize = env_or("OVERLAP_CONCURRENCY", 256);
    let items: usize = env_or("OVERLAP_ITEMS", 700);
    let mut cmd = clean(bin);
    cmd.args(["build", "kre", "--domains", domains, "--raw"])
        .arg(raw)
        .arg("--out")
        .arg(out)
        .arg("--recipes")
        .arg(repo().join("recipes"))
        .arg("--prompts")
        .arg(repo().join("prompts"))
        .args(["--no-progress", "--limit", &items.to_string()])
        .args(["--concurrency", &slots.to_string()])
        .args(["--backend", "openai", "--model", "m", "--base-url", base]);
    cmd
}

fn run(mut cmd: Command) {
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

const DOMAINS: &str = "cose,ecare,squad,musique";

/// One `build kre` of the four domains by `bin` against a fresh mock, said as the busy
/// fraction, the calls, the window and the whole wall time; with the mock.
fn measure(
    rt: &tokio::runtime::Runtime,
    bin: &Path,
    raw: &Path,
    out: &Path,
) -> (String, MockServer) {
    let latency = Duration::from_millis(env_or("OVERLAP_LATENCY_MS", 500));
    let slots: usize = env_or("OVERLAP_CONCURRENCY", 256);
    let mock = rt.block_on(MockServer::start(cb_mock::stand_in::model()));
    mock.set_latency(latency);
    let t = Instant::now();
    run(kre(bin, DOMAINS, (raw, out), &mock.base_url()));
    let wall = t.elapsed().as_secs_f64();
    let (fraction, calls, window) = busy(&mock.journal(), latency, slots);
    let said = format!(
        "{:.1} % of {slots} slots busy ({calls} calls, window {window:.1} s, wall {wall:.1} s)",
        fraction * 100.0
    );
    (said, mock)
}

/// `bin` builds each domain alone, one after another, against `mock` (no latency) into
/// `alone`: the files must be those of the build of all four at once in `out`.
fn same_as_alone(bin: &Path, raw: &Path, (out, alone): (&Path, &Path), mock: &MockServer) {
    mock.set_latency(Duration::ZERO);
    for domain in DOMAINS.split(',') {
        run(kre(bin, domain, (raw, alone), &mock.base_url()));
    }
    let diff = Command::new("diff")
        .args(["-r", "-x", "runs.jsonl", "-x", "llm-cache.sqlite*"])
        .args([out, alone])
        .output()
        .unwrap();
    assert!(
        diff.status.success(),
        "the recipes built at once differ from each built alone:\n{}",
        String::from_utf8_lossy(&diff.stdout)
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this binary without it.
    if !std::env::args().any(|a| a == "--bench") {
        println!("overlap: skipped (run it with `cargo bench`)");
        return;
    }
    let shared = repo().join("../shared/data");
    if !shared.join("ecare/dev_full.jsonl").is_file() {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(!ci, "CI=true and no {}", shared.display());
        println!("overlap: no {} (nothing measured)", shared.display());
        return;
    }
    let items: usize = env_or("OVERLAP_ITEMS", 700);
    // OVERLAP_KEEP=DIR keeps the sources (DIR/raw) and the builds (DIR/before, DIR/after,
    // DIR/alone).
    let tmp = tempfile::tempdir().unwrap();
    let keep = std::env::var_os("OVERLAP_KEEP").map(PathBuf::from);
    let dir = keep.as_deref().unwrap_or(tmp.path());
    for sub in ["raw", "before", "after", "alone"] {
        let _ = std::fs::remove_dir_all(dir.join(sub));
    }
    let raw = dir.join("raw");
    write_sources(&shared, &raw, items);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    if let Some(before) = std::env::var_os("OVERLAP_BEFORE") {
        let (m, _) = measure(&rt, Path::new(&before), &raw, &dir.join("before"));
        println!("before ({}): {m}", Path::new(&before).display());
    }
    let this = Path::new(env!("CARGO_BIN_EXE_conflictbench"));
    let (m, mock) = measure(&rt, this, &raw, &dir.join("after"));
    println!("this build: {m}");
    same_as_alone(this, &raw, (&dir.join("after"), &dir.join("alone")), &mock);
    println!("this build: the same files as each domain built alone");
}
