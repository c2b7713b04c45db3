//! `mode = "fields"`: the reader check of rows whose question, options, contexts and letters
//! are item fields the recipe names (a general construction such as ConflictBank's).
//!
//! For each field of `contexts`, in order, the reader answers the row's question (`question`,
//! with the options of `options`) from that context alone and must pick the letter held by
//! the field of `expect` at the same place (a conflicting evidence must lead to its replaced
//! object: ConflictBank's entailment check; else `reader_disagrees`); with `contradicts`, an
//! editor is shown the context of that field (the correct evidence) beside each context and
//! must confirm they contradict each other (ConflictBank's conflict confirmation; else
//! `reader_no_conflict`); with `plausible_check`, the plausibility question of each context
//! (else `reader_implausible`). The control is the context of `control_context`, which must
//! lead to the letter of `control_expect` (the correct evidence to the true object), asked of
//! every row as in the other modes.
//!
//! Check names: `leads_FIELD` (each context), `conflict_FIELD`, `plausible_FIELD`, and
//! `control`; the quality axes count the `leads_` and `plausible_` families
//! (`cb_model::axes::Axis::family`).

use super::{judged, Control, Planned, ReaderCheck};
use crate::prelude::*;
use cb_model::letter_index;
use cb_step::fields;

/// The fields the reader check reads, by `mode`; it writes the rows' `reader` column.
pub fn fields(spec: &StepSpec) -> cb_step::StepFields {
    if let Some(f) = step_fields(spec) {
        return f;
    }
    let reads: &[&'static str] = match spec.str("mode").as_deref() {
        Some("recall") => &[
            fields::QUESTION,
            fields::OPTIONS,
            fields::ANSWER_OPTION,
            fields::EDITED_ANSWER,
            fields::QA_A_CONTEXT,
            fields::QA_NA_CONTEXT,
            fields::PARAGRAPH,
        ],
        _ => &[
            fields::QUESTION,
            fields::CHOICES,
            fields::ANSWER,
            fields::CANDIDATE,
            fields::NEGATIVE_ANSWER,
            fields::NEGATIVE_CONTEXT,
            fields::GOLDEN_CONTEXT,
        ],
    };
    cb_step::StepFields::new(reads, &[fields::READER])
}

/// The fields a reader check of mode "fields" reads (and the `reader` column it writes);
/// `None` for the other modes.
pub(super) fn step_fields(spec: &StepSpec) -> Option<cb_step::StepFields> {
    (spec.str("mode").as_deref() == Some("fields")).then(|| cb_step::StepFields {
        reads: FieldsSpec::of(spec).map(|f| f.reads()).unwrap_or_default(),
        writes: vec![fields::READER.to_owned()],
    })
}

/// The parameters of `mode = "fields"`.
pub const PARAMS: &[Param] = &[
    Param { key: "question", ty: ParamType::Text, default: "\"question\"", meaning: "mode \"fields\": the field holding the row's question." },
    Param { key: "options", ty: ParamType::Text, default: "\"options\"", meaning: "mode \"fields\": the field holding the row's options (a list of strings)." },
    Param { key: "contexts", ty: ParamType::TextList, default: "(required)", meaning: "mode \"fields\": the fields of the contexts the reader answers from, one check each." },
    Param { key: "expect", ty: ParamType::TextList, default: "(required)", meaning: "mode \"fields\": per context, the field holding the letter it must lead to." },
    Param { key: "control_context", ty: ParamType::Text, default: "none", meaning: "mode \"fields\": the control's context (the correct evidence)." },
    Param { key: "control_expect", ty: ParamType::Text, default: "none", meaning: "mode \"fields\": the field holding the letter the control must lead to." },
    Param { key: "contradicts", ty: ParamType::Text, default: "none", meaning: "mode \"fields\": a context field (the correct evidence) that the editor must find contradicted by each of `contexts` (else the reject `reader_no_conflict`)." },
    Param { key: "plausible_questions", ty: ParamType::TextList, default: "`plausible_question` for every context", meaning: "mode \"fields\" with `plausible_check`: per context, the question its plausibility check asks (\"plausible\", \"fit\" or \"change\", as `plausible_question`). The ConflictBank-style recipes ask [\"fit\", \"change\", \"plausible\"]: a misinformation evidence must fit its subject, a temporal one report a change that could really happen, and a semantic one (another bearer of the name) is not held to what the usual bearer is known for." },
];

