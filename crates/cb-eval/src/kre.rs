//! KRE evaluation (paper sections 3.1 to 3.5). Per seed: the memory assessment (no context)
//! splits the rows into known and unknown; every other setting asks the known rows with the
//! negative context (VR) and the unknown ones with the golden context (RR): zero-shot, the
//! three few-shot configurations (all-positive, all-negative, mixed) and the two roles
//! (dependent, intuitive). Metrics come from `cb_metrics::kre` (see `kre_tables`).

use crate::run::{extract_reply, run_jobs, Job, Reply};
use crate::{load, option_views, settings, EvalError, EvalOptions, Loaded, Results, Templates};
use cb_audit::{FileKind, Payload, Row};
use cb_llm::Llm;
use cb_llm::Progress;
use cb_model::{item_rng, letter, letter_index, KreRow};
use cb_step::choice::Extracted;
use cb_step::Prompt;
use minijinja::context;
use rand::seq::IndexedRandom;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Every setting, in the paper's order. `memory` always runs: the others need its split.
pub const SETTINGS: [&str; 7] = [
    "memory",
    "zero_shot",
    "all_positive",
    "all_negative",
    "mixed",
    "role_dependent",
    "role_intuitive",
];
pub(crate) const FEW_SHOT: [&str; 3] = ["all_positive", "all_negative", "mixed"];

pub(crate) fn kre(row: &Row) -> &KreRow {
    match &row.payload {
        Payload::Kre(k) => k,
        _ => unreachable!("loaded as KRE"),
    }
}

/// The golden and negative option indices of a row.
fn gold_negative(row: &Row) -> Result<(usize, usize), EvalError> {
    let k = kre(row);
    let bad = |m: String| EvalError::Config(format!("{} row {}: {m}", row.file, row.id));
    let gold = letter_index(&k.answer)
        .filter(|i| *i < k.choices.len())
        .ok_or_else(|| {
            bad(format!(
                "answer {:?} names none of the {} choices",
                k.answer,
                k.choices.len()
            ))
        })?;
    let negative = cb_model::negative_option(&k.choices, &k.candidate, &k.negative_answer)
        .ok_or_else(|| {
            bad(format!(
                "negative answer {:?} is none of the choices",
                k.negative_answer
            ))
        })?;
    if gold == negative {
        return Err(bad("the negative answer is the golden one".into()));
    }
    Ok((gold, negative))
}

/// Shown position -> choice index, seeded per row.
fn permutation(seed: u64, id: &str, n: usize) -> Vec<usize> {
    cb_step::choice::order(seed, "eval-kre", id, "options", n)
}

fn question_line(k: &KreRow, order: &[usize]) -> String {
    let mut s = format!("Question: {}", k.question);
    for (i, c) in order.iter().enumerate() {
        s.push_str(&format!(" {}: {}", letter(i), k.choices[*c]));
    }
    s
}

/// Which prompts a run uses.
pub(crate) struct Prompts {
    main: Prompt,
    dependent: String,
    intuitive: String,
    /// KRE's zero-shot and few-shot instructions, when its pool is used.
    pool: Option<(String, String)>,
}

fn read_text(path: &std::path::Path) -> Result<String, EvalError> {
    let t = std::fs::read_to_string(path)
        .map_err(|e| EvalError::Config(format!("cannot read {}: {e}", path.display())))?;
    if t.trim().is_empty() {
        return Err(EvalError::Config(format!("{} is empty", path.display())));
    }
    Ok(t.trim().to_owned())
}

pub(crate) fn prompts(opts: &EvalOptions) -> Result<Prompts, EvalError> {
    let role = |n: &str| -> Result<String, EvalError> {
        let t = opts
            .prompts
            .read(&format!("eval/{n}"))
            .map_err(EvalError::Config)?;
        match t.trim() {
            "" => Err(EvalError::Config(format!(
                "{} is empty",
                opts.prompts.locate(&format!("eval/{n}"))
            ))),
            t => Ok(t.to_owned()),
        }
    };
    let pool = match &opts.kre_instructions {
        None => None,
        Some(dir) => {
            let h = if opts.hint { "with_hint" } else { "no_hint" };
            let zero = dir
                .join(format!("{h}_zeroshot"))
                .join(format!("{}.txt", opts.instruction));
            // KRE's folder of few-shot instructions without a hint ends with an underscore.
            let few_dir = [format!("{h}_fewshot"), format!("{h}_fewshot_")]
                .into_iter()
                .map(|d| dir.join(d))
                .find(|d| d.is_dir())
                .unwrap_or_else(|| dir.join(format!("{h}_fewshot")));
            let few = few_dir.join(format!("{}.txt", opts.instruction));
            Some((read_text(&zero)?, read_text(&few)?))
        }
    };
    Ok(Prompts {
        main: Templates::load(&opts.prompts, "kre.md")?,
        dependent: role("kre_role_dependent.md")?,
        intuitive: role("kre_role_intuitive.md")?,
        pool,
    })
}

