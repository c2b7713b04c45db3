//! Prices per million tokens, for cost estimates and `--max-cost`.

use serde::{Deserialize, Serialize};

/// The model name written in manifests of offline builds.
pub const OFFLINE_MODEL: &str = "offline-rules-v1";

/// USD per million input (prompt) and output (completion) tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Price {
    pub input_per_million: f64,
    pub output_per_million: f64,
}

impl Price {
    /// Cost of a call in micro-dollars (rounded up, so a budget is never overrun by rounding).
    pub fn micro_usd(&self, prompt_tokens: u64, completion_tokens: u64) -> u64 {
        let usd = prompt_tokens as f64 * self.input_per_million
            + completion_tokens as f64 * self.output_per_million;
        // usd here is in dollars·10⁶ (per-million prices times tokens), i.e. micro-dollars.
        usd.ceil() as u64
    }

    pub fn usd(&self, prompt_tokens: u64, completion_tokens: u64) -> f64 {
        (prompt_tokens as f64 * self.input_per_million
            + completion_tokens as f64 * self.output_per_million)
            / 1e6
    }
}

/// A cost as manifests record it: rounded to the micro-dollar (the one rounding rule).
pub fn round_usd(usd: f64) -> f64 {
    (usd * 1e6).round() / 1e6
}

/// Built-in list prices (USD per million tokens) of common models; a model not listed costs
/// 0 unless the user sets `--price-input` / `--price-output`. Longest matching prefix wins,
/// so dated snapshots (`gpt-4o-mini-2024-07-18`) find their family.
const TABLE: &[(&str, f64, f64)] = &[
    ("gpt-4o-mini", 0.15, 0.60),
    ("gpt-4o", 2.50, 10.00),
    ("gpt-4.1-nano", 0.10, 0.40),
    ("gpt-4.1-mini", 0.40, 1.60),
    ("gpt-4.1", 2.00, 8.00),
    ("gpt-4-turbo", 10.00, 30.00),
    ("gpt-4", 30.00, 60.00),
    ("gpt-3.5-turbo", 0.50, 1.50),
    ("o3-mini", 1.10, 4.40),
    ("o4-mini", 1.10, 4.40),
];

/// The built-in price of a model, if it is in the table.
pub fn builtin(model: &str) -> Option<Price> {
    TABLE
        .iter()
        .filter(|(prefix, _, _)| model.starts_with(prefix))
        .max_by_key(|(prefix, _, _)| prefix.len())
        .map(|&(_, i, o)| Price {
            input_per_million: i,
            output_per_million: o,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins_and_cost_is_per_million() {
        let p = builtin("gpt-4o-mini-2024-07-18").unwrap();
        assert_eq!(p.input_per_million, 0.15);
        assert_eq!(builtin("gpt-4o").unwrap().input_per_million, 2.50);
        assert!(builtin("llama-3-8b").is_none());
        // 1M prompt tokens at $0.15 = 150,000 micro-dollars.
        assert_eq!(p.micro_usd(1_000_000, 0), 150_000);
        assert!((p.usd(1_000_000, 1_000_000) - 0.75).abs() < 1e-9);
    }
}
