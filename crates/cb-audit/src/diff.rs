//! Word-level diff: the two texts are cut into tokens (runs of letters and digits, runs of
//! whitespace, single other characters) and aligned by a longest common subsequence.

/// What a piece of the diff is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// In both texts.
    Same,
    /// Only in the original text.
    Del,
    /// Only in the edited text.
    Ins,
}

/// Above this many table cells (tokens of one side times the other, after the common prefix
/// and suffix are cut) the middle is shown as one deletion and one insertion.
pub const MAX_CELLS: usize = 4_000_000;

/// Cuts a text into diff tokens; concatenating them gives the text back.
pub fn diff_tokens(s: &str) -> Vec<&str> {
    #[derive(PartialEq, Clone, Copy)]
    enum Class {
        Word,
        Space,
        Other,
    }
    let class = |c: char| {
        if c.is_alphanumeric() {
            Class::Word
        } else if c.is_whitespace() {
            Class::Space
        } else {
            Class::Other
        }
    };
    let mut out = Vec::new();
    let mut start = 0;
    let mut prev: Option<Class> = None;
    for (i, c) in s.char_indices() {
        let k = class(c);
        if let Some(p) = prev {
            if p != k || k == Class::Other {
                out.push(&s[start..i]);
                start = i;
            }
        }
        prev = Some(k);
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// The diff of `original` and `edited`, adjacent pieces of the same kind merged.
pub fn word_diff(original: &str, edited: &str) -> Vec<(Op, String)> {
    let a = diff_tokens(original);
    let b = diff_tokens(edited);
    let mut pre = 0;
    while pre < a.len() && pre < b.len() && a[pre] == b[pre] {
        pre += 1;
    }
    let mut suf = 0;
    while suf < a.len() - pre && suf < b.len() - pre && a[a.len() - 1 - suf] == b[b.len() - 1 - suf]
    {
        suf += 1;
    }
    let (am, bm) = (&a[pre..a.len() - suf], &b[pre..b.len() - suf]);
    let mut ops: Vec<(Op, &str)> = a[..pre].iter().map(|t| (Op::Same, *t)).collect();
    if am.len().saturating_mul(bm.len()) > MAX_CELLS {
        ops.extend(am.iter().map(|t| (Op::Del, *t)));
        ops.extend(bm.iter().map(|t| (Op::Ins, *t)));
    } else {
        let (n, m) = (am.len(), bm.len());
        // lcs[i * (m + 1) + j] = LCS length of am[i..] and bm[j..].
        let w = m + 1;
        let mut lcs = vec![0u32; (n + 1) * w];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                lcs[i * w + j] = if am[i] == bm[j] {
                    lcs[(i + 1) * w + j + 1] + 1
                } else {
                    lcs[(i + 1) * w + j].max(lcs[i * w + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if i < n && j < m && am[i] == bm[j] {
                ops.push((Op::Same, am[i]));
                i += 1;
                j += 1;
            } else if j >= m || (i < n && lcs[(i + 1) * w + j] >= lcs[i * w + j + 1]) {
                ops.push((Op::Del, am[i]));
                i += 1;
            } else {
                ops.push((Op::Ins, bm[j]));
                j += 1;
            }
        }
    }
    ops.extend(a[a.len() - suf..].iter().map(|t| (Op::Same, *t)));
    let mut out: Vec<(Op, String)> = Vec::new();
    for (op, t) in ops {
        match out.last_mut() {
            Some((o, s)) if *o == op => s.push_str(t),
            _ => out.push((op, t.to_owned())),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_rebuild_the_text() {
        let s = "Jeanne née à Domrémy, 1412!  ok";
        assert_eq!(diff_tokens(s).concat(), s);
        assert_eq!(diff_tokens("a, b"), vec!["a", ",", " ", "b"]);
    }

    #[test]
    fn a_replaced_word_is_one_deletion_and_one_insertion() {
        let d = word_diff(
            "She was born in Paris in 1900.",
            "She was born in Lyon in 1900.",
        );
        assert_eq!(
            d,
            vec![
                (Op::Same, "She was born in ".to_owned()),
                (Op::Del, "Paris".to_owned()),
                (Op::Ins, "Lyon".to_owned()),
                (Op::Same, " in 1900.".to_owned()),
            ]
        );
        assert_eq!(
            word_diff("same", "same"),
            vec![(Op::Same, "same".to_owned())]
        );
        assert_eq!(word_diff("", "new"), vec![(Op::Ins, "new".to_owned())]);
    }
}