/// Positive (right answer) or negative (wrong answer) example slots of a configuration.
fn polarity(config: &str, seed: u64, id: &str) -> [bool; 3] {
    match config {
        "all_positive" => [true; 3],
        "all_negative" => [false; 3],
        _ => {
            const MIXED: [[bool; 3]; 6] = [
                [true, true, false],
                [true, false, true],
                [false, true, true],
                [false, false, true],
                [false, true, false],
                [true, false, false],
            ];
            *MIXED
                .choose(&mut item_rng(seed, "eval-kre", id, "mixed"))
                .expect("non-empty")
        }
    }
}

/// Three few-shot examples for row `ri` of `f`: KRE's files when given, else other rows of
/// the same file (seeded), each with the same kind of context as the question gets.
fn examples(
    opts: &EvalOptions,
    f: &Loaded,
    ri: usize,
    seed: u64,
    config: &str,
    negative_context: bool,
) -> Result<Vec<String>, EvalError> {
    let id = &f.rows[ri].id;
    let pol = polarity(config, seed, id);
    if let Some(dir) = &opts.kre_examples {
        let kind = if negative_context {
            "neg_context"
        } else {
            "pos_context"
        };
        // The released KRE "ECQA" part is CoS-E (see FORMATS.md): same examples.
        let domain = if f.domain == "ecqa" {
            "cose"
        } else {
            f.domain.as_str()
        };
        return pol
            .iter()
            .enumerate()
            .map(|(k, p)| {
                let n = if *p { k + 1 } else { k + 4 };
                read_text(&dir.join(kind).join(domain).join(format!("e_{n}.txt")))
            })
            .collect();
    }
    let others: Vec<usize> = (0..f.rows.len()).filter(|i| *i != ri).collect();
    let mut rng = item_rng(seed, "eval-kre", id, "examples");
    let picked: Vec<usize> = others.choose_multiple(&mut rng, 3).copied().collect();
    picked
        .iter()
        .zip(pol)
        .map(|(oi, positive)| {
            let row = &f.rows[*oi];
            let k = kre(row);
            let (gold, neg) = gold_negative(row)?;
            let ctx = if negative_context {
                &k.negative_context
            } else {
                &k.golden_context
            };
            let order: Vec<usize> = (0..k.choices.len()).collect();
            let a = if positive { gold } else { neg };
            Ok(format!(
                "Context: {ctx}\n{}\nAnswer: {}: {}",
                question_line(k, &order),
                letter(a),
                k.choices[a]
            ))
        })
        .collect()
}

