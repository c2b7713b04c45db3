//! The checks a row is asked, in the order they are asked: what each check shows the
//! reader, which option it must pick and what a failure does (see the module above).

use super::planned::Planned;
use super::{judged, Control, Mode, ReaderCheck};
use crate::prelude::*;
use cb_model::{letter_index, negative_option};
use cb_step::fields;

impl ReaderCheck {
    pub(super) fn missing(&self, what: &str) -> StepFailure {
        StepFailure::reject("bad_answer", format!("{}: {what}", self.name))
    }

    /// The reject reason of a failed control check, where it rejects.
    pub(super) fn control_reject(&self) -> Option<&'static str> {
        match self.control {
            Control::Reject => Some("reader_control_failed"),
            _ => None,
        }
    }

    /// How a reject's detail says where check `check` was asked ("with the negative
    /// context", "asked whether ...,").
    pub(super) fn asked_how(&self, check: &str) -> String {
        if self.mode == Mode::Fields {
            return self.asked_how_fields(check);
        }
        let (qa_na, edited) = (self.judged.qa_na_question, self.judged.question);
        let how: &str = match check {
            "negative" => "with the negative context",
            "control" => "with the golden context (the control)",
            "qa_a" => "with the answer-edited context",
            "qa_na" => "with the non-answer-edited context",
            "qa_na_sentence" => "with the sentence-edited context",
            "plausible_qa_na" => return qa_na.asked("the non-answer-edited context"),
            "plausible_qa_na_sentence" => return qa_na.asked("the sentence-edited context"),
            "kind" => "asked whether the edited answer keeps the answer's kind,",
            "coherent" => match self.mode {
                Mode::Recall => "asked whether the non-answer-edited context contradicts itself,",
                _ => "asked whether the negative context contradicts itself,",
            },
            "residual" => "asked whether the negative context also supports another option,",
            "grounded" => "asked whether the golden context states every fact its answer needs,",
            "plausible" => match self.mode {
                Mode::Recall => return edited.asked("the answer-edited context"),
                _ => return edited.asked("the negative context"),
            },
            _ => "from the options alone",
        };
        how.to_owned()
    }

    /// The item's options and its checks, in the order they are asked.
    pub(super) fn plan(&self, item: &Item) -> Result<(Vec<String>, Vec<Planned>), StepFailure> {
        match self.mode {
            Mode::Kre => self.plan_kre(item),
            Mode::Recall => self.plan_recall(item),
            Mode::Fields => self.plan_fields(item),
        }
    }

    /// KRE: the negative context must lead to the negative answer (and, with
    /// `coherence_check`, not contradict itself; with `residual_check`, support no other
    /// option; with `plausible_check`, read as believable); the control (the golden context)
    /// to the golden one (a failure on a row noted `golden_unrelated` set aside from the
    /// reader's measure); the answer set is asked from the options alone.
    fn plan_kre(&self, item: &Item) -> Result<(Vec<String>, Vec<Planned>), StepFailure> {
        let choices = item.require_texts(fields::CHOICES)?;
        let gold = letter_index(item.require(fields::ANSWER)?)
            .filter(|i| *i < choices.len())
            .ok_or_else(|| self.missing("the answer names none of the choices"))?;
        let negative = negative_option(
            &choices,
            item.require(fields::CANDIDATE)?,
            item.require(fields::NEGATIVE_ANSWER)?,
        )
        .filter(|i| *i != gold)
        .ok_or_else(|| self.missing("the negative answer is none of the wrong choices"))?;
        let disagrees = Some("reader_disagrees");
        let implausible = Some("reader_implausible");
        let context = item.require(fields::NEGATIVE_CONTEXT)?;
        let mut checks = vec![Planned::new("negative", context, negative, disagrees)];
        if self.judged.coherence {
            checks.push(judged::coherent(context));
        }
        if self.judged.residual {
            let question = item.require(fields::QUESTION)?;
            checks.push(judged::residual(question, context, &choices, negative));
        }
        if self.judged.plausible {
            checks.push(judged::plausible(
                "plausible",
                context,
                implausible,
                self.judged.question,
            ));
        }
        if self.judged.golden {
            let question = item.require(fields::QUESTION)?;
            let golden = item.require(fields::GOLDEN_CONTEXT)?;
            checks.push(judged::grounded(question, golden, &choices[gold]));
        }
        if self.control != Control::Off {
            checks.push(Planned {
                unrelated: golden_unrelated(item),
                ..Planned::control(
                    item.require(fields::GOLDEN_CONTEXT)?,
                    gold,
                    self.control_reject(),
                )
            });
        }
        if self.reader.answer_set.is_some() {
            checks.push(Planned {
                name: "answer_set".into(),
                context: None,
                expected: gold,
                reject: None,
                always: false,
                unrelated: false,
                ask: None,
            });
        }
        Ok((choices, checks))
    }

    /// RECALL: the answer-edited context must lead to the edited answer (and, with
    /// `plausible_check`, read as believable), the non-answer edits (and the control, the
    /// paragraph) to the original one; with `plausible_check` the word-edited context must
    /// read as believable too (else the sample is refused), and the sentence-edited one is
    /// asked it without refusing anything: a failure leaves that context out
    /// (`ReaderCheck::leave_out_sentence`).
    fn plan_recall(&self, item: &Item) -> Result<(Vec<String>, Vec<Planned>), StepFailure> {
        let options = item.require_texts(fields::OPTIONS)?;
        let original = letter_index(item.require(fields::ANSWER_OPTION)?)
            .filter(|i| *i < options.len())
            .ok_or_else(|| self.missing("answer_option names none of the options"))?;
        let edited_answer = item.require(fields::EDITED_ANSWER)?;
        let edited = options
            .iter()
            .position(|o| o == edited_answer)
            .filter(|i| *i != original)
            .ok_or_else(|| self.missing("the edited answer is none of the other options"))?;
        // A non-answer edit that moves the reader off the original answer discards the
        // sample, as the paper does.
        let disagrees = Some("reader_disagrees");
        let implausible = Some("reader_implausible");
        let question = item.require(fields::QUESTION)?;
        let qa_na = item.require(fields::QA_NA_CONTEXT)?;
        let qa_a = item.require(fields::QA_A_CONTEXT)?;
        let mut checks = vec![Planned::new("qa_a", qa_a, edited, disagrees)];
        if self.judged.kind {
            checks.push(judged::kind(question, &options[original], edited_answer));
        }
        if self.judged.plausible {
            checks.push(judged::plausible(
                "plausible",
                qa_a,
                implausible,
                self.judged.question,
            ));
        }
        checks.push(Planned::new("qa_na", qa_na, original, disagrees));
        if self.judged.coherence {
            checks.push(judged::coherent(qa_na));
        }
        if self.judged.plausible {
            checks.push(judged::plausible(
                "plausible_qa_na",
                qa_na,
                implausible,
                self.judged.qa_na_question,
            ));
        }
        // Optional: only where the recipe inserts a sentence.
        if let Some(context) = item.get_text(fields::QA_NA_SENTENCE_CONTEXT) {
            checks.push(Planned::new("qa_na_sentence", context, original, disagrees));
            if self.judged.plausible {
                // Built by rule, often implausible by construction: a failure refuses
                // nothing, it leaves this context out.
                checks.push(judged::plausible(
                    SENTENCE_PLAUSIBLE,
                    context,
                    None,
                    self.judged.qa_na_question,
                ));
            }
        }
        if self.control != Control::Off {
            checks.push(Planned::control(
                item.require(fields::PARAGRAPH)?,
                original,
                self.control_reject(),
            ));
        }
        Ok((options, checks))
    }
}

