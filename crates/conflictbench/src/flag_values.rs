//! The values numeric flags take, for every command: clap value parsers that hold a number
//! to its stated range ([`whole`], [`real`]), and the ranges of the flags that are not an LLM
//! layer's ([`range`]). A value outside is refused with exit code 2, naming the flag and the
//! range, before the command runs.

use cb_model::Range;

/// The ranges of the flags whose numbers are not an LLM layer's (those are
/// [`cb_llm::ranges`]): every numeric flag of every command is held to one of the two sets.
pub mod range {
    use cb_model::Range;

    /// `--limit`, build's `--sample`: records read (a run that reads none builds no row).
    pub const RECORDS: Range = Range::whole(1, usize::MAX as u64);
    /// `--seed` of every command: any 64-bit seed.
    pub const SEED: Range = Range::whole(0, u64::MAX);
    /// `eval --seeds`: runs, one per seed.
    pub const SEEDS: Range = Range::whole(1, 1_000);
    /// `audit --votes`: questions per check, as a recipe's reader check takes them.
    pub const VOTES: Range = cb_steps::reader_check::VOTES;
    /// `audit --sample`, `view --sample`: rows for people to rate.
    pub const RATED_ROWS: Range = Range::whole(1, 1_000_000);
    /// `eval conflictbank --logprobs`: the top log-probabilities asked of the answer's first
    /// token (0: none; OpenAI and vLLM send at most 20 unless set otherwise).
    pub const LOGPROBS: Range = Range::whole(0, 20);
    /// `view --port` (0: any free port).
    pub const PORT: Range = Range::whole(0, u16::MAX as u64);
}

/// Says that `--flag 0` is refused, not read as "unlimited" or as 1, where 0 is below the
/// range.
fn zero_hint(e: String, s: &str, range: Range) -> String {
    if s.trim() == "0" && range.min_whole().is_some_and(|m| m > 0) {
        format!("{e} (0 is not read as unlimited or as 1: leave the flag out for its default)")
    } else {
        e
    }
}

/// The clap value parser of a whole-number flag held to `range`: every value outside (too
/// large, negative, a fraction, NaN, infinite, 0 below the range) is refused by clap with
/// exit code 2, naming the flag and the range, before the command runs. `T` holds the
/// range's ceiling.
pub fn whole<T>(range: Range) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: TryFrom<u64> + Clone + Send + Sync + 'static,
{
    move |s: &str| {
        let v = range.parse_whole(s).map_err(|e| zero_hint(e, s, range))?;
        T::try_from(v).map_err(|_| format!("{} is too large: must be {range}", s.trim()))
    }
}

/// The clap value parser of a flag that takes any finite number in `range` (amounts,
/// fractions, a temperature).
pub fn real(range: Range) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| range.parse(s)
}

/// [`real`], for a flag kept as `f32` (every range of one fits an `f32`).
pub fn real32(
    range: Range,
) -> impl Fn(&str) -> Result<f32, String> + Clone + Send + Sync + 'static {
    move |s: &str| range.parse(s).map(|v| v as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_value_outside_its_range_says_the_range() {
        let concurrency = whole::<usize>(cb_llm::ranges::CONCURRENCY);
        assert_eq!(concurrency("16"), Ok(16));
        let e = concurrency("0").unwrap_err();
        assert!(
            e.contains("from 1 to 10000") && e.contains("not read as unlimited"),
            "{e}"
        );
        let e = concurrency("18446744073709551615").unwrap_err();
        assert!(e.starts_with("18446744073709551615 is too large"), "{e}");
        let limit = whole::<usize>(range::RECORDS);
        let e = limit("18446744073709551616").unwrap_err();
        assert!(e.contains("too large"), "{e}");
        let amount = real(cb_llm::ranges::PRICE);
        assert_eq!(amount("0"), Ok(0.0));
        for bad in ["nan", "inf", "-1", "1e400", "x"] {
            assert!(
                amount(bad)
                    .unwrap_err()
                    .contains("a number from 0 to 10000"),
                "{bad}"
            );
        }
        assert!(real32(cb_llm::ranges::TEMPERATURE)("1e400").is_err());
    }
}
