//! RECALL evaluation (paper section 3): QA-A and QA-NA as two-option questions with the
//! original, the edited or no context; text generation from the original or the edited
//! source. Per seed: ACC and the invalid rate per setting, M-Rate (eq. 1) per QA task, corpus
//! BLEU, mean ROUGE-L F-measure and R-Rate (eq. 2 or 3) for text generation.

use crate::metric::Metric;
/// The settings, in the paper's order: original context, edited context, no context.
pub use crate::metric::RECALL_SETTINGS as SETTINGS;
use crate::options::settings;
use crate::outcomes::{load_checked, Asked, Group, Judge, Judged, Outcomes};
use crate::report::{cell, row_sha256, Evaluated, Table};
use crate::run::{extract_reply, run_stream, Job, Reply};
use crate::scores::{Answer, Scores, TextScore};
use crate::source::Source;
use crate::templates::Templates;
use crate::{EvalError, EvalOptions, Results};
use cb_audit::{FileKind, Payload, Row};
use cb_llm::Llm;
use cb_llm::Progress;
use cb_metrics::bleu::{segment_stats, sentence_bleu};
use cb_metrics::recall::{RCounts, TgSample};
use cb_metrics::rouge::rouge_l;
use cb_model::{item_rng, letter, KvItem, QaRow, TextGenRow};
use cb_step::choice::option_views;
use minijinja::context;
use rand::Rng;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;

fn task_of(kind: FileKind) -> &'static str {
    match kind {
        FileKind::QaA => "qa_a",
        FileKind::QaNa => "qa_na",
        _ => "text_generation",
    }
}

/// What a job was for: what it asked and, for QA, the options in the order shown and the
/// right one.
struct Meta {
    asked: Asked,
    options: Vec<String>,
    gold: usize,
}

pub(crate) fn qa(row: &cb_audit::Row) -> &QaRow {
    match &row.payload {
        Payload::Qa(q) => q,
        _ => unreachable!("loaded as QA"),
    }
}

fn tg(row: &cb_audit::Row) -> &TextGenRow {
    match &row.payload {
        Payload::TextGen(t) => t,
        _ => unreachable!("loaded as text generation"),
    }
}

/// The options in the order shown for `seed`, and the index of the right one.
fn shown_options(q: &QaRow, seed: u64) -> Result<(Vec<String>, usize), EvalError> {
    let gold = cb_model::letter_index(&q.answer_option)
        .filter(|i| *i < q.options.len())
        .ok_or_else(|| {
            EvalError::Config(format!(
                "row {}: answer_option {:?} names none of its {} options",
                q.id,
                q.answer_option,
                q.options.len()
            ))
        })?;
    let mut options = q.options.clone();
    let mut gold = gold;
    if item_rng(seed, "eval-recall", &q.id, "options").random_bool(0.5) {
        options.reverse();
        gold = options.len() - 1 - gold;
    }
    Ok((options, gold))
}

/// The conversation that asks QA row `q` in `setting` (`original`, `edited` or `none`) for
/// `seed` with the template `t_qa`, the options in the order shown, and the right one.
pub(crate) fn qa_prompt(
    templates: &Templates,
    t_qa: &cb_step::Prompt,
    q: &QaRow,
    setting: &str,
    seed: u64,
) -> Result<(Vec<cb_llm::Message>, Vec<String>, usize), EvalError> {
    let (options, gold) = shown_options(q, seed)?;
    let ctx = match setting {
        "original" => q.context.as_str(),
        "edited" => q.edited_context.as_str(),
        _ => "",
    };
    let rendered = templates.render(
        t_qa,
        context! { context => ctx, question => &q.question, options => option_views(&options) },
    )?;
    Ok((rendered, options, gold))
}

/// One generated text's scores against the row's target (the R-Rate's counts with the
/// edited source only).
fn text_score(t: &TextGenRow, output: &str, edited: bool, aligned: bool) -> TextScore {
    let r = if edited {
        let sample = TgSample {
            edited_words: &t.edited_words,
            original_words: &t.original_words,
            output,
            target: &t.target,
        };
        RCounts::of(&sample, aligned)
    } else {
        RCounts::default()
    };
    TextScore {
        bleu: segment_stats(output, &t.target),
        rouge: rouge_l(&t.target, output).fmeasure,
        r,
    }
}

