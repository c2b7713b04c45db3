//! The promise matrix (issue 44): every way a call travels (online, an endpoint pool, the Batch
//! API, batch files answered by `batches run-dir`) x {one recipe, every KRE recipe together,
//! the two ConflictBank-style recipes together} x {uninterrupted, SIGINT, SIGKILL at a random
//! seeded point, budget stop}. Each cell runs its
//! build (and, with batch files, the executor between the build's runs) again until it ends, and
//! checks the build's four promises:
//!
//! 1. **No request twice.** The requests the mock received (online, from a pool, in batches, from
//!    the executor) are the distinct requests; the only ones asked again are among those in
//!    flight at the signal (received, their answers never kept), counted and printed. With batch
//!    files every request is written into one input file (two only when an output left it
//!    unanswered).
//! 2. **The budget.** Every run of a budget cell spent at most `--max-cost`, as the mock billed it
//!    and as the build's `runs.jsonl` reports it.
//! 3. **Counts.** Each recipe's `runs.jsonl` lines report its own calls: over the cell's runs, the
//!    calls each recipe reports sent add up to its calls in the uninterrupted build, plus at most
//!    the requests asked again after a signal, less at most those whose answers a killed run
//!    kept unreported; the last run counts every call of the recipe, sent or found cached, once.
//! 4. **Files.** The build folder is the one an uninterrupted online build writes (the
//!    endpoint's name and the cache keys made from it aside, which differ for a pool).
//! 5. **The same requests.** The distinct requests the mock received (the structured-output
//!    probes aside) are those of the uninterrupted online build, body for body: batch files and
//!    batches carry the online requests.
//!
//! A new transport or mode joins by a row of the table at the end (`row!`), not a test of its
//! own. The random point of a signal is printed with its seed (`CB_KILL_SEED` repeats it).

#![allow(clippy::print_stderr)] // each cell prints its seed and its counts

#[path = "common/batch_dir.rs"]
mod batch_dir;
mod common;
#[path = "common/eval_runs.rs"]
mod eval_runs;
#[path = "common/seed.rs"]
mod seed;

use batch_dir::{assert_same, WAITING};
use cb_mock::{canonical_json, responder, ChatRequest, MockServer, Reply, Responder};
use common::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How a call travels.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Way {
    Online,
    /// Two endpoints of the same model.
    Pool,
    BatchApi,
    /// `--batch-dir`, answered by `conflictbench batches run-dir`.
    Files,
}

/// Which recipes build together.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Recipes {
    /// KRE SQuAD: two model steps and the reader check.
    One,
    /// `build kre`: every default KRE recipe at once.
    Kre,
    /// `build conflictbank`: `conflictbank-popqa` and `conflictbank-mquake` at once (five
    /// writer steps, a reader check of ten questions), on the whole bundled samples: six
    /// PopQA facts, 23 MQuAKE facts of which 22 reach the model steps (the one fact of its
    /// relation is refused `no_other_value` before any).
    Cb,
}

impl Recipes {
    /// The benchmark's folder under `--out` (its recipes are `BENCHMARK/DOMAIN`).
    fn benchmark(self) -> &'static str {
        match self {
            Recipes::One | Recipes::Kre => "kre",
            Recipes::Cb => "conflictbank",
        }
    }

    /// The longest chain of requests a row makes one after another. With batch files a build
    /// run moves each row one link on (a request's answer comes from the executor between
    /// runs), so an uninterrupted build ends in its `chain() + 1`th run.
    fn chain(self) -> usize {
        match self {
            Recipes::One | Recipes::Kre => CHAIN,
            Recipes::Cb => CB_CHAIN,
        }
    }
}

/// What happens to the first run.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Stop {
    Uninterrupted,
    /// SIGINT at a random point (the requests received so far).
    Sigint,
    /// SIGKILL at a random point.
    Sigkill,
    /// `--max-cost` half of what the build costs (the KRE cell: a third), every run (a third
    /// could not pay for the largest call of the one-recipe cell at its most: its prompt and
    /// `max_tokens`).
    Budget,
}

/// Records read per recipe: the cell's size (every recipe's steps and reader check run; the
/// ConflictBank recipes read their samples whole).
const LIMIT: &str = "4";
/// Calls in flight at once.
const CONCURRENCY: &str = "3";
/// The longest chain of requests a row of the cell's recipes makes one after another: KRE
/// SQuAD's and MuSiQue's two writer steps (distractors, negative context), then up to seven
/// reader questions (negative, coherent, residual, plausible, grounded, control, answer set).
/// With batch files a build run moves each row one link on (a request's answer comes from
/// the executor between runs), so an uninterrupted build ends in its `CHAIN + 1`th run.
const CHAIN: usize = 9;
/// The same for the ConflictBank-style recipes, as their batch-files build takes it: their
/// writer steps one after another (the semantic evidence after its description), then the
/// reader check's questions (each evidence's plausibility its own question since
/// `plausible_questions`, so none is found in the cache from another's).
const CB_CHAIN: usize = 13;

