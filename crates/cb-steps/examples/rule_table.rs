//! Every lexical rule that can reject a commonsense negative context, run on released KRE
//! rows as if a model had written them: how many rows each rule flags, whether it rejects or
//! warns where a reader checks the rows, and a seeded sample of flagged rows to judge by hand
//! (QUALITY.md's table).
//!
//!     cargo run -p cb-steps --example rule_table -- DOMAIN=FILE... [--samples N] [--seed S]
//!
//! DOMAIN is `cose` or `ecare` (the recipe whose `negative_explanation` settings and prompt
//! apply), FILE a released KRE file (`cose.json`, `ecare.json`).
#![allow(clippy::print_stdout)] // a report for the terminal

use cb_model::{letter_index, KreRow};
use cb_step::ask::{common_checks, reason_code};
use cb_step::{clean_text_answer, Files, Prompt, StepSpec, GUESS_CODES};
use cb_steps::negative_explanation::NegativeExplanation;
use rand::seq::IndexedRandom;
use std::collections::BTreeMap;
use std::path::Path;

/// A finding's rule: its code, and for `prompt_echo` which of its rules fired.
fn rule(finding: &str) -> String {
    let code = reason_code(finding);
    if code != "prompt_echo" {
        return code.to_owned();
    }
    let kind = [
        ("talks about the task", "task talk"),
        ("a line starts with the option", "a line per option"),
        ("repeats the instructions", "our instructions repeated"),
        ("repeats the prompt's", "a prompt label or fence"),
        ("talks about the prompt", "names the prompt's parts"),
        ("is the prompt's example", "the worked example"),
    ]
    .iter()
    .find(|(k, _)| finding.contains(k))
    .map_or("other", |(_, v)| v);
    format!("prompt_echo ({kind})")
}

/// The recipe's `negative_explanation` step entry.
fn step_of(repo: &Path, domain: &str) -> StepSpec {
    let path = repo.join(format!("recipes/kre-{domain}.toml"));
    let recipe: toml::Table = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let entry = recipe["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["kind"].as_str() == Some("negative_explanation"))
        .unwrap_or_else(|| panic!("{}: no negative_explanation step", path.display()));
    entry.clone().try_into().unwrap()
}

struct Flagged {
    domain: String,
    index: usize,
    row: KreRow,
    detail: String,
}

/// The golden answer's text of a row, or `""`.
fn golden_of(row: &KreRow) -> String {
    letter_index(&row.answer)
        .and_then(|i| row.choices.get(i).cloned())
        .unwrap_or_default()
}

/// Every finding of the step (and the checks all steps share) on a row's negative context,
/// as if a model had written it.
fn findings_of(step: &NegativeExplanation, prompt: &Prompt, row: &KreRow) -> Vec<String> {
    let golden = golden_of(row);
    let t = clean_text_answer(&row.negative_context);
    // What the prompt showed the model: the row's fields.
    let material = [
        row.question.as_str(),
        &row.choices.join("\n"),
        &row.golden_context,
        &row.negative_answer,
        &golden,
    ]
    .join("\n");
    let given = [row.question.as_str()];
    let mut found: Vec<String> = common_checks(&t, prompt.instructions(), &material)
        .err()
        .into_iter()
        .collect();
    found.extend(step.findings(
        &t,
        (&golden, &row.negative_answer),
        &given,
        &given,
        &row.choices,
    ));
    found
}

/// The table: per rule, the rows it flags and what it does where a reader checks the rows.
fn print_table(flagged: &BTreeMap<String, Vec<Flagged>>, total: usize) {
    println!("| rule | rows flagged of {total} | % | with a reader |");
    println!("|---|---|---|---|");
    for (r, rows) in flagged {
        let code = r.split(' ').next().unwrap_or(r);
        let with_reader = if GUESS_CODES.contains(&code) {
            "warning"
        } else {
            "reject"
        };
        println!(
            "| `{r}` | {} | {:.1} | {with_reader} |",
            rows.len(),
            100.0 * rows.len() as f64 / total.max(1) as f64
        );
    }
}

/// A seeded sample of `samples` flagged rows per rule.
fn print_samples(flagged: &BTreeMap<String, Vec<Flagged>>, samples: usize, seed: u64) {
    let mut rng = cb_model::item_rng(seed, "rule-table", "", "samples");
    for (r, rows) in flagged {
        println!("\n### `{r}`\n");
        for f in rows.choose_multiple(&mut rng, samples) {
            println!(
                "- {}.json#{}: Q: {} | golden: {} | negative: {} | negative context: {} | {}",
                f.domain,
                f.index,
                f.row.question,
                golden_of(&f.row),
                f.row.negative_answer,
                f.row.negative_context.replace('\n', " "),
                f.detail
            );
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opt = |name: &str, default: u64| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .map_or(default, |v| v.parse().expect("a number"))
    };
    let (samples, seed) = (opt("--samples", 5) as usize, opt("--seed", 7));
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let prompts = Files::Dir(repo.join("prompts"));
    let mut flagged: BTreeMap<String, Vec<Flagged>> = BTreeMap::new();
    let mut total = 0;
    for arg in args.iter().filter(|a| a.contains('=')) {
        let (domain, file) = arg.split_once('=').unwrap();
        let spec = step_of(&repo, domain);
        let step = NegativeExplanation::from_spec(&spec);
        let prompt = Prompt::load(&prompts, &spec.str("prompt").unwrap()).unwrap();
        let rows: Vec<KreRow> = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
        total += rows.len();
        for (index, row) in rows.into_iter().enumerate() {
            let mut seen = std::collections::BTreeSet::new();
            for f in findings_of(&step, &prompt, &row) {
                let r = rule(&f);
                if seen.insert(r.clone()) {
                    flagged.entry(r).or_default().push(Flagged {
                        domain: domain.to_owned(),
                        index,
                        row: row.clone(),
                        detail: f,
                    });
                }
            }
        }
    }
    print_table(&flagged, total);
    print_samples(&flagged, samples, seed);
}
