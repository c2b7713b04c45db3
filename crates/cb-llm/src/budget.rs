//! The run's one budget ([`Budget`]): its caps (`--max-cost`, `--max-tokens`), what the
//! calls in flight and the batch files written hold against them, and what was spent.
//!
//! A [`crate::Roster`] is made with one and every layer it makes shares it; no layer's
//! configuration carries a cap. [`Budget::admit`] alone decides whether a call, a
//! structured-output probe, a dry run's call or a round's next batch file may go; every upstream cost is
//! counted by [`Budget::spend`], in the run's totals and the layer's own counters (the
//! figures the build line, the manifest and `runs.jsonl` report).

use crate::error::LlmError;
use crate::stats::Stats;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// The most a call can cost: micro-USD and tokens (its prompt and all of its `max_tokens`).
pub(crate) type Cost = (u64, u64);

/// What the layers of one run may spend together, and what they have spent and hold.
#[derive(Debug, Default)]
pub struct Budget {
    max_cost_usd: Option<f64>,
    max_tokens: Option<u64>,
    /// Cost of the upstream calls so far, in micro-dollars.
    spent_micro_usd: AtomicU64,
    /// Tokens of the upstream calls so far.
    tokens: AtomicU64,
    /// Estimated cost (micro-dollars) and tokens held by calls in flight and batch files.
    reserved_micro_usd: AtomicU64,
    reserved_tokens: AtomicU64,
    /// What the batch files this run wrote (or found waiting) hold, by file id: part of
    /// `reserved_*` until the file is collected, as a file written may be answered and
    /// billed in full whatever the rest of the run does.
    files: Mutex<HashMap<String, Cost>>,
}

/// What [`Budget::admit`] is asked to let go.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ask<'a> {
    /// One call at its most (online, through a pool, a probe): held whole, or refused.
    Call(Cost),
    /// Whether the caps could pay for this at all, with nothing spent: a structured-output
    /// probe and the call it is sent for together (it would pay for the probe and stop), or
    /// a dry run's call (it says what the build would). Nothing is held.
    Check(Cost),
    /// A round's next batch file, its calls in order: as many of the first ones as what is
    /// left pays for, at least one (a file larger is cut there and the rest waits for a
    /// later run, so a budget that pays for one call always gets on), held together.
    File(&'a [Cost]),
}

/// What [`Budget::admit`] let go: how many of the calls asked, and what they hold.
pub(crate) struct Admitted<'a> {
    pub(crate) calls: usize,
    pub(crate) held: Reservation<'a>,
}

/// The caps and figures of a budget, as plain numbers.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct BudgetFigures {
    pub max_cost_usd: Option<f64>,
    pub max_tokens: Option<u64>,
    pub spent_usd: f64,
    pub tokens: u64,
    pub reserved_usd: f64,
    pub reserved_tokens: u64,
}

impl Budget {
    /// A budget of `max_cost_usd` and `max_tokens` (each `None`: no cap).
    pub fn new(max_cost_usd: Option<f64>, max_tokens: Option<u64>) -> Self {
        Self {
            max_cost_usd,
            max_tokens,
            ..Self::default()
        }
    }

    /// `--max-cost`, if set.
    pub fn max_cost_usd(&self) -> Option<f64> {
        self.max_cost_usd
    }

    /// `--max-tokens`, if set.
    pub fn max_tokens(&self) -> Option<u64> {
        self.max_tokens
    }

    /// Whether either cap is set.
    pub fn is_capped(&self) -> bool {
        self.max_cost_usd.is_some() || self.max_tokens.is_some()
    }

    /// The caps, what was spent and what is held now.
    pub fn figures(&self) -> BudgetFigures {
        BudgetFigures {
            max_cost_usd: self.max_cost_usd,
            max_tokens: self.max_tokens,
            spent_usd: self.spent_micro_usd.load(Ordering::Relaxed) as f64 / 1e6,
            tokens: self.tokens.load(Ordering::Relaxed),
            reserved_usd: self.reserved_micro_usd.load(Ordering::SeqCst) as f64 / 1e6,
            reserved_tokens: self.reserved_tokens.load(Ordering::SeqCst),
        }
    }

