//! `audit --reader-base-url URL --reader-model NAME`: the reader checks of a build, run on
//! any audited file (released KRE files included), and with `--rate` KRE appendix A.4's
//! three-level rating. Questions are asked as the build's `reader_check` asks them
//! (`cb_steps::reader_check::ask_check`: the reader's question `reader/question.md`, the
//! eval's letter extraction, and the none option where the recipe of the row's benchmark
//! and domain offers it), as ordinary cached calls.

use crate::config_error::config_err;
use crate::flag_values::{range, whole};
use cb_audit::{ItemKind, ReaderResult, Report};
use cb_engine::{Files, Recipe};
use cb_llm::Llm;
use cb_steps::reader_check::{self, ask_check, Asker, Check, Env, Question, ReaderSpec, LEVELS};
use clap::Args;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Args, Debug)]
pub struct AuditReaderArgs {
    /// Base URL of a reader model that answers each row's question from its edited context
    /// alone (checks `reader_negative`, `reader_control`, `reader_qa_a`, `reader_qa_na`).
    #[arg(long, value_name = "URL", requires = "reader_model")]
    pub reader_base_url: Option<String>,
    /// The reader model's name.
    #[arg(long, value_name = "NAME", requires = "reader_base_url")]
    pub reader_model: Option<String>,
    /// Also ask the reader to rate each KRE negative context on KRE appendix A.4's three
    /// levels (not / somewhat / highly misleading); the distribution goes into the report.
    #[arg(long, requires = "reader_base_url")]
    pub rate: bool,
    /// Votes per check: the first with the options in the row's order, the others in
    /// seeded orders; more than half must pick the intended option (1 to 100).
    #[arg(long, default_value_t = 1, value_parser = whole::<u32>(range::VOTES))]
    pub votes: u32,
    /// Reader calls in flight (1 to 10000).
    #[arg(long, default_value_t = 8, value_parser = whole::<usize>(cb_llm::ranges::CONCURRENCY))]
    pub concurrency: usize,
    /// Response cache of the reader's calls (SQLite).
    #[arg(
        long,
        value_name = "PATH",
        default_value = "generated/audit-llm-cache.sqlite"
    )]
    pub cache: PathBuf,
    /// Folder of prompt templates (default: ./prompts when present, else the bundled ones).
    #[arg(long)]
    pub prompts: Option<PathBuf>,
    /// Folder of recipes (default: ./recipes when present, else the bundled ones): a row is
    /// offered the none option where the recipe of its benchmark and domain offers it
    /// (`none_option`).
    #[arg(long, requires = "reader_base_url")]
    pub recipes: Option<PathBuf>,
}

/// What one reader question of the audit is.
struct Job {
    item: usize,
    code: &'static str,
    spec: Arc<ReaderSpec>,
    id: String,
    question: String,
    options: Vec<String>,
    context: String,
    expected: usize,
    /// The recipe of the row's domain offers the none option.
    none_option: bool,
}

