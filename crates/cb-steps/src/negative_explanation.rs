//! KRE commonsense: the negative context, a brief explanation that supports the negative
//! answer (the paper's "explanation" for CoS-E, ECQA and e-CARE).

use crate::prelude::*;
use cb_model::{letter, letter_index, quality, text};
use serde_json::json;

/// The step table's constructor.
pub fn build(spec: &StepSpec, prompts: &Files) -> Result<Box<dyn Step>, StepError> {
    let model = ModelStep::new(spec, prompts, None, 160)?;
    let step = NegativeExplanation {
        require_mention: spec.bool("require_mention", false),
        max_words: spec.int("max_words").map_or(80, |x| x as usize),
        offline_template: spec
            .str("offline_template")
            .unwrap_or_else(|| "{{ negative_answer }} is the most fitting answer here.".to_owned()),
    };
    Ok(Model::boxed(model, step))
}

/// Writes `negative_context`: a brief explanation that supports the negative answer.
///
/// Validation (besides [`cb_step::ask::common_checks`]: `prompt_echo`, `other_language`):
/// not empty, not a refusal (`refusal`), no talk about the task ("the question", "the answer
/// must", a line per option such as "Bakery: ...": `prompt_echo`,
/// [`cb_model::quality::talks_about_task`]), does not argue against
/// the negative answer ("would not be the cause": `denies_negative`,
/// [`cb_model::quality::denies`]), at most `max_words` words (`too_long`), does not
/// state the golden answer, singular or plural (`states_golden`, unless the negative answer
/// itself contains it), nor argue for it as much as for the negative one (`supports_golden`,
/// [`cb_model::quality::leans_to_golden`]),
/// does not only restate the negative answer (`restates_negative`), and, when
/// `require_mention` is set, mentions the negative answer (`no_mention`). A refusal or the
/// golden answer is looked for beyond the premise and question the answer copies (e-CARE
/// premises such as "I cannot take new photos now." are not refusals).
///
/// Offline rule: the golden context with every mention of the golden answer replaced by the
/// negative answer when it mentions it and the result says more than the negative answer
/// (a golden context "mug definition" would give the bare restatement "cup definition");
/// otherwise the recipe's `offline_template`
/// (a minijinja template over the item's fields).
#[derive(Debug)]
pub struct NegativeExplanation {
    require_mention: bool,
    max_words: usize,
    offline_template: String,
}

impl NegativeExplanation {
    fn offline(&self, item: &Item, ctx: &StepCtx<'_>) -> String {
        let golden = item.text("golden_context");
        let (answer, negative) = (answer_text(item), item.text("negative_answer"));
        let (replaced, n) = text::replace_words(golden, &answer, negative);
        if n > 0 && !answer.is_empty() && !quality::restates(&replaced, negative, &[]) {
            return replaced;
        }
        let vars = minijinja::Value::from_serialize(&item.fields);
        ctx.env
            .render_str(&self.offline_template, vars)
            .unwrap_or_default()
            .trim()
            .to_owned()
    }

