//! `conflictbench eval compare`: the differences between evaluation runs, paired item by
//! item.
//!
//! The runs must be of one benchmark, with the same eval prompts (names and SHA-256 in
//! `results.json`) and on the same data: every row both runs evaluated has the same
//! `row_sha256` in their `predictions.jsonl`, and they share at least one. Each figure that
//! every run reports is recomputed per run from `predictions.jsonl` on what all runs share:
//! the items (a prediction line is keyed by domain, task, setting, seed and item), the
//! settings and the seeds. A line becomes the same compact score `eval` keeps
//! ([`crate::scores`]), and a figure, the settings it reads and its value come from
//! [`crate::metric`], as in `eval`'s own results: this module only pairs the runs, takes the
//! differences and writes its report. The difference of each run to the first (the baseline) gets a
//! 95 % paired bootstrap interval ([`cb_metrics::bootstrap`]): the shared items are resampled
//! and both runs' figures are recomputed on the same resample, every seed on the same items
//! (seeds are repeated measures of an item, as in `results.json`). A difference "excludes 0"
//! when its interval lies wholly above or below 0.
//!
//! The text-generation R-Rate needs the edited words of each row, which `predictions.jsonl`
//! does not carry: it is left out, named in `left_out` with the reason, as is any figure this
//! version does not know how to recompute.
//!
//! Writes `compare.json`, `compare.md` and `compare.html` (the tables, the differences drawn
//! with their intervals and a zero line, and for KRE every run's place on the style axis),
//! atomically and with the same bytes for the same runs.

use crate::charts::{self, Bar, Point};
use crate::metric::{reads, Missing};
use crate::report::{
    self, chart_groups, mean_interval, style_figure, DataIdentity, Table, FEW, MIN_ITEMS,
};
use crate::scores::{Answer, Scores, TextScore};
use crate::{EvalError, Metric};
use cb_audit::html::escape;
use cb_metrics::bleu::segment_stats;
use cb_metrics::{bootstrap, Interval, Summary};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A figure's identity.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FigureId {
    pub domain: String,
    pub task: String,
    pub setting: String,
    pub metric: String,
}

impl std::fmt::Display for FigureId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{}/{}/{}",
            self.domain, self.task, self.setting, self.metric
        )
    }
}

/// What compare reads of a run's `results.json`.
#[derive(Debug, Clone, Deserialize)]
struct Info {
    benchmark: String,
    backend: String,
    endpoint: String,
    model: String,
    seeds: Vec<u64>,
    settings: Vec<String>,
    prompts: Vec<(String, String)>,
    data: Option<DataIdentity>,
    figures: Vec<FigureId>,
}

/// One prediction line, as the figures need it.
#[derive(Debug, Clone, Copy)]
enum Outcome {
    Answer(Answer),
    Text(TextScore),
}

/// (domain, task, setting, seed, item).
type Key = (String, String, String, u64, String);

/// One run as read from its folder.
struct Run {
    dir: PathBuf,
    info: Info,
    lines: BTreeMap<Key, Outcome>,
    /// The keys in the order of the file (rows in the order evaluated).
    order: Vec<Key>,
    /// (domain, item) -> `row_sha256`.
    rows: BTreeMap<(String, String), String>,
}

fn config(m: String) -> EvalError {
    EvalError::Config(m)
}

