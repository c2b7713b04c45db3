//! The run's mode, decided once from `--backend`, `--dry-run` and the settings that name an
//! endpoint: which backend answers, and whether the run only counts.

use cb_llm::BackendKind;

/// Who answers the run's calls, decided once ([`Mode::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The backend answers: [`BackendKind::Offline`], [`BackendKind::Openai`] or
    /// [`BackendKind::Replay`].
    Run(BackendKind),
    /// `--dry-run` of a run with that backend: counts what it would call and spend, calls
    /// nothing, writes nothing.
    DryRun(BackendKind),
}

impl Mode {
    /// The mode of `--backend` (`flag`) and `--dry-run`: without `--backend`, openai when an
    /// endpoint is named (`names_endpoint`: a base URL, a pool, batch files), else offline.
    pub fn of(flag: Option<BackendKind>, dry_run: bool, names_endpoint: bool) -> Self {
        let backend = match flag {
            Some(b) => b,
            None if names_endpoint => BackendKind::Openai,
            None => BackendKind::Offline,
        };
        if dry_run {
            Self::DryRun(backend)
        } else {
            Self::Run(backend)
        }
    }

    /// The backend the flags chose (a dry run's: the one it counts for).
    pub fn backend(self) -> BackendKind {
        match self {
            Self::Run(b) | Self::DryRun(b) => b,
        }
    }

    /// `--dry-run`: count, call nothing, write nothing.
    pub fn dry_run(self) -> bool {
        matches!(self, Self::DryRun(_))
    }

    /// `--backend replay` (a dry run of one too): the answers come from the cache.
    pub fn replays(self) -> bool {
        self.backend() == BackendKind::Replay
    }

    /// Whether the run writes its cache (not a dry run, not a replay: they only read it), so
    /// that it takes the cache's lock.
    pub fn writes_cache(self) -> bool {
        !self.dry_run() && !self.replays()
    }

    /// The backend of a layer that calls a model (a writer with an endpoint, a reader, a
    /// named model), whatever the writer's backend: a dry run counts, a replay reads the
    /// cache, any other run calls the endpoint.
    pub fn model_backend(self) -> BackendKind {
        match self {
            Self::DryRun(_) => BackendKind::DryRun,
            Self::Run(BackendKind::Replay) => BackendKind::Replay,
            Self::Run(_) => BackendKind::Openai,
        }
    }

    /// Whether a model's calls that miss the cache go out (not a dry run, not a replay), so
    /// that a public endpoint needs a key.
    pub fn sends(self) -> bool {
        matches!(self.model_backend(), BackendKind::Openai)
    }
}
