//! The judged checks of the reader check: an editor's questions about an edit, asked with
//! the judge prompt (`reader/judge.md`) and their own options, the first of which passes.
//! `kind` (`kind_check`, RECALL): is the edited answer the same kind of thing as the answer?
//! `coherent` (`coherence_check`): does the edited context (RECALL's non-answer-edited one,
//! KRE's negative one) contradict itself? `residual` (`residual_check`, KRE): apart from the
//! negative answer, does the negative context still support another option? `grounded`
//! (`golden_check`, KRE): does the golden context itself state every fact the golden answer
//! needs, or does reaching it take outside knowledge or a guess (a broken multi-hop chain)?
//! `plausible` (`plausible_check`, KRE's negative context, RECALL's answer-edited one; RECALL
//! also `plausible_qa_na`, the word-edited context, and `plausible_qa_na_sentence`, the
//! sentence-edited one): could a careful reader who does not know the answer accept the
//! passage as written? Asked of every row read, like the control, so that each row carries
//! the reader's verdict on the second axis of quality (DESIGN: misleading and plausible).
//! With `qa_na_question = "fit"` (RECALL), the two non-answer-edited contexts are asked the
//! plausibility question as a question of fit instead: do all the details still fit
//! together (a changed date or name beside details that still fit the old one is "somewhat")?
//! `plausible_question` chooses the question of the other passages ([`Question`]: also
//! "change", for a passage reporting a change in time or a revised record).

use super::{Mode, Planned};
use crate::prelude::*;

/// Which judged checks a recipe asks for.
#[derive(Debug, Clone, Copy)]
pub(super) struct JudgedChecks {
    pub kind: bool,
    pub coherence: bool,
    pub residual: bool,
    pub golden: bool,
    pub plausible: bool,
    /// Mode "fields" with `contradicts`: the conflict confirmation.
    pub conflict: bool,
    /// `plausible_question`: the question the passages `plausible_check` asks about (KRE's
    /// negative context, RECALL's answer-edited one, the contexts of mode "fields" unless
    /// `plausible_questions` names one per context) are asked.
    pub question: Question,
    /// `qa_na_question` (by default as `plausible_question`): the question RECALL's
    /// non-answer-edited contexts are asked.
    pub qa_na_question: Question,
}

/// The judged checks of a recipe's reader check, refused where they cannot run.
pub(super) fn checks(spec: &StepSpec, mode: Mode) -> Result<JudgedChecks, String> {
    let c = JudgedChecks {
        kind: spec.bool("kind_check", false),
        coherence: spec.bool("coherence_check", false),
        residual: spec.bool("residual_check", false),
        golden: spec.bool("golden_check", false),
        plausible: spec.bool("plausible_check", false),
        conflict: spec.str("contradicts").is_some(),
        question: Question::of(spec, "plausible_question")?.unwrap_or(Question::Plausible),
        qa_na_question: Question::Plausible,
    };
    let c = JudgedChecks {
        qa_na_question: Question::of(spec, "qa_na_question")?.unwrap_or(c.question),
        ..c
    };
    if mode == Mode::Fields && (c.kind || c.coherence || c.residual || c.golden) {
        return Err(
            "mode \"fields\" asks only `plausible_check` and `contradicts` of the editor".into(),
        );
    }
    if c.conflict && mode != Mode::Fields {
        return Err("`contradicts` is a check of mode \"fields\"".into());
    }
    if spec.str("plausible_question").is_some() && !c.plausible {
        return Err("`plausible_question` chooses the question `plausible_check` asks: it needs `plausible_check = true`".into());
    }
    if spec.str("qa_na_question").is_some() && (mode != Mode::Recall || !c.plausible) {
        return Err("`qa_na_question` asks RECALL's non-answer-edited contexts the plausibility question: it needs mode \"recall\" and `plausible_check = true`".into());
    }
    if c.kind && mode == Mode::Kre {
        return Err("`kind_check` is a check of RECALL's answer edits (mode \"recall\")".into());
    }
    if c.residual && mode == Mode::Recall {
        return Err("`residual_check` is a check of KRE's negative context (mode \"kre\")".into());
    }
    if c.golden && mode == Mode::Recall {
        return Err("`golden_check` is a check of KRE's golden context (mode \"kre\")".into());
    }
    if spec.str("judge_prompt").is_some() && !c.any() {
        return Err("`judge_prompt` needs `kind_check`, `coherence_check`, `residual_check`, `golden_check` or `plausible_check` = true".into());
    }
    Ok(c)
}

