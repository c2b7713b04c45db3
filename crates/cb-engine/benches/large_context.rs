//! Time and peak memory of an offline `kre-squad` build whose one paragraph is very large,
//! and of the token similarity the negative-context validation computes on it.
//!
//! `cargo bench -p cb-engine --bench large_context` writes, for each size in
//! `LARGE_CONTEXT_SIZES_KB` (default `100,1000,5000`), a SQuAD v2.0 document with one
//! paragraph of that many kilobytes (seeded words, the answer "1066" mentioned five times)
//! and one question, then builds the repository's `kre-squad` recipe with the offline backend
//! in a child process of its own, so that the peak resident set (`VmHWM`) of each build is
//! measured alone. The child then times `token_similarity` of the golden and the negative
//! context alone. Under `cargo test --all-targets` the binary only prints that it was skipped.
//!
//! It then does the same for each size in `LARGE_CONTEXT_NUMBERED_KB` (default
//! `250,1000,2000,5000`; empty to skip) with a paragraph of numbered sentences ("Sentence 1
//! says the year 1801 matters."), each its own sentence with its own numbers, around the same
//! five mentions: the negative-context validation sets every sentence of the passage that the
//! rewrite repeats apart before it looks for a refusal (`cb_quality::beyond_copies`),
//! so this padding measures that per sentence of the material (issue 22). With the default
//! sizes the run takes about a minute and a half on 2 cores, most of it the numbered 5 MB
//! build.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use cb_engine::recipe::{load_recipes, select};
use cb_engine::source::SourceOptions;
use cb_engine::{build_recipe, BuildOptions, NoProgress};
use cb_llm::{Llm, LlmConfig};
use cb_model::text::{token_similarity, tokens};
use serde_json::{json, Value};

const WORDS: [&str; 12] = [
    "duke", "fleet", "harbour", "abbey", "council", "river", "castle", "bishop", "market",
    "charter", "knights", "valley",
];

/// What fills a paragraph around the five mentions of the answer.
#[derive(Debug, Clone, Copy)]
enum Padding {
    /// Sentences of twelve seeded words ("duke fleet harbour ...").
    Words,
    /// Numbered sentences, each with its own numbers: "Sentence 1 says the year 1801
    /// matters." (the years run from 1800 to 1999, so none is the answer's 1066).
    Numbered,
}

impl Padding {
    fn name(self) -> &'static str {
        match self {
            Padding::Words => "words",
            Padding::Numbered => "numbered",
        }
    }

    /// About how many bytes a sentence of padding takes.
    fn sentence_bytes(self) -> usize {
        match self {
            Padding::Words => 80,
            Padding::Numbered => 45,
        }
    }
}

/// Writes `raw/squad_v2/dev-v2.0.json` with one paragraph of about `bytes` bytes.
fn generate(raw: &Path, bytes: usize, padding: Padding) {
    let mut context = String::with_capacity(bytes + 200);
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let (mut sentence, mut mentions) = (0usize, 0);
    let every = (bytes / padding.sentence_bytes() / 5).max(1);
    while context.len() < bytes {
        if sentence % every == every / 2 && mentions < 5 {
            context.push_str("In 1066 the duke crossed the sea. ");
            mentions += 1;
        }
        match padding {
            Padding::Words => {
                for w in 0..12 {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    let word = WORDS[(state % 12) as usize];
                    if w > 0 {
                        context.push(' ');
                    }
                    context.push_str(word);
                }
                context.push_str(". ");
            }
            Padding::Numbered => {
                let n = sentence + 1;
                context.push_str(&format!(
                    "Sentence {n} says the year {} matters. ",
                    1800 + n % 200
                ));
            }
        }
        sentence += 1;
    }
    context.truncate(context.trim_end().len());
    let start = context[..context.find("1066").expect("mentioned")]
        .chars()
        .count();
    let doc = json!({"version": "v2.0", "data": [{"title": "Big", "paragraphs": [{
        "context": context,
        "qas": [{"id": "big-1", "question": "In what year did the duke cross the sea?",
                 "answers": [{"text": "1066", "answer_start": start}], "is_impossible": false}]
    }]}]});
    std::fs::create_dir_all(raw.join("squad_v2")).unwrap();
    std::fs::write(raw.join("squad_v2/dev-v2.0.json"), doc.to_string()).unwrap();
}

