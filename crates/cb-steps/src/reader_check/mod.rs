//! The papers' human check, done by a model: a reader is asked the benchmark's own
//! multiple-choice question with only the generated context, and the row stands when it
//! picks the answer that context is meant to lead to (KRE appendix A.4; RECALL's rule that a
//! non-answer edit must leave the answer as it was).
//!
//! Checks, by `mode`:
//! - `kre`: `negative` (the negative context must lead to the negative answer; else
//!   `reader_disagrees`), `control` (the golden context must lead to the golden answer; else
//!   `reader_control_failed`: an ambiguous question or a weak golden context), and, with
//!   `answer_set = true`, `answer_set` (the options alone, no question and no context: a
//!   reader that can tell the golden answer from the distractors that way shows distractors
//!   that give it away; measured and recorded, a reject `answer_set_reveals` only above
//!   `max_answer_set_share`); with `coherence_check = true`, `coherent` after `negative`
//!   (does the negative context contradict itself? Else `reader_contradiction`: a rewrite
//!   that kept the rest of the passage word for word, "created in March 1794 ... and then
//!   restructured in July 1793"); with `residual_check = true`, `residual` after those
//!   (apart from the negative answer, does the negative context also support another of the
//!   row's options? Else `reader_other_answer`: a rewritten first sentence whose later
//!   sentences still discuss the golden answer's fields as the ones close to the subject);
//!   with `golden_check = true`, `grounded` after those (does the golden context itself
//!   state every fact needed to reach the golden answer? Else `reader_golden_gap`: a MuSiQue
//!   chain whose passages never state a link, which a reader passes by guessing); with
//!   `plausible_check = true`, `plausible` after the negative context's checks (setting
//!   aside whether it is true, could a careful reader who does not know the answer accept
//!   the negative context as written? Else `reader_implausible`: "theme-park workers call a
//!   long, winding line of guests a hair").
//! - `recall`: `qa_a` (the answer-edited context leads to the edited answer), with
//!   `kind_check = true` `kind` (asked with the judge prompt: is the edited answer the same
//!   kind of thing as the answer, one the question asks for? Else `reader_wrong_kind`:
//!   "true positives" for "What kind of errors ...?"), with `plausible_check = true`
//!   `plausible` (could a careful reader accept the answer-edited context as written? Else
//!   `reader_implausible`), `qa_na` and `qa_na_sentence` (a
//!   non-answer edit leaves the original answer: else the sample is discarded, as the paper
//!   does), with `coherence_check = true` `coherent` (does the non-answer-edited context
//!   contradict itself? Else `reader_contradiction`: "the last phase of a compiler ... passes
//!   the tokens to the parser"), with `plausible_check = true` `plausible_qa_na` after those
//!   (the same question of the word-edited context; else `reader_implausible`) and
//!   `plausible_qa_na_sentence` after `qa_na_sentence` (of the sentence-edited context, built
//!   by rule and often implausible by construction: blind raters called 10 of 10 so; a
//!   failure refuses nothing, it leaves that context out, so the sample loses its
//!   sentence-edited QA-NA row alone, and its other rows carry the note
//!   `sentence_implausible: ...` naming the reader's pick), `control` (the paragraph leads to
//!   the original answer). With `qa_na_question = "fit"`, `plausible_qa_na` and
//!   `plausible_qa_na_sentence` ask instead whether all the context's details still fit
//!   together (a changed date or name beside details that still fit the old one fails).
//!
//! With `none_option = true`, every question asked with a context (KRE: `negative`,
//! `control`; RECALL: `qa_a`, `qa_na`, `qa_na_sentence`, `control`) shows one more option,
//! always last whatever the vote's order: [`NONE_OPTION`], "none of these: the passage does
//! not state what the question asks" (an answer that says it in words picks it too:
//! [`cb_step::choice::extract_offering_none`]). A reader that picks it fails the check: the
//! negative context (`reader_disagrees`) or the golden one (`reader_control_failed`: the
//! golden context does not lead to an answer, which is what the control should measure for
//! extractive data, where a capable reader otherwise picks the only option a passage names,
//! as on a MuSiQue record whose passages never name the spouse asked for). KRE's own
//! evaluation offers "None" too. The judged checks and the answer set keep their options. A
//! verdict whose majority picked it is marked `none` in the row's `reader` column: the build
//! counts such controls apart, as the data's and not the reader's
//! (`cb_model::manifest::ReaderTrust`). With `control = "record"` (CoS-E, whose golden
//! explanations often bear on no option) such a control refuses nothing: it is only set aside.
//! A failed control of a row noted `golden_unrelated` (`pick_negative`: its golden context
//! shares no content word with the question or the golden answer) is marked `unrelated` and
//! set aside the same way, whatever the reader picked: a golden context that supports no
//! option never counts against the reader.
//!
//! The control is asked of every row the reader judges, also of rows that failed an
//! earlier check (the other checks stop at the first failure that rejects the row): the
//! build measures the reader's reliability on it (`cb_model::manifest::ReaderTrust`) before
//! its verdicts are trusted. So is `plausible`, so that every row read carries the reader's
//! plausibility verdict (the `plausible` entry of its `reader` column's `checks`), to set
//! beside people's ratings. A row is judged as before: it stands when it passes its checks
//! and (with `control = "reject"`) its control; a rejected row's reason is its first failed
//! check in the order above.
//!
//! Each check asks `votes` times: first with the options in the row's order, then in seeded
//! orders (`item_rng(seed, recipe, item, "reader-CHECK-V")`); more than half of the votes
//! must pick the intended option. Every question goes through [`cb_step::choice`] (the same
//! requests and letter extraction as `conflictbench eval`), so reader calls are ordinary
//! cached calls: resume, batch, pool, budget and dry runs cover them.
//!
//! What the reader is told ([`DEFAULT_PROMPT`], `prompts/reader/question.md`): to answer
//! from the passage, even where it differs from what it knows. The check asks whether a
//! context leads a reader who reads it to its answer (KRE A.4 rates how far the negative
//! context pushes towards the negative answer; RECALL keeps a non-answer edit only when the
//! passage still gives the answer), not which answer the reader believes: a reader left to
//! choose (KRE's evaluation instructions without a hint) answers from memory where it knows
//! better and refuses good rows. The evaluation keeps KRE's own instructions.
//!
//! Several readers: `readers = ["a", "b"]` names models of `--models`; each is asked every
//! check of every row (as above), and `agree` says which rows stand: `"all"` (every reader
//! lets it stand) or `"majority"` (more than half do). The row's `reader` column holds the
//! first reader's verdicts and, under `panel`, every reader's with whether it let the row
//! stand; a refused row's reject is the first refusing reader's, naming it. The build
//! counts each reader and the agreement of each pair (`cb_model::manifest::ReaderTally`).
//!
//! Without a reader (an offline build, or `--reader none`) the step passes every row and the
//! build says it is not reader-verified.
//!
//! What the card quotes ([`Step::reader_questions`], the manifest's `reader.questions`):
//! every question the check may put, rendered as asked for a row whose fields say what each
//! row fills in (`[the negative context]`), so that the words come from the templates and
//! the judged checks' own code, never a copy.

