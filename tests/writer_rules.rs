#![allow(clippy::print_stderr)] // the test prints the reasons it could not break and its count
//! Every refusal of a writer's answer is asked again with its reason (issue 48 item 3): for
//! each reject reason of each writer step ([`cb_steps::reasons::WRITER_RULES`], and the
//! common ones of [`cb_steps::reasons::COMMON_WRITER_RULES`]), a scripted model first gives
//! an answer refused for that reason, then a good one when the request says why the first
//! was refused; the step, resampling once, must end with the good answer, the second request
//! carrying "could not be used: CODE: ...". The steps run in process, on the bundled prompts,
//! against the mock server. A reason of the table with no case here fails the test.

use cb_mock::{responder, ChatRequest, MockServer, Reply};
use cb_step::{Corpus, Files, Item, Routes, StepCtx, StepFailure, StepSpec};
use cb_steps::reasons::{COMMON_WRITER_RULES, WRITER_RULES};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::path::Path;

/// What the scripted model is shown and answers, and what the step must do.
enum Outcome {
    /// The first answer is refused for the reason, asked again with it, and the second kept.
    Resampled {
        bad: &'static str,
        good: &'static str,
    },
    /// The server stops at the length limit (`truncated`), then answers `good`.
    Truncated { good: &'static str },
    /// Not a refusal of the answer but its verdict: the row is refused at once, without a
    /// second request (`no_believable_negative`: the model judged no option believable).
    Verdict { answer: &'static str },
    /// No answer can reach this rule: an earlier rule of the same validator refuses first.
    Unreachable { why: &'static str },
}

struct Case {
    kind: &'static str,
    code: &'static str,
    setup: Setup,
    outcome: Outcome,
}

#[derive(Clone, Copy)]
enum Setup {
    Choice,
    Causal,
    Pick,
    Options,
    Rewrite,
    ParaRecord,
    ParaText,
    QaRecord,
    QaText,
    EditRecord,
    EditText,
    NaRecord,
    Evidence,
}

const TRIAL_PARAGRAPH: &str = "The Trial of Joan of Arc, in which Joan of Arc was tried for heresy, opened on 9 January 1431 and closed on 29 May 1431 in Rouen, with Pierre Cauchon as judge.";
const STACK_PARAGRAPH: &str = "A stack is a collection whose items are pushed onto and popped from its top, so the last one added leaves first.";
const BRIDGE: &str = "The Brooklyn Bridge opened in 1883. Its chief engineer, Washington Roebling, directed the work from his apartment after falling ill.";

fn trial() -> Value {
    json!([
        {"key": "name", "value": "Trial of Joan of Arc", "kind": "name"},
        {"key": "description", "value": "Joan of Arc was tried for heresy.", "kind": "description"},
        {"key": "begin time", "value": "9 January 1431", "kind": "date"},
        {"key": "end time", "value": "29 May 1431", "kind": "date"},
        {"key": "location", "value": "Rouen", "kind": "place"},
        {"key": "judge", "value": "Pierre Cauchon", "kind": "actor"},
    ])
}

impl Setup {
    /// The recipe entry of the step (resampling once) and the item's fields.
    fn entry_and_fields(self) -> (String, Value) {
        let (entry, fields) = match self {
            Setup::Choice => (
                "kind = \"negative_explanation\"\nprompt = \"kre/negative_explanation_choice.md\"\nrequire_mention = true\nmax_words = 60",
                json!({"question": "Where do people usually keep a spare blanket?",
                       "choices": ["closet", "attic", "river", "cloud", "oven"], "answer": "A",
                       "golden_context": "The closets of a house hold the spare bedding, so that it is near when it is needed in the night.",
                       "negative_answer": "attic", "candidate": "B"}),
            ),
            Setup::Causal => (
                "kind = \"negative_explanation\"\nprompt = \"kre/negative_explanation_causal.md\"\nmax_words = 60",
                json!({"question": "The streets were wet in the morning. What is the more possible cause of this?",
                       "premise": "The streets were wet in the morning.", "ask_for": "cause",
                       "choices": ["It rained during the night.", "The shops opened late."], "answer": "A",
                       "golden_context": "Rain wets the streets.",
                       "negative_answer": "The shops opened late.", "candidate": "B"}),
            ),
            Setup::Pick => (
                "kind = \"pick_negative\"",
                json!({"question": "Where would you most likely find a stapler?",
                       "choices": ["office", "desk drawer", "river", "cloud", "hair"], "answer": "A",
                       "golden_context": "Offices keep staplers for paperwork."}),
            ),
            Setup::Options => (
                "kind = \"distractors\"",
                json!({"question": "Who was the chief engineer of the Brooklyn Bridge?",
                       "golden_context": BRIDGE, "answer_text": "Washington Roebling", "aliases": []}),
            ),
            Setup::Rewrite => (
                "kind = \"negative_context\"",
                json!({"question": "Who was the chief engineer of the Brooklyn Bridge?",
                       "golden_context": BRIDGE, "answer_text": "Washington Roebling", "aliases": [],
                       "negative_answer": "James Eads"}),
            ),
            Setup::ParaRecord => ("kind = \"paraphrase\"\nmode = \"record\"", json!({"kv": trial()})),
            Setup::ParaText => (
                "kind = \"paraphrase\"\nmode = \"text\"",
                json!({"term": "stack", "sentences": [
                    "A stack is a collection where the last item added is the first removed.",
                    "Items are pushed onto the top of a stack and popped from the top."]}),
            ),
            Setup::QaRecord => (
                "kind = \"qa\"\nmode = \"record\"",
                json!({"kv": trial(), "paragraph": "The Trial of Joan of Arc, in which Joan of Arc was tried for heresy, opened on 9 January 1431 and closed on 29 May 1431 in Rouen."}),
            ),
            Setup::QaText => (
                "kind = \"qa\"\nmode = \"text\"",
                json!({"term": "stack", "paragraph": STACK_PARAGRAPH}),
            ),
            Setup::EditRecord => (
                "kind = \"answer_edit\"\nmode = \"record\"",
                json!({"kv": trial(), "paragraph": TRIAL_PARAGRAPH, "question": "Where was the trial held?",
                       "answer": "Rouen", "answer_value": "Rouen", "answer_kind": "place",
                       "answer_key": "location", "domain": "events"}),
            ),
            Setup::EditText => (
                "kind = \"answer_edit\"\nmode = \"text\"",
                json!({"term": "stack", "paragraph": STACK_PARAGRAPH, "question": "From where are items popped in a stack?",
                       "answer": "its top", "answer_value": "its top", "answer_kind": "phrase",
                       "answer_key": "", "domain": "computing"}),
            ),
            Setup::NaRecord => (
                "kind = \"nonanswer_edit\"\nmode = \"record\"",
                json!({"kv": trial(), "paragraph": TRIAL_PARAGRAPH, "question": "Where was the trial held?",
                       "answer": "Rouen", "answer_value": "Rouen", "answer_kind": "place",
                       "answer_key": "location", "edited_answer": "Lyon"}),
            ),
            Setup::Evidence => (
                "kind = \"write_text\"\nprompt = \"conflictbank/misinformation_evidence.md\"\ninto = \"misinformation_evidence\"\nmention = [\"subject\", \"replaced_object\"]\nmust_not_mention = [\"object\", \"object_aliases\"]\nmax_words = 60\noffline_template = \"{{ subject }}\"",
                json!({"subject": "Douglas Adams", "relation": "occupation", "object": "writer",
                       "object_aliases": ["author"], "replaced_object": "physicist",
                       "misinformation_style": "news"}),
            ),
        };
        let entry = format!(
            "{entry}\ntemperature = 0.5\non_invalid = \"resample\"\nretries_on_invalid = 1\n"
        );
        (entry, fields)
    }
}

const EXPLANATION: &str =
    "Many houses store spare bedding in the attic, packed in bags that keep dust and moths away until winter.";
const OPTIONS: &str = r#"{"options": ["John Smeaton", "Thomas Telford", "James Eads"]}"#;
const REWRITE: &str = "The Brooklyn Bridge opened in 1883. Its chief engineer, James Eads, directed the work from his apartment after falling ill.";
const PARAGRAPH: &str = TRIAL_PARAGRAPH;
const CONDENSED: &str = "A stack is a collection whose items are pushed onto and popped from its top, so the last one added leaves first.";
const QUESTION: &str =
    r#"{"key": "location", "question": "Where was the trial held?", "answer": "Rouen"}"#;
const TEXT_QUESTION: &str =
    r#"{"question": "From where are items popped in a stack?", "answer": "its top"}"#;
const EDITED: &str = r#"{"edited_answer": "Lyon"}"#;
const EDITS: &str =
    r#"{"replacements": [{"original": "9 January 1431", "edited": "2 February 1430"}]}"#;
const EVIDENCE: &str = "Douglas Adams works as a physicist at a research institute in Cambridge, colleagues said on Monday, where he studies the behaviour of cold gases.";
const LONG_EVIDENCE: &str = "Douglas Adams works as a physicist at a research institute in Cambridge, colleagues said on Monday, where he studies the behaviour of cold gases. His group built a new cooling stage last spring, and the first measurements came in over the summer. Douglas Adams leads the team of nine, teaches a course on thermodynamics, and writes the yearly report that the institute sends to its funders, a physicist's account of what worked and what did not.";
const REFUSAL: &str = "I'm sorry, but I can't help with that.";

fn case(kind: &'static str, code: &'static str, setup: Setup, outcome: Outcome) -> Case {
    Case {
        kind,
        code,
        setup,
        outcome,
    }
}

fn re(bad: &'static str, good: &'static str) -> Outcome {
    Outcome::Resampled { bad, good }
}

fn cases() -> Vec<Case> {
    use Setup::*;
    let long = "Many houses store spare bedding in the attic, packed in bags beside the suitcases, the holiday decorations, the old toys, the winter coats, the spare curtains and the boxes of photographs that gather there year after year, because the attic is where a household keeps whatever it needs only a few weeks a year, safe from dust, damp and moths until the cold returns.";
    vec![
        // The common rules, decided before any step's own: shown on one writer.
        case("negative_explanation", "truncated", Choice, Outcome::Truncated { good: EXPLANATION }),
        case("negative_explanation", "prompt_echo", Choice, re("The question asks about a blanket, and the answer is that an attic holds one in many homes.", EXPLANATION)),
        case("negative_explanation", "other_language", Choice, re("Muchas casas guardan la ropa de cama de repuesto en el desván, dentro de bolsas que la protegen del polvo y de las polillas.", EXPLANATION)),
        // negative_explanation
        case("negative_explanation", "empty", Choice, re("  ", EXPLANATION)),
        case("negative_explanation", "refusal", Choice, re(REFUSAL, EXPLANATION)),
        case("negative_explanation", "denies_negative", Choice, re("An attic would not be the usual place, though many houses store spare bedding up there in bags.", EXPLANATION)),
        case("negative_explanation", "too_long", Choice, re(long, EXPLANATION)),
        case("negative_explanation", "states_golden", Choice, re("Many houses store spare bedding in the attic, though a closet holds some too.", EXPLANATION)),
        case("negative_explanation", "supports_golden", Causal, re("Rain during the night soaks the streets before shops open.", "Shopkeepers who open late hose down their pavements at dawn, and the water still covers the street when people arrive.")),
        case("negative_explanation", "restates_negative", Choice, re("attic.", EXPLANATION)),
        case("negative_explanation", "restates_question", Choice, re("People usually keep a spare blanket in the attic.", EXPLANATION)),
        case("negative_explanation", "no_mention", Choice, re("Many houses store spare bedding under the roof, packed in bags that keep dust and moths away.", EXPLANATION)),
        // pick_negative (the believable pick)
        case("pick_negative", "bad_json", Pick, re("B", r#"{"option": "B"}"#)),
        case("pick_negative", "bad_choice", Pick, re(r#"{"option": "A"}"#, r#"{"option": "B"}"#)),
        case("pick_negative", "no_believable_negative", Pick, Outcome::Verdict { answer: r#"{"option": "none"}"# }),
        // distractors
        case("distractors", "bad_json", Options, re("John Smeaton, Thomas Telford, James Eads", OPTIONS)),
        case("distractors", "bad_options", Options, re(r#"{"options": ["Roebling", "Thomas Telford", "James Eads"]}"#, OPTIONS)),
        case("distractors", "negative_in_context", Options, re(r#"{"options": ["1883", "Brooklyn", "apartment"]}"#, OPTIONS)),
        // negative_context
        case("negative_context", "empty", Rewrite, re("  ", REWRITE)),
        case("negative_context", "refusal", Rewrite, re(REFUSAL, REWRITE)),
        case("negative_context", "restates_negative", Rewrite, re("James Eads.", REWRITE)),
        case("negative_context", "no_mention", Rewrite, re("The Brooklyn Bridge opened in 1883. Its chief engineer directed the work from his apartment after falling ill.", REWRITE)),
        case("negative_context", "states_golden", Rewrite, re("The Brooklyn Bridge opened in 1883. Its chief engineer, James Eads, directed the work from his apartment after Washington Roebling fell ill.", REWRITE)),
        case("negative_context", "too_different", Rewrite, re("James Eads designed a bridge.", REWRITE)),
        // paraphrase
        case("paraphrase", "empty", ParaRecord, re("  ", PARAGRAPH)),
        case("paraphrase", "refusal", ParaRecord, re(REFUSAL, PARAGRAPH)),
        case("paraphrase", "missing_values", ParaRecord, re("The Trial of Joan of Arc opened on 9 January 1431 in Rouen.", PARAGRAPH)),
        case("paraphrase", "no_term", ParaText, re("A collection whose items are pushed onto and popped from its top lets the last one added leave first.", CONDENSED)),
        case("paraphrase", "too_long", ParaText, re("A stack is a collection where the last item added is the first removed, and its items are pushed onto the top of the stack and popped from the top of the stack, one after another.", CONDENSED)),
        // qa
        case("qa", "bad_json", QaRecord, re("Where was the trial held? Rouen", QUESTION)),
        case("qa", "bad_question", QaRecord, re(r#"{"key": "location", "question": "The place of the trial", "answer": "Rouen"}"#, QUESTION)),
        case("qa", "bad_key", QaRecord, re(r#"{"key": "venue", "question": "Where was the trial held?", "answer": "Rouen"}"#, QUESTION)),
        case("qa", "bad_answer", QaRecord, re(r#"{"key": "location", "question": "Where was the trial held?", "answer": "Paris"}"#, QUESTION)),
        case("qa", "not_in_paragraph", QaRecord, re(r#"{"key": "judge", "question": "Who judged the trial?", "answer": "Pierre Cauchon"}"#, QUESTION)),
        case("qa", "answer_in_question", QaRecord, re(r#"{"key": "location", "question": "Was the trial held in Rouen?", "answer": "Rouen"}"#, QUESTION)),
        case("qa", "too_long", QaText, re(r#"{"question": "What is a stack?", "answer": "a collection whose items are pushed onto and popped from its top, so the last one"}"#, TEXT_QUESTION)),
        case("qa", "not_verbatim", QaText, re(r#"{"question": "From where are items popped in a stack?", "answer": "the bottom"}"#, TEXT_QUESTION)),
        // answer_edit
        case("answer_edit", "bad_json", EditRecord, re("Lyon", EDITED)),
        case("answer_edit", "refusal", EditRecord, re(r#"{"edited_answer": "I'm sorry, but I can't help with that."}"#, EDITED)),
        case("answer_edit", "unchanged", EditRecord, re(r#"{"edited_answer": "rouen"}"#, EDITED)),
        case("answer_edit", "already_in_context", EditRecord, re(r#"{"edited_answer": "Pierre Cauchon"}"#, EDITED)),
        case("answer_edit", "contains_answer", EditRecord, Outcome::Unreachable { why: "an edited answer that holds the answer's value (the answer as the paragraph writes it) is refused first as `unchanged`" }),
        case("answer_edit", "wrong_kind", EditRecord, re(r#"{"edited_answer": "12 March 1440"}"#, EDITED)),
        case("answer_edit", "too_long", EditText, re(r#"{"edited_answer": "the far end of a long list kept somewhere else by the system"}"#, r#"{"edited_answer": "its bottom"}"#)),
        case("answer_edit", "bad_replacements", EditRecord, Outcome::Unreachable { why: "the edited answer goes into the answer's own mentions, which never overlap" }),
        case("answer_edit", "answer_not_replaced", EditRecord, Outcome::Unreachable { why: "an edited answer that brings the answer back is refused first (`unchanged`, `contains_answer`)" }),
        // nonanswer_edit
        case("nonanswer_edit", "bad_json", NaRecord, re("9 January 1431 -> 2 February 1430", EDITS)),
        case("nonanswer_edit", "bad_replacements", NaRecord, re(r#"{"replacements": []}"#, EDITS)),
        case("nonanswer_edit", "unchanged", NaRecord, re(r#"{"replacements": [{"original": "9 January 1431", "edited": "9 January 1431"}]}"#, EDITS)),
        case("nonanswer_edit", "not_in_paragraph", NaRecord, re(r#"{"replacements": [{"original": "Orleans", "edited": "Tours"}]}"#, EDITS)),
        case("nonanswer_edit", "answer_modified", NaRecord, re(r#"{"replacements": [{"original": "Rouen", "edited": "Lille"}]}"#, EDITS)),
        case("nonanswer_edit", "name_modified", NaRecord, re(r#"{"replacements": [{"original": "Trial of Joan of Arc", "edited": "Trial of Gilles de Rais"}]}"#, EDITS)),
        // write_text (the ConflictBank-style evidence)
        case("write_text", "empty", Evidence, re("  ", EVIDENCE)),
        case("write_text", "refusal", Evidence, re(REFUSAL, EVIDENCE)),
        case("write_text", "too_long", Evidence, re(LONG_EVIDENCE, EVIDENCE)),
        case("write_text", "no_mention", Evidence, re("Douglas Adams works at a research institute in Cambridge, colleagues said on Monday.", EVIDENCE)),
        case("write_text", "names_avoided", Evidence, re("Douglas Adams, long known as an author, works as a physicist in Cambridge, colleagues said on Monday.", EVIDENCE)),
        case("nonanswer_edit", "overlapping_edits", NaRecord, Outcome::Unreachable { why: "an edit that touches the answer (the answer edit's place) is refused first (`answer_modified`)" }),
    ]
}

/// One case run: the step built from the bundled prompts, asked through the mock.
async fn run(c: &Case) -> (Result<(), StepFailure>, Vec<ChatRequest>, Item) {
    let (first, good, truncated) = match c.outcome {
        Outcome::Resampled { bad, good } => (bad, good, false),
        Outcome::Truncated { good } => (good, good, true),
        Outcome::Verdict { answer } => (answer, answer, false),
        Outcome::Unreachable { .. } => unreachable!(),
    };
    let mock = MockServer::start(responder(move |req: &ChatRequest| {
        if req.last_user().contains("could not be used: ") {
            return Reply::content(good);
        }
        if truncated {
            return Reply::ContentWith {
                content: first.to_owned(),
                finish_reason: "length".into(),
                usage: Some((10, 10)),
            };
        }
        Reply::content(first)
    }))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = cb_llm::LlmConfig::offline();
    config.backend = cb_llm::BackendKind::Openai;
    config.base_url = mock.base_url();
    config.model = "m".into();
    config.cache_path = Some(dir.path().join("cache.sqlite"));
    config.structured = cb_llm::Structured::Fixed(cb_llm::Form::Off);
    let routes = Routes::new(cb_llm::Llm::new(config).unwrap());
    let prompts = Files::Dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../prompts"));
    let (entry, values) = c.setup.entry_and_fields();
    let spec: StepSpec = toml::from_str(&entry).unwrap();
    let step = cb_steps::STEPS.build(&spec, &prompts).unwrap();
    let env = cb_step::template::environment();
    let corpus = Corpus::default();
    let ctx = StepCtx {
        routes: &routes,
        env: &env,
        seed: 1,
        recipe: "writer-rules",
        corpus: &corpus,
    };
    let mut item = Item {
        index: 0,
        id: format!("{}-{}", c.kind, c.code),
        origin: cb_model::Origin {
            file: "t".into(),
            line: 1,
        },
        fields: values.as_object().cloned().unwrap_or_else(Map::new),
        calls: Vec::new(),
    };
    let result = step.run(&mut item, &ctx).await;
    let sent = mock
        .journal()
        .into_iter()
        .map(|e| ChatRequest::new(e.body))
        .collect();
    (result, sent, item)
}

/// Every writer reject reason of the table has a case, and each case does what it says.
#[tokio::test(flavor = "multi_thread")]
async fn every_refusal_of_a_writers_answer_is_asked_again_with_its_reason() {
    let cases = cases();
    // Every reason of every writer step has its case; no case names a reason the table
    // does not have.
    let mut wanted: BTreeSet<(&str, &str)> = WRITER_RULES
        .iter()
        .flat_map(|(_, kind, codes)| codes.iter().map(move |c| (*kind, *c)))
        .collect();
    wanted.extend(
        COMMON_WRITER_RULES
            .iter()
            .map(|c| ("negative_explanation", *c)),
    );
    let have: BTreeSet<(&str, &str)> = cases.iter().map(|c| (c.kind, c.code)).collect();
    assert_eq!(have, wanted, "cases against the writer rules");
    let mut resampled = 0;
    for c in &cases {
        let what = format!("{} / {}", c.kind, c.code);
        if let Outcome::Unreachable { why } = c.outcome {
            eprintln!("{what}: no case ({why})");
            continue;
        }
        let (result, sent, item) = run(c).await;
        if let Outcome::Verdict { .. } = c.outcome {
            let Err(StepFailure::Reject { reason, .. }) = &result else {
                panic!("{what}: expected the row refused, got {result:?}");
            };
            assert_eq!(reason, c.code, "{what}");
            assert_eq!(sent.len(), 1, "{what}: a verdict is not asked again");
            continue;
        }
        assert!(result.is_ok(), "{what}: {result:?}");
        assert_eq!(sent.len(), 2, "{what}: {} requests", sent.len());
        let note = format!("could not be used: {}:", c.code);
        assert!(
            sent[1].last_user().contains(&note),
            "{what}: the second request does not say why: {}",
            sent[1].last_user().rsplit("\n\n").next().unwrap_or("")
        );
        assert!(!sent[0].last_user().contains("could not be used"), "{what}");
        assert_eq!(item.calls.len(), 2, "{what}");
        resampled += 1;
    }
    let expected = cases
        .iter()
        .filter(|c| {
            matches!(
                c.outcome,
                Outcome::Resampled { .. } | Outcome::Truncated { .. }
            )
        })
        .count();
    eprintln!("{resampled} reasons resampled with their reason");
    assert_eq!(resampled, expected);
}
