//! What every command exits with: the table of exit codes ([`Exit`]), the code an error maps
//! to, the line that says it, and a stop that is not a failure ([`Stopped`]: a signal, or
//! requests waiting in batch files).

use crate::config_error::ConfigError;
use crate::stdout::eprintln_err;
use cb_engine::EngineError;
use std::process::ExitCode;

/// Every exit code the program returns, and the only place one is written as a number.
/// README's table of exit codes is checked against it. A panic's 101 is not one of them:
/// no input or signal makes a command exit 101, and one that does is a bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Exit {
    /// 0: the command did what it was asked (an audit that ran, findings or not).
    Done = 0,
    /// 1: the command failed: a build or evaluation that broke, an output that could not be
    /// written, an audit with `--fail-on` whose checks failed.
    Failure = 1,
    /// 2: a configuration or argument error (a bad flag, recipe or input; a budget that
    /// cannot pay for one call), said before any file is created.
    Config = 2,
    /// 3: the budget (`--max-cost`, `--max-calls`) was reached; what was paid for is cached
    /// and the same command resumes.
    Budget = 3,
    /// 4: a `--batch-dir` build whose requests wait in batch files for answers.
    Waiting = 4,
    /// 130: stopped by SIGINT (Ctrl-C; 128 + 2).
    Sigint = 130,
    /// 143: stopped by SIGTERM (128 + 15).
    Sigterm = 143,
}

impl Exit {
    /// Every code, in order.
    #[cfg(test)]
    pub(crate) const ALL: [Exit; 7] = [
        Exit::Done,
        Exit::Failure,
        Exit::Config,
        Exit::Budget,
        Exit::Waiting,
        Exit::Sigint,
        Exit::Sigterm,
    ];

    /// The number the process exits with.
    pub(crate) const fn code(self) -> u8 {
        self as u8
    }

    /// The code's name, as README's table of exit codes says it.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Exit::Done => "done",
            Exit::Failure => "failure",
            Exit::Config => "configuration error",
            Exit::Budget => "budget reached",
            Exit::Waiting => "requests waiting",
            Exit::Sigint => "stopped by SIGINT",
            Exit::Sigterm => "stopped by SIGTERM",
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        tracing::debug!("exit {} ({})", e.code(), e.name());
        ExitCode::from(e.code())
    }
}

/// A command stopped without failing: by a signal ([`Exit::Sigint`], [`Exit::Sigterm`]) or
/// with requests waiting in batch files ([`Exit::Waiting`]); its text is what is said on stderr.
#[derive(Debug)]
pub(crate) struct Stopped {
    pub(crate) code: Exit,
    pub(crate) message: String,
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}
impl std::error::Error for Stopped {}

/// The exit of a command that ended with `e`: a [`Stopped`] says its line and exits with its
/// code; any other error is said once, with its code ([`exit_code`]).
pub(crate) fn report(e: &anyhow::Error) -> ExitCode {
    if let Some(stopped) = e.downcast_ref::<Stopped>() {
        // Not an error: the line says what was kept and how to resume.
        eprintln_err(&stopped.to_string());
        return stopped.code.into();
    }
    let code = exit_code(e);
    eprintln_err(&format!("error: {}", said_once(e)));
    if code == Exit::Budget {
        eprintln_err(
            "The responses received so far are cached: run the same command again to continue.",
        );
    }
    code.into()
}

/// What went wrong, as every command's exit code says it: [`Exit::Config`],
/// [`Exit::Budget`], or [`Exit::Failure`] for anything else. [`Exit::Done`] and the stops
/// ([`Stopped`]) are decided before errors are.
pub(crate) fn exit_code(e: &anyhow::Error) -> Exit {
    use cb_eval::EvalError;
    use cb_llm::LlmError;
    let llm = |l: &LlmError| match l {
        LlmError::Config(_) => Exit::Config,
        LlmError::Budget(_) => Exit::Budget,
        _ => Exit::Failure,
    };
    if e.downcast_ref::<ConfigError>().is_some() {
        return Exit::Config;
    }
    if let Some(e) = e.downcast_ref::<EngineError>() {
        return match e {
            EngineError::Config(_) => Exit::Config,
            EngineError::Budget(_) => Exit::Budget,
            EngineError::Llm(l) => llm(l),
            _ => Exit::Failure,
        };
    }
    if let Some(e) = e.downcast_ref::<EvalError>() {
        return match e {
            EvalError::Config(_) | EvalError::Data(_) => Exit::Config,
            EvalError::Budget(_) => Exit::Budget,
            EvalError::Llm(l) => llm(l),
            _ => Exit::Failure,
        };
    }
    e.downcast_ref::<LlmError>().map_or(Exit::Failure, llm)
}

