//! KRE evaluation (paper sections 3.1 to 3.5). Per seed: the memory assessment (no context)
//! splits the rows into known and unknown; every other setting asks the known rows with the
//! negative context (VR) and the unknown ones with the golden context (RR): zero-shot, the
//! three few-shot configurations (all-positive, all-negative, mixed) and the two roles
//! (dependent, intuitive). Metrics come from `cb_metrics::kre` (see `kre_tables`).

use crate::options::settings;
use crate::outcomes::{load_checked, Asked, Group, Judge, Judged, Outcomes};
use crate::report::{row_sha256, Evaluated};
use crate::run::{extract_reply, run_stream, Job, Reply};
use crate::scores::{Answer, Scores};
use crate::source::Source;
use crate::templates::Templates;
use crate::{EvalError, EvalOptions, Results};
use cb_audit::{FileKind, Payload, Row};
use cb_llm::Llm;
use cb_llm::Progress;
use cb_model::{item_rng, letter, letter_index, KreRow};
use cb_step::choice::option_views;
use cb_step::choice::Extracted;
use cb_step::Prompt;
use minijinja::context;
use rand::seq::IndexedRandom;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::metric::FEW_SHOT;
/// Every setting, in the paper's order. `memory` always runs: the others need its split.
pub use crate::metric::KRE_SETTINGS as SETTINGS;

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

/// The rows of `f` other than `ri` that give its few-shot examples with `seed`: three drawn
/// without repeats (as `choose_multiple` over the other rows' indices draws them, without
/// making that list).
fn example_rows(n: usize, ri: usize, id: &str, seed: u64) -> Vec<usize> {
    let others = n.saturating_sub(1);
    let mut rng = item_rng(seed, "eval-kre", id, "examples");
    rand::seq::index::sample(&mut rng, others, 3.min(others))
        .into_iter()
        .map(|j| if j < ri { j } else { j + 1 })
        .collect()
}

/// One few-shot example from another row: its context of the kind the question gets, the
/// question with the options in their own order, and its right (`positive`) or negative
/// answer.
fn example_from(row: &Row, negative_context: bool, positive: bool) -> Result<String, EvalError> {
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
}

/// Three few-shot examples for `row` of `f`: KRE's files when given, else other rows of the
/// same file (seeded, read back from the file), each with the same kind of context as the
/// question gets.
fn examples(
    opts: &EvalOptions,
    f: &Source,
    row: &Row,
    seed: u64,
    config: &str,
    negative_context: bool,
) -> Result<Vec<String>, EvalError> {
    let pol = polarity(config, seed, &row.id);
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
    example_rows(f.len(), row.index, &row.id, seed)
        .into_iter()
        .zip(pol)
        .map(|(oi, positive)| example_from(&f.row(oi)?, negative_context, positive))
        .collect()
}

/// What asks KRE's questions: the run's options, prompts and templates.
pub(crate) struct Asker<'a> {
    pub opts: &'a EvalOptions,
    pub prompts: Prompts,
    templates: Templates,
}