fn read_run(dir: &Path) -> Result<Run, EvalError> {
    let path = dir.join("results.json");
    let bytes =
        std::fs::read(&path).map_err(|e| config(format!("cannot read {}: {e}", path.display())))?;
    let info: Info = serde_json::from_slice(&bytes).map_err(|e| {
        let v: Option<Value> = serde_json::from_slice(&bytes).ok();
        config(match v.is_some_and(|v| v["benchmark"] == "conflictbank") {
            true => format!("{} is a ConflictBank evaluation: `eval compare` does not compare those yet (their figures are in each results.json)", path.display()),
            false => format!("{} is not the results.json of an evaluation: {e}", path.display()),
        })
    })?;
    let path = dir.join("predictions.jsonl");
    let unreadable = |e: std::io::Error| config(format!("cannot read {}: {e}", path.display()));
    let file = std::fs::File::open(&path).map_err(unreadable)?;
    let mut lines = BTreeMap::new();
    let mut order = Vec::new();
    let mut rows = BTreeMap::new();
    // One line at a time: what is kept of each is its compact score.
    for (i, line) in std::io::BufRead::lines(std::io::BufReader::new(file)).enumerate() {
        let line = line.map_err(unreadable)?;
        let at = || format!("{}:{}", path.display(), i + 1);
        let v: Value =
            serde_json::from_str(&line).map_err(|e| config(format!("{}: not JSON: {e}", at())))?;
        let s = |field: &str| -> Result<String, EvalError> {
            v[field]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| config(format!("{}: no `{field}`", at())))
        };
        let task = if info.benchmark == "kre" {
            "kre".to_owned()
        } else {
            s("task")?
        };
        let seed = v["seed"]
            .as_u64()
            .ok_or_else(|| config(format!("{}: no `seed`", at())))?;
        let (domain, item) = (s("domain")?, s("item")?);
        let hash = v["row_sha256"].as_str().ok_or_else(|| {
            config(format!(
                "{}: no `row_sha256` (written by an older conflictbench): evaluate again to compare",
                at()
            ))
        })?;
        rows.insert((domain.clone(), item.clone()), hash.to_owned());
        let outcome = outcome(&v, &task);
        let key = (domain, task, s("setting")?, seed, item);
        if lines.insert(key.clone(), outcome).is_some() {
            return Err(config(format!(
                "{}: a second prediction for item {} ({}, {}, seed {})",
                at(),
                key.4,
                key.1,
                key.2,
                key.3
            )));
        }
        order.push(key);
    }
    Ok(Run {
        dir: dir.to_path_buf(),
        info,
        lines,
        order,
        rows,
    })
}

/// What the figures need of a prediction line of `task`.
fn outcome(v: &Value, task: &str) -> Outcome {
    if task == "text_generation" {
        let (raw, target, rouge) = (
            v["raw"].as_str(),
            v["target"].as_str(),
            v["rouge_l"].as_f64(),
        );
        return Outcome::Text(match (raw, target, rouge) {
            (Some(out), Some(target), Some(rouge)) => TextScore {
                bleu: segment_stats(out, target),
                rouge,
                ..TextScore::default()
            },
            _ => TextScore::default(),
        });
    }
    let letter = |field: &str| v[field].as_str().and_then(cb_model::letter_index);
    let chosen = letter("choice");
    // Only whether the answer is the negative option counts.
    let negative = chosen.filter(|_| v["negative"].as_bool().unwrap_or(false));
    Outcome::Answer(Answer::new(chosen, letter("expected"), negative))
}

