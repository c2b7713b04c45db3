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
    env.add_function("forms_of", |answer: String, answers: Vec<String>| {
        split_answers(&answer, answers).0
    });
    env.add_function("other_than", |answer: String, answers: Vec<String>| {
        split_answers(&answer, answers).1
    });
    env
}

/// Splits a dataset's accepted answers by whether they agree with `answer`: a form of it
/// holds it or is held by it as whole words, after normalisation ("the Netherlands" for
/// "Netherlands", "Western Europe" for "Europe"); any other is another answer, one an
/// annotator gave instead ("Germany" for "the Netherlands"). Empty answers and those equal
/// to `answer` once normalised are in neither list. Recipes call the two halves
/// `forms_of(answer, answers)` and `other_than(answer, answers)`.
pub fn split_answers(answer: &str, answers: Vec<String>) -> (Vec<String>, Vec<String>) {
    use cb_model::text::{contains_phrase, normalize};
    let own = normalize(answer);
    let (mut forms, mut others) = (Vec::new(), Vec::new());
    for a in answers {
        let n = normalize(&a);
        if n.is_empty() || n == own {
            continue;
        }
        if contains_phrase(&a, answer) || contains_phrase(answer, &a) {
            forms.push(a);
        } else {
            others.push(a);
        }
    }
    (forms, others)
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
    /// one or are held by it are its forms, the rest other answers.
    #[test]
    fn accepted_answers_split_into_forms_and_other_answers() {
        let env = environment();
        let ctx = serde_json::json!({
            "a": "the Netherlands",
            "l": ["the Netherlands", "Netherlands", "Germany", "the Netherlands and Germany", ""],
        });
        let t = |e: &str| {
            let v = env
                .compile_expression(e)
                .unwrap()
                .eval(JValue::from_serialize(&ctx))
                .unwrap();
            serde_json::to_value(&v).unwrap()
        };
        assert_eq!(
            t("forms_of(a, l)"),
            serde_json::json!(["the Netherlands and Germany"])
        );
        assert_eq!(t("other_than(a, l)"), serde_json::json!(["Germany"]));
        let (forms, others) =
            split_answers("Europe", vec!["Western Europe".into(), "three".into()]);
        assert_eq!(
            (forms, others),
            (vec!["Western Europe".to_owned()], vec!["three".to_owned()])
        );
    }
}
