//! What the KRE reading-comprehension steps share: items from a `kre_rc` recipe carry
//! `question`, `golden_context`, `answer_text` and `aliases` (other accepted writings of the
//! answer, which the rewrite replaces too).

use cb_model::text;
use cb_step::{fields, Peer, View};
use serde_json::Value;
use std::collections::HashSet;

/// The aliases (an item's `aliases`) that are worth checking and replacing: distinct from
/// the answer (its `answer_text`) and from each other after normalisation, and at least
/// three characters long once normalised (MuSiQue lists codes such as "NO" for Norway or
/// "US", which are also ordinary words).
pub fn usable_aliases(answer: &str, aliases: Vec<String>) -> Vec<String> {
    let mut seen: HashSet<String> = HashSet::from([text::normalize(answer.trim())]);
    aliases
        .into_iter()
        .map(|a| a.trim().to_owned())
        .filter(|a| {
            let n = text::normalize(a);
            n.chars().count() >= 3 && seen.insert(n)
        })
        .collect()
}

/// The distinct non-empty `answer_text`s of the build, in source order (the offline
/// distractors draw from them). Index size: one string per distinct answer (its text, about
/// 20 bytes, plus a 24-byte `String`), and during the first pass a set of the normalised
/// answers of the same size; nothing for an item whose answer was seen before.
#[derive(Debug, Default)]
pub struct GoldenAnswers {
    pub answers: Vec<String>,
    seen: HashSet<String>,
}

impl View for GoldenAnswers {
    fn add(&mut self, peer: Peer<'_>) {
        if let Some(a) = peer.fields.get(fields::ANSWER_TEXT).and_then(Value::as_str) {
            let a = a.trim();
            if !a.is_empty() && self.seen.insert(text::normalize(a)) {
                self.answers.push(a.to_owned());
            }
        }
    }

    fn finish(&mut self) {
        self.seen = HashSet::new();
    }
}
