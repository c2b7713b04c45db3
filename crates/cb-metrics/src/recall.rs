//! RECALL's metrics (paper section 3.3, `recall-paper.txt`).
//!
//! Accuracy counts an invalid answer as wrong. M-Rate (eq. 1): "the proportion of the
//! queries that the model answers wrongly with edited contexts in all queries that the model
//! can answer correctly without external knowledge".
//!
//! R-Rate, the mistake reappearance rate: "the proportion of edited words appearing in the
//! model's outputs in all edited words". In the surviving text of eq. 2 and eq. 3 the same
//! symbol 𝔸ᵢ ("the set of words in aᵢ", aᵢ being "the answer for the i-th sample") appears on
//! both sides, which cannot measure the model. **Our reading** (not a quote): an edited word
//! Eᵢⱼ is looked for in the model's output under the edited context, an original word Oᵢⱼ in
//! the reference target aᵢ. So eq. 2 (EventKG, E and O aligned) is
//! `Σ 𝕀(Eᵢⱼ ∈ outputᵢ ∧ Oᵢⱼ ∈ targetᵢ) / Σ 𝕀(Oᵢⱼ ∈ targetᵢ)`: among the edits that touch
//! the target, the share the model repeats; and eq. 3 (UJ, E and O two sets) is
//! `(Σ 𝕀(Eᵢⱼ ∈ outputᵢ) / Σ |Eᵢ|) / (Σ 𝕀(Oᵢⱼ ∈ targetᵢ) / Σ |Oᵢ|)`.
//! "∈" is whole-word phrase containment after `cb_model::text::normalize` (case, punctuation
//! and articles ignored), since a value may be several words ("9 January 1431").

use crate::ratio;
use cb_model::text::contains_phrase;

/// Share of `true` in `correct` (one entry per question; invalid answers are `false`).
pub fn accuracy(correct: &[bool]) -> Option<f64> {
    ratio(correct.iter().filter(|c| **c).count(), correct.len())
}

/// M-Rate (eq. 1) from `(correct with no context, correct with the edited context)` per
/// question. `None` when no question was answered correctly without context.
pub fn m_rate(pairs: &[(bool, bool)]) -> Option<f64> {
    let known = pairs.iter().filter(|(none, _)| *none).count();
    let misled = pairs
        .iter()
        .filter(|(none, edited)| *none && !*edited)
        .count();
    ratio(misled, known)
}

/// One text-generation sample for the R-Rate.
#[derive(Debug, Clone, Copy)]
pub struct TgSample<'a> {
    /// E: the edited words of the source.
    pub edited_words: &'a [String],
    /// O: their originals.
    pub original_words: &'a [String],
    /// The model's output given the edited source.
    pub output: &'a str,
    /// The reference target.
    pub target: &'a str,
}

/// What one sample adds to the R-Rate: the R-Rate of a set of samples is [`RCounts::r_rate`]
/// of the sum of their counts, so a bootstrap sums per-sample counts instead of matching
/// phrases again for every resample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RCounts {
    /// Edited words found in the output (aligned: only those whose original is in the target).
    pub e_seen: usize,
    /// Edited words (sets only).
    pub e_total: usize,
    /// Original words found in the target.
    pub o_seen: usize,
    /// Original words (sets only).
    pub o_total: usize,
}

impl std::ops::AddAssign for RCounts {
    fn add_assign(&mut self, o: RCounts) {
        self.e_seen += o.e_seen;
        self.e_total += o.e_total;
        self.o_seen += o.o_seen;
        self.o_total += o.o_total;
    }
}

impl RCounts {
    /// The counts of one sample, for eq. 2 (`aligned`: E and O in pairs) or eq. 3 (two sets).
    pub fn of(s: &TgSample<'_>, aligned: bool) -> RCounts {
        if aligned {
            let mut c = RCounts::default();
            for (e, o) in s.edited_words.iter().zip(s.original_words) {
                if contains_phrase(s.target, o) {
                    c.o_seen += 1;
                    c.e_seen += usize::from(contains_phrase(s.output, e));
                }
            }
            return c;
        }
        RCounts {
            e_seen: s
                .edited_words
                .iter()
                .filter(|e| contains_phrase(s.output, e))
                .count(),
            e_total: s.edited_words.len(),
            o_seen: s
                .original_words
                .iter()
                .filter(|o| contains_phrase(s.target, o))
                .count(),
            o_total: s.original_words.len(),
        }
    }

    /// The R-Rate of summed counts: eq. 2 (`aligned`), `None` when no original word occurs in
    /// any target; eq. 3, `None` also when there is no edited or no original word.
    pub fn r_rate(&self, aligned: bool) -> Option<f64> {
        if aligned {
            return ratio(self.e_seen, self.o_seen);
        }
        let e_rate = ratio(self.e_seen, self.e_total)?;
        let o_rate = ratio(self.o_seen, self.o_total)?;
        (o_rate > 0.0).then(|| e_rate / o_rate)
    }
}

fn summed(samples: &[TgSample<'_>], aligned: bool) -> RCounts {
    let mut total = RCounts::default();
    for s in samples {
        total += RCounts::of(s, aligned);
    }
    total
}

/// R-Rate for aligned E and O (eq. 2, EventKG; see the module docs for the reading).
/// `None` when no original word occurs in any target.
pub fn r_rate_aligned(samples: &[TgSample<'_>]) -> Option<f64> {
    summed(samples, true).r_rate(true)
}

/// R-Rate for E and O as two sets (eq. 3, UJ; see the module docs for the reading).
/// `None` when there is no edited word, no original word, or no original word occurs in any
/// target.
pub fn r_rate_sets(samples: &[TgSample<'_>]) -> Option<f64> {
    summed(samples, false).r_rate(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn accuracy_and_m_rate() {
        assert_eq!(accuracy(&[true, false, true, true]), Some(0.75));
        assert_eq!(accuracy(&[]), None);
        // Known without context: items 0, 1, 2; misled with the edited context: 1.
        let pairs = [(true, true), (true, false), (true, true), (false, false)];
        assert_eq!(m_rate(&pairs), Some(1.0 / 3.0));
        assert_eq!(m_rate(&[(false, true)]), None);
    }

    #[test]
    fn r_rate_counts_edits_that_touch_the_target() {
        let e = words(&["1432", "Paris"]);
        let o = words(&["1431", "Rouen"]);
        let target = "The trial began in 1431 in Rouen.";
        let repeats = TgSample {
            edited_words: &e,
            original_words: &o,
            output: "The trial began in 1432 in Rouen.",
            target,
        };
        assert_eq!(r_rate_aligned(&[repeats]), Some(0.5));
        let faithful = TgSample {
            output: target,
            ..repeats
        };
        assert_eq!(r_rate_aligned(&[faithful]), Some(0.0));
        let untouched = TgSample {
            target: "Nothing here.",
            ..repeats
        };
        assert_eq!(r_rate_aligned(&[untouched]), None);
    }

    #[test]
    fn r_rate_sets_is_a_ratio_of_rates() {
        let e = words(&["slow", "small"]);
        let o = words(&["fast", "large", "wide"]);
        let s = TgSample {
            edited_words: &e,
            original_words: &o,
            output: "A slow and small thing.",
            target: "A fast and large thing.",
        };
        // E rate 2/2, O rate 2/3.
        assert!((r_rate_sets(&[s]).unwrap() - 1.5).abs() < 1e-12);
    }
}
