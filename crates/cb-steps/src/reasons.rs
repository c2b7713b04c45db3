//! The answer schemas of the steps and the reason codes of their rejects.
//!
//! This module holds no logic: it is the one list a reader of `rejects.jsonl` (or of a row's
//! `warnings`) looks a code up in, and the table of the rules each writer's prompt states
//! ([`WRITER_RULES`]). A reject's reason code is the text before the first `:` of
//! its reason; codes are stable across versions.
//!
//! # Schemas
//! Steps whose answer has structure declare its JSON schema beside their prompt, built with
//! `cb_step::schema` in OpenAI strict form (every property required, no additional
//! properties) and sent as the request's `response_schema`; the LLM layer picks the form the
//! endpoint takes, and the schema is part of the cache key.
//!
//! | step | schema |
//! |---|---|
//! | `distractors` | `{"options": [3 strings]}` |
//! | `qa` | `{"key", "question", "answer"}` (record mode) or `{"question", "answer"}` (text mode) |
//! | `answer_edit` | `{"edited_answer"}` |
//! | `nonanswer_edit` | `{"replacements": [1..max_replacements of {"original", "edited"}]}` |
//!
//! `paraphrase`, `negative_explanation` and `negative_context` answer in prose and send none.
//!
//! # Codes every model answer can get
//! Every answer first goes through `cb_step::ask::common_checks`, then the step's validator.
//!
//! | code | meaning |
//! |---|---|
//! | `truncated` | the server stopped at the length limit (`finish_reason: length`) |
//! | `prompt_echo` | the answer repeats our instructions: a line opening with a prompt label; six consecutive words of the template's instructions, worked examples or repair messages (a structured answer is compared on its values); a quoted example; the prompt's `<<<`/`>>>` fences; a `key:` line of the record in a record paragraph; task talk in a prose context ("the question", "in the passage", a line per option, "The answer is" at the start; `cb_quality::talks_about_task`). Text the material itself holds never counts |
//! | `other_language` | clearly another language than the material (`cb_quality::language` documents its limits) |
//! | `refusal` | the model declined the task |
//!
//! # The steps' own codes
//!
//! | code | step(s) | meaning |
//! |---|---|---|
//! | `bad_json` | `distractors`, `qa`, `answer_edit`, `nonanswer_edit` | the answer is not the JSON the schema asks for |
//! | `bad_options` | `distractors` | the three options are unusable (equal to the answer, one of its forms or another accepted answer, the answer in another form: holding it or held by it, as whole words or inside a word of three letters or more, or the same stem, `reading::another_form`; equal to each other, wrong format) |
//! | `bad_key`, `bad_question`, `answer_in_question`, `not_verbatim` | `qa` | the question, or the record key it asks about, breaks the paper's rules |
//! | `bad_answer` | `qa`, `pick_negative`, `reader_check` | the answer is not a usable value (not a record value, the event's name, the term itself, not a letter) |
//! | `not_in_paragraph` | `qa`, `nonanswer_edit` | the answer or an edited word is not in the paragraph |
//! | `too_long` | `paraphrase`, `qa`, `answer_edit`, `negative_explanation`, `write_text` | longer than the step allows |
//! | `too_different` | `negative_context` | the rewrite is too far from the golden passage (token similarity) |
//! | `no_term`, `missing_values`, `no_record` | `paraphrase` | the paragraph lacks the term or record values, or there is no record |
//! | `unchanged` | `answer_edit`, `nonanswer_edit` | the edit changes nothing |
//! | `already_in_context`, `contains_answer`, `wrong_kind` | `answer_edit` | the edited answer is already in the paragraph, still holds the answer, or is of another kind |
//! | `answer_not_in_paragraph`, `answer_not_replaced` | `answer_edit` | the edited answer cannot be put in the answer's place |
//! | `answer_modified`, `name_modified`, `overlapping_edits`, `nothing_to_edit` | `nonanswer_edit` | the edit touches the answer or the name, its edits overlap, or there is nothing else to edit |
//! | `bad_replacements` | `answer_edit`, `nonanswer_edit` (both grains) | the replacements do not apply to the text |
//! | `no_donor_sentence` | `insert_sentence` | no sentence of another term to insert |
//! | `restates_negative` | `negative_context`, `negative_explanation` | adds no content word to the negative answer |
//! | `states_golden` | `negative_context`, `negative_explanation` | states the golden answer (in either number) beyond the premise and question it copies, as whole words wherever they stand: "closing time" states "time", and a rewrite that keeps "Kromme Rijn" states "Rijn" (a look-alike cannot be told from a mention by its words, and a reader sees the answer's words either way; both prompts say so); `negative_context` also: where the golden answer is a list ("X and Y", "X, Y and Z", "X or Y", "X & Y", "X; Y"), still names one of its parts that the question and the negative answer do not (`cb_quality::named_parts`: parts without a content word, one-word parts the golden passage also names on its own, and answers it quotes whole, titles, are left alone). Measured on the SQuAD and MuSiQue files at hand (answerable questions): lists are 3 of 96 answers (shared Normans sample), 20 of 197 (a SQuAD v2.0 dev excerpt, the article on computational complexity theory) and 2 of 24 (another excerpt), none of MuSiQue's 60 + 40 + 16; the offline rewrite trips it on 1 golden context, the excerpt's "analysis of algorithms and computability theory" (190 SQuAD rows instead of 191 there, nothing else changed) |
//! | `supports_golden` | `negative_explanation` | argues for the golden answer (its content words at least as often as the negative's) |
//! | `denies_negative` | `negative_explanation` | says the negative answer "would not" hold or is "not the cause" |
//! | `no_mention` | `negative_context`, `negative_explanation` | never names the negative answer |
//! | `empty` | prose steps | the answer is empty |
//! | `no_answer` | `distractors` | the item has no answer to build options around |
//! | `no_wrong_choice` | `pick_negative` | the item has no wrong option to pick |
//! | `bad_choice` | `pick_negative` (`how = "believable"`) | the model named no letter of the wrong options listed, nor "none" |
//! | `no_believable_negative` | `pick_negative` (`how = "believable"`) | the model judged that no wrong option can be argued for believably without the context (e-CARE's one wrong hypothesis is often absurd): the row is refused, not forced |
//! | `negative_in_context` | `distractors` | every option already stands in the golden context: none can be the negative answer without the rewrite naming it twice (asked again with the reason, like every refusal of a writer's answer) |
//! | `reader_disagrees` | `reader_check` | the reader did not pick the intended answer from the generated context (with `none_option`: or found no answer in it) |
//! | `reader_wrong_kind` | `reader_check` (RECALL, `kind_check`) | the reader judged the edited answer another kind of thing than the answer |
//! | `reader_contradiction` | `reader_check` (`coherence_check`) | the reader judged that the edited context contradicts itself (RECALL: the non-answer-edited context; KRE: the negative context) |
//! | `reader_golden_gap` | `reader_check` (KRE, `golden_check`) | the reader judged that the golden context does not itself state every fact needed to reach the golden answer (a broken multi-hop chain): the data cannot lead to its answer |
//! | `reader_other_answer` | `reader_check` (KRE, `residual_check`) | the reader judged that the negative context, apart from the negative answer, still supports another option as an answer |
//! | `reader_implausible` | `reader_check` (`plausible_check`) | the reader, asked as an editor, judged that a careful reader who does not know the answer would not accept the generated passage as written (KRE: the negative context; RECALL: the answer-edited or the word-edited context; the sentence-edited one refuses nothing: `sentence_implausible` below): absurd, a common word given a meaning it does not have |
//! | `reader_control_failed` | `reader_check` | the reader did not pick the golden answer from the golden context (with `none_option`: or found no answer in it, the golden context leading to none) |
//! | `answer_set_reveals` | `reader_check` | the options give the answer away |
//! | `reader_no_conflict` | `reader_check` (mode `fields`, `contradicts`) | the reader, asked as an editor, found that a conflicting evidence does not contradict the correct one (ConflictBank's conflict confirmation) |
//! | `names_avoided` | `write_text` | the text names a value of a field of `must_not_mention` (the true object, or one of its aliases, in a conflicting evidence) |
//! | `no_mention` (`write_text`) | `write_text` | the text does not name a value of a field of `mention`: certain from the words, a reject also where a reader checks |
//! | `no_other_value` | `draw_from_pool` | the pool of the item's group holds no value other than its own and those it avoids |
//! | `options_not_distinct` | `make_options` | two options are one another (or another form of one another), or one is empty |
//! | `bad_template` | `compose` | the template does not render for the item (a field it names is missing) |
//!
//! # Notes a row can carry
//! Where the data cannot give what a step needs and the step keeps the row, it says so in
//! the row's `warnings` column (same `code: detail` form):
//!
//! | code | step | meaning |
//! |---|---|---|
//! | `answers_disagree` | `distractors` | the dataset accepts answers that are not forms of the first (SQuAD annotators who answered otherwise): never options, left as they are in the negative context |
//! | `negative_in_context` | `pick_negative` | the only wrong choices left already stand in the golden context; KRE's options are the dataset's, so the pick stands |
//! | `negative_overlaps_answer` | `pick_negative` | the only wrong choices left hold the golden answer or are held by it ("the flowers withered" against "because there was no sunshine, the flowers withered") |
//! | `golden_unrelated` | `pick_negative` | the golden context shares no content word with the question or the golden answer (CoS-E's "Rivers flow trough valleys."): its control measures what the reader knows |
//! | `sentence_implausible` | `reader_check` (RECALL, `plausible_check`) | the reader found the sentence-edited context (UJ's rule-built insertion) not plausible: that context is left out, so the sample has no sentence-edited QA-NA row; its QA-A and word-edited rows carry the note with the reader's pick, and the manifest's `plausible_qa_na_sentence` tally counts it |
//! | `random_pick` | `pick_negative` (`how = "believable"`) | no model judged which wrong option is most believable (an offline build): the negative answer is KRE's seeded pick |
//!
//! `pick_negative` passes over a wrong choice that stands in the golden context or overlaps
//! the golden answer while another is left; `distractors` never makes such an option the
//! negative answer and refuses an option that holds the answer or is held by it
//! (`bad_options`).
//!
//! The codes of `cb_step::GUESS_CODES` (`supports_golden`, `denies_negative`, `no_mention`,
//! `restates_question`) guess at meaning: where a reader checks the rows they are warnings,
//! kept in the row's `warnings` column; where none does they reject.
//!
//! # Codes of the layer and of the sources
//!
//! | code | meaning |
//! |---|---|
//! | `retries_exhausted_<reason>` | the call failed in every attempt (`<reason>`: `http_500`, `timeout`, `batch_wrong_model`, ...) |
//! | `duplicate_id`, `malformed_json`, `missing_field`, `bad_value`, ... | a source record (`cb_readers` documents them) |
//!
//! # The audit's names for the same checks
//! The audit runs the same `cb_quality` checks on built and released files under its own
//! stable codes: `kre_negative_context_echo`, `kre_negative_context_restates`,
//! `kre_negative_context_language`, `kre_negative_context_supports_golden`,
//! `kre_negative_context_denies`, `qa_context_echo`, `qa_edited_context_language`.

