//! The range a number a user gives may take (a command's flag, a recipe's key, a key of a
//! models or pool file), declared once ([`Range`]) with the sentence that states it. A value
//! outside is refused with that sentence: too large, too small, negative, NaN, infinite, or
//! a fraction where a whole number is meant.

use std::fmt;

/// The values a number may take: a whole number from `min` to `max`, or a finite number
/// from `min` (left out when `open_min`) to `max`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Range {
    Whole { min: u64, max: u64 },
    Real { min: f64, open_min: bool, max: f64 },
}

impl Range {
    /// A whole number from `min` to `max`, both included.
    pub const fn whole(min: u64, max: u64) -> Self {
        Self::Whole { min, max }
    }

    /// A finite number from `min` to `max`, both included.
    pub const fn real(min: f64, max: f64) -> Self {
        Self::Real {
            min,
            open_min: false,
            max,
        }
    }

    /// A finite number above `min` (which is left out: a zero that means nothing) and at
    /// most `max`.
    pub const fn above(min: f64, max: f64) -> Self {
        Self::Real {
            min,
            open_min: true,
            max,
        }
    }

    /// The least whole number of a whole range (for a message saying what a zero means).
    pub fn min_whole(&self) -> Option<u64> {
        match self {
            Self::Whole { min, .. } => Some(*min),
            Self::Real { .. } => None,
        }
    }

    /// The greatest whole number of a whole range.
    pub fn max_whole(&self) -> Option<u64> {
        match self {
            Self::Whole { max, .. } => Some(*max),
            Self::Real { .. } => None,
        }
    }

    /// `value` (as the user wrote it) refused: `why`, then the range.
    fn refuse(&self, value: &str, why: &str) -> String {
        format!("{value} is {why}: must be {self}")
    }

    /// The whole number `v` (read from a file: TOML's integers are signed), or why not; on a
    /// real range, `v` is checked as a number (read such values with [`Range::check_real`]).
    pub fn check_int(&self, v: i64) -> Result<u64, String> {
        match *self {
            Self::Whole { min, max } => match u64::try_from(v) {
                Err(_) => Err(self.refuse(&v.to_string(), "negative")),
                Ok(u) if u < min => Err(self.refuse(&v.to_string(), "too small")),
                Ok(u) if u > max => Err(self.refuse(&v.to_string(), "too large")),
                Ok(u) => Ok(u),
            },
            Self::Real { .. } => self.check_real(v as f64).map(|_| v.unsigned_abs()),
        }
    }

    /// The number `v`, or why not (a whole range takes only a whole `v`).
    pub fn check_real(&self, v: f64) -> Result<f64, String> {
        let shown = v.to_string();
        if v.is_nan() {
            return Err(self.refuse("NaN", "not a number"));
        }
        if v.is_infinite() {
            return Err(self.refuse(&shown, "infinite"));
        }
        match *self {
            Self::Whole { .. } if v.fract() != 0.0 => {
                Err(self.refuse(&shown, "not a whole number"))
            }
            Self::Whole { .. } if v < 0.0 => Err(self.refuse(&shown, "negative")),
            Self::Whole { max, .. } if v > max as f64 => Err(self.refuse(&shown, "too large")),
            Self::Whole { .. } => self.check_int(v as i64).map(|u| u as f64),
            Self::Real { min, open_min, max } => {
                if v < min || (open_min && v == min) {
                    let why = if v < 0.0 && min >= 0.0 {
                        "negative"
                    } else {
                        "too small"
                    };
                    Err(self.refuse(&shown, why))
                } else if v > max {
                    Err(self.refuse(&shown, "too large"))
                } else {
                    Ok(v)
                }
            }
        }
    }

    /// Reads `s` (a flag's value) as a number of this range, or says why not.
    pub fn parse(&self, s: &str) -> Result<f64, String> {
        let t = s.trim();
        match *self {
            Self::Whole { .. } => self.parse_whole(s).map(|u| u as f64),
            Self::Real { .. } => match t.parse::<f64>() {
                // Rust reads `1e400` as infinity: said as what the user wrote.
                Ok(v) if v.is_infinite() => Err(self.refuse(t, "not finite")),
                Ok(v) => self.check_real(v),
                Err(_) => Err(self.refuse(t, "not a number")),
            },
        }
    }