/// The domain of a RECALL file: its folder's name.
pub(crate) fn domain_of(path: &std::path::Path) -> String {
    path.parent()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A text-generation source: a paragraph, or a record of key-value items.
enum TgSource<'a> {
    Paragraph(&'a str),
    Record(Vec<KvItem>),
}

/// The original or the edited source of a text-generation row.
fn tg_source<'a>(row: &'a Row, setting: &str) -> Result<TgSource<'a>, EvalError> {
    let t = tg(row);
    let source = if setting == "original" {
        &t.source
    } else {
        &t.edited_source
    };
    match source {
        Value::String(paragraph) => Ok(TgSource::Paragraph(paragraph)),
        other => serde_json::from_value(other.clone())
            .map(TgSource::Record)
            .map_err(|e| {
                EvalError::Config(format!(
                    "{} row {}: source is neither a paragraph nor a record: {e}",
                    row.file, row.id
                ))
            }),
    }
}

/// The first pass's check of a row: what its jobs will need of it.
fn check(kind: FileKind, row: &Row) -> Result<(), EvalError> {
    match kind {
        FileKind::TextGeneration => {
            tg_source(row, "original")?;
            tg_source(row, "edited")?;
        }
        _ => {
            shown_options(qa(row), 0)?;
        }
    }
    Ok(())
}

/// The settings a file of `kind` is asked in: those run, but for text generation the
/// no-context one.
fn asked(kind: FileKind, run: &[String]) -> Vec<&'static str> {
    SETTINGS
        .into_iter()
        .filter(|s| run.iter().any(|w| w == s))
        .filter(|s| kind != FileKind::TextGeneration || *s != "none")
        .collect()
}

/// RECALL's prompt templates.
struct Prompts {
    qa: cb_step::Prompt,
    record: cb_step::Prompt,
    text: cb_step::Prompt,
    templates: Templates,
}

impl Prompts {
    fn load(dir: &cb_step::Files) -> Result<Prompts, EvalError> {
        Ok(Prompts {
            qa: Templates::load(dir, "recall_qa.md")?,
            record: Templates::load(dir, "recall_tg_record.md")?,
            text: Templates::load(dir, "recall_tg_text.md")?,
            templates: Templates::new(),
        })
    }

    /// The template and conversation that ask text-generation row `row` in `setting`.
    fn tg(
        &self,
        row: &Row,
        setting: &str,
    ) -> Result<(&cb_step::Prompt, Vec<cb_llm::Message>), EvalError> {
        let subject = &tg(row).subject;
        Ok(match tg_source(row, setting)? {
            TgSource::Paragraph(paragraph) => (
                &self.text,
                self.templates.render(
                    &self.text,
                    context! { subject => subject, paragraph => paragraph },
                )?,
            ),
            TgSource::Record(items) => (
                &self.record,
                self.templates.render(
                    &self.record,
                    context! { subject => subject, items => items },
                )?,
            ),
        })
    }

    /// The job that asks `row` of file `fi` in `setting` with `seed`.
    fn job(
        &self,
        f: &Source,
        fi: usize,
        row: &Arc<Row>,
        hash: &Arc<str>,
        setting: &'static str,
        seed: u64,
    ) -> Result<(Job, Meta), EvalError> {
        let (prompt, messages, options, gold) = if f.kind == FileKind::TextGeneration {
            let (prompt, messages) = self.tg(row, setting)?;
            (prompt, messages, Vec::new(), 0)
        } else {
            let (messages, options, gold) =
                qa_prompt(&self.templates, &self.qa, qa(row), setting, seed)?;
            (&self.qa, messages, options, gold)
        };
        let job = Job {
            label: format!(
                "{}/{}/{setting}/{seed}/{}",
                f.domain,
                task_of(f.kind),
                row.id
            ),
            messages,
            template: format!("eval/{}", prompt.name),
            template_hash: prompt.hash.clone(),
            seed,
            top_logprobs: None,
        };
        let asked = Asked {
            file: fi,
            row: row.clone(),
            hash: hash.clone(),
            setting,
            seed,
        };
        let meta = Meta {
            asked,
            options,
            gold,
        };
        Ok((job, meta))
    }
}

