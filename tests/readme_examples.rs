//! Every `conflictbench` line of README.md runs, in order, and exits as the README says.
//!
//! Conventions (README authors: follow them and your example is tested with no change here):
//! - Examples are the lines of fenced blocks tagged `sh`, `bash`, `shell` or `console`; a
//!   trailing `\` joins the next line; `$ ` at the start is dropped. A line runs when it starts
//!   with `conflictbench` or `cargo run ... -p conflictbench --` (the binary under test stands
//!   in for both); `export NAME=VALUE` sets a variable for the lines after it (`...` stands for
//!   a secret and becomes a dummy value); every other line (`cargo test`, `cd`) is skipped.
//! - An example is expected to exit 0. One that should fail ends with a comment that starts
//!   with `exit N`, e.g. `conflictbench build rcall   # exit 2: lists kre, recall, all`.
//! - Placeholders: the value of `--base-url` (and of `--reader-base-url`) becomes the
//!   in-process mock server (cb-mock) in an
//!   example expected to succeed (an example expected to fail keeps its URL: it must fail
//!   before any call); `../shared/data` becomes the shared samples (a failure under
//!   `CI=true` when missing, the example skipped otherwise).
//! - The examples run in a fresh temporary folder holding only `raw` (a link to the
//!   repository's `raw/`): relative paths land there, and the bundled recipes and prompts are
//!   used. An example may write only into `generated/` (git ignores it); anything else it
//!   leaves at the top of the folder fails the test.
//! - `agreement` reads sheets filled by raters: a sheet it names that does not exist yet is
//!   filled by the test from the last `--sheet` an example wrote (the raters' work).

#![allow(clippy::print_stderr)] // a skipped example says so
mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

/// One thing the README asks to run.
#[derive(Debug, Clone, PartialEq)]
enum Line {
    Export(String, String),
    Run {
        /// 1-based line of README.md where the example starts.
        at: usize,
        text: String,
        args: Vec<String>,
        expect: i32,
    },
}

/// Splits a shell line into words (single and double quotes honoured) and its comment.
fn words(line: &str) -> (Vec<String>, String) {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == c {
                        break;
                    }
                    cur.push(q);
                }
            }
            '#' if !in_word => return (out, chars.collect::<String>().trim().to_owned()),
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    (out, String::new())
}

/// The example lines of a README, in order.
fn parse(readme: &str) -> Vec<Line> {
    let mut out = Vec::new();
    let mut in_shell: Option<bool> = None;
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in readme.lines().enumerate() {
        let trimmed = raw.trim();
        if let Some(info) = trimmed.strip_prefix("```") {
            in_shell = match in_shell {
                Some(_) => None,
                None => Some(matches!(info.trim(), "sh" | "bash" | "shell" | "console")),
            };
            continue;
        }
        if in_shell != Some(true) {
            continue;
        }
        let (at, mut text) = pending.take().unwrap_or((i + 1, String::new()));
        let part = trimmed.strip_prefix("$ ").unwrap_or(trimmed);
        if let Some(head) = part.strip_suffix('\\') {
            text.push_str(head.trim_end());
            text.push(' ');
            pending = Some((at, text));
            continue;
        }
        text.push_str(part);
        let (w, comment) = words(&text);
        let args: Option<Vec<String>> = match w.first().map(String::as_str) {
            Some("conflictbench") => Some(w[1..].to_vec()),
            Some("cargo")
                if w.get(1).is_some_and(|s| s == "run")
                    && w.windows(2)
                        .any(|p| p[0] == "-p" && p[1] == "conflictbench") =>
            {
                w.iter()
                    .position(|s| s == "--")
                    .map(|k| w[k + 1..].to_vec())
            }
            Some("export") => {
                if let Some((k, v)) = w.get(1).and_then(|kv| kv.split_once('=')) {
                    out.push(Line::Export(k.to_owned(), v.to_owned()));
                }
                None
            }
            _ => None,
        };
        if let Some(args) = args {
            let expect = comment
                .strip_prefix("exit ")
                .and_then(|r| {
                    r.split(|c: char| !c.is_ascii_digit())
                        .next()
                        .and_then(|n| n.parse().ok())
                })
                .unwrap_or(0);
            out.push(Line::Run {
                at,
                text: text.trim().to_owned(),
                args,
                expect,
            });
        }
    }
    out
}

#[test]
fn the_parser_reads_blocks_continuations_comments_and_expected_failures() {
    let md = "text\n```sh\n$ conflictbench build kre \\\n    --domains cose   # a comment\n\
              cargo run --release -p conflictbench -- build all\ncargo test --workspace\n\
              export OPENAI_API_KEY=...\nconflictbench build rcall  # exit 2: unknown\n```\n\
              ```toml\nconflictbench not a shell line\n```\n\
              conflictbench outside a block\n\
              ```console\nconflictbench audit \"a b.json\" x#y\n```\n";
    let lines = parse(md);
    let run = |at: usize, text: &str, args: &[&str], expect: i32| Line::Run {
        at,
        text: text.to_owned(),
        args: args.iter().map(|s| (*s).to_owned()).collect(),
        expect,
    };
    assert_eq!(
        lines,
        vec![
            run(
                3,
                "conflictbench build kre --domains cose   # a comment",
                &["build", "kre", "--domains", "cose"],
                0
            ),
            run(
                5,
                "cargo run --release -p conflictbench -- build all",
                &["build", "all"],
                0
            ),
            Line::Export("OPENAI_API_KEY".into(), "...".into()),
            run(
                8,
                "conflictbench build rcall  # exit 2: unknown",
                &["build", "rcall"],
                2
            ),
            run(
                15,
                "conflictbench audit \"a b.json\" x#y",
                &["audit", "a b.json", "x#y"],
                0
            ),
        ]
    );
}

