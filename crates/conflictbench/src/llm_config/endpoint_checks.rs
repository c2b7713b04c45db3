//! Every endpoint the run will call (the writer's, a pool's, the readers', the named
//! models') checked before any work ([`LlmSetup::check_endpoints`]).

use super::endpoint::check_endpoint;
use super::{LlmSetup, ModelSpec, ReaderSetting};
use cb_engine::Recipe;
use cb_llm::BackendKind;

impl LlmSetup {
    /// Checks every endpoint of the run before any work (`--base-url`, a pool's): a base URL
    /// that cannot be parsed, or a public host with no API key, is a configuration error.
    pub fn check_endpoints(&self, recipes: &[&Recipe]) -> anyhow::Result<()> {
        self.check_readers(recipes)?;
        if self.mode.backend() == BackendKind::Offline {
            return Ok(());
        }
        let calls = self.mode.sends() && self.default.transport.sends();
        for url in self.default.endpoints() {
            check_endpoint("--base-url", url, calls)?;
        }
        self.named
            .values()
            .try_for_each(|spec| check_model(spec, calls))
    }

    /// The endpoints of the build's readers (`--reader-base-url`, `--reader NAME`, the
    /// recipes' panels), checked whatever the writer's backend: an offline build's readers
    /// call their models too.
    fn check_readers(&self, recipes: &[&Recipe]) -> anyhow::Result<()> {
        // A model whose calls go into batch files sends nothing: it needs no key.
        let calls = |spec: &ModelSpec| self.mode.sends() && spec.transport.sends();
        let mut names: Vec<String> = match &self.reader {
            ReaderSetting::Nobody => return Ok(()),
            ReaderSetting::Named {
                base_url: Some(u), ..
            } => {
                check_endpoint("--reader-base-url", u, calls(&self.default))?;
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
            if let Some(spec) = self.named.get(&name) {
                check_model(spec, calls(spec))?;
            }
        }
        Ok(())
    }
}

/// Checks every endpoint of a named model (`calls`: whether this run sends it requests).
fn check_model(spec: &ModelSpec, calls: bool) -> anyhow::Result<()> {
    for url in spec.endpoints() {
        check_endpoint(&spec.named_by.base_url, url, calls)?;
    }
    Ok(())
}
