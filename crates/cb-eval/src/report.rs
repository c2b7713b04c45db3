//! The output files: `predictions.jsonl` (one line per item, setting and seed),
//! `results.json` (every figure with its n, mean and std), `results.md` (the papers'
//! tables) and `results.html` (the same tables and bar charts; self-contained, every text
//! escaped, nothing loaded from outside). Each is written atomically; none holds a time stamp,
//! so the same inputs, seeds and cache give the same bytes.

use crate::EvalError;
use cb_audit::html::escape;

use cb_metrics::Summary;
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

/// Metrics shown as percentages (×100); the others are printed as they are.
pub fn scale_of(metric: &str) -> f64 {
    match metric {
        "bleu" => 1.0,
        _ => 100.0,
    }
}

/// `mean ± std` of a figure in the paper's units, or `n/a`.
pub fn cell(f: Option<&Figure>) -> String {
    f.map_or_else(
        || "n/a".to_owned(),
        |f| f.summary.display(scale_of(&f.metric), 2),
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
    let mut s = format!(
        "# {}\n\nEvery cell is the mean ± standard deviation over the seeds (percentages, BLEU as sacrebleu prints it); `n/a` where a figure has no denominator. `results.json` has every figure with its counts.\n",
        heading(r)
    );
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
        escape(&f.summary.display(scale, 2))
    )
}

/// The self-contained page.
pub fn html(r: &Results) -> String {
    let mut s = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style></head><body><h1>{t}</h1>",
        t = escape(&heading(r))
    );
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
        let f = crate::figure(
            "<x>",
            "qa_a",
            "edited",
            "acc",
            3,
            vec![Some(0.5), Some(1.0)],
        );
        let r = Results {
            benchmark: "recall".into(),
            backend: "openai".into(),
            endpoint: "http://h/v1".into(),
            model: "m<script>".into(),
            seeds: vec![1, 2],
            settings: vec![],
            prompts: vec![],
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
        assert!(page.contains("75.00 ± 25.00"));
        assert!(markdown(&r).contains("| <b> |"));
    }
}
