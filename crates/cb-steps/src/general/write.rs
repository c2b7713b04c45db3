//! `write_text`: a text the model writes from a prompt file into a named field (an
//! evidence in a style, a description), held to the checks the recipe names.
//!
//! Validation (besides [`cb_step::ask::common_checks`]: `truncated`, `prompt_echo`,
//! `other_language`): not empty (`empty`), not a refusal (`refusal`), at most `max_words`
//! words (`too_long`), naming the value of every field of `mention` (`no_mention`), and
//! naming no value of a field of `must_not_mention` (`names_avoided`: the true object, or one
//! of its aliases, in a conflicting evidence), looked for in the text with the values it must
//! mention set aside (a subject "Paris Hilton" does not name the object "Paris"). Each is
//! certain from the words: a reject, asked again as `on_invalid` says.
//!
//! Offline rule: the recipe's `offline_template`, a minijinja template over the item's
//! fields; the build's manifest and the recipe's rows say the text is the rules'.
//!
//! The prompt sees the item's fields and `max_words`, `mention_values` and
//! `avoid_values` (the texts of the fields it must and must not name).

use super::compose::{own_environment, render};
use super::{field_list, fields_of, required, texts_of};
use crate::prelude::*;
use cb_model::text;
use serde_json::json;

/// The parameters of its own (besides the model's).
pub const PARAMS: &[Param] = &[
    Param { key: "into", ty: ParamType::Text, default: "(required)", meaning: "The field written with the text." },
    Param { key: "mention", ty: ParamType::TextList, default: "[]", meaning: "Fields whose value the text must name (else the reject `no_mention`)." },
    Param { key: "must_not_mention", ty: ParamType::TextList, default: "[]", meaning: "Fields (strings or lists of strings, such as aliases) none of whose values the text may name (else the reject `names_avoided`)." },
    Param { key: "reads", ty: ParamType::TextList, default: "[]", meaning: "Other fields the prompt or the offline template shows (declared for the recipe's chain check)." },
    Param { key: "max_words", ty: ParamType::Integer(Range::whole(1, 10_000)), default: "250", meaning: "Longest text, in words (else the reject `too_long`)." },
    Param { key: "offline_template", ty: ParamType::Text, default: "(required)", meaning: "The offline rule's text: a minijinja template over the item's fields." },
];

/// The fields `write_text` reads (those it must and must not mention, and `reads`) and
/// writes.
pub fn fields(spec: &StepSpec) -> cb_step::StepFields {
    fields_of(spec, &["mention", "must_not_mention", "reads"], &["into"])
}

/// The step table's constructor.
pub fn build(spec: &StepSpec, prompts: &Files) -> Result<Box<dyn Step>, StepError> {
    let model = ModelStep::new(spec, prompts, None, 600)?;
    let template = required(spec, "offline_template")?;
    let offline = own_environment(&template).ok_or_else(|| {
        StepError::Config(format!(
            "step {}: `offline_template` does not compile",
            spec.name()
        ))
    })?;
    Ok(Model::boxed(
        model,
        WriteText {
            into: required(spec, "into")?,
            mention: field_list(spec, "mention"),
            must_not_mention: field_list(spec, "must_not_mention"),
            max_words: spec.int("max_words").map_or(250, |n| n as usize),
            offline,
        },
    ))
}

/// `write_text` (see the module documentation).
#[derive(Debug)]
pub struct WriteText {
    into: String,
    mention: Vec<String>,
    must_not_mention: Vec<String>,
    max_words: usize,
    offline: minijinja::Environment<'static>,
}

/// What a text is held to: the values it must name and those it must not.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    pub mention: Vec<String>,
    pub avoid: Vec<String>,
    pub max_words: usize,
}

