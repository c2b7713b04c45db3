//! KRE's metrics (paper sections 3.1 to 3.5 and Table 2, `kre-paper.txt`).
//!
//! The paper's equations (1) to (5) did not survive in the text we have; only the prose did.
//! Each definition below quotes the passage it is read from and says where it is a reading.
//!
//! An answer is an option index, `None` when the answer is invalid.

use crate::ratio;
use serde::Serialize;

/// One question's answers in one setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KreItem {
    /// The golden option.
    pub gold: usize,
    /// The option the negative context supports.
    pub negative: usize,
    /// The answer with no context (memory assessment).
    pub memory: Option<usize>,
    /// The answer with the context the memory split assigns: the negative context when the
    /// question is known, the golden one when it is not.
    pub with_context: Option<usize>,
}

impl KreItem {
    /// Section 3.1: "we mark those questions that it answers correctly [without external
    /// information]" — the known set; the others are the unknown set.
    pub fn known(&self) -> bool {
        self.memory == Some(self.gold)
    }
}

/// Vulnerable robustness, section 3.2: "to which extent the model can trust its correct
/// memory even with a misleading prompt". **Reading:** among known questions, asked with
/// the negative context, the share answered with the golden option. `None` when nothing is
/// known.
pub fn vr(items: &[KreItem]) -> Option<f64> {
    let known: Vec<_> = items.iter().filter(|i| i.known()).collect();
    ratio(
        known
            .iter()
            .filter(|i| i.with_context == Some(i.gold))
            .count(),
        known.len(),
    )
}

/// Resilient robustness, section 3.2: "the model's ability to harness accurate information
/// from the prompt, when memory is insufficient or flawed". **Reading:** among unknown
/// questions, asked with the golden context, the share answered with the golden option.
/// `None` when everything is known.
pub fn rr(items: &[KreItem]) -> Option<f64> {
    let unknown: Vec<_> = items.iter().filter(|i| !i.known()).collect();
    ratio(
        unknown
            .iter()
            .filter(|i| i.with_context == Some(i.gold))
            .count(),
        unknown.len(),
    )
}

/// Factual robustness, section 3.2: "Using these two scores together, we represent the
/// overall Factual Robustness (FR)". **Reading:** the mean of VR and RR; it reproduces six
/// of the seven rows of Table 2 after rounding (GPT-4: VR 50, RR 88, FR 69; the LLaMA-2 row,
/// 24 / 62 / 39, does not fit). `None` unless both exist.
pub fn fr(vr: Option<f64>, rr: Option<f64>) -> Option<f64> {
    Some((vr? + rr?) / 2.0)
}

/// One question's contribution to the DMSS, in {-1, 0, 1}. **Reading** of section 3.4 and
/// appendix A.2 ("The closer DMSS to 1 means the model is more likely to depend on
/// self-memory to answer the question. Conversely, when DMSS nearing -1 the model \[leans\]
/// heavily on external prompts"): a known question asked with the negative context scores
/// +1 when the answer stays golden (memory) and -1 when it is the negative option (prompt);
/// an unknown question asked with the golden context scores -1 when the answer is golden
/// (prompt) and +1 when it repeats the model's own no-context answer (memory). Any other
/// answer, invalid ones included, scores 0.
pub fn dmss_item(i: &KreItem) -> i32 {
    let Some(a) = i.with_context else { return 0 };
    if i.known() {
        if a == i.gold {
            1
        } else if a == i.negative {
            -1
        } else {
            0
        }
    } else if a == i.gold {
        -1
    } else if Some(a) == i.memory {
        1
    } else {
        0
    }
}

/// Decision-making style score: the mean of [`dmss_item`], in [-1, 1]. `None` for no items.
pub fn dmss(items: &[KreItem]) -> Option<f64> {
    if items.is_empty() {
        return None;
    }
    Some(items.iter().map(|i| f64::from(dmss_item(i))).sum::<f64>() / items.len() as f64)
}

