//! The output files: `predictions.jsonl` (one line per item, setting and seed),
//! `results.json` (every figure with its n, mean, std and 95 % bootstrap interval), `results.md` (the papers'
//! tables) and `results.html` (the same tables and bar charts; self-contained, every text
//! escaped, nothing loaded from outside). Each is written atomically; none holds a time stamp,
//! so the same inputs, seeds and cache give the same bytes.

use crate::EvalError;
use cb_audit::html::escape;

use cb_metrics::{Interval, Summary};
use serde::Serialize;
use serde_json::Value;
use std::path::Path;

/// One figure: a metric of one domain, task and setting over the seeds.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    pub domain: String,
    pub task: String,
    pub setting: String,
    pub metric: String,
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
    /// Resamples behind each figure's `interval`.
    pub bootstrap_resamples: usize,
    /// Seed of the resampling generator.
    pub bootstrap_seed: u64,
    pub figures: Vec<Figure>,
    #[serde(skip)]
    pub tables: Vec<Table>,
}

impl Results {
    /// The results of a run of `benchmark` with `llm`, before the tables are made.
    pub fn new(
        benchmark: &str,
        llm: &cb_llm::Llm,
        opts: &crate::EvalOptions,
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
            bootstrap_resamples: BOOTSTRAP_RESAMPLES,
            bootstrap_seed: BOOTSTRAP_SEED,
            figures,
            tables: Vec::new(),
        }
    }

    /// The figure for these keys, if any.
    pub fn get(&self, domain: &str, task: &str, setting: &str, metric: &str) -> Option<&Figure> {
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

/// Metrics shown as percentages (×100); the others are printed as they are.
pub fn scale_of(metric: &str) -> f64 {
    match metric {
        "bleu" => 1.0,
        _ => 100.0,
    }
}

/// `mean [low, high] (n=items)` of a figure in the paper's units (the interval left out when
/// it has none), marked [`FEW`] under [`MIN_ITEMS`] items; `n/a` without a value.
pub fn display(f: &Figure) -> String {
    let scale = scale_of(&f.metric);
    let Some(mean) = f.summary.mean else {
        return "n/a".to_owned();
    };
    let mut s = format!("{:.2}", mean * scale);
    if let Some(i) = f.interval {
        s.push_str(&format!(" [{:.2}, {:.2}]", i.low * scale, i.high * scale));
    }
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

/// Writes the four files into `dir`.
pub fn write_all(dir: &Path, results: &Results, predictions: &[Value]) -> Result<(), EvalError> {
    let mut lines = Vec::new();
    for p in predictions {
        lines.extend(serde_json::to_vec(p).expect("json"));
        lines.push(b'\n');
    }
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.join(name);
        cb_step::files::write_atomic(&path, bytes)
            .map_err(|source| EvalError::Write { path, source })
    };
    write("predictions.jsonl", &lines)?;
    let mut json = serde_json::to_vec_pretty(results).expect("json");
    json.push(b'\n');
    write("results.json", &json)?;
    write("results.md", markdown(results).as_bytes())?;
    write("results.html", html(results).as_bytes())?;
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
        s.push_str(&format!("\n## {}\n\n", t.title));
        s.push_str(&format!("| {} |\n", t.header.join(" | ")));
        s.push_str(&format!("|{}\n", "---|".repeat(t.header.len())));
        for row in &t.rows {
            s.push_str(&format!("| {} |\n", row.join(" | ")));
        }
        if !t.note.is_empty() {
            s.push_str(&format!("\n{}\n", t.note));
        }
    }
    s
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}.bar{display:flex;align-items:center;margin:2px 0}.bar .l{width:26em;font-size:.85em}.bar .t{position:relative;width:30em;height:1em;background:#eee}.bar .f{position:absolute;top:0;height:1em;background:#4a7fb5}.bar .z{position:absolute;left:50%;top:0;width:1px;height:1em;background:#333}.bar .v{margin-left:.6em;font-size:.85em}";

/// One bar: signed metrics (DMSS, adaptivity) grow from the middle.
fn bar(label: &str, f: &Figure) -> String {
    let scale = scale_of(&f.metric);
    let signed = matches!(f.metric.as_str(), "dmss" | "adaptivity");
    let Some(mean) = f.summary.mean else {
        return format!(
            "<div class=\"bar\"><span class=\"l\">{}</span><span class=\"t\"></span><span class=\"v\">n/a</span></div>",
            escape(label)
        );
    };
    let (left, width) = if signed {
        let half = (mean.clamp(-2.0, 2.0) / 2.0) * 50.0;
        if half >= 0.0 {
            (50.0, half)
        } else {
            (50.0 + half, -half)
        }
    } else {
        (0.0, (mean * scale).clamp(0.0, 100.0))
    };
    format!(
        "<div class=\"bar\"><span class=\"l\">{}</span><span class=\"t\"><span class=\"f\" style=\"left:{left:.2}%;width:{width:.2}%\"></span>{}</span><span class=\"v\">{}</span></div>",
        escape(label),
        if signed { "<span class=\"z\"></span>" } else { "" },
        escape(&display(f))
    )
}

/// The self-contained page.
pub fn html(r: &Results) -> String {
    let mut s = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style></head><body><h1>{t}</h1>",
        t = escape(&heading(r))
    );
    s.push_str(&format!("<p>{}</p>", escape(&legend(r))));
    for t in &r.tables {
        s.push_str(&format!("<h2>{}</h2><table><tr>", escape(&t.title)));
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
    }
    let mut metrics: Vec<&str> = r.figures.iter().map(|f| f.metric.as_str()).collect();
    metrics.sort_unstable();
    metrics.dedup();
    for m in metrics {
        s.push_str(&format!("<h2>{}</h2>", escape(m)));
        for f in r.figures.iter().filter(|f| f.metric == m) {
            let label = format!("{} · {} · {}", f.domain, f.task, f.setting);
            s.push_str(&bar(&label, f));
        }
    }
    s.push_str("</body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_escapes_text_and_loads_nothing() {
        let per = [[1.0, 0.0, 0.5], [1.0, 1.0, 1.0]];
        let f = crate::figure("<x>", "qa_a", "edited", "acc", 3, &[1, 2], &|s, idx| {
            Some(idx.iter().map(|i| per[s as usize - 1][*i]).sum::<f64>() / idx.len() as f64)
        });
        let r = Results {
            benchmark: "recall".into(),
            backend: "openai".into(),
            endpoint: "http://h/v1".into(),
            model: "m<script>".into(),
            seeds: vec![1, 2],
            settings: vec![],
            prompts: vec![],
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
    }
}
