//! `--batch-dir`: the rounds of [`crate::batch`] with a folder of files for the provider.
//!
//! Calls that miss the cache wait for a round as with the Batch API. A round:
//!
//! 1. serves keys answered meanwhile from the cache;
//! 2. imports every output file that has appeared beside one of the folder's input files
//!    that the journal holds open (`requests-00007.jsonl` -> `requests-00007.output.jsonl`,
//!    the format vLLM's `run_batch` and the Batch API write): each line is checked against
//!    the request it names, and only a checked answer is cached; the file is then closed in
//!    the journal. A line that is not JSON, names no request of that file or one already
//!    answered, names another model, or carries a body that is not an answer is reported
//!    with its file and line (the log, and `problems.log` in the folder), and its request is
//!    asked again like a request the file left out;
//! 3. leaves the keys of input files still without output waiting;
//! 4. writes the other keys as new input files of at most `max_requests_per_file` lines
//!    (`custom_id` = cache key, `body` = the exact online body), recorded in the journal
//!    before they are written;
//! 5. answers every caller whose request waits with [`LlmError::Waiting`], which stops the
//!    build (exit code 4): the same command, run again once the files are answered, goes on.
//!
//! A request that comes back without an answer more than `max_retries` times is rejected
//! as an online call that runs out of retries. Nothing reaches a server from here.

use crate::batch::{answered_meanwhile, chunks, estimated_prompt, Answer, Waiting};
use crate::batch_api::parse_results;
use crate::cache::RequestRow;
use crate::{Cache, CachedResponse, Llm, LlmError};
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How `--batch-dir` runs.
#[derive(Debug, Clone)]
pub struct FilesOptions {
    /// The folder of input and output files (absolute: it names the files in the journal).
    pub dir: PathBuf,
    /// Most requests in one input file.
    pub max_requests_per_file: usize,
    /// Most bytes in one input file.
    pub max_bytes_per_file: usize,
    /// A round starts when no call has been queued for this long.
    pub quiet: Duration,
}

impl FilesOptions {
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            max_requests_per_file: 5_000,
            max_bytes_per_file: 190 * 1024 * 1024,
            quiet: Duration::from_millis(300),
        }
    }
}

/// The endpoint batch files' answers are recorded as coming from when no `--base-url` names
/// the server that answers them.
pub const ENDPOINT: &str = "batch-files";

/// How the journal names a folder's files: `dir:FOLDER/NAME`.
pub(crate) const JOURNAL: &str = "dir:";
const INPUT: &str = "requests-";
const OUTPUT: &str = ".output.jsonl";
/// Where a folder's refused output lines are listed, one `FILE:LINE: why` a line.
pub const PROBLEMS: &str = "problems.log";

fn journal_prefix(dir: &Path) -> String {
    format!("{JOURNAL}{}/", dir.display())
}

/// The output file an executor writes for an input file.
pub fn output_path(input: &Path) -> PathBuf {
    let name = input.file_name().map_or_else(
        || "requests.jsonl".into(),
        |n| n.to_string_lossy().into_owned(),
    );
    input.with_file_name(format!("{}{OUTPUT}", name.trim_end_matches(".jsonl")))
}

/// The number of an input file's name (`requests-00007.jsonl` -> 7).
fn input_number(name: &str) -> Option<u64> {
    name.strip_prefix(INPUT)?
        .strip_suffix(".jsonl")?
        .parse()
        .ok()
}

/// An input file of a batch folder that has no output file yet.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingFile {
    pub path: PathBuf,
    /// The model its first request names.
    pub model: String,
    pub requests: usize,
}

/// The input files of `dir` without an output file, in name order: what an executor has
/// to answer.
pub fn pending(dir: &Path) -> std::io::Result<Vec<PendingFile>> {
    let mut out = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| input_number(n).is_some())
        .collect();
    names.sort_unstable();
    for name in names {
        let path = dir.join(&name);
        if output_path(&path).exists() {
            continue;
        }
        let text = std::fs::read_to_string(&path)?;
        let model = text
            .lines()
            .next()
            .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .and_then(|v| v["body"]["model"].as_str().map(str::to_owned))
            .unwrap_or_default();
        out.push(PendingFile {
            path,
            model,
            requests: text.lines().filter(|l| !l.trim().is_empty()).count(),
        });
    }
    Ok(out)
}

/// Whether `answered` (an output line's `model`) is the model asked for: the same name, or a
/// dated snapshot of it (`gpt-4o-mini` answered as `gpt-4o-mini-2024-07-18`).
fn same_model(answered: &str, asked: &str) -> bool {
    answered.eq_ignore_ascii_case(asked)
        || answered
            .strip_prefix(asked)
            .is_some_and(|rest| rest.starts_with('-'))
}

/// Names of new input files are taken one at a time (the writer and its reader write to the
/// same folder).
static NAMING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

