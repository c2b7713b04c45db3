//! Prompt templates: one file per step and domain under `prompts/`, minijinja syntax, split
//! into a system and a user part by lines `=== system ===` and `=== user ===`. Between them,
//! a template may show worked examples: pairs of `=== example user ===` and
//! `=== example assistant ===` sections, sent as earlier turns of the conversation, word for
//! word (they are not rendered). Small models follow a shown answer far better than a
//! described one (QUALITY.md).

use crate::files::Files;
use crate::StepError;
use cb_llm::Message;
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// A loaded prompt template.
#[derive(Debug, Clone)]
pub struct Prompt {
    /// Path relative to the prompts folder, e.g. `kre/negative_explanation.md`.
    pub name: String,
    /// SHA-256 of the file's bytes.
    pub hash: String,
    pub system: String,
    /// Worked examples, `(user turn, assistant turn)`, sent before the user part.
    pub examples: Vec<(String, String)>,
    pub user: String,
    /// What [`Prompt::instructions`] returns, worked out once when the file is read.
    instructions: String,
    /// The system and user parts, compiled once.
    compiled: Arc<Compiled>,
}

/// The system and user parts of a prompt compiled when the file is read, each the one
/// template of an environment of its own ([`crate::template::environment`], the one every
/// caller renders in), named `<string>` as `render_str` names what it compiles, so that an
/// error reads as before. A part that does not compile is `None`: it is compiled at each
/// render, which reports the error there, as before.
#[derive(Debug)]
struct Compiled {
    system: Option<minijinja::Environment<'static>>,
    user: Option<minijinja::Environment<'static>>,
}

/// The name `render_str` gives the template it compiles.
const UNNAMED: &str = "<string>";

impl Compiled {
    fn of(system: &str, user: &str) -> Self {
        let compile = |src: &str| {
            let mut env = crate::template::environment();
            env.add_template_owned(UNNAMED, src.to_owned()).ok()?;
            Some(env)
        };
        Compiled {
            system: compile(system),
            user: compile(user),
        }
    }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

impl Prompt {
    /// Reads and parses template `name` of `prompts` (a folder or the bundled set).
    pub fn load(prompts: &Files, name: &str) -> Result<Self, StepError> {
        let text = prompts
            .read(name)
            .map_err(|e| StepError::Config(format!("cannot read prompt {e}")))?;
        Self::parse(name, &text)
            .map_err(|m| StepError::Config(format!("prompt {}: {m}", prompts.locate(name))))
    }

    pub fn parse(name: &str, text: &str) -> Result<Self, String> {
        #[derive(Clone, Copy, PartialEq)]
        enum Part {
            System,
            ExampleUser,
            ExampleAssistant,
            User,
        }
        let mut parts: Vec<(Part, usize, String)> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let part = match line.trim() {
                "=== system ===" => Some(Part::System),
                "=== example user ===" => Some(Part::ExampleUser),
                "=== example assistant ===" => Some(Part::ExampleAssistant),
                "=== user ===" => Some(Part::User),
                _ => None,
            };
            match (part, parts.last_mut()) {
                (Some(p), _) => parts.push((p, n + 1, String::new())),
                (None, Some((_, _, s))) => {
                    s.push_str(line);
                    s.push('\n');
                }
                (None, None) => {}
            }
        }
        let (mut system, mut user, mut examples) = (None, None, Vec::new());
        let mut open: Option<String> = None;
        for (part, line, body) in parts {
            let body = body.trim().to_owned();
            let misplaced = |what: &str| Err(format!("line {line}: {what}"));
            match part {
                Part::System if system.is_some() || user.is_some() || !examples.is_empty() => {
                    return misplaced("'=== system ===' must come first, once");
                }
                Part::System => system = Some(body),
                Part::User if user.is_some() => return misplaced("a second '=== user ==='"),
                Part::User => user = Some(body),
                _ if user.is_some() => {
                    return misplaced("examples must come before '=== user ==='");
                }
                Part::ExampleUser if open.is_some() => {
                    return misplaced("'=== example user ===' without an '=== example assistant ===' after the previous one");
                }
                Part::ExampleUser => open = Some(body),
                Part::ExampleAssistant => match open.take() {
                    Some(q) => examples.push((q, body)),
                    None => return misplaced(
                        "'=== example assistant ===' without an '=== example user ===' before it",
                    ),
                },
            }
        }
        if open.is_some() {
            return Err(
                "an '=== example user ===' has no '=== example assistant ===' after it".into(),
            );
        }
        let user = user.ok_or("no '=== user ===' section")?;
        let system = system.unwrap_or_default();
        let instructions = own_words(&system, &examples, &user);
        let compiled = Arc::new(Compiled::of(&system, &user));
        Ok(Self {
            name: name.to_owned(),
            hash: sha256_hex(text.as_bytes()),
            system,
            examples,
            user,
            instructions,
            compiled,
        })
    }