mod ask;
mod judged;
mod named;
mod plan;
mod planned;

pub use named::{fields, PARAMS as FIELDS_PARAMS};

use planned::Planned;

pub use ask::{
    ask_check, environment, rate, Asker, Check, Env, Question, ReaderSpec, LEVELS, NONE_OPTION,
};
/// What [`ask_check`] returns.
pub use cb_step::choice::Verdict;

use crate::prelude::*;
use cb_model::letter_index;
use cb_model::manifest::ReaderQuestion;
use cb_step::choice::{PanelRecord, ReaderRecord};

/// One reader's verdicts on a row, and its first failure (reason and verdict), if any.
type Judged = (Vec<Verdict>, Option<(&'static str, Verdict)>);
use cb_step::{fields, Prompt};
use serde_json::Value;

/// The reader's question, for KRE and RECALL rows alike. Its system part is the instruction
/// (answer from the passage, even against what the reader knows), quoted word for word by
/// the card (`cb_model::manifest::ReaderInfo::instruction`) and the README.
pub const DEFAULT_PROMPT: &str = "reader/question.md";

/// Questions per check (`votes` of a recipe, `audit --votes`).
pub const VOTES: Range = Range::whole(1, 100);

/// The parameters of the reader check.
pub const PARAMS: &[Param] = &[
    Param {
        key: "mode",
        ty: ParamType::Text,
        default: "\"kre\"",
        meaning: "Which rows it reads: \"kre\", \"recall\", or \"fields\" (the question, options, contexts and letters are the fields the entry names: `contexts`, `expect`, ...).",
    },
    Param {
        key: "prompt",
        ty: ParamType::Text,
        default: "reader/question.md",
        meaning: "The question template: its system part is the reader's instruction, which the card quotes.",
    },
    Param {
        key: "votes",
        ty: ParamType::Integer(VOTES),
        default: "1",
        meaning: "Questions per check (the row's option order, then seeded orders); more than half must pick the intended option.",
    },
    Param {
        key: "control",
        ty: ParamType::Text,
        default: "\"reject\"",
        meaning: "The golden context's check, asked of every row read (it measures the reader): \"reject\" a row that fails it, \"record\" it only, or \"off\" (the reader is then never trusted: not reader-verified).",
    },
    Param {
        key: "answer_set",
        ty: ParamType::Bool,
        default: "false",
        meaning: "KRE A.4's answer-set test: the options alone, the reader's pick recorded.",
    },
    Param {
        key: "answer_set_prompt",
        ty: ParamType::Text,
        default: "reader/answer_set.md",
        meaning: "The answer-set test's template.",
    },
    Param {
        key: "max_answer_set_share",
        ty: ParamType::Number(Range::real(0.0, 1.0)),
        default: "none",
        meaning: "Reject a row whose golden answer the reader picks from the options alone in more than this share of its votes.",
    },
    Param {
        key: "kind_check",
        ty: ParamType::Bool,
        default: "false",
        meaning: "RECALL: ask whether the edited answer is the same kind of thing as the answer, an answer of the sort the question asks for (else the reject `reader_wrong_kind`).",
    },
    Param {
        key: "coherence_check",
        ty: ParamType::Bool,
        default: "false",
        meaning: "Ask whether the edited context contradicts itself (RECALL: the non-answer-edited context; KRE: the negative context, after its check passes; else the reject `reader_contradiction`).",
    },
    Param {
        key: "residual_check",
        ty: ParamType::Bool,
        default: "false",
        meaning: "KRE: after the negative check, ask whether the negative context, apart from the negative answer, also supports another of the row's options (the golden one included) as an answer (else the reject `reader_other_answer`: later sentences still discussing the golden answer).",
    },
    Param {
        key: "golden_check",
        ty: ParamType::Bool,
        default: "false",
        meaning: "KRE: after the negative context's checks, ask whether the golden context itself states every fact needed to reach the golden answer, with no outside knowledge and no guess (else the reject `reader_golden_gap`: data whose golden context cannot lead to its answer, such as a MuSiQue chain whose passages never state one of its links).",
    },
    Param {
        key: "plausible_check",
        ty: ParamType::Bool,
        default: "false",
        meaning: "Ask, as an editor, whether a careful reader who does not know the answer could accept the generated passage as written (KRE: the negative context; RECALL: the answer-edited and the word-edited contexts, and the sentence-edited one, whose failure leaves only that context out with the note `sentence_implausible` on the sample's other rows): nothing absurd, no common word given a meaning it does not have, nothing such a reader would reject at once; whether it is true is set aside. Else the reject `reader_implausible`. Asked of every row read, so each carries the verdict (`plausible` in its `reader` column). On in the bundled recipes.",
    },
    Param {
        key: "plausible_question",
        ty: ParamType::Text,
        default: "\"plausible\"",
        meaning: "With `plausible_check`: the question asked of the passages it judges (KRE's negative context, RECALL's answer-edited one, every context of mode \"fields\" unless `plausible_questions` names one per context). \"plausible\": could a careful reader who does not know the answer accept it as written; \"fit\": the question `qa_na_question = \"fit\"` asks, whether all its details still fit together (a person's role and lifetime, the period, the place) and no figure a careful reader knows by heart is wrong; \"change\", for a passage that reports a change in time or a revised record: the question of fit, and whether what it reports could really happen to such a subject (an ordinary new post, transfer or corrected detail, not a long-established institution moving city or a famous work credited anew on the strength of one found document).",
    },
    Param {
        key: "qa_na_question",
        ty: ParamType::Text,
        default: "`plausible_question`",
        meaning: "RECALL with `plausible_check`: the question the non-answer-edited contexts (word- and sentence-edited) are asked. \"plausible\": the plausibility question of every other passage; \"fit\": whether all their details still fit together (each date, name, place and number suits what the rest says: the side, a person's role and lifetime, the period, the place), on the same three levels, only the first passing. A changed value beside details that still fit the old one passes the first and not the second.",
    },
    Param {
        key: "none_option",
        ty: ParamType::Bool,
        default: "false",
        meaning: "Offer one more option, always last, with every question asked with a context (KRE: negative, control; RECALL: qa_a, qa_na, qa_na_sentence, control): \"none of these\", the passage does not state what the question asks. Picking it fails the check (negative: `reader_disagrees`; control: `reader_control_failed`, the golden context leads to no answer), and a control so answered is set aside from the reader's measure as the data's. With `control = \"reject\"` (SQuAD, MuSiQue, whose golden context must state the answer) such a row is refused; with `control = \"record\"` (CoS-E, whose golden explanations often bear on no option) it is not: the control is only set aside.",
    },
    Param {
        key: "judge_prompt",
        ty: ParamType::Text,
        default: "reader/judge.md",
        meaning: "The template of the kind, coherence, residual, golden and plausibility checks.",
    },
    Param {
        key: "max_tokens",
        ty: ParamType::Integer(cb_llm::ranges::ANSWER_TOKENS),
        default: "32",
        meaning: "Longest answer, in tokens.",
    },
    Param {
        key: "readers",
        ty: ParamType::TextList,
        default: "the build's reader",
        meaning: "Several readers, named models of --models, each asked every check of every row.",
    },
    Param {
        key: "agree",
        ty: ParamType::Text,
        default: "\"all\"",
        meaning: "With several readers, which rows stand: \"all\" (every reader lets it stand) or \"majority\" (more than half do).",
    },
];

/// The step table's constructor.
pub fn build(spec: &StepSpec, prompts: &Files) -> Result<Box<dyn Step>, StepError> {
    let bad = |m: String| StepError::Config(format!("step {}: {m}", spec.name()));
    let mode = match spec.str("mode").as_deref() {
        None | Some("kre") => Mode::Kre,
        Some("recall") => Mode::Recall,
        Some("fields") => Mode::Fields,
        Some(other) => {
            return Err(bad(format!(
                "unknown mode {other:?}; known: \"kre\", \"recall\", \"fields\""
            )))
        }
    };
    let named = match mode {
        Mode::Fields => Some(named::FieldsSpec::of(spec).map_err(bad)?),
        _ => {
            named::FieldsSpec::refuse_own(spec).map_err(bad)?;
            None
        }
    };
    // In `VOTES`, as the recipe's check made sure.
    let votes = spec.int("votes").unwrap_or(1);
    let control = match spec.str("control").as_deref() {
        None | Some("reject") => Control::Reject,
        Some("record") => Control::Record,
        Some("off") => Control::Off,
        Some(other) => {
            return Err(bad(format!(
                "unknown `control = {other:?}`; known: \"reject\", \"record\", \"off\""
            )))
        }
    };
    let answer_set = spec.bool("answer_set", false);
    let max_share = spec.f64("max_answer_set_share");
    if max_share.is_some() && !answer_set {
        return Err(bad(
            "`max_answer_set_share` needs `answer_set = true`".into()
        ));
    }
    if answer_set && mode != Mode::Kre {
        return Err(bad(
            "`answer_set` is a check of KRE's distractors (mode \"kre\")".into(),
        ));
    }
    let judged = judged::checks(spec, mode).map_err(bad)?;
    let prompt = spec
        .str("prompt")
        .unwrap_or_else(|| DEFAULT_PROMPT.to_owned());
    // The panel itself is the routing table's (`Routes::readers_of`): checked here only.
    let agree = panel_of(spec).map_err(bad)?.1;
    Ok(Box::new(ReaderCheck {
        name: spec.name().to_owned(),
        mode,
        agree,
        control,
        max_answer_set_share: max_share,
        judged,
        none_option: offers_none_option(spec),
        fields: named,
        reader: ReaderSpec {
            prompt: Prompt::load(prompts, &prompt)?,
            answer_set: optional_prompt(
                prompts,
                spec,
                answer_set,
                "answer_set_prompt",
                "reader/answer_set.md",
            )?,
            judge: optional_prompt(
                prompts,
                spec,
                judged.any(),
                "judge_prompt",
                "reader/judge.md",
            )?,
            votes: votes as u32,
            max_tokens: spec.int("max_tokens").map_or(32, |x| x as u32),
        },
    }))
}

/// Whether the recipe step `spec` is a reader check that offers [`NONE_OPTION`]
/// (`none_option`): `audit --reader-…` asks a row what its domain's recipe asks.
pub fn offers_none_option(spec: &StepSpec) -> bool {
    spec.kind == "reader_check" && spec.bool("none_option", false)
}

/// The template named by `key` (else `default`) when `wanted`.
fn optional_prompt(
    prompts: &Files,
    spec: &StepSpec,
    wanted: bool,
    key: &str,
    default: &str,
) -> Result<Option<Prompt>, StepError> {
    wanted
        .then(|| {
            Prompt::load(
                prompts,
                &spec.str(key).unwrap_or_else(|| default.to_owned()),
            )
        })
        .transpose()
}

/// The readers a recipe names (`readers`) and how their verdicts combine (`agree`).
fn panel_of(spec: &StepSpec) -> Result<(Vec<String>, Agree), String> {
    let given = spec.strs("readers");
    if given.as_ref().is_some_and(Vec::is_empty) {
        return Err("`readers = []` names nobody: name models of --models, or leave `readers` out to read with the build's reader".into());
    }
    let readers = given.unwrap_or_default();
    let mut seen = std::collections::BTreeSet::new();
    if let Some(twice) = readers.iter().find(|r| !seen.insert(r.as_str())) {
        return Err(format!("`readers` names {twice:?} twice"));
    }
    let agree = match spec.str("agree").as_deref() {
        _ if spec.str("agree").is_some() && readers.is_empty() => {
            return Err("`agree` needs `readers` (several named readers)".into())
        }
        None | Some("all") => Agree::All,
        Some("majority") => Agree::Majority,
        Some(other) => {
            return Err(format!(
                "unknown `agree = {other:?}`; known: \"all\", \"majority\""
            ))
        }
    };
    Ok((readers, agree))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Kre,
    Recall,
    /// The fields the recipe names (`named::FieldsSpec`).
    Fields,
}

/// Which rows stand when several readers judge them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Agree {
    /// Every reader lets the row stand.
    All,
    /// More than half of the readers do (with two, both).
    Majority,
}

/// What a failing control does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Control {
    Reject,
    /// Asked and recorded, never a reject (the commonsense parts keep their released golden
    /// explanations, weak ones included).
    Record,
    Off,
}