fn name(dir: &Path) -> String {
    dir.display().to_string()
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// Refuses runs that cannot be compared, naming what differs: the benchmark, the prompts or
/// the data.
fn check(runs: &[Run]) -> Result<(), EvalError> {
    let base = &runs[0];
    let prompts =
        |r: &Run| -> BTreeMap<String, String> { r.info.prompts.iter().cloned().collect() };
    for r in runs {
        if r.info.data.is_none() {
            return Err(config(format!(
                "{}/results.json names no data identity (`data`; written by an older conflictbench): evaluate again to compare",
                name(&r.dir)
            )));
        }
    }
    for r in &runs[1..] {
        let (a, b) = (name(&base.dir), name(&r.dir));
        if r.info.benchmark != base.info.benchmark {
            return Err(config(format!(
                "cannot compare different benchmarks: {a} evaluates {}, {b} evaluates {}",
                base.info.benchmark, r.info.benchmark
            )));
        }
        let (pa, pb) = (prompts(base), prompts(r));
        for n in pa.keys().chain(pb.keys()).collect::<BTreeSet<_>>() {
            match (pa.get(n), pb.get(n)) {
                (Some(x), Some(y)) if x == y => {}
                (Some(x), Some(y)) => {
                    return Err(config(format!(
                        "cannot compare runs with different prompts: {n} has sha256 {}… in {a} and {}… in {b}",
                        short(x),
                        short(y)
                    )))
                }
                (x, _) => {
                    let (has, lacks) = if x.is_some() { (&a, &b) } else { (&b, &a) };
                    return Err(config(format!(
                        "cannot compare runs with different prompts: {n} is used in {has}, not in {lacks}"
                    )));
                }
            }
        }
        let mut shared = 0;
        for (key, h) in &base.rows {
            if let Some(g) = r.rows.get(key) {
                if g != h {
                    return Err(config(format!(
                        "cannot compare runs on different data: row {} of {} has sha256 {}… in {a} and {}… in {b}",
                        key.1,
                        key.0,
                        short(h),
                        short(g)
                    )));
                }
                shared += 1;
            }
        }
        if shared == 0 {
            let d = |r: &Run| {
                let id = r.info.data.as_ref().expect("checked above");
                format!("{} rows, sha256 {}…", id.rows, short(&id.sha256))
            };
            return Err(config(format!(
                "cannot compare runs on different data: {a} ({}) and {b} ({}) share no row",
                d(base),
                d(r)
            )));
        }
    }
    Ok(())
}

/// The metric of figure `f` and the settings whose lines it reads, given the settings every
/// run has; `Err` says why it cannot be recomputed.
fn recipe(f: &FigureId, shared: &[String]) -> Result<(Metric, Vec<String>), String> {
    let unknown = || "not a figure this version recomputes".to_owned();
    let metric = Metric::parse(&f.metric).ok_or_else(unknown)?;
    if metric == Metric::RRate {
        return Err(
            "needs each row's edited words, which predictions.jsonl does not hold".to_owned(),
        );
    }
    let needs = reads(&f.task, &f.setting, metric).ok_or_else(unknown)?;
    match needs.resolve(shared) {
        Ok(needs) => Ok((metric, needs)),
        Err(Missing::OneOf) => Err("no few-shot setting in every run".to_owned()),
        Err(Missing::Setting(s)) => Err(format!("setting {s} is not in every run")),
    }
}

/// Run `run`'s scores of `items` in the settings `needs` and the `seeds`.
fn scores(
    run: &Run,
    task: &str,
    needs: &[String],
    seeds: &[u64],
    items: &[(String, String)],
) -> Scores {
    let mut out = Scores::new(items.len(), false);
    for s in needs {
        for &seed in seeds {
            for (d, i) in items {
                let key = (d.clone(), task.to_owned(), s.clone(), seed, i.clone());
                match run
                    .lines
                    .get(&key)
                    .copied()
                    .expect("shared items have every line")
                {
                    Outcome::Answer(a) => out.push_answer(s, seed, a),
                    Outcome::Text(t) => out.push_text(s, seed, t),
                }
            }
        }
    }
    out
}

/// A run as the comparison names it.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// The folder, as given.
    pub dir: String,
    pub model: String,
    pub backend: String,
    pub endpoint: String,
    pub seeds: Vec<u64>,
    pub data: DataIdentity,
}

/// One run's figure on the shared items.
#[derive(Debug, Clone, Serialize)]
pub struct RunValue {
    /// `n` (seeds with a value), `mean`, `std`.
    #[serde(flatten)]
    pub summary: Summary,
    /// The run's own 95 % bootstrap interval on the shared items.
    pub interval: Option<Interval>,
    pub per_seed: Vec<Option<f64>>,
}

/// A run's figure minus the baseline's.
#[derive(Debug, Clone, Serialize)]
pub struct Difference {
    /// Index of the run in `runs`.
    pub run: usize,
    pub difference: Option<f64>,
    /// The 95 % paired bootstrap interval of the difference.
    pub interval: Option<Interval>,
    pub excludes_zero: bool,
}

