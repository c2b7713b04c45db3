//! What every request shares: the settings, the current snapshot (made again when the
//! files change), the ratings file and the templates.

use crate::error::ViewError;
use crate::index::{fingerprint, Fingerprint, SampleSpec, Snapshot};
use crate::ratings::Ratings;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

/// How the viewer was asked to run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The folder (or file) viewed.
    pub root: PathBuf,
    /// The build's response cache (read only).
    pub cache: PathBuf,
    /// The ratings file (the one file the viewer writes).
    pub ratings: PathBuf,
    pub sample: SampleSpec,
    /// Every request must carry it (`?token=`, the cookie it sets, or `Authorization:
    /// Bearer`), when set.
    pub token: Option<String>,
    /// The `Host` headers accepted (`127.0.0.1:PORT`, `localhost:PORT`, ...); `None`: any
    /// (a token guards the server instead).
    pub hosts: Option<Vec<String>>,
    /// How often the files are looked at for a change.
    pub poll: Duration,
}

/// The shared state of the server.
pub struct AppState {
    pub settings: Settings,
    snapshot: RwLock<Arc<Snapshot>>,
    /// Why the last attempt to read the files again failed, if it did.
    pub stale: Mutex<Option<String>>,
    /// The fingerprint of the files that last failed to read: they are read (and the failure
    /// reported) again only once they change.
    failed: Mutex<Option<Fingerprint>>,
    pub ratings: Ratings,
    /// Every form that writes carries it, and a post without it is refused: only the
    /// viewer's own pages know it (a random one per server).
    pub form_token: String,
    pub templates: minijinja::Environment<'static>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("settings", &self.settings)
            .finish()
    }
}

impl AppState {
    /// Indexes the viewed files and checks what will be served: benchmark rows, the cache,
    /// the ratings file (an error here is the caller's to report, before it binds), and
    /// loads the templates; the audit follows in [`AppState::audit`].
    pub fn new(settings: Settings) -> Result<AppState, ViewError> {
        let snapshot = Snapshot::index(&settings.root)?;
        snapshot.check_rows()?;
        crate::cache::check(&settings.cache)?;
        Ok(AppState {
            ratings: Ratings::open(&settings.ratings)?,
            form_token: crate::secret::new_token(),
            templates: crate::templates::load()?,
            snapshot: RwLock::new(Arc::new(snapshot)),
            stale: Mutex::new(None),
            failed: Mutex::new(None),
            settings,
        })
    }

    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set(&self, s: Result<Snapshot, ViewError>) {
        match s {
            Ok(s) => {
                tracing::info!(rows = s.rows.len(), audited = s.audited, "read the files");
                *self.snapshot.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(s);
                *self.stale.lock().unwrap_or_else(|e| e.into_inner()) = None;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the files");
                *self.stale.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.to_string());
            }
        }
    }

    /// Audits the files of the current snapshot (the checks and the rating sample), unless
    /// they changed since it was made (the next refresh reads them again).
    pub fn audit(&self) {
        let root = &self.settings.root;
        let again = Snapshot::index(root).and_then(|s| {
            if s.fingerprint != self.snapshot().fingerprint {
                return Ok(None);
            }
            s.audit(self.settings.sample).map(Some)
        });
        match again {
            Ok(Some(s)) if s.fingerprint == fingerprint(root) => self.set(Ok(s)),
            Ok(_) => {}
            Err(e) => self.set(Err(e)),
        }
    }

    /// Reads the files again when they changed since the snapshot was made, or audits them
    /// when they were not yet: first the index (new rows show at once), then the audit.
    /// Files that failed are read again only once they change.
    pub fn refresh(&self) {
        let now = fingerprint(&self.settings.root);
        let failed = || self.failed.lock().unwrap_or_else(|e| e.into_inner());
        if failed().as_ref() == Some(&now) {
            return;
        }
        let stale = || self.stale.lock().unwrap_or_else(|e| e.into_inner());
        let current = self.snapshot();
        if now != current.fingerprint {
            let indexed = Snapshot::index(&self.settings.root);
            let ok = indexed.is_ok();
            self.set(indexed);
            if ok {
                self.audit();
            }
        } else if current.audited {
            // Back to the files of the snapshot after a failure: it holds again.
            *stale() = None;
        } else {
            self.audit();
        }
        let failing = stale().is_some();
        *failed() = failing.then_some(now);
    }
}

/// Looks at the files every `poll` and reads them again when they changed (a build renamed
/// its finished files into place), until the server stops. Files that failed to read are
/// read again (and the failure reported) only once they change again.
pub async fn watch(state: Arc<AppState>) {
    loop {
        let s = state.clone();
        if tokio::task::spawn_blocking(move || s.refresh())
            .await
            .is_err()
        {
            return;
        }
        tokio::time::sleep(state.settings.poll).await;
    }
}
