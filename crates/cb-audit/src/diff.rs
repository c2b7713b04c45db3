//! Word-level diff: the two texts are cut into tokens (runs of letters and digits, runs of
//! whitespace, single other characters) and aligned by a longest common subsequence.
//! [`side_by_side`] turns the alignment into the two texts, each whole, with the tokens that
//! are not in the other text marked, and says how much the texts share.

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

/// Below this share of common words ([`Compared::shared`]) two texts are "rewritten": the
/// page shows them side by side without marks, since marking nearly every word helps no one.
/// Measured: the released KRE files' golden/negative contexts, written independently, share
/// at most 0.27 (cose, 150 rows; all below) and 0.47 (e-CARE, 147 of 150 below); edits of a
/// span keep most words (RECALL EventKG and UJ QA rows: 0.80 to 0.98; KRE SQuAD and MuSiQue
/// rewritten contexts: 0.93 and up), and are marked.
pub const REWRITTEN_BELOW: f64 = 0.4;

/// Two texts aligned for reading side by side.
#[derive(Debug, Clone, PartialEq)]
pub struct Compared {
    /// The original text in pieces; `true` marks a piece that is not in the edited text.
    pub original: Vec<(bool, String)>,
    /// The edited text in pieces; `true` marks a piece that is not in the original text.
    pub edited: Vec<(bool, String)>,
    /// 2 x common words / (words of the original + words of the edited text), in 0..=1 (1 for
    /// two texts without words); the common words are a longest common subsequence of the
    /// two texts' words (spaces and punctuation left out). `None` when the texts were too long to align
    /// ([`MAX_CELLS`]).
    pub shared: Option<f64>,
}

impl Compared {
    /// Whether the texts share too little to mark the changes ([`REWRITTEN_BELOW`]), or
    /// could not be aligned.
    pub fn rewritten(&self) -> bool {
        self.shared.is_none_or(|s| s < REWRITTEN_BELOW)
    }
}

/// Aligns `original` and `edited`: concatenating each side's pieces gives its text back.
pub fn side_by_side(original: &str, edited: &str) -> Compared {
    let (ops, aligned) = token_diff(original, edited);
    let words = |s| -> Vec<&str> {
        diff_tokens(s)
            .into_iter()
            .filter(|t| t.chars().next().is_some_and(char::is_alphanumeric))
            .collect()
    };
    let (wa, wb) = (words(original), words(edited));
    let shared = lcs_len(&wa, &wb).filter(|_| aligned).map(|common| {
        if wa.len() + wb.len() == 0 {
            1.0
        } else {
            2.0 * common as f64 / (wa.len() + wb.len()) as f64
        }
    });
    let side = |keep: Op| {
        let mut out: Vec<(bool, String)> = Vec::new();
        for (op, t) in &ops {
            if *op != Op::Same && *op != keep {
                continue;
            }
            let marked = *op == keep;
            match out.last_mut() {
                Some((m, s)) if *m == marked => s.push_str(t),
                _ => out.push((marked, (*t).to_owned())),
            }
        }
        out
    };
    Compared {
        original: side(Op::Del),
        edited: side(Op::Ins),
        shared,
    }
}

/// The diff of `original` and `edited`, adjacent pieces of the same kind merged.
#[cfg(test)]
fn word_diff(original: &str, edited: &str) -> Vec<(Op, String)> {
    let mut out: Vec<(Op, String)> = Vec::new();
    for (op, t) in token_diff(original, edited).0 {
        match out.last_mut() {
            Some((o, s)) if *o == op => s.push_str(t),
            _ => out.push((op, t.to_owned())),
        }
    }
    out
}

/// Length of the longest common subsequence of `a` and `b` (two rows of the table), or
/// `None` above [`MAX_CELLS`].
fn lcs_len(a: &[&str], b: &[&str]) -> Option<usize> {
    if a.len().saturating_mul(b.len()) > MAX_CELLS {
        return None;
    }
    let mut prev = vec![0usize; b.len() + 1];
    let mut cur = vec![0usize; b.len() + 1];
    for x in a {
        for (j, y) in b.iter().enumerate() {
            cur[j + 1] = if x == y {
                prev[j] + 1
            } else {
                prev[j + 1].max(cur[j])
            };
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    Some(prev[b.len()])
}

/// The token-level diff, and whether the middle was aligned (`false` above [`MAX_CELLS`]).
fn token_diff<'a>(original: &'a str, edited: &'a str) -> (Vec<(Op, &'a str)>, bool) {
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
    let aligned = am.len().saturating_mul(bm.len()) <= MAX_CELLS;
    if !aligned {
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
    (ops, aligned)
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

    #[test]
    fn each_side_is_its_whole_text_with_the_changes_marked() {
        let (a, b) = (
            "She was born in  Paris in 1900.",
            "She was born in  Lyon, France in 1900.",
        );
        let c = side_by_side(a, b);
        let whole = |v: &[(bool, String)]| v.iter().map(|p| p.1.as_str()).collect::<String>();
        assert_eq!(whole(&c.original), a);
        assert_eq!(whole(&c.edited), b);
        assert_eq!(
            c.original
                .iter()
                .filter(|p| p.0)
                .map(|p| p.1.as_str())
                .collect::<Vec<_>>(),
            vec!["Paris"]
        );
        assert_eq!(
            c.edited
                .iter()
                .filter(|p| p.0)
                .map(|p| p.1.as_str())
                .collect::<Vec<_>>(),
            vec!["Lyon, France"]
        );
        // 6 common words of 7 + 8.
        assert!((c.shared.unwrap() - 12.0 / 15.0).abs() < 1e-9);
        assert!(!c.rewritten());
    }

    #[test]
    fn texts_that_share_little_are_rewritten() {
        let c = side_by_side(
            "People wait for the doctor in the reception area.",
            "A library is a quiet place where books are kept on shelves.",
        );
        assert!(c.shared.unwrap() < REWRITTEN_BELOW, "{:?}", c.shared);
        assert!(c.rewritten());
        assert!(side_by_side("", "").shared == Some(1.0));
    }
}
