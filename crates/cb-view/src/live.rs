//! A build in progress: for each folder of outputs, the rows and rejects written so far (the
//! temporary files `.NAME.tmp-PID` a running build streams its rows to, counted a line at a
//! time), what it finished (its files and `runs.jsonl`), and from the cache the calls, tokens
//! and spend per model and the latest answers. Nothing is locked or written.

use crate::cache::{self, Answer, ModelSpend};
use crate::error::ViewError;
use crate::index;
use serde::Serialize;
use std::io::BufRead;
use std::path::Path;

/// One file of a folder.
#[derive(Debug, Clone, Serialize)]
pub struct FileProgress {
    /// The file's final name (`cose.jsonl`, `rejects.jsonl`).
    pub name: String,
    pub lines: u64,
    /// Being written (a temporary file) or finished.
    pub writing: bool,
}

/// One folder of outputs (a recipe's).
#[derive(Debug, Clone, Serialize)]
pub struct RecipeProgress {
    pub name: String,
    pub files: Vec<FileProgress>,
    /// Being written: some temporary file is there.
    pub running: bool,
    /// The last line of `runs.jsonl`: upstream calls, cache hits, spend of the last run.
    pub last_run: Option<String>,
}

/// What the live page shows.
#[derive(Debug, Clone, Serialize)]
pub struct Live {
    pub recipes: Vec<RecipeProgress>,
    pub spend: Vec<ModelSpend>,
    pub total_usd: f64,
    pub calls: u64,
    pub answers: Vec<Answer>,
}

fn count_lines(path: &Path) -> u64 {
    let Ok(f) = std::fs::File::open(path) else {
        return 0;
    };
    let mut r = std::io::BufReader::new(f);
    let mut n = 0;
    let mut buf = Vec::new();
    // A line still being written (no newline yet) is not counted.
    while let Ok(k) = r.read_until(b'\n', &mut buf) {
        if k == 0 {
            break;
        }
        if buf.ends_with(b"\n") && buf.iter().any(|b| !b.is_ascii_whitespace()) {
            n += 1;
        }
        buf.clear();
    }
    n
}

fn last_run(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let v: serde_json::Value = serde_json::from_str(text.lines().last()?).ok()?;
    let llm = &v["llm"];
    Some(format!(
        "last run: {} upstream calls, {} cache hits, ${:.4}{}",
        llm["upstream_calls"],
        llm["cache_hits"],
        llm["spent_usd"].as_f64().unwrap_or(0.0),
        v["stopped"]
            .as_str()
            .map(|s| format!(", stopped: {s}"))
            .unwrap_or_default()
    ))
}

/// One folder's files.
fn recipe(root: &Path, dir: &Path) -> RecipeProgress {
    let mut files = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    names.sort();
    for p in names {
        let n = p.file_name().map(|n| n.to_string_lossy().into_owned());
        let n = n.unwrap_or_default();
        let (name, writing) = match n.strip_prefix('.').and_then(|s| s.rsplit_once(".tmp-")) {
            Some((name, _)) => (name.to_owned(), true),
            None => (n, false),
        };
        if !name.ends_with(".jsonl") || name == "runs.jsonl" {
            continue;
        }
        files.push(FileProgress {
            lines: count_lines(&p),
            name,
            writing,
        });
    }
    let name = match dir.strip_prefix(root) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => dir.display().to_string(),
    };
    RecipeProgress {
        name,
        running: files.iter().any(|f| f.writing),
        files,
        last_run: last_run(&dir.join("runs.jsonl")),
    }
}

/// The progress of every folder under `root`, and the cache's activity.
pub fn live(root: &Path, cache_path: &Path) -> Result<Live, ViewError> {
    let recipes = if root.is_dir() {
        index::domain_dirs(root)
            .iter()
            .map(|d| recipe(root, d))
            .collect()
    } else {
        Vec::new()
    };
    let (spend, answers) = cache::activity(cache_path, 20)?;
    Ok(Live {
        recipes,
        total_usd: spend.iter().filter_map(|s| s.usd).sum(),
        calls: spend.iter().map(|s| s.calls).sum(),
        spend,
        answers,
    })
}
