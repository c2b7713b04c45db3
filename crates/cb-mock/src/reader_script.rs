//! Closed-form readers, for tests of the reader check: each reads the multiple-choice
//! question a request asks (rendered by `prompts/reader/question.md`, `prompts/eval/kre.md`
//! or `prompts/eval/recall_qa.md`: a context, a question, options lettered from `A`) and
//! answers with a letter by one fixed rule, so which rows pass follows from the rows alone;
//! [`judge`] answers the reader check's judged questions (`prompts/reader/judge.md`).
//!
//! - [`follow_context`]: the option whose text the context names (case-insensitive; the
//!   longest when several are named); "None" when none is.
//! - [`memory_reader`]: the option a table of known answers gives for the question, whatever
//!   the context says.
//! - [`table_reader`]: the option a table gives for the context shown (a reader that reads
//!   every context as its author meant it), whatever the order of the options.

use crate::{responder, ChatRequest, Reply, Responder};
use std::collections::HashMap;

/// A multiple-choice question read back from a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mcq {
    pub context: String,
    pub question: String,
    pub options: Vec<String>,
}

/// Reads the question of the last user message: the context after `Context:` (one line) or
/// between `<<<` and `>>>`, the question after the last `Question:`, and the options `A: …`,
/// `B: …` that follow it (inline or one a line), up to `Answer with`.
pub fn parse(prompt: &str) -> Option<Mcq> {
    let context = if let Some(i) = prompt.find("<<<") {
        let rest = &prompt[i + 3..];
        rest[..rest.find(">>>")?].trim().to_owned()
    } else if let Some(i) = prompt.find("Context: ") {
        let rest = &prompt[i + 9..];
        rest[..rest.find('\n').unwrap_or(rest.len())]
            .trim()
            .to_owned()
    } else {
        String::new()
    };
    let q = &prompt[prompt.rfind("Question: ")? + 10..];
    let q = &q[..q.find("\nAnswer with").unwrap_or(q.len())];
    // Option markers in letter order, each after a space or a line break.
    let mut marks = Vec::new();
    let mut from = 0;
    for l in 'A'..='Z' {
        let m = [format!(" {l}: "), format!("\n{l}: ")]
            .iter()
            .filter_map(|pat| q[from..].find(pat.as_str()).map(|i| from + i))
            .min();
        let Some(m) = m else { break };
        marks.push(m);
        from = m + 3;
    }
    let first = *marks.first()?;
    let mut options = Vec::new();
    for (k, m) in marks.iter().enumerate() {
        let end = marks.get(k + 1).copied().unwrap_or(q.len());
        options.push(q[m + 4..end].trim().to_owned());
    }
    Some(Mcq {
        context,
        question: q[..first].trim().to_owned(),
        options,
    })
}

fn letter(i: usize) -> String {
    char::from(b'A' + i as u8).to_string()
}

/// The option the context names (the longest when several are), as a letter.
pub fn follow_context(q: &Mcq) -> String {
    let ctx = q.context.to_lowercase();
    q.options
        .iter()
        .enumerate()
        .filter(|(_, o)| !o.is_empty() && ctx.contains(&o.to_lowercase()))
        .max_by_key(|(i, o)| (o.len(), std::cmp::Reverse(*i)))
        .map_or_else(|| "None".to_owned(), |(i, _)| letter(i))
}

/// A reader that follows the context shown ([`follow_context`]); asked an editor's question
/// ([`judge`]), it picks the option that passes.
pub fn context_follower() -> Responder {
    responder(|req: &ChatRequest| {
        let last = req.last_user();
        Reply::Content(judge(last, false).unwrap_or_else(|| {
            parse(last).map_or_else(|| "None".to_owned(), |q| follow_context(&q))
        }))
    })
}

/// A reader that answers from memory: `known` maps a question to its answer's option (the
/// index in the order the options are shown); the reply is that letter, whatever the context
/// says; asked an editor's question ([`judge`]), it picks the option that passes.
pub fn memory_reader(known: HashMap<String, usize>) -> Responder {
    responder(move |req: &ChatRequest| {
        let last = req.last_user();
        let reply = judge(last, false)
            .or_else(|| parse(last).and_then(|q| known.get(&q.question).map(|i| letter(*i))))
            .unwrap_or_else(|| "None".to_owned());
        Reply::Content(reply)
    })
}