/// One figure compared.
#[derive(Debug, Clone, Serialize)]
pub struct Compared {
    #[serde(flatten)]
    pub id: FigureId,
    /// `id`'s metric.
    #[serde(skip)]
    pub metric: Metric,
    /// Items resampled (shared by every run, with every line it needs in every shared seed);
    /// for a figure on the items a model knows (VR, RR, M-Rate, `acc@known`) each run's own
    /// results give that subset's size.
    pub n_items: usize,
    /// Per run, in the order of `runs`.
    pub runs: Vec<RunValue>,
    /// Per run after the first.
    pub differences: Vec<Difference>,
}

/// A figure some run reports that is not compared, and why.
#[derive(Debug, Clone, Serialize)]
pub struct LeftOut {
    pub figure: String,
    pub reason: String,
}

/// The comparison of evaluation runs (`compare.json`).
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub benchmark: String,
    /// The runs; the first is the baseline.
    pub runs: Vec<RunSummary>,
    /// Seeds every run has.
    pub seeds: Vec<u64>,
    /// Settings every run has.
    pub settings: Vec<String>,
    pub prompts: Vec<(String, String)>,
    /// Rows every run evaluated (by domain and item).
    pub shared_rows: usize,
    pub bootstrap_resamples: usize,
    pub bootstrap_seed: u64,
    pub figures: Vec<Compared>,
    pub left_out: Vec<LeftOut>,
}

/// Compares the evaluation runs in `dirs` (the first is the baseline); refuses runs of
/// another benchmark, prompts or data, naming what differs.
pub fn compare(dirs: &[PathBuf]) -> Result<Comparison, EvalError> {
    if dirs.len() < 2 {
        return Err(config(
            "compare needs at least two evaluation folders".into(),
        ));
    }
    let runs = dirs
        .iter()
        .map(|d| read_run(d))
        .collect::<Result<Vec<_>, _>>()?;
    check(&runs)?;
    let base = &runs[0];
    let seeds = shared_seeds(&runs)?;
    let settings: Vec<String> = base
        .info
        .settings
        .iter()
        .filter(|s| runs.iter().all(|r| r.info.settings.contains(s)))
        .cloned()
        .collect();
    let shared_rows = base
        .rows
        .keys()
        .filter(|k| runs.iter().all(|r| r.rows.contains_key(*k)))
        .count();
    let (figures, left_out) = compare_figures(&runs, &settings, &seeds);
    if figures.is_empty() {
        return Err(config(format!(
            "cannot compare: no figure can be recomputed on what the runs share ({})",
            left_out
                .iter()
                .map(|l| format!("{}: {}", l.figure, l.reason))
                .take(3)
                .collect::<Vec<_>>()
                .join("; ")
        )));
    }
    Ok(Comparison {
        benchmark: base.info.benchmark.clone(),
        runs: runs.iter().map(run_summary).collect(),
        seeds,
        settings,
        prompts: base.info.prompts.clone(),
        shared_rows,
        bootstrap_resamples: report::BOOTSTRAP_RESAMPLES,
        bootstrap_seed: report::BOOTSTRAP_SEED,
        figures,
        left_out,
    })
}

fn run_summary(r: &Run) -> RunSummary {
    RunSummary {
        dir: name(&r.dir),
        model: r.info.model.clone(),
        backend: r.info.backend.clone(),
        endpoint: r.info.endpoint.clone(),
        seeds: r.info.seeds.clone(),
        data: r.info.data.clone().expect("checked"),
    }
}

/// The seeds every run has, in the baseline's order; none is an error naming each run's.
fn shared_seeds(runs: &[Run]) -> Result<Vec<u64>, EvalError> {
    let seeds: Vec<u64> = runs[0]
        .info
        .seeds
        .iter()
        .copied()
        .filter(|s| runs.iter().all(|r| r.info.seeds.contains(s)))
        .collect();
    if !seeds.is_empty() {
        return Ok(seeds);
    }
    let list = |r: &Run| {
        let s: Vec<String> = r.info.seeds.iter().map(u64::to_string).collect();
        format!("{}: {}", name(&r.dir), s.join(", "))
    };
    Err(config(format!(
        "cannot compare: the runs share no seed ({})",
        runs.iter().map(list).collect::<Vec<_>>().join("; ")
    )))
}