impl JudgedChecks {
    /// Whether any judged check is asked (the judge prompt is then loaded).
    pub fn any(self) -> bool {
        self.kind
            || self.coherence
            || self.residual
            || self.golden
            || self.plausible
            || self.conflict
    }
}

/// The kind check of an answer edit: `answer` replaced by `edited` in a passage that
/// `question` asks about (else `reader_wrong_kind`).
pub(super) fn kind(question: &str, answer: &str, edited: &str) -> Planned {
    judged(
        "kind",
        None,
        kind_question(question, answer, edited),
        KIND_OPTIONS.map(str::to_owned),
        "reader_wrong_kind",
    )
}

/// The coherence check of an edited `context` (RECALL's non-answer-edited context, KRE's
/// negative context; else `reader_contradiction`).
pub(super) fn coherent(context: &str) -> Planned {
    judged(
        "coherent",
        Some(context),
        COHERENCE_QUESTION.to_owned(),
        COHERENCE_OPTIONS.map(str::to_owned),
        "reader_contradiction",
    )
}

/// The residual check of KRE's negative `context`: apart from the negative answer
/// (`options[negative]`), does it also support another of the row's `options` as an answer
/// to `question`? (Else `reader_other_answer`: later sentences that still discuss the
/// golden answer after its first mention was rewritten.)
pub(super) fn residual(
    question: &str,
    context: &str,
    options: &[String],
    negative: usize,
) -> Planned {
    let target = &options[negative];
    let others: Vec<String> = options
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != negative)
        .map(|(_, o)| format!("\"{o}\""))
        .collect();
    judged(
        "residual",
        Some(context),
        format!(
            "A test asks \"{question}\" about this passage, whose answer is meant to be \"{target}\"; the test's other options are {}. Apart from \"{target}\", does the passage also state or imply any of those other options as an answer to the question?",
            others.join(", ")
        ),
        [
            format!("no: only \"{target}\""),
            "yes: it also supports another option".to_owned(),
        ],
        "reader_other_answer",
    )
}

/// The golden check of KRE's golden `context`: does it state every fact needed to reach the
/// golden answer `golden` to `question`, without outside knowledge or a guess? (Else
/// `reader_golden_gap`: data whose golden context cannot lead to its answer, such as a
/// MuSiQue chain whose passages never state one of its links; a reader told to answer from
/// what the passage implies passes its control by guessing.)
pub(super) fn grounded(question: &str, context: &str, golden: &str) -> Planned {
    judged(
        "grounded",
        Some(context),
        format!(
            "A test asks \"{question}\" about this passage and takes \"{golden}\" as its answer. Does the passage itself state every fact needed to reach \"{golden}\", so that a reader needs no outside knowledge and no guess?"
        ),
        GROUNDED_OPTIONS.map(str::to_owned),
        "reader_golden_gap",
    )
}

/// The question a plausibility check asks of a passage, on the raters' three levels (only
/// the first passes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Question {
    /// Could a careful reader who does not know the answer accept it as written?
    Plausible,
    /// Do all its details still fit together ([`FIT_QUESTION`])?
    Fit,
    /// The question of fit, and could the change or the revised record it reports really
    /// happen to such a subject ([`CHANGE_QUESTION`])?
    Change,
}

impl Question {
    /// The values a recipe writes.
    const NAMES: [(&'static str, Question); 3] = [
        ("plausible", Question::Plausible),
        ("fit", Question::Fit),
        ("change", Question::Change),
    ];

    /// The question `name` names, refused when it names none.
    pub(super) fn named(key: &str, name: &str) -> Result<Question, String> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, q)| *q)
            .ok_or_else(|| {
                format!("unknown `{key} = {name:?}`; known: \"plausible\", \"fit\", \"change\"")
            })
    }

    /// The question of the recipe's `key`, `None` when absent.
    fn of(spec: &StepSpec, key: &str) -> Result<Option<Question>, String> {
        spec.str(key).map(|n| Self::named(key, &n)).transpose()
    }

    /// How a reject's detail tells where a check asking it was asked, of `what` ("the
    /// negative context").
    pub(super) fn asked(self, what: &str) -> String {
        match self {
            Question::Plausible => {
                format!("asked whether a careful reader could accept {what} as written,")
            }
            Question::Fit => format!("asked whether the details of {what} still fit together,"),
            Question::Change => format!(
                "asked whether the change {what} reports could really happen and its details fit,"
            ),
        }
    }
}