/// A `/proc/self/status` value in kB (`VmRSS`, `VmHWM`), or 0 where unavailable.
fn status_kb(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The child: builds once, then times the similarity alone. Prints
/// `RESULT rows build_s rss_before_kb hwm_kb similarity similarity_s tokens`.
fn child(dir: &Path) {
    let recipes = load_recipes(&cb_engine::Files::Dir(repo().join("recipes"))).unwrap();
    let recipe = select(&recipes, "kre", &["squad".to_string()]).unwrap()[0];
    let opts = BuildOptions {
        sources: SourceOptions {
            raw: dir.join("raw"),
            ..SourceOptions::default()
        },
        out: dir.join("out"),
        prompts: cb_engine::Files::Dir(repo().join("prompts")),
        seed: cb_engine::build::DEFAULT_SEED,
        write: true,
        steps: cb_steps::STEPS,
    };
    let routes = cb_engine::Routes::new(Llm::new(LlmConfig::offline()).unwrap());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let rss_before = status_kb("VmRSS:");
    let start = Instant::now();
    let outcome = runtime
        .block_on(build_recipe(recipe, &opts, &routes, &NoProgress))
        .unwrap();
    let build_s = start.elapsed().as_secs_f64();
    let hwm = status_kb("VmHWM:");
    let rows: Value =
        serde_json::from_slice(&std::fs::read(dir.join("out/kre/squad/squad.json")).unwrap())
            .unwrap();
    let row = &rows[0];
    let (golden, negative) = (
        tokens(row[" golden_context"].as_str().unwrap()),
        tokens(row["negative_context"].as_str().unwrap()),
    );
    let start = Instant::now();
    let sim = token_similarity(&golden, &negative);
    let sim_s = start.elapsed().as_secs_f64();
    println!(
        "RESULT {} {build_s:.3} {rss_before} {hwm} {sim:.6} {sim_s:.4} {}",
        outcome.rows,
        golden.len()
    );
}

fn main() {
    if let Ok(dir) = std::env::var("LARGE_CONTEXT_CHILD") {
        child(Path::new(&dir));
        return;
    }
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this binary without it.
    if !std::env::args().any(|a| a == "--bench") {
        println!("large_context: skipped (run it with `cargo bench`)");
        return;
    }
    let sizes = |var: &str, default: &str| -> Vec<usize> {
        std::env::var(var)
            .unwrap_or_else(|_| default.to_string())
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect()
    };
    let runs: Vec<(Padding, usize)> = sizes("LARGE_CONTEXT_SIZES_KB", "100,1000,5000")
        .into_iter()
        .map(|kb| (Padding::Words, kb))
        .chain(
            sizes("LARGE_CONTEXT_NUMBERED_KB", "250,1000,2000,5000")
                .into_iter()
                .map(|kb| (Padding::Numbered, kb)),
        )
        .collect();
    let exe = std::env::current_exe().unwrap();
    println!(
        "{:>8} {:>10} {:>9} {:>5} {:>9} {:>14} {:>12} {:>11} {:>13}",
        "padding",
        "context KB",
        "tokens",
        "rows",
        "build s",
        "RSS before MB",
        "peak RSS MB",
        "similarity",
        "similarity s"
    );
    for (padding, kb) in runs {
        let temp = tempfile::tempdir().unwrap();
        generate(&temp.path().join("raw"), kb * 1000, padding);
        let out = Command::new(&exe)
            .env("LARGE_CONTEXT_CHILD", temp.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let Some(line) = text.lines().find(|l| l.starts_with("RESULT ")) else {
            eprintln!("child failed: {}", String::from_utf8_lossy(&out.stderr));
            continue;
        };
        let v: Vec<f64> = line[7..]
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        println!(
            "{:>8} {:>10} {:>9.0} {:>5.0} {:>9.2} {:>14.1} {:>12.1} {:>11.4} {:>13.3}",
            padding.name(),
            kb,
            v[6],
            v[0],
            v[1],
            v[2] / 1024.0,
            v[3] / 1024.0,
            v[4],
            v[5]
        );
    }
}
