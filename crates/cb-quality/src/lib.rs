//! Checks of generated text that the steps' validators and the audit share, so that a built
//! row and a released row are judged by the same rules: prompt echo, a context that only
//! restates the negative answer, an answer in another language than its source, a part of a
//! list answer left standing, and text copied from the inputs set apart before a refusal or a
//! golden answer is looked for.
//!
//! Each check returns what it found (for the reason's detail); the stable reason codes are
//! the callers' (`prompt_echo`, `restates_negative`, `other_language`).

mod copies;
mod echo;
mod golden;
mod language;
mod parts;
mod restatement;
mod stems;
mod task_talk;
mod terms;

pub use copies::beyond_copies;
pub use echo::{
    echoed_example, echoed_fence, echoed_instructions, echoed_label, echoed_term, FENCES,
    PROMPT_LABELS, PROMPT_TERMS,
};
pub use golden::leans_to_golden;
pub use language::{language, other_language, Language};
pub use parts::{list_parts, named_parts, MAX_PART_WORDS};
pub use restatement::{restates, RESTATE_MIN_ADDED};
pub use stems::added_words;
pub use task_talk::{denies, talks_about_task, DENIALS, TASK_TALK, TASK_TALK_OPENINGS};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::language::{script, stopword_lists, STOPWORDS};
    use crate::restatement::TASK_WORDS;
    use crate::stems::{content_stems, is_function_word, stem};

    /// The checks as they were, compared with these on the shared samples.
    mod sameness;
}
