//! The length of the longest common subsequence (LCS) of two token sequences, in time
//! linear in their length.
//!
//! The classic dynamic programme fills |a|·|b| cells: a passage of 5 MB (about 850,000
//! words) compared with its rewrite would take hours. [`lcs_len`] works in three regimes:
//!
//! 1. The common prefix and suffix are matched first (they are in every LCS).
//! 2. What is left is compared exactly when it has at most [`EXACT_CELLS`] cells (two
//!    sequences of about 2,000 tokens each: every reading-comprehension passage of SQuAD or
//!    MuSiQue), as before.
//! 3. Otherwise the shortest edit script is searched with Myers' greedy algorithm, which
//!    costs O((|a| + |b|)·D) for D insertions and deletions: exact when D is at most
//!    [`MAX_EDITS`] (a passage with its answer's mentions replaced, or a paragraph dropped).
//! 4. Beyond that, the LCS is taken along a band of [`BAND`] tokens on either side of the
//!    straight line from the start of both sequences to their end: O(|a|·[`BAND`]) time, a
//!    lower bound of the LCS, exact when the alignment stays in the band.
//!
//! Memory is O(|a| + |b|) in every regime. Tokens are compared as interned integers.

use std::collections::HashMap;

/// Above this many cells (|a|·|b| after the common prefix and suffix), regime 3 or 4.
pub const EXACT_CELLS: usize = 1 << 22;
/// Most insertions and deletions regime 3 searches before falling back to the band.
pub const MAX_EDITS: usize = 512;
/// Half-width of the band of regime 4, in tokens.
pub const BAND: usize = 256;

/// LCS length of `a` and `b`, exact in regimes 1 to 3, a lower bound in regime 4 (see the
/// module documentation).
pub fn lcs_len(a: &[String], b: &[String]) -> usize {
    let (x, y) = intern(a, b);
    let prefix = x.iter().zip(&y).take_while(|(p, q)| p == q).count();
    let (x, y) = (&x[prefix..], &y[prefix..]);
    let suffix = x
        .iter()
        .rev()
        .zip(y.iter().rev())
        .take_while(|(p, q)| p == q)
        .count();
    let (x, y) = (&x[..x.len() - suffix], &y[..y.len() - suffix]);
    let (long, short) = if x.len() >= y.len() { (x, y) } else { (y, x) };
    let middle = if short.is_empty() {
        0
    } else if long.len().saturating_mul(short.len()) <= EXACT_CELLS {
        exact(long, short)
    } else if let Some(d) = edit_distance_at_most(long, short, MAX_EDITS) {
        (long.len() + short.len() - d) / 2
    } else {
        banded(long, short, BAND)
    };
    prefix + suffix + middle
}

/// The tokens of both sequences as small integers (equal tokens, equal integers).
fn intern<'a>(a: &'a [String], b: &'a [String]) -> (Vec<u32>, Vec<u32>) {
    let mut ids: HashMap<&'a str, u32> = HashMap::new();
    let mut map = |s: &'a [String]| -> Vec<u32> {
        s.iter()
            .map(|t| {
                let next = ids.len() as u32;
                *ids.entry(t.as_str()).or_insert(next)
            })
            .collect()
    };
    let x = map(a);
    let y = map(b);
    (x, y)
}