/// Asks the reader every check of every KRE and QA row of `report` and adds the verdicts;
/// with `--rate`, the ratings too. Returns a line saying who read and what it cost.
pub async fn read(
    args: &AuditReaderArgs,
    seed: u64,
    report: &mut Report,
) -> anyhow::Result<Option<String>> {
    let (Some(base_url), Some(model)) = (&args.reader_base_url, &args.reader_model) else {
        return Ok(None);
    };
    crate::llm_config::check_endpoint("--reader-base-url", base_url, true)?;
    let files = crate::assets::prompt_files(args.prompts.as_deref())?;
    let (_, recipes) = crate::assets::recipes(args.recipes.as_deref())?;
    // One command per cache: two audits never write one reader cache at once.
    let _held = crate::folder_lock::for_file(&args.cache, "--cache")?;
    let llm = crate::llm_config::audit_reader(&args.cache, args.concurrency, (base_url, model))?;
    let jobs = jobs_of(report, &files, &recipes, args.votes)?;
    let env = Arc::new(reader_check::environment());
    let (mut results, no_answer) = ask_all(&llm, &env, jobs, seed).await?;
    if args.rate {
        results.extend(rate(&llm, &files, report, &env).await?);
    }
    // The report's order (row, then check) does not depend on which answer came first.
    results.sort_by_key(|r| (r.item, r.check));
    let mut ratings = std::collections::BTreeMap::new();
    for r in results.iter().filter(|r| r.check == "reader_rating") {
        let level = r.shown.trim_start_matches("rating: ").to_owned();
        *ratings.entry(level).or_insert(0) += 1;
    }
    report.ratings = ratings;
    report
        .add_reader_results(results)
        .map_err(|e| config_err(e.to_string()))?;
    let s = llm.stats();
    Ok(Some(format!(
        "reader: {model} at {} ({} calls: {} upstream, {} from the cache; {no_answer} without an answer)",
        llm.endpoint(),
        s.calls,
        s.upstream_calls,
        s.cache_hits
    )))
}

fn load_spec(files: &Files, name: &str, votes: u32) -> anyhow::Result<Arc<ReaderSpec>> {
    ReaderSpec::load(files, name, votes)
        .map(Arc::new)
        .map_err(|e| config_err(e.to_string()))
}

/// Whether the recipe of `benchmark` and `domain` among `recipes` offers the none option.
fn offers_none(recipes: &[Recipe], benchmark: &str, domain: &str) -> bool {
    recipes
        .iter()
        .filter(|r| r.benchmark == benchmark && r.domain == domain)
        .flat_map(|r| &r.steps)
        .any(reader_check::offers_none_option)
}

/// The reader's questions of every KRE and QA row of `report` (its rows read again), as the
/// recipe of the row's domain among `recipes` asks them.
fn jobs_of(
    report: &Report,
    files: &Files,
    recipes: &[Recipe],
    votes: u32,
) -> anyhow::Result<Vec<Job>> {
    // The build's reader check's question: the same instruction for released rows and ours.
    let kre = load_spec(files, reader_check::DEFAULT_PROMPT, votes)?;
    let qa = Arc::clone(&kre);
    let mut jobs = Vec::new();
    // ConflictBank-style rows are read back by their build's reader check (mode "fields").
    let wanted = |i: usize| {
        !matches!(
            report.outline[i].kind,
            ItemKind::TextGeneration | ItemKind::ConflictBank
        )
    };
    let each = |i: usize, it: cb_audit::Item| {
        let benchmark = match it.kind {
            ItemKind::Kre => "kre",
            _ => "recall",
        };
        let none_option = offers_none(recipes, benchmark, &it.domain);
        let mut push = |code, spec: &Arc<ReaderSpec>, context: &str, expected: Option<usize>| {
            if let Some(expected) = expected {
                jobs.push(Job {
                    item: i,
                    code,
                    spec: Arc::clone(spec),
                    id: it.item_id.clone(),
                    question: it.question.clone(),
                    options: it.options.clone(),
                    context: context.to_owned(),
                    expected,
                    none_option,
                });
            }
        };
        match it.kind {
            ItemKind::Kre => {
                push("reader_negative", &kre, &it.edited, it.other_option);
                push("reader_control", &kre, &it.original, it.answer_option);
            }
            ItemKind::QaA => push("reader_qa_a", &qa, &it.edited, it.other_option),
            ItemKind::QaNa => push("reader_qa_na", &qa, &it.edited, it.answer_option),
            ItemKind::TextGeneration | ItemKind::ConflictBank => {}
        }
        Ok(())
    };
    report
        .for_each_item(wanted, each)
        .map_err(|e| config_err(e.to_string()))?;
    Ok(jobs)
}