/// Every figure some run reports, in the order first reported: compared, or left out with
/// why.
fn compare_figures(
    runs: &[Run],
    settings: &[String],
    seeds: &[u64],
) -> (Vec<Compared>, Vec<LeftOut>) {
    let figure_sets: Vec<BTreeSet<&FigureId>> = runs
        .iter()
        .map(|r| r.info.figures.iter().collect())
        .collect();
    let mut figures = Vec::new();
    let mut left_out = Vec::new();
    let mut seen = BTreeSet::new();
    for f in runs.iter().flat_map(|r| &r.info.figures) {
        if !seen.insert(f) {
            continue;
        }
        let leave = |why: String| LeftOut {
            figure: f.to_string(),
            reason: why,
        };
        let missing = runs
            .iter()
            .zip(&figure_sets)
            .find(|(_, set)| !set.contains(f));
        if let Some((r, _)) = missing {
            left_out.push(leave(format!("not in {}", name(&r.dir))));
            continue;
        }
        match compare_figure(runs, f, settings, seeds) {
            Ok(c) => figures.push(c),
            Err(why) => left_out.push(leave(why)),
        }
    }
    (figures, left_out)
}

/// The items of figure `f` every run has every line of (all lines of `needs` in every seed),
/// in the order the baseline evaluated them (so that a run compared with itself gets its own
/// intervals).
fn shared_items(
    runs: &[Run],
    f: &FigureId,
    needs: &[String],
    seeds: &[u64],
) -> Vec<(String, String)> {
    runs[0]
        .order
        .iter()
        .filter(|k| {
            (f.domain == "all" || k.0 == f.domain)
                && k.1 == f.task
                && k.2 == needs[0]
                && k.3 == seeds[0]
        })
        .map(|k| (k.0.clone(), k.4.clone()))
        .filter(|(d, i)| {
            runs.iter().all(|r| {
                needs.iter().all(|s| {
                    seeds.iter().all(|seed| {
                        r.lines.contains_key(&(
                            d.clone(),
                            f.task.clone(),
                            s.clone(),
                            *seed,
                            i.clone(),
                        ))
                    })
                })
            })
        })
        .collect()
}

fn compare_figure(
    runs: &[Run],
    f: &FigureId,
    settings: &[String],
    seeds: &[u64],
) -> Result<Compared, String> {
    let (metric, needs) = recipe(f, settings)?;
    let items = shared_items(runs, f, &needs, seeds);
    if items.is_empty() {
        return Err("no item every run has".into());
    }
    let n = items.len();
    // Per run, the scores of the shared items, built once.
    let data: Vec<Scores> = runs
        .iter()
        .map(|r| scores(r, &f.task, &needs, seeds, &items))
        .collect();
    let g = |r: usize| {
        let d = &data[r];
        move |seed: u64, idx: &[usize]| metric.value(&f.setting, &d.seed(seed), idx)
    };
    let mean = |r: usize, idx: &[usize]| Summary::of(seeds.iter().map(|s| g(r)(*s, idx))).mean;
    let values: Vec<RunValue> = (0..runs.len())
        .map(|r| {
            let fig =
                crate::figures::figure(&f.domain, &f.task, &f.setting, metric, n, seeds, &g(r));
            RunValue {
                summary: fig.summary,
                interval: fig.interval,
                per_seed: fig.per_seed,
            }
        })
        .collect();
    let differences = (1..runs.len())
        .map(|r| difference(r, n, f, &values, &|idx| Some(mean(r, idx)? - mean(0, idx)?)))
        .collect();
    Ok(Compared {
        id: f.clone(),
        metric,
        n_items: n,
        runs: values,
        differences,
    })
}

