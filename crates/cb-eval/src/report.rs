//! The output files: `predictions.jsonl` (one line per item, setting and seed, with the
//! SHA-256 of the row it asked), `results.json` (every figure with its n, mean, std and 95 %
//! bootstrap interval, and the identity of the data evaluated), `results.md` (the papers'
//! tables) and `results.html` (the same tables and SVG charts with interval whiskers, see
//! [`crate::charts`]; self-contained, every text escaped, nothing loaded from outside). Each
//! is written atomically; none holds a time stamp, so the same inputs, seeds and cache give
//! the same bytes.

use crate::charts::{self, Bar, Point};
use crate::{EvalError, Metric};
use cb_audit::html::escape;
use cb_audit::{Payload, Row};
use cb_metrics::{Interval, Summary};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Seek, Write};
use std::path::{Path, PathBuf};

/// One figure: a metric of one domain, task and setting over the seeds.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    pub domain: String,
    pub task: String,
    pub setting: String,
    pub metric: Metric,
    /// Items evaluated per seed.
    pub n_items: usize,
    /// `n` (seeds with a value), `mean`, `std`.
    #[serde(flatten)]
    pub summary: Summary,
    /// The 95 % percentile bootstrap interval of `mean` over items (seeds as repeated
    /// measures of each item); `null` when no resample has a value.
    pub interval: Option<Interval>,
    pub per_seed: Vec<Option<f64>>,
}

/// A paper-style table, already formatted.
#[derive(Debug, Clone, Serialize)]
pub struct Table {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub note: String,
}

/// Everything an evaluation found.
#[derive(Debug, Clone, Serialize)]
pub struct Results {
    pub benchmark: String,
    pub backend: String,
    pub endpoint: String,
    pub model: String,
    pub seeds: Vec<u64>,
    pub settings: Vec<String>,
    /// Eval prompt templates used: name and SHA-256.
    pub prompts: Vec<(String, String)>,
    /// The rows evaluated.
    pub data: DataIdentity,
    /// Resamples behind each figure's `interval`.
    pub bootstrap_resamples: usize,
    /// Seed of the resampling generator.
    pub bootstrap_seed: u64,
    pub figures: Vec<Figure>,
    #[serde(skip)]
    pub tables: Vec<Table>,
}

/// Which rows an evaluation read: how many, and one SHA-256 over their domains, ids and
/// texts in the order read. Two runs with the same `sha256` evaluated the same rows; where
/// they differ, `predictions.jsonl`'s `row_sha256` tells which rows both evaluated alike.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataIdentity {
    pub rows: usize,
    pub sha256: String,
}

/// The SHA-256 of a row: that of its JSON text as read (every field, in the layout's order),
/// so a row rebuilt with other words has another hash. Prediction lines carry it as
/// `row_sha256`.
pub fn row_sha256(row: &Row) -> String {
    let json = match &row.payload {
        Payload::Kre(k) => serde_json::to_vec(k),
        Payload::Qa(q) => serde_json::to_vec(q),
        Payload::TextGen(t) => serde_json::to_vec(t),
        Payload::Cb(c) => serde_json::to_vec(c),
    }
    .expect("rows serialise");
    cb_step::prompt::sha256_hex(&json)
}

/// The [`DataIdentity`] of the rows evaluated, summed as they are read: one SHA-256 over each
/// row's domain, id and [`row_sha256`], in the order read.
#[derive(Default)]
pub struct Identity {
    rows: usize,
    hasher: Sha256,
}

impl Identity {
    pub fn add(&mut self, domain: &str, row: &Row) {
        self.hasher
            .update(format!("{domain}\t{}\t{}\n", row.id, row_sha256(row)).as_bytes());
        self.rows += 1;
    }

    pub fn finish(self) -> DataIdentity {
        DataIdentity {
            rows: self.rows,
            sha256: hex::encode(self.hasher.finalize()),
        }
    }
}