/// The plausibility check of a generated `context` (KRE's negative context, RECALL's
/// answer-edited one): setting aside whether it is true, could a careful reader who does not
/// know the answer accept it as written? (Else `reader_implausible`: "theme-park workers call
/// a long, winding line of guests a hair".) Asked of every row read, also after an earlier
/// check failed, so that every row read carries a plausibility verdict to set beside
/// people's ratings. `name` says which passage it asks about; `reject` is `None` for
/// RECALL's sentence-edited context, whose failure leaves that context out instead
/// (`sentence_implausible`).
pub(super) fn plausible(
    name: impl Into<String>,
    context: &str,
    reject: Option<&'static str>,
    question: Question,
) -> Planned {
    let (question, options) = match question {
        Question::Plausible => (PLAUSIBLE_QUESTION, PLAUSIBLE_OPTIONS),
        Question::Fit => (FIT_QUESTION, FIT_OPTIONS),
        Question::Change => (CHANGE_QUESTION, CHANGE_OPTIONS),
    };
    Planned {
        name: name.into(),
        context: Some(context.to_owned()),
        expected: 0,
        reject,
        always: true,
        unrelated: false,
        ask: Some((question.to_owned(), options.map(str::to_owned).to_vec())),
    }
}

/// The conflict confirmation of mode "fields" (ConflictBank's): shown the `correct`
/// evidence and a `conflicting` one, would a reader trusting each alone answer `question`
/// differently? (Else `reader_no_conflict`: a conflicting evidence that states nothing
/// against the correct one, or agrees with it.) Not "can both be true at once": a temporal
/// conflict is a later state of things and a semantic one another bearer of the name, so
/// both may be true; what conflicts is the answer each leads to (asked "can both be true",
/// a capable reader refused every temporal conflict: QUALITY.md, issue 49).
pub(super) fn conflict(name: String, question: &str, correct: &str, conflicting: &str) -> Planned {
    Planned {
        name,
        context: Some(format!(
            "First text:\n{correct}\n\nSecond text:\n{conflicting}"
        )),
        expected: 0,
        reject: Some("reader_no_conflict"),
        always: false,
        unrelated: false,
        ask: Some((
            format!("The passage holds two texts. A reader who trusts the first text alone and a reader who trusts the second text alone are each asked \"{question}\". Would they give different answers?"),
            CONFLICT_OPTIONS.map(str::to_owned).to_vec(),
        )),
    }
}

/// The options of the conflict confirmation: the first passes.
const CONFLICT_OPTIONS: [&str; 2] = [
    "yes: they would answer differently",
    "no: they would give the same answer, or one text does not answer it",
];

/// A judged check: the editor's `question` with `options`, about `context` (none: the
/// question alone); the first option passes.
fn judged(
    name: &'static str,
    context: Option<&str>,
    question: String,
    options: [String; 2],
    reject: &'static str,
) -> Planned {
    Planned {
        name: name.to_owned(),
        context: context.map(str::to_owned),
        expected: 0,
        reject: Some(reject),
        always: false,
        unrelated: false,
        ask: Some((question, options.to_vec())),
    }
}

/// The options of the kind check: the first passes.
const KIND_OPTIONS: [&str; 2] = ["yes: the same kind of thing", "no: another kind of thing"];

/// The coherence check's question about the edited context.
const COHERENCE_QUESTION: &str =
    "Does any statement of this passage contradict another statement of the same passage?";

/// The options of the coherence check: the first passes.
const COHERENCE_OPTIONS: [&str; 2] = ["no: it agrees with itself", "yes: it contradicts itself"];

/// The plausibility check's question about a generated passage. A conflict passage departs
/// from what the reader may know on purpose: that is no fault here; what is judged is whether
/// the passage reads as believable evidence.
const PLAUSIBLE_QUESTION: &str = "Set aside whether this passage is true: it may differ from what you know on purpose, and that alone is no fault. Read it as someone who does not know the answer it gives, as a passage of an encyclopedia, a textbook or a news report. Which describes it best?";

