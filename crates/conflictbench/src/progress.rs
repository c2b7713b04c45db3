//! Progress bars (indicatif) for the engine's progress hooks.

use cb_engine::Progress;
use cb_llm::StatsSnapshot;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Instant;

/// Whether log lines on stderr may carry colour codes: only on a terminal, and never when
/// `NO_COLOR` is set to a non-empty value (<https://no-color.org>). Progress bars have no
/// colour and are drawn only on a terminal.
pub fn colour_on_stderr() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// One bar per recipe: items, calls/s, cache hits, tokens, cost, ETA.
pub struct Bars {
    enabled: bool,
    bar: Mutex<Option<(ProgressBar, Instant)>>,
}

impl Bars {
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            bar: Mutex::new(None),
        }
    }
}

impl Progress for Bars {
    fn start(&self, recipe: &str, total: u64) {
        if !self.enabled {
            return;
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix:>14} [{bar:30}] {pos}/{len} items {msg} ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.set_prefix(recipe.to_owned());
        *self.bar.lock().expect("bar lock") = Some((bar, Instant::now()));
    }

    fn item_done(&self, _recipe: &str, s: &StatsSnapshot) {
        if let Some((bar, t0)) = self.bar.lock().expect("bar lock").as_ref() {
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

    fn finish(&self, _recipe: &str, _rows: u64, _rejected: u64) {
        if let Some((bar, _)) = self.bar.lock().expect("bar lock").take() {
            bar.finish_and_clear();
        }
    }
}
