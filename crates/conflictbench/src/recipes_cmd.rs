//! `conflictbench recipes`: lists the recipes (benchmark, domain, description), or explains
//! the parameters of a step kind (`--explain KIND`).

use crate::config_error::config_err;
use crate::stdout::println_out;
use std::path::Path;

/// Prints the parameters of step kind `explain` when given, else the recipes of `recipes`
/// (a folder, else `./recipes`, else the bundled ones).
pub fn run(recipes: Option<&Path>, explain: Option<String>) -> anyhow::Result<()> {
    if let Some(kind) = explain {
        let table = cb_steps::STEPS.explain(&kind).ok_or_else(|| {
            config_err(format!(
                "unknown step kind '{kind}'; known: {}",
                cb_steps::STEPS.kinds().collect::<Vec<_>>().join(", ")
            ))
        })?;
        println_out(table.trim_end());
        return Ok(());
    }
    let (files, all) = crate::assets::recipes(recipes)?;
    for r in all {
        if crate::stdout::stdout_closed() {
            break;
        }
        let star = if r.default { "" } else { " (alternate)" };
        println_out(&format!(
            "{:<8} {:<14} {}{star}",
            r.benchmark, r.domain, r.description
        ));
    }
    println_out(&format!("(recipes: {})", files.origin()));
    Ok(())
}
