//! Mean and standard deviation over runs (seeds).

use serde::Serialize;

/// A figure over runs: how many runs had a value (`n`), their mean and standard deviation.
/// The deviation is the population one (divide by `n`, numpy's default `ddof=0`); with no
/// value at all, `mean` and `std` are `None`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub mean: Option<f64>,
    pub std: Option<f64>,
}

impl Summary {
    /// Summarises the values that exist; `None` entries (an empty denominator in that run)
    /// are left out of `n`.
    pub fn of(values: impl IntoIterator<Item = Option<f64>>) -> Summary {
        let v: Vec<f64> = values.into_iter().flatten().collect();
        if v.is_empty() {
            return Summary {
                n: 0,
                mean: None,
                std: None,
            };
        }
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        Summary {
            n: v.len(),
            mean: Some(mean),
            std: Some(var.sqrt()),
        }
    }

    /// `mean ± std` with the values multiplied by `scale` (100 for percentages), or `n/a`.
    pub fn display(&self, scale: f64, decimals: usize) -> String {
        match (self.mean, self.std) {
            (Some(m), Some(s)) => {
                format!("{:.*} ± {:.*}", decimals, m * scale, decimals, s * scale)
            }
            _ => "n/a".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn population_deviation_and_missing_values() {
        let s = Summary::of([Some(1.0), Some(3.0), None]);
        assert_eq!(s.n, 2);
        assert_eq!(s.mean, Some(2.0));
        assert_eq!(s.std, Some(1.0));
        assert_eq!(s.display(100.0, 2), "200.00 ± 100.00");
        assert_eq!(Summary::of([None]).display(1.0, 2), "n/a");
    }
}
