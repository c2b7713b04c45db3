//! The answer schemas of the steps and the reason codes of their rejects.
//!
//! This module holds no code: it is the one list a reader of `rejects.jsonl` (or of a row's
//! `warnings`) looks a code up in. A reject's reason code is the text before the first `:` of
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
//! | `bad_options` | `distractors` | the three options are unusable (equal to the answer, one of its forms or another accepted answer, holding the answer or held by it, equal to each other, wrong format) |
//! | `bad_key`, `bad_question`, `answer_in_question`, `not_verbatim` | `qa` | the question, or the record key it asks about, breaks the paper's rules |
//! | `bad_answer` | `qa`, `pick_negative`, `reader_check` | the answer is not a usable value (not a record value, the event's name, the term itself, not a letter) |
//! | `not_in_paragraph` | `qa`, `nonanswer_edit` | the answer or an edited word is not in the paragraph |
//! | `too_long` | `paraphrase`, `qa`, `answer_edit`, `negative_explanation` | longer than the step allows |
//! | `too_different` | `negative_context` | the rewrite is too far from the golden passage (token similarity) |
//! | `no_term`, `missing_values`, `no_record` | `paraphrase` | the paragraph lacks the term or record values, or there is no record |
//! | `unchanged` | `answer_edit`, `nonanswer_edit` | the edit changes nothing |
//! | `already_in_context`, `contains_answer`, `wrong_kind` | `answer_edit` | the edited answer is already in the paragraph, still holds the answer, or is of another kind |
//! | `answer_not_in_paragraph`, `answer_not_replaced` | `answer_edit` | the edited answer cannot be put in the answer's place |
//! | `answer_modified`, `name_modified`, `overlapping_edits`, `nothing_to_edit` | `nonanswer_edit` | the edit touches the answer or the name, its edits overlap, or there is nothing else to edit |
//! | `bad_replacements` | `answer_edit`, `nonanswer_edit` (both grains) | the replacements do not apply to the text |
//! | `no_donor_sentence` | `insert_sentence` | no sentence of another term to insert |
//! | `restates_negative` | `negative_context`, `negative_explanation` | adds no content word to the negative answer |
//! | `states_golden` | `negative_context`, `negative_explanation` | states the golden answer (in either number) beyond the premise and question it copies; `negative_context` also: where the golden answer is a list ("X and Y", "X, Y and Z", "X or Y", "X & Y", "X; Y"), still names one of its parts that the question and the negative answer do not (`cb_quality::named_parts`: parts without a content word, one-word parts the golden passage also names on its own, and answers it quotes whole, titles, are left alone). Measured on the SQuAD and MuSiQue files at hand (answerable questions): lists are 3 of 96 answers (shared Normans sample), 20 of 197 (a SQuAD v2.0 dev excerpt, the article on computational complexity theory) and 2 of 24 (another excerpt), none of MuSiQue's 60 + 40 + 16; the offline rewrite trips it on 1 golden context, the excerpt's "analysis of algorithms and computability theory" (190 SQuAD rows instead of 191 there, nothing else changed) |
//! | `supports_golden` | `negative_explanation` | argues for the golden answer (its content words at least as often as the negative's) |
//! | `denies_negative` | `negative_explanation` | says the negative answer "would not" hold or is "not the cause" |
//! | `no_mention` | `negative_context`, `negative_explanation` | never names the negative answer |
//! | `empty` | prose steps | the answer is empty |
//! | `no_answer` | `distractors` | the item has no answer to build options around |
//! | `no_wrong_choice` | `pick_negative` | the item has no wrong option to pick |
//! | `negative_in_context` | `distractors` | every option already stands in the golden context: none can be the negative answer without the rewrite naming it twice |
//! | `reader_disagrees` | `reader_check` | the reader did not pick the intended answer from the generated context (with `none_option`: or found no answer in it) |
//! | `reader_wrong_kind` | `reader_check` (RECALL, `kind_check`) | the reader judged the edited answer another kind of thing than the answer |
//! | `reader_contradiction` | `reader_check` (`coherence_check`) | the reader judged that the edited context contradicts itself (RECALL: the non-answer-edited context; KRE: the negative context) |
//! | `reader_golden_gap` | `reader_check` (KRE, `golden_check`) | the reader judged that the golden context does not itself state every fact needed to reach the golden answer (a broken multi-hop chain): the data cannot lead to its answer |
//! | `reader_other_answer` | `reader_check` (KRE, `residual_check`) | the reader judged that the negative context, apart from the negative answer, still supports another option as an answer |
//! | `reader_implausible` | `reader_check` (`plausible_check`) | the reader, asked as an editor, judged that a careful reader who does not know the answer would not accept the generated passage as written (KRE: the negative context; RECALL: the answer-edited context): absurd, a common word given a meaning it does not have |
//! | `reader_control_failed` | `reader_check` | the reader did not pick the golden answer from the golden context (with `none_option`: or found no answer in it, the golden context leading to none) |
//! | `answer_set_reveals` | `reader_check` | the options give the answer away |
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
