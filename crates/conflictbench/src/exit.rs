//! What every command exits with: the code an error maps to, the line that says it, and a
//! stop that is not a failure ([`Stopped`]: a signal, or requests waiting in batch files).

use crate::config_error::ConfigError;
use crate::stdout::eprintln_err;
use cb_engine::EngineError;
use std::process::ExitCode;

/// A build stopped by a signal: exit code 130 (SIGINT) or 143 (SIGTERM); its text is the
/// one line said on stderr.
#[derive(Debug)]
pub(crate) struct Stopped {
    pub(crate) code: u8,
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
        return ExitCode::from(stopped.code);
    }
    let code = exit_code(e);
    eprintln_err(&format!("error: {}", said_once(e)));
    if code == 3 {
        eprintln_err(
            "The responses received so far are cached: run the same command again to continue.",
        );
    }
    ExitCode::from(code)
}

/// What went wrong, as every command's exit code says it: 2 a configuration or argument
/// error (a bad flag, recipe or input; a budget that cannot pay for one call), 3 the budget
/// reached (resumable), 1 anything else (a build or evaluation that failed). 0 and the
/// signal codes (130, 143) are decided before errors are.
pub(crate) fn exit_code(e: &anyhow::Error) -> u8 {
    use cb_eval::EvalError;
    use cb_llm::LlmError;
    let llm = |l: &LlmError| match l {
        LlmError::Config(_) => 2,
        LlmError::Budget(_) => 3,
        _ => 1,
    };
    if e.downcast_ref::<ConfigError>().is_some() {
        return 2;
    }
    if let Some(e) = e.downcast_ref::<EngineError>() {
        return match e {
            EngineError::Config(_) => 2,
            EngineError::Budget(_) => 3,
            EngineError::Llm(l) => llm(l),
            _ => 1,
        };
    }
    if let Some(e) = e.downcast_ref::<EvalError>() {
        return match e {
            EvalError::Config(_) | EvalError::Data(_) => 2,
            EvalError::Budget(_) => 3,
            EvalError::Llm(l) => llm(l),
            _ => 1,
        };
    }
    e.downcast_ref::<LlmError>().map_or(1, llm)
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