/// A run's answer from the model stand-ins: CoS-E, ECQA and e-CARE explanations by
/// [`model_reply`], everything else (SQuAD and MuSiQue steps, the reader check, the
/// structured-output probe) by [`cb_mock::stand_in`]. Each answer's usage (about 4 characters a
/// token, as the mock counts) is added to `billed`: at 1 USD a million tokens in and out, the
/// micro-USD the mock billed.
fn billing(billed: Arc<AtomicU64>) -> Responder {
    responder(move |req: &ChatRequest| {
        let all = req.request_text();
        let reply = if all.contains("give a reason why \"") || all.contains("explains why \"") {
            model_reply(req)
        } else {
            cb_mock::stand_in::answer(req)
        };
        match reply {
            Reply::Content(content) => {
                let tokens = |chars: usize| chars.div_ceil(4) as u64;
                let usage = (tokens(req.prompt_chars()), tokens(content.chars().count()));
                billed.fetch_add(usage.0 + usage.1, Ordering::Relaxed);
                Reply::ContentWith {
                    content,
                    finish_reason: "stop".into(),
                    usage: Some(usage),
                }
            }
            other => other,
        }
    })
}

/// One recipe's line of `runs.jsonl`: the calls it reports, every model's layer together.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Reported {
    calls: u64,
    upstream: u64,
    hits: u64,
    usd: f64,
}

impl Reported {
    fn of(line: &Value) -> Reported {
        let mut r = Reported::default();
        let mut add = |s: &Value| {
            r.calls += s["calls"].as_u64().unwrap_or(0);
            r.upstream += s["upstream_calls"].as_u64().unwrap_or(0);
            r.hits += s["cache_hits"].as_u64().unwrap_or(0);
            r.usd += s["spent_usd"].as_f64().unwrap_or(0.0);
        };
        add(&line["llm"]);
        if line.get("reader").is_some() {
            add(&line["reader"]);
        }
        if let Some(models) = line.get("models").and_then(Value::as_object) {
            models.values().for_each(&mut add);
        }
        r
    }
}

/// The uninterrupted online build of a recipe set, made once for every cell of the set.
struct Reference {
    /// Its folder, names normalised ([`normalise`]).
    files: BTreeMap<String, Vec<u8>>,
    /// Each recipe's (`kre/DOMAIN`) one line.
    lines: BTreeMap<String, Reported>,
    /// What the mock billed, USD.
    usd: f64,
    /// The requests it made.
    requests: u64,
    /// Its distinct requests (canonical JSON), the structured-output probes aside.
    bodies: BTreeSet<String>,
}

static ONE: tokio::sync::OnceCell<Reference> = tokio::sync::OnceCell::const_new();
static KRE: tokio::sync::OnceCell<Reference> = tokio::sync::OnceCell::const_new();
static CB: tokio::sync::OnceCell<Reference> = tokio::sync::OnceCell::const_new();

async fn reference(set: Recipes) -> &'static Reference {
    let cell = match set {
        Recipes::One => &ONE,
        Recipes::Kre => &KRE,
        Recipes::Cb => &CB,
    };
    cell.get_or_init(|| async move {
        let w = World::start(Way::Online, set).await;
        let o = w.build(None).output().await.unwrap();
        assert!(o.status.success(), "the reference build: {}", text(&o));
        let lines = w
            .recipes()
            .into_iter()
            .map(|r| {
                let lines = read_jsonl(&w.out.path().join(&r).join("runs.jsonl"));
                assert_eq!(lines.len(), 1);
                (r, Reported::of(&lines[0]))
            })
            .collect();
        for r in w.recipes() {
            let m = read_json(&w.out.path().join(&r).join("manifest.json"));
            assert!(
                m["rows"].as_u64() > Some(0),
                "{r}: the reference wrote no row"
            );
        }
        Reference {
            files: w.files(),
            lines,
            usd: w.billed_usd(),
            requests: w.received(),
            bodies: w.bodies(),
        }
    })
    .await
}

/// A cell's mocks and folders.
struct World {
    way: Way,
    set: Recipes,
    mocks: Vec<MockServer>,
    /// Tokens the mocks billed (micro-USD).
    billed: Arc<AtomicU64>,
    out: tempfile::TempDir,
    /// The batch files' folder.
    dir: tempfile::TempDir,
}