    /// Whether `ask` may go, and how much of it: the one decision of the budget.
    ///
    /// A call the caps could not pay for even with nothing spent would stop every run
    /// before any progress: a configuration error ([`LlmError::Config`]), said before
    /// anything is held or sent. A call (or a file's first call) that what is left cannot
    /// pay for beside what is spent and held is a budget stop ([`LlmError::Budget`]:
    /// resumable, exit code 3).
    pub(crate) fn admit(&self, ask: Ask<'_>) -> Result<Admitted<'_>, LlmError> {
        let (calls, hold) = match &ask {
            Ask::Call(c) => (std::slice::from_ref(c), true),
            Ask::Check(c) => (std::slice::from_ref(c), false),
            Ask::File(calls) => (*calls, true),
        };
        let n = match ask {
            Ask::File(calls) => self.leading_that_fit(calls).max(1).min(calls.len()),
            _ => 1,
        };
        let mut total: Cost = (0, 0);
        for &(micro_usd, tokens) in &calls[..n] {
            self.pays_for_one((micro_usd, tokens))?;
            total = (total.0 + micro_usd, total.1 + tokens);
        }
        let held = if hold {
            self.reserve(total)?
        } else {
            self.hold_nothing()
        };
        Ok(Admitted { calls: n, held })
    }

    /// `Err` when the caps could not pay for a call of `cost` with nothing spent.
    fn pays_for_one(&self, (micro_usd, tokens): Cost) -> Result<(), LlmError> {
        if self
            .max_cost_usd
            .is_some_and(|max| micro_usd as f64 / 1e6 > max)
            || self.max_tokens.is_some_and(|max| tokens > max)
        {
            return Err(LlmError::Config(format!(
                "the budget cannot pay for one call: the next call may use {tokens} tokens, about {:.6} USD (--max-tokens {}, --max-cost {}); raise the budget",
                micro_usd as f64 / 1e6,
                self.max_tokens.map_or("none".into(), |t| t.to_string()),
                self.max_cost_usd.map_or("none".into(), |c| c.to_string()),
            )));
        }
        Ok(())
    }

    /// How many of `calls`' first ones what is left (the caps less what is spent and held)
    /// pays for, each at its most.
    fn leading_that_fit(&self, calls: &[Cost]) -> usize {
        let used = |spent: &AtomicU64, reserved: &AtomicU64| {
            spent.load(Ordering::Relaxed) + reserved.load(Ordering::SeqCst)
        };
        let left_usd = self.max_cost_usd.map(|max| {
            ((max * 1e6) as u64)
                .saturating_sub(used(&self.spent_micro_usd, &self.reserved_micro_usd))
        });
        let left_tokens = self
            .max_tokens
            .map(|max| max.saturating_sub(used(&self.tokens, &self.reserved_tokens)));
        let (mut usd, mut tokens) = (0u64, 0u64);
        calls
            .iter()
            .take_while(|(one, most)| {
                (usd, tokens) = (usd + one, tokens + most);
                left_usd.is_none_or(|l| usd <= l) && left_tokens.is_none_or(|l| tokens <= l)
            })
            .count()
    }

    /// Holds `cost` against the caps, or says the budget is spent (what it held is given
    /// back).
    fn reserve(&self, (micro_usd, tokens): Cost) -> Result<Reservation<'_>, LlmError> {
        let spent = self.spent_micro_usd.load(Ordering::Relaxed);
        let reserved = self
            .reserved_micro_usd
            .fetch_add(micro_usd, Ordering::SeqCst);
        let used_tokens = self.tokens.load(Ordering::Relaxed);
        let reserved_tok = self.reserved_tokens.fetch_add(tokens, Ordering::SeqCst);
        let r = Reservation {
            budget: self,
            micro_usd,
            tokens,
        };
        if let Some(max) = self.max_cost_usd {
            if (spent + reserved + micro_usd) as f64 / 1e6 > max {
                return Err(LlmError::Budget(format!("--max-cost {max} USD reached")));
            }
        }
        if let Some(max) = self.max_tokens {
            if used_tokens + reserved_tok + tokens > max {
                return Err(LlmError::Budget(format!("--max-tokens {max} reached")));
            }
        }
        Ok(r)
    }

