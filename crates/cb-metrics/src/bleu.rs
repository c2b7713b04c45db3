//! BLEU as sacrebleu 2.6.0 computes it with its defaults, written from its algorithm:
//!
//! - segments are right-stripped, then tokenized by [`tokenize_13a`] (mteval-v13a);
//! - per segment: hypothesis and reference lengths, and per n-gram order (1 to 4) the
//!   hypothesis n-grams (`total`) and those matched, clipped by the reference counts
//!   (`correct`);
//! - corpus BLEU adds the statistics of every segment, then scores once; sentence BLEU scores
//!   one segment with exponential smoothing and the effective order (sacrebleu's
//!   `sentence_bleu` defaults);
//! - the score is `100 · BP · exp(mean log precision)`, 0 when nothing matches at all.

use std::collections::HashMap;

/// Highest n-gram order.
pub const MAX_ORDER: usize = 4;

/// How a zero n-gram precision is handled (sacrebleu's `smooth_method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Smooth {
    /// A zero precision makes the score 0.
    None,
    /// The k-th zero precision becomes `100 / (2^k · total)` (sacrebleu `exp`, its default).
    Exp,
}

/// Whitespace as Python's `str.split()` sees it.
fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Characters the first 13a rule surrounds with spaces: `{|}~`, `` [\]^_` ``, space to `&`,
/// `(` to `+`, `:` to `@`, and `/`. Not `'`, `,`, `-`, `.`.
fn is_13a_symbol(c: char) -> bool {
    matches!(c, '{'..='~' | '['..='`' | ' '..='&' | '('..='+' | ':'..='@' | '/')
}

/// One left-to-right pass of a two-character rule, as `re.sub` applies it: where `first`
/// and `second` match at a position, `emit` writes the replacement and the scan resumes
/// after the pair.
fn pair_pass(
    s: &[char],
    first: impl Fn(char) -> bool,
    second: impl Fn(char) -> bool,
    emit: impl Fn(char, char, &mut Vec<char>),
) -> Vec<char> {
    let mut out = Vec::with_capacity(s.len() + s.len() / 4);
    let mut i = 0;
    while i < s.len() {
        if i + 1 < s.len() && first(s[i]) && second(s[i + 1]) {
            emit(s[i], s[i + 1], &mut out);
            i += 2;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    out
}

/// The mteval-v13a tokenizer as sacrebleu's `Tokenizer13a`: drops `<skipped>`, joins
/// `-\n` line breaks, turns newlines into spaces, unescapes `&quot; &amp; &lt; &gt;`, puts
/// spaces around the symbols of [`is_13a_symbol`], splits `.` and `,` from non-digits on
/// either side, splits `-` after a digit, and collapses whitespace.
pub fn tokenize_13a(line: &str) -> String {
    let mut line = line
        .replace("<skipped>", "")
        .replace("-\n", "")
        .replace('\n', " ");
    if line.contains('&') {
        line = line
            .replace("&quot;", "\"")
            .replace("&amp;", "&")
            .replace("&lt;", "<")
            .replace("&gt;", ">");
    }
    let mut spaced: Vec<char> = Vec::with_capacity(line.len() + 8);
    spaced.push(' ');
    for c in line.chars() {
        if is_13a_symbol(c) {
            spaced.extend([' ', c, ' ']);
        } else {
            spaced.push(c);
        }
    }
    spaced.push(' ');
    let digit = |c: char| c.is_ascii_digit();
    let period_comma = |c: char| c == '.' || c == ',';
    // `([^0-9])([\.,])` -> `\1 \2 `
    let s = pair_pass(
        &spaced,
        |c| !digit(c),
        period_comma,
        |a, b, o| o.extend([a, ' ', b, ' ']),
    );
    // `([\.,])([^0-9])` -> ` \1 \2`
    let s = pair_pass(
        &s,
        period_comma,
        |c| !digit(c),
        |a, b, o| o.extend([' ', a, ' ', b]),
    );
    // `([0-9])(-)` -> `\1 \2 `
    let s = pair_pass(
        &s,
        digit,
        |c| c == '-',
        |a, b, o| o.extend([a, ' ', b, ' ']),
    );
    let s: String = s.into_iter().collect();
    s.split(is_py_space)
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The sufficient statistics of one segment (or, added up, of a corpus).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BleuStats {
    pub hyp_len: usize,
    pub ref_len: usize,
    /// Matched n-grams per order (clipped by the reference counts).
    pub correct: [usize; MAX_ORDER],
    /// Hypothesis n-grams per order.
    pub total: [usize; MAX_ORDER],
}

impl std::ops::AddAssign for BleuStats {
    fn add_assign(&mut self, o: Self) {
        self.hyp_len += o.hyp_len;
        self.ref_len += o.ref_len;
        for n in 0..MAX_ORDER {
            self.correct[n] += o.correct[n];
            self.total[n] += o.total[n];
        }
    }
}

fn ngram_counts<'a>(tokens: &'a [&'a str]) -> HashMap<&'a [&'a str], usize> {
    let mut counts = HashMap::new();
    for n in 1..=MAX_ORDER {
        for g in tokens.windows(n) {
            *counts.entry(g).or_insert(0) += 1;
        }
    }
    counts
}

/// Python's `rstrip()`.
fn rstrip(s: &str) -> &str {
    s.trim_end_matches(is_py_space)
}

/// The statistics of one hypothesis against one reference.
pub fn segment_stats(hypothesis: &str, reference: &str) -> BleuStats {
    let hyp = tokenize_13a(rstrip(hypothesis));
    let rf = tokenize_13a(rstrip(reference));
    let hyp: Vec<&str> = hyp.split(' ').filter(|t| !t.is_empty()).collect();
    let rf: Vec<&str> = rf.split(' ').filter(|t| !t.is_empty()).collect();
    let ref_counts = ngram_counts(&rf);
    let mut st = BleuStats {
        hyp_len: hyp.len(),
        ref_len: rf.len(),
        ..BleuStats::default()
    };
    for (g, count) in ngram_counts(&hyp) {
        let n = g.len() - 1;
        st.total[n] += count;
        if let Some(r) = ref_counts.get(g) {
            st.correct[n] += count.min(*r);
        }
    }
    st
}

/// The BLEU score (0 to 100) of a set of statistics, as sacrebleu's `compute_bleu`.
pub fn score(st: &BleuStats, smooth: Smooth, effective_order: bool) -> f64 {
    let bp = if st.hyp_len < st.ref_len {
        if st.hyp_len > 0 {
            (1.0 - st.ref_len as f64 / st.hyp_len as f64).exp()
        } else {
            0.0
        }
    } else {
        1.0
    };
    if st.correct.iter().all(|c| *c == 0) {
        return 0.0;
    }
    let mut precisions = [0.0f64; MAX_ORDER];
    let mut smooth_mteval = 1.0f64;
    let mut eff_order = MAX_ORDER;
    for (n, precision) in precisions.iter_mut().enumerate() {
        if st.total[n] == 0 {
            break;
        }
        if effective_order {
            eff_order = n + 1;
        }
        if st.correct[n] == 0 {
            if smooth == Smooth::Exp {
                smooth_mteval *= 2.0;
                *precision = 100.0 / (smooth_mteval * st.total[n] as f64);
            }
        } else {
            *precision = 100.0 * st.correct[n] as f64 / st.total[n] as f64;
        }
    }
    // sacrebleu's `my_log`: log(0) is a huge negative number, which sends the score to 0.
    let log_sum: f64 = precisions[..eff_order]
        .iter()
        .map(|p| if *p == 0.0 { -9_999_999_999.0 } else { p.ln() })
        .sum();
    bp * (log_sum / eff_order as f64).exp()
}

/// Sentence BLEU with sacrebleu's `sentence_bleu` defaults: exponential smoothing and the
/// effective order.
pub fn sentence_bleu(hypothesis: &str, reference: &str) -> f64 {
    score(&segment_stats(hypothesis, reference), Smooth::Exp, true)
}

/// Corpus BLEU over `(hypothesis, reference)` pairs, one reference each, as sacrebleu's
/// `corpus_bleu` (no effective order). sacrebleu's default smoothing is [`Smooth::Exp`]; it
/// only matters when an n-gram order has no match in the whole corpus.
pub fn corpus_bleu<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>, smooth: Smooth) -> f64 {
    let mut total = BleuStats::default();
    for (h, r) in pairs {
        total += segment_stats(h, r);
    }
    score(&total, smooth, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_splits_symbols_periods_and_digit_dashes() {
        assert_eq!(tokenize_13a("Hello, world."), "Hello , world .");
        assert_eq!(
            tokenize_13a("It cost $1,000.50 (approx.)"),
            "It cost $ 1,000.50 ( approx . )"
        );
        assert_eq!(
            tokenize_13a("Norman-French 1066-1067"),
            "Norman-French 1066 - 1067"
        );
        assert_eq!(tokenize_13a("don't &amp; <skipped>x"), "don't & x");
        assert_eq!(tokenize_13a("a..b"), "a . . b");
        assert_eq!(tokenize_13a("  "), "");
    }

    #[test]
    fn identical_sentences_score_100_and_disjoint_ones_0() {
        let s = "The trial of Joan of Arc began in Rouen.";
        assert!((sentence_bleu(s, s) - 100.0).abs() < 1e-9);
        assert_eq!(sentence_bleu("alpha beta", "gamma delta"), 0.0);
        assert_eq!(sentence_bleu("", "gamma delta"), 0.0);
    }

    #[test]
    fn clipping_counts_each_reference_ngram_once() {
        let st = segment_stats("the the the the", "the cat sat on the mat");
        assert_eq!(st.correct[0], 2);
        assert_eq!(st.total[0], 4);
        assert_eq!(st.total[3], 1);
    }
}