impl Llm {
    /// One round through the folder: an answer, an error or [`LlmError::Waiting`] for every
    /// key taken.
    pub(crate) async fn files_round(
        &self,
        taken: &HashMap<String, Waiting>,
        opts: &FilesOptions,
    ) -> Result<HashMap<String, Answer>, LlmError> {
        let inner = &self.inner;
        let cache = inner
            .cache
            .as_ref()
            .ok_or_else(|| LlmError::Config("--batch-dir needs a cache file".into()))?;
        let (mut answers, mut open) = answered_meanwhile(cache, taken)?;
        if open.is_empty() {
            return Ok(answers);
        }
        let prefix = journal_prefix(&opts.dir);
        let mut held = Vec::new();
        let live = cache.live_batches(&inner.endpoint, &inner.config.model, Some(&prefix))?;
        for (record, keys) in live {
            let input = opts.dir.join(&record.file_id[prefix.len()..]);
            let output = output_path(&input);
            if output.is_file() {
                for (key, answer) in self.import(cache, &record.file_id, &input, &prefix).await? {
                    if open.remove(key.as_str()) {
                        answers.insert(key, answer);
                    }
                }
            } else if input.is_file() {
                held.extend(keys.into_iter().filter(|k| open.remove(k.as_str())));
            } else {
                // Removed by hand: its requests are written again.
                tracing::warn!(file = %input.display(), "a batch file of the journal is gone; its requests are written again");
                self.commit_file(cache, &record.file_id, Vec::new(), &mut HashMap::new())
                    .await?;
            }
        }
        let fresh: Vec<(&str, &str)> = open.iter().map(|k| (*k, taken[*k].line.as_str())).collect();
        for chunk in chunks(&fresh, opts.max_requests_per_file, opts.max_bytes_per_file) {
            self.write_file(cache, chunk, taken, opts, &prefix).await?;
        }
        let waiting = LlmError::Waiting(opts.dir.display().to_string());
        for key in held.into_iter().chain(open.iter().map(|k| (*k).to_owned())) {
            answers.insert(key, Err(waiting.clone()));
        }
        Ok(answers)
    }

    /// Records a new input file in the journal, then writes it (whole, under its final name
    /// only once complete).
    async fn write_file(
        &self,
        cache: &Cache,
        chunk: &[(&str, &str)],
        taken: &HashMap<String, Waiting>,
        opts: &FilesOptions,
        prefix: &str,
    ) -> Result<(), LlmError> {
        let inner = &self.inner;
        // Counted against --max-cost and --max-tokens as a Batch API file is.
        let (bytes, rows, est_usd, _reservation) = self.input_file(chunk, taken)?;
        let io = |path: &Path, e: std::io::Error| {
            LlmError::Config(format!("cannot write {}: {e}", path.display()))
        };
        let _naming = NAMING.lock().await;
        let journal = cache.file_ids(prefix)?;
        let on_disk = std::fs::read_dir(&opts.dir)
            .map_err(|e| io(&opts.dir, e))?
            .filter_map(|e| e.ok()?.file_name().into_string().ok());
        let last = journal
            .iter()
            .map(|id| id[prefix.len()..].to_owned())
            .chain(on_disk)
            .filter_map(|n| input_number(&n))
            .max()
            .unwrap_or(0);
        let name = format!("{INPUT}{:05}.jsonl", last + 1);
        let path = opts.dir.join(&name);
        let requests = rows.len();
        cache
            .record_upload(
                &format!("{prefix}{name}"),
                (&inner.endpoint, &inner.config.model),
                "written",
                est_usd,
                rows,
            )
            .await?;
        let part = path.with_extension("jsonl.part");
        std::fs::write(&part, &bytes).map_err(|e| io(&part, e))?;
        std::fs::rename(&part, &path).map_err(|e| io(&path, e))?;
        inner.stats.batches.fetch_add(1, Ordering::Relaxed);
        tracing::info!(file = %path.display(), requests, model = %inner.config.model, "batch file written");
        Ok(())
    }

