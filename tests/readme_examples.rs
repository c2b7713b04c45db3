//! Every `conflictbench` line of README.md and of every chapter of the guide (`docs/*.md`)
//! runs, in order, and exits as the page says; every relative link of those pages leads to a
//! file (and heading) that is there; the guide's index lists every chapter.
//!
//! Conventions (authors of README.md and docs/*.md: follow them and your example is tested
//! with no change here):
//! - Every `.md` file of `docs/` is read (a new chapter is tested by being there); each file's
//!   examples run in order in a fresh folder of their own, so a chapter makes what it uses.
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
//! - A file's examples run in a fresh temporary folder holding only `raw` (a link to the
//!   repository's `raw/`): relative paths land there, and the bundled recipes and prompts are
//!   used. An example may write only into `generated/` (git ignores it); anything else it
//!   leaves at the top of the folder fails the test.
//! - `agreement` reads sheets filled by raters: a sheet it names that does not exist yet is
//!   filled by the test from the last `--sheet` an example wrote (the raters' work).

#![allow(clippy::print_stderr)] // a skipped example says so
mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One thing a page asks to run.
#[derive(Debug, Clone, PartialEq)]
enum Line {
    Export(String, String),
    Run {
        /// 1-based line of the page where the example starts.
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

/// The example lines of a page, in order.
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

/// The pages whose examples run: README.md, then every `.md` file of `docs/`, by name.
fn pages(repo: &Path) -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo.join("docs"))
        .expect("the guide's folder docs/")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    std::iter::once(repo.join("README.md"))
        .chain(docs)
        .collect()
}

/// What the examples of every page share: the mock server, the shared data, the failures.
struct Run {
    mock: cb_mock::MockServer,
    shared: Option<PathBuf>,
    failures: Vec<String>,
    ran: usize,
}

impl Run {
    /// Runs the examples of one page, in order, in a fresh folder.
    async fn page(&mut self, repo: &Path, name: &str, lines: &[Line]) {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        std::os::unix::fs::symlink(repo.join("raw"), cwd.join("raw")).unwrap();
        let mut env: BTreeMap<String, String> = BTreeMap::new();
        let mut last_sheet: Option<String> = None;
        for line in lines {
            match line {
                Line::Export(k, v) => {
                    let v = if v == "..." { "sk-readme-example" } else { v };
                    env.insert(k.clone(), v.to_owned());
                }
                Line::Run {
                    at,
                    text,
                    args,
                    expect,
                } => {
                    let Some(args) = self.args_of(name, *at, text, args, *expect) else {
                        continue;
                    };
                    fill_sheets(cwd, &args, &mut last_sheet);
                    self.one(cwd, &env, &format!("{name}:{at}"), text, &args, *expect)
                        .await;
                }
            }
        }
        let allowed: BTreeSet<String> = ["raw", "generated"].map(String::from).into();
        let mut strays: Vec<String> = std::fs::read_dir(cwd)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !allowed.contains(n))
            .collect();
        strays.sort();
        if !strays.is_empty() {
            self.failures.push(format!(
                "the examples of {name} left {strays:?} at the top of the working folder: write into generated/"
            ));
        }
    }

    /// An example's arguments with its placeholders filled in, or `None` when it is skipped.
    fn args_of(
        &self,
        name: &str,
        at: usize,
        text: &str,
        args: &[String],
        expect: i32,
    ) -> Option<Vec<String>> {
        let mut args = args.to_vec();
        if args.iter().any(|a| a.contains("../shared/data")) {
            let Some(shared) = &self.shared else {
                eprintln!("{name}:{at}: skipped (no ../shared/data): {text}");
                return None;
            };
            for a in &mut args {
                *a = a.replace("../shared/data", &shared.display().to_string());
            }
        }
        for i in 0..args.len() {
            for flag in ["--base-url", "--reader-base-url"] {
                if expect == 0 && args[i] == flag && i + 1 < args.len() {
                    args[i + 1] = self.mock.base_url();
                } else if expect == 0 && args[i].starts_with(&format!("{flag}=")) {
                    args[i] = format!("{flag}={}", self.mock.base_url());
                }
            }
        }
        Some(args)
    }

    /// Runs one example and records it when it exits otherwise than the page says.
    async fn one(
        &mut self,
        cwd: &Path,
        env: &BTreeMap<String, String>,
        at: &str,
        text: &str,
        args: &[String],
        expect: i32,
    ) {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"));
        cmd.args(args)
            .current_dir(cwd)
            .env_remove("OPENAI_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .env_remove("RUST_LOG")
            .env_remove("CONFLICTBENCH_LOG")
            .envs(env)
            .kill_on_drop(true);
        let out = tokio::time::timeout(Duration::from_secs(600), cmd.output())
            .await
            .unwrap_or_else(|_| panic!("{at}: still running after 600 s: {text}"))
            .unwrap();
        self.ran += 1;
        let code = out.status.code().unwrap_or(-1);
        if code != expect {
            self.failures.push(format!(
                "{at}: `{text}` exited {code}, the page says {expect}\n{}",
                common::text(&out)
            ));
        }
    }
}

