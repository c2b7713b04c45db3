//! ConflictBank-style rows (`cb_model::conflictbank::CbRow`) in the viewer: the fact, its QA
//! and each conflicting evidence beside the correct one (cause, style, claim, what the cause
//! adds), and the ids their ratings are stored under: a row is rated once per conflicting
//! evidence, as `ITEM#cause`, on three questions (how misleading, how plausible, does it
//! contradict the correct evidence).

use crate::error::ViewError;
use crate::ratings::Judgement;
use crate::stats::ReaderSaid;
use cb_audit::sheet::Scale;
use cb_model::conflictbank::{Cause, CbConflict, CbRow, Style, CAUSES};
use minijinja::context;
use serde_json::Value;
use std::collections::BTreeMap;

/// The row a record holds, when it is a ConflictBank-style row.
pub fn cb_row(record: &Value) -> Option<CbRow> {
    serde_json::from_value(record.clone()).ok()
}

/// The cause a form or a link names (`misinformation`, `temporal`, `semantic`).
pub fn cause_named(name: &str) -> Option<Cause> {
    CAUSES.into_iter().find(|c| c.name() == name.trim())
}

/// The id the ratings of one conflicting evidence of the item `item_id` are stored under.
pub fn rating_id(item_id: &str, cause: Cause) -> String {
    format!("{item_id}#{}", cause.name())
}

/// The rating ids of every conflicting evidence of an item.
pub fn rating_ids(item_id: &str) -> Vec<String> {
    CAUSES.iter().map(|c| rating_id(item_id, *c)).collect()
}

fn style_words(s: Style) -> &'static str {
    match s {
        Style::News => "news report",
        Style::Book => "book narrative",
        Style::Wikipedia => "Wikipedia entry",
    }
}

/// The fact, the replaced object, the correct evidence's claim and style, and the QA with
/// its options labelled (true object, replaced object, uncertain).
pub fn fact_ctx(row: &CbRow) -> minijinja::Value {
    let options: Vec<_> = row
        .qa
        .options
        .iter()
        .zip(cb_model::conflictbank::CB_LETTERS)
        .map(|(text, letter)| {
            let (class, label) = if letter == row.qa.true_label {
                ("cb-gold", "true object")
            } else if letter == row.qa.replaced_label {
                ("cb-negative", "replaced object")
            } else if letter == row.qa.uncertain_label {
                ("", "uncertain")
            } else {
                ("", "")
            };
            context! { letter, text, class, label }
        })
        .collect();
    context! {
        subject => row.fact.subject, relation => row.fact.relation, object => row.fact.object,
        replaced => row.replaced_object, correct_claim => row.correct.claim,
        correct_style => style_words(row.correct.style), question => row.qa.question, options,
    }
}

/// One conflicting evidence beside the correct one, the edits marked (the audit page's
/// markup, built from escaped text).
pub fn evidence_ctx(row: &CbRow, c: &CbConflict) -> minijinja::Value {
    let label = format!("{} evidence", c.cause.name());
    let sides = cb_audit::html::side_by_side_html(
        &row.correct.text,
        &c.evidence.text,
        ("correct evidence", &label),
    );
    context! {
        cause => c.cause.name(), style => style_words(c.evidence.style), claim => c.evidence.claim,
        time => c.time, description => c.description,
        sides => minijinja::Value::from_safe_string(sides),
    }
}

/// Every conflicting evidence of a row, in the row's order.
pub fn evidences_ctx(row: &CbRow) -> Vec<minijinja::Value> {
    row.conflicts.iter().map(|c| evidence_ctx(row, c)).collect()
}