/// The reader check of a recipe (see the module documentation).
#[derive(Debug)]
pub struct ReaderCheck {
    name: String,
    mode: Mode,
    agree: Agree,
    control: Control,
    max_answer_set_share: Option<f64>,
    /// The judged checks asked (`kind_check`, `coherence_check`, `residual_check`,
    /// `golden_check`).
    judged: judged::JudgedChecks,
    /// Offer [`NONE_OPTION`] last with every question asked with a context.
    none_option: bool,
    /// Mode "fields": the fields it reads.
    fields: Option<named::FieldsSpec>,
    reader: ReaderSpec,
}

impl ReaderCheck {
    async fn apply(&self, item: &mut Item, ctx: &StepCtx<'_>) -> Result<(), StepFailure> {
        // Who reads is the routing table's answer (the panel, else the build's reader).
        let routed = ctx.routes.readers_of(&self.name);
        let readers: Vec<&cb_llm::Llm> = routed.iter().map(|(_, l)| *l).collect();
        if readers.is_empty() {
            item.set(fields::READER, Value::Null);
            return Ok(());
        }
        let (choices, planned) = self.plan(item)?;
        let question = item.require(self.question_field())?.to_owned();
        let q = Question {
            id: &item.id,
            question: &question,
            choices: &choices,
        };
        let mut judged = Vec::new();
        for (k, reader) in readers.iter().enumerate() {
            let asker = Asker {
                reader,
                spec: &self.reader,
                env: ctx.env,
                seed: ctx.seed,
                scope: ctx.recipe,
                step: &self.name,
            };
            let mut calls = Vec::new();
            let asked = self.ask_planned(asker, q, &planned, &mut calls).await;
            let name = routed[k].0.map(str::to_owned);
            for c in &mut calls {
                c.model.clone_from(&name);
            }
            item.calls.append(&mut calls);
            judged.push(asked?);
        }
        let record = self.record(&readers, &judged);
        item.set(
            fields::READER,
            serde_json::to_value(&record).expect("a reader record serialises"),
        );
        let sentence = self.sentence_note(&readers, &judged, &planned);
        self.judge(&readers, judged, &choices, &planned)?;
        if let Some(note) = sentence {
            plan::leave_out_sentence(item, note);
        }
        Ok(())
    }

