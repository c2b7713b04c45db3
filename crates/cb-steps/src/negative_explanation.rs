//! KRE commonsense: the negative context, a brief explanation that supports the negative
//! answer (the paper's "explanation" for CoS-E, ECQA and e-CARE).

use crate::prelude::*;
use cb_model::{letter, letter_index, text};
use cb_quality as quality;
use cb_step::ask::reason_code;
use cb_step::GUESS_CODES;
use serde_json::json;

/// The name `render_str` gives what it compiles.
const UNNAMED: &str = "<string>";

/// The parameters of its own (besides the model's).
pub const PARAMS: &[Param] = &[
    Param {
        key: "require_mention",
        ty: ParamType::Bool,
        default: "false",
        meaning: "The explanation must name the negative answer (a guess at meaning: a warning where a reader checks the rows).",
    },
    Param {
        key: "max_words",
        ty: ParamType::Integer(Range::whole(1, 10_000)),
        default: "80",
        meaning: "Longest explanation, in words.",
    },
    Param {
        key: "offline_template",
        ty: ParamType::Text,
        default: "\"{{ negative_answer }} is the most fitting answer here.\"",
        meaning: "The offline rule's text when the golden context cannot be swapped cleanly (minijinja over the item's fields).",
    },
];

/// The step table's constructor.
pub fn build(spec: &StepSpec, prompts: &Files) -> Result<Box<dyn Step>, StepError> {
    let model = ModelStep::new(spec, prompts, None, 160)?;
    Ok(Model::boxed(model, NegativeExplanation::from_spec(spec)))
}

/// Writes `negative_context`: a brief explanation that supports the negative answer.
///
/// Validation (besides [`cb_step::ask::common_checks`]: `prompt_echo`, `other_language`;
/// `denies_negative`, `supports_golden` and `no_mention` guess at meaning: warnings where a
/// reader checks the rows, rejects where none does, see [`cb_step::GUESS_CODES`]):
/// not empty, not a refusal (`refusal`), no talk about the task ("the question", "the answer
/// must", a line per option such as "Bakery: ...": `prompt_echo`,
/// [`cb_quality::talks_about_task`]), does not argue against
/// the negative answer ("would not be the cause": `denies_negative`,
/// [`cb_quality::denies`]), at most `max_words` words (`too_long`), does not
/// state the golden answer, singular or plural (`states_golden`, unless the negative answer
/// itself contains it), nor argue for it as much as for the negative one (`supports_golden`,
/// [`cb_quality::leans_to_golden`]),
/// does not only restate the negative answer (`restates_negative`), and, when
/// `require_mention` is set, mentions the negative answer (`no_mention`). A refusal or the
/// golden answer is looked for beyond the premise and question the answer copies (e-CARE
/// premises such as "I cannot take new photos now." are not refusals).
///
/// Offline rule: the golden context with every mention of the golden answer replaced by the
/// negative answer when it mentions it and the result is a clean swap ([`clean_swap`]: it
/// says more than the negative answer, keeps no form or word of the golden answer, and is
/// no "option: ..." line); otherwise the recipe's `offline_template`
/// (a minijinja template over the item's fields).
#[derive(Debug)]
pub struct NegativeExplanation {
    require_mention: bool,
    max_words: usize,
    offline_template: String,
    /// `offline_template` compiled once (the one template, `<string>`, of an environment of
    /// its own: the template environment); `None` when it does not compile, and then it is
    /// compiled at each use, as before, to fail there.
    offline_compiled: Option<minijinja::Environment<'static>>,
}

impl NegativeExplanation {
    fn offline(&self, item: &Item, ctx: &StepCtx<'_>) -> Result<String, StepFailure> {
        let golden = item.require(fields::GOLDEN_CONTEXT)?;
        let (answer, negative) = (answer_text(item)?, item.require(fields::NEGATIVE_ANSWER)?);
        let (replaced, n) = text::replace_words(golden, &answer, negative);
        let question = item.require(fields::QUESTION)?;
        let own_words = [
            // Optional: only e-CARE items have a premise.
            item.get_text(fields::PREMISE).unwrap_or(""),
            question,
            self.offline_template.as_str(),
        ];
        if n > 0 && !answer.is_empty() && clean_swap(&replaced, &answer, negative, &own_words) {
            return Ok(replaced);
        }
        let vars = minijinja::Value::from_serialize(&item.fields);
        let rendered = match &self.offline_compiled {
            Some(env) => env.get_template(UNNAMED).and_then(|t| t.render(vars)),
            None => ctx.env.render_str(&self.offline_template, vars),
        };
        Ok(rendered.unwrap_or_default().trim().to_owned())
    }