/// The style a DMSS implies (section 3.4: "Dependent", "Intuitive", "rational/irrational").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Style {
    Dependent,
    Rational,
    Intuitive,
}

impl Style {
    pub fn as_str(self) -> &'static str {
        match self {
            Style::Dependent => "dependent",
            Style::Rational => "rational/irrational",
            Style::Intuitive => "intuitive",
        }
    }
}

/// Half-width of the band around 0 read as rational/irrational. **Reading:** the paper
/// gives no threshold; Table 2 calls -10 and -1 rational, -31 dependent and 39 intuitive, so
/// any threshold between 0.10 and 0.31 fits; we take 0.2.
pub const STYLE_BAND: f64 = 0.2;

/// The style of a DMSS value.
pub fn style(dmss: f64) -> Style {
    if dmss <= -STYLE_BAND {
        Style::Dependent
    } else if dmss >= STYLE_BAND {
        Style::Intuitive
    } else {
        Style::Rational
    }
}

/// Adaptivity, section 4.5: "The range between the highest DMSS scores (intuitive role …)
/// and the lowest (dependent role …) shows the Adaptivity". **Reading:** DMSS under the
/// intuitive role minus DMSS under the dependent role, in [-2, 2] (the paper's scale for it
/// is not stated).
pub fn adaptivity(dmss_intuitive: Option<f64>, dmss_dependent: Option<f64>) -> Option<f64> {
    Some(dmss_intuitive? - dmss_dependent?)
}

/// FR upper bound, section 4.5: "when under the intuitive role, each model has the peak VR
/// score. Conversely, under the dependent role, models have the highest RR scores. By using
/// different role instructions under different scenarios, we are able to discern the
/// Upper-Bound for the Factual Robustness". **Reading:** the mean of the highest VR and the
/// highest RR over the settings given (zero-shot and the two roles).
pub fn fr_upper(vrs: &[Option<f64>], rrs: &[Option<f64>]) -> Option<f64> {
    let best = |v: &[Option<f64>]| v.iter().flatten().copied().reduce(f64::max);
    fr(best(vrs), best(rrs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(memory: Option<usize>, with_context: Option<usize>) -> KreItem {
        KreItem {
            gold: 0,
            negative: 1,
            memory,
            with_context,
        }
    }

    #[test]
    fn split_vr_rr_fr() {
        let items = [
            item(Some(0), Some(0)), // known, kept memory
            item(Some(0), Some(1)), // known, misled
            item(Some(2), Some(0)), // unknown, used the golden context
            item(None, Some(2)),    // unknown (invalid), other answer
        ];
        assert_eq!(vr(&items), Some(0.5));
        assert_eq!(rr(&items), Some(0.5));
        assert_eq!(fr(vr(&items), rr(&items)), Some(0.5));
        assert_eq!(rr(&items[..2]), None);
        assert_eq!(fr(Some(0.5), None), None);
    }

    #[test]
    fn dmss_extremes_and_style() {
        let follower = [item(Some(0), Some(1)), item(Some(2), Some(0))];
        assert_eq!(dmss(&follower), Some(-1.0));
        let stubborn = [item(Some(0), Some(0)), item(Some(2), Some(2))];
        assert_eq!(dmss(&stubborn), Some(1.0));
        assert_eq!(dmss(&[item(Some(0), None)]), Some(0.0));
        assert_eq!(style(-1.0), Style::Dependent);
        assert_eq!(style(0.1), Style::Rational);
        assert_eq!(style(0.39), Style::Intuitive);
    }

    #[test]
    fn adaptivity_and_upper_bound() {
        assert_eq!(adaptivity(Some(0.5), Some(-0.5)), Some(1.0));
        let up = fr_upper(&[Some(0.2), Some(0.6), None], &[Some(0.9), Some(0.4)]);
        assert!((up.unwrap() - 0.75).abs() < 1e-12);
    }
}