    /// The template's own words: every part, examples included, with every `{{ ... }}`,
    /// `{% ... %}` and `{# ... #}` left out (what the prompt says, without the material it
    /// shows and without its comments, such as the `{# refuses: CODE #}` marks that tie a
    /// sentence to the reject reason it states, never sent).
    pub fn instructions(&self) -> &str {
        &self.instructions
    }

    /// The conversation for `ctx`: the rendered system part (when there is one), the worked
    /// examples as they are written, and the rendered user part (strict: an unknown variable
    /// is an error). The parts are compiled once, when the file is read, in the template
    /// environment ([`crate::template::environment`]); `env` compiles a part that did not
    /// compile then, at each render, to report its error.
    pub fn render(
        &self,
        env: &minijinja::Environment<'_>,
        ctx: &minijinja::Value,
    ) -> Result<Vec<Message>, String> {
        let r = |compiled: &Option<minijinja::Environment<'static>>, src: &str| {
            match compiled {
                Some(c) => c.get_template(UNNAMED).and_then(|t| t.render(ctx)),
                None => env.render_str(src, ctx),
            }
            .map_err(|e| format!("{}: {e:#}", self.name))
        };
        let mut messages = Vec::with_capacity(2 + 2 * self.examples.len());
        let system = r(&self.compiled.system, &self.system)?;
        if !system.is_empty() {
            messages.push(Message::system(system));
        }
        for (q, a) in &self.examples {
            messages.push(Message::user(q.clone()));
            messages.push(Message::assistant(a.clone()));
        }
        messages.push(Message::user(r(&self.compiled.user, &self.user)?));
        Ok(messages)
    }
}

/// The template's own words (see [`Prompt::instructions`]).
fn own_words(system: &str, examples: &[(String, String)], user: &str) -> String {
    let mut out = String::new();
    let examples = examples.iter().flat_map(|(q, a)| [q.as_str(), a.as_str()]);
    for part in std::iter::once(system).chain(examples).chain([user]) {
        let mut rest = part;
        while let Some(i) = rest.find(['{']) {
            let tail = &rest[i..];
            let close = if tail.starts_with("{{") {
                "}}"
            } else if tail.starts_with("{%") {
                "%}"
            } else if tail.starts_with("{#") {
                "#}"
            } else {
                out.push_str(&rest[..=i]);
                rest = &rest[i + 1..];
                continue;
            };
            out.push_str(&rest[..i]);
            out.push(' ');
            rest = tail.find(close).map_or("", |j| &tail[j + 2..]);
        }
        out.push_str(rest);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roles(m: &[Message]) -> Vec<&str> {
        m.iter().map(|m| m.role.as_str()).collect()
    }

    #[test]
    fn worked_examples_are_sent_as_earlier_turns_word_for_word() {
        let text = "=== system ===\nBe brief.\n=== example user ===\nFacts: {x}\n=== example assistant ===\nA short answer.\n=== user ===\nFacts: {{ facts }}\n";
        let p = Prompt::parse("t.md", text).unwrap();
        assert_eq!(
            p.examples,
            vec![("Facts: {x}".into(), "A short answer.".into())]
        );
        let env = crate::template::environment();
        let m = p
            .render(
                &env,
                &minijinja::Value::from_serialize(serde_json::json!({"facts": "F"})),
            )
            .unwrap();
        assert_eq!(roles(&m), ["system", "user", "assistant", "user"]);
        assert_eq!(m[1].content, "Facts: {x}");
        assert_eq!(m[3].content, "Facts: F");
        // The examples are the template's own words: an answer copying them is echo.
        assert!(p.instructions().contains("A short answer."));
    }

    #[test]
    fn misplaced_sections_are_errors_naming_the_line() {
        for (text, want) in [
            (
                "=== user ===\nQ\n=== example user ===\nE\n=== example assistant ===\nA\n",
                "line 3: examples must come before",
            ),
            (
                "=== example user ===\nE\n=== user ===\nQ\n",
                "has no '=== example assistant ==='",
            ),
            (
                "=== example assistant ===\nA\n=== user ===\nQ\n",
                "line 1: '=== example assistant ===' without",
            ),
            (
                "=== user ===\nQ\n=== user ===\nR\n",
                "line 3: a second '=== user ==='",
            ),
            ("=== system ===\nS\n", "no '=== user ===' section"),
        ] {
            let e = Prompt::parse("t.md", text).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
    }
}
