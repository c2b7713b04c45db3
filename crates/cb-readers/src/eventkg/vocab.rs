//! The IRIs the reader knows: the predicates it reads, the types that make a subject an
//! event, and the relation types that are not roles.

pub(super) const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";
pub(super) const RDF_SUBJECT: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#subject";
pub(super) const RDF_OBJECT: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#object";
pub(super) const RDFS_LABEL: &str = "http://www.w3.org/2000/01/rdf-schema#label";
pub(super) const DC_DESCRIPTION: &str = "http://purl.org/dc/terms/description";
pub(super) const SEM_EVENT: &str = "http://semanticweb.cs.vu.nl/2009/11/sem/Event";
pub(super) const SEM_PLACE: &str = "http://semanticweb.cs.vu.nl/2009/11/sem/Place";
pub(super) const SEM_ACTOR: &str = "http://semanticweb.cs.vu.nl/2009/11/sem/Actor";
pub(super) const SEM_BEGIN: &str = "http://semanticweb.cs.vu.nl/2009/11/sem/hasBeginTimeStamp";
pub(super) const SEM_END: &str = "http://semanticweb.cs.vu.nl/2009/11/sem/hasEndTimeStamp";
pub(super) const SEM_HAS_PLACE: &str = "http://semanticweb.cs.vu.nl/2009/11/sem/hasPlace";
pub(super) const SEM_HAS_ACTOR: &str = "http://semanticweb.cs.vu.nl/2009/11/sem/hasActor";
pub(super) const SEM_SUB_EVENT_OF: &str = "http://semanticweb.cs.vu.nl/2009/11/sem/subEventOf";
pub(super) const SEM_HAS_SUB_EVENT: &str = "http://semanticweb.cs.vu.nl/2009/11/sem/hasSubEvent";
pub(super) const SEM_ROLE_TYPE: &str = "http://semanticweb.cs.vu.nl/2009/11/sem/roleType";
pub(super) const EKG_START_UNIT: &str = "http://eventKG.l3s.uni-hannover.de/schema/startUnitType";
pub(super) const EKG_END_UNIT: &str = "http://eventKG.l3s.uni-hannover.de/schema/endUnitType";
pub(super) const DBO_PREVIOUS: &str = "http://dbpedia.org/ontology/previousEvent";
pub(super) const DBO_NEXT: &str = "http://dbpedia.org/ontology/nextEvent";

/// The `rdf:type`s that make a subject an event.
pub(super) const EVENT_TYPES: [&str; 4] = [
    SEM_EVENT,
    "http://eventKG.l3s.uni-hannover.de/schema/EventSeries",
    "http://eventKG.l3s.uni-hannover.de/schema/EventSeriesEdition",
    "http://eventKG.l3s.uni-hannover.de/schema/TextEvent",
];

/// Relation types whose `rdf:subject`/`rdf:object` are not roles.
pub(super) const NON_ROLE_RELATIONS: [&str; 2] = [
    "http://eventKG.l3s.uni-hannover.de/schema/LinkRelation",
    "http://eventKG.l3s.uni-hannover.de/schema/MentionRelation",
];
