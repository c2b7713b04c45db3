//! The `batches` command: list the batch journal, cancel a batch, answer a batch folder.
//! (`build`'s `--batch` and `--batch-dir` flags are in `llm_args`.)

use crate::exit::{Exit, Stopped};
use crate::flag_values::whole;
use crate::folder_lock;
use crate::signals::Signals;
use anyhow::Context;
use cb_llm::ranges;
use cb_llm::{BatchRecord, Cache};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// `conflictbench batches`: the batches in a cache's journal.
#[derive(Args, Debug)]
pub struct BatchesArgs {
    #[command(subcommand)]
    command: Option<BatchesCommand>,
    /// The response cache holding the journal.
    #[arg(long, default_value = "generated/llm-cache.sqlite")]
    cache: PathBuf,
    /// Cancel this batch (batch id or input file id); needs --base-url.
    #[arg(long, value_name = "ID")]
    cancel: Option<String>,
    /// Base URL of the endpoint that holds the batch (for --cancel).
    #[arg(long, env = "OPENAI_BASE_URL")]
    base_url: Option<String>,
    /// Print JSON lines instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand, Debug)]
enum BatchesCommand {
    /// Answer the input files of a `build --batch-dir` folder that have no output file yet,
    /// against an OpenAI-compatible server, writing each output file as `vllm run_batch`
    /// does (`requests-NNNNN.output.jsonl`): the loop tried without vLLM or Ray. Every
    /// waiting file is checked before anything is sent (exit 2 naming FILE:LINE); requests the
    /// endpoint left unanswered make it exit 1.
    RunDir(RunDirArgs),
}

#[derive(Args, Debug)]
struct RunDirArgs {
    /// The folder `build --batch-dir` wrote.
    dir: PathBuf,
    /// Base URL of the server that answers (key: OPENAI_API_KEY).
    #[arg(long, env = "OPENAI_BASE_URL")]
    base_url: String,
    /// Requests in flight at once (1 to 10000).
    #[arg(long, default_value_t = 8, value_parser = whole::<usize>(ranges::CONCURRENCY))]
    concurrency: usize,
    /// Retries of a request after a 429, a 5xx, a timeout or a broken connection (0 to
    /// 100).
    #[arg(long, default_value_t = 5, value_parser = whole::<u32>(ranges::MAX_RETRIES))]
    max_retries: u32,
    /// Seconds before a request times out (1 to 86400).
    #[arg(long, default_value_t = 300, value_parser = whole::<u64>(ranges::TIMEOUT_S))]
    timeout_s: u64,
}

/// Refuses what cannot run before any work: a folder that is not one, a base URL that is
/// not an absolute http(s) URL (the numbers are held to their ranges by their parsers).
fn check_run_dir(a: &RunDirArgs) -> anyhow::Result<()> {
    if !a.dir.is_dir() {
        return Err(crate::config_error::config_err(format!(
            "{} is not a folder (the --batch-dir of a build)",
            a.dir.display()
        )));
    }
    crate::llm_config::check_endpoint("--base-url", &a.base_url, true)
}

async fn run_dir(a: RunDirArgs) -> anyhow::Result<()> {
    check_run_dir(&a)?;
    let mut c = crate::llm_config::endpoint_config(&a.base_url, None);
    c.concurrency = a.concurrency;
    c.max_retries = a.max_retries;
    c.request_timeout = Duration::from_secs(a.timeout_s);
    // One executor a folder; taking the lock also shows, before anything is sent, that the
    // output files can be written there.
    let _held = folder_lock::lock(&a.dir, folder_lock::EXECUTOR, "batches run-dir")?;
    let (stop, caught) = (Arc::new(cb_llm::Stop::default()), Arc::new(OnceLock::new()));
    let watcher = tokio::spawn(stop_on_signals(Arc::clone(&stop), Arc::clone(&caught)));
    let report = cb_llm::run_dir(&a.dir, &c, &stop, |f| {
        crate::stdout::println_out(&match &f.output {
            Some(output) => format!(
                "{}: {} requests, {} without an answer",
                output.display(),
                f.requests,
                f.errors
            ),
            None => format!(
                "{}: {} requests, none answered by {}: no output file written",
                f.input.display(),
                f.requests,
                a.base_url
            ),
        });
    })
    .await;
    watcher.abort();
    let report = report?;
    if let Some(&(signal, code)) = caught.get() {
        return Err(anyhow::Error::new(stopped(&a, &report, (signal, code))));
    }
    if report.files + report.unwritten == 0 {
        crate::stdout::println_out(&format!("nothing to answer in {}", a.dir.display()));
        return Ok(());
    }
    if report.unanswered > 0 {
        anyhow::bail!(
            "{} of {} requests got no answer from {} (no response, a transient error after \
             {} retries, or credentials or model refused); {} files written (the build asks \
             their unanswered requests again), {} with no answer at all left waiting for \
             another run of the executor",
            report.unanswered,
            report.requests,
            a.base_url,
            a.max_retries,
            report.files,
            report.unwritten
        );
    }
    crate::stdout::println_out(&format!(
        "{} files answered ({} requests, {} without an answer); run the build again to import them",
        report.files, report.requests, report.errors
    ));
    Ok(())
}

/// Stops the executor on the first SIGINT or SIGTERM (`caught` says which): no request more
/// is sent, the file in progress is written with the answers in flight. A second one ends
/// the process at once (the file in progress is then not written: its requests are sent
/// again by the next run).
async fn stop_on_signals(stop: Arc<cb_llm::Stop>, caught: Arc<OnceLock<(&'static str, Exit)>>) {
    let mut signals = Signals::new();
    let first = signals.next().await;
    let _ = caught.set(first);
    stop.stop(first.0);
    tracing::warn!(
        "{}: no request more is sent; the file in progress is written once the requests in flight are answered (signal again to stop at once)",
        first.0
    );
    let (signal, code) = signals.next().await;
    tracing::warn!("{signal} again: stopped at once; the file in progress was not written");
    crate::stdout::flush_stderr();
    std::process::exit(i32::from(code.code()));
}

/// What a signal's stop says: the files answered before it, the file in progress, and those
/// left for another run.
fn stopped(a: &RunDirArgs, report: &cb_llm::RunReport, (signal, code): (&str, Exit)) -> Stopped {
    let left: Vec<String> = report
        .left
        .iter()
        .map(|p| format!("  {}", p.display()))
        .collect();
    let mut message = format!(
        "stopped by {signal}: {} files answered ({} requests, {} of them not sent or not answered: the build asks them again); {} files left unanswered",
        report.files,
        report.requests,
        report.unanswered,
        left.len(),
    );
    if !left.is_empty() {
        message.push_str(&format!(
            ":\n{}\nrun `conflictbench batches run-dir {}` again to answer them",
            left.join("\n"),
            a.dir.display()
        ));
    }
    Stopped { code, message }
}

pub async fn run(args: BatchesArgs) -> anyhow::Result<()> {
    if let Some(BatchesCommand::RunDir(a)) = args.command {
        return run_dir(a).await;
    }
    if !args.cache.is_file() {
        anyhow::bail!("no cache at {}", args.cache.display());
    }
    let cache = Cache::open(&args.cache)?;
    if let Some(id) = &args.cancel {
        let Some(base_url) = &args.base_url else {
            anyhow::bail!("--cancel needs --base-url (or OPENAI_BASE_URL)");
        };
        let at = cb_llm::endpoint_identity(base_url);
        let record = cache
            .batch(id, Some(&at))?
            .with_context(|| format!("no batch {id} of {at} in {}", args.cache.display()))?;
        let c = crate::llm_config::endpoint_config(base_url, Some(&record.model));
        let r = cb_llm::cancel_batch(&cache, &c, id).await?;
        crate::stdout::println_out(&line(&r));
        return Ok(());
    }
    let all = cache.batches()?;
    if !args.json {
        crate::stdout::println_out(&format!(
            "{:<24} {:<24} {:<12} {:>8} {:>9} {:>7} {:>9} collected {:<20} server",
            "batch", "input file", "state", "requests", "completed", "failed", "est. USD", "owner"
        ));
    }
    for r in &all {
        if crate::stdout::stdout_closed() {
            break;
        }
        crate::stdout::println_out(&if args.json {
            serde_json::to_string(r)?
        } else {
            line(r)
        });
    }
    Ok(())
}

fn line(r: &BatchRecord) -> String {
    format!(
        "{:<24} {:<24} {:<12} {:>8} {:>9} {:>7} {:>9.4} {:<9} {:<20} {}",
        r.batch_id.as_deref().unwrap_or("-"),
        r.file_id,
        r.state,
        r.requests,
        r.completed,
        r.failed,
        r.estimated_usd,
        if r.collected { "yes" } else { "no" },
        if r.owner.is_empty() { "-" } else { &r.owner },
        r.endpoint
    )
}