    /// The row's `reader` column: the first reader's verdicts, and with several readers each
    /// one's.
    fn record(&self, readers: &[&cb_llm::Llm], judged: &[Judged]) -> ReaderRecord {
        let panel = if readers.len() > 1 {
            readers
                .iter()
                .zip(judged)
                .map(|(r, (verdicts, failed))| PanelRecord {
                    model: r.config().model.clone(),
                    endpoint: r.endpoint().to_owned(),
                    stands: failed.is_none(),
                    checks: verdicts.clone(),
                })
                .collect()
        } else {
            Vec::new()
        };
        ReaderRecord {
            model: readers[0].config().model.clone(),
            endpoint: readers[0].endpoint().to_owned(),
            votes: self.reader.votes,
            checks: judged[0].0.clone(),
            panel,
        }
    }

    /// Whether the row stands by its readers' verdicts (one reader: its own; several: as
    /// `agree` says); a refused row's reject is the first failing reader's.
    fn judge(
        &self,
        readers: &[&cb_llm::Llm],
        judged: Vec<Judged>,
        choices: &[String],
        planned: &[Planned],
    ) -> Result<(), StepFailure> {
        let standing = judged.iter().filter(|(_, f)| f.is_none()).count();
        let n = judged.len();
        let stands = match self.agree {
            Agree::All => standing == n,
            Agree::Majority => 2 * standing > n,
        };
        if stands {
            return Ok(());
        }
        let (i, (reason, v)) = judged
            .into_iter()
            .enumerate()
            .find_map(|(i, (_, f))| f.map(|f| (i, f)))
            .expect("a refused row has a failing reader");
        // A judged check's picks name its own options (a pick of the none option names it:
        // `cb_model::picked_option`).
        let shown = planned
            .iter()
            .find(|p| p.name == v.check)
            .and_then(|p| p.ask.as_ref())
            .map_or(choices, |(_, o)| o.as_slice());
        let mut reject = self.rejection(reason, &v, shown);
        if n > 1 {
            if let StepFailure::Reject { detail, .. } = &mut reject {
                let rule = match self.agree {
                    Agree::All => "all",
                    Agree::Majority => "majority",
                };
                *detail = format!(
                    "{detail} (reader {}; {standing} of {n} readers let the row stand, agree = \"{rule}\")",
                    readers[i].config().model
                );
            }
        }
        Err(reject)
    }