/// Run `r`'s difference to the baseline, with the paired bootstrap interval of `paired` (the
/// difference on a resample of the shared items).
fn difference(
    r: usize,
    n: usize,
    f: &FigureId,
    values: &[RunValue],
    paired: &dyn Fn(&[usize]) -> Option<f64>,
) -> Difference {
    let difference = match (values[r].summary.mean, values[0].summary.mean) {
        (Some(a), Some(b)) => Some(a - b),
        _ => None,
    };
    let interval = bootstrap::interval(
        n,
        report::BOOTSTRAP_RESAMPLES,
        report::BOOTSTRAP_SEED,
        &format!("compare/{f}"),
        paired,
    );
    Difference {
        run: r,
        difference,
        interval,
        excludes_zero: interval.is_some_and(|i| i.low > 0.0 || i.high < 0.0),
    }
}

/// Writes `compare.json`, `compare.md` and `compare.html` into `dir`.
pub fn write_all(dir: &Path, c: &Comparison) -> Result<(), EvalError> {
    let mut json = serde_json::to_vec_pretty(c).expect("json");
    json.push(b'\n');
    report::write_file(dir, "compare.json", &json)?;
    report::write_file(dir, "compare.md", markdown(c).as_bytes())?;
    report::write_file(dir, "compare.html", html(c).as_bytes())?;
    Ok(())
}

fn run_label(c: &Comparison, r: usize) -> String {
    let model = &c.runs[r].model;
    if r == 0 {
        format!("run 1: {model} (baseline)")
    } else {
        format!("run {}: {model}", r + 1)
    }
}

fn heading(c: &Comparison) -> String {
    format!(
        "{} comparison of {} runs: {}",
        c.benchmark.to_uppercase(),
        c.runs.len(),
        (0..c.runs.len())
            .map(|r| run_label(c, r))
            .collect::<Vec<_>>()
            .join(" · ")
    )
}

fn legend(c: &Comparison) -> String {
    format!(
        "Each run's figures are recomputed from its predictions on what every run shares: the items, settings ({}) and seeds ({}). A cell is the mean over the seeds [its 95 % bootstrap interval over the shared items]; n = shared items, {FEW} under {MIN_ITEMS}. A difference is the run's figure minus the baseline's (run 1), in the figure's units, with a 95 % paired bootstrap interval: {} resamples of the shared items, each one scoring both runs, every seed, on the same items. \"yes\": the interval excludes 0.",
        c.settings.join(", "),
        c.seeds.iter().map(u64::to_string).collect::<Vec<_>>().join(", "),
        c.bootstrap_resamples
    )
}

/// A difference in the figure's units, signed.
fn difference_cell(d: &Difference, scale: f64) -> String {
    match d.difference {
        None => "n/a".to_owned(),
        Some(v) => {
            let mut s = format!("{:+.2}", v * scale);
            if let Some(i) = d.interval {
                s.push_str(&format!(" [{:.2}, {:.2}]", i.low * scale, i.high * scale));
            }
            s
        }
    }
}

fn runs_table(c: &Comparison) -> Table {
    Table {
        title: "Runs".into(),
        header: [
            "Run",
            "Model",
            "Backend",
            "Endpoint",
            "Folder",
            "Seeds",
            "Rows",
            "Data sha256",
        ]
        .map(str::to_owned)
        .to_vec(),
        rows: c
            .runs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                vec![
                    if i == 0 {
                        "1 (baseline)".to_owned()
                    } else {
                        (i + 1).to_string()
                    },
                    r.model.clone(),
                    r.backend.clone(),
                    r.endpoint.clone(),
                    r.dir.clone(),
                    r.seeds
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                    r.data.rows.to_string(),
                    short(&r.data.sha256).to_owned(),
                ]
            })
            .collect(),
        note: format!("{} rows are evaluated in every run.", c.shared_rows),
    }
}

