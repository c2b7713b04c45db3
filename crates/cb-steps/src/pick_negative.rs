//! KRE commonsense (MRC with a negative answer): the negative answer, one of the dataset's
//! wrong options: the one a model judges most believable without the context (`how =
//! "believable"`, the default), or KRE's seeded pick (`how = "random"`, what the recipes
//! that regenerate the released files keep).

use crate::prelude::*;
use cb_model::{item_rng, letter, letter_index, text};
use cb_step::params::MODEL_PARAMS;
use rand::Rng;
use serde_json::{json, Value};

/// The parameters of its own (besides the model's, which only `how = "believable"` takes).
pub const PARAMS: &[Param] = &[Param {
    key: "how",
    ty: ParamType::Text,
    default: "\"believable\"",
    meaning: "\"believable\": the model picks the wrong option most believable without the context, or refuses the row (`no_believable_negative`); offline, the seeded pick stands, noted `random_pick`. \"random\": KRE's seeded pick among the wrong options (no model).",
}];

/// The prompt the believable pick asks by default.
pub const BELIEVABLE_PROMPT: &str = "kre/believable_negative.md";

/// The step table's constructor: KRE's seeded pick (`how = "random"`, a rule step that takes
/// no model parameter) or the believable pick (`how = "believable"`, a model step).
pub fn build(spec: &StepSpec, prompts: &Files) -> Result<Box<dyn Step>, StepError> {
    let name = spec.name().to_owned();
    match spec.str("how").as_deref() {
        None | Some("believable") => {
            let model = ModelStep::new(spec, prompts, Some(BELIEVABLE_PROMPT), 40)?
                .with_schema(schema::object(&[("option", schema::string())]));
            Ok(Model::boxed(model, Believable))
        }
        Some("random") => {
            if let Some(p) = MODEL_PARAMS
                .iter()
                .find(|p| spec.params.contains_key(p.key))
            {
                return Err(StepError::Config(format!(
                    "step {name}: `{}` applies only to a model's pick, and `how = \"random\"` asks none: remove it, or set `how = \"believable\"`",
                    p.key
                )));
            }
            Ok(Box::new(PickNegative { name }))
        }
        Some(other) => Err(StepError::Config(format!(
            "step {name}: unknown `how = {other:?}`; known: \"believable\", \"random\""
        ))),
    }
}

/// Picks the negative answer uniformly among the wrong choices (those that are not the
/// golden one written again), with the item's own generator (purpose `negative_answer`).
/// Writes `candidate` (letter) and `negative_answer`.
///
/// A wrong choice that would not make a conflict that holds together is passed over while
/// another is left: one that already stands in the golden context (`negative_in_context`:
/// the golden context would name it too) and one that holds the golden answer or is held by
/// it (`negative_overlaps_answer`: "the flowers withered" against "because there was no
/// sunshine, the flowers withered" supports both), each compared as whole words, case
/// aside. KRE fixes the options of its commonsense parts (the released wrong ones): when no
/// other is left (e-CARE has one wrong hypothesis), the pick stands and the row notes the
/// code in its `warnings` column. A golden context that shares no content word with the
/// question or the golden answer is noted too (`golden_unrelated`): the reader's control on
/// it measures what the reader knows, not how it reads.
#[derive(Debug)]
pub struct PickNegative {
    pub name: String,
}

impl Step for PickNegative {
    fn name(&self) -> &str {
        &self.name
    }

    fn run<'a>(&'a self, item: &'a mut Item, ctx: &'a StepCtx<'_>) -> StepFuture<'a> {
        Box::pin(std::future::ready(self.apply(item, ctx)))
    }
}

impl PickNegative {
    fn apply(&self, item: &mut Item, ctx: &StepCtx<'_>) -> Result<(), StepFailure> {
        let c = Candidates::of(item)?;
        let pick = c.seeded(ctx, item);
        c.choose(item, pick);
        Ok(())
    }
}

/// The wrong choices an item's negative answer may be, as both picks see them.
struct Candidates {
    choices: Vec<String>,
    answer: usize,
    golden_context: String,
    /// Every wrong choice, each with its flaw (`code: detail`), if any.
    wrong: Vec<(usize, Option<String>)>,
    /// The choices to pick from: the sound ones, or every wrong one when none is sound.
    from: Vec<usize>,
}

