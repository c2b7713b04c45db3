//! The preflight: every endpoint the run will call (the writer's, a pool's, the readers',
//! the named models') checked before any work.

use super::{Carrier, LlmSetup, ReaderSetting};
use crate::llm_args::Backend;
use cb_engine::Recipe;

impl LlmSetup {
    /// Checks every endpoint of the run before any work (`--base-url`, a pool's): a base URL
    /// that cannot be parsed, or a public host with no API key, is a configuration error.
    pub fn preflight(&self, recipes: &[&Recipe]) -> anyhow::Result<()> {
        self.preflight_readers(recipes)?;
        if self.backend == Backend::Offline {
            return Ok(());
        }
        let sends_nothing = matches!(self.default.carrier, Carrier::Files { .. });
        let calls = self.backend == Backend::Openai && !self.dry_run && !sends_nothing;
        let pool = match &self.default.carrier {
            Carrier::Pool(p) => p.endpoints.iter().map(|e| e.base_url.as_str()).collect(),
            _ => Vec::new(),
        };
        for url in self.default.base_url.iter().map(String::as_str).chain(pool) {
            crate::preflight::check_endpoint("--base-url", url, calls)?;
        }
        for spec in self.named.values() {
            let pool = match &spec.carrier {
                Carrier::Pool(p) => p.endpoints.iter().map(|e| e.base_url.as_str()).collect(),
                _ => Vec::new(),
            };
            for url in spec.base_url.iter().map(String::as_str).chain(pool) {
                crate::preflight::check_endpoint(&spec.named_by.base_url, url, calls)?;
            }
        }
        Ok(())
    }

    /// The endpoints of the build's readers (`--reader-base-url`, `--reader NAME`, the
    /// recipes' panels), checked whatever the writer's backend: an offline build's readers
    /// call their models too.
    fn preflight_readers(&self, recipes: &[&Recipe]) -> anyhow::Result<()> {
        // A model whose calls go into batch files sends nothing: it needs no key.
        let calls = |carrier: &Carrier| {
            !self.dry_run
                && self.backend != Backend::Replay
                && !matches!(carrier, Carrier::Files { .. })
        };
        let mut names: Vec<String> = match &self.reader {
            ReaderSetting::Nobody => return Ok(()),
            ReaderSetting::Named {
                base_url: Some(u), ..
            } => {
                let sends = calls(&self.default.carrier);
                crate::preflight::check_endpoint("--reader-base-url", u, sends)?;
                Vec::new()
            }
            ReaderSetting::Model(n) => vec![n.clone()],
            _ => Vec::new(),
        };
        names.extend(
            recipes
                .iter()
                .flat_map(|r| &r.steps)
                .flat_map(|s| s.strs("readers").unwrap_or_default()),
        );
        for name in names {
            let Some(spec) = self.named.get(&name) else {
                continue;
            };
            let pool = match &spec.carrier {
                Carrier::Pool(p) => p.endpoints.iter().map(|e| e.base_url.as_str()).collect(),
                _ => Vec::new(),
            };
            for url in spec.base_url.iter().map(String::as_str).chain(pool) {
                crate::preflight::check_endpoint(
                    &spec.named_by.base_url,
                    url,
                    calls(&spec.carrier),
                )?;
            }
        }
        Ok(())
    }
}
