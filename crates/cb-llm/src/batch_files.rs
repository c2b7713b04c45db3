//! `--batch-dir`: rounds ([`crate::rounds`]) through a folder of files for the provider.
//!
//! Calls that miss the cache wait for a round as with the Batch API (`batch`). A round
//! holds the process's folder lock (`FOLDERS`) from its first look at the journal to its
//! last file written, and:
//!
//! 1. serves keys answered meanwhile from the cache;
//! 2. imports every output file that has appeared beside one of this layer's input files
//!    that the journal holds open (`requests-00007.jsonl` -> `requests-00007.output.jsonl`,
//!    the format vLLM's `run_batch` and the Batch API write): each line is checked against
//!    the request it names, as the Batch API's are (`Core::check_results`), and only a
//!    checked answer is cached and counted as this layer's call; the file is then closed in
//!    the journal. A line that is not JSON, names no request of that file or one already
//!    answered, names another model, or carries a body that is not an answer is reported
//!    with its file and line (the log, and `problems.log` in the folder), and its request is
//!    asked again like a request the file left out. Each file is recorded with its owner
//!    (`Core::owner`: a recipe and a role), and the layers of a build of several recipes
//!    import, and count, their own files only (an unowned file, of an older version, by
//!    whichever layer comes first; another layer's answered file holding a request of the
//!    round, by the round);
//! 3. leaves the keys of input files still without output waiting;
//! 4. writes the other keys as new input files of at most `max_requests_per_file` lines
//!    (`custom_id` = cache key, `body` = the exact online body), recorded in the journal
//!    before they are written (a file of the journal whose input file is missing was
//!    removed by hand, as no round of the process looks in between: its requests are written
//!    again);
//! 5. answers every caller whose request waits with [`LlmError::Waiting`]: the engine lets
//!    its item go and reads on, a window of items at a time, and the build ends waiting (exit
//!    code 4) once every item has its next request in a file or its row; the same command,
//!    run again once the files are answered, goes on. The layer remembers the files its
//!    calls wait on ([`crate::Llm::waiting_files`]) for the build's message.
//!
//! A request that comes back without an answer from more than `max_retries` files (counted
//! in the journal, so across runs) is rejected as an online call that runs out of retries.
//! Nothing reaches a server from here.

use crate::batch_store::{self, BatchRecord, FOLDER_FILES};
use crate::cache::Cache;
use crate::layer_core::Core;
use crate::rounds::{
    answered_meanwhile, chunks, journal_estimate, Checked, NextFile, Round, RoundCalls,
};
use crate::spool::{Spool, Spooled};
use crate::{FilesOptions, LlmError};
use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The endpoint batch files' answers are recorded as coming from when no `--base-url` names
/// the server that answers them.
pub const ENDPOINT: &str = "batch-files";

const INPUT: &str = "requests-";
const OUTPUT: &str = ".output.jsonl";
/// Where a folder's refused output lines are listed, one `FILE:LINE: why` a line.
pub const PROBLEMS: &str = "problems.log";

/// How the journal names a folder's files: `dir:FOLDER/NAME`.
fn journal_prefix(dir: &Path) -> String {
    format!("{FOLDER_FILES}{}/", dir.display())
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
pub(crate) fn unanswered(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut names: Vec<String> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| input_number(n).is_some())
        .collect();
    names.sort_unstable();
    Ok(names
        .into_iter()
        .map(|n| dir.join(n))
        .filter(|p| !output_path(p).exists())
        .collect())
}