/// The options of the plausibility check, the three levels of the raters' scale: only the
/// first passes. A passage with something off in it (a stretched claim, a jump, a detail
/// that does not fit) is refused too: blind raters called such passages only "somewhat"
/// plausible, and the reader's two-way question ("accept" / "reject at once") had let 10 of
/// 17 of them through on SQuAD (QUALITY.md, issue 48).
const PLAUSIBLE_OPTIONS: [&str; 3] = [
    "plausible: a careful reader who does not know the answer could take it as written",
    "somewhat: it could be a real passage, but something in it is off (a stretched claim, a jump in the reasoning, a detail that does not fit the rest)",
    "implausible: a careful reader would reject it at once (absurd, self-contradictory, or a common word given a meaning it does not have)",
];

/// The fit question about RECALL's non-answer-edited passage: its facts are changed on
/// purpose, so what is judged is whether every detail still fits the others, as far as a
/// careful reader knows the people, places and things it names, and whether a changed value
/// is one such a reader knows by heart (blind raters called a Bitcoin cap of 42 million or a
/// Coulomb constant of 7.42e9 only "somewhat" plausible where the fit question had passed
/// them: QUALITY.md, issue 48 run 5).
const FIT_QUESTION: &str = "Set aside whether this passage is true: some of its facts may differ from what you know on purpose, and that alone is no fault. Read it as a careful reader with a general education who does not know its subject well, as a passage of an encyclopedia, a textbook or a news report, and check whether all its details still fit together: each date, name, place and number must suit what the rest of the passage says (the side a person is on, a person's role and lifetime, the period, the place, what the thing described does), and none may be a figure such a reader knows by heart and would see at once as wrong (a famous constant, limit or count, a well-known date, a famous person's nationality or lifetime). Which describes it best?";

/// The options of the fit question, on the raters' three levels: only the first passes.
const FIT_OPTIONS: [&str; 3] = [
    "plausible: a careful reader who does not know the subject could take it as written, every detail fitting the rest",
    "somewhat: it could be a real passage, but a detail does not fit the rest (a date outside the period the others give, a person on the wrong side, in a role or at a time they could not have had, a name or a number that still points to something else) or is a well-known figure given wrongly",
    "implausible: a careful reader would reject it at once (absurd, self-contradictory, or a common word given a meaning it does not have)",
];

/// The question about a passage that reports a change in time or a revised record
/// (ConflictBank's temporal conflict): the question of fit, and whether what it reports could
/// really happen to such a subject. Blind raters called "somewhat" plausible the changes
/// that would be extraordinary for their subject (a college of two centuries moving to
/// another city, a man of 75 starting out as a physicist, a famous book credited anew on the
/// strength of one found document), which the question of fit had passed (QUALITY.md, issue
/// 49).
const CHANGE_QUESTION: &str = "Set aside whether this passage is true: the change or the revised record it reports may differ from what you know on purpose, and that alone is no fault. Read it as a careful reader with a general education who does not know its subject well, as a news report, a passage of a book or an encyclopedia entry, and check two things. First, whether all its details fit together: each date, name, place and number must suit what the rest of the passage says (a person's role, age and lifetime, the period, the place). Second, whether what it reports could really happen to such a subject: an ordinary event of its kind (a new post or appointment, a transfer, a citizenship granted, a register corrected on a detail few people know), not an extraordinary one (a long-established institution moving to another city, a person taking up a new career at an age they could hardly begin it, a well-known work, discovery or fact credited anew to someone else on the strength of a found document). Which describes it best?";

/// The options of the change question, on the raters' three levels: only the first passes.
const CHANGE_OPTIONS: [&str; 3] = [
    "plausible: a careful reader who does not know the subject could take it as written: what it reports is an ordinary event of its kind and every detail fits the rest",
    "somewhat: it could be a real passage, but what it reports would be extraordinary for such a subject, or a detail does not fit the rest",
    "implausible: a careful reader would reject it at once (absurd, self-contradictory, or a common word given a meaning it does not have)",
];

/// The options of the golden check: the first passes.
const GROUNDED_OPTIONS: [&str; 2] = [
    "yes: the passage states every fact needed",
    "no: a needed fact is missing or only guessed",
];

/// The kind check's question: is `edited` an answer of the sort `question` asks for, like
/// `answer` (whether or not it is true)?
fn kind_question(question: &str, answer: &str, edited: &str) -> String {
    format!(
        "A test asks \"{question}\" about a passage whose answer is \"{answer}\"; the test's writer replaced that answer with \"{edited}\". Whether or not it is true, is \"{edited}\" the same kind of thing as \"{answer}\", an answer of the sort the question asks for?"
    )
}
