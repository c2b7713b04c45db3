//! Prompt templates: one file per step and domain under `prompts/`, minijinja syntax, split
//! into a system and a user part by lines `=== system ===` and `=== user ===`.

use crate::files::Files;
use crate::StepError;
use sha2::{Digest, Sha256};

/// A loaded prompt template.
#[derive(Debug, Clone)]
pub struct Prompt {
    /// Path relative to the prompts folder, e.g. `kre/negative_explanation.md`.
    pub name: String,
    /// SHA-256 of the file's bytes.
    pub hash: String,
    pub system: String,
    pub user: String,
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
        let mut system = None;
        let mut user = None;
        let mut current: Option<&mut Option<String>> = None;
        for line in text.lines() {
            match line.trim() {
                "=== system ===" => current = Some(&mut system),
                "=== user ===" => current = Some(&mut user),
                _ => {
                    if let Some(slot) = current.as_deref_mut() {
                        let s = slot.get_or_insert_with(String::new);
                        s.push_str(line);
                        s.push('\n');
                    }
                }
            }
        }
        let user = user.ok_or("no '=== user ===' section")?;
        Ok(Self {
            name: name.to_owned(),
            hash: sha256_hex(text.as_bytes()),
            system: system.unwrap_or_default().trim().to_owned(),
            user: user.trim().to_owned(),
        })
    }

    /// The template's own words: both parts with every `{{ ... }}` and `{% ... %}` left out
    /// (what the prompt says, without the material it shows).
    pub fn instructions(&self) -> String {
        let mut out = String::new();
        for part in [&self.system, &self.user] {
            let mut rest = part.as_str();
            while let Some(i) = rest.find(['{']) {
                let tail = &rest[i..];
                let close = if tail.starts_with("{{") {
                    "}}"
                } else if tail.starts_with("{%") {
                    "%}"
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

    /// Renders both parts with `ctx` (strict: an unknown variable is an error).
    pub fn render(
        &self,
        env: &minijinja::Environment<'_>,
        ctx: &minijinja::Value,
    ) -> Result<(String, String), String> {
        let r = |src: &str| {
            env.render_str(src, ctx)
                .map_err(|e| format!("{}: {e:#}", self.name))
        };
        Ok((r(&self.system)?, r(&self.user)?))
    }
}
