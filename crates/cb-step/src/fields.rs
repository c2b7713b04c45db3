//! The names of the item fields that the steps read and write and the output writer reads:
//! one constant per field, shared by the steps (`cb-steps`), their declarations in the step
//! table (`StepFields`) and the output writer (`cb-engine`), so that a renamed field is a
//! compile error and not an empty column.

// Mapped from the source (a recipe's `[fields]`).

/// The question of the row (KRE: mapped; RECALL: written by `qa`).
pub const QUESTION: &str = "question";
/// KRE: the multiple-choice options, a list of strings (mapped, or written by `distractors`).
pub const CHOICES: &str = "choices";
/// KRE: the golden answer's letter among `choices`; RECALL: the answer as the paragraph
/// writes it (written by `qa`).
pub const ANSWER: &str = "answer";
/// KRE: the context that supports the golden answer (mapped).
pub const GOLDEN_CONTEXT: &str = "golden_context";
/// KRE reading comprehension: the golden answer's text (mapped; may be empty before the
/// recipe's filters).
pub const ANSWER_TEXT: &str = "answer_text";
/// KRE reading comprehension: other accepted writings of the answer, a list of strings
/// (mapped: MuSiQue's `answer_aliases`; SQuAD's `fuller_forms_of(answers[0], answers)`, the
/// accepted answers that hold the first, not the shorter spans it holds). The rewrite
/// replaces them like the answer and may not keep one; never options.
pub const ALIASES: &str = "aliases";
/// KRE reading comprehension: answers the dataset also accepts that neither hold the answer
/// nor are held by it (SQuAD annotators who answered otherwise), a list of strings (mapped,
/// optional: `other_than(answers[0], answers)` in the SQuAD recipe). Never options; the row
/// notes `answers_disagree`.
pub const OTHER_ANSWERS: &str = "other_answers";
/// KRE e-CARE: the premise the question is asked about (mapped; absent for other sources).
pub const PREMISE: &str = "premise";
/// RECALL: the domain of the row (mapped).
pub const DOMAIN: &str = "domain";
/// RECALL EventKG: the ordered key-value record, a list of `KvItem`s (mapped).
pub const KV: &str = "kv";
/// RECALL UJ: the term the sentences are about (mapped).
pub const TERM: &str = "term";
/// RECALL UJ: the term's sentences, a list of strings (mapped).
pub const SENTENCES: &str = "sentences";
/// RECALL UJ: the term's definition, the text-generation target (mapped).
pub const DEFINITION: &str = "definition";

// Written by the KRE steps.

/// KRE: the letter of the negative answer among `choices` (`pick_negative`, `distractors`).
pub const CANDIDATE: &str = "candidate";
/// KRE: the wrong choice the negative context supports (`pick_negative`, `distractors`).
pub const NEGATIVE_ANSWER: &str = "negative_answer";
/// KRE: the generated context that supports the negative answer (`negative_explanation`,
/// `negative_context`).
pub const NEGATIVE_CONTEXT: &str = "negative_context";

// Written by the RECALL steps.

/// RECALL: the paragraph the questions are asked about (`paraphrase`).
pub const PARAGRAPH: &str = "paragraph";
/// RECALL: the answer's value as the record or paragraph holds it (`qa`).
pub const ANSWER_VALUE: &str = "answer_value";
/// RECALL: the key of the record item the answer is (`qa`; "" in text mode).
pub const ANSWER_KEY: &str = "answer_key";
/// RECALL: the kind of the answer (a record item's kind, or "phrase") (`qa`).
pub const ANSWER_KIND: &str = "answer_kind";
/// RECALL: the answer as the answer edit changed it (`answer_edit`).
pub const EDITED_ANSWER: &str = "edited_answer";
/// RECALL: the QA-A options, the answer and the edited answer in seeded order (`answer_edit`).
pub const OPTIONS: &str = "options";
/// RECALL: the letter of the original answer among `options` (`answer_edit`).
pub const ANSWER_OPTION: &str = "answer_option";
/// RECALL: the paragraph with the answer edited (`answer_edit`).
pub const QA_A_CONTEXT: &str = "qa_a_context";
/// RECALL: the edits that made `qa_a_context`, a list of `Edit`s (`answer_edit`).
pub const QA_A_EDITS: &str = "qa_a_edits";
/// RECALL EventKG: the record with the answer's item edited (`answer_edit`, record mode).
pub const EDITED_KV: &str = "edited_kv";
/// RECALL: the paragraph with words outside the answer edited (`nonanswer_edit`).
pub const QA_NA_CONTEXT: &str = "qa_na_context";
/// RECALL: the edits that made `qa_na_context`, a list of `Edit`s (`nonanswer_edit`).
pub const QA_NA_EDITS: &str = "qa_na_edits";
/// RECALL UJ: the paragraph with the answer edit and the word edits, the edited
/// text-generation source (`nonanswer_edit`, text mode).
pub const TG_EDITED_SOURCE: &str = "tg_edited_source";
/// RECALL UJ: the edits that made `tg_edited_source`, a list of `Edit`s (`nonanswer_edit`).
pub const TG_EDITS: &str = "tg_edits";
/// RECALL: the paragraph with a sentence about another term inserted (`insert_sentence`;
/// absent where the recipe has no such step).
pub const QA_NA_SENTENCE_CONTEXT: &str = "qa_na_sentence_context";
/// RECALL: the edits that made `qa_na_sentence_context`, a list of `Edit`s (`insert_sentence`).
pub const QA_NA_SENTENCE_EDITS: &str = "qa_na_sentence_edits";
/// RECALL: the other term whose sentence was inserted (`insert_sentence`).
pub const DONOR_TERM: &str = "donor_term";

// Written by any step.

/// What the reader picked in each check of the item (`reader_check`); `null` where nobody
/// read the rows back. Also the rows' column.
pub const READER: &str = "reader";
/// The lexical warnings the checks of a model answer recorded, a list of strings (absent
/// when there were none).
pub const WARNINGS: &str = "lexical_warnings";