/// Fills a copy of the review sheet `from` as rater `k` would: a rating on every row.
fn fill_sheet(from: &Path, to: &Path, k: usize) {
    let mut r = csv::Reader::from_path(from)
        .unwrap_or_else(|e| panic!("no sheet to fill at {}: {e}", from.display()));
    let header = r.headers().unwrap().clone();
    let col = header.iter().position(|h| h == "rating").unwrap();
    let mut w = csv::Writer::from_path(to).unwrap();
    w.write_record(&header).unwrap();
    let levels = ["not", "somewhat", "highly"];
    for (j, rec) in r.records().enumerate() {
        let rec = rec.unwrap();
        let row: Vec<&str> = rec
            .iter()
            .enumerate()
            .map(|(c, v)| {
                if c == col {
                    levels[(j + k * (j % 2)) % 3]
                } else {
                    v
                }
            })
            .collect();
        w.write_record(&row).unwrap();
    }
    w.flush().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn every_readme_example_runs_as_written() {
    let repo = common::repo();
    let readme = std::fs::read_to_string(repo.join("README.md")).unwrap();
    let lines = parse(&readme);
    let examples = lines
        .iter()
        .filter(|l| matches!(l, Line::Run { .. }))
        .count();
    assert!(
        examples >= 10,
        "only {examples} conflictbench lines found in README.md: is the parser broken?"
    );
    let shared = common::shared_data();
    let mock = cb_mock::MockServer::start(common::model()).await;
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    std::os::unix::fs::symlink(repo.join("raw"), cwd.join("raw")).unwrap();
    let allowed: BTreeSet<String> = ["raw", "generated"].map(String::from).into();
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    let mut last_sheet: Option<String> = None;
    let mut failures = Vec::new();
    let mut ran = 0;
    for line in &lines {
        let (at, text, args, expect) = match line {
            Line::Export(k, v) => {
                let v = if v == "..." { "sk-readme-example" } else { v };
                env.insert(k.clone(), v.to_owned());
                continue;
            }
            Line::Run {
                at,
                text,
                args,
                expect,
            } => (at, text, args, *expect),
        };
        let mut args = args.clone();
        if args.iter().any(|a| a.contains("../shared/data")) {
            let Some(shared) = &shared else {
                eprintln!("README.md:{at}: skipped (no ../shared/data): {text}");
                continue;
            };
            for a in &mut args {
                *a = a.replace("../shared/data", &shared.display().to_string());
            }
        }
        for i in 0..args.len() {
            for flag in ["--base-url", "--reader-base-url"] {
                if expect == 0 && args[i] == flag && i + 1 < args.len() {
                    args[i + 1] = mock.base_url();
                } else if expect == 0 && args[i].starts_with(&format!("{flag}=")) {
                    args[i] = format!("{flag}={}", mock.base_url());
                }
            }
        }
        if args.first().is_some_and(|a| a == "agreement") {
            let from = last_sheet
                .clone()
                .expect("an agreement example before any --sheet example");
            let missing = args.iter().skip(1).filter(|a| a.ends_with(".csv"));
            for (k, a) in missing.filter(|a| !cwd.join(a).exists()).enumerate() {
                fill_sheet(&cwd.join(&from), &cwd.join(a), k);
            }
        }
        if let Some(k) = args.iter().position(|a| a == "--sheet") {
            last_sheet = args.get(k + 1).cloned();
        }
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"));
        cmd.args(&args)
            .current_dir(cwd)
            .env_remove("OPENAI_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .env_remove("RUST_LOG")
            .env_remove("CONFLICTBENCH_LOG")
            .envs(&env)
            .kill_on_drop(true);
        let out = tokio::time::timeout(Duration::from_secs(600), cmd.output())
            .await
            .unwrap_or_else(|_| panic!("README.md:{at}: still running after 600 s: {text}"))
            .unwrap();
        ran += 1;
        let code = out.status.code().unwrap_or(-1);
        if code != expect {
            failures.push(format!(
                "README.md:{at}: `{text}` exited {code}, the README says {expect}\n{}",
                common::text(&out)
            ));
        }
    }
    let mut strays: Vec<String> = std::fs::read_dir(cwd)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !allowed.contains(n))
        .collect();
    strays.sort();
    if !strays.is_empty() {
        failures.push(format!(
            "the examples left {strays:?} at the top of the working folder: write into generated/"
        ));
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} README examples went wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
