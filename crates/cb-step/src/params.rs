//! What a step kind takes in a recipe: each kind declares its parameters (key, type, default,
//! meaning), so a recipe is checked before any work: an unknown key (a near miss suggested)
//! or a value of the wrong type is a configuration error, never a default used in silence.

use crate::StepSpec;

/// The type a parameter's value must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    Text,
    Bool,
    Integer,
    /// An integer or a float.
    Number,
    /// A list of strings (`readers = ["a", "b"]`).
    TextList,
}

impl ParamType {
    fn name(self) -> &'static str {
        match self {
            Self::Text => "a string",
            Self::Bool => "true or false",
            Self::Integer => "an integer",
            Self::Number => "a number",
            Self::TextList => "a list of strings",
        }
    }

    fn accepts(self, v: &toml::Value) -> bool {
        match self {
            Self::Text => v.is_str(),
            Self::Bool => v.is_bool(),
            Self::Integer => v.is_integer(),
            Self::Number => v.is_integer() || v.is_float(),
            Self::TextList => v
                .as_array()
                .is_some_and(|a| a.iter().all(toml::Value::is_str)),
        }
    }
}

/// One parameter of a step kind.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    pub key: &'static str,
    pub ty: ParamType,
    /// The value used when the recipe gives none, as a reader would write it.
    pub default: &'static str,
    pub meaning: &'static str,
}

const fn p(
    key: &'static str,
    ty: ParamType,
    default: &'static str,
    meaning: &'static str,
) -> Param {
    Param {
        key,
        ty,
        default,
        meaning,
    }
}

/// What every recipe step entry may hold.
pub const COMMON_PARAMS: &[Param] = &[
    p(
        "kind",
        ParamType::Text,
        "(required)",
        "Which step: a kind of the step table.",
    ),
    p(
        "name",
        ParamType::Text,
        "the kind",
        "The step's name in manifests and rejects.",
    ),
];

/// The parameters of every step that asks the model ([`crate::ModelStep`]).
pub const MODEL_PARAMS: &[Param] = &[
    p("prompt", ParamType::Text, "the step's own", "Prompt template, a path under prompts/."),
    p("temperature", ParamType::Number, "0", "Sampling temperature."),
    p("max_tokens", ParamType::Integer, "the step's own", "Longest answer, in tokens."),
    p("top_p", ParamType::Number, "none", "Nucleus sampling (sent only when set)."),
    p("seed", ParamType::Integer, "none", "Sampling seed sent with the request."),
    p("retries_on_invalid", ParamType::Integer, "1", "How many more times a question is asked after an unusable answer."),
    p("on_invalid", ParamType::Text, "\"repair\"", "\"repair\": send the answer back with the reason; \"resample\": ask afresh with the next seed and the reason, without the answer (needs temperature > 0)."),
];

/// The parameter `key` among `params` (every slice of a kind's declaration).
fn find<'a>(params: &[&'a [Param]], key: &str) -> Option<&'a Param> {
    params
        .iter()
        .flat_map(|ps| ps.iter())
        .find(|p| p.key == key)
}

/// Why a step entry is refused: the key at fault (for the line in the recipe) and the
/// sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamError {
    pub key: Option<String>,
    pub message: String,
}

/// The known key closest to `key`: at most two edits away (a typo) or one being the other
/// with a stray character at either end.
fn near_miss<'a>(key: &str, known: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    known
        .map(|k| (edit_distance(key, k), k))
        .filter(|(d, k)| *d <= 2 || key.trim_matches('_') == *k)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance over characters (keys are short).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Checks a step entry against its kind's parameters: every key known, every value of its
/// type.
pub fn check(spec: &StepSpec, params: &[&[Param]]) -> Result<(), ParamError> {
    let all = || {
        std::iter::once(COMMON_PARAMS)
            .chain(params.iter().copied())
            .flat_map(|ps| ps.iter())
    };
    for (key, value) in &spec.params {
        let Some(param) = find(params, key) else {
            let known: Vec<&str> = all().map(|p| p.key).collect();
            let hint = near_miss(key, known.iter().copied())
                .map(|k| format!("did you mean `{k}`? "))
                .unwrap_or_default();
            return Err(ParamError {
                key: Some(key.clone()),
                message: format!(
                    "unknown parameter `{key}` of step kind {}; {hint}known: {}",
                    spec.kind,
                    known.join(", ")
                ),
            });
        };
        if !param.ty.accepts(value) {
            return Err(ParamError {
                key: Some(key.clone()),
                message: format!(
                    "parameter `{key}` must be {}, not {}",
                    param.ty.name(),
                    value.type_str()
                ),
            });
        }
    }
    Ok(())
}

/// A kind's parameters as a table for the terminal (`recipes --explain KIND`).
pub fn explain(kind: &str, params: &[&[Param]]) -> String {
    let mut s = format!("step kind {kind}: parameters\n");
    for p in std::iter::once(COMMON_PARAMS)
        .chain(params.iter().copied())
        .flat_map(|ps| ps.iter())
    {
        s.push_str(&format!(
            "  {:<22} {:<14} default {:<16} {}\n",
            p.key,
            p.ty.name(),
            p.default,
            p.meaning
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWN: &[Param] = &[p(
        "max_words",
        ParamType::Integer,
        "80",
        "Longest explanation.",
    )];

    fn spec(toml: &str) -> StepSpec {
        toml::from_str(&format!("kind = \"demo\"\n{toml}")).unwrap()
    }

    #[test]
    fn a_misspelt_key_is_refused_with_the_near_miss() {
        let e = check(&spec("max_tokns = 120"), &[MODEL_PARAMS, OWN]).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("max_tokns"));
        assert!(
            e.message.contains("did you mean `max_tokens`?"),
            "{}",
            e.message
        );
        let e = check(&spec("retries_on_invalid_ = 3"), &[MODEL_PARAMS]).unwrap_err();
        assert!(
            e.message.contains("did you mean `retries_on_invalid`?"),
            "{}",
            e.message
        );
        let e = check(&spec("colour = 3"), &[MODEL_PARAMS]).unwrap_err();
        assert!(!e.message.contains("did you mean"), "{}", e.message);
        assert!(
            e.message.contains("known: kind, name, prompt"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_value_of_the_wrong_type_is_refused() {
        let e = check(&spec("max_words = \"60\""), &[OWN]).unwrap_err();
        assert_eq!(
            e.message,
            "parameter `max_words` must be an integer, not string"
        );
        assert!(check(&spec("temperature = 1"), &[MODEL_PARAMS]).is_ok());
        assert!(check(&spec("temperature = 0.3\nname = \"x\""), &[MODEL_PARAMS]).is_ok());
    }
}
