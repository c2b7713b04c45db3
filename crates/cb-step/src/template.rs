//! The template environment shared by recipe expressions and prompts: strict about unknown
//! names, with the few text filters and functions they need.

use minijinja::{Environment, UndefinedBehavior, Value as JValue};

/// The environment recipes and prompts are evaluated in.
pub fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_keep_trailing_newline(false);
    env.add_filter("lcfirst", |s: String| lcfirst(&s));
    env.add_filter("ucfirst", |s: String| cb_model::text::ucfirst(&s));
    env.add_filter("trim_period", |s: String| {
        s.trim().trim_end_matches(['.', '!', '?']).to_owned()
    });
    env.add_filter("fill_what", fill_what);
    env.add_function("contains_answer", contains_answer);
    env.add_function("fuller_forms_of", |answer: JValue, answers: Vec<String>| {
        Ok(split_of("fuller_forms_of", &answer, answers)?.fuller)
    });
    env.add_function("forms_of", |answer: JValue, answers: Vec<String>| {
        let split = split_of("forms_of", &answer, answers)?;
        Ok([split.fuller, split.shorter].concat())
    });
    env.add_function("other_than", |answer: JValue, answers: Vec<String>| {
        Ok(split_of("other_than", &answer, answers)?.others)
    });
    env
}

/// The recipe functions' [`split_answers`], whose first argument must be one answer, a
/// string: a list or a number there (`fuller_forms_of(answers, answers)`) is an error, not a
/// text made of it.
fn split_of(
    function: &str,
    answer: &JValue,
    answers: Vec<String>,
) -> Result<AnswerSplit, minijinja::Error> {
    let answer = answer.as_str().ok_or_else(|| {
        minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!("{function}(answer, answers): the answer must be one string, not {answer}"),
        )
    })?;
    Ok(split_answers(answer, answers))
}

/// A dataset's accepted answers sorted by how they stand to one of them (`answer`), each
/// list in the dataset's order ([`split_answers`]).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct AnswerSplit {
    /// Fuller writings: answers that hold `answer` as whole words ("the Kingdom of the
    /// Netherlands" for "Netherlands", "Western Europe" for "Europe"). Recipes get them
    /// with `fuller_forms_of(answer, answers)`.
    pub fuller: Vec<String>,
    /// Shorter spans: answers that `answer` holds as whole words ("tidal" for "tidal
    /// delta", "complexity" for "complexity measure"), often a word the passage also uses
    /// for other things ("tidal currents", "time complexity").
    pub shorter: Vec<String>,
    /// Other answers, ones an annotator gave instead ("Germany" for "the Netherlands"):
    /// `other_than(answer, answers)`.
    pub others: Vec<String>,
}

/// Splits a dataset's accepted answers by how they agree with `answer`, after normalisation:
/// a fuller writing holds it as whole words, a shorter span is held by it, any other is
/// another answer. Empty answers and those equal to `answer` once normalised ("the
/// Netherlands" for "Netherlands") are in no list.
///
/// Recipes call the parts `fuller_forms_of(answer, answers)`, `forms_of(answer, answers)`
/// (fuller writings, then shorter spans) and `other_than(answer, answers)`. A recipe whose
/// rewrite replaces the answer's forms and refuses a rewrite that still names one maps
/// `aliases` to the fuller writings only: removing the answer removes every fuller writing
/// of it, while a shorter span ("tidal") would have to go from wherever the passage uses it
/// ("tidal currents"), facts the rewrite must keep. A shorter span never becomes an option
/// all the same: the `distractors` step refuses an option the answer holds.
pub fn split_answers(answer: &str, answers: Vec<String>) -> AnswerSplit {
    use cb_model::text::{contains_phrase, normalize};
    let own = normalize(answer);
    let mut split = AnswerSplit::default();
    for a in answers {
        let n = normalize(&a);
        if n.is_empty() || n == own {
            continue;
        }
        if contains_phrase(&a, answer) {
            split.fuller.push(a);
        } else if contains_phrase(answer, &a) {
            split.shorter.push(a);
        } else {
            split.others.push(a);
        }
    }
    split
}

/// `contains_answer(context, answer, aliases, ...)`: whether any of the given answers (each
/// argument a string or a list of strings) occurs in `context` as whole words, after
/// normalisation ([`cb_model::text::contains_phrase`]). Empty answers never occur.
fn contains_answer(context: String, answers: minijinja::value::Rest<JValue>) -> bool {
    let mut found = false;
    let mut check = |v: &JValue| {
        if let Some(s) = v.as_str() {
            found |= cb_model::text::contains_phrase(&context, s);
        }
    };
    for a in answers.iter() {
        match a.try_iter() {
            Ok(items) if a.as_str().is_none() => items.for_each(|x| check(&x)),
            _ => check(a),
        }
    }
    found
}

