//! `build --batch` flags and the `batches` command (list the batch journal, cancel one).

use anyhow::Context;
use cb_llm::{BackendKind, BatchOptions, BatchRecord, Cache, Llm, LlmConfig};
use clap::Args;
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
    /// Most megabytes in one batch input file.
    #[arg(long, default_value_t = 190, value_name = "MB")]
    pub batch_max_mb: usize,
}

impl BatchFlags {
    /// Puts the batch mode into an LLM configuration (openai backend only).
    pub fn apply(&self, c: &mut LlmConfig) -> Result<(), String> {
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

pub async fn run(args: BatchesArgs) -> anyhow::Result<()> {
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
