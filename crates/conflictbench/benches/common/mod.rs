//! What the benches of the binary share: the repository's root, numbers from the environment,
//! and a command that runs a conflictbench binary clean of the caller's settings.

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `var` parsed, or `default` when it is unset or does not parse.
pub fn env_or<T: std::str::FromStr>(var: &str, default: T) -> T {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `bin` with none of the caller's endpoint, key or log settings.
pub fn clean(bin: &Path) -> Command {
    let mut cmd = Command::new(bin);
    for var in [
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "RUST_LOG",
        "CONFLICTBENCH_LOG",
    ] {
        cmd.env_remove(var);
    }
    cmd
}