/// Those of `files` (input files) that have no output file yet, with their model and size,
/// for the message of a waiting build.
pub fn pending(files: impl IntoIterator<Item = PathBuf>) -> std::io::Result<Vec<PendingFile>> {
    let mut out = Vec::new();
    for path in files {
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

/// The rounds of every layer of the process, over any batch folder, take this lock for the
/// whole round (import, name, record, write): the build owns its folders' files in one
/// place, so no round sees a file recorded in the journal but not written yet (and takes it
/// for one removed by hand), and no two rounds import one file. Another process is kept out
/// of the folder by the CLI's folder lock.
static FOLDERS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Batch files at work: the folder and its limits.
pub(crate) struct FileRounds {
    opts: FilesOptions,
    /// The input files this layer's calls wait on: written by it, its own files still
    /// without output, and another layer's files holding requests it asked for.
    waits_on: std::sync::Mutex<BTreeSet<PathBuf>>,
}

impl FileRounds {
    /// Rounds through `opts.dir`; the journal's tables are created in `cache`.
    pub(crate) fn new(opts: &FilesOptions, cache: Option<&Cache>) -> Result<Self, LlmError> {
        if let Some(c) = cache {
            batch_store::create_tables(c)?;
        }
        Ok(Self {
            opts: opts.clone(),
            waits_on: Default::default(),
        })
    }

    /// The folder the files are written to.
    pub(crate) fn dir(&self) -> &Path {
        &self.opts.dir
    }

    /// The input files this layer's calls waited on in this run (some may be answered by
    /// now).
    pub(crate) fn waits_on(&self) -> Vec<PathBuf> {
        let files = self.waits_on.lock().expect("waiting files");
        files.iter().cloned().collect()
    }

    fn wait_on(&self, input: PathBuf) {
        self.waits_on.lock().expect("waiting files").insert(input);
    }
}

impl Round for FileRounds {
    fn quiet(&self) -> Duration {
        self.opts.quiet
    }

    async fn run(
        &self,
        llm: &Core,
        taken: &RoundCalls,
        spool: &Spool,
    ) -> Result<HashMap<String, LlmError>, LlmError> {
        llm.files_round((taken, spool), self).await
    }
}

/// A live file of the journal, as the folder shows it now.
enum Found {
    /// Its output file is there: to import.
    Answered,
    /// The input file is gone (removed by hand): its requests are written again.
    Gone,
    /// Still waiting for its output.
    Waiting,
}

fn look(input: &Path) -> Found {
    if output_path(input).is_file() {
        Found::Answered
    } else if !input.is_file() {
        Found::Gone
    } else {
        Found::Waiting
    }
}

impl Core {
    /// One round through the folder: an answer (handed out as it is imported), an error or
    /// [`LlmError::Waiting`] for every key taken.
    async fn files_round(
        &self,
        (taken, spool): (&RoundCalls, &Spool),
        rounds: &FileRounds,
    ) -> Result<HashMap<String, LlmError>, LlmError> {
        let opts = &rounds.opts;
        let cache = self
            .cache
            .as_ref()
            .ok_or_else(|| LlmError::Config("--batch-dir needs a cache file".into()))?;
        let mut errors = HashMap::new();
        let mut open = answered_meanwhile(cache, taken)?;
        if open.is_empty() {
            return Ok(errors);
        }
        let _folder = FOLDERS.lock().await;
        let prefix = journal_prefix(&opts.dir);
        let (endpoint, model) = endpoint_model(self);
        let input_of = |file_id: &str| opts.dir.join(&file_id[prefix.len()..]);
        // Every answered file of this layer's (or of no layer's) is imported, whichever
        // windows its requests came from: the round's callers get their answers, the others
        // find theirs in the cache when their items come, or their errors kept in the rounds.
        // Another layer's files are its own to import and be credited with.
        for record in cache.live_files(endpoint, model, &prefix)? {
            if record.owner != self.owner && !record.owner.is_empty() {
                continue;
            }
            let input = input_of(&record.file_id);
            match look(&input) {
                Found::Answered => {
                    let failed = self.import(cache, &record.key, &input, taken).await?;
                    take_errors(&mut open, &mut errors, failed, taken);
                }
                Found::Gone => self.gone(cache, &record.key, &input, taken).await?,
                Found::Waiting => rounds.wait_on(self.hold_waiting(cache, &record, input)?),
            }
        }
        // Requests of files still without output wait for them; another layer's answered
        // file that holds one of this round's requests is imported here.
        let mut held = Vec::new();
        for key in open.clone() {
            let Some((file_id, _)) = cache.held_live(key, (endpoint, model), &prefix)? else {
                continue;
            };
            let input = input_of(&file_id);
            match look(&input) {
                Found::Answered => {
                    let failed = self.import(cache, &file_id, &input, taken).await?;
                    take_errors(&mut open, &mut errors, failed, taken);
                }
                Found::Gone => self.gone(cache, &file_id, &input, taken).await?,
                Found::Waiting => {
                    open.remove(key);
                    held.push(key.to_owned());
                    rounds.wait_on(input);
                }
            }
        }
        let fresh: Vec<&str> = open.iter().copied().collect();
        let limits = (opts.max_requests_per_file, opts.max_bytes_per_file);
        let mut pending = chunks(&fresh, taken, limits);
        pending.reverse();
        // Each file as the budget lets it go, as a Batch API file is: cut where what is
        // left ends.
        while let Some(file) = self.next_file(&mut pending, taken)? {
            let input = self
                .write_file((cache, spool), file, taken, (opts, &prefix))
                .await?;
            rounds.wait_on(input);
        }
        let waiting = LlmError::Waiting(opts.dir.display().to_string());
        for key in held.into_iter().chain(open.iter().map(|k| (*k).to_owned())) {
            errors.insert(key, waiting.clone());
        }
        Ok(errors)
    }

    /// Holds against this run's budget the most a file of this layer still waiting for its
    /// answers may cost (its estimate in the journal, and its requests' prompts and
    /// `max_tokens`): an earlier run wrote it, and whatever answers it, it may be billed
    /// once this run or the next imports it, so this run's new files are cut to what is left
    /// beside it (a file of this run holds its own from when it is written). Held until it is
    /// collected. Gives back `input`, the file's path.
    fn hold_waiting(
        &self,
        cache: &Cache,
        record: &BatchRecord,
        input: PathBuf,
    ) -> Result<PathBuf, LlmError> {
        if !self.budget.is_capped() {
            return Ok(input);
        }
        let mut tokens = 0u64;
        for key in cache.batch_keys(&record.key)? {
            let Some(text) = cache.batch_request(&record.key, &key)? else {
                continue;
            };
            let request: crate::ChatRequest = serde_json::from_str(&text)
                .map_err(|e| LlmError::Cache(format!("{}: {key}: {e}", record.file_id)))?;
            tokens = tokens.saturating_add(self.most_of(&request).1);
        }
        let micro_usd = (record.estimated_usd.max(0.0) * 1e6).ceil() as u64;
        self.budget.hold_written(&record.key, (micro_usd, tokens));
        Ok(input)
    }

    /// Closes a file of the journal whose input file was removed by hand: its requests are
    /// written again.
    async fn gone(
        &self,
        cache: &Cache,
        file_id: &str,
        input: &Path,
        taken: &RoundCalls,
    ) -> Result<(), LlmError> {
        tracing::warn!(file = %input.display(), "a batch file of the journal is gone; its requests are written again");
        self.commit_file(cache, file_id, Vec::new(), taken).await
    }

    /// Records a new input file of the calls the budget let go (`file`: its calls, their
    /// estimate and what they hold) in the journal as this layer's, then writes it from
    /// the spool (whole, under its final name only once complete); gives its path. The round
    /// holds the folder ([`FOLDERS`]), so no other round looks at the journal between the
    /// record and the file.
    async fn write_file(
        &self,
        (cache, spool): (&Cache, &Spool),
        file: NextFile<'_, '_>,
        taken: &RoundCalls,
        (opts, prefix): (&FilesOptions, &str),
    ) -> Result<PathBuf, LlmError> {
        let inner = self;
        let (chunk, est_usd, reservation) = (&file.calls, file.est_usd, file.held);
        let spooled: Vec<Spooled> = chunk.iter().map(|k| taken[*k].spooled).collect();
        let journal = cache.file_ids(prefix)?;
        let on_disk = std::fs::read_dir(&opts.dir)
            .map_err(|e| LlmError::Config(format!("cannot read {}: {e}", opts.dir.display())))?
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
        let requests = chunk.len();
        cache
            .record_upload(
                (&format!("{prefix}{name}"), &inner.owner),
                endpoint_model(inner),
                ("written", est_usd),
                (requests, spool.rows(spooled.clone())?),
            )
            .await?;
        spool.write_lines(&spooled, &path)?;
        // Its requests may all be answered and billed whatever this run does next: the
        // file's most stays reserved against the budget until it is collected, so the next
        // files of this round, and every other layer's, are cut to what is left.
        reservation.hold_for(&format!("{prefix}{name}"));
        inner.stats.batches.fetch_add(1, Ordering::Relaxed);
        tracing::info!(file = %path.display(), requests, model = %inner.config.model, "batch file written");
        Ok(path)
    }

    /// Imports the output file of `input`: checks each line, commits the answers (handed to
    /// their callers in `taken`) and closes the file in the journal; returns the errors of
    /// its requests without an answer.
    async fn import(
        &self,
        cache: &Cache,
        file_id: &str,
        input: &Path,
        taken: &RoundCalls,
    ) -> Result<HashMap<String, LlmError>, LlmError> {
        let output = output_path(input);
        // Read one line at a time as it is checked, never the whole file at once.
        let lines = std::fs::File::open(&output)
            .map(std::io::BufReader::new)
            .map_err(|e| LlmError::Config(format!("cannot read {}: {e}", output.display())))?;
        let keys = cache.batch_keys(file_id)?;
        let source = output.display().to_string();
        let mut checked = Checked::default();
        let input_name = input.file_name().unwrap_or_default().to_string_lossy();
        let estimate = journal_estimate(cache, file_id);
        self.check_results(
            lines,
            (&source, &input_name),
            (&keys, estimate),
            &mut checked,
        );
        checked.without_answer(&keys, || LlmError::Batch {
            code: "batch_missing".into(),
            message: format!("{source} has no answer for it"),
        });
        append_problems(&output.with_file_name(PROBLEMS), &checked.refused);
        let (answers, without) = (checked.answers.len(), checked.errors.len());
        cache
            .update_batch(file_id, &source, "imported", answers as u64, without as u64)
            .await?;
        self.commit_file(cache, file_id, checked.answers, taken)
            .await?;
        tracing::info!(file = %source, answers, without, refused_lines = checked.refused.len(), "batch output imported");
        Ok(checked.errors)
    }
}

/// A layer's endpoint identity and model, as the journal records its files.
fn endpoint_model(core: &Core) -> (&str, &str) {
    (core.endpoint.as_str(), core.config.model.as_str())
}

/// After an import: the round's keys still open are those whose callers still wait; the keys
/// the file answered with an error leave them, their errors kept.
fn take_errors(
    open: &mut BTreeSet<&str>,
    errors: &mut HashMap<String, LlmError>,
    failed: HashMap<String, LlmError>,
    taken: &RoundCalls,
) {
    open.retain(|k| taken.waiting(k));
    for (key, e) in failed {
        open.remove(key.as_str());
        errors.insert(key, e);
    }
}

/// Appends the refused lines to the folder's `problems.log`.
fn append_problems(log: &Path, refused: &[String]) {
    if refused.is_empty() {
        return;
    }
    let text: String = refused.iter().map(|r| format!("{r}\n")).collect();
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    if let Err(e) = written {
        tracing::warn!(file = %log.display(), error = %e, "cannot write the problems log");
    }
}

/// Writes `bytes` to `path` whole: under a `.part` name first, renamed once complete, so a
/// reader of the folder never sees half a file.
pub(crate) fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), LlmError> {
    let io = |p: &Path, e: std::io::Error| {
        LlmError::Config(format!("cannot write {}: {e}", p.display()))
    };
    let part = path.with_extension("jsonl.part");
    std::fs::write(&part, bytes).map_err(|e| io(&part, e))?;
    std::fs::rename(&part, path).map_err(|e| io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_and_output_names() {
        assert_eq!(
            output_path(Path::new("/b/requests-00007.jsonl")),
            Path::new("/b/requests-00007.output.jsonl")
        );
        assert_eq!(input_number("requests-00007.jsonl"), Some(7));
        assert_eq!(input_number("requests-00007.output.jsonl"), None);
        assert_eq!(input_number("requests-00007.jsonl.part"), None);
    }
}
