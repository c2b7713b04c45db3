//! What a cache file holds, read back for people rather than for calls: a stored call with
//! its request, the calls and tokens per model, the latest answers. The viewer reads a build's
//! cache through these (the schema has one owner, [`crate::cache`]); a cache file that has no
//! `responses` table yet (a build that has not answered anything) reads as empty.

use crate::cache::Cache;
use crate::LlmError;
use rusqlite::OptionalExtension;

/// One stored call: the model, the template, the request as sent (JSON) and the answer.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredCall {
    pub model: String,
    pub template: String,
    /// The request body as it was sent, JSON.
    pub request: String,
    pub content: String,
    pub finish_reason: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// The calls and tokens one model's answers in the cache add up to.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelUsage {
    pub model: String,
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// One of the latest answers: its model, its template and what it said.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredAnswer {
    pub model: String,
    pub template: String,
    pub content: String,
}

impl Cache {
    /// The call stored under `key`, with its request.
    pub fn stored_call(&self, key: &str) -> Result<Option<StoredCall>, LlmError> {
        if !self.has_table("responses")? {
            return Ok(None);
        }
        let got = self
            .conn()
            .query_row(
                "SELECT model, template, request, content, finish_reason, prompt_tokens,
                        completion_tokens
                 FROM responses WHERE key = ?1",
                [key],
                |r| {
                    Ok(StoredCall {
                        model: r.get(0)?,
                        template: r.get(1)?,
                        request: r.get(2)?,
                        content: r.get(3)?,
                        finish_reason: r.get(4)?,
                        prompt_tokens: r.get(5)?,
                        completion_tokens: r.get(6)?,
                    })
                },
            )
            .optional()?;
        Ok(got)
    }

    /// Calls and tokens per model, by model name.
    pub fn usage_by_model(&self) -> Result<Vec<ModelUsage>, LlmError> {
        if !self.has_table("responses")? {
            return Ok(Vec::new());
        }
        let conn = self.conn();
        let mut st = conn.prepare(
            "SELECT model, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens)
             FROM responses GROUP BY model ORDER BY model",
        )?;
        let rows = st.query_map([], |r| {
            Ok(ModelUsage {
                model: r.get(0)?,
                calls: r.get(1)?,
                prompt_tokens: r.get(2)?,
                completion_tokens: r.get(3)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The `n` answers stored last, newest first.
    pub fn latest_answers(&self, n: usize) -> Result<Vec<StoredAnswer>, LlmError> {
        if !self.has_table("responses")? {
            return Ok(Vec::new());
        }
        let conn = self.conn();
        let mut st = conn.prepare(
            "SELECT model, template, content FROM responses ORDER BY rowid DESC LIMIT ?1",
        )?;
        let rows = st.query_map([i64::try_from(n).unwrap_or(i64::MAX)], |r| {
            Ok(StoredAnswer {
                model: r.get(0)?,
                template: r.get(1)?,
                content: r.get(2)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use crate::cache::{Cache, CachedResponse};
    use crate::{Call, ChatRequest, Message};

    fn call(text: &str) -> Call {
        Call {
            request: ChatRequest {
                messages: vec![Message::user(text.to_owned())],
                temperature: 0.0,
                top_p: None,
                max_tokens: 100,
                seed: None,
                response_schema: None,
                top_logprobs: None,
            },
            template: "qa.md".into(),
            template_hash: "h".into(),
            item: "i".into(),
            offline: String::new(),
        }
    }

    fn answer(content: &str, tokens: (u64, u64)) -> CachedResponse {
        CachedResponse {
            content: content.into(),
            finish_reason: "stop".into(),
            prompt_tokens: tokens.0,
            completion_tokens: tokens.1,
            raw: String::new(),
        }
    }

    #[tokio::test]
    async fn a_cache_reads_back_its_calls_usage_and_latest_answers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.sqlite");
        let rw = Cache::open(&path).unwrap();
        let at = |m: &'static str| ("http://e/v1", m);
        rw.commit(at("a"), "k1", &call("one"), &answer("A1", (10, 2)), None)
            .await
            .unwrap();
        rw.commit(at("b"), "k2", &call("two"), &answer("B1", (7, 3)), None)
            .await
            .unwrap();
        rw.commit(at("a"), "k3", &call("three"), &answer("A2", (5, 1)), None)
            .await
            .unwrap();
        let ro = Cache::open_read_only(&path).unwrap().unwrap();
        let k2 = ro.stored_call("k2").unwrap().unwrap();
        assert_eq!((k2.model.as_str(), k2.content.as_str()), ("b", "B1"));
        assert!(k2.request.contains("\"two\""), "{}", k2.request);
        assert_eq!((k2.prompt_tokens, k2.completion_tokens), (7, 3));
        assert_eq!(ro.stored_call("nokey").unwrap(), None);
        let usage = ro.usage_by_model().unwrap();
        let got: Vec<_> = usage
            .iter()
            .map(|u| {
                (
                    u.model.as_str(),
                    u.calls,
                    u.prompt_tokens,
                    u.completion_tokens,
                )
            })
            .collect();
        assert_eq!(got, [("a", 2, 15, 3), ("b", 1, 7, 3)]);
        let latest: Vec<_> = ro
            .latest_answers(2)
            .unwrap()
            .into_iter()
            .map(|a| a.content)
            .collect();
        assert_eq!(latest, ["A2", "B1"]);
    }

    #[test]
    fn a_file_without_answers_reads_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.sqlite");
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch("CREATE TABLE other (x INTEGER);")
            .unwrap();
        let ro = Cache::open_read_only(&path).unwrap().unwrap();
        assert_eq!(ro.stored_call("k").unwrap(), None);
        assert!(ro.usage_by_model().unwrap().is_empty());
        assert!(ro.latest_answers(5).unwrap().is_empty());
    }
}
