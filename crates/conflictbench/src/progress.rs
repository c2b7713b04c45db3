//! Progress bars (indicatif) for the engine's progress hooks.

use cb_engine::Progress;
use cb_llm::StatsSnapshot;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Instant;

/// Whether log lines on stderr may carry colour codes: only on a terminal, and never when
/// `NO_COLOR` is set to a non-empty value (<https://no-color.org>). Progress bars have no
/// colour and are drawn only on a terminal.
pub fn colour_on_stderr() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// One bar per recipe (the recipes of a build run at once, each bar on its own line): items,
/// calls/s, cache hits, tokens, cost, ETA.
pub struct Bars {
    enabled: bool,
    multi: MultiProgress,
    bars: Mutex<HashMap<String, (ProgressBar, Instant)>>,
}

impl Bars {
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
            bars: Mutex::new(HashMap::new()),
        }
    }
}

impl Progress for Bars {
    fn shows_total(&self) -> bool {
        self.enabled
    }

    fn start(&self, recipe: &str, total: u64) {
        if !self.enabled {
            return;
        }
        let bar = self.multi.add(ProgressBar::new(total));
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix:>14} [{bar:30}] {pos}/{len} items {msg} ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.set_prefix(recipe.to_owned());
        self.bars
            .lock()
            .expect("bar lock")
            .insert(recipe.to_owned(), (bar, Instant::now()));
    }

    fn item_done(&self, recipe: &str, s: &StatsSnapshot) {
        if let Some((bar, t0)) = self.bars.lock().expect("bar lock").get(recipe) {
            bar.inc(1);
            let secs = t0.elapsed().as_secs_f64().max(1e-3);
            bar.set_message(format!(
                "| {:.1} calls/s | {} cached | {} tok | ${:.4}",
                s.upstream_calls as f64 / secs,
                s.cache_hits,
                s.prompt_tokens + s.completion_tokens,
                s.spent_usd
            ));
        }
    }

    fn finish(&self, recipe: &str, _rows: u64, _rejected: u64) {
        if let Some((bar, _)) = self.bars.lock().expect("bar lock").remove(recipe) {
            bar.finish_and_clear();
            self.multi.remove(&bar);
        }
    }
}
