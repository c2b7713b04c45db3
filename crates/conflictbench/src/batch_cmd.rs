//! `build --batch` and `--batch-dir` flags, and the `batches` command (list the batch
//! journal, cancel a batch, answer a batch folder).

use anyhow::Context;
use cb_llm::{BackendKind, BatchOptions, BatchRecord, Cache, FilesOptions, Llm, LlmConfig};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

/// Flags of `build` for the provider's Batch API.
#[derive(Args, Debug, Clone)]
pub struct BatchFlags {
    /// Send the calls that miss the cache through the provider's Batch API (half price,
    /// answers within 24 h) instead of online; same cache, same outputs. A killed build
    /// finds its batches again on the next run.
    #[arg(long)]
    pub batch: bool,
    /// Batch price as a fraction of the online price (OpenAI: 0.5).
    #[arg(long, default_value_t = 0.5, value_name = "FACTOR")]
    pub batch_price_factor: f64,
    /// First wait between two polls of a batch, in milliseconds (grows to a minute).
    #[arg(long, default_value_t = 5000, value_name = "MS")]
    pub batch_poll_ms: u64,
    /// Most requests in one batch input file.
    #[arg(long, default_value_t = 50_000, value_name = "N")]
    pub batch_max_requests: usize,
    /// Most megabytes in one batch input file (--batch and --batch-dir).
    #[arg(long, default_value_t = 190, value_name = "MB")]
    pub batch_max_mb: usize,
    /// Write the calls that miss the cache as OpenAI batch input files in DIR
    /// (`requests-NNNNN.jsonl`) and stop with exit code 4; once something has written the
    /// output files beside them (`requests-NNNNN.output.jsonl`: `vllm run_batch`, Ray Data,
    /// `conflictbench batches run-dir`), the same command imports them and goes on. Nothing
    /// is sent: --base-url, if given, only names the endpoint in cache keys and manifests
    /// (default `batch-files`).
    #[arg(long, value_name = "DIR", conflicts_with = "batch")]
    pub batch_dir: Option<PathBuf>,
    /// Most requests in one file of --batch-dir.
    #[arg(long, default_value_t = 5_000, value_name = "N")]
    pub batch_dir_max_lines: usize,
}

impl BatchFlags {
    /// Puts the batch mode into an LLM configuration (openai backend only).
    pub fn apply(&self, c: &mut LlmConfig) -> Result<(), String> {
        if let Some(dir) = &self.batch_dir {
            if !matches!(c.backend, BackendKind::Openai | BackendKind::DryRun) {
                return Err("--batch-dir needs the openai backend (--model names the model the files ask for)".into());
            }
            // Absolute: the journal names the files by their folder.
            let dir = std::fs::create_dir_all(dir)
                .and_then(|()| dir.canonicalize())
                .map_err(|e| format!("--batch-dir {}: {e}", dir.display()))?;
            c.transport = cb_llm::Transport::BatchFiles(FilesOptions {
                max_requests_per_file: self.batch_dir_max_lines.max(1),
                max_bytes_per_file: self.batch_max_mb.max(1) * 1024 * 1024,
                ..FilesOptions::new(dir)
            });
            return Ok(());
        }
        if !self.batch {
            return Ok(());
        }
        if !matches!(c.backend, BackendKind::Openai | BackendKind::DryRun) {
            return Err("--batch needs the openai backend (--base-url and --model)".into());
        }
        if !(self.batch_price_factor >= 0.0 && self.batch_price_factor.is_finite()) {
            return Err("--batch-price-factor must be a number >= 0".into());
        }
        c.price.input_per_million *= self.batch_price_factor;
        c.price.output_per_million *= self.batch_price_factor;
        c.transport = cb_llm::Transport::BatchApi(BatchOptions {
            max_requests_per_file: self.batch_max_requests.max(1),
            max_bytes_per_file: self.batch_max_mb.max(1) * 1024 * 1024,
            poll_initial: Duration::from_millis(self.batch_poll_ms.max(1)),
            ..BatchOptions::default()
        });
        Ok(())
    }
}

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
    /// does (`requests-NNNNN.output.jsonl`): the loop tried without vLLM or Ray.
    RunDir(RunDirArgs),
}

#[derive(Args, Debug)]
struct RunDirArgs {
    /// The folder `build --batch-dir` wrote.
    dir: PathBuf,
    /// Base URL of the server that answers (key: OPENAI_API_KEY).
    #[arg(long, env = "OPENAI_BASE_URL")]
    base_url: String,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Retries of a request after a 429, a 5xx, a timeout or a broken connection.
    #[arg(long, default_value_t = 5)]
    max_retries: u32,
    /// Seconds before a request times out.
    #[arg(long, default_value_t = 300)]
    timeout_s: u64,
}

async fn run_dir(a: RunDirArgs) -> anyhow::Result<()> {
    if !a.dir.is_dir() {
        return Err(crate::config_err(format!(
            "{} is not a folder (the --batch-dir of a build)",
            a.dir.display()
        )));
    }
    crate::preflight::check_endpoint(&a.base_url, true)?;
    let mut c = LlmConfig::offline();
    c.backend = BackendKind::Openai;
    c.base_url = a.base_url.clone();
    c.api_key = crate::llm_args::api_key();
    c.concurrency = a.concurrency.max(1);
    c.max_retries = a.max_retries;
    c.request_timeout = Duration::from_secs(a.timeout_s.max(1));
    let report = cb_llm::run_dir(&a.dir, &c, |output, requests, errors| {
        crate::println_out(&format!(
            "{}: {requests} requests, {errors} without an answer",
            output.display()
        ));
    })
    .await?;
    crate::println_out(&if report.files == 0 {
        format!("nothing to answer in {}", a.dir.display())
    } else {
        format!(
            "{} files answered ({} requests, {} without an answer); run the build again to import them",
            report.files, report.requests, report.errors
        )
    });
    Ok(())
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
        let record = cache
            .batch(id)?
            .with_context(|| format!("no batch {id} in {}", args.cache.display()))?;
        let mut c = LlmConfig::offline();
        c.backend = BackendKind::Openai;
        c.base_url = base_url.clone();
        c.model = record.model.clone();
        c.api_key = crate::llm_args::api_key();
        c.cache_path = Some(args.cache.clone());
        let llm = Llm::new(c)?;
        let r = llm.cancel_batch(id).await?;
        crate::println_out(&line(&r));
        return Ok(());
    }
    let all = cache.batches()?;
    if !args.json {
        crate::println_out(&format!(
            "{:<24} {:<24} {:<12} {:>8} {:>9} {:>7} {:>9} collected",
            "batch", "input file", "state", "requests", "completed", "failed", "est. USD"
        ));
    }
    for r in &all {
        crate::println_out(&if args.json {
            serde_json::to_string(r)?
        } else {
            line(r)
        });
    }
    Ok(())
}

fn line(r: &BatchRecord) -> String {
    format!(
        "{:<24} {:<24} {:<12} {:>8} {:>9} {:>7} {:>9.4} {}",
        r.batch_id.as_deref().unwrap_or("-"),
        r.file_id,
        r.state,
        r.requests,
        r.completed,
        r.failed,
        r.estimated_usd,
        if r.collected { "yes" } else { "no" }
    )
}
