//! Scripted models under test, for evaluation tests: each answers from a table of the
//! benchmark's items in one fixed way, so every metric has a known value.
//!
//! An [`EvalEntry`] says how to recognise an item in a prompt (its `question`, and the
//! `contexts` it may come with) and what each way of answering replies. The responder finds
//! the entry whose question occurs last in the last user message (the item itself comes after
//! any few-shot examples), then the context of that entry that occurs in the message.
//!
//! - [`Behaviour::FollowContext`] replies what the context shown supports; with no context,
//!   the entry's `memory` answer.
//! - [`Behaviour::Memory`] gives always the entry's `memory` answer (the gold), whatever the context.
//! - [`Behaviour::Invalid`] says always "I don't know."
//! - [`Behaviour::Random`] gives one of the entry's possible replies, drawn from a hash of the
//!   request body and a seed (the same request gets the same answer).

use crate::{canonical_json, responder, ChatRequest, Reply, Responder};

/// One item of the benchmark as the scripted model knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalEntry {
    /// Text that identifies the item in a prompt (a question; may be empty for text
    /// generation, then only the contexts identify it).
    pub question: String,
    /// The reply from memory (the right answer, or the reference text).
    pub memory: String,
    /// `(context text, the reply that context supports)`.
    pub contexts: Vec<(String, String)>,
}

/// How the scripted model answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    FollowContext,
    Memory,
    Invalid,
    Random(u64),
}

fn pick<'a>(entries: &'a [EvalEntry], prompt: &str) -> Option<(&'a EvalEntry, Option<&'a str>)> {
    let mut best: Option<(usize, usize, &EvalEntry, Option<&str>)> = None;
    for e in entries {
        // An empty question matches any prompt, below every question that occurs.
        let qend = if e.question.is_empty() {
            0
        } else {
            match prompt.rfind(e.question.as_str()) {
                Some(p) => p + e.question.len(),
                None => continue,
            }
        };
        // The context that occurs last in the prompt (examples come first).
        let ctx = e
            .contexts
            .iter()
            .filter(|(c, _)| !c.is_empty())
            .filter_map(|(c, r)| {
                prompt
                    .rfind(c.as_str())
                    .map(|p| (p + c.len(), c.len(), r.as_str()))
            })
            .max_by_key(|(end, len, _)| (*end, *len));
        let ctx_key = ctx.map_or(0, |(end, _, _)| end);
        let key = (qend, ctx_key);
        if best.is_none_or(|b| (key.0, key.1) > (b.0, b.1)) {
            best = Some((key.0, key.1, e, ctx.map(|c| c.2)));
        }
    }
    best.map(|(_, _, e, c)| (e, c))
}

/// The reply of `behaviour` to `req` given the table `entries`.
pub fn answer(behaviour: Behaviour, entries: &[EvalEntry], req: &ChatRequest) -> String {
    let prompt = req.last_user();
    if behaviour == Behaviour::Invalid {
        return "I don't know.".to_owned();
    }
    let Some((entry, ctx)) = pick(entries, prompt) else {
        return "I don't know.".to_owned();
    };
    match behaviour {
        Behaviour::FollowContext => ctx.unwrap_or(&entry.memory).to_owned(),
        Behaviour::Memory => entry.memory.clone(),
        Behaviour::Random(seed) => {
            let mut all: Vec<&str> = vec![entry.memory.as_str()];
            all.extend(entry.contexts.iter().map(|(_, r)| r.as_str()));
            all.sort_unstable();
            all.dedup();
            let mut body = String::new();
            canonical_json(&req.body, &mut body);
            // FNV-1a over the seed and the canonical body.
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            for b in seed.to_le_bytes().iter().chain(body.as_bytes()) {
                h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
            }
            all[(h % all.len() as u64) as usize].to_owned()
        }
        Behaviour::Invalid => unreachable!("answered above"),
    }
}

/// A responder that answers every chat request as `behaviour` over `entries`.
pub fn eval_responder(behaviour: Behaviour, entries: Vec<EvalEntry>) -> Responder {
    responder(move |req| Reply::Content(answer(behaviour, &entries, req)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(user: &str) -> ChatRequest {
        ChatRequest::new(json!({"model": "m", "messages": [{"role": "user", "content": user}]}))
    }

    fn entries() -> Vec<EvalEntry> {
        vec![EvalEntry {
            question: "Where is the bank?".into(),
            memory: "downtown".into(),
            contexts: vec![
                ("The bank is downtown.".into(), "downtown".into()),
                ("The bank is by the river.".into(), "by the river".into()),
            ],
        }]
    }

    #[test]
    fn behaviours() {
        let e = entries();
        let edited = req("Context: The bank is by the river.\nQuestion: Where is the bank?");
        let none = req("Question: Where is the bank?");
        assert_eq!(
            answer(Behaviour::FollowContext, &e, &edited),
            "by the river"
        );
        assert_eq!(answer(Behaviour::FollowContext, &e, &none), "downtown");
        assert_eq!(answer(Behaviour::Memory, &e, &edited), "downtown");
        assert_eq!(answer(Behaviour::Invalid, &e, &edited), "I don't know.");
        let r = answer(Behaviour::Random(1), &e, &edited);
        assert_eq!(r, answer(Behaviour::Random(1), &e, &edited));
        assert!(r == "downtown" || r == "by the river");
    }
}