impl ReaderCheck {
    /// Where the readers found RECALL's sentence-edited context implausible (by `agree`, as
    /// for a row), the note that leaves it out (`sentence_implausible: ...`, naming the first
    /// such reader's pick); `None` where it stands or was not asked.
    pub(super) fn sentence_note(
        &self,
        readers: &[&cb_llm::Llm],
        judged: &[super::Judged],
        planned: &[Planned],
    ) -> Option<String> {
        let p = planned.iter().find(|p| p.name == SENTENCE_PLAUSIBLE)?;
        let verdicts: Vec<Option<&super::Verdict>> = judged
            .iter()
            .map(|(vs, _)| vs.iter().find(|v| v.check == SENTENCE_PLAUSIBLE))
            .collect();
        let passed = verdicts.iter().flatten().filter(|v| v.passed).count();
        let n = verdicts.iter().flatten().count();
        let stands = match self.agree {
            super::Agree::All => passed == n,
            super::Agree::Majority => 2 * passed > n,
        };
        if stands {
            return None;
        }
        let (i, v) = verdicts
            .iter()
            .enumerate()
            .find_map(|(i, v)| v.filter(|v| !v.passed).map(|v| (i, v)))?;
        let options = p.ask.as_ref().map_or(&[][..], |(_, o)| o.as_slice());
        let panel = if readers.len() > 1 {
            format!(
                " (reader {}; {passed} of {n} readers passed it)",
                readers[i].config().model
            )
        } else {
            String::new()
        };
        Some(format!(
            "sentence_implausible: {} the reader picked {}, not \"{}\"; the sentence-edited QA-NA row is left out{panel}",
            self.asked_how(SENTENCE_PLAUSIBLE),
            v.pick_named(options),
            v.expected
        ))
    }
}

/// Leaves RECALL's sentence-edited context out of `item` (its QA-NA row is then not
/// written) and notes why in the item's `warnings`.
pub(super) fn leave_out_sentence(item: &mut Item, note: String) {
    for key in [
        fields::QA_NA_SENTENCE_CONTEXT,
        fields::QA_NA_SENTENCE_EDITS,
        fields::DONOR_TERM,
    ] {
        item.fields.remove(key);
    }
    let mut notes = item.texts(fields::WARNINGS);
    notes.push(note);
    item.set(fields::WARNINGS, notes);
}

/// The plausibility check of RECALL's sentence-edited context, which refuses nothing.
pub(super) const SENTENCE_PLAUSIBLE: &str = "plausible_qa_na_sentence";

/// Whether the row carries the note `golden_unrelated` (`pick_negative`: its golden context
/// shares no content word with the question or the golden answer, so it supports no option
/// and its control cannot measure how the reader reads).
fn golden_unrelated(item: &Item) -> bool {
    item.texts(fields::WARNINGS)
        .iter()
        .any(|w| w.split(':').next() == Some("golden_unrelated"))
}
