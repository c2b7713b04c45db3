//! RECALL evaluation (paper section 3): QA-A and QA-NA as two-option questions with the
//! original, the edited or no context; text generation from the original or the edited
//! source. Per seed: ACC and the invalid rate per setting, M-Rate (eq. 1) per QA task, corpus
//! BLEU, mean ROUGE-L F-measure and R-Rate (eq. 2 or 3) for text generation.

use crate::report::{cell, Table};
use crate::run::extract_reply;
use crate::run::{run_jobs, Job};
use crate::{
    figure, load, option_views, settings, EvalError, EvalOptions, Figure, Loaded, Results,
    Templates,
};
use cb_audit::{FileKind, Payload};
use cb_llm::Llm;
use cb_llm::Progress;
use cb_metrics::bleu::{score, segment_stats, sentence_bleu, BleuStats, Smooth};
use cb_metrics::ratio;
use cb_metrics::recall::{accuracy, m_rate, RCounts, TgSample};
use cb_metrics::rouge::rouge_l;
use cb_model::{item_rng, letter, KvItem, QaRow, TextGenRow};
use minijinja::context;
use rand::Rng;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// (file, setting, seed).
type Key = (usize, usize, u64);

/// The settings, in the paper's order: original context, edited context, no context.
pub const SETTINGS: [&str; 3] = ["original", "edited", "none"];

fn task_of(kind: FileKind) -> &'static str {
    match kind {
        FileKind::QaA => "qa_a",
        FileKind::QaNa => "qa_na",
        _ => "text_generation",
    }
}

