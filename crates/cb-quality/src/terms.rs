//! The terms one text uses and another does not: what the echo and task-talk checks look
//! for, on terms normalised once.

use cb_model::text::{normalize, Normalized};

/// `terms` [`normalize`]d, made once into `cell`.
pub(crate) fn normalized<'a>(
    cell: &'a std::sync::OnceLock<Vec<String>>,
    terms: &[&str],
) -> &'a [String] {
    cell.get_or_init(|| terms.iter().map(|t| normalize(t)).collect())
}

/// The first of `terms` that `answer` uses and `material` does not
/// ([`cb_model::text::contains_phrase`]); `normalized` holds the terms [`normalize`]d, in
/// the same order.
pub(crate) fn first_unshared(
    terms: &[&'static str],
    normalized: &[String],
    answer: &str,
    material: &str,
) -> Option<&'static str> {
    let answer = Normalized::new(answer);
    // The material (often long) is normalised only when the answer uses a term.
    let mut given: Option<Normalized> = None;
    terms.iter().zip(normalized).find_map(|(t, n)| {
        (answer.contains_normalized(n)
            && !given
                .get_or_insert_with(|| Normalized::new(material))
                .contains_normalized(n))
        .then_some(*t)
    })
}