/// `e` and its causes joined by `: ` (as `{e:#}` prints them), a cause left out when the
/// text before it already says it: an error whose message embeds its source (`cannot write
/// PATH: {source}`) would otherwise print the OS error twice.
fn said_once(e: &anyhow::Error) -> String {
    let mut said = String::new();
    for cause in e.chain() {
        let c = cause.to_string();
        if said.contains(&c) {
            continue;
        }
        if !said.is_empty() {
            said.push_str(": ");
        }
        said.push_str(&c);
    }
    said
}

#[cfg(test)]
mod tests {
    use super::Exit;
    use std::path::{Path, PathBuf};

    /// The `.rs` files under `dir`, recursively.
    fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read the sources") {
            let path = entry.expect("a source entry").path();
            if path.is_dir() {
                sources(&path, found);
            } else if path.extension().is_some_and(|x| x == "rs") {
                found.push(path);
            }
        }
    }

    /// The exit-code numbers written in `line` (its code, without a `//` comment): 101, 130
    /// and 143 anywhere; 0 to 4 on a line that speaks of an exit or a code.
    fn code_literals(line: &str) -> Vec<u64> {
        let code = line.split("//").next().unwrap_or_default();
        let lower = code.to_lowercase();
        let about_exit = lower.contains("exit") || lower.contains("code");
        code.split(|c: char| !c.is_ascii_alphanumeric() && c != '_' && c != '.')
            .filter_map(|t| t.parse::<u64>().ok())
            .filter(|n| [101, 130, 143].contains(n) || (about_exit && *n <= 4))
            .collect()
    }

    #[test]
    fn no_exit_code_is_written_outside_the_table() {
        assert_eq!(code_literals("        return ExitCode::from(2);"), [2]);
        assert_eq!(code_literals("    std::process::exit(1)"), [1]);
        assert_eq!(code_literals("    code: 4,"), [4]);
        assert_eq!(code_literals("exit_code(e) == 2"), [2]);
        assert_eq!(code_literals(r#"() => ("SIGTERM", 143),"#), [143]);
        assert!(code_literals("let n = 2; // exit 2").is_empty());
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        sources(&src, &mut files);
        assert!(
            files.len() > 10,
            "the CLI's sources under {}",
            src.display()
        );
        let mut found = Vec::new();
        for file in files.iter().filter(|f| !f.ends_with("exit.rs")) {
            let text = std::fs::read_to_string(file).expect("read a source");
            for (n, line) in text.lines().enumerate() {
                let trimmed = line.trim_start();
                if trimmed.starts_with("//") {
                    continue;
                }
                for code in code_literals(line) {
                    found.push(format!("{}:{}: {code}: {trimmed}", file.display(), n + 1));
                }
            }
        }
        assert!(
            found.is_empty(),
            "exit codes written as numbers outside exit::Exit:\n{}",
            found.join("\n")
        );
    }

    /// README's table of exit codes (the rows `| code | name | when |` under its heading
    /// "## Exit codes"): each code and its name.
    fn readme_table() -> Vec<(u8, String)> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let text = std::fs::read_to_string(root.join("README.md")).expect("README.md");
        let section = text
            .split("\n## ")
            .find(|s| s.starts_with("Exit codes"))
            .expect("README has a section \"## Exit codes\"");
        section
            .lines()
            .filter_map(|line| {
                let mut cells = line.trim().strip_prefix('|')?.split('|').map(str::trim);
                let code = cells.next()?.parse().ok()?;
                Some((code, cells.next()?.to_owned()))
            })
            .collect()
    }

    #[test]
    fn readme_exit_codes_are_the_table() {
        let readme = readme_table();
        let codes: Vec<u8> = readme.iter().map(|(c, _)| *c).collect();
        let ours: Vec<u8> = Exit::ALL.iter().map(|e| e.code()).collect();
        assert_eq!(codes, ours, "README's exit codes are not exit::Exit's");
        for (e, (code, name)) in Exit::ALL.iter().zip(&readme) {
            assert!(
                name == e.name(),
                "README says {code} is \"{name}\"; exit::Exit::{e:?} is \"{}\"",
                e.name()
            );
        }
    }
}