    /// The explanation's findings, every rule that fires, in the order the validator weighs
    /// them (`code: detail` each; an empty explanation gives `empty` alone). `t` is the
    /// cleaned answer; `(answer, negative)` the golden answer's text and the negative
    /// answer; `given` the texts the explanation may copy (the premise, the question), beyond
    /// which a refusal or the golden answer is looked for; `restate_given` what a
    /// restatement may add words from.
    pub fn findings(
        &self,
        t: &str,
        (answer, negative): (&str, &str),
        given: &[&str],
        restate_given: &[&str],
        choices: &[String],
    ) -> Vec<String> {
        if t.is_empty() {
            return vec!["empty: the answer is empty".into()];
        }
        let own = quality::beyond_copies(t, given);
        let mut out = Vec::new();
        self.echo_findings(t, &own, (given, negative), choices, &mut out);
        self.argument_findings(t, &own, (answer, negative), given, restate_given, &mut out);
        out
    }

    /// The findings on what the explanation repeats or refuses: a refusal beyond the copied
    /// `given` texts (`own` is what is left of `t` without them), a line per option, talk
    /// about the task, a denial of `negative`.
    fn echo_findings(
        &self,
        t: &str,
        own: &str,
        (given, negative): (&[&str], &str),
        choices: &[String],
        out: &mut Vec<String>,
    ) {
        if text::looks_like_refusal(own) {
            out.push("refusal: the answer declines the task".into());
        }
        // A line per option ("Bakery: Bakers make them, so do printers."): the model goes
        // through the list it was shown instead of arguing for one answer.
        let labels: Vec<String> = (0..choices.len())
            .map(letter)
            .chain(choices.iter().cloned())
            .collect();
        let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
        if let Some(o) = quality::echoed_label(t, &labels, "") {
            out.push(format!(
                "prompt_echo: a line starts with the option \"{o}:\"; argue for one answer, without going through the options"
            ));
        }
        // What the explanation may repeat without talking about the task or denying: the
        // premise, the question and the negative answer ("This passage discusses ..." is an
        // e-CARE answer).
        let material = format!("{}\n{negative}", given.join("\n"));
        if let Some(w) = quality::talks_about_task(t, &material) {
            out.push(format!(
                "prompt_echo: it talks about the task (\"{w}\"); state a reason about the situation itself"
            ));
        }
        if let Some(w) = quality::denies(t, &material) {
            out.push(format!(
                "denies_negative: it argues against \"{negative}\" (\"{w}\"); give a reason that supports it"
            ));
        }
    }

