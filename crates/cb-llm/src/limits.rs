//! The limits of one model against its endpoint, said once ([`Limits`]).

use crate::config::{EndpointSpec, LlmConfig, PoolConfig};
use crate::limiter::Limiter;
use crate::ranges::{self, OwnLimits};

/// The limits of one model against its endpoint: calls in flight, requests and tokens per
/// minute. The one place the triple lives: flags, models and pool files and the layers all
/// say it with this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub concurrency: usize,
    pub rpm: Option<u32>,
    pub tpm: Option<u32>,
}

impl Limits {
    /// `config`'s limits.
    pub fn of(config: &LlmConfig) -> Self {
        Self {
            concurrency: config.concurrency,
            rpm: config.rpm,
            tpm: config.tpm,
        }
    }

    /// Puts these limits into `config`.
    pub fn apply(self, config: &mut LlmConfig) {
        (config.concurrency, config.rpm, config.tpm) = (self.concurrency, self.rpm, self.tpm);
    }

    /// These limits where `own` (a model's or an endpoint's settings) leaves one out.
    pub fn under(self, own: OwnLimits) -> Self {
        Self {
            concurrency: own.0.unwrap_or(self.concurrency),
            rpm: own.1.or(self.rpm),
            tpm: own.2.or(self.tpm),
        }
    }

    /// The endpoint `base_url` with these limits.
    pub fn endpoint(self, base_url: String) -> EndpointSpec {
        EndpointSpec {
            base_url,
            concurrency: self.concurrency,
            rpm: self.rpm,
            tpm: self.tpm,
        }
    }

    /// A pool's limits as one model's: its endpoints' concurrency together (each endpoint
    /// keeps its own rates).
    pub fn of_pool(pool: &PoolConfig) -> Self {
        Self {
            concurrency: pool.endpoints.iter().map(|e| e.concurrency).sum(),
            rpm: None,
            tpm: None,
        }
    }

    /// A model's or an endpoint's own limits as a file or flag writes them, each held to
    /// its range ([`ranges::own_limits`]).
    pub fn own(given: (Option<i64>, Option<i64>, Option<i64>)) -> Result<OwnLimits, String> {
        ranges::own_limits(given)
    }

    pub(crate) fn limiter(self) -> Limiter {
        Limiter::new(self.concurrency, self.rpm, self.tpm)
    }
}