impl Results {
    /// The results of a run of `benchmark` with `llm` on the rows `data` names, before the
    /// tables are made.
    pub fn new(
        benchmark: &str,
        llm: &cb_llm::Llm,
        opts: &crate::EvalOptions,
        data: DataIdentity,
        settings: Vec<String>,
        prompts: &[&cb_step::Prompt],
        figures: Vec<Figure>,
    ) -> Results {
        Results {
            benchmark: benchmark.into(),
            backend: llm.config().backend.name().into(),
            endpoint: llm.endpoint().into(),
            model: llm.config().model.clone(),
            seeds: opts.seeds.clone(),
            settings,
            prompts: prompts
                .iter()
                .map(|p| (format!("eval/{}", p.name), p.hash.clone()))
                .collect(),
            data,
            bootstrap_resamples: BOOTSTRAP_RESAMPLES,
            bootstrap_seed: BOOTSTRAP_SEED,
            figures,
            tables: Vec::new(),
        }
    }

    /// The figure for these keys, if any.
    pub fn get(&self, domain: &str, task: &str, setting: &str, metric: Metric) -> Option<&Figure> {
        self.figures.iter().find(|f| {
            f.domain == domain && f.task == task && f.setting == setting && f.metric == metric
        })
    }
}

/// Resamples of each figure's bootstrap interval.
pub const BOOTSTRAP_RESAMPLES: usize = cb_metrics::bootstrap::DEFAULT_RESAMPLES;
/// Seed of the bootstrap generator (fixed, so the same answers give the same intervals).
pub const BOOTSTRAP_SEED: u64 = cb_metrics::bootstrap::DEFAULT_SEED;
/// A cell with fewer items than this is marked with [`FEW`].
pub const MIN_ITEMS: usize = 30;
/// The mark of a cell with fewer than [`MIN_ITEMS`] items.
pub const FEW: &str = "†";

/// `mean [low, high]` multiplied by `scale` (the interval left out when there is none);
/// `n/a` without a mean.
pub fn mean_interval(mean: Option<f64>, interval: Option<Interval>, scale: f64) -> String {
    let Some(mean) = mean else {
        return "n/a".to_owned();
    };
    let mut s = format!("{:.2}", mean * scale);
    if let Some(i) = interval {
        s.push_str(&format!(" [{:.2}, {:.2}]", i.low * scale, i.high * scale));
    }
    s
}

/// `mean [low, high] (n=items)` of a figure in the paper's units (the interval left out when
/// it has none), marked [`FEW`] under [`MIN_ITEMS`] items; `n/a` without a value.
pub fn display(f: &Figure) -> String {
    if f.summary.mean.is_none() {
        return "n/a".to_owned();
    }
    let mut s = mean_interval(f.summary.mean, f.interval, f.metric.scale());
    s.push_str(&format!(" (n={})", f.n_items));
    if f.n_items < MIN_ITEMS {
        s.push_str(FEW);
    }
    s
}

/// [`display`] of a figure, or `n/a`.
pub fn cell(f: Option<&Figure>) -> String {
    f.map_or_else(|| "n/a".to_owned(), display)
}

/// The footnote that explains the cells.
fn legend(r: &Results) -> String {
    format!(
        "Every cell is the mean over the seeds [95 % percentile bootstrap interval over items, {} resamples, seeds as repeated measures of each item] (n = items); {FEW}: fewer than {MIN_ITEMS} items, the interval is rough. Percentages, BLEU as sacrebleu prints it; `n/a` where a figure has no denominator. `results.json` has every figure with its standard deviation over seeds and its counts.",
        r.bootstrap_resamples
    )
}

/// Writes `bytes` to `dir/name` atomically.
pub(crate) fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), EvalError> {
    let path = dir.join(name);
    cb_step::files::write_atomic(&path, bytes).map_err(|source| EvalError::Write { path, source })
}

/// What an evaluation (`kre::evaluate`, `recall::evaluate`) comes to: its results and its
/// prediction lines.
pub type Evaluated = Result<(Results, Predictions), EvalError>;

/// The prediction lines of a run, spooled to temporary files as they are made (memory holds
/// none of them), in groups written out in the order of their keys.
#[derive(Debug, Default)]
pub struct Predictions {
    groups: BTreeMap<(String, usize, u64), BufWriter<File>>,
    lines: usize,
}

