//! The signals that stop a build: SIGINT and SIGTERM (Ctrl-C off Unix).

/// SIGINT and SIGTERM, caught from the moment a build starts its work until it ends (its
/// recipes are built at once: a signal stops every one not yet finished).
pub(super) struct Signals {
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    pub(super) fn new() -> Self {
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

    /// The next signal: its name and the exit code it gives (128 + its number).
    pub(super) async fn next(&mut self) -> (&'static str, u8) {
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
                () = recv(&mut self.int) => ("SIGINT", 130),
                () = recv(&mut self.term) => ("SIGTERM", 143),
            }
        }
        #[cfg(not(unix))]
        {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
            ("Ctrl-C", 130)
        }
    }
}
