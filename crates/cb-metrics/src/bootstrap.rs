//! Percentile bootstrap intervals over items.
//!
//! A figure is a statistic of a set of items (for a rate: the share of items right). The
//! interval resamples the items with replacement `resamples` times (the same resampled items
//! for every seed, so seeds are repeated measures of one item, not more items), recomputes
//! the statistic on each resample with [`interval`]'s `stat`, and takes the 2.5 % and
//! 97.5 % percentiles of the recomputed values.
//!
//! **Percentile rule** (nearest rank): with the `m` defined values sorted ascending, the
//! `p` percentile is the `ceil(p · m)`-th smallest (1-based; at least the first). With
//! `m = 1000` that is the 25th and the 975th value. A resample whose statistic is undefined
//! (an empty denominator in it, e.g. no known question drawn for VR) is left out of `m`;
//! when no resample is defined there is no interval.
//!
//! The generator is `cb_model::item_rng(seed, "bootstrap", figure_id, "resample")` (ChaCha20),
//! one per figure, so an interval depends only on the scores, the seed and the figure's id.

use cb_model::item_rng;
use rand::Rng;
use serde::Serialize;

/// Resamples when none is asked for.
pub const DEFAULT_RESAMPLES: usize = 1000;
/// The seed of the resampling generator when none is asked for.
pub const DEFAULT_SEED: u64 = 0;
/// Lower and upper percentile of the 95 % interval.
pub const LEVELS: (f64, f64) = (0.025, 0.975);

/// A 95 % percentile bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
}

/// The `p` percentile of `sorted` by the nearest-rank rule of the module docs.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

/// One resample of `n` item indices, drawn with replacement.
pub fn resample(rng: &mut impl Rng, n: usize) -> Vec<usize> {
    (0..n).map(|_| rng.random_range(0..n)).collect()
}

/// The interval of the statistic `stat` over `n` items: `stat` gets the indices of a
/// resample (with repeats; `0..n` is the observed sample) and gives the figure for them.
/// `None` when there are no items, no resamples, or no resample has a value.
pub fn interval(
    n: usize,
    resamples: usize,
    seed: u64,
    figure_id: &str,
    mut stat: impl FnMut(&[usize]) -> Option<f64>,
) -> Option<Interval> {
    if n == 0 || resamples == 0 {
        return None;
    }
    let mut rng = item_rng(seed, "bootstrap", figure_id, "resample");
    let mut values: Vec<f64> = (0..resamples)
        .filter_map(|_| stat(&resample(&mut rng, n)))
        .filter(|v| !v.is_nan())
        .collect();
    values.sort_by(f64::total_cmp);
    Some(Interval {
        low: percentile(&values, LEVELS.0)?,
        high: percentile(&values, LEVELS.1)?,
    })
}

/// The interval of the mean of per-item scores (for a rate, each item's 0/1 outcome averaged
/// over the seeds).
pub fn mean_interval(
    scores: &[f64],
    resamples: usize,
    seed: u64,
    figure_id: &str,
) -> Option<Interval> {
    interval(scores.len(), resamples, seed, figure_id, |idx| {
        Some(idx.iter().map(|i| scores[*i]).sum::<f64>() / idx.len() as f64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    /// A reference bootstrap written out by hand: the same generator, the same rule.
    fn reference(k: usize, n: usize, b: usize, seed: u64, id: &str) -> (f64, f64) {
        let mut rng = item_rng(seed, "bootstrap", id, "resample");
        let mut means = Vec::new();
        for _ in 0..b {
            let mut right = 0;
            for _ in 0..n {
                // items 0..k are right, k..n wrong
                if rng.random_range(0..n) < k {
                    right += 1;
                }
            }
            means.push(right as f64 / n as f64);
        }
        means.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let lo = means[(0.025 * b as f64).ceil() as usize - 1];
        let hi = means[(0.975 * b as f64).ceil() as usize - 1];
        (lo, hi)
    }

    fn scores(k: usize, n: usize) -> Vec<f64> {
        (0..n).map(|i| if i < k { 1.0 } else { 0.0 }).collect()
    }

    #[test]
    fn k_of_n_matches_the_reference_and_narrows() {
        let mut last_width = f64::INFINITY;
        for (k, n) in [(3, 10), (12, 40), (60, 200), (300, 1000)] {
            let iv = mean_interval(&scores(k, n), DEFAULT_RESAMPLES, 7, "acc").unwrap();
            let (lo, hi) = reference(k, n, DEFAULT_RESAMPLES, 7, "acc");
            assert_eq!((iv.low, iv.high), (lo, hi), "k={k} n={n}");
            let p = k as f64 / n as f64;
            assert!(iv.low <= p && p <= iv.high, "{iv:?} holds {p}");
            let width = iv.high - iv.low;
            assert!(width < last_width, "narrows: {width} after {last_width}");
            last_width = width;
        }
        // all right or all wrong: a point interval
        let iv = mean_interval(&scores(5, 5), 100, 1, "x").unwrap();
        assert_eq!((iv.low, iv.high), (1.0, 1.0));
    }

    #[test]
    fn same_inputs_same_interval_and_none_when_empty() {
        let s = scores(7, 23);
        let a = mean_interval(&s, 500, 3, "f");
        assert_eq!(a, mean_interval(&s, 500, 3, "f"));
        assert_ne!(a, mean_interval(&s, 500, 4, "f"));
        assert_eq!(mean_interval(&[], 500, 3, "f"), None);
        assert_eq!(interval(5, 100, 0, "f", |_| None), None);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=1000).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.025), Some(25.0));
        assert_eq!(percentile(&v, 0.975), Some(975.0));
        assert_eq!(percentile(&[4.0], 0.025), Some(4.0));
    }
}