/// The fields a check of `mode = "fields"` names.
#[derive(Debug, Clone)]
pub(super) struct FieldsSpec {
    question: String,
    options: String,
    contexts: Vec<String>,
    expect: Vec<String>,
    control: Option<(String, String)>,
    contradicts: Option<String>,
    /// `plausible_questions`: per context, the plausibility question it is asked (empty:
    /// `plausible_question`'s for every context).
    questions: Vec<judged::Question>,
}

impl FieldsSpec {
    /// The spec of a recipe entry, refused where it cannot run.
    pub(super) fn of(spec: &StepSpec) -> Result<Self, String> {
        let contexts = spec.strs("contexts").unwrap_or_default();
        let expect = spec.strs("expect").unwrap_or_default();
        if contexts.is_empty() || contexts.len() != expect.len() {
            return Err(format!(
                "mode \"fields\" needs `contexts` and `expect`, one letter field per context ({} and {} given)",
                contexts.len(),
                expect.len()
            ));
        }
        let given = spec.strs("plausible_questions");
        let questions = given.as_deref().unwrap_or_default();
        if given.is_some() && questions.len() != contexts.len() {
            return Err(format!(
                "`plausible_questions` names one question per context: {} given for {} contexts",
                questions.len(),
                contexts.len()
            ));
        }
        if given.is_some() && spec.str("plausible_question").is_some() {
            return Err("`plausible_question` (one for every context) or `plausible_questions` (one per context), not both".into());
        }
        if given.is_some() && !spec.bool("plausible_check", false) {
            return Err("`plausible_questions` chooses the questions `plausible_check` asks: it needs `plausible_check = true`".into());
        }
        let questions = questions
            .iter()
            .map(|q| judged::Question::named("plausible_questions", q))
            .collect::<Result<_, _>>()?;
        let control = match (spec.str("control_context"), spec.str("control_expect")) {
            (Some(c), Some(e)) => Some((c, e)),
            (None, None) => None,
            _ => return Err("`control_context` and `control_expect` go together".into()),
        };
        Ok(FieldsSpec {
            question: spec.str("question").unwrap_or_else(|| "question".into()),
            options: spec.str("options").unwrap_or_else(|| "options".into()),
            contexts,
            expect,
            control,
            contradicts: spec.str("contradicts"),
            questions,
        })
    }

    /// In another mode, mode "fields"'s own parameters would be ignored: refused.
    pub(super) fn refuse_own(spec: &StepSpec) -> Result<(), String> {
        let mut own = PARAMS.iter().map(|p| p.key);
        match own.find(|k| spec.params.contains_key(*k)) {
            Some(key) => Err(format!(
                "`{key}` is a parameter of mode \"fields\"; this check's mode is {:?}",
                spec.str("mode").unwrap_or_else(|| "kre".into())
            )),
            None => Ok(()),
        }
    }

    /// The fields the check reads.
    pub(super) fn reads(&self) -> Vec<String> {
        let mut out = vec![self.question.clone(), self.options.clone()];
        out.extend(self.contexts.iter().cloned());
        out.extend(self.expect.iter().cloned());
        if let Some((c, e)) = &self.control {
            out.extend([c.clone(), e.clone()]);
        }
        out.extend(self.contradicts.iter().cloned());
        out.dedup();
        out
    }

    pub(super) fn question(&self) -> &str {
        &self.question
    }