    /// `given`: the texts the explanation may copy (the premise, the question); a refusal or
    /// the golden answer is looked for in what it says beyond them.
    fn validate(
        &self,
        raw: &str,
        answer: &str,
        negative: &str,
        given: &[&str],
        restate_given: &[&str],
        choices: &[String],
    ) -> Result<String, String> {
        let t = clean_text_answer(raw);
        if t.is_empty() {
            return Err("empty: the answer is empty".into());
        }
        let own = quality::beyond_copies(&t, given);
        if text::looks_like_refusal(&own) {
            return Err("refusal: the answer declines the task".into());
        }
        // A line per option ("Bakery: Bakers make them, so do printers."): the model goes
        // through the list it was shown instead of arguing for one answer.
        let labels: Vec<String> = (0..choices.len())
            .map(letter)
            .chain(choices.iter().cloned())
            .collect();
        let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
        if let Some(o) = quality::echoed_label(&t, &labels, "") {
            return Err(format!(
                "prompt_echo: a line starts with the option \"{o}:\"; argue for one answer, without going through the options"
            ));
        }
        // What the explanation may repeat without talking about the task or denying: the
        // premise, the question and the negative answer ("This passage discusses ..." is an
        // e-CARE answer).
        let material = format!("{}\n{negative}", given.join("\n"));
        if let Some(w) = quality::talks_about_task(&t, &material) {
            return Err(format!(
                "prompt_echo: it talks about the task (\"{w}\"); state a reason about the situation itself"
            ));
        }
        if let Some(w) = quality::denies(&t, &material) {
            return Err(format!(
                "denies_negative: it argues against \"{negative}\" (\"{w}\"); give a reason that supports it"
            ));
        }
        let words = t.split_whitespace().count();
        if words > self.max_words {
            return Err(format!(
                "too_long: {words} words, at most {} allowed",
                self.max_words
            ));
        }
        if !text::contains_phrase_any_number(negative, answer)
            && text::contains_phrase_any_number(&own, answer)
        {
            return Err(format!(
                "states_golden: it mentions the correct answer \"{answer}\""
            ));
        }
        // The offline template's own words ("... brought this about: ...") are ours, not an
        // argument for either answer.
        let known: Vec<&str> = given
            .iter()
            .copied()
            .chain([self.offline_template.as_str()])
            .collect();
        if quality::leans_to_golden(&t, negative, answer, &known) {
            return Err(format!(
                "supports_golden: it argues for \"{answer}\" rather than \"{negative}\"; give a reason for \"{negative}\""
            ));
        }
        if quality::restates(&t, negative, restate_given) {
            return Err(format!(
                "restates_negative: it only restates \"{negative}\"; give a reason that supports it"
            ));
        }
        if self.require_mention && !text::contains_phrase(&t, negative) {
            return Err(format!("no_mention: it must mention \"{negative}\""));
        }
        Ok(t)
    }
}

impl ModelBacked for NegativeExplanation {
    async fn apply<'a>(
        &'a self,
        model: &'a ModelStep,
        item: &'a mut Item,
        ctx: &'a StepCtx<'_>,
    ) -> Result<(), StepFailure> {
        let answer = answer_text(item);
        let negative = item.text("negative_answer").to_owned();
        let choices = item.texts("choices");
        let options = json!(lettered(&choices));
        let offline = self.offline(item, ctx);
        // The offline rule fills the question in by design; only a model's answer is held to
        // adding something beyond the question.
        let offline_text = offline.clone();
        let a = model.ask(item, &answer, [("options", options)], offline);
        let (premise, question) = (
            item.text("premise").to_owned(),
            item.text("question").to_owned(),
        );
        let given = [premise.as_str(), question.as_str()];
        let context = ask(ctx, item, a, |raw| {
            let restate_given: &[&str] = if raw.trim() == offline_text {
                &[]
            } else {
                &given
            };
            self.validate(raw, &answer, &negative, &given, restate_given, &choices)
        })
        .await?;
        item.set("negative_context", context);
        Ok(())
    }
}

/// The golden answer's text (`choices[answer]`).
pub fn answer_text(item: &Item) -> String {
    let choices = item.texts("choices");
    letter_index(item.text("answer"))
        .and_then(|i| choices.get(i).cloned())
        .unwrap_or_default()
}

