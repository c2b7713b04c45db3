//! ConflictBank's figures (Su et al., 2024), computed as its own `evaluate.py` computes
//! them (zhaochen0110/conflictbank @ 3024a20), to the last printed digit.
//!
//! A question is asked in several settings (no evidence, the correct evidence, a conflicting
//! one, both); its options are four letters, of which one is the true object, one the
//! replaced (conflicting) object and one an "uncertain" answer. Only the questions a model
//! answers with the true object both with no evidence (`default`) and with the correct
//! evidence (`correct`) are scored, in every setting ([`selected`]). Over them:
//!
//! - correct, replaced and uncertain accuracy: the share of answers that are the true, the
//!   replaced, the uncertain letter, as `round(k / n * 100, 2)` (Python's `round`: the
//!   double nearest the decimal rounded half to even from the double's exact value);
//! - the memorization ratio, from the two *rounded* accuracies: `round(CA / (CA + RA) * 100,
//!   2)`;
//! - the average entropy of the option probabilities: per question `-sum p log2 p` over the
//!   probabilities above 0, in the file's order, then NumPy's mean (pairwise summation) and
//!   NumPy's rounding (`rint(x * 100) / 100`).
//!
//! Where `evaluate.py` divides by zero (no question selected: a `ZeroDivisionError` and a
//! NaN mean) or sets the memorization ratio to 0 when CA + RA is 0, these functions give
//! `None`: an empty denominator is never a figure.

use serde::Serialize;

/// One question's answer in one setting: option indexes (A = 0 .. D = 3).
#[derive(Debug, Clone, PartialEq)]
pub struct CbAnswer {
    /// The option the model chose; `None` when it chose none of the four.
    pub prediction: Option<u8>,
    pub true_option: u8,
    pub replaced_option: u8,
    pub uncertain_option: u8,
    /// `-sum p log2 p` of the option probabilities, when they are known ([`entropy`]).
    pub entropy: Option<f64>,
}

impl CbAnswer {
    /// Whether the model chose the true object.
    pub fn is_true(&self) -> bool {
        self.prediction == Some(self.true_option)
    }
}

/// The figures of one setting, as `evaluate.py` prints them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CbFigures {
    /// The number of questions scored.
    pub scored: usize,
    pub correct_accuracy: f64,
    pub replaced_accuracy: f64,
    pub uncertain_accuracy: f64,
    /// `None` when CA + RA is 0.
    pub memorization_ratio: Option<f64>,
    /// `None` when a scored question has no probabilities.
    pub average_entropy: Option<f64>,
}

/// The questions scored: those answered with the true object both with no evidence and with
/// the correct evidence (by position: the settings list the same questions in one order).
/// A question beyond the end of either list is not scored.
pub fn selected(default: &[CbAnswer], correct: &[CbAnswer]) -> Vec<bool> {
    default
        .iter()
        .zip(correct)
        .map(|(d, c)| d.is_true() && c.is_true())
        .collect()
}

/// The figures of one setting over the questions `selected` marks (by position); `None` when
/// none is scored.
pub fn figures(answers: &[CbAnswer], selected: &[bool]) -> Option<CbFigures> {
    let mut tally = CbTally::default();
    for (a, _) in answers.iter().zip(selected).filter(|(_, s)| **s) {
        tally.add(a);
    }
    tally.finish()
}

/// The figures of one setting taken in answer by answer (the scored ones only), for a reader
/// that streams: 3 counters and 8 bytes an answer (its entropy, which NumPy's pairwise mean
/// needs all of).
#[derive(Debug, Clone, Default)]
pub struct CbTally {
    n: usize,
    correct: usize,
    replaced: usize,
    uncertain: usize,
    entropies: Vec<f64>,
    /// An answer without probabilities was taken in: no average entropy.
    without_probabilities: bool,
}

impl CbTally {
    /// Takes in one scored answer.
    pub fn add(&mut self, a: &CbAnswer) {
        self.n += 1;
        let is = |option: u8| usize::from(a.prediction == Some(option));
        self.correct += is(a.true_option);
        self.replaced += is(a.replaced_option);
        self.uncertain += is(a.uncertain_option);
        match a.entropy {
            Some(h) if !self.without_probabilities => self.entropies.push(h),
            _ => {
                self.without_probabilities = true;
                self.entropies = Vec::new();
            }
        }
    }

    /// The figures; `None` when no answer was taken in.
    pub fn finish(self) -> Option<CbFigures> {
        let n = self.n;
        if n == 0 {
            return None;
        }
        let share = |k: usize| python_round(k as f64 / n as f64 * 100.0, 2);
        let correct_accuracy = share(self.correct);
        let replaced_accuracy = share(self.replaced);
        let both = correct_accuracy + replaced_accuracy;
        let memorization_ratio =
            (both != 0.0).then(|| python_round(correct_accuracy / both * 100.0, 2));
        let average_entropy = (!self.without_probabilities)
            .then(|| numpy_round(pairwise_sum(&self.entropies) / n as f64, 2));
        Some(CbFigures {
            scored: n,
            correct_accuracy,
            replaced_accuracy,
            uncertain_accuracy: share(self.uncertain),
            memorization_ratio,
            average_entropy,
        })
    }
}

/// The entropy in bits of option probabilities, as `evaluate.py` takes it: the
/// probabilities above 0, in the given order, `-sum p log2 p` (NumPy sums fewer than 8
/// values one after the other). The probabilities are taken as given, not normalized.
pub fn entropy(probabilities: &[f64]) -> f64 {
    let terms: Vec<f64> = probabilities
        .iter()
        .filter(|p| **p > 0.0)
        .map(|p| p * p.log2())
        .collect();
    -pairwise_sum(&terms)
}