/// The Rate page's part for a ConflictBank-style row: the fact and its QA, the conflicting
/// evidence of `cause` (the first the rater has not rated when `None`) beside the correct
/// one, the rater's earlier rating of it, and the row's causes, each marked rated or not.
pub fn rate_ctx(
    row: &CbRow,
    item_id: &str,
    cause: Option<&str>,
    mine: &BTreeMap<String, Judgement>,
) -> Result<minijinja::Value, ViewError> {
    let done = |c: Cause| mine.contains_key(&rating_id(item_id, c));
    let cause = match cause.map(str::trim).filter(|c| !c.is_empty()) {
        Some(c) => cause_named(c).ok_or_else(|| {
            ViewError::BadRequest(format!(
                "cause \"{c}\" is not one of misinformation, temporal, semantic"
            ))
        })?,
        None => row
            .conflicts
            .iter()
            .map(|c| c.cause)
            .find(|c| !done(*c))
            .unwrap_or(Cause::Misinformation),
    };
    let conflict = row.conflict(cause).ok_or_else(|| {
        ViewError::NotFound(format!("{item_id} has no {} evidence", cause.name()))
    })?;
    let previous = mine.get(&rating_id(item_id, cause)).map(|j| {
        context! { misleading => j.misleading.as_str(), plausibility => j.plausibility.map(Scale::as_str),
        contradicts => j.contradicts.map(|b| if b { "yes" } else { "no" }), comment => j.comment }
    });
    let causes: Vec<_> = row
        .conflicts
        .iter()
        .map(|c| context! { name => c.cause.name(), done => done(c.cause), current => c.cause == cause })
        .collect();
    Ok(context! {
        fact => fact_ctx(row), e => evidence_ctx(row, conflict), cause => cause.name(), causes, previous,
    })
}

/// What each reader said of one conflicting evidence: whether it picked the replaced object
/// from it (`leads_FIELD`), found it plausible (`plausible_FIELD`) and confirmed it contradicts
/// the correct evidence (`conflict_FIELD`), FIELD being the recipe's field of that cause's
/// evidence (named for its cause, `misinformation_evidence`). `None` where it was not asked.
pub fn reader_says(record: &Value, cause: Cause) -> Vec<ReaderSaid> {
    crate::index::each_reader(record, |model, checks| {
        let passed = |family: &str| {
            checks
                .iter()
                .find(|c| {
                    c["check"]
                        .as_str()
                        .and_then(|n| n.strip_prefix(family))
                        .is_some_and(|field| field.starts_with(cause.name()))
                })
                .and_then(|c| c["passed"].as_bool())
        };
        ReaderSaid {
            model: model.to_owned(),
            misled: passed("leads_"),
            answer_set: None,
            plausible: passed("plausible_"),
            contradicts: passed("conflict_"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each cause reads its own checks; a check of another cause, or none, says nothing.
    #[test]
    fn a_cause_reads_its_own_checks() {
        let v = serde_json::json!({"reader": {"model": "r", "checks": [
            {"check": "leads_misinformation_evidence", "passed": true},
            {"check": "conflict_misinformation_evidence", "passed": false},
            {"check": "leads_temporal_evidence", "passed": false},
            {"check": "conflict_temporal_evidence", "passed": true},
            {"check": "plausible_temporal_evidence", "passed": true},
            {"check": "control", "passed": true}]}});
        let m = &reader_says(&v, Cause::Misinformation)[0];
        assert_eq!(
            (m.misled, m.contradicts, m.plausible),
            (Some(true), Some(false), None)
        );
        let t = &reader_says(&v, Cause::Temporal)[0];
        let got = (t.misled, t.contradicts, t.plausible);
        assert_eq!(got, (Some(false), Some(true), Some(true)));
        let s = &reader_says(&v, Cause::Semantic)[0];
        assert_eq!((s.misled, s.contradicts), (None, None));
        assert!(reader_says(&serde_json::json!({}), Cause::Semantic).is_empty());
        assert_eq!(
            rating_id("c.jsonl#3", Cause::Temporal),
            "c.jsonl#3#temporal"
        );
        assert_eq!(cause_named("semantic"), Some(Cause::Semantic));
        assert_eq!(cause_named("other"), None);
    }
}
