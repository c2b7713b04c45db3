//! A dry run's lines: each recipe's estimate, and the totals over the recipes.

use cb_engine::Routes;
use cb_llm::{Budget, Role};

/// A dry run's totals over its recipes: calls to make, estimated tokens, estimated cost.
#[derive(Default)]
pub(super) struct DryTotals {
    calls: u64,
    tokens: u64,
    usd: f64,
}

impl DryTotals {
    /// Adds the dry run of `recipe`, whose calls its `routes` counted, and says it in one line
    /// (`batch`: priced at the batch price): the writer's calls, then each other model's (an
    /// unnamed reader, named models, panels), every layer of the routing table once.
    pub(super) fn add(&mut self, recipe: &str, routes: &Routes, batch: bool) -> String {
        let mut parts = Vec::new();
        for (who, s) in routes.figures() {
            let price = routes.layers_of(&who)[0].config().price;
            // Completion estimate: the offline answer's length stands in for the model's.
            let cost = price.usd(s.estimated_tokens, 0);
            self.calls += s.upstream_calls;
            self.tokens += s.estimated_tokens;
            self.usd += cost;
            let said = format!(
                "{} calls ({} cached, {} to make), ~{} tokens, ~${cost:.4}",
                s.calls, s.cache_hits, s.upstream_calls, s.estimated_tokens
            );
            parts.push(match who {
                Role::Writer => format!("{said}{}", if batch { " at the batch price" } else { "" }),
                Role::Reader => format!("; reader: {said}"),
                Role::Named(n) => format!("; {n}: {said}"),
            });
        }
        format!("{recipe}: {}", parts.concat())
    }

    /// The totals line, with what the run's budget (`--max-cost`, `--max-tokens`) says of
    /// them when it has a cap.
    pub(super) fn line(&self, budget: &Budget) -> String {
        format!(
            "total: {} calls to make, ~{} tokens, ~${:.4} (estimate: 4 characters a token, answers as long as the offline ones){}",
            self.calls,
            self.tokens,
            self.usd,
            self.against(budget)
        )
    }

    /// `; within --max-cost X` or `; over --max-cost X: ...` (and `--max-tokens`), or
    /// nothing without a cap.
    fn against(&self, budget: &Budget) -> String {
        let mut within = Vec::new();
        let mut over = Vec::new();
        if let Some(max) = budget.max_cost_usd() {
            let cap = format!("--max-cost {max}");
            if self.usd <= max {
                &mut within
            } else {
                &mut over
            }
            .push(cap);
        }
        if let Some(max) = budget.max_tokens() {
            let cap = format!("--max-tokens {max}");
            if self.tokens <= max {
                &mut within
            } else {
                &mut over
            }
            .push(cap);
        }
        if !over.is_empty() {
            return format!(
                "; over {}: the build would stop there (exit code {}), and the same command run again goes on",
                over.join(" and "),
                crate::exit::Exit::Budget.code()
            );
        }
        if within.is_empty() {
            return String::new();
        }
        format!(
            "; within {} by this estimate (a build holds each call's most, so it may stop sooner)",
            within.join(" and ")
        )
    }
}
