//! `conflictbench export lm-eval BUILD_DIR OUT_DIR`: a built benchmark (or KRE's released
//! files) as lm-evaluation-harness tasks (`cb_eval::export`); `conflictbench export
//! conflictbank BUILD_DIR OUT_DIR`: a ConflictBank-style build as ConflictBank's evaluation
//! input (`cb_eval::conflictbank_export`).

use crate::config_error::config_err;
use crate::flag_values::{range, whole};
use crate::stdout::println_out;
use anyhow::Context as _;
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ExportArgs {
    #[command(subcommand)]
    format: Format,
}

#[derive(Subcommand, Debug)]
enum Format {
    /// lm-evaluation-harness 0.4 tasks: per benchmark, domain and setting a task YAML (a
    /// generate_until task and a `_mc` multiple-choice one) and the JSONL it reads, each line
    /// the conversation `conflictbench eval` sends for that item.
    LmEval(LmEvalArgs),
    /// ConflictBank's evaluation input: per domain a folder with one file per setting
    /// (`default.json`, `correct.json`, `misinformation.json`, ..., `correct_semantic.json`,
    /// `semantic_correct.json`), one JSON object a line with `prompt`, `true_label`,
    /// `replaced_label` and `uncertain_label`, for ConflictBank's `inference.py --input_dir`.
    Conflictbank(ConflictbankArgs),
}

#[derive(Args, Debug)]
struct ConflictbankArgs {
    /// A ConflictBank-style build: a domain's folder (holding `conflictbank.jsonl`), the
    /// benchmark's folder, the build's output folder, or a rows file.
    build_dir: PathBuf,
    /// Where the domains' folders go.
    out_dir: PathBuf,
    /// At most N rows of each domain (1 to 18446744073709551615).
    #[arg(long, value_parser = whole::<usize>(range::RECORDS))]
    limit: Option<usize>,
    /// Folder of prompt templates (`eval/conflictbank.md` is the prompt); default: `prompts/`
    /// of the current folder when it exists, else the ones built into the binary.
    #[arg(long)]
    prompts: Option<PathBuf>,
}

fn conflictbank(a: ConflictbankArgs) -> anyhow::Result<()> {
    let prompts = crate::assets::prompt_files(a.prompts.as_deref())?;
    let done =
        match cb_eval::conflictbank_export::export(&a.build_dir, &a.out_dir, &prompts, a.limit) {
            Ok(done) => done,
            Err(cb_eval::EvalError::Config(m)) => return Err(config_err(m)),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot export {}", a.build_dir.display()))
            }
        };
    for d in &done {
        println_out(&format!(
            "{}: {} rows -> {} ({} settings)",
            d.domain,
            d.rows,
            d.dir.display(),
            cb_eval::conflictbank::SETTINGS.len()
        ));
    }
    println_out(
        "run ConflictBank's inference.py --input_dir on a domain's folder, then its evaluate.py, or `conflictbench eval conflictbank-predictions` on the predictions",
    );
    Ok(())
}

#[derive(Args, Debug)]
struct LmEvalArgs {
    /// A build's output folder (`generated/`, holding `recall/` and `kre/`), one benchmark's
    /// folder, or KRE's released files.
    build_dir: PathBuf,
    /// Where the task YAMLs, `data/` and a README go.
    out_dir: PathBuf,
    /// The seed whose option order the questions are asked in (`eval`'s first seed; 0 to
    /// 9223372036854775807).
    #[arg(long, default_value_t = 42, value_parser = whole::<u64>(cb_llm::ranges::SEED))]
    seed: u64,
    /// Comma-separated domains (default: all found).
    #[arg(long, value_delimiter = ',')]
    domains: Vec<String>,
    /// At most N rows of each file (1 to 18446744073709551615).
    #[arg(long, value_parser = whole::<usize>(range::RECORDS))]
    limit: Option<usize>,
    /// Folder of prompt templates (the eval ones are in its `eval/`); default: `prompts/` of
    /// the current folder when it exists, else the ones built into the binary.
    #[arg(long)]
    prompts: Option<PathBuf>,
    /// KRE: use KRE's instruction pool (the `instructions/` folder of its release) instead
    /// of our instruction, as `eval --kre-instructions` does.
    #[arg(long, value_name = "DIR")]
    kre_instructions: Option<PathBuf>,
    /// KRE: which instruction of the pool (`N.txt`).
    #[arg(long, default_value = "1")]
    instruction: String,
    /// KRE: take the pool's instructions that warn the context may mislead.
    #[arg(long)]
    hint: bool,
    /// KRE: use KRE's few-shot examples (the `prompt_examples/` folder of its release), as
    /// `eval --kre-examples` does.
    #[arg(long, value_name = "DIR")]
    kre_examples: Option<PathBuf>,
}

pub fn run(args: ExportArgs) -> anyhow::Result<()> {
    let a = match args.format {
        Format::LmEval(a) => a,
        Format::Conflictbank(a) => return conflictbank(a),
    };
    // `generated/` holds one folder per benchmark; anything else is read as one benchmark.
    let mut plan: Vec<(&str, PathBuf)> = ["recall", "kre"]
        .into_iter()
        .map(|b| (b, a.build_dir.join(b)))
        .filter(|(_, p)| p.is_dir())
        .collect();
    let single = plan.is_empty();
    if single {
        plan = vec![
            ("recall", a.build_dir.clone()),
            ("kre", a.build_dir.clone()),
        ];
    }
    let mut written = Vec::new();
    for (benchmark, data) in plan {
        let opts = cb_eval::EvalOptions {
            data: vec![data],
            prompts: crate::assets::prompt_files(a.prompts.as_deref())?,
            domains: a.domains.clone(),
            settings: Vec::new(),
            seeds: vec![a.seed],
            limit: a.limit,
            sampling: cb_eval::Sampling {
                temperature: 0.0,
                max_tokens: 256,
            },
            concurrency: 1,
            kre_instructions: a.kre_instructions.clone(),
            instruction: a.instruction.clone(),
            hint: a.hint,
            kre_examples: a.kre_examples.clone(),
            logprobs: None,
        };
        match cb_eval::export::lm_eval(benchmark, &opts, &a.out_dir) {
            Ok(tasks) => {
                for t in &tasks {
                    println_out(&format!(
                        "{}: {} rows -> {}",
                        t.task,
                        t.rows,
                        t.yaml.display()
                    ));
                }
                written.extend(tasks);
            }
            // Looking for both benchmarks in one folder: the one that is not there has no rows.
            Err(cb_eval::EvalError::Config(m))
                if single && m.starts_with("no rows to evaluate") => {}
            Err(e) => {
                return Err(e).with_context(|| format!("cannot export {benchmark}"));
            }
        }
    }
    if written.is_empty() {
        return Err(config_err(format!(
            "no RECALL or KRE rows under {}",
            a.build_dir.display()
        )));
    }
    cb_eval::export::finish(&a.out_dir, a.seed, &written)
        .with_context(|| format!("cannot write {}", a.out_dir.display()))?;
    println_out(&format!(
        "{} tasks (and their _mc variants) in {}; run them with lm_eval --include_path {} (see its README.md)",
        written.len(),
        a.out_dir.display(),
        a.out_dir.display()
    ));
    Ok(())
}