    /// Asks the planned checks in turn, up to the first that rejects the item and then the
    /// checks asked always (the control); the first failure's reason and verdict come back
    /// with the verdicts; every call made goes to `calls`.
    async fn ask_planned(
        &self,
        asker: Asker<'_>,
        q: Question<'_>,
        planned: &[Planned],
        calls: &mut Vec<cb_step::CallRecord>,
    ) -> Result<(Vec<Verdict>, Option<(&'static str, Verdict)>), StepFailure> {
        let mut verdicts = Vec::new();
        let mut first_failure = None;
        for p in planned {
            if first_failure.is_some() && !p.always {
                continue;
            }
            let (check, q) = self.check_of(p, q);
            let mut v = ask_check(asker, q, &check).await.map_err(|e| {
                let context = format!(
                    "{}: the reader gave no answer to the {} check",
                    self.name, p.name
                );
                StepFailure::from_llm(e, &context, 0)
            })?;
            calls.extend(v.calls.iter().cloned());
            // A golden context that supports no option fails the data, not the reader.
            v.unrelated = p.unrelated && !v.passed;
            let reveals = p.name == "answer_set"
                && self.max_answer_set_share.is_some_and(|max| v.share() > max);
            let failed = match (v.passed, p.reject) {
                (false, Some(reason)) => Some(reason),
                _ if reveals => Some("answer_set_reveals"),
                _ => None,
            };
            if let (Some(reason), None) = (failed, &first_failure) {
                first_failure = Some((reason, v.clone()));
            }
            verdicts.push(v);
        }
        Ok((verdicts, first_failure))
    }

    /// Planned check `p` of the row's question `q` as asked: its check, and the question it
    /// puts (a judged check's own, else `q`).
    fn check_of<'a>(&self, p: &'a Planned, q: Question<'a>) -> (Check<'a>, Question<'a>) {
        let check = Check {
            name: &p.name,
            context: p.context.as_deref(),
            expected: p.expected,
            judged: p.ask.is_some(),
            none_option: self.offers_none(p),
        };
        let q = match &p.ask {
            Some((question, options)) => Question {
                id: q.id,
                question,
                choices: options,
            },
            None => q,
        };
        (check, q)
    }