impl Judge for Meta {
    const BENCHMARK: &'static str = "recall";

    fn reads(kind: FileKind) -> bool {
        matches!(
            kind,
            FileKind::QaA | FileKind::QaNa | FileKind::TextGeneration
        )
    }

    /// The domain the file's name says.
    fn domain(path: &Path, _: &Row) -> String {
        domain_of(path)
    }

    fn check(f: &Source, row: &Row) -> Result<(), EvalError> {
        check(f.kind, row)
    }

    fn asked(&self) -> &Asked {
        &self.asked
    }

    fn task(f: &Source) -> Option<&'static str> {
        Some(task_of(f.kind))
    }

    /// Text generation: the target and the text's scores; QA: the choice, scored against the
    /// right option. Every line goes to the one group (row order).
    fn judge(&self, r: &Reply, to: Judged<'_>) -> Result<Group, EvalError> {
        let (a, s, line) = (&self.asked, to.scores, to.line);
        if to.file.kind == FileKind::TextGeneration {
            let t = tg(&a.row);
            let score = text_score(t, &r.raw, a.setting == "edited", s.aligned);
            line.insert("target".into(), json!(t.target));
            line.insert(
                "sentence_bleu".into(),
                json!(sentence_bleu(&r.raw, &t.target)),
            );
            line.insert("rouge_l".into(), json!(score.rouge));
            s.push_text(a.setting, a.seed, score);
        } else {
            let (options, gold) = (&self.options, self.gold);
            let x = extract_reply(r, options);
            line.insert("choice".into(), json!(x.choice.map(letter)));
            line.insert("choice_text".into(), json!(x.choice.map(|i| &options[i])));
            line.insert("expected".into(), json!(letter(gold)));
            line.insert("correct".into(), json!(x.choice == Some(gold)));
            line.insert("how".into(), json!(x.how));
            s.push_answer(a.setting, a.seed, Answer::new(x.choice, Some(gold), None));
        }
        Ok((String::new(), 0, 0))
    }
}

/// Each file's scores, empty: of its rows, text generation's with how its words pair up
/// (from its first row).
fn empty_scores(files: &[Source]) -> Result<Vec<Scores>, EvalError> {
    files
        .iter()
        .map(|f| {
            let aligned = f.kind == FileKind::TextGeneration && tg(&f.row(0)?).aligned;
            Ok(Scores::new(f.len(), aligned))
        })
        .collect()
}

/// Runs the RECALL evaluation; returns the results and the prediction lines. The rows are
/// read twice, one at a time: to check and count them, then to ask them.
pub async fn evaluate(llm: &Llm, opts: &EvalOptions, progress: &dyn Progress) -> Evaluated {
    let (files, identity) = load_checked::<Meta>(opts)?;
    let wanted = settings(&opts.settings, &SETTINGS)?;
    let p = Prompts::load(&opts.prompts)?;
    let seeds = opts.seeds.as_slice();
    let total: usize = files
        .iter()
        .map(|f| f.len() * asked(f.kind, &wanted).len() * seeds.len())
        .sum();
    let mut out = Outcomes::new(empty_scores(&files)?);
    let jobs = files.iter().enumerate().flat_map(|(fi, f)| {
        let settings = asked(f.kind, &wanted);
        let (p, settings) = (&p, settings);
        f.rows().flat_map(move |r| {
            let (_, row) = match r {
                Ok(r) => r,
                Err(e) => return vec![Err(e)],
            };
            let (row, hash): (Arc<Row>, Arc<str>) =
                (Arc::new(row.clone()), row_sha256(&row).into());
            settings
                .iter()
                .flat_map(|s| seeds.iter().map(move |seed| (*s, *seed)))
                .map(|(s, seed)| p.job(f, fi, &row, &hash, s, seed))
                .collect()
        })
    });
    let (sampling, conc) = (opts.sampling, opts.concurrency);
    run_stream(
        llm,
        jobs,
        sampling,
        conc,
        "eval recall",
        total as u64,
        progress,
        |m, r| out.record(&files, &m, &r),
    )
    .await?;
    let figures = files
        .iter()
        .zip(&out.scores)
        .flat_map(|(f, s)| {
            crate::figures::figures_of(&f.domain, task_of(f.kind), s, &wanted, seeds)
        })
        .collect();
    let prompts = [&p.qa, &p.record, &p.text];
    let data = identity.finish();
    let mut results = Results::new("recall", llm, opts, data, wanted, &prompts, figures);
    results.tables = tables(&results, &files);
    Ok((results, out.finish()?))
}

