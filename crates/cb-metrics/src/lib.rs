//! cb-metrics: the metrics of the RECALL and KRE papers as pure functions (no IO, no async).
//!
//! - [`bleu`]: BLEU exactly as sacrebleu 2.6.0 computes it with its defaults (the `13a`
//!   tokenizer; corpus BLEU; sentence BLEU with exponential smoothing and effective order).
//! - [`rouge`]: ROUGE-L exactly as rouge-score 0.1.2's `RougeScorer(['rougeL'])` without a
//!   stemmer (its default tokenizer, LCS-based precision, recall and F-measure).
//! - [`recall`]: RECALL's accuracy, misleading rate (M-Rate, eq. 1) and mistake
//!   reappearance rate (R-Rate, eq. 2 for EventKG, eq. 3 for UJ).
//! - [`kre`]: KRE's memory split, vulnerable / resilient / factual robustness (VR, RR, FR),
//!   the decision-making style score (DMSS) and the style it implies, adaptivity and the FR
//!   upper bound. The KRE equations did not survive in the paper text we have: each
//!   function's documentation quotes the passage it is read from.
//! - [`conflictbank`]: ConflictBank's correct, replaced and uncertain accuracy, memorization
//!   ratio and option entropy, over the questions its filter keeps, rounded as its
//!   `evaluate.py` (Python's and NumPy's rounding, NumPy's pairwise sums) to the last digit.
//! - [`stats`]: mean and standard deviation over seeds, with the count.
//! - [`bootstrap`]: 95 % percentile bootstrap intervals over items (seeded).
//!
//! A rate whose denominator is empty is `None`, never `0` or `NaN`.

pub mod bleu;
pub mod bootstrap;
pub mod conflictbank;
pub mod kre;
mod rate;
pub mod recall;
pub mod rouge;
pub mod stats;

pub use bootstrap::Interval;
pub use rate::ratio;
pub use stats::Summary;
