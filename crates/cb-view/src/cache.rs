//! The build's response cache, read only: each call's prompt and answer for a row's lineage,
//! spend per model, the latest answers. A fresh read-only connection per request, so that a
//! build writing the file (SQLite WAL) is never locked and its new answers are seen.
//!
//! The cache file (`cb_llm`'s, table `responses`) is opened as `cb_llm::cache::Cache` opens
//! it read-only: sharing the `-wal` and `-shm` files while a writer has them open, else
//! `immutable`, which creates nothing beside it.

use crate::error::ViewError;
use rusqlite::{Connection, OpenFlags, OptionalExtension};
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
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
}

/// Calls and spend of one model.
#[derive(Debug, Clone, Serialize)]
pub struct ModelSpend {
    pub model: String,
    pub calls: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
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

fn open(path: &Path) -> Result<Option<Connection>, ViewError> {
    if !path.is_file() {
        return Ok(None);
    }
    let side = |ext: &str| {
        let mut p = path.as_os_str().to_owned();
        p.push(ext);
        std::path::PathBuf::from(p).exists()
    };
    let immutable = !(side("-wal") && side("-shm"));
    let mut uri = String::from("file:");
    for b in path.display().to_string().bytes() {
        match b {
            b'%' | b'?' | b'#' => uri.push_str(&format!("%{b:02X}")),
            _ => uri.push(b as char),
        }
    }
    uri.push_str(if immutable {
        "?mode=ro&immutable=1"
    } else {
        "?mode=ro"
    });
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(uri, flags).map_err(|e| ViewError::sqlite(path, e))?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(|e| ViewError::sqlite(path, e))?;
    Ok(Some(conn))
}

fn no_table(e: &rusqlite::Error) -> bool {
    e.to_string().contains("no such table")
}

/// The cached call under `key`, if the cache holds it.
pub fn call(path: &Path, key: &str) -> Result<Option<CachedCall>, ViewError> {
    let Some(conn) = open(path)? else {
        return Ok(None);
    };
    let got = conn.query_row(
        "SELECT model, template, request, content, finish_reason, prompt_tokens, completion_tokens
         FROM responses WHERE key = ?1",
        [key],
        |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, i64>(5)?,
                r.get::<_, i64>(6)?,
            ))
        },
    );
    let got = match got.optional() {
        Ok(g) => g,
        Err(e) if no_table(&e) => None,
        Err(e) => return Err(ViewError::sqlite(path, e)),
    };
    Ok(
        got.map(|(model, template, request, answer, finish_reason, p, c)| {
            let req: serde_json::Value = serde_json::from_str(&request).unwrap_or_default();
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
                model,
                template,
                messages,
                answer,
                finish_reason,
                prompt_tokens: p,
                completion_tokens: c,
            }
        }),
    )
}

/// Calls, tokens and spend per model, and the `latest` answers, newest first.
pub fn activity(path: &Path, latest: usize) -> Result<(Vec<ModelSpend>, Vec<Answer>), ViewError> {
    let Some(conn) = open(path)? else {
        return Ok((Vec::new(), Vec::new()));
    };
    let run = || -> rusqlite::Result<(Vec<ModelSpend>, Vec<Answer>)> {
        let mut st = conn.prepare(
            "SELECT model, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens)
             FROM responses GROUP BY model ORDER BY model",
        )?;
        let spend = st
            .query_map([], |r| {
                let model: String = r.get(0)?;
                let (p, c): (i64, i64) = (r.get(2)?, r.get(3)?);
                let usd = cb_llm::pricing::builtin(&model).map(|pr| pr.usd(p as u64, c as u64));
                Ok(ModelSpend {
                    model,
                    calls: r.get(1)?,
                    prompt_tokens: p,
                    completion_tokens: c,
                    usd,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut st = conn.prepare(
            "SELECT model, template, content FROM responses ORDER BY rowid DESC LIMIT ?1",
        )?;
        let answers = st
            .query_map([latest as i64], |r| {
                Ok(Answer {
                    model: r.get(0)?,
                    template: r.get(1)?,
                    answer: r.get(2)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok((spend, answers))
    };
    match run() {
        Ok(x) => Ok(x),
        Err(e) if no_table(&e) => Ok((Vec::new(), Vec::new())),
        Err(e) => Err(ViewError::sqlite(path, e)),
    }
}
