//! What the benches of the binary share: the repository's root, numbers from the environment,
//! a command that runs a conflictbench binary clean of the caller's settings, and a run of one
//! that samples its peak memory.
// Each bench uses its own part of this module.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

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

/// `/proc/PID/status`'s `VmHWM` in kB, or `None` once the process is gone.
pub fn hwm_kb(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Runs `cmd` to its end, sampling its `VmHWM` every 10 ms: (exit code, stderr, peak kB).
pub fn run_sampled(mut cmd: Command) -> (Option<i32>, String, u64) {
    let stderr_file = tempfile::NamedTempFile::new().unwrap();
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(stderr_file.reopen().unwrap())
        .spawn()
        .unwrap();
    let mut peak = 0;
    let status = loop {
        if let Some(kb) = hwm_kb(child.id()) {
            peak = kb;
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let stderr = std::fs::read_to_string(stderr_file.path()).unwrap_or_default();
    (status.code(), stderr, peak)
}

/// The CPU time (user and system, in seconds) of this process's children that have ended
/// and been waited for (`cutime` and `cstime` of `/proc/self/stat`, at 100 ticks a second):
/// its growth across one child's run is that child's CPU time.
pub fn children_cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (in parentheses, which may hold spaces): state is
    // the first, cutime the 14th and cstime the 15th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (ticks(13) + ticks(14)) as f64 / 100.0
}

/// A fresh folder for `name`: under the folder the environment variable `keep` names, when
/// set (emptied first, kept afterwards), else a temporary one (removed when the guard is
/// dropped).
pub fn workdir(keep: &str, name: &str) -> (Option<tempfile::TempDir>, PathBuf) {
    match std::env::var_os(keep) {
        Some(keep) => {
            let dir = PathBuf::from(keep).join(name);
            if dir.exists() {
                std::fs::remove_dir_all(&dir).unwrap();
            }
            std::fs::create_dir_all(&dir).unwrap();
            (None, dir)
        }
        None => {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().to_path_buf();
            (Some(tmp), dir)
        }
    }
}

/// `cmd` (a conflictbench binary) set to `build BENCHMARK --domains DOMAIN` of `raw` into `out`
/// with the repository's recipes and prompts, no progress bars, `concurrency` calls in flight,
/// then `extra` (the backend and its model).
pub fn build_command(
    mut cmd: Command,
    (benchmark, domain): (&str, &str),
    (raw, out): (&Path, &Path),
    concurrency: usize,
    extra: &[&str],
) -> Command {
    cmd.args(["build", benchmark, "--domains", domain])
        .arg("--raw")
        .arg(raw)
        .arg("--out")
        .arg(out)
        .arg("--recipes")
        .arg(repo().join("recipes"))
        .arg("--prompts")
        .arg(repo().join("prompts"))
        .arg("--no-progress")
        .args(["--concurrency", &concurrency.to_string()])
        .args(extra);
    cmd
}