    /// The findings on what the explanation argues: its length, the golden answer stated or
    /// argued for, a bare restatement, the negative answer not mentioned.
    fn argument_findings(
        &self,
        t: &str,
        own: &str,
        (answer, negative): (&str, &str),
        given: &[&str],
        restate_given: &[&str],
        out: &mut Vec<String>,
    ) {
        let words = t.split_whitespace().count();
        if words > self.max_words {
            out.push(format!(
                "too_long: {words} words, at most {} allowed",
                self.max_words
            ));
        }
        if !text::contains_phrase_any_number(negative, answer)
            && text::contains_phrase_any_number(own, answer)
        {
            out.push(format!(
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
        if quality::leans_to_golden(t, negative, answer, &known) {
            out.push(format!(
                "supports_golden: it argues for \"{answer}\" rather than \"{negative}\"; give a reason for \"{negative}\""
            ));
        }
        // Nothing beyond the negative answer is certain; nothing beyond it and the question
        // is a guess: "The dog barked at the door. The dog was asleep." (premise, then the
        // negative answer) explains nothing, "Pancreatic necrosis virus can cause
        // pancreatitis." (released e-CARE) links the two in the question's own words.
        if quality::restates(t, negative, &[]) {
            out.push(format!(
                "restates_negative: it only restates \"{negative}\"; give a reason that supports it"
            ));
        } else if quality::restates(t, negative, restate_given) {
            out.push(format!(
                "restates_question: it adds nothing to \"{negative}\" and the question's own words; give a reason that supports it"
            ));
        }
        if self.require_mention && !text::contains_phrase(t, negative) {
            out.push(format!("no_mention: it must mention \"{negative}\""));
        }
    }

    /// The validator: the cleaned answer, unless a finding rejects it. Findings that guess at
    /// meaning go to `guesses` (rejects without a reader, warnings with one); the others
    /// reject, the first in [`Self::findings`]' order.
    fn validate(
        &self,
        raw: &str,
        answers: (&str, &str),
        given: &[&str],
        restate_given: &[&str],
        choices: &[String],
        mut guesses: Guesses,
    ) -> Result<(String, Guesses), String> {
        let t = clean_text_answer(raw);
        for f in self.findings(&t, answers, given, restate_given, choices) {
            if GUESS_CODES.contains(&reason_code(&f)) {
                guesses.flag(f)?;
            } else {
                return Err(f);
            }
        }
        Ok((t, guesses))
    }

    /// The step as a recipe entry configures it (for measuring its rules outside a build).
    pub fn from_spec(spec: &StepSpec) -> Self {
        NegativeExplanation::new(
            spec.bool("require_mention", false),
            spec.int("max_words").map_or(80, |x| x as usize),
            spec.str("offline_template").unwrap_or_else(|| {
                "{{ negative_answer }} is the most fitting answer here.".to_owned()
            }),
        )
    }

    fn new(require_mention: bool, max_words: usize, offline_template: String) -> Self {
        let offline_compiled = {
            let mut env = cb_step::template::environment();
            env.add_template_owned(UNNAMED, offline_template.clone())
                .ok()
                .map(|()| env)
        };
        NegativeExplanation {
            require_mention,
            max_words,
            offline_template,
            offline_compiled,
        }
    }
}

impl ModelBacked for NegativeExplanation {
    async fn apply<'a>(
        &'a self,
        model: &'a ModelStep,
        item: &'a mut Item,
        ctx: &'a StepCtx<'_>,
    ) -> Result<(), StepFailure> {
        let answer = answer_text(item)?;
        let negative = item.require(fields::NEGATIVE_ANSWER)?.to_owned();
        let choices = item.require_texts(fields::CHOICES)?;
        let options = json!(lettered(&choices));
        let offline = self.offline(item, ctx)?;
        // The offline rule fills the question in by design; only a model's answer is held to
        // adding something beyond the question.
        let offline_text = offline.clone();
        // The prompt states the length limit it is held to.
        let limit = json!(self.max_words);
        let a = model.ask(
            item,
            &answer,
            [("options", options), ("max_words", limit)],
            offline,
        );
        let (premise, question) = (
            item.get_text(fields::PREMISE).unwrap_or("").to_owned(),
            item.require(fields::QUESTION)?.to_owned(),
        );
        let given = [premise.as_str(), question.as_str()];
        let guesses = Guesses::for_ctx(ctx);
        let (context, guesses) = ask(ctx, item, a, |raw| {
            let restate_given: &[&str] = if raw.trim() == offline_text {
                &[]
            } else {
                &given
            };
            self.validate(
                raw,
                (&answer, &negative),
                &given,
                restate_given,
                &choices,
                guesses.fresh(),
            )
        })
        .await?;
        item.set(fields::NEGATIVE_CONTEXT, context);
        guesses.record(item);
        Ok(())
    }
}

/// Whether the golden context with the golden answer swapped for the negative one reads as
/// an explanation of the negative answer, judged by the rules [`NegativeExplanation`]'s
/// validator applies to it: it says more than the negative answer (a golden context "mug
/// definition" would give the bare restatement "cup definition"), names the golden answer
/// in no number ("London Musicals - Musical Tickets" for "musical" keeps "Musicals"), does
/// not keep the golden answer's words ("puncture wound is a deep wound" for "fever" gives
/// "fever is a deep wound": [`quality::leans_to_golden`]), and is not an "option: ..." line
/// ("Economic Boom: Definition" gives "disagreements: Definition"). `given`: the premise,
/// the question and the offline template, whose words the validator sets apart too.
fn clean_swap(replaced: &str, answer: &str, negative: &str, given: &[&str]) -> bool {
    !quality::restates(replaced, negative, &[])
        && (text::contains_phrase_any_number(negative, answer)
            || !text::contains_phrase_any_number(replaced, answer))
        && !quality::leans_to_golden(replaced, negative, answer, given)
        && quality::echoed_label(replaced, &[negative], "").is_none()
}

/// The golden answer's text (`choices[answer]`; "" when `answer` is no letter of them).
pub fn answer_text(item: &Item) -> Result<String, StepFailure> {
    let choices = item.require_texts(fields::CHOICES)?;
    Ok(letter_index(item.require(fields::ANSWER)?)
        .and_then(|i| choices.get(i).cloned())
        .unwrap_or_default())
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

    impl NegativeExplanation {
        /// The validator where nobody reads the rows back: guesses reject.
        fn check(
            &self,
            raw: &str,
            answer: &str,
            negative: &str,
            given: &[&str],
            restate_given: &[&str],
            choices: &[String],
        ) -> Result<String, String> {
            self.validate(
                raw,
                (answer, negative),
                given,
                restate_given,
                choices,
                Guesses::new(true),
            )
            .map(|(t, _)| t)
        }
    }

    #[test]
    fn guesses_at_meaning_reject_without_a_reader_and_warn_with_one() {
        // A real SmolLM2 explanation (QUALITY.md) that names the negative answer and then
        // argues it away.
        let raw = "A hot bath can raise the body's temperature, but it would not be the cause of his high fever.";
        let (golden, negative) = ("He caught the flu.", "He took a hot bath.");
        let e = step()
            .check(raw, golden, negative, &[], &[], &[])
            .unwrap_err();
        assert!(e.starts_with("denies_negative"), "{e}");
        let (t, warned) = step()
            .validate(raw, (golden, negative), &[], &[], &[], Guesses::new(false))
            .unwrap();
        assert_eq!(t, raw);
        let mut item = Item {
            index: 0,
            id: "x".into(),
            origin: cb_model::Origin {
                file: "t".into(),
                line: 1,
            },
            fields: Default::default(),
            calls: vec![],
        };
        warned.record(&mut item);
        let w = item.texts(fields::WARNINGS);
        assert_eq!(w.len(), 1);
        assert!(w[0].starts_with("denies_negative"), "{w:?}");
        // What is certain from the words still rejects with a reader.
        let golden_stated = "He caught the flu, not a hot bath.";
        let e = step()
            .validate(
                golden_stated,
                ("caught the flu", negative),
                &[],
                &[],
                &[],
                Guesses::new(false),
            )
            .unwrap_err();
        assert!(e.starts_with("states_golden"), "{e}");
    }

    fn step() -> NegativeExplanation {
        NegativeExplanation::new(false, 60, ecare_template())
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
            let got = s.check(&offline, golden, negative, &[premise, &question], &[], &[]);
            assert_eq!(got.as_deref(), Ok(offline.trim()), "{premise}");
        }
        // What the explanation adds is still checked.
        let refusal = "I cannot help with that. I cannot take new Photos now.";
        let (premise, golden, negative) = rows[0];
        assert!(s
            .check(refusal, golden, negative, &[premise], &[premise], &[])
            .unwrap_err()
            .starts_with("refusal"));
    }

    #[test]
    fn a_bare_restatement_of_the_negative_answer_is_refused() {
        // The real SmolLM2 answer for the negative answer "The plants grew faster".
        let e = step()
            .check(
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
            .check(
                "Plants given more water and light grow faster.",
                "The plants grew slower",
                "The plants grew faster",
                &[],
                &[],
                &[],
            )
            .is_ok());
    }

    /// CommonsenseQA v1.11 dev lines 18, 405, 666, 1014, 1017 and 1103 with their CoS-E v1.11
    /// explanations: swapping the golden answer out leaves its words, its plural or an
    /// "option:" line, which the validator refuses; the offline rule falls back to the
    /// template. A swap that leaves none stays ("people aim to complete job in work").
    #[test]
    fn a_swap_that_keeps_the_golden_answer_falls_back_to_the_template() {
        let rows = [
            ("A fencing thrust with a sharp sword towards a person would result in what?",
             "puncture wound is a deep wound", "puncture wound", "fever"),
            ("Sarah didn't like to play but she didn't want to be sedentary and bored, either, so she took up what?",
             "London Musicals - Musical Tickets", "musical", "doing nothing"),
            ("Where is beer drank by people watching sticks and pucks?",
             "hockey game is the only game available.", "hockey game", "casino"),
            ("What could you use to fill a cup and then drink from it?",
             "Water Fountain, Fountain manufacturers", "water fountain", "table"),
            ("If you were looking for a blowfish, you wouldn't look on dry land, you'd look in a what?",
             "body takes a body of water", "body of water", "sea water"),
            ("When are people buying products more?",
             "Economic Boom: Definition", "economic boom", "disagreements"),
        ];
        let s = step();
        for (question, golden, answer, negative) in rows {
            let (swapped, n) = text::replace_words(golden, answer, negative);
            assert!(n > 0, "{golden}");
            let given = ["", question, s.offline_template.as_str()];
            assert!(!clean_swap(&swapped, answer, negative, &given), "{swapped}");
            // What the validator says of the swap, for the record.
            assert!(s
                .check(
                    &swapped,
                    answer,
                    negative,
                    &given,
                    &[],
                    &[negative.to_owned()]
                )
                .is_err());
        }
        let (swapped, _) = text::replace_words(
            "people aim to complete job in work",
            "complete job",
            "talk to each other",
        );
        assert!(clean_swap(
            &swapped,
            "complete job",
            "talk to each other",
            &["", "What do people aim to do at work?"]
        ));
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
            .check(raw, "library", "printing press", &[q], &[q], &choices)
            .unwrap_err();
        assert!(
            e.starts_with("prompt_echo") && e.contains("\"bakery:\""),
            "{e}"
        );
        let first_line = raw.lines().next().unwrap();
        assert!(step()
            .check(
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
