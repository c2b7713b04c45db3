//! The compact per-item scores every figure is computed from: per setting and seed, for
//! each item in one order, what the figures need of its answer and nothing else (the option
//! chosen, the right one and the negative one for a question; BLEU's statistics, the ROUGE-L
//! F-measure and the R-Rate's counts for a text). `eval` fills them as answers come back,
//! `eval compare` from `predictions.jsonl`; [`crate::metric::Metric::value`] reads them, and
//! the bootstrap resamples positions in them. A question's answer takes 4 bytes.

use cb_metrics::bleu::BleuStats;
use cb_metrics::kre::KreItem;
use cb_metrics::recall::RCounts;
use std::collections::BTreeMap;

/// `gold` when the right option is not known.
const NO_GOLD: u8 = u8::MAX;
/// `negative` when no option is the negative one (RECALL, or not chosen in `eval compare`).
const NO_NEGATIVE: u8 = u8::MAX - 1;
/// The largest option index kept (an index past it is kept as it: no benchmark has 250
/// options).
const LAST: u8 = u8::MAX - 2;

fn narrow(i: usize) -> u8 {
    u8::try_from(i).map_or(LAST, |v| v.min(LAST))
}

/// One answer to a multiple-choice question: the option chosen (`None`: invalid), the right
/// one and the one the negative context supports, as indices in one order of the item's
/// options (any order, the same for every setting of one seed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    chosen: Option<u8>,
    gold: u8,
    negative: u8,
}

impl Answer {
    pub fn new(chosen: Option<usize>, gold: Option<usize>, negative: Option<usize>) -> Answer {
        Answer {
            chosen: chosen.map(narrow),
            gold: gold.map_or(NO_GOLD, narrow),
            negative: negative.map_or(NO_NEGATIVE, narrow),
        }
    }

    /// The right option was chosen.
    pub fn correct(self) -> bool {
        self.chosen == Some(self.gold)
    }

    /// No option was chosen.
    pub fn invalid(self) -> bool {
        self.chosen.is_none()
    }

    /// The negative option was chosen.
    pub fn is_negative(self) -> bool {
        self.chosen == Some(self.negative)
    }

    /// The item as KRE's metrics see it in this answer's setting, given the no-context
    /// (`memory`) answer.
    pub fn kre(self, memory: Answer) -> KreItem {
        KreItem {
            gold: usize::from(self.gold),
            negative: usize::from(self.negative),
            memory: memory.chosen.map(usize::from),
            with_context: self.chosen.map(usize::from),
        }
    }
}

/// One generated text's scores against its target.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TextScore {
    pub bleu: BleuStats,
    pub rouge: f64,
    /// The R-Rate's counts (edited context only; zero elsewhere).
    pub r: RCounts,
}

#[derive(Debug, Clone)]
enum Column {
    Answers(Vec<Answer>),
    Texts(Vec<TextScore>),
}

/// The scores of a set of items (a file, a domain, every domain, the items runs share): per
/// setting and seed a column, the items in one order in every column.
#[derive(Debug, Clone, Default)]
pub struct Scores {
    /// Items.
    pub n: usize,
    /// Text generation: edited and original words in aligned pairs (RECALL eq. 2), not two
    /// sets (eq. 3).
    pub aligned: bool,
    columns: BTreeMap<String, BTreeMap<u64, Column>>,
}

impl Scores {
    /// No scores yet, of `n` items (`aligned`: see the field).
    pub fn new(n: usize, aligned: bool) -> Scores {
        Scores {
            n,
            aligned,
            columns: BTreeMap::new(),
        }
    }

    /// Adds the next item's answer in `setting` and `seed`.
    pub fn push_answer(&mut self, setting: &str, seed: u64, a: Answer) {
        match self.column(setting, seed, || Column::Answers(Vec::new())) {
            Column::Answers(v) => v.push(a),
            Column::Texts(_) => debug_assert!(false, "{setting}: texts, not answers"),
        }
    }

    /// Adds the next item's text scores in `setting` and `seed`.
    pub fn push_text(&mut self, setting: &str, seed: u64, t: TextScore) {
        match self.column(setting, seed, || Column::Texts(Vec::new())) {
            Column::Texts(v) => v.push(t),
            Column::Answers(_) => debug_assert!(false, "{setting}: answers, not texts"),
        }
    }

    fn column(&mut self, setting: &str, seed: u64, new: impl FnOnce() -> Column) -> &mut Column {
        if !self.columns.contains_key(setting) {
            self.columns.insert(setting.to_owned(), BTreeMap::new());
        }
        let by_seed = self.columns.get_mut(setting).expect("inserted above");
        by_seed.entry(seed).or_insert_with(new)
    }

