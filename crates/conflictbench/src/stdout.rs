//! The one way the CLI writes its own lines: results on standard output, its last word and
//! its logs on standard error. A reader that went away (`| head -1`) or a stream that fails
//! never stops the command nor panics it: a closed standard output ends a listing quietly (the
//! lines after are dropped, exit 0), a closed standard error drops the logs and the command
//! goes on to the end (a build writes every row, its `runs.jsonl` line and its manifest).
//!
//! Standard error is written by a thread of its own ([`start_stderr`]), so that no thread of
//! the command ever waits on it: a reader that stops reading (a full pipe) holds up that thread
//! only, the lines that no longer fit in its queue are dropped, and the command's end waits
//! for it at most [`LAST_WORD`] ([`flush_stderr`]).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

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
    let _ = Quiet.write(format!("{s}\n").as_bytes());
}

/// What the command's end waits at most for its lines to reach standard error.
pub(crate) const LAST_WORD: Duration = Duration::from_secs(2);

/// Lines waiting for the stderr thread, at most: more are dropped.
const QUEUED: usize = 4096;

enum ToStderr {
    Bytes(Vec<u8>),
    /// Answered once every line before it was written.
    Flush(SyncSender<()>),
}

/// The queue of the stderr thread, once started.
static STDERR: OnceLock<SyncSender<ToStderr>> = OnceLock::new();

/// Starts the thread that writes standard error (once; before it, lines are written at once).
pub(crate) fn start_stderr() {
    let (tx, rx) = sync_channel::<ToStderr>(QUEUED);
    let started = std::thread::Builder::new()
        .name("stderr".into())
        .spawn(move || {
            for m in rx {
                match m {
                    ToStderr::Bytes(b) => {
                        let _ = std::io::stderr().lock().write_all(&b);
                    }
                    ToStderr::Flush(done) => {
                        let _ = std::io::stderr().flush();
                        let _ = done.send(());
                    }
                }
            }
        });
    if started.is_ok() {
        let _ = STDERR.set(tx);
    }
}

/// Waits, at most [`LAST_WORD`], until every line said so far reached standard error (or
/// was dropped there).
pub(crate) fn flush_stderr() {
    let Some(tx) = STDERR.get() else {
        return;
    };
    let end = Instant::now() + LAST_WORD;
    let (done, written) = sync_channel(1);
    let mut m = ToStderr::Flush(done);
    loop {
        match tx.try_send(m) {
            Ok(()) => break,
            Err(TrySendError::Full(back)) if Instant::now() < end => {
                m = back;
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(_) => return,
        }
    }
    let _ = written.recv_timeout(end.saturating_duration_since(Instant::now()));
}

/// Standard error as the log lines are written to it: through the stderr thread when it runs
/// (a full queue drops the line), and a write that fails is dropped (never a panic, never an
/// error the logger reports on the same closed stream).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Quiet;

impl Write for Quiet {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match STDERR.get() {
            Some(tx) => {
                let _ = tx.try_send(ToStderr::Bytes(buf.to_vec()));
            }
            None => {
                let _ = std::io::stderr().lock().write_all(buf);
            }
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
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
