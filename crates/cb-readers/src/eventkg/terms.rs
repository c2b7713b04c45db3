//! N-Quads (and N-Triples) lines and their terms: parsing one line on its own, the cheap look
//! at a line's raw subject and object IRIs that lets passes 2 to 4 skip lines, and the
//! accessors of a parsed statement's terms.

use oxrdf::{GraphName, NamedOrBlankNode, Quad, Term};

/// Parses one line on its own. `Ok(None)` for a comment; `Err(message)` when the line is not
/// exactly one valid statement.
pub(super) fn parse_line(bytes: &[u8]) -> Result<Option<Quad>, String> {
    let mut quad = None;
    for item in oxttl::NQuadsParser::new().for_slice(bytes) {
        match item {
            Ok(q) => {
                if quad.is_some() {
                    return Err("more than one statement on the line".to_string());
                }
                quad = Some(q);
            }
            Err(e) => {
                let column = e.location().start.column + 1;
                return Err(format!("column {column}: {}", e.message()));
            }
        }
    }
    Ok(quad)
}

/// The raw subject IRI of a line and its object IRI (`None` where the object is not a plain
/// IRI), taken without parsing; `None` when the line does not have that simple shape, in
/// which case the caller must parse it to know.
fn raw_terms(bytes: &[u8]) -> Option<(&[u8], Option<&[u8]>)> {
    fn iri(rest: &[u8]) -> Option<(&[u8], &[u8])> {
        let rest = rest.trim_ascii_start();
        let body = rest.strip_prefix(b"<")?;
        let end = body.iter().position(|&b| b == b'>')?;
        let value = &body[..end];
        if value.contains(&b'\\') {
            return None;
        }
        Some((value, &body[end + 1..]))
    }
    let (subject, rest) = iri(bytes)?;
    let (_predicate, rest) = iri(rest)?;
    let rest = rest.trim_ascii_start();
    if rest.first() == Some(&b'<') {
        let (object, _) = iri(rest)?;
        Some((subject, Some(object)))
    } else {
        Some((subject, None))
    }
}

/// Whether a line may be about one of the IRIs `wanted` accepts (as subject, or as object
/// when `objects_too`): true when in doubt.
pub(super) fn may_concern(bytes: &[u8], objects_too: bool, wanted: &dyn Fn(&str) -> bool) -> bool {
    if bytes.trim_ascii_start().first() == Some(&b'#') {
        return false;
    }
    let Some((subject, object)) = raw_terms(bytes) else {
        return true;
    };
    let hit = |raw: &[u8]| std::str::from_utf8(raw).map_or(true, wanted);
    hit(subject) || (objects_too && object.is_some_and(hit))
}

pub(super) fn iri_of_subject(q: &Quad) -> Option<&str> {
    match &q.subject {
        NamedOrBlankNode::NamedNode(n) => Some(n.as_str()),
        NamedOrBlankNode::BlankNode(_) => None,
    }
}

pub(super) fn iri_of_object(q: &Quad) -> Option<&str> {
    match &q.object {
        Term::NamedNode(n) => Some(n.as_str()),
        _ => None,
    }
}

/// A literal object's value and language tag (`""` when it has none).
pub(super) fn literal_of(q: &Quad) -> Option<(&str, &str)> {
    match &q.object {
        Term::Literal(l) => Some((l.value(), l.language().unwrap_or(""))),
        _ => None,
    }
}

pub(super) fn graph_local(q: &Quad) -> Option<String> {
    match &q.graph_name {
        GraphName::NamedNode(n) => Some(local_name(n.as_str()).to_string()),
        _ => None,
    }
}

/// The local name of an IRI: what follows its last `/` or `#`.
pub(super) fn local_name(iri: &str) -> &str {
    iri.rsplit(['/', '#']).next().unwrap_or(iri)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_terms_read_subject_and_object() {
        let line = b"<http://a/s> <http://a/p> <http://a/o> <http://g> .";
        assert_eq!(
            raw_terms(line),
            Some((&b"http://a/s"[..], Some(&b"http://a/o"[..])))
        );
        let line = b"<http://a/s> <http://a/p> \"x\"@en .";
        assert_eq!(raw_terms(line), Some((&b"http://a/s"[..], None)));
        assert_eq!(raw_terms(b"_:b <http://a/p> <http://a/o> ."), None);
    }
}
