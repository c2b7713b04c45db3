//! The structured-output forms (`--structured`): how a step's JSON schema is sent. Finding
//! out which one an endpoint takes is `structured`'s work.

use serde_json::{json, Value};

/// The `--structured` option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Structured {
    /// Find out once per endpoint and model; remembered in the cache database.
    #[default]
    Auto,
    /// Always this form.
    Fixed(Form),
}

/// How a response schema is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// OpenAI's `json_schema` response format (strict).
    JsonSchema,
    /// llama-cpp-python's `json_object` response format with a `schema`.
    JsonObject,
    /// No `response_format`: prompt only.
    Off,
}

impl Form {
    pub fn name(self) -> &'static str {
        match self {
            Self::JsonSchema => "json-schema",
            Self::JsonObject => "json-object",
            Self::Off => "off",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::JsonSchema, Self::JsonObject, Self::Off]
            .into_iter()
            .find(|f| f.name() == s)
    }

    /// The `response_format` value carrying `schema`, or `None` for prompt-only.
    pub fn response_format(self, schema: &Value) -> Option<Value> {
        match self {
            Self::JsonSchema => Some(json!({
                "type": "json_schema",
                "json_schema": {"name": "answer", "strict": true, "schema": schema},
            })),
            Self::JsonObject => Some(json!({"type": "json_object", "schema": schema})),
            Self::Off => None,
        }
    }

    /// The form tried after this one is refused.
    pub(crate) fn next(self) -> Self {
        match self {
            Self::JsonSchema => Self::JsonObject,
            Self::JsonObject | Self::Off => Self::Off,
        }
    }
}

/// What the layer knows of the endpoint's form (auto mode).
#[derive(Default)]
pub(crate) struct FormState {
    pub(crate) known: std::sync::Mutex<Option<Form>>,
    /// Held while the form is being found out, so one probe runs at a time.
    pub(crate) detecting: tokio::sync::Mutex<()>,
}

impl FormState {
    pub(crate) fn get(&self) -> Option<Form> {
        *self.known.lock().expect("form lock")
    }
    pub(crate) fn set(&self, f: Form) {
        *self.known.lock().expect("form lock") = Some(f);
    }
}
