//! What the passes gather: per selected event, per reified relation touching one, and per
//! entity, event or property to be named.

use super::lines::Pos;
use super::rank::Best;

#[derive(Debug, Default)]
pub(super) struct EventState {
    pub(super) iri: String,
    pub(super) pos: Pos,
    pub(super) label: Best,
    pub(super) description: Best,
    pub(super) begin: Best,
    pub(super) end: Best,
    pub(super) begin_unit: Option<String>,
    pub(super) end_unit: Option<String>,
    pub(super) places: Vec<String>,
    pub(super) actors: Vec<String>,
    pub(super) parent: Option<String>,
    pub(super) parent_inverse: Option<String>,
    pub(super) previous: Option<String>,
    pub(super) previous_inverse: Option<String>,
    pub(super) next: Option<String>,
    pub(super) next_inverse: Option<String>,
    /// (role property IRI, other end IRI, whether the event is the relation's object).
    pub(super) roles: Vec<(String, String, bool)>,
}

/// A reified relation touching a selected event.
#[derive(Debug, Default)]
pub(super) struct Relation {
    pub(super) subject: Option<String>,
    pub(super) object: Option<String>,
    pub(super) roles: Vec<String>,
    pub(super) not_a_role: bool,
}

/// Label and types of an entity, event or property to be named.
#[derive(Debug, Default)]
pub(super) struct Named {
    pub(super) label: Best,
    pub(super) place: bool,
    pub(super) actor: bool,
    pub(super) event: bool,
}

pub(super) fn push_unique(list: &mut Vec<String>, value: &str) {
    if !list.iter().any(|v| v == value) {
        list.push(value.to_string());
    }
}

pub(super) fn set_first(slot: &mut Option<String>, value: &str) {
    if slot.is_none() {
        *slot = Some(value.to_string());
    }
}
