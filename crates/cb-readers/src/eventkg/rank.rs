//! Which source of a value wins: the rank of a statement's graph, the language match of a
//! literal, and [`Best`], the best value seen so far.

/// The rank of a statement's graph (lower is better), see the documentation of [`super`].
pub(super) fn graph_rank(graph: Option<&str>, lang: &str) -> u8 {
    let Some(g) = graph else { return 6 };
    let with_lang = |prefix: &str| {
        g.strip_prefix(prefix)
            .is_some_and(|rest| rest.eq_ignore_ascii_case(lang))
    };
    if with_lang("wikipedia_") {
        0
    } else if with_lang("dbpedia_") {
        1
    } else if g == "wikidata" {
        2
    } else if with_lang("wce_") {
        3
    } else if g == "event_kg" {
        4
    } else {
        5
    }
}

/// Whether a language tag matches the wanted language.
pub(super) fn lang_matches(tag: &str, lang: &str) -> bool {
    tag.eq_ignore_ascii_case(lang)
        || (tag.len() > lang.len()
            && tag.as_bytes()[lang.len()] == b'-'
            && tag[..lang.len()].eq_ignore_ascii_case(lang))
}

/// The best value seen so far: the lowest rank wins, the first seen between equals.
#[derive(Debug, Default, Clone)]
pub(super) struct Best {
    value: Option<(u8, String, String)>,
}

impl Best {
    pub(super) fn offer(&mut self, rank: u8, value: &str, graph: Option<String>) {
        if self.value.as_ref().is_none_or(|(r, _, _)| rank < *r) {
            self.value = Some((rank, value.to_string(), graph.unwrap_or_default()));
        }
    }

    pub(super) fn get(&self) -> &str {
        self.value.as_ref().map_or("", |(_, v, _)| v.as_str())
    }

    pub(super) fn graph(&self) -> &str {
        self.value.as_ref().map_or("", |(_, _, g)| g.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graphs_rank_in_the_documented_order() {
        let ranks: Vec<u8> = [
            Some("wikipedia_en"),
            Some("dbpedia_en"),
            Some("wikidata"),
            Some("wce_en"),
            Some("event_kg"),
            Some("yago"),
            None,
        ]
        .into_iter()
        .map(|g| graph_rank(g, "en"))
        .collect();
        assert_eq!(ranks, [0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(graph_rank(Some("wikipedia_de"), "en"), 5);
        assert_eq!(graph_rank(Some("wikipedia_de"), "de"), 0);
    }

    #[test]
    fn languages_match_on_the_primary_tag() {
        assert!(lang_matches("en", "en"));
        assert!(lang_matches("en-GB", "en"));
        assert!(lang_matches("EN", "en"));
        assert!(!lang_matches("eng", "en"));
        assert!(!lang_matches("de", "en"));
    }
}