    /// Imports the output file of `input`: checks each line, commits the answers and closes
    /// the file in the journal; returns an answer or an error for each of its requests.
    async fn import(
        &self,
        cache: &Cache,
        file_id: &str,
        input: &Path,
        prefix: &str,
    ) -> Result<HashMap<String, Answer>, LlmError> {
        let inner = &self.inner;
        let output = output_path(input);
        let bytes = std::fs::read(&output)
            .map_err(|e| LlmError::Config(format!("cannot read {}: {e}", output.display())))?;
        let rows = cache.batch_requests(file_id)?;
        let asked = &inner.config.model;
        let mut answered: Vec<(RequestRow, CachedResponse)> = Vec::new();
        let mut errors: HashMap<String, LlmError> = HashMap::new();
        let mut problems: Vec<(usize, String)> = Vec::new();
        let mut seen = HashSet::new();
        // Lines the executor answered with an error, by reason, and the first of them.
        let mut error_lines: std::collections::BTreeMap<String, usize> = Default::default();
        let mut first_error = None;
        let input_name = input.file_name().unwrap_or_default().to_string_lossy();
        for line in parse_results(&bytes, |k| estimated_prompt(&rows, k)) {
            let line = match line {
                Ok(l) => l,
                Err(problem) => {
                    problems.push(problem);
                    continue;
                }
            };
            let n = line.line;
            let Some(row) = rows.get(&line.custom_id) else {
                problems.push((
                    n,
                    format!(
                        "custom_id {} is not a request of {input_name}",
                        line.custom_id
                    ),
                ));
                continue;
            };
            if !seen.insert(line.custom_id.clone()) {
                problems.push((
                    n,
                    format!(
                        "custom_id {} is answered twice; the first answer stands",
                        line.custom_id
                    ),
                ));
                continue;
            }
            let refused = |why: String| LlmError::Batch {
                code: "refused_line".into(),
                message: format!("{}:{n}: {why}", output.display()),
            };
            match line.outcome {
                Ok(_) if line.model.as_deref().is_some_and(|m| !same_model(m, asked)) => {
                    let why = format!(
                        "answered by model {}, {asked} was asked",
                        line.model.unwrap_or_default()
                    );
                    problems.push((n, why.clone()));
                    errors.insert(row.key.clone(), refused(why));
                }
                Ok(answer) => answered.push((row.clone(), answer)),
                Err(e @ LlmError::Malformed { .. }) => {
                    let why = format!("not an answer: {e}");
                    problems.push((n, why.clone()));
                    errors.insert(row.key.clone(), refused(why));
                }
                Err(e) => {
                    *error_lines.entry(e.reason_code()).or_default() += 1;
                    first_error.get_or_insert_with(|| format!("{}:{n}: {e}", output.display()));
                    errors.insert(row.key.clone(), self.result_error(e));
                }
            }
        }
        let got: HashSet<&str> = answered.iter().map(|(r, _)| r.key.as_str()).collect();
        for key in rows.keys().filter(|k| !got.contains(k.as_str())) {
            errors
                .entry(key.clone())
                .or_insert_with(|| LlmError::Batch {
                    code: "batch_missing".into(),
                    message: format!("{} has no answer for it", output.display()),
                });
        }
        // A request that keeps coming back without an answer ends as an online call that
        // runs out of retries.
        let mut outcomes = HashMap::new();
        for (key, e) in errors {
            let e = if e.is_retryable() {
                let rounds = cache.files_holding(&key, prefix)?;
                if rounds > inner.config.max_retries {
                    LlmError::Exhausted {
                        attempts: rounds,
                        last: Box::new(e),
                    }
                } else {
                    e
                }
            } else {
                e
            };
            outcomes.insert(key, Err(e));
        }
        if let Some(first) = first_error {
            tracing::warn!(by_reason = ?error_lines, "the executor answered requests with errors; the first: {first}");
        }
        self.report(&output, &problems);
        let (n_answered, n_failed) = (answered.len(), outcomes.len());
        cache
            .update_batch(
                file_id,
                &output.display().to_string(),
                "imported",
                n_answered as u64,
                n_failed as u64,
            )
            .await?;
        self.commit_file(cache, file_id, answered, &mut outcomes)
            .await?;
        tracing::info!(file = %output.display(), answers = n_answered, without = n_failed, refused_lines = problems.len(), "batch output imported");
        Ok(outcomes)
    }

    /// Reports refused output lines: a warning each, and a line each in the folder's
    /// `problems.log`.
    fn report(&self, output: &Path, problems: &[(usize, String)]) {
        if problems.is_empty() {
            return;
        }
        let mut text = String::new();
        for (n, why) in problems {
            tracing::warn!(
                "{}:{n}: {why}; its request is asked again",
                output.display()
            );
            text.push_str(&format!("{}:{n}: {why}\n", output.display()));
        }
        let log = output.with_file_name(PROBLEMS);
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|mut f| f.write_all(text.as_bytes()));
        if let Err(e) = written {
            tracing::warn!(file = %log.display(), error = %e, "cannot write the problems log");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_models() {
        assert_eq!(
            output_path(Path::new("/b/requests-00007.jsonl")),
            Path::new("/b/requests-00007.output.jsonl")
        );
        assert_eq!(input_number("requests-00007.jsonl"), Some(7));
        assert_eq!(input_number("requests-00007.output.jsonl"), None);
        assert_eq!(input_number("requests-00007.jsonl.part"), None);
        assert!(same_model("gpt-4o-mini-2024-07-18", "gpt-4o-mini"));
        assert!(same_model("SmolLM2", "smollm2"));
        assert!(!same_model("gpt-4o", "gpt-4o-mini"));
        assert!(!same_model("llama3", "smollm2"));
    }
}