/// NumPy's pairwise summation of float64 (`np.add.reduce`): below 8 values one after the
/// other; up to 128 in eight running sums combined as ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)),
/// the rest added after; above, the two halves (the first a multiple of 8) summed apart.
pub fn pairwise_sum(values: &[f64]) -> f64 {
    let n = values.len();
    if n < 8 {
        return values.iter().fold(0.0, |acc, v| acc + v);
    }
    if n <= 128 {
        let mut r = [0.0f64; 8];
        r.copy_from_slice(&values[..8]);
        let whole = n - n % 8;
        let mut i = 8;
        while i < whole {
            for (j, acc) in r.iter_mut().enumerate() {
                *acc += values[i + j];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for v in &values[whole..] {
            res += v;
        }
        return res;
    }
    let mut half = n / 2;
    half -= half % 8;
    pairwise_sum(&values[..half]) + pairwise_sum(&values[half..])
}

/// Python's `round(x, digits)`: the decimal nearest the double's exact value, ties to even,
/// read back as a double (Rust's formatting rounds the exact value the same way).
pub fn python_round(x: f64, digits: usize) -> f64 {
    if !x.is_finite() {
        return x;
    }
    format!("{x:.digits$}").parse().unwrap_or(x)
}

/// NumPy's `round(x, digits)` of a float64: `rint(x * 10^digits) / 10^digits`.
pub fn numpy_round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round_ties_even() / f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(prediction: u8, t: u8, r: u8, u: u8, entropy: Option<f64>) -> CbAnswer {
        CbAnswer {
            prediction: Some(prediction),
            true_option: t,
            replaced_option: r,
            uncertain_option: u,
            entropy,
        }
    }

    #[test]
    fn python_and_numpy_rounding_differ_where_python_does() {
        // Exact ties of the double go to even in Python.
        assert_eq!(python_round(0.125, 2), 0.12);
        assert_eq!(python_round(0.375, 2), 0.38);
        // 2.675 is 2.67499999... as a double: Python gives 2.67.
        assert_eq!(python_round(2.675, 2), 2.67);
        // NumPy multiplies first, then rounds half to even: 0.125 * 100 = 12.5 -> 12, and
        // 1.005 * 100 = 100.49999999999999 -> 100.
        assert_eq!(numpy_round(0.125, 2), 0.12);
        assert_eq!(numpy_round(1.005, 2), 1.0);
        // Where they differ: 2.675 is 2.67499999999999982236431605997495353221893310546875,
        // which Python rounds down, but 2.675 * 100 is 267.5 in doubles, which NumPy rounds to
        // the even 268.
        assert_eq!(numpy_round(2.675, 2), 2.68);
        assert_eq!(numpy_round(1.115, 2), 1.12);
        assert_eq!(python_round(1.115, 2), 1.11);
        assert_eq!(python_round(100.0 / 3.0, 2), 33.33);
    }

    #[test]
    fn pairwise_sum_is_numpys() {
        let values: Vec<f64> = (0..300).map(|i| 0.1 * i as f64 + 1e-3).collect();
        let naive = values.iter().fold(0.0, |a, v| a + v);
        let pairwise = pairwise_sum(&values);
        assert!((naive - pairwise).abs() < 1e-9);
        assert_eq!(pairwise_sum(&[0.1, 0.2, 0.3]), 0.1 + 0.2 + 0.3);
        // Eight running sums: (1e16 + 1) + (-1e16 + 1) loses both ones (1e16's neighbours are
        // 2 apart), where one sum after the other keeps one of them.
        let twelve = [
            1e16, 1.0, -1e16, 1.0, 0.5, 0.25, 0.0, 0.0, 2.0, 0.0, 0.0, 3.0,
        ];
        assert_eq!(twelve.iter().fold(0.0, |a, v| a + v), 6.75);
        assert_eq!(pairwise_sum(&twelve[..8]), 0.75);
        assert_eq!(pairwise_sum(&twelve), 5.75);
    }

    #[test]
    fn figures_over_the_selected_questions() {
        let default = vec![answer(0, 0, 1, 2, None), answer(1, 0, 1, 2, None)];
        let correct = vec![answer(0, 0, 1, 2, None), answer(0, 0, 1, 2, None)];
        let keep = selected(&default, &correct);
        assert_eq!(keep, [true, false]);
        let conflict = vec![answer(1, 0, 1, 2, Some(1.0)), answer(0, 0, 1, 2, Some(0.0))];
        let f = figures(&conflict, &keep).unwrap();
        assert_eq!(f.scored, 1);
        assert_eq!((f.correct_accuracy, f.replaced_accuracy), (0.0, 100.0));
        assert_eq!(f.memorization_ratio, Some(0.0));
        assert_eq!(f.average_entropy, Some(1.0));
        let uncertain = vec![answer(2, 0, 1, 2, None), answer(2, 0, 1, 2, None)];
        let f = figures(&uncertain, &keep).unwrap();
        assert_eq!(f.uncertain_accuracy, 100.0);
        assert_eq!(f.memorization_ratio, None);
        assert_eq!(f.average_entropy, None);
        assert!(figures(&conflict, &[false, false]).is_none());
        assert_eq!(entropy(&[0.5, 0.5, 0.0, 0.0]), 1.0);
        assert_eq!(entropy(&[0.25; 4]), 2.0);
    }
}
