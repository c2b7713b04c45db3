//! A recipe's step entry: its kind (which step of the table) and its parameters.

use serde::Deserialize;

/// One step of a recipe: `kind` names it in the step table; the other keys are its
/// parameters (`prompt`, `temperature`, `mode`, ...).
#[derive(Debug, Clone, Deserialize)]
pub struct StepSpec {
    pub kind: String,
    /// Step name in manifests and rejects; defaults to the kind.
    #[serde(default)]
    pub name: Option<String>,
    /// The named model the step calls (`--models FILE`); default: the build's model.
    #[serde(default)]
    pub model: Option<String>,
    #[serde(flatten)]
    pub params: toml::Table,
}

impl StepSpec {
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.kind)
    }

    /// A string parameter.
    pub fn str(&self, key: &str) -> Option<String> {
        self.params
            .get(key)
            .and_then(toml::Value::as_str)
            .map(str::to_owned)
    }

    /// A boolean parameter, `default` when absent.
    pub fn bool(&self, key: &str, default: bool) -> bool {
        self.params
            .get(key)
            .and_then(toml::Value::as_bool)
            .unwrap_or(default)
    }

    /// A number parameter (integers accepted).
    pub fn f64(&self, key: &str) -> Option<f64> {
        self.params
            .get(key)
            .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
    }

    /// An integer parameter.
    pub fn int(&self, key: &str) -> Option<i64> {
        self.params.get(key).and_then(toml::Value::as_integer)
    }

    /// A list-of-strings parameter (its strings; other items left out: the parameter check
    /// refuses them first).
    pub fn strs(&self, key: &str) -> Option<Vec<String>> {
        self.params
            .get(key)
            .and_then(toml::Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(toml::Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
    }
}