/// The exact LCS length by the full dynamic programme, two rows of `short` (pass the shorter
/// sequence second): O(len × len) time, O(len of `short`) memory. Callers bound the size.
pub fn exact<T: PartialEq>(long: &[T], short: &[T]) -> usize {
    let mut prev = vec![0usize; short.len() + 1];
    let mut cur = vec![0usize; short.len() + 1];
    for x in long {
        for (j, y) in short.iter().enumerate() {
            cur[j + 1] = if x == y {
                prev[j] + 1
            } else {
                cur[j].max(prev[j + 1])
            };
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[short.len()]
}

/// The number of insertions and deletions that turn `a` into `b` (Myers 1986, the greedy
/// forward search), or `None` when it exceeds `max`. Only the furthest point of each
/// diagonal is kept: O(max) memory.
fn edit_distance_at_most(a: &[u32], b: &[u32], max: usize) -> Option<usize> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max = max.min(a.len() + b.len()) as isize;
    let offset = max + 1;
    // v[k + offset]: the furthest x reached on diagonal k = x - y, or -1 when unreachable.
    let mut v = vec![-1isize; 2 * max as usize + 3];
    for d in 0..=max {
        for k in (-d..=d).step_by(2) {
            let i = (k + offset) as usize;
            // From diagonal k + 1 by an insertion (y + 1), or from k - 1 by a deletion (x + 1),
            // each only when that diagonal was reached and the move stays on the grid.
            let down = (k < d && v[i + 1] >= 0 && v[i + 1] - k <= m).then(|| v[i + 1]);
            let right = (k > -d && v[i - 1] >= 0 && v[i - 1] < n).then(|| v[i - 1] + 1);
            let start = if d == 0 { Some(0) } else { down.max(right) };
            let Some(mut x) = start else {
                v[i] = -1;
                continue;
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[i] = x;
            if x == n && y == m {
                return Some(d as usize);
            }
        }
    }
    None
}

/// The LCS along a band of `half` tokens around the line from (0, 0) to (|long|, |short|).
/// Cells outside the band hold values of earlier rows or 0, each the length of a real common
/// subsequence of shorter prefixes, so the result is a lower bound of the LCS.
fn banded(long: &[u32], short: &[u32], half: usize) -> usize {
    let (n, m) = (long.len(), short.len());
    let mut prev = vec![0u32; m + 1];
    let mut cur = vec![0u32; m + 1];
    for (i, x) in long.iter().enumerate() {
        let row = i + 1;
        let centre = row * m / n;
        let lo = centre.saturating_sub(half).max(1);
        let hi = (centre + half).min(m);
        cur[lo - 1] = prev[lo - 1];
        for j in lo..=hi {
            cur[j] = if *x == short[j - 1] {
                prev[j - 1] + 1
            } else {
                cur[j - 1].max(prev[j])
            };
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[m] as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift) for random sequences.
    struct Gen(u64);

    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn seq(&mut self, len: usize, alphabet: u64) -> Vec<u32> {
            (0..len).map(|_| (self.next() % alphabet) as u32).collect()
        }
    }

    #[test]
    fn myers_finds_the_exact_distance_or_says_it_is_larger() {
        let mut g = Gen(0x2545_F491_4F6C_DD1D);
        for round in 0..400 {
            let (la, lb) = ((g.next() % 40) as usize, (g.next() % 40) as usize);
            let alphabet = 1 + g.next() % 6;
            let (a, b) = (g.seq(la, alphabet), g.seq(lb, alphabet));
            let lcs = exact(&a, &b);
            let d = la + lb - 2 * lcs;
            let cap = (g.next() % 50) as usize;
            let got = edit_distance_at_most(&a, &b, cap);
            if d <= cap {
                assert_eq!(got, Some(d), "round {round}: {a:?} {b:?}");
            } else {
                assert_eq!(got, None, "round {round}: {a:?} {b:?}");
            }
        }
    }

    #[test]
    fn the_band_is_a_lower_bound_and_exact_when_wide_enough() {
        let mut g = Gen(0x9E37_79B9_7F4A_7C15);
        for round in 0..400 {
            let la = 1 + (g.next() % 60) as usize;
            let lb = 1 + (g.next() % 60) as usize;
            let alphabet = 1 + g.next() % 5;
            let (a, b) = (g.seq(la, alphabet), g.seq(lb, alphabet));
            let (long, short) = if la >= lb { (&a, &b) } else { (&b, &a) };
            let full = exact(long, short);
            let half = (g.next() % 8) as usize;
            let band = banded(long, short, half);
            assert!(band <= full, "round {round}: {band} > {full}");
            assert_eq!(banded(long, short, long.len()), full, "round {round}");
        }
    }

    #[test]
    fn long_unrelated_sequences_get_a_close_lower_bound() {
        let mut g = Gen(11);
        let words = |v: Vec<u32>| -> Vec<String> { v.iter().map(|t| format!("w{t}")).collect() };
        let (a, b) = (words(g.seq(5000, 40)), words(g.seq(4500, 40)));
        let (x, y) = intern(&a, &b);
        let full = exact(&x, &y);
        let got = lcs_len(&a, &b);
        assert!(got <= full, "{got} > {full}");
        assert!(got as f64 >= 0.97 * full as f64, "{got} vs {full}");
    }

    #[test]
    fn a_long_sequence_with_few_edits_is_measured_exactly() {
        let mut g = Gen(7);
        let a: Vec<String> = g
            .seq(60_000, 5000)
            .iter()
            .map(|t| format!("w{t}"))
            .collect();
        let mut b = a.clone();
        // 40 replacements of one token by three, spread over the text, and a dropped run.
        for k in 0..40 {
            let at = 100 + k * 1400;
            b.splice(at..at + 1, ["x".into(), "y".into(), "z".into()]);
        }
        b.drain(30_000..30_200);
        // The exact LCS: every token but the 40 replaced and the 200 dropped ones.
        assert_eq!(lcs_len(&a, &b), a.len() - 40 - 200);
    }
}
