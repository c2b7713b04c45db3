//! The checks of ConflictBank-style rows (`cb_model::conflictbank::CbRow`, the rows the
//! `conflictbank-*` recipes write in `conflictbank.jsonl`): the row's shape, and what its
//! evidences may and must name.

use cb_model::conflictbank::{Cause, CbRow};
use cb_model::text::{contains_phrase, normalize};

/// The outcome of one check on one row (`checks::Outcome`): `Err(detail)` when it fails.
type Outcome = (&'static str, Result<(), String>);

/// Whether two options are one answer: equal once normalised, or one holding the other as
/// whole words ("United States" and "United States of America").
fn one_answer(a: &str, b: &str) -> bool {
    normalize(a) == normalize(b) || contains_phrase(a, b) || contains_phrase(b, a)
}

/// The checks of one ConflictBank-style row.
pub fn check(r: &CbRow) -> Vec<Outcome> {
    let mut out = Vec::new();
    let problems = r.problems();
    out.push((
        "cb_row_shape",
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        },
    ));
    let object = &r.fact.object;
    let true_index = cb_model::letter_index(&r.qa.true_label);
    let twin =
        r.qa.options
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != true_index)
            .map(|(_, o)| o)
            .find(|o| !normalize(o).is_empty() && one_answer(o, object));
    out.push((
        "cb_option_is_true_object",
        match twin {
            Some(o) => Err(format!(
                "the option \"{o}\" is the true object \"{object}\" in another form"
            )),
            None => Ok(()),
        },
    ));
    // The subject's own name may hold the object ("Paris Hilton", "Paris"): set it aside.
    let names_object = |text: &str| {
        let rest = cb_model::text::replace_words(text, &r.fact.subject, " ").0;
        cb_model::text::names(&rest, object)
    };
    let named: Vec<&str> = r
        .conflicts
        .iter()
        .filter(|c| names_object(&c.evidence.text))
        .map(|c| c.cause.name())
        .collect();
    out.push((
        "cb_conflict_names_true_object",
        if named.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the {} evidence names the true object \"{object}\"",
                named.join(", ")
            ))
        },
    ));
    let silent: Vec<&str> = r
        .conflicts
        .iter()
        .filter(|c| !contains_phrase(&c.evidence.text, &r.replaced_object))
        .map(|c| c.cause.name())
        .collect();
    out.push((
        "cb_conflict_names_replaced",
        if silent.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the {} evidence does not name the replaced object \"{}\"",
                silent.join(", "),
                r.replaced_object
            ))
        },
    ));
    out.push((
        "cb_correct_names_object",
        if contains_phrase(&r.correct.text, object) {
            Ok(())
        } else {
            Err(format!("the correct evidence does not name \"{object}\""))
        },
    ));
    out.push(("cb_cause_details", cause_details(r)));
    out
}

/// The temporal conflict names its time (and its text states it); the semantic one has its
/// description.
fn cause_details(r: &CbRow) -> Result<(), String> {
    if let Some(t) = r.conflict(Cause::Temporal) {
        match t.time.as_deref().map(str::trim) {
            None | Some("") => return Err("the temporal conflict has no `time`".into()),
            Some(time) if !contains_phrase(&t.evidence.text, time) => {
                return Err(format!(
                    "the temporal evidence does not state its time \"{time}\""
                ))
            }
            _ => {}
        }
    }
    if let Some(s) = r.conflict(Cause::Semantic) {
        if s.description.as_deref().is_none_or(|d| d.trim().is_empty()) {
            return Err("the semantic conflict has no `description`".into());
        }
    }
    Ok(())
}
