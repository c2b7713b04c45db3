//! `--structured`: how the JSON schemas of structured steps are sent to the endpoint.

use cb_llm::{Form, Structured};
use clap::ValueEnum;

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum StructuredArg {
    /// Find out once per endpoint and model (remembered in the cache database).
    Auto,
    /// `response_format: {type: json_schema}` (OpenAI, vLLM, llama.cpp's llama-server, Ollama).
    JsonSchema,
    /// `response_format: {type: json_object, schema}` (llama-cpp-python).
    JsonObject,
    /// No `response_format`: the prompt alone asks for JSON.
    Off,
}

impl From<StructuredArg> for Structured {
    fn from(a: StructuredArg) -> Self {
        match a {
            StructuredArg::Auto => Structured::Auto,
            StructuredArg::JsonSchema => Structured::Fixed(Form::JsonSchema),
            StructuredArg::JsonObject => Structured::Fixed(Form::JsonObject),
            StructuredArg::Off => Structured::Fixed(Form::Off),
        }
    }
}