/// `["A: bank", "B: library", ...]`
fn lettered(choices: &[String]) -> Vec<String> {
    choices
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{}: {c}", letter(i)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The e-CARE recipe's offline template, as bundled.
    fn ecare_template() -> String {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../recipes/kre-ecare.toml");
        let recipe: toml::Table = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        recipe["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["kind"].as_str() == Some("negative_explanation"))
            .and_then(|s| s["offline_template"].as_str())
            .unwrap()
            .to_owned()
    }

    fn step() -> NegativeExplanation {
        NegativeExplanation {
            require_mention: false,
            max_words: 60,
            offline_template: ecare_template(),
        }
    }

    /// e-CARE dev-848, dev-1283 and dev-1383 (dev_full.jsonl of Waste-Wood/e-CARE): the
    /// offline explanation copies the premise, which says "cannot" and, in dev-1383, is the
    /// golden answer itself. Neither is a refusal nor a statement of the golden answer. In
    /// dev-1818, dev-295 and dev-150 it copies a negative answer that says "This passage"
    /// or "could not be", and its own "brought this about" meets the golden "brought up":
    /// neither task talk, nor a denial, nor an argument for the golden answer.
    #[test]
    fn a_copied_premise_is_neither_a_refusal_nor_the_golden_answer() {
        let rows = [
            (
                "I cannot take new Photos now.",
                "Something is wrong with my camera flash.",
                "Something is matched with my camera flash.",
            ),
            (
                "I cannot get connected to the internet at a high speed.",
                "Ethernet was interrupted on my computer.",
                "This area is current-free.",
            ),
            (
                "Lucy's physical condition cannot support her to give birth to a child.",
                "Lucy's physical condition cannot support her to give birth to a child.",
                "Lucy has a strong ability of adaptation.",
            ),
            (
                "Blair's answer is narration.",
                "The teacher asked what is the translation from printed matter to spoken language.",
                "This passage discusses the structure of dominant genes.",
            ),
            (
                "At night they set up tents to sleep.",
                "Audrey and her friends take part in group trips.",
                "The patients felt that their disease could not be cured.",
            ),
            (
                "Tom is American.",
                "Tom was born and brought up in Indinana.",
                "Tom is a homo.",
            ),
        ];
        let env = cb_step::template::environment();
        let s = step();
        for (premise, golden, negative) in rows {
            let question = format!("{premise} What is the more possible cause of this?");
            let vars = serde_json::json!({"ask_for": "cause", "premise": premise, "negative_answer": negative});
            let offline = env.render_str(&s.offline_template, vars).unwrap();
            let got = s.validate(&offline, golden, negative, &[premise, &question], &[], &[]);
            assert_eq!(got.as_deref(), Ok(offline.trim()), "{premise}");
        }
        // What the explanation adds is still checked.
        let refusal = "I cannot help with that. I cannot take new Photos now.";
        let (premise, golden, negative) = rows[0];
        assert!(s
            .validate(refusal, golden, negative, &[premise], &[premise], &[])
            .unwrap_err()
            .starts_with("refusal"));
    }

    #[test]
    fn a_bare_restatement_of_the_negative_answer_is_refused() {
        // The real SmolLM2 answer for the negative answer "The plants grew faster".
        let e = step()
            .validate(
                "The plants grew faster.",
                "The plants grew slower",
                "The plants grew faster",
                &[],
                &[],
                &[],
            )
            .unwrap_err();
        assert!(e.starts_with("restates_negative"), "{e}");
        assert!(step()
            .validate(
                "Plants given more water and light grow faster.",
                "The plants grew slower",
                "The plants grew faster",
                &[],
                &[],
                &[],
            )
            .is_ok());
    }

    #[test]
    fn going_through_the_options_line_by_line_is_echo() {
        // A real SmolLM2 explanation for CoS-E, accepted before this rule.
        let choices: Vec<String> = [
            "bookstore",
            "library",
            "printing press",
            "post office",
            "bakery",
        ]
        .map(String::from)
        .to_vec();
        let q = "Where do people usually go to borrow books without paying?";
        let raw = "Most people go to the printing press, where they can buy books without paying.\nBakery: Bakers make them, so do printers.";
        let e = step()
            .validate(raw, "library", "printing press", &[q], &[q], &choices)
            .unwrap_err();
        assert!(
            e.starts_with("prompt_echo") && e.contains("\"bakery:\""),
            "{e}"
        );
        let first_line = raw.lines().next().unwrap();
        assert!(step()
            .validate(
                first_line,
                "library",
                "printing press",
                &[q],
                &[q],
                &choices
            )
            .is_ok());
    }
}
