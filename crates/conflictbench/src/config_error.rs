//! An argument error: what the CLI exits with code 2 for.

/// An argument error (exit code 2).
#[derive(Debug)]
pub(crate) struct ConfigError(String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for ConfigError {}

pub(crate) fn config_err(m: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(ConfigError(m.into()))
}