/// What a job was for.
struct Meta {
    file: usize,
    row: usize,
    setting: usize,
    seed: u64,
    /// QA: the options in the order shown and the right one.
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

/// The domain of a RECALL file: its folder's name.
pub(crate) fn domain_of(path: &std::path::Path) -> String {
    path.parent()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Runs the RECALL evaluation; returns the results and the prediction lines.
pub async fn evaluate(
    llm: &Llm,
    opts: &EvalOptions,
    progress: &dyn Progress,
) -> Result<(Results, Vec<Value>), EvalError> {
    let files = load(
        opts,
        |k| matches!(k, FileKind::QaA | FileKind::QaNa | FileKind::TextGeneration),
        |path, _| domain_of(path),
    )?;
    let wanted = settings(&opts.settings, &SETTINGS)?;
    let dir = &opts.prompts;
    let t_qa = Templates::load(dir, "recall_qa.md")?;
    let t_record = Templates::load(dir, "recall_tg_record.md")?;
    let t_text = Templates::load(dir, "recall_tg_text.md")?;
    let templates = Templates::new();
    let mut metas = Vec::new();
    let mut jobs = Vec::new();
    for (fi, f) in files.iter().enumerate() {
        let task = task_of(f.kind);
        for (ri, row) in f.rows.iter().enumerate() {
            for (si, setting) in SETTINGS.iter().enumerate() {
                if !wanted.iter().any(|w| w == setting) {
                    continue;
                }
                if f.kind == FileKind::TextGeneration && *setting == "none" {
                    continue;
                }
                for &seed in &opts.seeds {
                    let (prompt, messages, options, gold) = if f.kind == FileKind::TextGeneration {
                        let t = tg(row);
                        let source = if *setting == "original" {
                            &t.source
                        } else {
                            &t.edited_source
                        };
                        match source {
                            Value::String(paragraph) => (
                                &t_text,
                                templates.render(
                                    &t_text,
                                    context! { subject => &t.subject, paragraph => paragraph },
                                )?,
                                Vec::new(),
                                0,
                            ),
                            other => {
                                let items: Vec<KvItem> = serde_json::from_value(other.clone()).map_err(|e| {
                                    EvalError::Config(format!("{} row {}: source is neither a paragraph nor a record: {e}", row.file, row.id))
                                })?;
                                (
                                    &t_record,
                                    templates.render(
                                        &t_record,
                                        context! { subject => &t.subject, items => items },
                                    )?,
                                    Vec::new(),
                                    0,
                                )
                            }
                        }
                    } else {
                        let (rendered, options, gold) =
                            qa_prompt(&templates, &t_qa, qa(row), setting, seed)?;
                        (&t_qa, rendered, options, gold)
                    };
                    jobs.push(Job {
                        label: format!("{}/{task}/{setting}/{seed}/{}", f.domain, row.id),
                        messages,
                        template: format!("eval/{}", prompt.name),
                        template_hash: prompt.hash.clone(),
                        seed,
                    });
                    metas.push(Meta {
                        file: fi,
                        row: ri,
                        setting: si,
                        seed,
                        options,
                        gold,
                    });
                }
            }
        }
    }
    let replies = run_jobs(
        llm,
        jobs,
        opts.sampling,
        opts.concurrency,
        "eval recall",
        progress,
    )
    .await?;

    // Per file, setting and seed: the outcomes in row order.
    let mut predictions = Vec::with_capacity(replies.len());
    let mut correct: BTreeMap<Key, Vec<(usize, bool, bool)>> = BTreeMap::new();
    let mut outputs: BTreeMap<Key, Vec<(usize, String)>> = BTreeMap::new();
    for (m, r) in metas.iter().zip(&replies) {
        let f = &files[m.file];
        let row = &f.rows[m.row];
        let setting = SETTINGS[m.setting];
        let base = json!({
            "benchmark": "recall",
            "domain": f.domain,
            "task": task_of(f.kind),
            "setting": setting,
            "seed": m.seed,
            "item": row.id,
            "prompt_key": r.key,
            "raw": r.raw,
        });
        let mut line = base.as_object().cloned().unwrap_or_default();
        if f.kind == FileKind::TextGeneration {
            let target = &tg(row).target;
            line.insert("target".into(), json!(target));
            line.insert("sentence_bleu".into(), json!(sentence_bleu(&r.raw, target)));
            line.insert("rouge_l".into(), json!(rouge_l(target, &r.raw).fmeasure));
            outputs
                .entry((m.file, m.setting, m.seed))
                .or_default()
                .push((m.row, r.raw.clone()));
        } else {
            let x = extract_reply(r, &m.options);
            let ok = x.choice == Some(m.gold);
            line.insert("choice".into(), json!(x.choice.map(letter)));
            line.insert("choice_text".into(), json!(x.choice.map(|i| &m.options[i])));
            line.insert("expected".into(), json!(letter(m.gold)));
            line.insert("correct".into(), json!(ok));
            line.insert("how".into(), json!(x.how));
            correct
                .entry((m.file, m.setting, m.seed))
                .or_default()
                .push((m.row, ok, x.choice.is_none()));
        }
        if let Some(e) = &r.error {
            line.insert("error".into(), json!(e));
        }
        predictions.push(Value::Object(line));
    }

    let mut figures = Vec::new();
    let seeds = opts.seeds.as_slice();
    for (fi, f) in files.iter().enumerate() {
        let task = task_of(f.kind);
        let n = f.rows.len();
        if f.kind == FileKind::TextGeneration {
            for (si, setting) in SETTINGS.iter().enumerate().take(2) {
                if !wanted.iter().any(|w| w == setting) {
                    continue;
                }
                // One seed's outputs, in row order, at the resampled positions.
                let outs = |seed: u64, idx: &[usize]| {
                    outputs
                        .get(&(fi, si, seed))
                        .map(|o| crate::pick(o, idx))
                        .unwrap_or_default()
                };
                // Per item and seed, computed once: BLEU's sufficient statistics (corpus BLEU
                // of a resample is the score of their sum) and the ROUGE-L F-measure.
                let per_item: BTreeMap<u64, Vec<(BleuStats, f64)>> = seeds
                    .iter()
                    .map(|&seed| {
                        let o = outs(seed, &(0..n).collect::<Vec<_>>());
                        let v = o
                            .iter()
                            .map(|(ri, out)| {
                                let target = tg(&f.rows[*ri]).target.as_str();
                                (segment_stats(out, target), rouge_l(target, out).fmeasure)
                            })
                            .collect();
                        (seed, v)
                    })
                    .collect();
                let picked = |seed: u64, idx: &[usize]| {
                    per_item
                        .get(&seed)
                        .map(|v| crate::pick(v, idx))
                        .unwrap_or_default()
                };
                let bleu = |seed: u64, idx: &[usize]| {
                    let o = picked(seed, idx);
                    (!o.is_empty()).then(|| {
                        let mut total = BleuStats::default();
                        for (st, _) in &o {
                            total += *st;
                        }
                        score(&total, Smooth::Exp, false)
                    })
                };
                figures.push(figure(&f.domain, task, setting, "bleu", n, seeds, &bleu));
                let rouge = |seed: u64, idx: &[usize]| {
                    let o = picked(seed, idx);
                    (!o.is_empty()).then(|| o.iter().map(|x| x.1).sum::<f64>() / o.len() as f64)
                };
                figures.push(figure(
                    &f.domain, task, setting, "rouge_l", n, seeds, &rouge,
                ));
                if *setting == "edited" {
                    // Per item and seed, computed once: the phrase counts behind the R-Rate
                    // (the R-Rate of a resample is that of their sum).
                    let aligned = f.rows.first().is_some_and(|r| tg(r).aligned);
                    let counts: BTreeMap<u64, Vec<RCounts>> = seeds
                        .iter()
                        .map(|&seed| {
                            let o = outs(seed, &(0..n).collect::<Vec<_>>());
                            let v = o
                                .iter()
                                .map(|(ri, out)| {
                                    let t = tg(&f.rows[*ri]);
                                    let sample = TgSample {
                                        edited_words: &t.edited_words,
                                        original_words: &t.original_words,
                                        output: out,
                                        target: &t.target,
                                    };
                                    RCounts::of(&sample, aligned)
                                })
                                .collect();
                            (seed, v)
                        })
                        .collect();
                    let rr = |seed: u64, idx: &[usize]| {
                        let picked = crate::pick(counts.get(&seed)?, idx);
                        let mut total = RCounts::default();
                        for c in picked {
                            total += c;
                        }
                        total.r_rate(aligned)
                    };
                    figures.push(figure(&f.domain, task, "edited", "r_rate", n, seeds, &rr));
                }
            }
            continue;
        }
        for (si, setting) in SETTINGS.iter().enumerate() {
            if !wanted.iter().any(|w| w == setting) {
                continue;
            }
            let get = |seed: u64, idx: &[usize]| {
                correct
                    .get(&(fi, si, seed))
                    .map(|c| crate::pick(c, idx))
                    .unwrap_or_default()
            };
            let acc = |seed: u64, idx: &[usize]| {
                accuracy(&get(seed, idx).iter().map(|c| c.1).collect::<Vec<_>>())
            };
            figures.push(figure(&f.domain, task, setting, "acc", n, seeds, &acc));
            let inv = |seed: u64, idx: &[usize]| {
                let g = get(seed, idx);
                ratio(g.iter().filter(|c| c.2).count(), g.len())
            };
            figures.push(figure(
                &f.domain,
                task,
                setting,
                "invalid_rate",
                n,
                seeds,
                &inv,
            ));
        }
        if !wanted.iter().any(|w| w == "none") {
            continue;
        }
        // The items each seed answers right without context: M-Rate's denominator, and the
        // items the `acc@known` figures are on (the split KRE's VR and RR use). Their `n` is
        // the mean over seeds of that count; the bootstrap resamples all items and takes each
        // resample's known ones, as the figure itself does.
        let known_n = crate::mean_count(seeds.iter().map(|s| {
            correct
                .get(&(fi, 2, *s))
                .map_or(0, |c| c.iter().filter(|x| x.1).count())
        }));
        for (si, setting) in SETTINGS.iter().enumerate().take(2) {
            if !wanted.iter().any(|w| w == setting) {
                continue;
            }
            let acc_known = |seed: u64, idx: &[usize]| {
                let none = crate::pick(correct.get(&(fi, 2, seed))?, idx);
                let with = crate::pick(correct.get(&(fi, si, seed))?, idx);
                let on_known: Vec<bool> = none
                    .iter()
                    .zip(&with)
                    .filter(|(a, _)| a.1)
                    .map(|(_, b)| b.1)
                    .collect();
                accuracy(&on_known)
            };
            figures.push(Figure {
                n_items: known_n,
                ..figure(&f.domain, task, setting, "acc@known", n, seeds, &acc_known)
            });
        }
        if wanted.iter().any(|w| w == "edited") {
            let mr = |seed: u64, idx: &[usize]| {
                let none = crate::pick(correct.get(&(fi, 2, seed))?, idx);
                let edited = crate::pick(correct.get(&(fi, 1, seed))?, idx);
                let pairs: Vec<(bool, bool)> =
                    none.iter().zip(&edited).map(|(a, b)| (a.1, b.1)).collect();
                m_rate(&pairs)
            };
            figures.push(Figure {
                n_items: known_n,
                ..figure(&f.domain, task, "edited", "m_rate", n, seeds, &mr)
            });
        }
    }
    let prompts = [&t_qa, &t_record, &t_text];
    let mut results = Results::new("recall", llm, opts, &files, wanted, &prompts, figures);
    results.tables = tables(&results, &files);
    Ok((results, predictions))
}

fn tables(r: &Results, files: &[Loaded]) -> Vec<Table> {
    let mut domains: Vec<&str> = files.iter().map(|f| f.domain.as_str()).collect();
    domains.dedup();
    let g = |d: &str, t: &str, s: &str, m: &str| -> String { cell(r.get(d, t, s, m)) };
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
                g(d, "qa_a", s, "acc"),
                g(d, "qa_a", s, "acc@known"),
                g(d, "qa_na", s, "acc"),
                g(d, "qa_na", s, "acc@known"),
                g(d, "text_generation", s, "bleu"),
                g(d, "text_generation", s, "rouge_l"),
            ]);
            invalid.push(vec![
                (*d).to_owned(),
                label.to_owned(),
                g(d, "qa_a", s, "invalid_rate"),
                g(d, "qa_na", s, "invalid_rate"),
            ]);
        }
        robust.push(vec![
            (*d).to_owned(),
            g(d, "qa_a", "edited", "m_rate"),
            g(d, "qa_na", "edited", "m_rate"),
            g(d, "text_generation", "edited", "r_rate"),
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