/// One job's identity.
#[derive(Clone)]
struct Meta {
    file: usize,
    row: usize,
    setting: &'static str,
    seed: u64,
    order: Vec<usize>,
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn job(
    opts: &EvalOptions,
    p: &Prompts,
    t: &Templates,
    f: &Loaded,
    ri: usize,
    setting: &'static str,
    seed: u64,
    known: bool,
) -> Result<(Job, Vec<usize>), EvalError> {
    let row = &f.rows[ri];
    let k = kre(row);
    let order = permutation(seed, &row.id, k.choices.len());
    let shown: Vec<String> = order.iter().map(|i| k.choices[*i].clone()).collect();
    let context = match setting {
        "memory" => "",
        _ if known => k.negative_context.as_str(),
        _ => k.golden_context.as_str(),
    };
    let role = match setting {
        "role_dependent" => p.dependent.as_str(),
        "role_intuitive" => p.intuitive.as_str(),
        _ => "",
    };
    let mut exs = if FEW_SHOT.contains(&setting) {
        examples(opts, f, ri, seed, setting, known)?
    } else {
        Vec::new()
    };
    let instruction = match (&p.pool, setting) {
        (_, "memory") | (None, _) => String::new(),
        (Some((_, few)), s) if FEW_SHOT.contains(&s) && few.contains("[example1]") => {
            let mut text = few.clone();
            for (i, e) in exs.iter().enumerate() {
                text = text.replace(&format!("[example{}]", i + 1), e);
            }
            exs.clear();
            text
        }
        (Some((_, few)), s) if FEW_SHOT.contains(&s) => few.clone(),
        (Some((zero, _)), _) => zero.clone(),
    };
    let messages = t.render(
        &p.main,
        context! {
            role => role,
            instruction => instruction,
            examples => exs,
            context => context,
            question => &k.question,
            options => option_views(&shown),
        },
    )?;
    Ok((
        Job {
            label: format!("{}/{setting}/{seed}/{}", f.domain, row.id),
            messages,
            template: format!("eval/{}", p.main.name),
            template_hash: p.main.hash.clone(),
            seed,
        },
        order,
    ))
}

fn choice_of(r: &Reply, order: &[usize], shown: &[String]) -> (Extracted, Option<usize>) {
    let x = extract_reply(r, shown);
    (x, x.choice.map(|i| order[i]))
}

/// Runs the KRE evaluation; returns the results and the prediction lines.
pub async fn evaluate(
    llm: &Llm,
    opts: &EvalOptions,
    progress: &dyn Progress,
) -> Result<(Results, Vec<Value>), EvalError> {
    let files = load(
        opts,
        |k| matches!(k, FileKind::KreJson | FileKind::KreJsonl),
        |_, r| r.domain.clone(),
    )?;
    let mut wanted = settings(&opts.settings, &SETTINGS)?;
    if !wanted.iter().any(|s| s == "memory") {
        wanted.insert(0, "memory".into());
    }
    let p = prompts(opts)?;
    let t = Templates::new();
    let mut golds = Vec::new();
    for f in &files {
        golds.push(
            f.rows
                .iter()
                .map(gold_negative)
                .collect::<Result<Vec<_>, _>>()?,
        );
    }
    // answers[(file, row, setting, seed)] = chosen choice index (None: invalid)
    let mut answers: BTreeMap<(usize, usize, &'static str, u64), Option<usize>> = BTreeMap::new();
    let mut predictions = Vec::new();
    for phase in [true, false] {
        let mut metas = Vec::new();
        let mut jobs = Vec::new();
        for (fi, f) in files.iter().enumerate() {
            for (ri, (gold, _)) in golds[fi].iter().enumerate() {
                for setting in SETTINGS {
                    if (setting == "memory") != phase || !wanted.iter().any(|w| w == setting) {
                        continue;
                    }
                    for &seed in &opts.seeds {
                        let known = !phase
                            && answers.get(&(fi, ri, "memory", seed)).copied().flatten()
                                == Some(*gold);
                        let (j, order) = job(opts, &p, &t, f, ri, setting, seed, known)?;
                        jobs.push(j);
                        metas.push(Meta {
                            file: fi,
                            row: ri,
                            setting,
                            seed,
                            order,
                        });
                    }
                }
            }
        }
        let name = if phase {
            "eval kre: memory"
        } else {
            "eval kre: conflicts"
        };
        let replies = run_jobs(llm, jobs, opts.sampling, opts.concurrency, name, progress).await?;
        for (m, r) in metas.iter().zip(&replies) {
            let f = &files[m.file];
            let k = kre(&f.rows[m.row]);
            let shown: Vec<String> = m.order.iter().map(|i| k.choices[*i].clone()).collect();
            let (x, choice) = choice_of(r, &m.order, &shown);
            answers.insert((m.file, m.row, m.setting, m.seed), choice);
            let (gold, neg) = golds[m.file][m.row];
            let known = answers
                .get(&(m.file, m.row, "memory", m.seed))
                .copied()
                .flatten()
                == Some(gold);
            let mut line = json!({
                "benchmark": "kre",
                "domain": f.domain,
                "setting": m.setting,
                "seed": m.seed,
                "item": f.rows[m.row].id,
                "context": if m.setting == "memory" { "none" } else if known { "negative" } else { "golden" },
                "prompt_key": r.key,
                "raw": r.raw,
                "choice": x.choice.map(letter),
                "choice_text": x.choice.map(|i| &shown[i]),
                "expected": letter(m.order.iter().position(|c| *c == gold).unwrap_or(0)),
                "correct": choice == Some(gold),
                "negative": choice == Some(neg),
                "how": x.how,
            });
            if let (Some(e), Some(o)) = (&r.error, line.as_object_mut()) {
                o.insert("error".into(), json!(e));
            }
            predictions.push(line);
        }
    }
    // Predictions in a stable order: file, row, setting, seed.
    predictions.sort_by_key(|l| {
        let s = l["setting"].as_str().unwrap_or("");
        (
            l["domain"].as_str().unwrap_or("").to_owned(),
            SETTINGS.iter().position(|x| *x == s),
            l["seed"].as_u64(),
        )
    });
    let figures = crate::kre_tables::figures(opts, &files, &golds, &answers, &wanted);
    let mut results = Results::new("kre", llm, opts, &files, wanted, &[&p.main], figures);
    // The other texts the prompts are made of, so that `eval compare` tells apart runs with
    // other role texts or another instruction of KRE's pool.
    let hash = |t: &str| cb_step::prompt::sha256_hex(t.as_bytes());
    let mut texts = vec![
        ("eval/kre_role_dependent.md".to_owned(), hash(&p.dependent)),
        ("eval/kre_role_intuitive.md".to_owned(), hash(&p.intuitive)),
    ];
    if let Some((zero, few)) = &p.pool {
        let h = if opts.hint { "with_hint" } else { "no_hint" };
        let n = &opts.instruction;
        texts.push((format!("kre_instructions/{h}_zeroshot/{n}.txt"), hash(zero)));
        texts.push((format!("kre_instructions/{h}_fewshot/{n}.txt"), hash(few)));
    }
    results.prompts.extend(texts);
    results.tables = crate::kre_tables::tables(&results, &files);
    Ok((results, predictions))
}
