//! A seeded sample stratified by domain and by outcome (the row fails some check, or none).
//!
//! Each non-empty stratum first gets one place (when there are at least as many places as
//! strata; otherwise the largest strata get one each), the remaining places go to the strata
//! in proportion to their remaining rows (largest remainders first). Inside a stratum the
//! rows are shuffled by a ChaCha generator seeded from (seed, stratum). The sample comes
//! back in report order. Same items, size and seed: same sample.

use crate::Report;
use rand::seq::SliceRandom;
use std::collections::BTreeMap;

/// The places in the audit of a sample of `n` rows (all rows when `n >= report.rows`),
/// drawn from the rows' outlines (read them with [`Report::items_at`]).
pub fn stratified_sample(report: &Report, n: usize, seed: u64) -> Vec<usize> {
    let rows = &report.outline;
    if n >= rows.len() {
        return (0..rows.len()).collect();
    }
    let mut strata: BTreeMap<(String, bool), Vec<usize>> = BTreeMap::new();
    for (i, it) in rows.iter().enumerate() {
        strata
            .entry((report.domain(it).to_owned(), it.failing))
            .or_default()
            .push(i);
    }
    let groups: Vec<((String, bool), Vec<usize>)> = strata.into_iter().collect();
    let k = groups.len();
    let mut quota = vec![0usize; k];
    if n >= k {
        quota.iter_mut().for_each(|q| *q = 1);
    } else {
        let mut by_size: Vec<usize> = (0..k).collect();
        by_size.sort_by_key(|&g| std::cmp::Reverse(groups[g].1.len()));
        for &g in by_size.iter().take(n) {
            quota[g] = 1;
        }
    }
    let mut left = n - quota.iter().sum::<usize>();
    let caps: Vec<usize> = (0..k).map(|g| groups[g].1.len() - quota[g]).collect();
    let total_cap: usize = caps.iter().sum();
    if left > 0 && total_cap > 0 {
        let mut rema: Vec<(f64, usize)> = Vec::new();
        let share = left;
        for g in 0..k {
            let exact = share as f64 * caps[g] as f64 / total_cap as f64;
            let whole = (exact.floor() as usize).min(caps[g]);
            quota[g] += whole;
            left -= whole;
            rema.push((exact - whole as f64, g));
        }
        rema.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        for (_, g) in rema.iter().cycle().take(k * 2) {
            if left == 0 {
                break;
            }
            if quota[*g] < groups[*g].1.len() {
                quota[*g] += 1;
                left -= 1;
            }
        }
    }
    let mut out = Vec::with_capacity(n);
    for (g, ((domain, failing), idx)) in groups.iter().enumerate() {
        let mut idx = idx.clone();
        let key = format!("{domain}\u{1f}{failing}");
        let mut rng = cb_model::item_rng(seed, "audit-sample", &key, "stratum");
        idx.shuffle(&mut rng);
        out.extend(idx.into_iter().take(quota[g]));
    }
    out.sort_unstable();
    out
}