    /// A row whose fields say what each row fills in, for the questions the card quotes.
    pub(super) fn placeholder(&self) -> Vec<(String, serde_json::Value)> {
        let mut out = vec![(
            self.options.clone(),
            serde_json::json!(["[option A]", "[option B]", "[each other option]"]),
        )];
        for (c, e) in self.contexts.iter().zip(&self.expect) {
            out.push((c.clone(), format!("[the {c}]").into()));
            out.push((e.clone(), "B".into()));
        }
        if let Some((c, e)) = &self.control {
            out.push((c.clone(), format!("[the {c}]").into()));
            out.push((e.clone(), "A".into()));
        }
        if let Some(c) = &self.contradicts {
            out.push((c.clone(), format!("[the {c}]").into()));
        }
        out
    }
}

impl ReaderCheck {
    /// The field holding the row's question.
    pub(super) fn question_field(&self) -> &str {
        self.fields
            .as_ref()
            .map_or(fields::QUESTION, |f| f.question())
    }

    /// A row whose fields say what each row fills in, for the questions the card quotes.
    pub(super) fn placeholder_row(&self) -> Item {
        let mut row = super::placeholder_row(self.mode);
        if let Some(f) = &self.fields {
            row.fields
                .insert(f.question().to_owned(), super::ROW_QUESTION.into());
            row.fields.extend(f.placeholder());
        }
        row
    }

    /// The plausibility question asked of context `field`: its own of `plausible_questions`,
    /// else `plausible_question`'s.
    fn question_of(&self, field: &str) -> judged::Question {
        self.fields
            .as_ref()
            .and_then(|f| {
                f.contexts
                    .iter()
                    .position(|c| c == field)
                    .map(|i| f.questions.get(i))
            })
            .flatten()
            .copied()
            .unwrap_or(self.judged.question)
    }

    /// Mode "fields": each context must lead to its letter (then, with `contradicts`,
    /// contradict the correct evidence; with `plausible_check`, read as believable), and the
    /// control to its own.
    pub(super) fn plan_fields(
        &self,
        item: &Item,
    ) -> Result<(Vec<String>, Vec<Planned>), StepFailure> {
        let f = self
            .fields
            .as_ref()
            .expect("mode \"fields\" has its fields");
        let options = item.require_texts(&f.options)?;
        let letter_of = |field: &str| -> Result<usize, StepFailure> {
            letter_index(item.require(field)?)
                .filter(|i| *i < options.len())
                .ok_or_else(|| self.missing(&format!("`{field}` names none of the options")))
        };
        let question = item.require(&f.question)?;
        let mut checks = Vec::new();
        for (field, expect) in f.contexts.iter().zip(&f.expect) {
            let context = item.require(field)?;
            let expected = letter_of(expect)?;
            checks.push(Planned::new(
                format!("leads_{field}"),
                context,
                expected,
                Some("reader_disagrees"),
            ));
            if let Some(correct) = &f.contradicts {
                let correct = item.require(correct)?;
                checks.push(judged::conflict(
                    format!("conflict_{field}"),
                    question,
                    correct,
                    context,
                ));
            }
            if self.judged.plausible {
                checks.push(judged::plausible(
                    format!("plausible_{field}"),
                    context,
                    Some("reader_implausible"),
                    self.question_of(field),
                ));
            }
        }
        if let (Some((context, expect)), true) = (&f.control, self.control != Control::Off) {
            let expected = letter_of(expect)?;
            checks.push(Planned {
                always: true,
                ..Planned::new(
                    "control",
                    item.require(context)?,
                    expected,
                    self.control_reject(),
                )
            });
        }
        Ok((options, checks))
    }

    /// How a reject's detail says where a check of mode "fields" was asked.
    pub(super) fn asked_how_fields(&self, check: &str) -> String {
        if let Some(f) = check.strip_prefix("conflict_") {
            format!("asked whether the {f} contradicts the correct evidence,")
        } else if let Some(f) = check.strip_prefix("plausible_") {
            self.question_of(f).asked(&format!("the {f}"))
        } else if let Some(f) = check.strip_prefix("leads_") {
            format!("with the {f} alone")
        } else {
            "with the control's context".to_owned()
        }
    }
}
