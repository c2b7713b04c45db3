//! The build's response cache, read only: each call's prompt and answer for a row's lineage,
//! spend per model, the latest answers. A fresh read-only connection per request, so that a
//! build writing the file (SQLite WAL) is never locked and its new answers are seen.
//!
//! The cache file is read through `cb_llm` (`Cache::open_read_only`: sharing the `-wal` and
//! `-shm` files while a writer has them open, else `immutable`, which creates nothing beside
//! it), which owns its schema.

use crate::error::ViewError;
use serde::Serialize;
use std::path::Path;

/// A cached call, as the lineage shows it.
#[derive(Debug, Clone, Serialize)]
pub struct CachedCall {
    pub model: String,
    pub template: String,
    /// The request's messages: (role, content).
    pub messages: Vec<(String, String)>,
    pub answer: String,
    pub finish_reason: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// Calls and spend of one model.
#[derive(Debug, Clone, Serialize)]
pub struct ModelSpend {
    pub model: String,
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// At the built-in list price (`cb_llm::pricing`); `None` for a model without one.
    pub usd: Option<f64>,
}

/// One of the latest answers.
#[derive(Debug, Clone, Serialize)]
pub struct Answer {
    pub model: String,
    pub template: String,
    pub answer: String,
}

fn open(path: &Path) -> Result<Option<cb_llm::Cache>, ViewError> {
    cb_llm::Cache::open_read_only(path).map_err(|e| ViewError::cache(path, e))
}

/// Refuses a cache file that is not one (another SQLite file, or no database at all); no
/// file is fine (a build without one).
pub fn check(path: &Path) -> Result<(), ViewError> {
    activity(path, 1).map(|_| ()).map_err(|e| {
        let why = match e {
            ViewError::Cache { source, .. } => source.to_string(),
            other => other.to_string(),
        };
        // SQLite quotes the statement it failed on: the first line says what is wrong.
        let why = why.lines().next().unwrap_or_default();
        ViewError::Record {
            path: path.display().to_string(),
            message: format!("not a response cache of conflictbench: {why}"),
        }
    })
}

/// The cached call under `key`, if the cache holds it.
pub fn call(path: &Path, key: &str) -> Result<Option<CachedCall>, ViewError> {
    let Some(cache) = open(path)? else {
        return Ok(None);
    };
    let got = cache
        .stored_call(key)
        .map_err(|e| ViewError::cache(path, e))?;
    Ok(got.map(|c| {
        let req: serde_json::Value = serde_json::from_str(&c.request).unwrap_or_default();
        let messages = req["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| {
                let content = match &m["content"] {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (m["role"].as_str().unwrap_or("").to_owned(), content)
            })
            .collect();
        CachedCall {
            model: c.model,
            template: c.template,
            messages,
            answer: c.content,
            finish_reason: c.finish_reason,
            prompt_tokens: c.prompt_tokens,
            completion_tokens: c.completion_tokens,
        }
    }))
}

/// Calls, tokens and spend per model, and the `latest` answers, newest first.
pub fn activity(path: &Path, latest: usize) -> Result<(Vec<ModelSpend>, Vec<Answer>), ViewError> {
    let Some(cache) = open(path)? else {
        return Ok((Vec::new(), Vec::new()));
    };
    let err = |e| ViewError::cache(path, e);
    let spend = cache
        .usage_by_model()
        .map_err(err)?
        .into_iter()
        .map(|u| ModelSpend {
            usd: cb_llm::pricing::builtin(&u.model)
                .map(|pr| pr.usd(u.prompt_tokens, u.completion_tokens)),
            model: u.model,
            calls: u.calls,
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
        })
        .collect();
    let answers = cache
        .latest_answers(latest)
        .map_err(err)?
        .into_iter()
        .map(|a| Answer {
            model: a.model,
            template: a.template,
            answer: a.content,
        })
        .collect();
    Ok((spend, answers))
}