/// A reader that reads well: `known` maps a context to the text of the option it leads to;
/// the reply is that option's letter in the order shown, "None" for a context not in the
/// table or an option not shown; asked an editor's question ([`judge`]), it picks the option
/// that passes.
pub fn table_reader(known: HashMap<String, String>) -> Responder {
    responder(move |req: &ChatRequest| {
        let last = req.last_user();
        let reply = judge(last, false)
            .or_else(|| {
                let q = parse(last)?;
                let want = known.get(&q.context)?;
                q.options.iter().position(|o| o == want).map(letter)
            })
            .unwrap_or_else(|| "None".to_owned());
        Reply::Content(reply)
    })
}

/// The letter of the option an editor picks for the reader check's judged questions
/// (`prompts/reader/judge.md`: the `kind`, `coherent`, `residual`, `grounded` and
/// `plausible` checks), if `prompt` is one; `flawed` picks the option that flags a flaw ("no:
/// another kind of thing", "yes: it contradicts itself", "yes: it also supports another
/// option", "no: a needed fact is missing or only guessed", "implausible: a careful reader
/// would reject it at once"), else the one that passes.
pub fn judge(prompt: &str, flawed: bool) -> Option<String> {
    if !prompt.contains("Reply with the letter of one option (one of") {
        return None;
    }
    let passes = |t: &str| {
        t.starts_with("yes: the same kind")
            || t.starts_with("no: it agrees")
            || t.starts_with("no: only")
            || t.starts_with("yes: the passage states")
            || t.starts_with("plausible: a careful reader")
    };
    let flags = |t: &str| {
        t.starts_with("no: another kind")
            || t.starts_with("yes: it contradicts")
            || t.starts_with("yes: it also supports")
            || t.starts_with("no: a needed fact")
            || t.starts_with("implausible: a careful reader")
    };
    prompt.lines().find_map(|l| {
        let (mark, text) = l.split_once(": ")?;
        let ok = mark.len() == 1 && mark.chars().all(|c| c.is_ascii_uppercase());
        (ok && if flawed { flags(text) } else { passes(text) }).then(|| mark.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judged_questions_are_answered_by_their_options() {
        let q = "Passage:\n<<<\nThe tower stands in Lyon.\n>>>\n\nDoes any statement of this passage contradict another statement of the same passage?\nA: yes: it contradicts itself\nB: no: it agrees with itself\nReply with the letter of one option (one of A, B).";
        assert_eq!(judge(q, false).as_deref(), Some("B"));
        assert_eq!(judge(q, true).as_deref(), Some("A"));
        let q = "Passage:\n<<<\nThe tower stands in Lyon.\n>>>\n\nA test asks \"Where is the tower?\" about this passage, ...\nA: no: only \"Lyon\"\nB: yes: it also supports another option\nReply with the letter of one option (one of A, B).";
        assert_eq!(judge(q, false).as_deref(), Some("A"));
        assert_eq!(judge(q, true).as_deref(), Some("B"));
        let q = "Passage:\n<<<\nA hair is a line of guests.\n>>>\n\nWhich describes it best?\nA: plausible: a careful reader who does not know the answer could take it as written\nB: somewhat: it could be a real passage, but something in it is off\nC: implausible: a careful reader would reject it at once\nReply with the letter of one option (one of A, B, C).";
        assert_eq!(judge(q, false).as_deref(), Some("A"));
        assert_eq!(judge(q, true).as_deref(), Some("C"));
        assert_eq!(
            judge("Question: x\nA: y\nAnswer with the letter", false),
            None
        );
    }

    #[test]
    fn both_layouts_of_the_eval_prompts_parse() {
        let kre = "Answer the multiple-choice question below.\nContext: A cupboard keeps milk cold.\nQuestion: Where is milk kept? A: cupboard B: refrigerator C: mailbox\nAnswer with the letter and the text of one option.";
        let q = parse(kre).unwrap();
        assert_eq!(q.context, "A cupboard keeps milk cold.");
        assert_eq!(q.question, "Where is milk kept?");
        assert_eq!(q.options, ["cupboard", "refrigerator", "mailbox"]);
        assert_eq!(follow_context(&q), "A");
        let recall = "Read the passage, then answer the question.\n\nPassage:\n<<<\nThe siege ended in Lyon.\n>>>\n\nQuestion: Where did the siege end?\nA: Orléans\nB: Lyon\nAnswer with the letter of the right option (one of A, B).";
        let q = parse(recall).unwrap();
        assert_eq!(q.options, ["Orléans", "Lyon"]);
        assert_eq!(follow_context(&q), "B");
        let none = Mcq {
            context: "Nothing here.".into(),
            ..q
        };
        assert_eq!(follow_context(&none), "None");
    }
}