/// The codes every writer's answer can get before its step's own rules
/// (`cb_step::ask::common_checks` and the length limit): every writer's prompt states them.
pub const COMMON_WRITER_RULES: &[&str] = &["truncated", "prompt_echo", "other_language"];

/// The rules that can refuse a writer's answer, prompt by prompt: `(bundled prompt, step
/// kind, the step's own codes that prompt's answers can get)`. Each code, and each of
/// [`COMMON_WRITER_RULES`], is stated in the prompt by a sentence marked `{# refuses: CODE
/// #}` (a template comment: never sent, left out of what the echo check compares). A refusal
/// of any of them is asked again with its reason (`on_invalid`), since every one is decided
/// inside the step's validator. The unit test below holds the table to the steps' sources and
/// to the prompts.
pub const WRITER_RULES: &[(&str, &str, &[&str])] = &[
    (
        "kre/believable_negative.md",
        "pick_negative",
        &["bad_json", "bad_choice", "no_believable_negative"],
    ),
    (
        "kre/believable_negative_passage.md",
        "pick_negative",
        &["bad_json", "bad_choice", "no_believable_negative"],
    ),
    (
        "kre/believable_negative_known.md",
        "pick_negative",
        &["bad_json", "bad_choice", "no_believable_negative"],
    ),
    (
        "kre/negative_explanation_choice.md",
        "negative_explanation",
        EXPLANATION,
    ),
    (
        "kre/negative_explanation_causal.md",
        "negative_explanation",
        EXPLANATION,
    ),
    (
        "kre/distractors.md",
        "distractors",
        &["bad_json", "bad_options", "negative_in_context"],
    ),
    (
        "kre/rewrite_context.md",
        "negative_context",
        &[
            "empty",
            "refusal",
            "restates_negative",
            "no_mention",
            "states_golden",
            "too_different",
        ],
    ),
    (
        "recall/paraphrase_record.md",
        "paraphrase",
        &["empty", "refusal", "missing_values"],
    ),
    (
        "recall/paraphrase_text.md",
        "paraphrase",
        &["empty", "refusal", "no_term", "too_long"],
    ),
    (
        "recall/qa_record.md",
        "qa",
        &[
            "bad_json",
            "bad_question",
            "bad_key",
            "bad_answer",
            "not_in_paragraph",
            "answer_in_question",
        ],
    ),
    (
        "recall/qa_text.md",
        "qa",
        &[
            "bad_json",
            "bad_question",
            "too_long",
            "bad_answer",
            "not_verbatim",
            "answer_in_question",
        ],
    ),
    (
        "recall/edit_answer_record.md",
        "answer_edit",
        &[
            "bad_json",
            "refusal",
            "unchanged",
            "already_in_context",
            "contains_answer",
            "wrong_kind",
            "bad_replacements",
            "answer_not_replaced",
        ],
    ),
    (
        "recall/edit_answer_text.md",
        "answer_edit",
        &[
            "bad_json",
            "refusal",
            "unchanged",
            "already_in_context",
            "contains_answer",
            "too_long",
            "bad_replacements",
            "answer_not_replaced",
        ],
    ),
    (
        "recall/edit_nonanswer_record.md",
        "nonanswer_edit",
        &[
            "bad_json",
            "bad_replacements",
            "unchanged",
            "not_in_paragraph",
            "answer_modified",
            "name_modified",
        ],
    ),
    (
        "recall/edit_nonanswer_text.md",
        "nonanswer_edit",
        &[
            "bad_json",
            "bad_replacements",
            "unchanged",
            "not_in_paragraph",
            "answer_modified",
            "name_modified",
            "overlapping_edits",
        ],
    ),
    ("conflictbank/correct_evidence.md", "write_text", WRITE_TEXT),
    (
        "conflictbank/misinformation_evidence.md",
        "write_text",
        WRITE_TEXT,
    ),
    (
        "conflictbank/temporal_evidence.md",
        "write_text",
        WRITE_TEXT,
    ),
    (
        "conflictbank/semantic_description.md",
        "write_text",
        WRITE_TEXT,
    ),
    (
        "conflictbank/semantic_evidence.md",
        "write_text",
        WRITE_TEXT,
    ),
];

