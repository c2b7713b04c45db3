//! What every request shares: the settings, the current snapshot (made again when the
//! files change), the ratings file and the templates.

use crate::error::ViewError;
use crate::index::{fingerprint, SampleSpec, Snapshot};
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
    pub ratings: Ratings,
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
    /// Indexes the viewed files (an error here is the caller's to report) and loads the
    /// templates; the audit follows in [`AppState::audit`].
    pub fn new(settings: Settings) -> Result<AppState, ViewError> {
        let snapshot = Snapshot::index(&settings.root)?;
        Ok(AppState {
            ratings: Ratings::new(&settings.ratings),
            templates: crate::templates::load()?,
            snapshot: RwLock::new(Arc::new(snapshot)),
            stale: Mutex::new(None),
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
    pub fn refresh(&self) {
        let current = self.snapshot();
        if fingerprint(&self.settings.root) == current.fingerprint {
            let failed = self
                .stale
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_some();
            if !current.audited && !failed {
                self.audit();
            }
            return;
        }
        self.set(Snapshot::index(&self.settings.root));
        self.audit();
    }
}

/// Looks at the files every `poll` and reads them again when they changed (a build renamed
/// its finished files into place), until the server stops.
pub async fn watch(state: Arc<AppState>) {
    loop {
        let s = state.clone();
        if tokio::task::spawn_blocking(move || s.refresh())
            .await
            .is_err()
        {
            return;
        }
    }
}
