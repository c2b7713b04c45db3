//! A stand-in for the model of the bundled `kre` SQuAD recipe (`recipes/kre-squad.toml`), the
//! `recall` EventKG recipe (`recipes/recall-eventkg.toml`) and the ConflictBank-style recipes
//! (`recipes/conflictbank-popqa.toml`, `recipes/conflictbank-mquake.toml`), for benchmarks and tests that
//! need items to go through every step, the reader check included. Each answer follows from
//! the prompt alone (no state, no randomness), so a build against it is deterministic.
//!
//! [`model`] recognises the prompt by its wording and answers:
//! - KRE `distractors` (`kre/distractors.md`): three options made from the correct answer
//!   word by word (numbers shifted by multiples of 7, other words replaced by made-up words
//!   of the same capitalisation), none of them an accepted form of the answer and none
//!   occurring in the passage;
//! - KRE `negative_context` (`kre/rewrite_context.md`): the passage with every mention of the
//!   answer and its other forms replaced by the replacement answer;
//! - RECALL `paraphrase` (`recall/paraphrase_record.md`): one sentence per record item
//!   ("This is about NAME.", "Its KEY was VALUE."), the description left out;
//! - RECALL `qa` (`recall/qa_record.md`): a question on one item other than the name and the
//!   description, chosen by a hash of the event's name;
//! - RECALL `answer_edit` (`recall/edit_answer_record.md`): a fixed value of the answer's kind
//!   (`1 January 1950` for a date, `Timbuktu`, `Ada Lovelace`, `Siege of Troy`, `Zzyzx`);
//! - RECALL `nonanswer_edit` (`recall/edit_nonanswer_record.md`): the first other value of the
//!   paragraph replaced by a fixed one of its key's sort (`2 February 1960`, `Xanadu`,
//!   `Grace Hopper`);
//! - ConflictBank's evidences (`conflictbank/*_evidence.md`): the claim or fact the prompt
//!   asks to support, as a sentence, and one sentence more that names nothing
//!   ([`evidence`]); the semantic description (`conflictbank/semantic_description.md`): the
//!   name, then a fixed description;
//! - the reader check's conflict confirmation (mode `fields`, "Would they give different
//!   answers?"): `A` (they would);
//! - the reader check's questions (`reader/question.md`): the option the context names
//!   ([`crate::reader_script::follow_context`]); the answer-set test
//!   (`reader/answer_set.md`): `A`; the judged checks (`reader/judge.md`): the option that
//!   passes ([`crate::reader_script::judge`]).
//!
//! A request whose `json_schema` asks for `{"ok": <boolean>}` alone (the structured-output
//! probe of `cb-llm`) gets `{"ok": true}`, as from a server that enforces schemas (vLLM,
//! OpenAI), so online builds and batch files use the same form. Anything else gets a reply
//! that no step accepts. The sources must leave room for these
//! answers: the fixed values must not occur in an event's paragraph, and RECALL dates should
//! not fall in 1950 or 1960.

use crate::reader_script::{follow_context, parse};
use crate::{responder, ChatRequest, Reply, Responder};
use serde_json::json;

/// The stand-in as a [`Responder`] ([`answer`] for every request).
pub fn model() -> Responder {
    responder(answer)
}