/// Before an `agreement` example, fills each sheet it names that is not there yet from the
/// last `--sheet` an example wrote (the raters' work); remembers a `--sheet`.
fn fill_sheets(cwd: &Path, args: &[String], last_sheet: &mut Option<String>) {
    if args.first().is_some_and(|a| a == "agreement") {
        let from = last_sheet
            .clone()
            .expect("an agreement example after a --sheet example on the same page");
        let missing = args.iter().skip(1).filter(|a| a.ends_with(".csv"));
        for (k, a) in missing.filter(|a| !cwd.join(a).exists()).enumerate() {
            fill_sheet(&cwd.join(&from), &cwd.join(a), k);
        }
    }
    if let Some(k) = args.iter().position(|a| a == "--sheet") {
        *last_sheet = args.get(k + 1).cloned();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_example_of_the_readme_and_the_guide_runs_as_written() {
    let repo = common::repo();
    let pages: Vec<(String, Vec<Line>)> = pages(&repo)
        .iter()
        .map(|p| {
            let name = p.strip_prefix(&repo).unwrap().display().to_string();
            (name, parse(&std::fs::read_to_string(p).unwrap()))
        })
        .collect();
    let count = |name: &str| {
        pages
            .iter()
            .filter(|(n, _)| name.is_empty() || n == name)
            .flat_map(|(_, l)| l)
            .filter(|l| matches!(l, Line::Run { .. }))
            .count()
    };
    assert!(
        count("README.md") >= 10 && count("") >= 60,
        "only {} conflictbench lines found in README.md and {} in all: is the parser broken?",
        count("README.md"),
        count("")
    );
    let mut run = Run {
        mock: cb_mock::MockServer::start(common::model()).await,
        shared: common::shared_data(),
        failures: Vec::new(),
        ran: 0,
    };
    for (name, lines) in &pages {
        run.page(&repo, name, lines).await;
    }
    assert!(
        run.failures.is_empty(),
        "{} of {} examples went wrong:\n{}",
        run.failures.len(),
        run.ran,
        run.failures.join("\n")
    );
}

/// A heading's anchor as GitHub makes it: lower case, spaces to `-`, punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown file's headings (fenced blocks left out).
fn anchors(md: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut out = BTreeSet::new();
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.insert(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

/// The targets of a Markdown file's inline links `[text](target)`, outside code.
fn links(md: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Code spans hold no links.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        for part in prose.split("](").skip(1) {
            if let Some(end) = part.find(')') {
                out.push(part[..end].to_owned());
            }
        }
    }
    out
}

#[test]
fn the_link_finder_reads_links_and_anchors() {
    let md = "# A real model, without an `API` key\n[a](docs/x.md#y) `[b](not.md)` [c](../Q.md)\n\
              ```sh\n[d](no.md)\n# not a heading\n```\n## Memory of a build (issue 29)\n";
    assert_eq!(links(md), ["docs/x.md#y", "../Q.md"]);
    assert_eq!(
        anchors(md),
        [
            "a-real-model-without-an-api-key",
            "memory-of-a-build-issue-29"
        ]
        .map(String::from)
        .into()
    );
}

/// Every relative link of README.md and of the guide leads to a file that is there, and a
/// link with `#anchor` to a heading of that file.
#[test]
fn every_link_of_the_readme_and_the_guide_leads_somewhere() {
    let repo = common::repo();
    let mut broken = Vec::new();
    for page in pages(&repo) {
        let md = std::fs::read_to_string(&page).unwrap();
        let name = page.strip_prefix(&repo).unwrap().display().to_string();
        for target in links(&md) {
            if target.starts_with("http://") || target.starts_with("https://") {
                continue;
            }
            let (file, frag) = target.split_once('#').unwrap_or((&target, ""));
            let path = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            if !path.exists() {
                broken.push(format!("{name}: ({target}): no file {}", path.display()));
            } else if !frag.is_empty() {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                if !anchors(&text).contains(frag) {
                    broken.push(format!("{name}: ({target}): no heading #{frag} there"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The guide's index (`docs/README.md`) links every chapter, so a chapter added to `docs/`
/// is found by a reader as well as by the examples test.
#[test]
fn the_guide_index_lists_every_chapter() {
    let repo = common::repo();
    let index = std::fs::read_to_string(repo.join("docs/README.md")).expect("docs/README.md");
    let listed: BTreeSet<String> = links(&index)
        .into_iter()
        .map(|l| l.split('#').next().unwrap_or_default().to_owned())
        .collect();
    let missing: Vec<String> = pages(&repo)
        .iter()
        .filter_map(|p| p.strip_prefix(repo.join("docs")).ok())
        .map(|p| p.display().to_string())
        .filter(|n| n != "README.md" && !listed.contains(n))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/README.md does not link the chapters {missing:?}: add a line for each"
    );
}
