//! The golden answer argued for: a context written for the negative answer that speaks of
//! the golden one at least as much.

use crate::stems::{distinct_stems, each_content_stem, Stem};

/// Whether a context written for the negative answer speaks of the golden answer at least as
/// much as of the negative one: it uses at least one content-word stem ([`crate::stems::stem`]) of the
/// golden answer that the negative answer lacks, and at least as many of those as of the
/// negative answer's own (function words and the words of `given`, the question and premise,
/// left out). Real SmolLM2 explanations for e-CARE: "A car's battery is dead, so it needs to
/// be replaced." for the negative "The car had been washed." (golden: the battery was dead);
/// "A rain causes the ground to swell, so it makes the streets wet." for "The shops opened
/// late." (golden: it rained during the night). A general-knowledge reason that names
/// neither passes; 9 of the 150 sampled released e-CARE explanations lean this way too (a
/// lexical rule, not a judgement of meaning).
pub fn leans_to_golden(context: &str, negative: &str, golden: &str, given: &[&str]) -> bool {
    /// A stem of one answer that the other lacks: whose it is, whether the context uses
    /// it, whether `given` holds it.
    struct Own {
        stem: Stem,
        golden: bool,
        said: bool,
        known: bool,
    }
    let (g_stems, n_stems) = (distinct_stems(golden), distinct_stems(negative));
    let mut own: Vec<Own> = Vec::new();
    for (mine, other, golden) in [(&g_stems, &n_stems, true), (&n_stems, &g_stems, false)] {
        own.extend(mine.iter().filter(|s| !other.contains(s)).map(|&stem| Own {
            stem,
            golden,
            said: false,
            known: false,
        }));
    }
    // Without a stem of the golden answer's own that the context uses, it does not lean
    // (the context and `given` are read only as far as that needs).
    if !own.iter().any(|o| o.golden) {
        return false;
    }
    each_content_stem(context, |s| {
        own.iter_mut()
            .filter(|o| o.stem == s)
            .for_each(|o| o.said = true);
    });
    if !own.iter().any(|o| o.golden && o.said) {
        return false;
    }
    for g in given {
        each_content_stem(g, |s| {
            own.iter_mut()
                .filter(|o| o.stem == s)
                .for_each(|o| o.known = true);
        });
    }
    let used = |golden: bool| {
        own.iter()
            .filter(|o| o.golden == golden && o.said && !o.known)
            .count()
    };
    let (g, n) = (used(true), used(false));
    g > 0 && g >= n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts_that_argue_for_the_golden_answer_are_found() {
        // Real SmolLM2 explanations accepted for e-CARE before this rule.
        let q = "The car would not start. What is the more possible cause of this?";
        assert!(leans_to_golden(
            "A car's battery is dead, so it needs to be replaced.",
            "The car had been washed.",
            "The battery was dead.",
            &[q]
        ));
        let q = "The dog barked loudly at the door. What is the more possible cause of this?";
        assert!(leans_to_golden(
            "A dog's owner knocked on the door, causing the dog to bark.",
            "The dog was asleep.",
            "Someone knocked on the door.",
            &[q]
        ));
        // Accepted before stems met across "rained"/"rain" and before a tie counted: the
        // golden answer's word as often as the negative's own.
        let q = "The streets were wet in the morning. What is the more possible cause of this?";
        assert!(leans_to_golden(
            "A rain causes the ground to swell, so it makes the streets wet.",
            "The shops opened late.",
            "It rained during the night.",
            &[q]
        ));
        let q =
            "Tom forgot to water his plants for a month. What happened as a more possible result?";
        assert!(leans_to_golden(
            "A plant withered faster than the plants could grow, so it was likely that the water had a negative effect on their growth.",
            "The plants grew faster.",
            "The plants withered.",
            &[q]
        ));
        let q = "The car would not start. What is the more possible cause of this?";
        assert!(leans_to_golden(
            "The car had been washed, but it was actually a malfunctioning battery that could not be repaired.",
            "The car had been washed.",
            "The battery was dead.",
            &[q]
        ));
        // A reason for the negative answer, or general knowledge naming neither, passes.
        let q = "The boy had a high fever. What is the more possible cause of this?";
        assert!(!leans_to_golden(
            "The boy ate an apple, which is a common ingredient in flu vaccines.",
            "He ate an apple.",
            "He caught the flu.",
            &[q]
        ));
        let q = "Lily took sulfonamides. What happened as a more possible result?";
        assert!(!leans_to_golden(
            "Sulfonamides can cause severe hemolysis, leading to fatal outcomes.",
            "Lily has been killed.",
            "Lily recovered.",
            &[q]
        ));
    }
}