/// The stand-in's reply to one request.
pub fn answer(req: &ChatRequest) -> Reply {
    let last = req.last_user();
    if last.contains("Answer with the letter") {
        return Reply::Content(
            parse(last).map_or_else(|| "None".to_owned(), |q| follow_context(&q)),
        );
    }
    if last.contains("The question itself is not shown")
        || last.contains("Would they give different answers?")
    {
        return Reply::Content("A".to_owned());
    }
    if let Some(pick) = crate::reader_script::judge(last, false) {
        return Reply::Content(pick);
    }
    let schema = &req.body["response_format"]["json_schema"]["schema"];
    if schema["required"] == json!(["ok"]) {
        return Reply::Content(r#"{"ok": true}"#.to_owned());
    }
    let all = req.request_text();
    let content = if let Some(text) = evidence(last) {
        text
    } else if all.contains("misleading options") {
        distractors(&all)
    } else if all.contains("Replacement answer: \"") {
        rewrite(&all)
    } else if all.contains("Here is a record about an event") {
        paraphrase(&all)
    } else if all.contains("Paragraph written from the record") {
        question(&all)
    } else if all.contains("Give another") {
        answer_edit(&all)
    } else if all.contains("Introduce factual errors") {
        nonanswer_edit(&all)
    } else {
        format!(
            "The stand-in does not know this prompt: {}",
            first_line(&all)
        )
    };
    Reply::Content(content)
}

/// A ConflictBank evidence: the claim (or fact) the prompt asks to support, first letter
/// capitalised, and a sentence that names nothing; a semantic description: `NAME is a
/// lesser-known namesake, recorded in a regional register.`
fn evidence(user: &str) -> Option<String> {
    if let Some((_, rest)) = user.split_once("another entity named \"") {
        let name = rest.split('"').next().unwrap_or_default();
        return Some(format!(
            "{name} is a lesser-known namesake, recorded in a regional register."
        ));
    }
    let (_, rest) = user
        .split_once("supports this claim: ")
        .or_else(|| user.split_once("supports this fact: "))?;
    let claim = first_line(rest).trim();
    let mut chars = claim.chars();
    let first = chars.next()?;
    Some(format!(
        "{}{} The records of the archive say so plainly.",
        first.to_uppercase(),
        chars.as_str()
    ))
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

fn between<'a>(s: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let i = s.find(start)? + start.len();
    let j = s[i..].find(end)? + i;
    Some(&s[i..j])
}

/// The text between `<<<` and `>>>` after `label` (the first such block when `label` is
/// empty).
fn block<'a>(all: &'a str, label: &str) -> &'a str {
    all.find(label)
        .and_then(|i| between(&all[i..], "<<<\n", "\n>>>"))
        .unwrap_or_default()
}

