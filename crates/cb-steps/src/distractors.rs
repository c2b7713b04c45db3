//! KRE reading comprehension (SQuAD v2.0, MuSiQue): three misleading options in the
//! answer's form; one of them becomes the negative answer.

use crate::prelude::*;
use crate::reading::{another_form, usable_aliases, GoldenAnswers};
use cb_model::{item_rng, letter, text};
use rand::seq::SliceRandom;
use rand::Rng;
use serde_json::{json, Value};
use std::collections::HashSet;

/// The step table's constructor.
pub fn build(spec: &StepSpec, prompts: &Files) -> Result<Box<dyn Step>, StepError> {
    let model = ModelStep::new(spec, prompts, Some("kre/distractors.md"), 120)?.with_schema(
        schema::object(&[("options", schema::array(schema::string(), 3, 3))]),
    );
    Ok(Model::boxed(model, Distractors))
}

/// Writes three misleading options, then `choices` (the answer and the three options in a
/// seeded order, purpose `option_order`), `answer` and `candidate` (letters) and
/// `negative_answer` (a seeded pick, purpose `negative_answer`, among the options that do
/// not already stand in the golden context: the rewrite puts the negative answer in the
/// answer's place, and one already there in another role would make the passage say it
/// twice, as MuSiQue's "614", Columbus's area code, made Cincinnati's. When all three stand
/// there the answer is refused, `negative_in_context`, and asked again with that reason).
///
/// Validation: a JSON object `{"options": [...]}` with exactly three non-empty options,
/// distinct after normalisation, none equal to the answer, one of its forms (`aliases`) or
/// another answer the dataset accepts (`other_answers`), and none the answer or a form of it
/// in another form ([`crate::reading::another_form`]: holding it or held by it, as whole
/// words, "Western Europe" or "Europe" for "Europe", or inside a word of three letters or
/// more, "Nederrijn" for "Rijn"; or on the same stem, "west" for "westward", "Germany" for
/// "German"), so a shorter span of the answer is never an option even where the recipe's
/// `aliases` leave it out, as SQuAD's does with "tidal" for "tidal delta"; and not every
/// option already in the passage (`negative_in_context`). The prompt states each rule; the prompt sees the forms as `aliases` and the other answers as
/// `other_answers`; an item with other answers carries the note `answers_disagree` in its
/// row's `warnings` column (the dataset's annotators answered differently: the question may
/// have two answers).
///
/// Offline rule: when the answer contains a number, the number is shifted (a year by 1 to
/// 15, a decade by 10 to 50, other numbers within about a third of their value), keeping the
/// words around it; otherwise three other golden answers of the recipe with the same shape
/// (digits or not, capitalised or not, word count) are drawn from the [`GoldenAnswers`] of
/// the build, leaving out answers that the question itself names; a drawn answer that is the
/// golden one in another form is passed over for the next (the draw itself is made as
/// before that rule, so only the rows where one came up changed).
#[derive(Debug)]
pub struct Distractors;

impl ModelBacked for Distractors {
    fn views(&self) -> Vec<cb_step::ViewSpec> {
        vec![cb_step::view::<GoldenAnswers>()]
    }