/// Lower-cases the first letter when the sentence starts with a function word ("The ice
/// melted" -> "the ice melted"), and leaves names and acronyms alone ("Tom", "DNA").
fn lcfirst(s: &str) -> String {
    const FUNCTION_WORDS: [&str; 24] = [
        "a", "an", "the", "this", "that", "these", "those", "it", "he", "she", "they", "we", "you",
        "his", "her", "their", "its", "our", "my", "some", "many", "most", "people", "there",
    ];
    let first = s.split(|c: char| !c.is_alphanumeric()).next().unwrap_or("");
    if !FUNCTION_WORDS.contains(&first.to_lowercase().as_str()) {
        return s.to_owned();
    }
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}

/// Turns a question ending in "what?" into a statement with `answer` in its place
/// ("... a security measure at a what?" -> "... a security measure at a mall."), or returns
/// "" when the question has no such ending.
fn fill_what(question: String, answer: String) -> String {
    let q = question.trim();
    let lower = q.to_lowercase();
    for ending in ["what?", "what ?"] {
        if lower.ends_with(ending) {
            let stem = q[..q.len() - ending.len()].trim_end();
            return format!("{stem} {answer}.");
        }
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_for_recipes() {
        assert_eq!(
            fill_what("It serves as a measure at a what?".into(), "mall".into()),
            "It serves as a measure at a mall."
        );
        assert_eq!(fill_what("Where is it?".into(), "x".into()), "");
        assert_eq!(lcfirst("The cat"), "the cat");
        assert_eq!(lcfirst("DNA is"), "DNA is");
        assert_eq!(lcfirst("Tom forgot"), "Tom forgot");
    }

    #[test]
    fn contains_answer_takes_strings_and_lists() {
        let env = environment();
        let ctx: serde_json::Value = serde_json::from_str(
            r#"{"c":"The Normans came from Normandy.","a":"normans","l":["x","Normandy"],"e":[]}"#,
        )
        .unwrap();
        let t = |e: &str| {
            let v = env
                .compile_expression(e)
                .unwrap()
                .eval(JValue::from_serialize(&ctx))
                .unwrap();
            serde_json::to_value(&v).unwrap()
        };
        assert_eq!(t("contains_answer(c, a)"), serde_json::Value::Bool(true));
        assert_eq!(
            t("contains_answer(c, 'Norman')"),
            serde_json::Value::Bool(false)
        );
        assert_eq!(
            t("contains_answer(c, 'zz', l)"),
            serde_json::Value::Bool(true)
        );
        assert_eq!(
            t("contains_answer(c, '', e)"),
            serde_json::Value::Bool(false)
        );
    }

    /// SQuAD's annotators sometimes answer differently: their answers that hold the first
    /// one are its fuller writings, those it holds its shorter spans, the rest other answers.
    /// The answer-splitting functions take one answer: a list in its place
    /// (`fuller_forms_of(answers, answers)`, a slip a careless recipe makes) is an error
    /// naming the function, where it used to be split as the list's text.
    #[test]
    fn an_answer_that_is_not_a_string_is_an_error() {
        let env = environment();
        let ctx = JValue::from_serialize(serde_json::json!({"l": ["Lyon", "the city of Lyon"]}));
        for f in ["fuller_forms_of", "forms_of", "other_than"] {
            let e = env
                .compile_expression(&format!("{f}(l, l)"))
                .unwrap()
                .eval(ctx.clone())
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!(
                    "{f}(answer, answers): the answer must be one string"
                )),
                "{e}"
            );
        }
    }

    #[test]
    fn accepted_answers_split_into_fuller_and_shorter_forms_and_other_answers() {
        let env = environment();
        let t = |e: &str, ctx: serde_json::Value| {
            let v = env
                .compile_expression(e)
                .unwrap()
                .eval(JValue::from_serialize(&ctx))
                .unwrap();
            serde_json::to_value(&v).unwrap()
        };
        let ctx = serde_json::json!({
            "a": "Netherlands",
            "l": ["Netherlands", "the Netherlands", "Germany", "the Kingdom of the Netherlands", "lands", ""],
        });
        // "the Netherlands" is "Netherlands" once normalised: no other writing.
        assert_eq!(
            t("fuller_forms_of(a, l)", ctx.clone()),
            serde_json::json!(["the Kingdom of the Netherlands"])
        );
        // "lands" is a word of the answer, not a shorter span ("Netherlands" is one word).
        assert_eq!(
            t("other_than(a, l)", ctx.clone()),
            serde_json::json!(["Germany", "lands"])
        );
        let ctx =
            serde_json::json!({"a": "tidal delta", "l": ["tidal delta", "tidal", "river delta"]});
        // A shorter span is no rewrite form, nor another answer.
        assert_eq!(
            t("fuller_forms_of(a, l)", ctx.clone()),
            serde_json::json!([])
        );
        assert_eq!(
            t("forms_of(a, l)", ctx.clone()),
            serde_json::json!(["tidal"])
        );
        assert_eq!(
            t("other_than(a, l)", ctx),
            serde_json::json!(["river delta"])
        );
        assert_eq!(
            split_answers(
                "Europe",
                vec!["Europe".into(), "three".into(), "Western Europe".into()]
            ),
            AnswerSplit {
                fuller: vec!["Western Europe".into()],
                shorter: vec![],
                others: vec!["three".into()],
            }
        );
        assert_eq!(
            split_answers("complexity measure", vec!["complexity".into()]).shorter,
            ["complexity"]
        );
    }
}