    /// The columns of `other` after this one's (the items of both, this one's first).
    pub fn append(&mut self, other: &Scores) {
        self.n += other.n;
        self.aligned = other.aligned;
        for (setting, by_seed) in &other.columns {
            for (seed, col) in by_seed {
                match col {
                    Column::Answers(v) => {
                        for a in v {
                            self.push_answer(setting, *seed, *a);
                        }
                    }
                    Column::Texts(v) => {
                        for t in v {
                            self.push_text(setting, *seed, *t);
                        }
                    }
                }
            }
        }
    }

    /// Only these settings' columns.
    pub fn only(&self, settings: &[String]) -> Scores {
        Scores {
            n: self.n,
            aligned: self.aligned,
            columns: self
                .columns
                .iter()
                .filter(|(s, _)| settings.contains(s))
                .map(|(s, c)| (s.clone(), c.clone()))
                .collect(),
        }
    }

    /// One seed's scores.
    pub fn seed(&self, seed: u64) -> SeedScores<'_> {
        SeedScores { scores: self, seed }
    }
}

/// One seed's scores, as a figure's formula reads them.
#[derive(Debug, Clone, Copy)]
pub struct SeedScores<'a> {
    scores: &'a Scores,
    seed: u64,
}

impl<'a> SeedScores<'a> {
    fn column(&self, setting: &str) -> Option<&'a Column> {
        self.scores.columns.get(setting)?.get(&self.seed)
    }

    /// Whether `setting` was run.
    pub fn has(&self, setting: &str) -> bool {
        self.scores.columns.contains_key(setting)
    }

    /// Text generation: E and O aligned.
    pub fn aligned(&self) -> bool {
        self.scores.aligned
    }

    /// The answers in `setting` at the positions `idx` (none when it was not run).
    pub fn answers<'i>(
        &self,
        setting: &str,
        idx: &'i [usize],
    ) -> impl Iterator<Item = Answer> + use<'a, 'i> {
        let v: &'a [Answer] = match self.column(setting) {
            Some(Column::Answers(v)) => v,
            _ => &[],
        };
        idx.iter().filter_map(move |i| v.get(*i).copied())
    }

    /// The text scores in `setting` at the positions `idx`.
    pub fn texts<'i>(
        &self,
        setting: &str,
        idx: &'i [usize],
    ) -> impl Iterator<Item = &'a TextScore> + use<'a, 'i> {
        let v: &'a [TextScore] = match self.column(setting) {
            Some(Column::Texts(v)) => v,
            _ => &[],
        };
        idx.iter().filter_map(move |i| v.get(*i))
    }

    /// KRE's items in `setting` at the positions `idx`, each with its `memory` answer.
    pub fn kre(&self, setting: &str, idx: &[usize]) -> Vec<KreItem> {
        self.answers(setting, idx)
            .zip(self.answers("memory", idx))
            .map(|(a, memory)| a.kre(memory))
            .collect()
    }
}

/// The mean of per-seed counts, rounded up (a subset that some seed has is never `n = 0`):
/// the `n` of a figure on a subset of the items that each seed draws itself (the items a
/// model knows).
pub(crate) fn mean_count(counts: impl Iterator<Item = usize>) -> usize {
    let (mut sum, mut k) = (0, 0);
    for c in counts {
        sum += c;
        k += 1;
    }
    if k == 0 {
        0
    } else {
        sum.div_ceil(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_compare_indices_never_sentinels() {
        let a = Answer::new(Some(1), Some(1), None);
        assert!(a.correct() && !a.invalid() && !a.is_negative());
        let b = Answer::new(None, None, None);
        assert!(!b.correct() && b.invalid() && !b.is_negative());
        let c = Answer::new(Some(2), Some(0), Some(2));
        assert!(c.is_negative() && !c.correct());
        assert_eq!(std::mem::size_of::<Answer>(), 4);
        let k = c.kre(a);
        assert_eq!(
            (k.gold, k.negative, k.memory, k.with_context),
            (0, 2, Some(1), Some(2))
        );
    }

    #[test]
    fn columns_keep_item_order_and_append() {
        let mut s = Scores::new(2, false);
        for (seed, chosen) in [(1, [Some(0), None]), (2, [Some(1), Some(0)])] {
            for c in chosen {
                s.push_answer("memory", seed, Answer::new(c, Some(0), Some(1)));
            }
        }
        let mut all = s.clone();
        all.append(&s);
        assert_eq!(all.n, 4);
        let got: Vec<bool> = all
            .seed(2)
            .answers("memory", &[0, 1, 2, 3, 9])
            .map(Answer::correct)
            .collect();
        assert_eq!(got, [false, true, false, true]);
        assert!(all.seed(1).answers("mixed", &[0]).next().is_none());
        assert_eq!(crate::metric::Metric::Vr.n_items(&s, &[1, 2]), 1);
        assert_eq!(crate::metric::Metric::Rr.n_items(&s, &[1, 2]), 1);
    }
}
