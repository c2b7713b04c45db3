//! The one way the CLI writes its own lines: results on standard output, its last word and
//! its logs on standard error. A reader that went away (`| head -1`) or a stream that fails
//! never stops the command nor panics it: a closed standard output ends a listing quietly (the
//! lines after are dropped, exit 0), a closed standard error drops the logs and the command
//! goes on to the end (a build writes every row, its `runs.jsonl` line and its manifest).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a write to standard output failed (its reader closed it): nothing more is written.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Prints `s` and a newline on standard output, unless it is closed.
pub(crate) fn println_out(s: &str) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if writeln!(out, "{s}").and_then(|()| out.flush()).is_err() {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
    }
}

/// Whether standard output was closed by its reader (a listing may stop early).
pub(crate) fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// Says `s` and a newline on standard error; a closed or failing standard error drops it.
pub(crate) fn eprintln_err(s: &str) {
    let _ = writeln!(Quiet, "{s}");
}

/// Standard error as the log lines are written to it: a write that fails is dropped (never
/// a panic, never an error the logger reports on the same closed stream).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Quiet;

impl Write for Quiet {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = std::io::stderr().lock().write_all(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stderr().flush();
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Quiet {
    type Writer = Quiet;
    fn make_writer(&'a self) -> Self::Writer {
        Quiet
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_stderr_write_is_dropped_not_returned() {
        // Whatever stderr is here, the writer says every byte was taken.
        let mut w = Quiet;
        assert_eq!(w.write(b"line\n").unwrap(), 5);
        assert!(w.flush().is_ok());
    }
}