/// `write_text`'s codes (every prompt: the fields a text must and must not name are the
/// recipe's).
const WRITE_TEXT: &[&str] = &[
    "empty",
    "refusal",
    "too_long",
    "no_mention",
    "names_avoided",
];

/// `negative_explanation`'s codes (both prompts).
const EXPLANATION: &[&str] = &[
    "empty",
    "refusal",
    "denies_negative",
    "too_long",
    "states_golden",
    "supports_golden",
    "restates_negative",
    "restates_question",
    "no_mention",
];

/// The codes a writer step's module writes that judge no answer of the writer: the data's
/// (an item without an answer, a paragraph without the answer) and the notes of a row's
/// `warnings` column.
pub const NOT_WRITER_CODES: &[(&str, &[&str])] = &[
    (
        "pick_negative",
        &[
            "bad_answer",
            "no_wrong_choice",
            "negative_in_context",
            "negative_overlaps_answer",
            "golden_unrelated",
            "random_pick",
        ],
    ),
    ("distractors", &["no_answer", "answers_disagree"]),
    ("paraphrase", &["no_record"]),
    ("answer_edit", &["answer_not_in_paragraph"]),
    ("nonanswer_edit", &["nothing_to_edit"]),
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};

    fn crate_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
    }

    /// The sources of a writer step (what its reject reasons are written in).
    fn sources(kind: &str) -> &'static [&'static str] {
        match kind {
            "pick_negative" => &["pick_negative.rs"],
            "negative_explanation" => &["negative_explanation.rs"],
            "distractors" => &["distractors.rs", "reading.rs"],
            "negative_context" => &["negative_context.rs"],
            "paraphrase" => &["paraphrase.rs"],
            "qa" => &["qa.rs"],
            "answer_edit" => &["answer_edit.rs"],
            "nonanswer_edit" => &["nonanswer_edit/mod.rs"],
            "write_text" => &["general/write.rs"],
            other => panic!("no sources listed for writer step {other}"),
        }
    }

    /// The reason codes a source writes outside its tests and comments: string literals that
    /// open with `code: ` and the first argument of `StepFailure::reject("code", ...)`.
    fn codes_written(source: &str) -> BTreeSet<String> {
        let code_part = source.split("#[cfg(test)]").next().unwrap_or("");
        let text: String = code_part
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut out = BTreeSet::new();
        let word = |s: &str| -> Option<String> {
            let w: String = s
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            (!w.is_empty()).then_some(w)
        };
        for (i, _) in text.match_indices('"') {
            let rest = &text[i + 1..];
            if let Some(w) = word(rest) {
                if rest[w.len()..].starts_with(": ") {
                    out.insert(w);
                }
            }
        }
        for (i, _) in text.match_indices("reject(") {
            let rest = text[i + "reject(".len()..].trim_start();
            if let Some(w) = rest.strip_prefix('"').and_then(word) {
                out.insert(w);
            }
        }
        out
    }

    /// The `{# refuses: CODE #}` marks of a template part, each with the number of words of
    /// the sentence it marks (the text after it on its line, up to the next mark).
    fn marks(part: &str) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        for line in part.lines() {
            let mut rest = line;
            let mut open: Vec<String> = Vec::new();
            while let Some(i) = rest.find("{#") {
                let Some(j) = rest[i..].find("#}") else { break };
                if let Some(code) = rest[i + 2..i + j].trim().strip_prefix("refuses:") {
                    open.push(code.trim().to_owned());
                }
                rest = &rest[i + j + 2..];
                let sentence = &rest[..rest.find("{#").unwrap_or(rest.len())];
                let words = sentence.split_whitespace().count();
                if words > 0 {
                    out.extend(open.drain(..).map(|c| (c, words)));
                }
            }
            out.extend(open.into_iter().map(|c| (c, 0)));
        }
        out
    }

    /// Every rule that can refuse a writer's answer is stated in that writer's prompt: each
    /// code of [`WRITER_RULES`] and [`COMMON_WRITER_RULES`] marks a sentence of the prompt's
    /// system or user part (worked examples are sent as they are written, so they carry no
    /// mark), and no mark names a code the step does not write.
    #[test]
    fn every_rule_that_can_refuse_a_writer_is_stated_in_its_prompt() {
        let prompts = crate_dir().join("../../prompts");
        for (name, kind, codes) in WRITER_RULES {
            let text = std::fs::read_to_string(prompts.join(name)).unwrap();
            let p = cb_step::Prompt::parse(name, &text).unwrap();
            for (q, a) in &p.examples {
                assert!(
                    marks(q).is_empty() && marks(a).is_empty(),
                    "{name}: a mark in an example"
                );
            }
            let found = marks(&format!("{}\n{}", p.system, p.user));
            let want: BTreeSet<&str> = codes.iter().chain(COMMON_WRITER_RULES).copied().collect();
            for code in &want {
                let best = found
                    .iter()
                    .filter(|(c, _)| c == code)
                    .map(|(_, n)| *n)
                    .max();
                assert!(
                    best.is_some_and(|n| n >= 5),
                    "{name} ({kind}): no sentence of at least five words states the rule `{code}` (mark it `{{# refuses: {code} #}}`)"
                );
            }
            for (code, _) in &found {
                assert!(
                    want.contains(code.as_str()),
                    "{name}: `{code}` is no rule of {kind}"
                );
            }
            // The marks are comments: never sent, and no words of ours the echo check holds
            // an answer to.
            assert!(!p.instructions().contains("refuses"), "{name}");
            let sent = cb_step::template::environment()
                .render_str(&p.system, minijinja::Value::from(()))
                .unwrap_or_default();
            assert!(!sent.contains("refuses"), "{name}: {sent}");
        }
    }

    /// The table is the steps' sources: every reason code a writer step's module writes is a
    /// rule of one of its prompts, a common one, or no judgment of the writer's answer
    /// ([`NOT_WRITER_CODES`]); every prompt of the writers is in the table.
    #[test]
    fn the_writer_rules_are_the_codes_the_steps_write() {
        let kinds: BTreeSet<&str> = WRITER_RULES.iter().map(|(_, k, _)| *k).collect();
        for kind in &kinds {
            let mut written = BTreeSet::new();
            for f in sources(kind) {
                let src = std::fs::read_to_string(crate_dir().join("src").join(f)).unwrap();
                written.extend(codes_written(&src));
            }
            let not_writer: BTreeSet<String> = NOT_WRITER_CODES
                .iter()
                .filter(|(k, _)| k == kind)
                .flat_map(|(_, c)| c.iter().map(|c| (*c).to_owned()))
                .collect();
            assert!(
                not_writer.is_subset(&written),
                "{kind}: {not_writer:?} / {written:?}"
            );
            let writer: BTreeSet<String> = written
                .difference(&not_writer)
                .filter(|c| !COMMON_WRITER_RULES.contains(&c.as_str()))
                .cloned()
                .collect();
            let stated: BTreeSet<String> = WRITER_RULES
                .iter()
                .filter(|(_, k, _)| k == kind)
                .flat_map(|(_, _, c)| c.iter().map(|c| (*c).to_owned()))
                .collect();
            assert_eq!(
                writer, stated,
                "{kind}: the codes its sources write against the table"
            );
        }
        // Every step that asks a model, readers aside, is a writer of the table.
        let prompts = cb_step::Files::Dir(crate_dir().join("../../prompts"));
        for kind in crate::STEPS.kinds() {
            let mut entry = format!(
                "kind = \"{kind}\"\n{}",
                crate::registry::required_params(kind)
            );
            if crate::STEPS.explain(kind).unwrap().contains("\n  mode ") {
                let mode = if kind == "reader_check" {
                    "recall"
                } else {
                    "text"
                };
                entry.push_str(&format!("mode = \"{mode}\"\n"));
            }
            if kind == "negative_explanation" {
                entry.push_str("prompt = \"kre/negative_explanation_choice.md\"\n");
            }
            let spec: cb_step::StepSpec = toml::from_str(&entry).unwrap();
            let step = crate::STEPS.build(&spec, &prompts).unwrap();
            if step.prompt().is_some() && !step.reads() {
                assert!(
                    kinds.contains(kind),
                    "writer step {kind} is not in WRITER_RULES"
                );
            }
        }
        let listed: BTreeSet<&str> = WRITER_RULES.iter().map(|(p, _, _)| *p).collect();
        for sub in ["kre", "recall", "conflictbank"] {
            for f in std::fs::read_dir(crate_dir().join("../../prompts").join(sub)).unwrap() {
                let name = format!("{sub}/{}", f.unwrap().file_name().to_string_lossy());
                assert!(
                    listed.contains(name.as_str()),
                    "prompt {name} is not in WRITER_RULES"
                );
            }
        }
    }
}
