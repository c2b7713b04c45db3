//! The options of the reader (`limit`, `sample`, `seed`, `lang`), checked when the dump is
//! opened.

use serde_json::Value;

use crate::{ReadError, ReaderOptions};
use cb_model::json::type_name;

/// The options of the `eventkg` reader.
#[derive(Debug, Clone)]
pub(super) struct Options {
    pub(super) limit: Option<usize>,
    pub(super) sample: Option<usize>,
    pub(super) seed: u64,
    pub(super) lang: String,
}

impl Options {
    pub(super) fn from_options(opts: &ReaderOptions) -> Result<Self, ReadError> {
        let mut options = Options {
            limit: None,
            sample: None,
            seed: 42,
            lang: "en".to_string(),
        };
        for (key, value) in opts {
            match key.as_str() {
                "limit" => options.limit = Some(count_option(key, value)?),
                "sample" => options.sample = Some(count_option(key, value)?),
                "seed" => {
                    options.seed = value.as_u64().ok_or_else(|| {
                        ReadError::Config(format!(
                            "reader `eventkg`: option `seed` must be a non-negative integer, \
                             not {}",
                            describe(value)
                        ))
                    })?
                }
                "lang" => match value {
                    Value::String(s) if !s.trim().is_empty() => {
                        options.lang = s.trim().to_ascii_lowercase()
                    }
                    other => {
                        return Err(ReadError::Config(format!(
                            "reader `eventkg`: option `lang` must be a non-empty string, not {}",
                            describe(other)
                        )))
                    }
                },
                other => {
                    return Err(ReadError::Config(format!(
                        "reader `eventkg` has no option `{other}` (options: limit, sample, seed, \
                         lang)"
                    )))
                }
            }
        }
        Ok(options)
    }
}

fn describe(value: &Value) -> String {
    match value {
        Value::String(s) if s.trim().is_empty() => "an empty string".to_string(),
        Value::Number(n) => format!("the number {n}"),
        other => type_name(other).to_string(),
    }
}

fn count_option(key: &str, value: &Value) -> Result<usize, ReadError> {
    value
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| {
            ReadError::Config(format!(
                "reader `eventkg`: option `{key}` must be a non-negative integer, not {}",
                describe(value)
            ))
        })
}