/// The quoted strings of the line that starts with `label`.
fn quoted_after(all: &str, label: &str) -> Vec<String> {
    let Some(i) = all.find(label) else {
        return Vec::new();
    };
    let line = first_line(&all[i + label.len()..]);
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// FNV-1a, 64 bits.
fn hash(parts: &[&[u8]]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for p in parts {
        for b in *p {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A made-up word of about `len` letters, capitalised when `capital`.
fn made_up_word(seed: u64, len: usize, capital: bool) -> String {
    const CONSONANTS: &[u8] = b"bdfgklmnprstvz";
    const VOWELS: &[u8] = b"aeiou";
    let mut h = seed;
    let mut w = String::new();
    for i in 0..len.clamp(3, 10) {
        h = h.rotate_left(7) ^ h.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let set = if i % 2 == 0 { CONSONANTS } else { VOWELS };
        w.push(char::from(set[(h % set.len() as u64) as usize]));
    }
    if capital {
        w[..1].to_uppercase() + &w[1..]
    } else {
        w
    }
}

/// The `k`-th variant of `answer`: numbers shifted by `7 k`, other words made up.
fn variant(answer: &str, k: u64) -> String {
    answer
        .split(' ')
        .map(|word| {
            if let Ok(n) = word.parse::<u64>() {
                (n + 7 * k).to_string()
            } else if word.chars().any(char::is_alphanumeric) {
                let capital = word.chars().next().is_some_and(char::is_uppercase);
                made_up_word(
                    hash(&[word.as_bytes(), &k.to_le_bytes()]),
                    word.chars().count(),
                    capital,
                )
            } else {
                word.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// KRE distractors: three variants of the answer, distinct, none an accepted form of it and
/// none in the passage.
fn distractors(all: &str) -> String {
    let passage = block(all, "").to_lowercase();
    let answer = between(all, "Correct answer: \"", "\"").unwrap_or_default();
    let mut taken: Vec<String> = quoted_after(all, "The same answer written in other ways:")
        .iter()
        .chain(&quoted_after(all, "(do not use them as options either):"))
        .chain(std::iter::once(&answer.to_owned()))
        .map(|a| a.to_lowercase())
        .collect();
    let mut options = Vec::new();
    for k in 1..=30 {
        let v = variant(answer, k);
        let low = v.to_lowercase();
        if !passage.contains(&low) && !taken.contains(&low) {
            taken.push(low);
            options.push(v);
        }
        if options.len() == 3 {
            break;
        }
    }
    json!({ "options": options }).to_string()
}

/// Replaces every case-insensitive occurrence of `from` in `text` by `to`.
fn replace_ignoring_case(text: &str, from: &str, to: &str) -> String {
    if from.is_empty() {
        return text.to_owned();
    }
    let (low, needle) = (text.to_ascii_lowercase(), from.to_ascii_lowercase());
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(i) = low[at..].find(&needle).map(|i| i + at) {
        out.push_str(&text[at..i]);
        out.push_str(to);
        at = i + needle.len();
    }
    out.push_str(&text[at..]);
    out
}

/// KRE negative context: the passage, the answer and its other forms (longest first)
/// replaced by the replacement answer.
fn rewrite(all: &str) -> String {
    let passage = block(all, "Passage:");
    let negative = between(all, "Replacement answer: \"", "\"").unwrap_or_default();
    let mut golden = quoted_after(all, "The passage may also write it as:");
    golden.extend(between(all, "Correct answer: \"", "\"").map(str::to_owned));
    golden.sort_by_key(|g| std::cmp::Reverse(g.len()));
    golden.iter().fold(passage.to_owned(), |t, g| {
        replace_ignoring_case(&t, g, negative)
    })
}

/// The `key: value` lines of a record block.
fn record(block: &str) -> Vec<(&str, &str)> {
    block.lines().filter_map(|l| l.split_once(": ")).collect()
}

/// RECALL paraphrase: a sentence per item, the description left out.
fn paraphrase(all: &str) -> String {
    record(block(all, "Here is a record"))
        .into_iter()
        .filter(|(k, _)| *k != "description")
        .map(|(k, v)| match k {
            "name" => format!("This is about {v}."),
            _ => format!("Its {k} was {v}."),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// RECALL question: on the item a hash of the event's name picks.
fn question(all: &str) -> String {
    let lines = record(block(all, "Record of the event"));
    let name = lines
        .iter()
        .find(|(k, _)| *k == "name")
        .map_or("", |(_, v)| v);
    let items: Vec<&(&str, &str)> = lines
        .iter()
        .filter(|(k, _)| *k != "name" && *k != "description")
        .collect();
    let Some((key, value)) = items
        .get((hash(&[name.as_bytes()]) % items.len().max(1) as u64) as usize)
        .copied()
    else {
        return "{}".to_owned();
    };
    json!({"key": key, "question": format!("What was the {key} of {name}?"), "answer": value})
        .to_string()
}

/// RECALL answer edit: a fixed value of the answer's kind.
fn answer_edit(all: &str) -> String {
    // "(the event's KEY: a date)": the kind in words after the last colon.
    let about = between(all, "\nCorrect answer: \"", ")").unwrap_or_default();
    let edited = match about.rsplit(": ").next().unwrap_or_default() {
        "a date" => "1 January 1950",
        "a place" => "Timbuktu",
        "a person or organisation" => "Ada Lovelace",
        "an event" => "Siege of Troy",
        _ => "Zzyzx",
    };
    json!({ "edited_answer": edited }).to_string()
}

/// RECALL non-answer edit: the first "Its KEY was VALUE" of the paragraph whose value is
/// neither the answer nor overlaps it, replaced by a fixed value of the key's sort.
fn nonanswer_edit(all: &str) -> String {
    let answer = between(all, "Answer: \"", "\"").unwrap_or_default();
    let paragraph = block(all, "Paragraph about an event");
    let found = paragraph.split(". ").find_map(|s| {
        let (key, value) = s.strip_prefix("Its ")?.split_once(" was ")?;
        let value = value.trim_end_matches('.');
        (value != answer && !value.contains(answer) && !answer.contains(value))
            .then_some((key, value))
    });
    let replacements = found.map_or_else(Vec::new, |(key, value)| {
        let edited = if key.ends_with("time") {
            "2 February 1960"
        } else if key.starts_with("location") {
            "Xanadu"
        } else {
            "Grace Hopper"
        };
        vec![json!({"original": value, "edited": edited})]
    });
    json!({ "replacements": replacements }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(user: &str) -> String {
        let req = ChatRequest::new(json!({
            "model": "m",
            "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": user}]
        }));
        match answer(&req) {
            Reply::Content(c) => c,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn kre_distractors_and_rewrite_fit_the_passage() {
        let passage = "The town of Varo was founded by Alice Smith in 1820.";
        let d = ask(&format!(
            "Passage:\n<<<\n{passage}\n>>>\n\nQuestion: Who founded Varo?\nCorrect answer: \"Alice Smith\"\n\nWrite exactly 3 misleading options"
        ));
        let v: serde_json::Value = serde_json::from_str(&d).unwrap();
        let options: Vec<&str> = v["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o.as_str().unwrap())
            .collect();
        assert_eq!(options.len(), 3, "{d}");
        for o in &options {
            assert_eq!(o.split(' ').count(), 2, "{o}");
            assert!(o.chars().next().unwrap().is_uppercase(), "{o}");
            assert!(!passage.contains(o) && *o != "Alice Smith", "{o}");
        }
        let year = ask(&format!(
            "Passage:\n<<<\n{passage}\n>>>\nCorrect answer: \"1820\"\nmisleading options"
        ));
        assert_eq!(year, r#"{"options":["1827","1834","1841"]}"#);
        let r = ask(&format!(
            "Passage:\n<<<\n{passage} alice smith built it.\n>>>\nCorrect answer: \"Alice Smith\"\nReplacement answer: \"Bob Jones\""
        ));
        assert_eq!(
            r,
            "The town of Varo was founded by Bob Jones in 1820. Bob Jones built it."
        );
    }

    #[test]
    fn conflictbank_evidences_state_their_claim() {
        let e = ask("Write a news report of three to six sentences that supports this claim: from 2031 on, the occupation of Ann Rovo is lawyer.\n\nName \"Ann Rovo\"");
        assert_eq!(
            e,
            "From 2031 on, the occupation of Ann Rovo is lawyer. The records of the archive say so plainly."
        );
        let d = ask("Describe, in one sentence, another entity named \"Ann Rovo\" than the one people usually mean");
        assert!(d.starts_with("Ann Rovo is "), "{d}");
        let c = ask("The passage holds two texts. A reader who trusts the first text alone and a reader who trusts the second text alone are each asked \"What is Ann Rovo's occupation?\". Would they give different answers?\nA: yes: they would answer differently\nB: no: they would give the same answer, or one text does not answer it\nReply with the letter of one option (one of A, B).");
        assert_eq!(c, "A");
    }

    #[test]
    fn recall_steps_follow_the_record() {
        let rec = "name: Velmo Accord\ndescription: a treaty\nbegin time: 12 March 1431\nlocation: Kelburg\nparticipant: Ann Rovo";
        let p = ask(&format!(
            "Here is a record about an event, one \"key: value\" item per line:\n<<<\n{rec}\n>>>\n"
        ));
        assert_eq!(
            p,
            "This is about Velmo Accord. Its begin time was 12 March 1431. Its location was Kelburg. Its participant was Ann Rovo."
        );
        let q = ask(&format!(
            "Record of the event:\n<<<\n{rec}\n>>>\n\nParagraph written from the record:\n<<<\n{p}\n>>>\n"
        ));
        let q: serde_json::Value = serde_json::from_str(&q).unwrap();
        let key = q["key"].as_str().unwrap();
        assert!(rec.contains(&format!("{key}: {}", q["answer"].as_str().unwrap())));
        let n = ask(&format!(
            "Paragraph about an event:\n<<<\n{p}\n>>>\n\nQuestion: When?\nAnswer: \"12 March 1431\"\n\nIntroduce factual errors"
        ));
        assert_eq!(
            n,
            r#"{"replacements":[{"original":"Kelburg","edited":"Xanadu"}]}"#
        );
        assert_eq!(
            ask("Give another real place\nCorrect answer: \"Kelburg\" (the event's location: a place)"),
            r#"{"edited_answer":"Timbuktu"}"#
        );
    }
}