    /// Whether check `p` shows [`NONE_OPTION`]: with `none_option`, every question of the
    /// row's own asked with a context.
    fn offers_none(&self, p: &Planned) -> bool {
        self.none_option && p.ask.is_none() && p.context.is_some()
    }

    /// The reject of an item whose check `v` failed for `reason` (`choices`: the row's
    /// options, or a judged check's own).
    fn rejection(&self, reason: &str, v: &Verdict, choices: &[String]) -> StepFailure {
        let what = &self.asked_how(&v.check);
        let expected = letter_index(&v.expected)
            .and_then(|i| choices.get(i))
            .map_or("", String::as_str);
        let detail = if reason == "answer_set_reveals" {
            format!(
                "{reason}: from the options alone the reader picked the golden answer \"{}\" ({expected}) in {:.0} % of its votes, above max_answer_set_share {}",
                v.expected,
                100.0 * v.share(),
                self.max_answer_set_share.unwrap_or(1.0)
            )
        } else {
            let none = match (v.none, v.check.as_str()) {
                (false, _) => "",
                (true, "control") => {
                    " found no answer in the passage (the golden context does not lead to an answer):"
                }
                (true, _) => " found no answer in the passage:",
            };
            format!(
                "{reason}: {what} the reader{none} picked {}, not \"{}\" ({expected})",
                v.pick_named(choices),
                v.expected
            )
        };
        StepFailure::Reject {
            reason: reason.to_owned(),
            detail: format!("{}: {detail}", self.name),
            raw: None,
            attempts: v.calls.len() as u32,
        }
    }
}