impl<'a> Asker<'a> {
    pub fn new(opts: &'a EvalOptions) -> Result<Asker<'a>, EvalError> {
        Ok(Asker {
            opts,
            prompts: prompts(opts)?,
            templates: Templates::new(),
        })
    }

    /// The instruction of `setting` (KRE's pool when given) and the examples left to show
    /// apart from it (a pool's few-shot instruction with `[exampleN]` slots takes them in).
    fn instruction(&self, setting: &str, mut exs: Vec<String>) -> (String, Vec<String>) {
        let few = FEW_SHOT.contains(&setting);
        let text = match (&self.prompts.pool, setting) {
            (_, "memory") | (None, _) => String::new(),
            (Some((_, pool_few)), _) if few && pool_few.contains("[example1]") => {
                let mut text = pool_few.clone();
                for (i, e) in exs.iter().enumerate() {
                    text = text.replace(&format!("[example{}]", i + 1), e);
                }
                exs.clear();
                text
            }
            (Some((_, pool_few)), _) if few => pool_few.clone(),
            (Some((zero, _)), _) => zero.clone(),
        };
        (text, exs)
    }

    /// The job that asks `row` of `f` in `setting` with `seed` (`known`: the model's memory
    /// answers it right, so it gets the negative context), and the order its options are
    /// shown in (shown position -> choice index).
    pub fn job(
        &self,
        f: &Source,
        row: &Row,
        setting: &'static str,
        seed: u64,
        known: bool,
    ) -> Result<(Job, Vec<usize>), EvalError> {
        let (p, k) = (&self.prompts, kre(row));
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
        let exs = if FEW_SHOT.contains(&setting) {
            examples(self.opts, f, row, seed, setting, known)?
        } else {
            Vec::new()
        };
        let (instruction, exs) = self.instruction(setting, exs);
        let messages = self.templates.render(
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
        let job = Job {
            label: format!("{}/{setting}/{seed}/{}", f.domain, row.id),
            messages,
            template: format!("eval/{}", p.main.name),
            template_hash: p.main.hash.clone(),
            seed,
            top_logprobs: None,
        };
        Ok((job, order))
    }

    /// The texts besides the template the prompts are made of, with their SHA-256, so that
    /// `eval compare` tells apart runs with other role texts or another instruction of KRE's
    /// pool.
    fn texts(&self) -> Vec<(String, String)> {
        let (p, opts) = (&self.prompts, self.opts);
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
        texts
    }
}

/// One job's identity: what it asked, the options' order shown, and whether the memory
/// assessment answered its row right (it then comes with the negative context).
struct Meta {
    asked: Asked,
    order: Vec<usize>,
    known: bool,
}

fn choice_of(r: &Reply, order: &[usize], shown: &[String]) -> (Extracted, Option<usize>) {
    let x = extract_reply(r, shown);
    (x, x.choice.map(|i| order[i]))
}

impl Judge for Meta {
    const BENCHMARK: &'static str = "kre";

    fn reads(kind: FileKind) -> bool {
        matches!(kind, FileKind::KreJson | FileKind::KreJsonl)
    }

    /// The row's own domain.
    fn domain(_: &Path, row: &Row) -> String {
        row.domain.clone()
    }

    /// A row whose gold or negative option cannot be found is a data error.
    fn check(_: &Source, row: &Row) -> Result<(), EvalError> {
        gold_negative(row).map(|_| ())
    }

    fn asked(&self) -> &Asked {
        &self.asked
    }

    fn context(&self) -> Option<&'static str> {
        Some(match (self.asked.setting, self.known) {
            ("memory", _) => "none",
            (_, true) => "negative",
            _ => "golden",
        })
    }

    /// The choice, scored against the gold and the negative option; lines are grouped by
    /// domain, setting and seed.
    fn judge(&self, r: &Reply, to: Judged<'_>) -> Result<Group, EvalError> {
        let (a, line) = (&self.asked, to.line);
        let k = kre(&a.row);
        let shown: Vec<String> = self.order.iter().map(|i| k.choices[*i].clone()).collect();
        let (x, choice) = choice_of(r, &self.order, &shown);
        let (gold, neg) = gold_negative(&a.row)?;
        let expected = self.order.iter().position(|c| *c == gold).unwrap_or(0);
        line.insert("choice".into(), json!(x.choice.map(letter)));
        line.insert("choice_text".into(), json!(x.choice.map(|i| &shown[i])));
        line.insert("expected".into(), json!(letter(expected)));
        line.insert("correct".into(), json!(choice == Some(gold)));
        line.insert("negative".into(), json!(choice == Some(neg)));
        line.insert("how".into(), json!(x.how));
        let answer = Answer::new(choice, Some(gold), Some(neg));
        to.scores.push_answer(a.setting, a.seed, answer);
        let setting = SETTINGS.iter().position(|s| *s == a.setting).unwrap_or(0);
        Ok((to.file.domain.clone(), setting, a.seed))
    }
}

/// Per file and seed, whether the memory assessment answered each row right.
fn known(out: &Outcomes, seeds: &[u64]) -> Vec<BTreeMap<u64, Vec<bool>>> {
    out.scores
        .iter()
        .map(|s| {
            let all: Vec<usize> = (0..s.n).collect();
            seeds
                .iter()
                .map(|seed| {
                    let v = s.seed(*seed).answers("memory", &all).map(Answer::correct);
                    (*seed, v.collect())
                })
                .collect()
        })
        .collect()
}

/// The jobs of one phase, made as the rows are read: every row of every file in each of
/// `settings` and seed (`known`: per file and seed, which rows the memory assessment answered
/// right; empty in the memory phase).
fn phase_jobs<'a>(
    asker: &'a Asker<'a>,
    files: &'a [Source],
    settings: &'a [&'static str],
    known: &'a [BTreeMap<u64, Vec<bool>>],
) -> impl Iterator<Item = Result<(Job, Meta), EvalError>> + 'a {
    let seeds = asker.opts.seeds.as_slice();
    files.iter().enumerate().flat_map(move |(fi, f)| {
        f.rows().flat_map(move |r| {
            let (ri, row) = match r {
                Ok(r) => r,
                Err(e) => return vec![Err(e)],
            };
            let hash: Arc<str> = row_sha256(&row).into();
            let row = Arc::new(row);
            let mut out = Vec::new();
            for &setting in settings {
                for &seed in seeds {
                    let known = known
                        .get(fi)
                        .and_then(|k| k.get(&seed))
                        .is_some_and(|k| k[ri]);
                    out.push(
                        asker
                            .job(f, &row, setting, seed, known)
                            .map(|(job, order)| {
                                let (row, hash) = (row.clone(), hash.clone());
                                let asked = Asked {
                                    file: fi,
                                    row,
                                    hash,
                                    setting,
                                    seed,
                                };
                                let meta = Meta {
                                    asked,
                                    order,
                                    known,
                                };
                                (job, meta)
                            }),
                    );
                }
            }
            out
        })
    })
}