impl Predictions {
    /// Adds a line to the group `key` (lines of one group keep their order).
    pub(crate) fn push(
        &mut self,
        key: (String, usize, u64),
        line: &Value,
    ) -> Result<(), EvalError> {
        let spool = std::env::temp_dir();
        let io = |source| EvalError::Write {
            path: spool.clone(),
            source,
        };
        if !self.groups.contains_key(&key) {
            let f = tempfile::tempfile().map_err(io)?;
            self.groups.insert(key.clone(), BufWriter::new(f));
        }
        let w = self.groups.get_mut(&key).expect("inserted above");
        serde_json::to_writer(&mut *w, line).expect("json");
        w.write_all(b"\n").map_err(io)?;
        self.lines += 1;
        Ok(())
    }

    /// Lines.
    pub fn len(&self) -> usize {
        self.lines
    }

    pub fn is_empty(&self) -> bool {
        self.lines == 0
    }

    /// Writes every line, group after group, to `out`.
    fn copy_to(&self, out: &mut impl Write) -> std::io::Result<()> {
        for w in self.groups.values() {
            let mut f = w.get_ref();
            f.seek(std::io::SeekFrom::Start(0))?;
            std::io::copy(&mut f, out)?;
        }
        Ok(())
    }

    /// Flushes every group to its file.
    pub(crate) fn flush(&mut self) -> Result<(), EvalError> {
        for w in self.groups.values_mut() {
            w.flush().map_err(|source| EvalError::Write {
                path: std::env::temp_dir(),
                source,
            })?;
        }
        Ok(())
    }
}

