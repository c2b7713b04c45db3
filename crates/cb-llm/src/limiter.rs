//! Concurrency bound, requests-per-minute and tokens-per-minute limits (governor), and a
//! shared pause that a `Retry-After` imposes on every worker, not only the one that got it.

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use rand::Rng;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::time::Instant;

pub(crate) struct Limiter {
    slots: Semaphore,
    rpm: Option<DefaultDirectRateLimiter>,
    tpm: Option<(DefaultDirectRateLimiter, NonZeroU32)>,
    paused_until: Mutex<Option<Instant>>,
}

impl Limiter {
    pub(crate) fn new(concurrency: usize, rpm: Option<u32>, tpm: Option<u32>) -> Self {
        let per_minute = |n: NonZeroU32, burst: NonZeroU32| {
            RateLimiter::direct(Quota::per_minute(n).allow_burst(burst))
        };
        let rpm = rpm.and_then(NonZeroU32::new).map(|n| {
            // A burst of a tenth of a minute's quota keeps the start smooth.
            let burst = NonZeroU32::new((n.get() / 10).max(1)).expect("max(1)");
            per_minute(n, burst)
        });
        let tpm = tpm.and_then(NonZeroU32::new).map(|n| (per_minute(n, n), n));
        Self {
            slots: Semaphore::new(concurrency.max(1)),
            rpm,
            tpm,
            paused_until: Mutex::new(None),
        }
    }

    /// Waits for a concurrency slot, a pause to end, a request and `tokens` tokens.
    pub(crate) async fn acquire(&self, tokens: u64) -> SemaphorePermit<'_> {
        let permit = self.slots.acquire().await.expect("semaphore never closed");
        loop {
            let until = *self.paused_until.lock().expect("pause lock");
            match until {
                Some(t) if t > Instant::now() => tokio::time::sleep_until(t).await,
                _ => break,
            }
        }
        if let Some(rpm) = &self.rpm {
            rpm.until_ready().await;
        }
        if let Some((tpm, cap)) = &self.tpm {
            let n = u32::try_from(tokens)
                .unwrap_or(u32::MAX)
                .clamp(1, cap.get());
            let n = NonZeroU32::new(n).expect("clamped to >= 1");
            // n <= burst, so this cannot fail with InsufficientCapacity.
            let _ = tpm.until_n_ready(n).await;
        }
        permit
    }

    /// Every worker waits at least `d` before its next request.
    pub(crate) fn pause_for(&self, d: Duration) {
        let until = Instant::now() + d;
        let mut p = self.paused_until.lock().expect("pause lock");
        if p.is_none_or(|t| t < until) {
            *p = Some(until);
        }
    }
}

/// Exponential backoff with jitter: uniform in [cap/2, cap], cap = min(max, base·2^(attempt-1)).
pub(crate) fn backoff(attempt: u32, base: Duration, max: Duration) -> Duration {
    let exp = base.saturating_mul(1u32 << attempt.saturating_sub(1).min(20));
    let cap = exp.min(max);
    let ms = cap.as_millis() as u64;
    if ms == 0 {
        return Duration::ZERO;
    }
    Duration::from_millis(rand::rng().random_range(ms / 2..=ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let base = Duration::from_millis(100);
        let max = Duration::from_secs(1);
        for attempt in 1..10 {
            let d = backoff(attempt, base, max);
            let cap = (base * (1 << (attempt - 1))).min(max);
            assert!(
                d <= cap && d >= cap / 2,
                "attempt {attempt}: {d:?} vs {cap:?}"
            );
        }
    }
}