/// What the reader's own question shows in the questions the card quotes.
const ROW_QUESTION: &str = "[the row's question]";

/// A row of `mode` whose fields say what each row fills in, for the questions the card quotes:
/// the golden (original) answer first, the negative (edited) one second.
fn placeholder_row(mode: Mode) -> Item {
    let options = |golden: &str, other: &str| -> Value {
        [golden, other, "[each other option]"].as_slice().into()
    };
    let row: Vec<(&str, Value)> = match mode {
        Mode::Kre => vec![
            (
                fields::CHOICES,
                options("[the golden answer]", "[the negative answer]"),
            ),
            (fields::ANSWER, "A".into()),
            (fields::CANDIDATE, "B".into()),
            (fields::NEGATIVE_ANSWER, "[the negative answer]".into()),
            (fields::NEGATIVE_CONTEXT, "[the negative context]".into()),
            (fields::GOLDEN_CONTEXT, "[the golden context]".into()),
        ],
        Mode::Recall => vec![
            (
                fields::OPTIONS,
                options("[the original answer]", "[the edited answer]"),
            ),
            (fields::ANSWER_OPTION, "A".into()),
            (fields::EDITED_ANSWER, "[the edited answer]".into()),
            (fields::QA_A_CONTEXT, "[the answer-edited paragraph]".into()),
            (
                fields::QA_NA_CONTEXT,
                "[the non-answer-edited paragraph]".into(),
            ),
            (
                fields::QA_NA_SENTENCE_CONTEXT,
                "[the paragraph with a sentence inserted]".into(),
            ),
            (fields::PARAGRAPH, "[the paragraph]".into()),
        ],
        Mode::Fields => Vec::new(),
    };
    Item {
        index: 0,
        id: String::new(),
        origin: cb_model::Origin {
            file: String::new(),
            line: 0,
        },
        fields: std::iter::once((fields::QUESTION, ROW_QUESTION.into()))
            .chain(row)
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
        calls: Vec::new(),
    }
}

impl Step for ReaderCheck {
    fn name(&self) -> &str {
        &self.name
    }

    fn prompt(&self) -> Option<&Prompt> {
        Some(&self.reader.prompt)
    }

    fn prompts(&self) -> Vec<&Prompt> {
        std::iter::once(&self.reader.prompt)
            .chain(&self.reader.answer_set)
            .chain(&self.reader.judge)
            .collect()
    }

    fn reads(&self) -> bool {
        true
    }

    /// Every question the check may put, word for word, in the order asked: the messages of
    /// the checks planned for a row whose fields say what each row fills in (`[the row's
    /// question]`, `[the negative context]`, ...), its options in the row's order.
    fn reader_questions(&self) -> Vec<ReaderQuestion> {
        let row = self.placeholder_row();
        let (choices, planned) = self
            .plan(&row)
            .expect("the placeholder row has every field a plan reads");
        let q = Question {
            id: "",
            question: ROW_QUESTION,
            choices: &choices,
        };
        let env = environment();
        planned
            .iter()
            .filter_map(|p| {
                let (check, q) = self.check_of(p, q);
                let order: Vec<usize> = (0..q.choices.len()).collect();
                let prompt = self.reader.prompt_of(&check);
                // A template that does not render stopped the build at its first question.
                let (messages, _) = ask::messages(&env, prompt, q, &check, &order).ok()?;
                let part = |role: &str| {
                    messages
                        .iter()
                        .rfind(|m| m.role == role)
                        .map_or(String::new(), |m| m.content.trim().to_owned())
                };
                Some(ReaderQuestion {
                    check: p.name.clone(),
                    told: part("system"),
                    asked: part("user"),
                })
            })
            .collect()
    }

    fn run<'a>(&'a self, item: &'a mut Item, ctx: &'a StepCtx<'_>) -> StepFuture<'a> {
        Box::pin(self.apply(item, ctx))
    }
}

#[cfg(test)]
mod instruction {
    use super::*;

