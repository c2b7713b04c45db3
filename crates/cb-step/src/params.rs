//! What a step kind takes in a recipe: each kind declares its parameters (key, type, default,
//! meaning), so a recipe is checked before any work: an unknown key (a near miss suggested)
//! or a value of the wrong type is a configuration error, never a default used in silence;
//! a number outside its parameter's range (too large, negative, NaN, infinite, a zero that
//! means nothing) is one too, the range said.

use crate::StepSpec;
use cb_llm::ranges;
use cb_model::Range;

/// The type a parameter's value must have; a number's with its range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ParamType {
    Text,
    Bool,
    /// A whole number in its range.
    Integer(Range),
    /// An integer or a float, in its range.
    Number(Range),
    /// A list of strings (`readers = ["a", "b"]`).
    TextList,
}

impl ParamType {
    /// The type in words (a number's range included).
    pub fn name(self) -> String {
        match self {
            Self::Text => "a string".into(),
            Self::Bool => "true or false".into(),
            Self::Integer(r) | Self::Number(r) => r.to_string(),
            Self::TextList => "a list of strings".into(),
        }
    }

    /// The type in a word or two, for the table of `recipes --explain`.
    fn short(self) -> &'static str {
        match self {
            Self::Text => "a string",
            Self::Bool => "true or false",
            Self::Integer(_) => "an integer",
            Self::Number(_) => "a number",
            Self::TextList => "a list of strings",
        }
    }

    /// `Ok` when `v` has this type; `Err(None)` for another type, `Err(Some(why))` for a
    /// number outside the range.
    fn check(self, v: &toml::Value) -> Result<(), Option<String>> {
        let ok = |b: bool| if b { Ok(()) } else { Err(None) };
        match (self, v) {
            (Self::Text, _) => ok(v.is_str()),
            (Self::Bool, _) => ok(v.is_bool()),
            (Self::Integer(r), toml::Value::Integer(i)) => {
                r.check_int(*i).map(|_| ()).map_err(Some)
            }
            (Self::Number(r), toml::Value::Integer(i)) => {
                r.check_real(*i as f64).map(|_| ()).map_err(Some)
            }
            (Self::Number(r), toml::Value::Float(f)) => r.check_real(*f).map(|_| ()).map_err(Some),
            (Self::Integer(_) | Self::Number(_), _) => Err(None),
            (Self::TextList, _) => ok(v
                .as_array()
                .is_some_and(|a| a.iter().all(toml::Value::is_str))),
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

/// `retries_on_invalid`: questions asked again after an unusable answer (0: none).
pub const RETRIES_ON_INVALID: Range = Range::whole(0, 20);

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
    p("temperature", ParamType::Number(ranges::TEMPERATURE), "0", "Sampling temperature."),
    p("max_tokens", ParamType::Integer(ranges::ANSWER_TOKENS), "the step's own", "Longest answer, in tokens."),
    p("top_p", ParamType::Number(ranges::TOP_P), "none", "Nucleus sampling (sent only when set)."),
    p("seed", ParamType::Integer(ranges::SEED), "none", "Sampling seed sent with the request."),
    p("retries_on_invalid", ParamType::Integer(RETRIES_ON_INVALID), "1", "How many more times a question is asked after an unusable answer."),
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
        match param.ty.check(value) {
            Ok(()) => {}
            Err(None) => {
                return Err(ParamError {
                    key: Some(key.clone()),
                    message: format!(
                        "parameter `{key}` must be {}, not {}",
                        param.ty.name(),
                        value.type_str()
                    ),
                })
            }
            Err(Some(why)) => {
                return Err(ParamError {
                    key: Some(key.clone()),
                    message: format!("parameter `{key}`: {why}"),
                })
            }
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
        let range = match p.ty {
            ParamType::Integer(r) | ParamType::Number(r) => format!(" Range: {r}."),
            _ => String::new(),
        };
        s.push_str(&format!(
            "  {:<22} {:<14} default {:<16} {}{range}\n",
            p.key,
            p.ty.short(),
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
        ParamType::Integer(Range::whole(1, 500)),
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
            "parameter `max_words` must be a whole number from 1 to 500, not string"
        );
        assert!(check(&spec("temperature = 1"), &[MODEL_PARAMS]).is_ok());
        assert!(check(&spec("temperature = 0.3\nname = \"x\""), &[MODEL_PARAMS]).is_ok());
    }

    #[test]
    fn a_number_outside_its_range_is_refused_with_the_range() {
        for (entry, said) in [
            (
                "max_words = 0",
                "parameter `max_words`: 0 is too small: must be a whole number from 1 to 500",
            ),
            ("max_words = 501", "501 is too large"),
            ("max_words = -3", "-3 is negative"),
            (
                "temperature = nan",
                "NaN is not a number: must be a number from 0 to 2",
            ),
            ("temperature = inf", "inf is infinite"),
            ("temperature = -0.5", "-0.5 is negative"),
            ("top_p = 0", "must be a number above 0, at most 1"),
            ("max_tokens = 9223372036854775807", "too large"),
            ("seed = -1", "-1 is negative"),
        ] {
            let e = check(&spec(entry), &[MODEL_PARAMS, OWN]).unwrap_err();
            assert!(e.message.contains(said), "{entry}: {}", e.message);
            assert_eq!(e.key.as_deref(), entry.split(" =").next());
        }
        assert!(check(
            &spec("temperature = 2\ntop_p = 1\nmax_words = 500"),
            &[MODEL_PARAMS, OWN]
        )
        .is_ok());
    }
}