/// Writes `dir/name` atomically from `fill`: a temporary file `.NAME.tmp-PID` beside it,
/// synced, then renamed over it (as [`cb_step::files::write_atomic`] does with bytes).
fn write_streamed(
    dir: &Path,
    name: &str,
    fill: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> Result<(), EvalError> {
    let path = dir.join(name);
    let err = |source| EvalError::Write {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(err)?;
    let tmp: PathBuf = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let mut w = BufWriter::new(File::create(&tmp).map_err(err)?);
    fill(&mut w).and_then(|()| w.flush()).map_err(err)?;
    let f = w.into_inner().map_err(|e| err(e.into_error()))?;
    f.sync_all().map_err(err)?;
    drop(f);
    std::fs::rename(&tmp, &path).map_err(err)
}

/// Writes the four files into `dir`: the prediction lines as spooled, then the results.
pub fn write_all(
    dir: &Path,
    results: &Results,
    predictions: &Predictions,
) -> Result<(), EvalError> {
    write_streamed(dir, "predictions.jsonl", |w| predictions.copy_to(w))?;
    let mut json = serde_json::to_vec_pretty(results).expect("json");
    json.push(b'\n');
    write_file(dir, "results.json", &json)?;
    write_file(dir, "results.md", markdown(results).as_bytes())?;
    write_file(dir, "results.html", html(results).as_bytes())?;
    Ok(())
}

fn heading(r: &Results) -> String {
    format!(
        "{} evaluation of `{}` ({} backend, {}), seeds {}",
        r.benchmark.to_uppercase(),
        r.model,
        r.backend,
        r.endpoint,
        r.seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The tables as Markdown.
pub fn markdown(r: &Results) -> String {
    let mut s = format!("# {}\n\n{}\n", heading(r), legend(r));
    for t in &r.tables {
        s.push_str(&table_md(t));
    }
    s
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}svg.cb-chart{display:block;margin:.6em 0 1.2em}";

/// A self-contained page: `title` as its title and heading, then `body`.
pub(crate) fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style></head><body><h1>{t}</h1>{body}</body></html>\n",
        t = escape(title)
    )
}

/// A table as Markdown: its title as a heading, the table, its note.
pub(crate) fn table_md(t: &Table) -> String {
    let mut s = format!("\n## {}\n\n", t.title);
    s.push_str(&format!("| {} |\n", t.header.join(" | ")));
    s.push_str(&format!("|{}\n", "---|".repeat(t.header.len())));
    for row in &t.rows {
        s.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    if !t.note.is_empty() {
        s.push_str(&format!("\n{}\n", t.note));
    }
    s
}

/// A table as HTML: its title as a heading, the table, its note.
pub(crate) fn table_html(t: &Table) -> String {
    let mut s = format!("<h2>{}</h2><table><tr>", escape(&t.title));
    for h in &t.header {
        s.push_str(&format!("<th>{}</th>", escape(h)));
    }
    s.push_str("</tr>");
    for row in &t.rows {
        s.push_str("<tr>");
        for c in row {
            s.push_str(&format!("<td>{}</td>", escape(c)));
        }
        s.push_str("</tr>");
    }
    s.push_str("</table>");
    if !t.note.is_empty() {
        s.push_str(&format!("<p>{}</p>", escape(&t.note)));
    }
    s
}

/// Groups: per domain, per (task, setting), each in the order first seen.
pub(crate) type Groups<'a, T> = Vec<(&'a str, Vec<((&'a str, &'a str), Vec<&'a T>)>)>;

/// `items` grouped by the domain, task and setting `key` gives, each in the order first seen.
pub(crate) fn chart_groups<'a, T>(
    items: &'a [T],
    key: impl Fn(&'a T) -> (&'a str, &'a str, &'a str),
) -> Groups<'a, T> {
    let mut out: Groups<'a, T> = Vec::new();
    for f in items {
        let (d, t, s) = key(f);
        let di = match out.iter().position(|x| x.0 == d) {
            Some(i) => i,
            None => {
                out.push((d, Vec::new()));
                out.len() - 1
            }
        };
        let groups = &mut out[di].1;
        match groups.iter_mut().find(|g| g.0 == (t, s)) {
            Some(g) => g.1.push(f),
            None => groups.push(((t, s), vec![f])),
        }
    }
    out
}

/// The figure a run's place on KRE's style axis comes from: zero-shot DMSS (the
/// leaderboard's), else the first setting with a DMSS; over all domains (`all`) when there
/// are several. `None` for RECALL.
pub(crate) fn style_figure<'a, T>(
    items: &'a [T],
    key: impl Fn(&'a T) -> (&'a str, &'a str, &'a str, Metric),
) -> Option<(String, String)> {
    let dmss: Vec<(&str, &str)> = items
        .iter()
        .map(&key)
        .filter(|k| k.1 == "kre" && k.3 == Metric::Dmss)
        .map(|k| (k.0, k.2))
        .collect();
    let domain = if dmss.iter().any(|k| k.0 == "all") {
        "all"
    } else {
        dmss.first()?.0
    };
    let setting = dmss
        .iter()
        .filter(|k| k.0 == domain)
        .map(|k| k.1)
        .find(|s| *s == "zero_shot")
        .or_else(|| dmss.iter().find(|k| k.0 == domain).map(|k| k.1))?;
    Some((domain.to_owned(), setting.to_owned()))
}

/// The title of the style axis for the DMSS of `domain` under `setting`.
pub(crate) fn style_title(domain: &str, setting: &str) -> String {
    let domain = if domain == "all" {
        "all domains"
    } else {
        domain
    };
    format!("Decision-making style: DMSS ×100, {setting}, {domain}")
}

/// What the style axis shows.
pub(crate) fn style_note() -> String {
    format!(
        "KRE's decision-making style axis: DMSS from −100 (dependent: the model takes the context's answer) to +100 (intuitive: it keeps its memory's answer); within ±{} rational/irrational.",
        cb_metrics::kre::STYLE_BAND * 100.0
    )
}

/// A figure as a chart row, in the tables' units.
fn figure_bar(f: &Figure) -> Bar {
    let scale = f.metric.scale();
    Bar {
        label: f.metric.key().to_owned(),
        value: f.summary.mean.map(|m| m * scale),
        interval: f.interval.map(|i| Interval {
            low: i.low * scale,
            high: i.high * scale,
        }),
        text: display(f),
        strong: true,
    }
}

/// The charts of a run: its place on KRE's style axis, then per domain one bar chart per
/// task and setting, each figure with its interval.
fn charts_html(r: &Results) -> String {
    let mut s = String::from("<h2>Charts</h2>");
    s.push_str(&format!(
        "<p>{}</p>",
        escape("Each bar is a figure's mean over the seeds, its whisker the 95 % bootstrap interval over items; the text beside it is the table's cell.")
    ));
    let style = style_figure(&r.figures, |f| {
        (
            f.domain.as_str(),
            f.task.as_str(),
            f.setting.as_str(),
            f.metric,
        )
    });
    if let Some((domain, setting)) = style {
        if let Some(f) = r.get(&domain, "kre", &setting, Metric::Dmss) {
            if let Some(dmss) = f.summary.mean {
                s.push_str(&format!("<p>{}</p>", escape(&style_note())));
                s.push_str(&charts::style_axis(
                    &style_title(&domain, &setting),
                    &[Point {
                        label: r.model.clone(),
                        dmss,
                        interval: f.interval,
                    }],
                ));
            }
        }
    }
    for (domain, groups) in chart_groups(&r.figures, |f| {
        (f.domain.as_str(), f.task.as_str(), f.setting.as_str())
    }) {
        s.push_str(&format!("<h3>{}</h3>", escape(domain)));
        for ((task, setting), figs) in groups {
            let rows: Vec<Bar> = figs.iter().map(|f| figure_bar(f)).collect();
            let natural = figs
                .iter()
                .map(|f| f.metric.natural_range())
                .fold((0.0, 0.0), |a: (f64, f64), b| (a.0.min(b.0), a.1.max(b.1)));
            s.push_str(&charts::bars(
                &format!("{domain} · {task} · {setting}"),
                &rows,
                charts::range_for(&rows, natural),
            ));
        }
    }
    s
}

/// The self-contained page: the tables, then the charts.
pub fn html(r: &Results) -> String {
    let mut body = format!("<p>{}</p>", escape(&legend(r)));
    for t in &r.tables {
        body.push_str(&table_html(t));
    }
    body.push_str(&charts_html(r));
    page(&heading(r), &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_escapes_text_and_loads_nothing() {
        let per = [[1.0, 0.0, 0.5], [1.0, 1.0, 1.0]];
        let f = crate::figures::figure(
            "<x>",
            "qa_a",
            "edited",
            Metric::Acc,
            3,
            &[1, 2],
            &|s, idx| {
                Some(idx.iter().map(|i| per[s as usize - 1][*i]).sum::<f64>() / idx.len() as f64)
            },
        );
        let r = Results {
            benchmark: "recall".into(),
            backend: "openai".into(),
            endpoint: "http://h/v1".into(),
            model: "m<script>".into(),
            seeds: vec![1, 2],
            settings: vec![],
            prompts: vec![],
            data: DataIdentity {
                rows: 3,
                sha256: "0".repeat(64),
            },
            bootstrap_resamples: BOOTSTRAP_RESAMPLES,
            bootstrap_seed: BOOTSTRAP_SEED,
            figures: vec![f],
            tables: vec![Table {
                title: "T".into(),
                header: vec!["a".into()],
                rows: vec![vec!["<b>".into()]],
                note: String::new(),
            }],
        };
        let page = html(&r);
        assert!(!page.contains("<script>") && !page.contains("<b>") && !page.contains("<x>"));
        assert!(!page.contains("http://h") || page.contains("http://h/v1"));
        assert!(!page.contains("src=") && !page.contains("href="));
        assert_eq!(r.figures[0].summary.mean, Some(0.75));
        let c = cell(r.figures.first());
        assert!(c.starts_with("75.00 [") && c.ends_with("] (n=3)†"), "{c}");
        assert!(page.contains(&c), "{c}");
        assert!(markdown(&r).contains("| <b> |"));
        // One chart, one bar with its whisker, titled by domain, task and setting.
        assert_eq!(page.matches("<svg").count(), 1);
        assert_eq!(page.matches("class=\"cb-bar\"").count(), 1);
        assert_eq!(page.matches("class=\"cb-whisker\"").count(), 1);
        assert!(page.contains("&lt;x&gt; · qa_a · edited"));
        // RECALL has no style axis.
        assert!(!page.contains("cb-point"));
    }

    #[test]
    fn style_axis_takes_zero_shot_over_all_domains() {
        let k = |d: &'static str, s: &'static str| (d, "kre", s, Metric::Dmss);
        let figs = [
            k("cose", "mixed"),
            k("cose", "zero_shot"),
            k("all", "mixed"),
            k("all", "zero_shot"),
        ];
        let key = |f: &(&'static str, &'static str, &'static str, Metric)| *f;
        assert_eq!(
            style_figure(&figs, key),
            Some(("all".into(), "zero_shot".into()))
        );
        assert_eq!(
            style_figure(&figs[..1], key),
            Some(("cose".into(), "mixed".into()))
        );
        assert_eq!(
            style_figure(&[("d", "qa_a", "edited", Metric::Acc)], key),
            None
        );
    }
}