    fn hold_nothing(&self) -> Reservation<'_> {
        Reservation {
            budget: self,
            micro_usd: 0,
            tokens: 0,
        }
    }

    /// Counts an upstream answer's cost and tokens in the run's totals and in `layer`'s
    /// own counters.
    pub(crate) fn spend(&self, layer: &Stats, (micro_usd, tokens): Cost) {
        layer
            .spent_micro_usd
            .fetch_add(micro_usd, Ordering::Relaxed);
        layer.upstream_tokens.fetch_add(tokens, Ordering::Relaxed);
        self.spent_micro_usd.fetch_add(micro_usd, Ordering::Relaxed);
        self.tokens.fetch_add(tokens, Ordering::Relaxed);
    }

    /// Holds `cost` whatever is left, for a batch file an earlier run wrote, which may be
    /// answered and billed whatever this run does (see `batch_files`); given back only when
    /// the file is collected ([`Budget::release_file`]). A file already held is held once.
    pub(crate) fn hold_written(&self, file_id: &str, (micro_usd, tokens): Cost) {
        if self.files().contains_key(file_id) {
            return;
        }
        self.reserved_micro_usd
            .fetch_add(micro_usd, Ordering::SeqCst);
        self.reserved_tokens.fetch_add(tokens, Ordering::SeqCst);
        Reservation {
            budget: self,
            micro_usd,
            tokens,
        }
        .hold_for(file_id);
    }

    /// Gives back what a batch file of this run held ([`Reservation::hold_for`]), once it
    /// is collected; nothing for a file it does not hold.
    pub(crate) fn release_file(&self, file_id: &str) {
        let held = self.files().remove(file_id);
        if let Some((micro_usd, tokens)) = held {
            drop(Reservation {
                budget: self,
                micro_usd,
                tokens,
            });
        }
    }

    fn files(&self) -> std::sync::MutexGuard<'_, HashMap<String, Cost>> {
        self.files.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What an admitted call or file holds against the budget, given back when dropped.
pub(crate) struct Reservation<'a> {
    budget: &'a Budget,
    micro_usd: u64,
    /// The tokens held (what the limiter's token rate is asked for too).
    pub(crate) tokens: u64,
}

impl Reservation<'_> {
    /// Keeps this reservation for the batch file `file_id` until [`Budget::release_file`].
    pub(crate) fn hold_for(self, file_id: &str) {
        let held = (self.micro_usd, self.tokens);
        self.budget.files().insert(file_id.to_owned(), held);
        std::mem::forget(self);
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let budget = self.budget;
        budget
            .reserved_micro_usd
            .fetch_sub(self.micro_usd, Ordering::SeqCst);
        budget
            .reserved_tokens
            .fetch_sub(self.tokens, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// $0.001 and 1000 tokens a call.
    const CALL: Cost = (1_000, 1_000);

    #[test]
    fn a_call_a_probe_and_a_file_meet_the_same_caps() {
        let b = Budget::new(Some(0.0025), None);
        // Too dear even with nothing spent: a configuration error, whatever is asked.
        let dear = (3_000, 10);
        for ask in [Ask::Call(dear), Ask::Check(dear), Ask::File(&[dear, CALL])] {
            assert!(matches!(b.admit(ask), Err(LlmError::Config(_))), "{ask:?}");
        }
        assert_eq!(b.figures().reserved_usd, 0.0, "a refusal holds nothing");
        // Two calls held, then a file of three is cut to what is left: none fits, so its
        // first call is a budget stop, as a single call is.
        let (one, two) = (b.admit(Ask::Call(CALL)).unwrap(), b.admit(Ask::Call(CALL)));
        let two = two.unwrap();
        assert!(matches!(
            b.admit(Ask::File(&[CALL, CALL, CALL])),
            Err(LlmError::Budget(_))
        ));
        assert!(matches!(b.admit(Ask::Call(CALL)), Err(LlmError::Budget(_))));
        // A check holds nothing and is refused only by what no budget left could pay.
        assert_eq!(b.admit(Ask::Check(CALL)).unwrap().calls, 1);
        drop((one, two));
        assert_eq!(b.figures().reserved_usd, 0.0, "given back when dropped");
        let file = b.admit(Ask::File(&[CALL, CALL, CALL])).unwrap();
        assert_eq!(file.calls, 2, "cut where the budget left ends");
        assert!((b.figures().reserved_usd - 0.002).abs() < 1e-12);
    }

    #[test]
    fn spend_counts_in_the_run_and_the_layer_and_a_file_holds_until_collected() {
        let b = Budget::new(None, Some(2_500));
        let layer = Stats::default();
        b.spend(&layer, CALL);
        assert_eq!(b.figures().tokens, 1_000);
        assert_eq!(layer.upstream_tokens.load(Ordering::Relaxed), 1_000);
        b.admit(Ask::Call(CALL)).unwrap().held.hold_for("f1");
        b.hold_written("f1", CALL);
        assert_eq!(b.figures().reserved_tokens, 1_000, "a file is held once");
        assert!(matches!(b.admit(Ask::Call(CALL)), Err(LlmError::Budget(_))));
        b.release_file("f1");
        assert_eq!(b.figures().reserved_tokens, 0);
        assert!(b.admit(Ask::Call(CALL)).is_ok());
        assert!(!Budget::default().is_capped());
    }
}
