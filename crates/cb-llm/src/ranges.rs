//! The range of every number an LLM layer is configured with, declared once: the CLI's
//! flags (`--concurrency`, `--rpm`, ...), a models file's and a pool file's keys
//! (`concurrency`, `rpm`, `tpm`, `price_input`, ...) and a recipe's sampling keys
//! (`temperature`, `max_tokens`, `top_p`, `seed`) are all held to these, so a value outside
//! is refused before any file is made, never read as "unlimited", clamped or sent as it is.
//! Each ceiling is far above what a real run needs and low enough that no duration, size or
//! count made from it overflows.

use cb_model::Range;

/// Calls in flight at once, of a model or of one endpoint of a pool.
pub const CONCURRENCY: Range = Range::whole(1, 10_000);
/// Requests per minute (leave it out for no limit).
pub const RPM: Range = Range::whole(1, 10_000_000);
/// Tokens per minute (leave it out for no limit).
pub const TPM: Range = Range::whole(1, 1_000_000_000);
/// Retries of a call after a 429, a 5xx, a timeout or a reset (0: none).
pub const MAX_RETRIES: Range = Range::whole(0, 100);
/// The first backoff delay, in milliseconds.
pub const BACKOFF_MS: Range = Range::whole(1, 600_000);
/// The longest backoff delay, in seconds.
pub const BACKOFF_MAX_S: Range = Range::whole(1, 3_600);
/// Seconds before a call times out.
pub const TIMEOUT_S: Range = Range::whole(1, 86_400);
/// USD per million tokens (0: a model that costs nothing, such as one served locally).
pub const PRICE: Range = Range::real(0.0, 10_000.0);
/// The budget in USD (0 could pay for nothing).
pub const MAX_COST: Range = Range::above(0.0, 1_000_000.0);
/// The budget in tokens.
pub const MAX_TOKENS: Range = Range::whole(1, 1_000_000_000_000);
/// The Batch API's price as a fraction of the online price.
pub const BATCH_PRICE_FACTOR: Range = Range::above(0.0, 1.0);
/// The first wait between two polls of a batch, in milliseconds: the wait grows to a minute
/// ([`crate::BatchOptions::poll_max`]), never past it.
pub const BATCH_POLL_MS: Range = Range::whole(1, 60_000);
/// Requests in one Batch API input file.
pub const BATCH_MAX_REQUESTS: Range = Range::whole(1, 1_000_000);
/// Megabytes in one batch input file.
pub const BATCH_MAX_MB: Range = Range::whole(1, 100_000);
/// Requests in one file of a batch folder.
pub const BATCH_DIR_MAX_LINES: Range = Range::whole(1, 10_000_000);
/// Items a round of batches takes at once.
pub const BATCH_WINDOW: Range = Range::whole(1, 10_000_000);
/// Failures in a row that pause an endpoint of a pool.
pub const POOL_OPEN_AFTER: Range = Range::whole(1, 1_000);
/// The first pause of a failing endpoint, in milliseconds: the pause doubles up to a
/// minute, never past it.
pub const POOL_COOLDOWN_MS: Range = Range::whole(1, 60_000);
/// Sampling temperature (OpenAI's range).
pub const TEMPERATURE: Range = Range::real(0.0, 2.0);
/// Nucleus sampling's share (0 would keep no token).
pub const TOP_P: Range = Range::above(0.0, 1.0);
/// The longest answer, in tokens.
pub const ANSWER_TOKENS: Range = Range::whole(1, 1_000_000);
/// A request's sampling seed (a signed 64-bit integer for the servers).
pub const SEED: Range = Range::whole(0, i64::MAX as u64);

/// A model's or an endpoint's own limits, each `None` where it leaves it to the run's:
/// concurrency, RPM, TPM.
pub type OwnLimits = (Option<usize>, Option<u32>, Option<u32>);

/// A model's or an endpoint's own limits as a file or flag writes them (`concurrency`,
/// `rpm`, `tpm`; `None`: left out), each held to its range ([`CONCURRENCY`], [`RPM`],
/// [`TPM`]); the error names the key and the range.
pub fn own_limits(
    (concurrency, rpm, tpm): (Option<i64>, Option<i64>, Option<i64>),
) -> Result<OwnLimits, String> {
    fn check(key: &str, v: Option<i64>, range: Range) -> Result<Option<u64>, String> {
        v.map(|v| {
            range.check_int(v).map_err(|e| {
                let hint = if v == 0 && key != "concurrency" {
                    " (0 would let nothing through: leave it out for no limit)"
                } else {
                    ""
                };
                format!("`{key} = {v}`: {e}{hint}")
            })
        })
        .transpose()
    }
    // The ranges' ceilings fit the types.
    Ok((
        check("concurrency", concurrency, CONCURRENCY)?.map(|v| v as usize),
        check("rpm", rpm, RPM)?.map(|v| v as u32),
        check("tpm", tpm, TPM)?.map(|v| v as u32),
    ))
}