    async fn apply<'a>(
        &'a self,
        model: &'a ModelStep,
        item: &'a mut Item,
        ctx: &'a StepCtx<'_>,
    ) -> Result<(), StepFailure> {
        let answer = item.require(fields::ANSWER_TEXT)?.trim().to_owned();
        if answer.is_empty() {
            return Err(StepFailure::reject("no_answer", "answer_text is empty"));
        }
        let aliases = usable_aliases(&answer, item.require_texts(fields::ALIASES)?);
        // Optional: only SQuAD's recipe maps the answers its annotators disagree on.
        let others = usable_aliases(&answer, item.texts(fields::OTHER_ANSWERS));
        let taken = Taken::new(&answer, &aliases, &others);
        let offline = if ctx.needs_rule_answer() {
            let mut rng = item_rng(ctx.seed, ctx.recipe, &item.id, "distractors");
            json!({ "options": offline_options(item.require(fields::QUESTION)?, &taken, &ctx.corpus.view::<GoldenAnswers>().answers, &mut rng) })
                .to_string()
        } else {
            String::new()
        };
        let a = model.ask(
            item,
            &answer,
            [
                ("aliases", json!(aliases)),
                ("other_answers", json!(others)),
            ],
            offline,
        );
        let golden = item.require(fields::GOLDEN_CONTEXT)?.to_owned();
        let (options, eligible) = ask(ctx, item, a, |raw| {
            let options = validate_options(raw, &taken)?;
            let eligible = eligible(&options, &golden)?;
            Ok((options, eligible))
        })
        .await?;
        if !others.is_empty() {
            note_disagreement(item, &answer, &others);
        }
        let mut rng = item_rng(ctx.seed, ctx.recipe, &item.id, "negative_answer");
        let negative = eligible[rng.random_range(0..eligible.len())] + 1;
        let mut all = vec![answer];
        all.extend(options);
        let mut order: Vec<usize> = (0..all.len()).collect();
        order.shuffle(&mut item_rng(
            ctx.seed,
            ctx.recipe,
            &item.id,
            "option_order",
        ));
        let pos = |i: usize| order.iter().position(|&x| x == i).expect("in order");
        item.set(fields::NEGATIVE_ANSWER, all[negative].clone());
        item.set(fields::ANSWER, letter(pos(0)));
        item.set(fields::CANDIDATE, letter(pos(negative)));
        item.set(
            fields::CHOICES,
            order.iter().map(|&i| all[i].clone()).collect::<Vec<_>>(),
        );
        Ok(())
    }
}

/// The answers an option may not be: the answer and its forms (neither equal, nor the same
/// answer in another form, [`crate::reading::another_form`]) and the other answers the
/// dataset accepts (not equal).
#[derive(Debug)]
pub struct Taken {
    golden: Vec<String>,
    others: Vec<String>,
}

impl Taken {
    pub fn new(answer: &str, forms: &[String], others: &[String]) -> Self {
        Taken {
            golden: std::iter::once(answer)
                .chain(forms.iter().map(String::as_str))
                .map(str::to_owned)
                .collect(),
            others: others.to_vec(),
        }
    }

    /// Whether `option` equals, holds or is held by the answer or a form of it as whole
    /// words, or is another accepted answer (what the offline draw leaves out before it
    /// shuffles; [`Taken::refuses`] says more).
    fn holds_as_words(&self, option: &str) -> bool {
        let n = text::normalize(option);
        self.golden.iter().any(|g| {
            text::normalize(g) == n
                || text::contains_phrase(option, g)
                || text::contains_phrase(g, option)
        }) || self.others.iter().any(|o| text::normalize(o) == n)
    }

    /// Why `option` cannot be an option (the reason's text after `bad_options: `), if so.
    fn refuses(&self, option: &str) -> Option<String> {
        let n = text::normalize(option);
        for g in &self.golden {
            if text::normalize(g) == n {
                return Some(format!("\"{option}\" is the correct answer"));
            }
            if let Some(why) = another_form(option, g) {
                return Some(format!("{why}: it is not wrong"));
            }
        }
        self.others
            .iter()
            .find(|o| text::normalize(o) == n)
            .map(|_| format!("\"{option}\" is an answer the dataset accepts"))
    }
}

