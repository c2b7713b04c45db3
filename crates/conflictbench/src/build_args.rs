//! Checks of `build` arguments that clap's types cannot express: every one fails with exit
//! code 2 before any record is read and before any output is touched.

use cb_engine::Recipe;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Value parser of money amounts (`--max-cost`, `--price-input`, `--price-output`): a
/// finite number, zero or more.
pub fn amount(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("`{s}` must be a finite number, 0 or more"));
    }
    Ok(v)
}

/// Value parser of `--limit` and `--sample`: a run that reads no record cannot build a row.
pub fn at_least_one(s: &str) -> Result<usize, String> {
    let v: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a whole number"))?;
    if v == 0 {
        return Err("must be at least 1: a run that reads no record cannot build a row".into());
    }
    Ok(v)
}

/// Value parser of the counts, rates, sizes and times that have no zero (`--concurrency`,
/// `--rpm`, `--tpm`, `--timeout-s`, the batch files' sizes and polls): 0 is refused, never read
/// as "unlimited" or as 1; leaving the flag out gives its default.
pub fn positive<T: std::str::FromStr + PartialEq + From<u8>>(s: &str) -> Result<T, String> {
    let v: T = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a whole number"))?;
    if v == T::from(0) {
        return Err("must be at least 1 (0 is not read as unlimited or as 1: leave the flag out for its default)".into());
    }
    Ok(v)
}

/// Parses the `--input SOURCE=PATH` overrides and checks that each names a source (primary
/// or joined) of the selected recipes.
pub fn inputs(specs: &[String], recipes: &[&Recipe]) -> anyhow::Result<BTreeMap<String, PathBuf>> {
    let known: BTreeSet<&str> = recipes
        .iter()
        .flat_map(|r| {
            std::iter::once(r.source.name.as_str())
                .chain(r.join.iter().map(|j| j.source.name.as_str()))
        })
        .collect();
    let mut out = BTreeMap::new();
    for spec in specs {
        let (k, v) = spec.split_once('=').ok_or_else(|| {
            crate::config_error::config_err(format!("--input {spec}: expected SOURCE=PATH"))
        })?;
        if !known.contains(k) {
            let names: Vec<String> = recipes.iter().map(|r| r.name()).collect();
            return Err(crate::config_error::config_err(format!(
                "--input {spec}: no source `{k}` in the selected recipes ({}); their sources: {}",
                names.join(", "),
                known.iter().copied().collect::<Vec<_>>().join(", ")
            )));
        }
        out.insert(k.to_owned(), PathBuf::from(v));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_finite_and_not_negative() {
        assert_eq!(amount("0.5"), Ok(0.5));
        assert_eq!(amount("0"), Ok(0.0));
        for bad in ["nan", "NaN", "inf", "-inf", "-1", "-0.01", "x"] {
            assert!(amount(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn limits_start_at_one() {
        assert_eq!(at_least_one("3"), Ok(3));
        assert!(at_least_one("0").unwrap_err().contains("at least 1"));
        assert!(at_least_one("-1").is_err());
    }
}
