//! A rate: `None` when its denominator is empty, never `0` or `NaN`.

/// `num / den`, or `None` when `den` is 0.
pub fn ratio(num: usize, den: usize) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}