/// A row of the differences table: the figure, each run's value, each difference.
fn difference_row(f: &Compared) -> Vec<String> {
    let scale = f.metric.scale();
    let mut row = vec![
        f.id.domain.clone(),
        f.id.task.clone(),
        f.id.setting.clone(),
        f.id.metric.clone(),
        format!(
            "{}{}",
            f.n_items,
            if f.n_items < MIN_ITEMS { FEW } else { "" }
        ),
    ];
    for v in &f.runs {
        row.push(mean_interval(v.summary.mean, v.interval, scale));
    }
    for d in &f.differences {
        row.push(difference_cell(d, scale));
        row.push(if d.excludes_zero { "yes" } else { "" }.to_owned());
    }
    row
}

fn tables(c: &Comparison) -> Vec<Table> {
    let mut header: Vec<String> = ["Domain", "Task", "Setting", "Metric", "n"]
        .map(str::to_owned)
        .to_vec();
    for r in 0..c.runs.len() {
        header.push(format!("run {}", r + 1));
    }
    for r in 1..c.runs.len() {
        header.push(format!("run {} − run 1", r + 1));
        header.push("≠ 0".into());
    }
    let mut out = vec![
        runs_table(c),
        Table {
            title: "Differences to the baseline".into(),
            header,
            rows: c.figures.iter().map(difference_row).collect(),
            note:
                "Percentages, BLEU as sacrebleu prints it; `n/a` where a figure has no denominator."
                    .into(),
        },
    ];
    if !c.left_out.is_empty() {
        out.push(Table {
            title: "Not compared".into(),
            header: vec!["Figure".into(), "Why".into()],
            rows: c
                .left_out
                .iter()
                .map(|l| vec![l.figure.clone(), l.reason.clone()])
                .collect(),
            note: String::new(),
        });
    }
    out
}

/// The comparison as Markdown.
pub fn markdown(c: &Comparison) -> String {
    let mut s = format!("# {}\n\n{}\n", heading(c), legend(c));
    for t in tables(c) {
        s.push_str(&report::table_md(&t));
    }
    s
}

/// The comparison as a self-contained page: the tables, every run on KRE's style axis, and
/// per domain, task and setting the differences with their intervals and a zero line.
pub fn html(c: &Comparison) -> String {
    let mut body = format!("<p>{}</p>", escape(&legend(c)));
    for t in tables(c) {
        body.push_str(&report::table_html(&t));
    }
    body.push_str("<h2>Charts</h2>");
    body.push_str(&format!(
        "<p>{}</p>",
        escape("Each bar is a difference to the baseline (run − run 1), its whisker the 95 % paired bootstrap interval; full colour where the interval excludes 0.")
    ));
    body.push_str(&style_html(c));
    for (domain, groups) in chart_groups(&c.figures, |f| {
        (
            f.id.domain.as_str(),
            f.id.task.as_str(),
            f.id.setting.as_str(),
        )
    }) {
        body.push_str(&format!("<h3>{}</h3>", escape(domain)));
        for ((task, setting), figs) in groups {
            let rows: Vec<Bar> = figs.iter().flat_map(|f| difference_bars(c, f)).collect();
            body.push_str(&charts::bars(
                &format!("{domain} · {task} · {setting}: run − run 1"),
                &rows,
                charts::symmetric_range(&rows),
            ));
        }
    }
    report::page(&heading(c), &body)
}

/// Every run's place on KRE's style axis (nothing for RECALL).
fn style_html(c: &Comparison) -> String {
    let style = style_figure(&c.figures, |f| {
        (
            f.id.domain.as_str(),
            f.id.task.as_str(),
            f.id.setting.as_str(),
            f.metric,
        )
    });
    let Some((domain, setting)) = style else {
        return String::new();
    };
    let Some(f) = c
        .figures
        .iter()
        .find(|f| f.id.domain == domain && f.id.setting == setting && f.metric == Metric::Dmss)
    else {
        return String::new();
    };
    let points: Vec<Point> = f
        .runs
        .iter()
        .enumerate()
        .filter_map(|(r, v)| {
            Some(Point {
                label: run_label(c, r),
                dmss: v.summary.mean?,
                interval: v.interval,
            })
        })
        .collect();
    let mut s = format!("<p>{}</p>", escape(&report::style_note()));
    s.push_str(&charts::style_axis(
        &report::style_title(&domain, &setting),
        &points,
    ));
    s
}

