//! The option probabilities of a ConflictBank answer from the log-probabilities of its first
//! token, as ConflictBank's `inference.py` makes its `prob`: for each letter A to D the
//! log-probability of the token `" A"` .. `" D"` (where the top tokens do not list it, the
//! bare `"A"` .. `"D"` that chat models write; where neither is listed, -100 as the script
//! puts), then the softmax of the four in 32-bit floats, as `torch.softmax` on a float32
//! tensor (exp of each less the largest, times one over their sum).
//!
//! Where the top tokens list none of the four letters, the answer has no probabilities:
//! the script would write a uniform 0.25 each, a figure nobody measured.

use cb_llm::TopLogprob;

/// The log-probability `inference.py` puts for a letter its model does not list.
const MISSING: f32 = -100.0;

/// The probabilities of A, B, C and D; `None` when no letter is among `top`.
pub fn option_probabilities(top: &[TopLogprob]) -> Option<[f64; 4]> {
    let find = |token: &str| top.iter().find(|t| t.token == token).map(|t| t.logprob);
    let mut any = false;
    let logits: [f32; 4] =
        ["A", "B", "C", "D"].map(|l| match find(&format!(" {l}")).or_else(|| find(l)) {
            Some(lp) => {
                any = true;
                lp as f32
            }
            None => MISSING,
        });
    if !any {
        return None;
    }
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exps = logits.map(|x| (x - max).exp());
    let inverse = 1.0 / exps.iter().sum::<f32>();
    Some(exps.map(|e| f64::from(e * inverse)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn top(entries: &[(&str, f64)]) -> Vec<TopLogprob> {
        entries
            .iter()
            .map(|(t, l)| TopLogprob {
                token: (*t).to_owned(),
                logprob: *l,
            })
            .collect()
    }

    #[test]
    fn the_spaced_letter_first_then_the_bare_one_then_minus_one_hundred() {
        // ln 0.5, ln 0.25, ln 0.125 twice: the softmax gives them back.
        let (h, q, e) = (0.5f64.ln(), 0.25f64.ln(), 0.125f64.ln());
        let p = option_probabilities(&top(&[
            (" A", h),
            ("A", -9.0),
            ("B", q),
            (" C", e),
            ("D", e),
        ]))
        .unwrap();
        for (got, want) in p.iter().zip([0.5, 0.25, 0.125, 0.125]) {
            assert!((got - want).abs() < 1e-6, "{p:?}");
        }
        // D missing: -100, next to nothing.
        let p = option_probabilities(&top(&[("A", h), ("B", h)])).unwrap();
        assert!((p[0] - 0.5).abs() < 1e-6 && p[3] < 1e-30, "{p:?}");
    }

    #[test]
    fn no_letter_listed_is_no_probabilities() {
        assert_eq!(
            option_probabilities(&top(&[("The", -0.1), ("I", -2.0)])),
            None
        );
        assert_eq!(option_probabilities(&[]), None);
    }
}