/// Asks every job (the layer's limiter, `--concurrency`, bounds the calls in flight);
/// the verdicts, and how many questions got no answer.
async fn ask_all(
    llm: &Llm,
    env: &Arc<Env>,
    jobs: Vec<Job>,
    seed: u64,
) -> anyhow::Result<(Vec<ReaderResult>, usize)> {
    let mut set = tokio::task::JoinSet::new();
    for job in jobs {
        let (llm, env) = (llm.clone(), Arc::clone(env));
        set.spawn(async move {
            let q = Question {
                id: &job.id,
                question: &job.question,
                choices: &job.options,
            };
            let check = Check {
                name: job.code,
                context: Some(&job.context),
                expected: job.expected,
                judged: false,
                none_option: job.none_option,
            };
            let asker = Asker {
                reader: &llm,
                spec: &job.spec,
                env: &env,
                seed,
                scope: "audit",
                step: "audit",
            };
            let v = ask_check(asker, q, &check).await;
            (job, v)
        });
    }
    let mut results = Vec::new();
    let mut no_answer = 0;
    while let Some(joined) = set.join_next().await {
        let (job, v) = joined?;
        match v {
            Ok(v) => results.push(verdict(&job, &v)),
            Err(e) if e.is_fatal() => return Err(anyhow::Error::new(e)),
            Err(e) => {
                tracing::warn!(item = %job.id, error = %e, "the reader gave no answer");
                no_answer += 1;
            }
        }
    }
    Ok((results, no_answer))
}

/// What the page and the report say of one answered job.
fn verdict(job: &Job, v: &reader_check::Verdict) -> ReaderResult {
    let named = v.pick_named(&job.options);
    let expected = format!("\"{}\" ({})", v.expected, job.options[job.expected]);
    let what = job.code.trim_start_matches("reader_");
    ReaderResult {
        item: job.item,
        check: job.code,
        shown: format!("{what}: picked {named}, intended {expected}"),
        outcome: if v.passed {
            Ok(())
        } else {
            Err(format!("the reader picked {named}, not {expected}"))
        },
    }
}

/// KRE appendix A.4's rating of every KRE row's negative context towards its negative
/// answer.
async fn rate(
    llm: &Llm,
    files: &Files,
    report: &Report,
    env: &Arc<Env>,
) -> anyhow::Result<Vec<ReaderResult>> {
    let spec = load_spec(files, "reader/rate.md", 1)?;
    let mut set = tokio::task::JoinSet::new();
    let wanted = |i: usize| report.outline[i].kind == ItemKind::Kre;
    let each = |i: usize, it: cb_audit::Item| {
        // Unbounded here: the layer's limiter (`--concurrency`) bounds the calls in flight.
        let (llm, env, spec) = (llm.clone(), Arc::clone(env), Arc::clone(&spec));
        set.spawn(async move {
            let asker = Asker {
                reader: &llm,
                spec: &spec,
                env: &env,
                seed: 0,
                scope: "audit",
                step: "audit",
            };
            let q = Question {
                id: &it.item_id,
                question: &it.question,
                choices: &it.options,
            };
            (
                i,
                reader_check::rate(asker, q, &it.edited, &it.other_answer).await,
            )
        });
        Ok(())
    };
    report
        .for_each_item(wanted, each)
        .map_err(|e| config_err(e.to_string()))?;
    let mut out = Vec::new();
    while let Some(joined) = set.join_next().await {
        let (i, answer) = joined?;
        let level = match answer {
            Ok(level) => level,
            Err(e) if e.is_fatal() => return Err(anyhow::Error::new(e)),
            Err(_) => continue,
        };
        let name = level.map_or("no level", |c| LEVELS[c]);
        out.push(ReaderResult {
            item: i,
            check: "reader_rating",
            shown: format!("rating: {name}"),
            outcome: if level == Some(2) {
                Ok(())
            } else {
                Err(format!("rated \"{name}\", not \"{}\"", LEVELS[2]))
            },
        });
    }
    Ok(out)
}