/// The chart rows of figure `f`: each run's difference to the baseline with its interval.
fn difference_bars(c: &Comparison, f: &Compared) -> Vec<Bar> {
    let scale = f.metric.scale();
    f.differences
        .iter()
        .map(|d| {
            let mut text = difference_cell(d, scale);
            if d.excludes_zero {
                text.push_str(" excludes 0");
            }
            Bar {
                label: if c.runs.len() > 2 {
                    format!("{} (run {})", f.id.metric, d.run + 1)
                } else {
                    f.id.metric.clone()
                },
                value: d.difference.map(|v| v * scale),
                interval: d.interval.map(|i| Interval {
                    low: i.low * scale,
                    high: i.high * scale,
                }),
                text,
                strong: d.excludes_zero,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Writes a RECALL run whose QA-A answers with the original context are right where
    /// `right` says.
    fn write_run(dir: &Path, right: &[bool]) {
        std::fs::create_dir_all(dir).unwrap();
        let results = json!({
            "benchmark": "recall", "backend": "openai", "endpoint": "e", "model": "m",
            "seeds": [1], "settings": ["original"], "prompts": [["eval/recall_qa.md", "ab"]],
            "data": {"rows": right.len(), "sha256": "s"},
            "figures": [{"domain": "d", "task": "qa_a", "setting": "original", "metric": "acc"}],
        });
        std::fs::write(dir.join("results.json"), results.to_string()).unwrap();
        let mut lines = String::new();
        for (i, r) in right.iter().enumerate() {
            let line = json!({
                "domain": "d", "task": "qa_a", "setting": "original", "seed": 1,
                "item": format!("q{i}"), "correct": r, "choice": if *r { "A" } else { "B" },
                "expected": "A", "row_sha256": format!("h{i}"),
            });
            lines.push_str(&format!("{line}\n"));
        }
        std::fs::write(dir.join("predictions.jsonl"), lines).unwrap();
    }

    #[test]
    fn paired_resamples_score_both_runs_on_the_same_items() {
        let tmp = tempfile::tempdir().unwrap();
        // Half right; the second run also gets three of the wrong ones right.
        let a: Vec<bool> = (0..40).map(|i| i % 2 == 0).collect();
        let mut b = a.clone();
        for i in [1, 3, 5] {
            b[i] = true;
        }
        write_run(&tmp.path().join("a"), &a);
        write_run(&tmp.path().join("b"), &b);
        let c = compare(&[tmp.path().join("a"), tmp.path().join("b")]).unwrap();
        let f = &c.figures[0];
        let d = &f.differences[0];
        assert!((d.difference.unwrap() - 3.0 / 40.0).abs() < 1e-12);
        // Every resample scores both runs on the same items: the second is never worse, and
        // better by at most the share of the three items drawn.
        let iv = d.interval.unwrap();
        assert!(iv.low >= 0.0 && iv.high <= 0.25, "{iv:?}");
        // Drawn 40 times, the three items are all missed in about 4 % of resamples (more
        // than 2.5 %): the interval reaches 0.
        assert_eq!(iv.low, 0.0);
        assert!(!d.excludes_zero);
        // Paired, the difference is surer than either run alone (0.30 wide against 0.15;
        // unpaired, it would be wider than each run's).
        let run = f.runs[0].interval.unwrap();
        assert!(
            run.high - run.low > 1.5 * (iv.high - iv.low),
            "{run:?} {iv:?}"
        );
        assert_eq!(f.n_items, 40);
    }
}