/// Runs the KRE evaluation; returns the results and the prediction lines. The rows are read
/// three times, one at a time: to check and count them, to ask the memory assessment, and to
/// ask the other settings with the context the assessment assigns.
pub async fn evaluate(llm: &Llm, opts: &EvalOptions, progress: &dyn Progress) -> Evaluated {
    let (files, identity) = load_checked::<Meta>(opts)?;
    let mut wanted = settings(&opts.settings, &SETTINGS)?;
    if !wanted.iter().any(|s| s == "memory") {
        wanted.insert(0, "memory".into());
    }
    let asker = Asker::new(opts)?;
    let mut out = Outcomes::new(files.iter().map(|f| Scores::new(f.len(), false)).collect());
    let others: Vec<&'static str> = SETTINGS[1..]
        .iter()
        .copied()
        .filter(|s| wanted.iter().any(|w| w == s))
        .collect();
    for (name, settings) in [
        ("eval kre: memory", vec!["memory"]),
        ("eval kre: conflicts", others),
    ] {
        let known = if name.ends_with("memory") {
            Vec::new()
        } else {
            known(&out, &opts.seeds)
        };
        let rows: usize = files.iter().map(Source::len).sum();
        let total = (rows * settings.len() * opts.seeds.len()) as u64;
        let jobs = phase_jobs(&asker, &files, &settings, &known);
        let (sampling, conc) = (opts.sampling, opts.concurrency);
        run_stream(llm, jobs, sampling, conc, name, total, progress, |m, r| {
            out.record(&files, &m, &r)
        })
        .await?;
    }
    let scores: Vec<(String, Scores)> = files
        .iter()
        .map(|f| f.domain.clone())
        .zip(std::mem::take(&mut out.scores))
        .collect();
    let figures = crate::kre_tables::figures(&scores, &wanted, &opts.seeds);
    let data = identity.finish();
    let main = &asker.prompts.main;
    let mut results = Results::new("kre", llm, opts, data, wanted, &[main], figures);
    results.prompts.extend(asker.texts());
    results.tables = crate::kre_tables::tables(&results, &scores);
    Ok((results, out.finish()?))
}
