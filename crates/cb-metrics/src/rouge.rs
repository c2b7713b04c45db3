//! ROUGE-L as rouge-score 0.1.2's `RougeScorer(['rougeL'])` computes it without a stemmer,
//! written from its algorithm: lower-case, every run of characters outside `[a-z0-9]` becomes
//! a space, tokens are the remaining `[a-z0-9]+` runs; the score is the longest common
//! subsequence of the two token lists, precision over the prediction's length, recall over
//! the target's, F-measure their harmonic mean. An empty side scores 0 everywhere.

use serde::Serialize;

/// Precision, recall and F-measure, each in [0, 1].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct RougeScore {
    pub precision: f64,
    pub recall: f64,
    pub fmeasure: f64,
}

/// rouge-score's default tokenizer (no stemmer).
pub fn tokenize(text: &str) -> Vec<String> {
    let lowered = text.to_lowercase();
    lowered
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Length of the longest common subsequence (one row of the table at a time).
pub fn lcs_len<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    let mut prev = vec![0usize; b.len() + 1];
    let mut cur = vec![0usize; b.len() + 1];
    for x in a {
        for (j, y) in b.iter().enumerate() {
            cur[j + 1] = if x == y {
                prev[j] + 1
            } else {
                cur[j].max(prev[j + 1])
            };
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// ROUGE-L of `prediction` against `target` (rouge-score's `score(target, prediction)`).
pub fn rouge_l(target: &str, prediction: &str) -> RougeScore {
    let t = tokenize(target);
    let p = tokenize(prediction);
    if t.is_empty() || p.is_empty() {
        return RougeScore::default();
    }
    let lcs = lcs_len(&t, &p) as f64;
    let precision = lcs / p.len() as f64;
    let recall = lcs / t.len() as f64;
    let fmeasure = if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    };
    RougeScore {
        precision,
        recall,
        fmeasure,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_keeps_ascii_alphanumeric_runs_only() {
        assert_eq!(
            tokenize("Tree-based, 1,000.50!"),
            ["tree", "based", "1", "000", "50"]
        );
        assert_eq!(tokenize("fließt Köln"), ["flie", "t", "k", "ln"]);
    }

    #[test]
    fn lcs_based_scores() {
        let s = rouge_l("the cat sat on the mat", "the the the the");
        assert!((s.precision - 0.5).abs() < 1e-12);
        assert!((s.recall - 2.0 / 6.0).abs() < 1e-12);
        assert_eq!(rouge_l("", "x").fmeasure, 0.0);
        assert_eq!(rouge_l("a b", "a b").fmeasure, 1.0);
    }
}
