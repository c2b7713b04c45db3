//! The signals that stop a command: SIGINT and SIGTERM (Ctrl-C off Unix), for a build and for
//! `batches run-dir` (the line and exit code of a command they stopped: `crate::exit::Stopped`).

use crate::exit::Exit;

/// SIGINT and SIGTERM, caught from the moment a command starts its work until it ends (a
/// build's recipes are built at once: a signal stops every one not yet finished; `batches
/// run-dir` finishes the file in progress with the requests in flight). They are caught even
/// when the command was started with SIGINT ignored (a background job of a script), so that
/// `kill -INT` stops it as it stops a build.
pub(crate) struct Signals {
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    pub(crate) fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Self {
                int: signal(SignalKind::interrupt()).ok(),
                term: signal(SignalKind::terminate()).ok(),
            }
        }
        #[cfg(not(unix))]
        Self {}
    }

    /// The next signal: its name and the exit code it gives.
    pub(crate) async fn next(&mut self) -> (&'static str, Exit) {
        #[cfg(unix)]
        {
            async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
                if let Some(s) = s {
                    if s.recv().await.is_some() {
                        return;
                    }
                }
                std::future::pending::<()>().await;
            }
            tokio::select! {
                () = recv(&mut self.int) => ("SIGINT", Exit::Sigint),
                () = recv(&mut self.term) => ("SIGTERM", Exit::Sigterm),
            }
        }
        #[cfg(not(unix))]
        {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
            ("Ctrl-C", Exit::Sigint)
        }
    }
}