    /// Reads `s` as a whole number of this (whole) range, or says why not.
    pub fn parse_whole(&self, s: &str) -> Result<u64, String> {
        let t = s.trim();
        let Self::Whole { min, max } = *self else {
            return Err(self.refuse(t, "not a whole number"));
        };
        let digits = t.strip_prefix('+').unwrap_or(t);
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            return match digits.parse::<u64>() {
                Ok(u) if u < min => Err(self.refuse(t, "too small")),
                Ok(u) if u > max => Err(self.refuse(t, "too large")),
                Ok(u) => Ok(u),
                // Only digits, yet not a u64: past the largest.
                Err(_) => Err(self.refuse(t, "too large")),
            };
        }
        let negative = t
            .strip_prefix('-')
            .is_some_and(|d| d.parse::<f64>().is_ok_and(|v| v > 0.0));
        Err(match t.parse::<f64>() {
            _ if negative => self.refuse(t, "negative"),
            Ok(v) if v.is_nan() => self.refuse(t, "not a number"),
            Ok(v) if v.is_infinite() => self.refuse(t, "not finite"),
            Ok(_) => self.refuse(t, "not a whole number"),
            Err(_) => self.refuse(t, "not a whole number"),
        })
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Whole { min, max } => write!(f, "a whole number from {min} to {max}"),
            Self::Real {
                min,
                open_min: false,
                max,
            } => write!(f, "a number from {min} to {max}"),
            Self::Real {
                min,
                open_min: true,
                max,
            } => write!(f, "a number above {min}, at most {max}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_outside_are_refused_with_the_range() {
        let r = Range::whole(1, 100);
        assert_eq!(r.parse_whole(" 7 "), Ok(7));
        assert_eq!(r.parse_whole("+100"), Ok(100));
        for (bad, why) in [
            ("0", "too small"),
            ("101", "too large"),
            ("18446744073709551616", "too large"),
            ("-1", "negative"),
            ("nan", "not a number"),
            ("inf", "not finite"),
            ("1e400", "not finite"),
            ("1.5", "not a whole number"),
            ("x", "not a whole number"),
            ("", "not a whole number"),
        ] {
            let e = r.parse_whole(bad).unwrap_err();
            assert_eq!(
                e,
                format!(
                    "{} is {why}: must be a whole number from 1 to 100",
                    bad.trim()
                ),
            );
        }
        assert_eq!(
            Range::whole(0, u64::MAX).parse_whole("18446744073709551615"),
            Ok(u64::MAX)
        );
    }

    #[test]
    fn real_numbers_are_finite_and_inside() {
        let t = Range::real(0.0, 2.0);
        assert_eq!(t.parse("0"), Ok(0.0));
        assert_eq!(t.parse("2"), Ok(2.0));
        for bad in ["nan", "NaN", "inf", "-inf", "1e400", "-1", "2.01", "x"] {
            let e = t.parse(bad).unwrap_err();
            assert!(e.ends_with("must be a number from 0 to 2"), "{bad}: {e}");
        }
        let f = Range::above(0.0, 1.0);
        assert!(f
            .parse("0")
            .unwrap_err()
            .contains("a number above 0, at most 1"));
        assert_eq!(f.parse("1"), Ok(1.0));
    }

    #[test]
    fn values_from_files_are_held_to_the_range() {
        let r = Range::whole(1, 10);
        assert_eq!(r.check_int(3), Ok(3));
        assert!(r.check_int(-3).unwrap_err().starts_with("-3 is negative"));
        assert!(r.check_int(0).unwrap_err().starts_with("0 is too small"));
        assert!(r
            .check_real(2.5)
            .unwrap_err()
            .contains("not a whole number"));
        assert!(r.check_real(f64::NAN).unwrap_err().starts_with("NaN is"));
        assert_eq!(r.check_real(4.0), Ok(4.0));
        let p = Range::real(0.0, 1.0);
        assert_eq!(p.check_int(1), Ok(1));
        assert!(p.check_int(2).is_err());
        assert!(p
            .check_real(f64::INFINITY)
            .unwrap_err()
            .contains("infinite"));
    }
}
