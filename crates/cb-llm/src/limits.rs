//! The limits of one model against its endpoint, said once ([`Limits`]).

use crate::config::{EndpointSpec, LlmConfig, PoolConfig};
use crate::limiter::Limiter;

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
    pub fn under(self, own: (Option<usize>, Option<u32>, Option<u32>)) -> Self {
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

    pub(crate) fn limiter(self) -> Limiter {
        Limiter::new(self.concurrency, self.rpm, self.tpm)
    }
}