impl World {
    async fn start(way: Way, set: Recipes) -> World {
        let billed = Arc::new(AtomicU64::new(0));
        let mut mocks = vec![MockServer::start(billing(billed.clone())).await];
        if way == Way::Pool {
            mocks.push(MockServer::start(billing(billed.clone())).await);
        }
        for m in &mocks {
            // Requests overlap (in flight at a signal) without slowing the cell much.
            m.set_latency(Duration::from_millis(5));
            m.set_batch_settings(cb_mock::BatchSettings {
                completion_delay: Duration::from_millis(150),
                ..cb_mock::BatchSettings::default()
            });
        }
        World {
            way,
            set,
            mocks,
            billed,
            out: tempfile::tempdir().unwrap(),
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// `conflictbench build kre ...` of this cell, under `budget` (USD) when given.
    fn build(&self, budget: Option<&str>) -> tokio::process::Command {
        let raw = repo().join("raw").display().to_string();
        let out = self.out.path().display().to_string();
        let bench = self.set.benchmark();
        let mut a: Vec<String> = [bench, "--raw", &raw, "--out", &out, "--model", "m"]
            .map(String::from)
            .to_vec();
        if self.set == Recipes::One {
            a.extend(["--domains".into(), "squad".into()]);
        }
        let base = self.mocks[0].base_url();
        // The ConflictBank recipes read the bundled samples whole: every relation and both
        // kinds of MQuAKE edit (a real later object, a counterfactual one) reach the model.
        if self.set != Recipes::Cb {
            a.extend(["--limit".into(), LIMIT.into()]);
        }
        for (k, v) in [
            ("--concurrency", CONCURRENCY),
            ("--price-input", "1"),
            ("--price-output", "1"),
            ("--backoff-ms", "10"),
        ] {
            a.extend([k.into(), v.into()]);
        }
        match self.way {
            Way::Online => a.extend([
                "--backend".into(),
                "openai".into(),
                "--base-url".into(),
                base,
            ]),
            Way::Pool => {
                for m in &self.mocks {
                    a.extend(["--endpoint".into(), m.base_url()]);
                }
            }
            // The batch price is the online price, so that the manifests match an online build's.
            Way::BatchApi => a.extend(
                [
                    "--backend",
                    "openai",
                    "--base-url",
                    &base,
                    "--batch",
                    "--batch-poll-ms",
                    "20",
                ]
                .map(String::from),
            ),
            Way::Files => {
                let dir = self.dir.path().display().to_string();
                a.extend(
                    [
                        "--backend",
                        "openai",
                        "--base-url",
                        &base,
                        "--batch-dir",
                        &dir,
                    ]
                    .map(String::from),
                );
            }
        }
        if matches!(self.way, Way::BatchApi | Way::Files) {
            a.extend(["--batch-price-factor".into(), "1".into()]);
        }
        if let Some(b) = budget {
            a.extend(["--max-cost".into(), b.into()]);
        }
        let args: Vec<&str> = a.iter().map(String::as_str).collect();
        let mut cmd = common::build_command(&repo().join("recipes"), &args, &[]);
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    /// `conflictbench batches run-dir` on the batch folder, against the first mock.
    fn executor(&self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"));
        cmd.args(["batches", "run-dir"])
            .arg(self.dir.path())
            .args([
                "--base-url",
                &self.mocks[0].base_url(),
                "--concurrency",
                CONCURRENCY,
            ])
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    /// The recipes' folders (`BENCHMARK/DOMAIN`) built so far.
    fn recipes(&self) -> Vec<String> {
        let bench = self.set.benchmark();
        let Ok(entries) = std::fs::read_dir(self.out.path().join(bench)) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .map(|e| e.unwrap())
            .filter(|e| e.path().is_dir())
            .map(|e| format!("{bench}/{}", e.file_name().to_string_lossy()))
            .collect();
        names.sort();
        names
    }

    /// Every recipe's `runs.jsonl` lines.
    fn lines(&self) -> BTreeMap<String, Vec<Value>> {
        self.recipes()
            .into_iter()
            .map(|r| {
                let p = self.out.path().join(&r).join("runs.jsonl");
                let lines = if p.exists() {
                    read_jsonl(&p)
                } else {
                    Vec::new()
                };
                (r, lines)
            })
            .collect()
    }

    fn files(&self) -> BTreeMap<String, Vec<u8>> {
        let mut files = snapshot(&self.out.path().join(self.set.benchmark()));
        // The temporary files a killed build leaves (`.NAME.tmp-PID`): the next build removes them.
        files.retain(|name, _| !name.rsplit('/').next().unwrap_or(name).starts_with('.'));
        files
            .into_iter()
            .map(|(k, v)| (k, normalise(&String::from_utf8_lossy(&v)).into_bytes()))
            .collect()
    }

    fn billed_usd(&self) -> f64 {
        self.billed.load(Ordering::Relaxed) as f64 / 1e6
    }

    /// Requests received: online (every mock) and in batches.
    fn received(&self) -> u64 {
        self.mocks
            .iter()
            .map(|m| (m.request_count() + m.batch_submissions().len()) as u64)
            .sum()
    }

    /// The structured-output probes received (a schema asking for `{"ok": <boolean>}`).
    fn probes(&self) -> u64 {
        let probe = |e: &cb_mock::JournalEntry| {
            e.body["response_format"]["json_schema"]["schema"]["required"]
                == serde_json::json!(["ok"])
        };
        let each = self
            .mocks
            .iter()
            .map(|m| m.journal().iter().filter(|e| probe(e)).count());
        each.sum::<usize>() as u64
    }

    /// The distinct requests received (canonical JSON), the structured-output probes aside.
    fn bodies(&self) -> BTreeSet<String> {
        let probe = r#""required":["ok"]"#;
        let asked = self.asked().into_keys();
        asked.filter(|body| !body.contains(probe)).collect()
    }

    /// Every request received (canonical JSON), with how many times it came.
    fn asked(&self) -> BTreeMap<String, u64> {
        let mut seen = BTreeMap::new();
        for m in &self.mocks {
            let bodies = m.journal().into_iter().map(|e| e.body);
            let batched = m.batch_submissions().into_iter().map(|s| s.body);
            for body in bodies.chain(batched) {
                let mut key = String::new();
                canonical_json(&body, &mut key);
                *seen.entry(key).or_default() += 1;
            }
        }
        seen
    }

    /// Answers kept: cached by the build, and (batch files) written to output files.
    fn kept(&self) -> u64 {
        let cache = self.out.path().join("llm-cache.sqlite");
        let cached = if cache.exists() {
            cb_llm::Cache::open(&cache).unwrap().len().unwrap()
        } else {
            0
        };
        cached + self.output_lines().len() as u64
    }

    /// The custom ids of the batch folder's output lines.
    fn output_lines(&self) -> Vec<String> {
        let mut ids = Vec::new();
        for e in std::fs::read_dir(self.dir.path()).unwrap() {
            let p = e.unwrap().path();
            if p.to_string_lossy().ends_with(".output.jsonl") {
                ids.extend(read_jsonl(&p).iter().map(|l| l["custom_id"].to_string()));
            }
        }
        ids
    }
}

/// A build folder's text with what names the endpoint made alike: the mock's address and the
/// pool's name (`ENDPOINT`), the cache keys made from them (`KEY`: runs of 32 or more
/// hexadecimal digits) and the sizes of the files that hold them (`bytes`, `num_bytes`, `download_size`, `dataset_size`).
fn normalise(text: &str) -> String {
    let text = text.replace("pool:default", "ENDPOINT");
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(i) = rest.find("http://127.0.0.1:") {
        out.push_str(&rest[..i]);
        let after = &rest[i + "http://127.0.0.1:".len()..];
        let port = after
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(after.len());
        let after = &after[port..];
        rest = after.strip_prefix("/v1").unwrap_or(after);
        out.push_str("ENDPOINT");
    }
    out.push_str(rest);
    let mut keyless = String::with_capacity(out.len());
    let mut run = String::new();
    for c in out.chars() {
        if c.is_ascii_hexdigit() {
            run.push(c);
            continue;
        }
        keyless.push_str(if run.len() >= 32 { "KEY" } else { &run });
        run.clear();
        keyless.push(c);
    }
    keyless.push_str(if run.len() >= 32 { "KEY" } else { &run });
    keyless
        .lines()
        .map(|l| {
            let size = [
                "num_bytes: ",
                "\"bytes\": ",
                "download_size: ",
                "dataset_size: ",
            ];
            match size.iter().find_map(|k| l.find(k)) {
                Some(i) => format!("{}SIZE", &l[..i]),
                None => l.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A process of the cell (a build, or the executor of batch files) and what a signal did to it.
struct Ran {
    output: Output,
    /// Requests received and answers kept while it ran, when it was signalled.
    signalled: Option<(u64, u64)>,
}

/// Runs `cmd`; while `pending` holds a signal and its point (requests received), sends it
/// once that many requests came.
async fn run(
    w: &World,
    mut cmd: tokio::process::Command,
    pending: &mut Option<(Stop, u64)>,
) -> Ran {
    let (received, kept) = (w.received(), w.kept());
    let mut child = cmd.spawn().unwrap();
    let mut signalled = None;
    if let Some((stop, at)) = *pending {
        let t0 = Instant::now();
        loop {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            if w.received() >= at {
                match stop {
                    Stop::Sigint => {
                        let pid = child.id().unwrap().to_string();
                        let sent = std::process::Command::new("kill")
                            .args(["-INT", &pid])
                            .status()
                            .unwrap();
                        assert!(sent.success());
                    }
                    _ => child.start_kill().unwrap(),
                }
                *pending = None;
                signalled = Some(());
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(120), "no requests came");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    let output = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("the process did not end")
        .unwrap();
    Ran {
        signalled: signalled.map(|()| (w.received() - received, w.kept() - kept)),
        output,
    }
}

/// One build run of a cell: its exit, the `runs.jsonl` lines it added and what it spent (with
/// batch files, what the executor's following run was billed for the files it wrote).
struct BuildRun {
    code: i32,
    /// Structured-output probes the mock received while it ran.
    probes: u64,
    lines: BTreeMap<String, Vec<Value>>,
    billed_usd: f64,
}

/// A cell: the first run (interrupted as `stop` says) and the runs after it until the build
/// ends, then the four properties.
async fn cell(way: Way, set: Recipes, stop: Stop) {
    let name = format!("{way:?} x {set:?} x {stop:?}");
    let want = reference(set).await;
    let w = World::start(way, set).await;
    let seed = seed::kill_seed(&name);
    let mut pending = match stop {
        Stop::Sigint | Stop::Sigkill => {
            let at = seed::draw(seed, 1, want.requests);
            eprintln!(
                "{name}: {stop:?} once {at} of about {} requests came",
                want.requests
            );
            Some((stop, at))
        }
        _ => None,
    };
    // The KRE cell's batch rounds are small beside its whole cost (its first round costs 39 %
    // of it): a third of the cost stops a batch-files run, and fails on a round whose files
    // together cost more than the budget (each file's reservation given back once written).
    // The ConflictBank cell's rounds are smaller still (twelve with batch files, the largest
    // under a third of its cost): a quarter.
    let share = match set {
        Recipes::One => 2.0,
        Recipes::Kre => 3.0,
        Recipes::Cb => 4.0,
    };
    let budget = (stop == Stop::Budget).then(|| format!("{:.9}", want.usd / share));
    let limit: f64 = budget
        .as_deref()
        .map_or(f64::INFINITY, |b| b.parse().unwrap());

    let mut runs: Vec<BuildRun> = Vec::new();
    let mut last_said = String::new();
    let mut in_flight = 0;
    let mut killed_kept = 0;
    let mut note = |r: &Ran, who: &str| {
        let Some((received, kept)) = r.signalled else {
            return;
        };
        eprintln!(
            "{name}: {stop:?} to the {who}: {received} requests received, {kept} answers kept"
        );
        in_flight += received.saturating_sub(kept);
        if stop == Stop::Sigkill && who == "build" {
            killed_kept += kept;
        }
        // Exit 0: the signal came once the work was done.
        if stop == Stop::Sigint {
            let code = r.output.status.code();
            assert!(
                matches!(code, Some(0 | 130)),
                "{name}: the {who} stopped by SIGINT exited {code:?}, not 130: {}",
                text(&r.output)
            );
        }
    };
    // Runs that may end short of the longest chain's next link: each one a budget or a
    // signal stopped. How many a budget of 1/`share` stops is up to timing (which recipe's
    // round reserves the run's budget first, at most cost); each such run must have made
    // the mock answer something new, so the build ends all the same.
    let mut stopped = 0;
    loop {
        // The chain's links, the run that ends and one more (a writer step resampled), and
        // one for each stopped run.
        assert!(
            runs.len() < set.chain() + 2 + stopped,
            "{name}: no end after the exits {:?}; the last run said: {last_said}",
            runs.iter().map(|r| r.code).collect::<Vec<_>>()
        );
        let before = w.lines();
        let received = w.received();
        let (billed, probes) = (w.billed_usd(), w.probes());
        let inputs = folder(w.dir.path());
        let b = run(&w, w.build(budget.as_deref()), &mut pending).await;
        note(&b, "build");
        let code = b.output.status.code().unwrap_or(-1);
        last_said = text(&b.output);
        written_once(&name, &inputs, &folder(w.dir.path()));
        // A run the budget stopped leaves the files it wrote before the stop: they are
        // answered (and billed) now, as its own, not with the next run's.
        if way == Way::Files && (code == WAITING || code == 3) {
            loop {
                let e = run(&w, w.executor(), &mut pending).await;
                note(&e, "executor");
                if e.signalled.is_none() {
                    assert!(
                        e.output.status.success(),
                        "{name}: run-dir: {}",
                        text(&e.output)
                    );
                    break;
                }
            }
        }
        let mut lines = w.lines();
        for (r, l) in &mut lines {
            l.drain(..before.get(r).map_or(0, Vec::len));
        }
        runs.push(BuildRun {
            code,
            probes: w.probes() - probes,
            lines,
            billed_usd: w.billed_usd() - billed,
        });
        if code != 0 {
            assert!(
                w.received() > received,
                "{name}: a run that exited {code} had nothing new answered: {last_said}"
            );
        }
        if code == 3 || b.signalled.is_some() {
            stopped += 1;
        }
        match code {
            0 => break,
            3 if stop == Stop::Budget => {}
            WAITING if way == Way::Files => {}
            _ if b.signalled.is_some() => {}
            _ => panic!("{name}: the build exited {code}: {}", text(&b.output)),
        }
    }
    let exits: Vec<i32> = runs.iter().map(|r| r.code).collect();
    eprintln!("{name}: build exits {exits:?}");
    assert!(pending.is_none(), "{name}: the signal's point never came");
    if stop == Stop::Budget {
        assert!(
            exits.contains(&3),
            "{name}: the budget never stopped a run: {exits:?}"
        );
    }

    // 1. No request twice, beyond those in flight at the signal.
    let asked = w.asked();
    let again: u64 = asked.values().map(|n| n - 1).sum();
    eprintln!(
        "{name}: {} distinct requests, {again} asked again, {in_flight} in flight at the signal",
        asked.len()
    );
    let twice: Vec<String> = asked
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(body, n)| format!("{n} times: {}", body.chars().take(300).collect::<String>()))
        .collect();
    assert!(
        again <= in_flight,
        "{name}: {again} requests asked again, {in_flight} were in flight at the signal:\n{}",
        twice.join("\n")
    );

    // 2. The budget, as billed and as reported.
    for (i, r) in runs.iter().enumerate() {
        let reported: f64 = r
            .lines
            .values()
            .flatten()
            .map(|l| Reported::of(l).usd)
            .sum();
        assert!(
            r.billed_usd <= limit + 1e-9 && reported <= limit + 1e-9,
            "{name}: run {i} (exit {}) was billed ${:.9} and reported ${reported:.9} of --max-cost {limit:.9}",
            r.code,
            r.billed_usd
        );
    }

    // 3. Each recipe's reported calls. Every request a recipe's layers send counts as one of
    // its calls sent, the structured-output probe too (one a layer that finds out the form).
    let probes = w.probes();
    let last = runs.last().unwrap();
    // A call the stopped run counted as sent that the signal dropped before it reached the
    // mock: at most one a slot (a pool's slots are its endpoints' together).
    let slots = CONCURRENCY.parse::<u64>().unwrap() * w.mocks.len() as u64;
    let cut = if stop == Stop::Sigint { slots } else { 0 };
    let (mut sent_all, mut want_all, mut twice_last) = (0, 0, 0);
    for (recipe, whole) in &want.lines {
        let lines: Vec<Reported> = runs
            .iter()
            .flat_map(|r| r.lines.get(recipe).into_iter().flatten())
            .map(Reported::of)
            .collect();
        let sent: u64 = lines.iter().map(|l| l.upstream).sum();
        let distinct = whole.calls - whole.hits;
        let fin = last
            .lines
            .get(recipe)
            .and_then(|l| l.last())
            .map(Reported::of);
        let fin = fin.unwrap_or_else(|| panic!("{name}: {recipe}: the last run wrote no line"));
        assert_eq!(
            fin.calls, whole.calls,
            "{name}: {recipe}: the last run's calls differ from the uninterrupted build's"
        );
        assert!(
            fin.hits + fin.upstream >= fin.calls,
            "{name}: {recipe}: the last run counted a call neither sent nor found: {fin:?}"
        );
        twice_last += fin.hits + fin.upstream - fin.calls;
        assert!(
            sent + killed_kept >= distinct && sent <= distinct + again + probes + cut,
            "{name}: {recipe}: its lines report {sent} calls sent ({lines:?}); the uninterrupted build asked {distinct}, {again} were asked again, {probes} probes were sent, a killed run kept {killed_kept} answers, the signal may have cut {cut}"
        );
        (sent_all, want_all) = (sent_all + sent, want_all + distinct);
    }
    assert_eq!(
        twice_last, last.probes,
        "{name}: the last run counted calls twice beyond its {} probes",
        last.probes
    );
    // What the mocks received, as they count it: a request asked again (`again`) may be a
    // probe (`probes` counts each one sent), so adding the two would count it twice.
    if stop != Stop::Sigkill && matches!(way, Way::Online | Way::Pool) {
        let received = w.received();
        assert!(
            (received..=received + cut).contains(&sent_all),
            "{name}: the recipes report {sent_all} calls sent; the mock received {received} ({want_all} distinct calls of the uninterrupted build, {probes} probes sent, {again} asked again), and the signal may have cut {cut}"
        );
    }

    // 4. The files of an uninterrupted online build.
    assert_same(&w.files(), &want.files);

    // 5. The requests of an uninterrupted online build, body for body, whatever the way.
    let bodies = w.bodies();
    let missing: Vec<&String> = want.bodies.difference(&bodies).take(3).collect();
    let extra: Vec<&String> = bodies.difference(&want.bodies).take(3).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{name}: {} distinct requests, the online build's {}; not sent (first 3): {missing:?}; not the online build's (first 3): {extra:?}",
        bodies.len(),
        want.bodies.len()
    );
}

/// With batch files, after a build run that wrote `now`'s new input files (`before`: the
/// folder's input files and their answered requests as the run began): every request it wrote
/// was in no earlier input file, or in one whose output file had left it unanswered.
fn written_once(name: &str, before: &Folder, now: &Folder) {
    for (file, (ids, _)) in now.iter().filter(|(f, _)| !before.contains_key(*f)) {
        for id in ids {
            for (first, (held, answered)) in before {
                let left = answered.as_ref().is_some_and(|a| !a.contains(id));
                assert!(
                    !held.contains(id) || left,
                    "{name}: {id} written into {first} and {file}, {}",
                    match answered {
                        None => "whose output file has not come",
                        Some(_) => "whose output file holds its answer",
                    }
                );
            }
        }
    }
}

/// A batch folder's input files: each one's requests, and those its output file answers with
/// a 200 (none without an output file; an error line leaves its request unanswered).
type Folder = BTreeMap<String, (BTreeSet<String>, Option<BTreeSet<String>>)>;

fn folder(dir: &Path) -> Folder {
    batch_dir::inputs(dir)
        .into_iter()
        .map(|(name, ids)| {
            let output = dir.join(name.replace(".jsonl", ".output.jsonl"));
            let answered = output.exists().then(|| {
                let lines = read_jsonl(&output);
                let answers = lines.iter().filter(|l| l["response"]["status_code"] == 200);
                answers
                    .filter_map(|l| l["custom_id"].as_str().map(str::to_owned))
                    .collect()
            });
            (name, (ids.into_iter().collect(), answered))
        })
        .collect()
}

/// A row of the matrix: a way a call travels, in every cell of the other two axes.
macro_rules! row {
    ($row:ident, $way:expr) => {
        mod $row {
            use super::*;

            #[tokio::test(flavor = "multi_thread")]
            async fn one_recipe_uninterrupted() {
                cell($way, Recipes::One, Stop::Uninterrupted).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn one_recipe_sigint() {
                cell($way, Recipes::One, Stop::Sigint).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn one_recipe_sigkill() {
                cell($way, Recipes::One, Stop::Sigkill).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn one_recipe_budget() {
                cell($way, Recipes::One, Stop::Budget).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn every_kre_recipe_uninterrupted() {
                cell($way, Recipes::Kre, Stop::Uninterrupted).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn every_kre_recipe_sigint() {
                cell($way, Recipes::Kre, Stop::Sigint).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn every_kre_recipe_sigkill() {
                cell($way, Recipes::Kre, Stop::Sigkill).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn every_kre_recipe_budget() {
                cell($way, Recipes::Kre, Stop::Budget).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn conflictbank_uninterrupted() {
                cell($way, Recipes::Cb, Stop::Uninterrupted).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn conflictbank_sigint() {
                cell($way, Recipes::Cb, Stop::Sigint).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn conflictbank_sigkill() {
                cell($way, Recipes::Cb, Stop::Sigkill).await;
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn conflictbank_budget() {
                cell($way, Recipes::Cb, Stop::Budget).await;
            }
        }
    };
}

row!(online, Way::Online);
row!(pool, Way::Pool);
row!(batch_api, Way::BatchApi);
row!(batch_files, Way::Files);

/// The `eval` row: `conflictbench eval kre` of a scripted model on small KRE files, in the
/// same stops (uninterrupted, SIGINT, SIGTERM instead of a second SIGINT, SIGKILL, budget),
/// run again until it ends, with the same promises: no request twice (but those in flight at
/// a signal), every run within `--max-cost` as the mock billed it, the last run counting
/// every call once (sent or found cached), and the same figures and predictions as an
/// uninterrupted evaluation. A stopped run says one line, exits 130 or 143 and leaves no lock.
mod eval_row {
    use super::*;
    use cb_mock::eval_script::{eval_responder, Behaviour};

    /// Rows of the KRE file; with `--seeds 2 --settings zero_shot,mixed` (and memory),
    /// 6 calls a row.
    const ROWS: usize = 6;

    /// A scripted model that follows the context, billing as [`billing`] does.
    fn billed_model(files: &[std::path::PathBuf], billed: Arc<AtomicU64>) -> Responder {
        let inner = eval_responder(Behaviour::FollowContext, eval_runs::kre_entries(files));
        responder(move |req: &ChatRequest| match inner(req) {
            Reply::Content(content) => {
                let tokens = |chars: usize| chars.div_ceil(4) as u64;
                let usage = (tokens(req.prompt_chars()), tokens(content.chars().count()));
                billed.fetch_add(usage.0 + usage.1, Ordering::Relaxed);
                Reply::ContentWith {
                    content,
                    finish_reason: "stop".into(),
                    usage: Some(usage),
                }
            }
            other => other,
        })
    }

    /// `conflictbench eval kre` on `file` against `base` into `out`, under `budget` (USD).
    fn eval(file: &Path, base: &str, out: &Path, budget: Option<&str>) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"));
        cmd.args(["eval", "kre", "--data"])
            .arg(file)
            .arg("--out")
            .arg(out)
            .args(["--base-url", base, "--model", "m", "--seeds", "2"])
            .args(["--settings", "zero_shot,mixed"])
            .args(["--price-input", "1", "--price-output", "1", "--no-progress"])
            .arg("--prompts")
            .arg(repo().join("prompts"))
            .env_remove("OPENAI_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .env_remove("RUST_LOG")
            .env_remove("CONFLICTBENCH_LOG")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(b) = budget {
            // One call at a time: each call in flight reserves its most (its prompt and
            // `--answer-tokens`), and six of them would hold the whole budget.
            cmd.args(["--max-cost", b, "--concurrency", "1"]);
        } else {
            cmd.args(["--concurrency", CONCURRENCY]);
        }
        cmd
    }

    /// The figures and predictions of an evaluation folder, the endpoint's address made alike.
    fn figures(out: &Path) -> (String, String) {
        let read = |f: &str| normalise(&std::fs::read_to_string(out.join(f)).unwrap());
        (read("results.json"), read("predictions.jsonl"))
    }

    /// `[U upstream calls, H cache hits` of a finished evaluation's last line.
    fn counted(stdout: &str) -> (u64, u64) {
        let line = stdout
            .lines()
            .rfind(|l| l.contains("predictions ->"))
            .unwrap();
        let n = |after: &str| -> u64 {
            let i = line.find(after).unwrap();
            let head = line[..i].trim_end();
            let start = head
                .rfind(|c: char| !c.is_ascii_digit())
                .map_or(0, |j| j + 1);
            head[start..].parse().unwrap()
        };
        (n(" upstream calls"), n(" cache hits"))
    }

    async fn cell(stop: Stop, signal: &str) {
        let data = tempfile::tempdir().unwrap();
        let file = eval_runs::write_kre(data.path(), "cose", ROWS, None);
        let files = vec![file.clone()];
        // The uninterrupted evaluation.
        let billed = Arc::new(AtomicU64::new(0));
        let mock = MockServer::start(billed_model(&files, billed.clone())).await;
        let whole = tempfile::tempdir().unwrap();
        let o = eval(&file, &mock.base_url(), whole.path(), None)
            .output()
            .await
            .unwrap();
        assert!(o.status.success(), "the uninterrupted eval: {}", text(&o));
        let calls = mock.request_count() as u64;
        let (upstream, hits) = counted(&String::from_utf8_lossy(&o.stdout));
        assert_eq!((upstream, hits), (calls, 0), "{}", text(&o));
        let whole_usd = billed.load(Ordering::Relaxed) as f64 / 1e6;

        let name = format!("eval {stop:?} {signal}");
        let billed = Arc::new(AtomicU64::new(0));
        let mock = MockServer::start(billed_model(&files, billed.clone())).await;
        mock.set_latency(Duration::from_millis(20));
        let base = mock.base_url();
        let out = tempfile::tempdir().unwrap();
        let budget = (stop == Stop::Budget).then(|| format!("{:.6}", whole_usd / 2.0));
        let seed = seed::kill_seed(&name);
        let (mut cut, mut first, mut runs, mut said) = (0u64, true, 0, String::new());
        let last = loop {
            runs += 1;
            assert!(
                runs <= 8,
                "{name}: still not done after {runs} runs: {said}"
            );
            let before = billed.load(Ordering::Relaxed);
            let child = eval(&file, &base, out.path(), budget.as_deref())
                .spawn()
                .unwrap();
            let o = if first && matches!(stop, Stop::Sigint | Stop::Sigkill) {
                let pid = child.id().unwrap();
                let at = seed::draw(seed, 1, calls - 1);
                let t0 = Instant::now();
                while mock.answered() < at && t0.elapsed() < Duration::from_secs(60) {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                let sig = if stop == Stop::Sigkill {
                    "-KILL"
                } else {
                    signal
                };
                std::process::Command::new("kill")
                    .args([sig, &pid.to_string()])
                    .status()
                    .unwrap();
                let o = child.wait_with_output().await.unwrap();
                cut += if stop == Stop::Sigkill {
                    // Killed: the requests it had sent whose answers it had not yet kept.
                    let cache = out.path().join("llm-cache.sqlite");
                    let kept = cb_llm::Cache::open(&cache).unwrap().len().unwrap();
                    mock.request_count() as u64 - kept
                } else {
                    // Stopped: at most those in flight.
                    CONCURRENCY.parse::<u64>().unwrap()
                };
                o
            } else {
                child.wait_with_output().await.unwrap()
            };
            first = false;
            if let Some(b) = &budget {
                let spent = (billed.load(Ordering::Relaxed) - before) as f64 / 1e6;
                assert!(
                    spent <= b.parse::<f64>().unwrap() + 1e-9,
                    "{name}: a run spent ${spent} over --max-cost {b}"
                );
            }
            let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
            said = format!(
                "{said}\n[run {runs}: mock asked {} in all] {}",
                mock.request_count(),
                text(&o)
            );
            match o.status.code() {
                Some(0) => break o,
                Some(3) if stop == Stop::Budget => {}
                Some(code @ (130 | 143)) => {
                    assert_eq!(code, if signal == "-TERM" { 143 } else { 130 }, "{name}");
                    let lines: Vec<&str> =
                        stderr.lines().filter(|l| !l.trim().is_empty()).collect();
                    assert_eq!(lines.len(), 1, "{name}: {stderr}");
                    assert!(
                        lines[0].contains("left")
                            && lines[0].contains("run the same command again to resume"),
                        "{name}: {stderr}"
                    );
                    // The stop released its locks: no note is left.
                    assert!(!out.path().join(".conflictbench.lock").exists(), "{name}");
                    assert!(
                        !out.path().join(".llm-cache.sqlite.lock").exists(),
                        "{name}"
                    );
                }
                None if stop == Stop::Sigkill => {}
                c => panic!("{name}: exit {c:?}: {}", text(&o)),
            }
        };
        assert!(
            out.path().join("llm-cache.sqlite").is_file(),
            "{name}: no cache"
        );
        // 1. No request twice, but those in flight at a signal.
        let asked = mock.request_count() as u64;
        assert!(
            (calls..=calls + cut).contains(&asked),
            "{name}: the mock was asked {asked} times; the uninterrupted eval asked {calls}, a signal may have cut {cut}"
        );
        // 3. The last run counts every call once, sent or found cached.
        let (upstream, hits) = counted(&String::from_utf8_lossy(&last.stdout));
        assert_eq!(upstream + hits, calls, "{name}: {}", text(&last));
        if stop == Stop::Uninterrupted {
            assert_eq!(hits, 0, "{name}");
        }
        // 4. The same figures and predictions.
        assert_eq!(
            figures(out.path()),
            figures(whole.path()),
            "{name}: the figures differ"
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn eval_uninterrupted() {
        cell(Stop::Uninterrupted, "").await;
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn eval_sigint() {
        cell(Stop::Sigint, "-INT").await;
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn eval_sigterm() {
        cell(Stop::Sigint, "-TERM").await;
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn eval_sigkill() {
        cell(Stop::Sigkill, "-KILL").await;
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn eval_budget() {
        cell(Stop::Budget, "").await;
    }
}