impl Rules {
    /// Why `raw` cannot be used, the first rule it breaks (`code: detail`); else its text.
    pub fn check(&self, raw: &str) -> Result<String, String> {
        let t = clean_text_answer(raw);
        if t.is_empty() {
            return Err("empty: the answer is empty".into());
        }
        if text::looks_like_refusal(&t) {
            return Err("refusal: the answer declines the task".into());
        }
        let words = t.split_whitespace().count();
        if words > self.max_words {
            return Err(format!(
                "too_long: {words} words, at most {} allowed",
                self.max_words
            ));
        }
        if let Some(m) = self.mention.iter().find(|m| !text::contains_phrase(&t, m)) {
            return Err(format!("no_mention: it must name \"{m}\""));
        }
        // The values it must name set aside: a subject may hold an avoided word.
        let mut rest = t.clone();
        for m in &self.mention {
            rest = text::replace_words(&rest, m, " ").0;
        }
        if let Some(a) = self.avoid.iter().find(|a| text::names(&rest, a)) {
            return Err(format!(
                "names_avoided: it names \"{a}\", which this text must not name"
            ));
        }
        Ok(t)
    }
}

impl WriteText {
    fn rules(&self, item: &Item) -> Rules {
        let values = |fields: &[String]| -> Vec<String> {
            let mut out: Vec<String> = fields
                .iter()
                .flat_map(|f| texts_of(item, f))
                .map(|v| v.trim().to_owned())
                .filter(|v| !text::normalize(v).is_empty())
                .collect();
            out.dedup();
            out
        };
        let mention = values(&self.mention);
        // A value it must name is never one it must avoid (an alias equal to the subject).
        let avoid = values(&self.must_not_mention)
            .into_iter()
            .filter(|a| {
                mention
                    .iter()
                    .all(|m| text::normalize(m) != text::normalize(a))
            })
            .collect();
        Rules {
            mention,
            avoid,
            max_words: self.max_words,
        }
    }
}

impl ModelBacked for WriteText {
    async fn apply<'a>(
        &'a self,
        model: &'a ModelStep,
        item: &'a mut Item,
        ctx: &'a StepCtx<'_>,
    ) -> Result<(), StepFailure> {
        let rules = self.rules(item);
        let offline = if ctx.needs_rule_answer() {
            render(&self.offline, item).map_err(|e| {
                StepFailure::Fatal(StepError::Config(format!(
                    "{}: `offline_template` does not render for item {}: {e}",
                    model.name, item.id
                )))
            })?
        } else {
            String::new()
        };
        let a = model.ask(
            item,
            "",
            [
                ("max_words", json!(self.max_words)),
                ("mention_values", json!(rules.mention)),
                ("avoid_values", json!(rules.avoid)),
            ],
            offline,
        );
        let text = ask(ctx, item, a, |raw| rules.check(raw)).await?;
        item.set(&self.into, text);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> Rules {
        Rules {
            mention: vec!["Paris Hilton".into(), "Lyon".into()],
            avoid: vec!["Paris".into(), "City of Light".into()],
            max_words: 30,
        }
    }

    #[test]
    fn each_rule_refuses_with_its_code() {
        let r = rules();
        let ok = "Paris Hilton was born in Lyon, the records of the city hall show.";
        assert_eq!(r.check(ok).unwrap(), ok);
        let code = |t: &str| {
            r.check(t)
                .unwrap_err()
                .split(':')
                .next()
                .unwrap()
                .to_owned()
        };
        assert_eq!(code("  "), "empty");
        assert_eq!(code("I'm sorry, but I can't help with that."), "refusal");
        assert_eq!(code(&"Paris Hilton Lyon word ".repeat(10)), "too_long");
        assert_eq!(
            code("Paris Hilton was born in a French city."),
            "no_mention"
        );
        assert_eq!(
            code("Paris Hilton was born in Lyon, not in Paris as many think."),
            "names_avoided"
        );
        assert_eq!(
            code("Paris Hilton, born in Lyon, grew up near the City of Light."),
            "names_avoided"
        );
        // A short code is named only in its capitals.
        let r = Rules {
            avoid: vec!["IN".into()],
            ..rules()
        };
        assert!(r.check("Paris Hilton was born in Lyon.").is_ok());
        assert!(r.check("Paris Hilton was born in Lyon, IN.").is_err());
    }
}