fn tables(r: &Results, files: &[Source]) -> Vec<Table> {
    let mut domains: Vec<&str> = files.iter().map(|f| f.domain.as_str()).collect();
    domains.dedup();
    let g = |d: &str, t: &str, s: &str, m: Metric| -> String { cell(r.get(d, t, s, m)) };
    let mut quality = Vec::new();
    let mut robust = Vec::new();
    let mut invalid = Vec::new();
    for d in &domains {
        for s in SETTINGS {
            if !r.settings.iter().any(|w| w == s) {
                continue;
            }
            let label = if s == "none" { "no" } else { s };
            quality.push(vec![
                (*d).to_owned(),
                label.to_owned(),
                g(d, "qa_a", s, Metric::Acc),
                g(d, "qa_a", s, Metric::AccKnown),
                g(d, "qa_na", s, Metric::Acc),
                g(d, "qa_na", s, Metric::AccKnown),
                g(d, "text_generation", s, Metric::Bleu),
                g(d, "text_generation", s, Metric::RougeL),
            ]);
            invalid.push(vec![
                (*d).to_owned(),
                label.to_owned(),
                g(d, "qa_a", s, Metric::InvalidRate),
                g(d, "qa_na", s, Metric::InvalidRate),
            ]);
        }
        robust.push(vec![
            (*d).to_owned(),
            g(d, "qa_a", "edited", Metric::MRate),
            g(d, "qa_na", "edited", Metric::MRate),
            g(d, "text_generation", "edited", Metric::RRate),
        ]);
    }
    let h = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    vec![
        Table {
            title: "Response quality (the layout of RECALL Table 3)".into(),
            header: h(&["Domain", "Context", "QA-A ACC ↑", "QA-A ACC, known ↑", "QA-NA ACC ↑", "QA-NA ACC, known ↑", "TG BLEU ↑", "TG ROUGE-L ↑"]),
            rows: quality,
            note: "ACC counts invalid answers as wrong. \"known\": on the items the model answers right with no context (per seed; n is their mean count over seeds, rounded up), the split KRE's VR and RR use. BLEU is sacrebleu's corpus BLEU (13a, exp smoothing); ROUGE-L the mean F-measure (rouge-score, no stemmer). Text generation has no no-context setting.".into(),
        },
        Table {
            title: "Robustness, edited context (the layout of RECALL Table 4)".into(),
            header: h(&["Domain", "QA-A M-Rate ↓", "QA-NA M-Rate ↓", "TG R-Rate ↓"]),
            rows: robust,
            note: "M-Rate needs the edited and the no-context settings; it is on the known items by definition (eq. 1), and its n is their mean count over seeds, rounded up. R-Rate: eq. 2 (EventKG, E and O aligned) or eq. 3 (UJ, two sets), with edited words looked for in the output and original words in the target — a reading of the paper, see cb-metrics.".into(),
        },
        Table {
            title: "Invalid answers (no option, several options, refusals, \"I don't know\")".into(),
            header: h(&["Domain", "Context", "QA-A invalid", "QA-NA invalid"]),
            rows: invalid,
            note: String::new(),
        },
    ]
}