/// The options that may be the negative answer: those the golden passage does not already
/// name (options already in the passage stay options, never the negative answer). None is a
/// refusal of the writer's answer (`negative_in_context`), asked again with its reason.
fn eligible(options: &[String], golden: &str) -> Result<Vec<usize>, String> {
    let eligible: Vec<usize> = (0..options.len())
        .filter(|&i| !text::contains_phrase(golden, &options[i]))
        .collect();
    if eligible.is_empty() {
        return Err(format!(
            "negative_in_context: every option already stands in the passage ({}): at least one option must be something the passage does not name",
            options
                .iter()
                .map(|o| format!("\"{o}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(eligible)
}

/// Records on the item that its dataset accepts answers that are not forms of `answer`.
fn note_disagreement(item: &mut Item, answer: &str, others: &[String]) {
    let mut notes = item.texts(fields::WARNINGS);
    let listed: Vec<String> = others.iter().map(|o| format!("\"{o}\"")).collect();
    notes.push(format!(
        "answers_disagree: the dataset also accepts {} for this question, which is not a form of \"{answer}\"; never an option, and left as it is in the negative context",
        listed.join(", ")
    ));
    item.set(fields::WARNINGS, notes);
}

/// Checks a `distractors` answer; the reason says what is wrong.
pub fn validate_options(raw: &str, taken: &Taken) -> Result<Vec<String>, String> {
    let v = extract_json(raw).ok_or("bad_json: the answer holds no JSON object")?;
    let options: Vec<String> = v
        .get("options")
        .and_then(Value::as_array)
        .filter(|a| a.iter().all(Value::is_string))
        .ok_or(r#"bad_options: expected {"options": [three strings]}"#)?
        .iter()
        .filter_map(|o| o.as_str().map(|s| s.trim().to_owned()))
        .collect();
    if options.len() != 3 {
        return Err(format!(
            "bad_options: expected exactly 3 options, got {}",
            options.len()
        ));
    }
    let mut seen = HashSet::new();
    for o in &options {
        let n = text::normalize(o);
        if n.is_empty() {
            return Err("bad_options: an option is empty".into());
        }
        if let Some(why) = taken.refuses(o) {
            return Err(format!("bad_options: {why}"));
        }
        if !seen.insert(n) {
            return Err(format!("bad_options: \"{o}\" is given twice"));
        }
    }
    Ok(options)
}

/// The offline rule's three options (fewer when nothing fits; validation then rejects).
pub fn offline_options(
    question: &str,
    taken: &Taken,
    pool: &[String],
    rng: &mut impl Rng,
) -> Vec<String> {
    let answer = taken.golden[0].as_str();
    let mut seen: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    let mut push = |s: String, out: &mut Vec<String>| {
        if out.len() < 3 && taken.refuses(&s).is_none() && seen.insert(text::normalize(&s)) {
            out.push(s);
        }
    };
    for s in number_variants(answer, rng) {
        push(s, &mut out);
    }
    if out.len() == 3 {
        return out;
    }
    out.clear();
    let shape = Shape::of(answer);
    let mut tiers: [Vec<&String>; 4] = Default::default();
    for p in pool {
        // The draw is made among the answers that do not hold the golden ones as whole words
        // (the rule the released offline files were drawn with); a drawn answer that is the
        // golden one in another form ("west" for "westward") is passed over by `push`, so
        // that only the rows where one came up change.
        if taken.holds_as_words(p) || text::contains_phrase(question, p) {
            continue;
        }
        let s = Shape::of(p);
        let tier = if s == shape {
            0
        } else if (s.digits, s.capital) == (shape.digits, shape.capital) {
            1
        } else if s.digits == shape.digits {
            2
        } else {
            3
        };
        tiers[tier].push(p);
    }
    for mut t in tiers {
        t.shuffle(rng);
        for p in t {
            push(p.clone(), &mut out);
        }
    }
    out
}

/// The rough kind of an answer: whether it has digits, whether it starts with a capital
/// (a name), and its length in words (1, 2, 3, more).
#[derive(Debug, PartialEq, Eq)]
struct Shape {
    digits: bool,
    capital: bool,
    words: usize,
}

impl Shape {
    fn of(s: &str) -> Self {
        let t = s.trim().trim_start_matches(|c: char| !c.is_alphanumeric());
        let t = ["the ", "The ", "a ", "A ", "an ", "An "]
            .iter()
            .find_map(|a| t.strip_prefix(a))
            .unwrap_or(t);
        Self {
            digits: s.chars().any(|c| c.is_ascii_digit()),
            capital: t.chars().next().is_some_and(char::is_uppercase),
            words: s.split_whitespace().count().min(4),
        }
    }
}

/// A number in an answer: its byte span, and how it is written.
struct NumberSpan {
    start: usize,
    end: usize,
    commas: bool,
    decimals: usize,
}

fn number_spans(s: &str) -> Vec<NumberSpan> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() || (i > 0 && b[i - 1].is_ascii_alphabetic()) {
            i += 1;
            continue;
        }
        let start = i;
        let (mut commas, mut decimals) = (false, 0);
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        // Thousands groups: ",ddd".
        while i + 3 < b.len()
            && b[i] == b','
            && b[i + 1..i + 4].iter().all(u8::is_ascii_digit)
            && b.get(i + 4).is_none_or(|c| !c.is_ascii_digit())
        {
            commas = true;
            i += 4;
        }
        if i + 1 < b.len() && b[i] == b'.' && b[i + 1].is_ascii_digit() {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
                decimals += 1;
            }
        }
        out.push(NumberSpan {
            start,
            end: i,
            commas,
            decimals,
        });
    }
    out
}

fn with_commas(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::new();
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Answers with the answer's number (its year when it has one) shifted; empty when the
/// answer has no number.
pub fn number_variants(answer: &str, rng: &mut impl Rng) -> Vec<String> {
    let spans = number_spans(answer);
    let is_year = |n: &NumberSpan| {
        n.end - n.start == 4
            && !n.commas
            && n.decimals == 0
            && answer[n.start..n.end]
                .parse::<u32>()
                .is_ok_and(|y| (1000..=2100).contains(&y))
    };
    let Some(n) = spans.iter().find(|n| is_year(n)).or(spans.first()) else {
        return Vec::new();
    };
    let digits: String = answer[n.start..n.end].replace(',', "");
    let mut values: Vec<String> = Vec::new();
    if n.decimals > 0 {
        let Ok(x) = digits.parse::<f64>() else {
            return Vec::new();
        };
        let mut factors = [0.5, 0.6, 0.75, 0.8, 1.2, 1.25, 1.5, 2.0];
        factors.shuffle(rng);
        for f in factors {
            values.push(format!("{:.*}", n.decimals, x * f));
        }
    } else {
        let Ok(x) = digits.parse::<u64>() else {
            return Vec::new();
        };
        let mut shifts: Vec<i64> = if is_year(n) {
            let decade = x % 10 == 0 && answer[n.end..].starts_with('s');
            if decade {
                (-5..=5).filter(|&d| d != 0).map(|d| d * 10).collect()
            } else {
                (-15..=15).filter(|&d| d != 0).collect()
            }
        } else {
            let r = (x / 3).max(2) as i64;
            (-r..=r + 3).filter(|&d| d != 0).collect()
        };
        shifts.shuffle(rng);
        for d in shifts {
            let Some(v) = x.checked_add_signed(d) else {
                continue;
            };
            if x > 0 && v == 0 {
                continue;
            }
            values.push(if n.commas {
                with_commas(v)
            } else {
                v.to_string()
            });
        }
    }
    let own = &answer[n.start..n.end];
    values
        .into_iter()
        .filter(|v| v != own)
        .map(|v| format!("{}{v}{}", &answer[..n.start], &answer[n.end..]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng() -> impl Rng {
        item_rng(42, "kre-squad", "x", "distractors")
    }

    #[test]
    fn numbers_are_shifted_keeping_the_words() {
        let v = number_variants("16 December 1775", &mut rng());
        assert!(v.len() >= 3);
        for x in &v {
            assert!(x.starts_with("16 December 17"), "{x}");
            assert_ne!(x, "16 December 1775");
        }
        let d = number_variants("the 1990s", &mut rng());
        assert!(
            d.iter()
                .all(|x| x.starts_with("the ") && x.ends_with("0s") && x != "the 1990s"),
            "{d:?}"
        );
        let f = number_variants("6.8 inches", &mut rng());
        assert!(
            f.iter().all(|x| x.ends_with(" inches") && x.contains('.')),
            "{f:?}"
        );
        let c = number_variants("about 12,000 people", &mut rng());
        assert!(c.iter().take(3).all(|x| x.contains(',')), "{c:?}");
        assert!(number_variants("Mount Everest", &mut rng()).is_empty());
    }

    #[test]
    fn pool_answers_of_the_same_shape_come_first() {
        let pool: Vec<String> = [
            "Rollo",
            "Normandy",
            "in 911",
            "the Franks",
            "Paris",
            "William the Conqueror",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let taken = Taken::new("Richard", &[], &[]);
        let o = offline_options("Who was Emma's brother?", &taken, &pool, &mut rng());
        assert_eq!(o.len(), 3);
        for x in &o {
            assert!(
                ["Rollo", "Normandy", "Paris"].contains(&x.as_str()),
                "{o:?}"
            );
        }
    }

    #[test]
    fn options_are_validated() {
        let x = Taken::new("x", &[], &[]);
        let ok = validate_options(r#"{"options": ["a b", "c", "d"]}"#, &x).unwrap();
        assert_eq!(ok.len(), 3);
        let e = validate_options(r#"{"options": ["a", "c"]}"#, &x).unwrap_err();
        assert!(e.starts_with("bad_options"), "{e}");
        let e = validate_options(r#"{"options": ["The X", "c", "d"]}"#, &x).unwrap_err();
        assert!(e.contains("correct answer"), "{e}");
        let with_form = Taken::new("x", &["Y".into()], &[]);
        let e = validate_options(r#"{"options": ["y", "c", "d"]}"#, &with_form).unwrap_err();
        assert!(e.contains("correct answer"), "{e}");
        let e = validate_options(r#"{"options": ["c", "C.", "d"]}"#, &x).unwrap_err();
        assert!(e.contains("twice"), "{e}");
        assert!(validate_options("{\"options\": [", &x)
            .unwrap_err()
            .starts_with("bad_json"));
    }

    /// An option that holds the answer, or that the answer holds, is not wrong: refused as
    /// `bad_options`, also against the answer's forms; another answer the dataset accepts is
    /// refused as it is written, and what merely shares a word is fine.
    #[test]
    fn an_option_holding_or_held_by_the_answer_is_refused() {
        let europe = Taken::new("Europe", &["western Europe".into()], &["Germany".into()]);
        let v = |o: &str| {
            validate_options(
                &json!({ "options": [o, "Asia", "Africa"] }).to_string(),
                &europe,
            )
        };
        let e = v("Northern Europe").unwrap_err();
        assert!(
            e.starts_with("bad_options") && e.contains("holds the correct answer \"Europe\""),
            "{e}"
        );
        let e = v("Western").unwrap_err();
        assert!(
            e.contains("part of the correct answer \"western Europe\""),
            "{e}"
        );
        let e = v("germany").unwrap_err();
        assert!(e.contains("an answer the dataset accepts"), "{e}");
        assert!(v("East Germany").is_ok());
        assert!(v("Eurasia").is_ok());
        // A shorter span SQuAD's annotators gave ("tidal" for "tidal delta") is no form in
        // the recipe's `aliases`, and still never an option.
        let delta = Taken::new("tidal delta", &[], &[]);
        let e = validate_options(r#"{"options": ["tidal", "river delta", "inland"]}"#, &delta)
            .unwrap_err();
        assert!(
            e.contains("part of the correct answer \"tidal delta\""),
            "{e}"
        );
        // The offline rule keeps to the same rule.
        let pool: Vec<String> = [
            "Europe and Asia",
            "the West",
            "Oceania",
            "South America",
            "Antarctica",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let o = offline_options("Where is the Rhine?", &europe, &pool, &mut rng());
        assert!(o.iter().all(|x| europe.refuses(x).is_none()), "{o:?}");
        assert!(!o.contains(&"Europe and Asia".to_owned()), "{o:?}");
    }
}