impl Candidates {
    fn of(item: &Item) -> Result<Self, StepFailure> {
        let choices = item.require_texts(fields::CHOICES)?;
        let answer = letter_index(item.require(fields::ANSWER)?)
            .ok_or_else(|| StepFailure::reject("bad_answer", "answer is not a letter"))?;
        // A wrong choice that is the golden one again (CommonsenseQA repeats a choice now and
        // then: "clumsy" as A and D) cannot be the negative answer: the conflict would be
        // none. Compared case-insensitively, nothing more: e-CARE dev-723's "a artiodactyl"
        // and "an artiodactyl" stay two choices, as KRE released them.
        let wrong = wrong_choices(&choices, answer);
        if wrong.is_empty() {
            return Err(StepFailure::reject(
                "no_wrong_choice",
                "no wrong choice to pick",
            ));
        }
        // Optional: a recipe without a golden context checks only the overlap.
        let golden_context = item
            .get_text(fields::GOLDEN_CONTEXT)
            .unwrap_or("")
            .to_owned();
        let wrong: Vec<(usize, Option<String>)> = wrong
            .into_iter()
            .map(|i| (i, flaw(&choices[i], &choices[answer], &golden_context)))
            .collect();
        let sound: Vec<usize> = wrong
            .iter()
            .filter(|(_, f)| f.is_none())
            .map(|(i, _)| *i)
            .collect();
        let from = if sound.is_empty() {
            wrong.iter().map(|(i, _)| *i).collect()
        } else {
            sound
        };
        Ok(Candidates {
            choices,
            answer,
            golden_context,
            wrong,
            from,
        })
    }

    /// KRE's seeded pick among [`Self::from`] (purpose `negative_answer`).
    fn seeded(&self, ctx: &StepCtx<'_>, item: &Item) -> usize {
        let mut rng = item_rng(ctx.seed, ctx.recipe, &item.id, "negative_answer");
        self.from[rng.random_range(0..self.from.len())]
    }

    /// Writes choice `pick` as the negative answer, with the notes it calls for: its flaw
    /// when no sound choice was left, and a golden context off the question.
    fn choose(&self, item: &mut Item, pick: usize) {
        let flaw = self
            .wrong
            .iter()
            .find(|(i, _)| *i == pick)
            .and_then(|(_, f)| f.clone());
        if let (Some(why), true) = (flaw, self.from.iter().all(|&i| self.flawed(i))) {
            let mut notes = item.texts(fields::WARNINGS);
            notes.push(format!(
                "{why}; no other wrong choice is left, and KRE's options are the dataset's"
            ));
            item.set(fields::WARNINGS, notes);
        }
        let question = item.get_text(fields::QUESTION).unwrap_or("").to_owned();
        let asked = format!("{question} {}", self.choices[self.answer]);
        if off_question(&self.golden_context, &asked) {
            let mut notes = item.texts(fields::WARNINGS);
            notes.push(format!(
                "golden_unrelated: the golden context (\"{}\") shares no content word with the question or the golden answer; its control measures what the reader knows more than how it reads",
                self.golden_context.trim()
            ));
            item.set(fields::WARNINGS, notes);
        }
        item.set(fields::CANDIDATE, letter(pick));
        item.set(fields::NEGATIVE_ANSWER, self.choices[pick].clone());
    }

    fn flawed(&self, i: usize) -> bool {
        self.wrong.iter().any(|(j, f)| *j == i && f.is_some())
    }
}

/// The believable pick: the model is shown the question, the golden answer and the wrong
/// choices `Candidates` leaves (`options`, lettered as in the item), and names the one a
/// careful reader who does not know the answer would find most believable without the
/// context, or `"none"` when none can be argued for believably: the row is then refused
/// (`no_believable_negative`), not forced. Its answer is `{"option": "C"}` (`bad_choice`
/// when it names no listed letter, nor "none"). Offline, or in a dry run, no model judges:
/// the seeded pick stands and the row says so in its `warnings` column (`random_pick`).
#[derive(Debug)]
pub struct Believable;

impl ModelBacked for Believable {
    async fn apply<'a>(
        &'a self,
        model: &'a ModelStep,
        item: &'a mut Item,
        ctx: &'a StepCtx<'_>,
    ) -> Result<(), StepFailure> {
        let c = Candidates::of(item)?;
        let seeded = c.seeded(ctx, item);
        let rule = ctx.needs_rule_answer();
        let offline = if rule {
            json!({ "option": letter(seeded) }).to_string()
        } else {
            String::new()
        };
        let options: Vec<String> = c
            .from
            .iter()
            .map(|&i| format!("{}. {}", letter(i), c.choices[i]))
            .collect();
        let answer = c.choices[c.answer].clone();
        let a = model.ask(item, &answer, [("options", json!(options))], offline);
        let picked = ask(ctx, item, a, |raw| read_choice(raw, &c.from)).await?;
        let Some(pick) = picked else {
            return Err(StepFailure::reject(
                "no_believable_negative",
                format!(
                    "the model judged that no wrong option ({}) can be argued for believably without the context",
                    c.from.iter().map(|&i| format!("\"{}\"", c.choices[i])).collect::<Vec<_>>().join(", ")
                ),
            ));
        };
        if rule {
            let mut notes = item.texts(fields::WARNINGS);
            notes.push("random_pick: no model judged which wrong option is most believable (an offline build); the negative answer is KRE's seeded pick, as with `how = \"random\"`".to_owned());
            item.set(fields::WARNINGS, notes);
        }
        c.choose(item, pick);
        Ok(())
    }
}