    /// The kind check is RECALL's; a judge prompt without a judged check would be ignored.
    #[test]
    fn judged_checks_are_refused_where_they_cannot_run() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let prompts = Files::Dir(root.join("prompts"));
        let err = |toml: &str| {
            let spec: StepSpec = toml::from_str(toml).unwrap();
            build(&spec, &prompts).unwrap_err().to_string()
        };
        let e = err("kind = \"reader_check\"\nkind_check = true");
        assert!(e.contains("a check of RECALL's answer edits"), "{e}");
        let e = err("kind = \"reader_check\"\nmode = \"recall\"\nresidual_check = true");
        assert!(
            e.contains("`residual_check` is a check of KRE's negative context"),
            "{e}"
        );
        let e =
            err("kind = \"reader_check\"\nmode = \"recall\"\njudge_prompt = \"reader/judge.md\"");
        assert!(e.contains("`judge_prompt` needs"), "{e}");
        // The fit question is RECALL's, and a variant of the plausibility question.
        let e = err("kind = \"reader_check\"\nplausible_check = true\nqa_na_question = \"fit\"");
        assert!(e.contains("`qa_na_question` asks RECALL's"), "{e}");
        let e = err("kind = \"reader_check\"\nmode = \"recall\"\nqa_na_question = \"fit\"");
        assert!(
            e.contains("needs mode \"recall\" and `plausible_check = true`"),
            "{e}"
        );
        let e = err("kind = \"reader_check\"\nmode = \"recall\"\nplausible_check = true\nqa_na_question = \"coherent\"");
        assert!(
            e.contains("unknown `qa_na_question = \"coherent\"`; known: \"plausible\", \"fit\", \"change\""),
            "{e}"
        );
        // The question of the plausibility check: a choice of two, only with the check.
        let e = err("kind = \"reader_check\"\nplausible_question = \"fit\"");
        assert!(e.contains("it needs `plausible_check = true`"), "{e}");
        let e =
            err("kind = \"reader_check\"\nplausible_check = true\nplausible_question = \"fits\"");
        assert!(
            e.contains("unknown `plausible_question = \"fits\"`; known: \"plausible\", \"fit\", \"change\""),
            "{e}"
        );
        let e = err("kind = \"reader_check\"\nmode = \"recall\"\nplausible_questions = [\"fit\"]");
        assert!(
            e.contains("`plausible_questions` is a parameter of mode \"fields\"; this check's mode is \"recall\""),
            "{e}"
        );
        let e = err("kind = \"reader_check\"\ncontexts = [\"a\"]");
        assert!(
            e.contains("`contexts` is a parameter of mode \"fields\""),
            "{e}"
        );
        // Mode "fields": one question per context, each a known one.
        let fields = "kind = \"reader_check\"\nmode = \"fields\"\ncontexts = [\"a\", \"b\"]\nexpect = [\"x\", \"y\"]\nplausible_check = true\n";
        let e = err(&format!("{fields}plausible_questions = [\"fit\"]"));
        assert!(
            e.contains("one question per context: 1 given for 2 contexts"),
            "{e}"
        );
        let e = err(&format!("{fields}plausible_questions = []"));
        assert!(
            e.contains("one question per context: 0 given for 2 contexts"),
            "{e}"
        );
        let e = err(&format!("{fields}plausible_questions = [\"fit\", \"odd\"]"));
        assert!(e.contains("unknown `plausible_questions = \"odd\"`"), "{e}");
        let e = err(&format!(
            "{fields}plausible_questions = [\"fit\", \"change\"]\nplausible_question = \"fit\""
        ));
        assert!(e.contains("not both"), "{e}");
        let e = err(&format!(
            "{}plausible_questions = [\"fit\", \"change\"]",
            fields.replace("plausible_check = true\n", "")
        ));
        assert!(e.contains("it needs `plausible_check = true`"), "{e}");
        let spec: StepSpec =
            toml::from_str("kind = \"reader_check\"\nmode = \"recall\"\ncoherence_check = true")
                .unwrap();
        let step = build(&spec, &prompts).unwrap();
        let names: Vec<&str> = step.prompts().iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["reader/question.md", "reader/judge.md"]);
    }

    /// The guide's chapter on the reader check (`docs/reader-check.md`) quotes what the reader
    /// is told word for word, from the bundled prompt's system part (what the card quotes from
    /// the manifest), and that part says how to use the passage; and the none option's words.
    #[test]
    fn the_guide_quotes_the_readers_instruction_word_for_word() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let p = Prompt::load(&Files::Dir(root.join("prompts")), DEFAULT_PROMPT).unwrap();
        let said = p.system.trim();
        assert!(
            said.contains("from the passage")
                && said.contains("even where it differs from what you know"),
            "{said}"
        );
        let guide = std::fs::read_to_string(root.join("docs/reader-check.md")).unwrap();
        assert!(
            guide.contains(&format!("\n  \"{said}\"\n")),
            "docs/reader-check.md does not quote the reader's instruction {said:?}"
        );
        // The none option's words, as `none_option` shows them.
        let flat = guide.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains(&format!("\"{NONE_OPTION}\"")),
            "docs/reader-check.md does not quote the none option {NONE_OPTION:?}"
        );
    }
}