/// The believable pick's answer: the index of the letter it names among `from`, or `None`
/// for "none"; the reason says what is wrong.
fn read_choice(raw: &str, from: &[usize]) -> Result<Option<usize>, String> {
    let v = extract_json(raw).ok_or("bad_json: the answer holds no JSON object")?;
    let said = v
        .get("option")
        .and_then(Value::as_str)
        .ok_or(r#"bad_json: expected {"option": "<letter or none>"}"#)?
        .trim()
        .trim_end_matches(['.', ')'])
        .trim();
    if said.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let letters: Vec<String> = from.iter().map(|&i| letter(i)).collect();
    match letter_index(&said.to_ascii_uppercase()) {
        Some(i) if from.contains(&i) && said.len() == 1 => Ok(Some(i)),
        _ => Err(format!(
            "bad_choice: \"{said}\" is not one of the letters listed ({}) nor the word none",
            letters.join(", ")
        )),
    }
}

/// Why `choice` makes no sound negative answer against `golden` and `golden_context`
/// (`code: detail`), if so.
fn flaw(choice: &str, golden: &str, golden_context: &str) -> Option<String> {
    let within =
        |hay: &str, phrase: &str| !text::find_word_occurrences(hay, phrase.trim()).is_empty();
    if within(golden_context, choice) {
        return Some(format!(
            "negative_in_context: the golden context already names \"{}\"",
            choice.trim()
        ));
    }
    if within(choice, golden) || within(golden, choice) {
        return Some(format!(
            "negative_overlaps_answer: \"{}\" and the golden answer \"{}\" hold one another",
            choice.trim(),
            golden.trim()
        ));
    }
    None
}

/// Whether `golden_context` has content words and none of them (on crude stems,
/// [`cb_quality::added_words`]) is one of `asked` (the question and the golden answer): a
/// context that cannot lead a reader to the golden answer (CoS-E's "Rivers flow trough
/// valleys." for a question about revolving doors). A guess from the words: a context may
/// bear on the question in other words.
fn off_question(golden_context: &str, asked: &str) -> bool {
    let content = cb_quality::added_words(golden_context, "");
    !content.is_empty() && cb_quality::added_words(golden_context, asked).len() == content.len()
}

/// The choices the negative answer may be: not the golden one, nor the golden one written
/// again (compared case-insensitively).
fn wrong_choices(choices: &[String], answer: usize) -> Vec<usize> {
    let golden = choices.get(answer).map(|g| g.trim().to_lowercase());
    (0..choices.len())
        .filter(|&i| i != answer && Some(choices[i].trim().to_lowercase()) != golden)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_choice_that_repeats_the_golden_one_is_never_the_negative_answer() {
        // KRE's released cose.json row 24: CommonsenseQA repeats "clumsy" as A and D.
        let c = texts(&["clumsy", "ineffectual", "dull", "clumsy", "stupid"]);
        assert_eq!(wrong_choices(&c, 3), [1, 2, 4]);
        // e-CARE dev-723: two writings of one answer stay two choices, as released.
        let c = texts(&[
            "this mammal is a artiodactyl.",
            "this mammal is an artiodactyl.",
        ]);
        assert_eq!(wrong_choices(&c, 1), [0]);
        assert!(wrong_choices(&texts(&["x", "X "]), 0).is_empty());
    }

    #[test]
    fn a_choice_in_the_golden_context_or_overlapping_the_answer_is_flawed() {
        let f = |c: &str, g: &str, ctx: &str| {
            flaw(c, g, ctx).map(|w| w.split(':').next().unwrap().to_owned())
        };
        let ctx = "Rivers flow through valleys, not over mountains.";
        assert_eq!(
            f("mountains", "valley", ctx).as_deref(),
            Some("negative_in_context")
        );
        assert_eq!(
            f("Mountains", "valley", ctx).as_deref(),
            Some("negative_in_context")
        );
        assert_eq!(f("mountain", "valley", ctx), None, "whole words only");
        assert_eq!(
            f("river bank", "bank", "").as_deref(),
            Some("negative_overlaps_answer")
        );
        assert_eq!(
            f("bank", "river bank", "").as_deref(),
            Some("negative_overlaps_answer")
        );
        assert_eq!(
            f(
                "The flowers withered.",
                "Because there was no sunshine, the flowers withered.",
                ""
            )
            .as_deref(),
            Some("negative_overlaps_answer")
        );
        assert!(off_question(
            "Rivers flow trough valleys.",
            "A revolving door is a security measure at a what? bank"
        ));
        assert!(!off_question(
            "Banks use revolving doors.",
            "A revolving door is a security measure at a what? bank"
        ));
        assert!(!off_question("", "Where? bank"));
        // Articles count: two released e-CARE hypotheses that differ by one stay sound.
        assert_eq!(
            f(
                "this mammal is a artiodactyl.",
                "this mammal is an artiodactyl.",
                ""
            ),
            None
        );
        assert_eq!(
            f(
                "The first letter he learns is A.",
                "The first letter he learns is alpha.",
                ""
            ),
            None
        );
        assert_eq!(f("bankrupt", "bank", ""), None);
    }
}

#[cfg(test)]
mod missing_field {
    use super::*;
    use serde_json::json;

    /// A finished chain that still lacks a field the step reads (a wrong declaration) stops
    /// the build, naming the field and the item, instead of writing an empty column.
    #[test]
    fn an_item_without_its_choices_stops_the_build_naming_the_field() {
        let llm = cb_llm::Llm::new(cb_llm::LlmConfig::offline()).unwrap();
        let env = minijinja::Environment::new();
        let corpus = cb_step::Corpus::default();
        let routes = cb_step::Routes::new(llm);
        let ctx = StepCtx {
            routes: &routes,
            env: &env,
            seed: 1,
            recipe: "t",
            corpus: &corpus,
        };
        let mut item = Item {
            index: 0,
            id: "q-3".into(),
            origin: cb_model::Origin {
                file: "t".into(),
                line: 1,
            },
            fields: json!({ "question": "Where?", "answer": "A" })
                .as_object()
                .unwrap()
                .clone(),
            calls: Vec::new(),
        };
        let step = PickNegative {
            name: "pick_negative".into(),
        };
        let Err(StepFailure::Fatal(StepError::Config(m))) = step.apply(&mut item, &ctx) else {
            panic!("expected a fatal config error");
        };
        assert_eq!(
            m,
            "step reads the field `choices` of item q-3, which it does not have"
        );
        assert!(!item.fields.contains_key(fields::NEGATIVE_ANSWER));
        // With the field, the step writes its own.
        item.set(fields::CHOICES, json!(["bank", "library"]));
        step.apply(&mut item, &ctx).unwrap();
        assert_eq!(item.require(fields::NEGATIVE_ANSWER).unwrap(), "library");
    }

    /// The pick passes over the wrong choices that stand in the golden context or overlap the
    /// golden answer while another is left, at every seed; with none left the released pick
    /// stands and the row notes why.
    #[test]
    fn flawed_choices_are_passed_over_while_another_is_left() {
        let llm = cb_llm::Llm::new(cb_llm::LlmConfig::offline()).unwrap();
        let env = minijinja::Environment::new();
        let corpus = cb_step::Corpus::default();
        let routes = cb_step::Routes::new(llm);
        let item = |choices: serde_json::Value, context: &str| Item {
            index: 0,
            id: "q-1".into(),
            origin: cb_model::Origin {
                file: "t".into(),
                line: 1,
            },
            fields: json!({ "choices": choices, "answer": "A", "golden_context": context })
                .as_object()
                .unwrap()
                .clone(),
            calls: Vec::new(),
        };
        let step = PickNegative {
            name: "pick_negative".into(),
        };
        let mut picked = std::collections::BTreeSet::new();
        for seed in 0..40 {
            let ctx = StepCtx {
                routes: &routes,
                env: &env,
                seed,
                recipe: "t",
                corpus: &corpus,
            };
            let mut it = item(
                json!(["valley", "mountains", "river valley", "sea", "desert"]),
                "Rivers flow through valleys, not over mountains.",
            );
            step.apply(&mut it, &ctx).unwrap();
            picked.insert(it.require(fields::NEGATIVE_ANSWER).unwrap().to_owned());
            assert!(it.texts(fields::WARNINGS).is_empty());
            // e-CARE: one wrong hypothesis, held by the golden one: kept, and noted.
            let mut it = item(
                json!([
                    "Because there was no sunshine, the flowers withered.",
                    "The flowers withered."
                ]),
                "Flowers wither without sunshine.",
            );
            step.apply(&mut it, &ctx).unwrap();
            assert_eq!(it.require(fields::CANDIDATE).unwrap(), "B");
            let notes = it.texts(fields::WARNINGS);
            assert_eq!(notes.len(), 1);
            assert!(
                notes[0].starts_with("negative_overlaps_answer: "),
                "{notes:?}"
            );
        }
        let expected: std::collections::BTreeSet<String> =
            ["sea".to_owned(), "desert".to_owned()].into();
        assert_eq!(picked, expected);
    }
}
