//! The figures of the rating page: ratings done per rater, each item's counts and majority,
//! Fleiss' kappa over the raters (`cb_audit::sheet::agreement`, on the items every rater
//! rated: the figures `conflictbench agreement` prints for the exported sheets), and Cohen's
//! kappa between the people's majority and each reader's verdict, with its interval.

use crate::ratings::Judgement;
use cb_audit::sheet::{agreement, Agreement, Rating};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// What a reader said of one item: (model, misled, told the answer from the options alone).
pub type ReaderSays = Vec<(String, Option<bool>, Option<bool>)>;

/// One item of the sample.
#[derive(Debug, Clone, Serialize)]
pub struct ItemFigures {
    pub item_id: String,
    /// Ratings per level: not, somewhat, highly misleading.
    pub counts: [usize; 3],
    /// The most frequent level, or `None` on a tie or with no rating.
    pub majority: Option<&'static str>,
    /// Raters who found the answer set distinguishable, and who did not.
    pub distinguishable: [usize; 2],
}

/// Cohen's kappa of two binary judges over the items both judged.
#[derive(Debug, Clone, Serialize)]
pub struct Cohen {
    pub items: usize,
    pub agreement: f64,
    /// `None` when the chance agreement is 1 (both judges said one thing throughout).
    pub kappa: Option<f64>,
    /// The asymptotic 95 % interval, kappa ± 1.96 · sqrt(p_o (1 − p_o) / (n (1 − p_e)²)),
    /// clipped to [−1, 1].
    pub interval: Option<(f64, f64)>,
}

/// A reader against the people's majority, on both scales.
#[derive(Debug, Clone, Serialize)]
pub struct ReaderAgreement {
    pub model: String,
    /// The people found the negative context misleading (somewhat or highly, a strict
    /// majority) / the reader picked the negative answer.
    pub misleading: Cohen,
    /// The people's majority / the reader told the real answer from the options alone.
    pub distinguishable: Cohen,
}

/// Everything the rating page shows.
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    pub raters: Vec<(String, usize)>,
    pub sample: usize,
    pub items: Vec<ItemFigures>,
    /// Items every rater rated (Fleiss' kappa is over these).
    pub complete: usize,
    pub fleiss: Option<Agreement>,
    pub readers: Vec<ReaderAgreement>,
}

/// Cohen's kappa of paired binary judgements.
pub fn cohen(pairs: &[(bool, bool)]) -> Cohen {
    let n = pairs.len() as f64;
    if pairs.is_empty() {
        return Cohen {
            items: 0,
            agreement: 0.0,
            kappa: None,
            interval: None,
        };
    }
    let po = pairs.iter().filter(|(a, b)| a == b).count() as f64 / n;
    let a1 = pairs.iter().filter(|(a, _)| *a).count() as f64 / n;
    let b1 = pairs.iter().filter(|(_, b)| *b).count() as f64 / n;
    let pe = a1 * b1 + (1.0 - a1) * (1.0 - b1);
    let kappa = (pe < 1.0).then(|| (po - pe) / (1.0 - pe));
    let interval = kappa.map(|k| {
        let se = (po * (1.0 - po) / (n * (1.0 - pe).powi(2))).sqrt();
        ((k - 1.96 * se).max(-1.0), (k + 1.96 * se).min(1.0))
    });
    Cohen {
        items: pairs.len(),
        agreement: po,
        kappa,
        interval,
    }
}

fn majority(counts: &[usize; 3]) -> Option<&'static str> {
    let max = *counts.iter().max()?;
    let top: Vec<usize> = (0..3).filter(|&i| counts[i] == max).collect();
    (max > 0 && top.len() == 1).then(|| Rating::ALL[top[0]].as_str())
}

/// A strict majority of yes over no, if any.
fn strict(yes: usize, no: usize) -> Option<bool> {
    (yes != no).then_some(yes > no)
}

/// The figures of `judgements` over the sample `items` (item ids, in order), with what the
/// readers said of each item.
pub fn figures(
    items: &[String],
    judgements: &[Judgement],
    readers: &BTreeMap<String, ReaderSays>,
) -> Figures {
    let in_sample: BTreeSet<&str> = items.iter().map(String::as_str).collect();
    let judgements: Vec<&Judgement> = judgements
        .iter()
        .filter(|j| in_sample.contains(j.item_id.as_str()))
        .collect();
    let mut by_rater: BTreeMap<&str, Vec<&Judgement>> = BTreeMap::new();
    for j in &judgements {
        by_rater.entry(&j.rater).or_default().push(j);
    }
    let mut per_item: BTreeMap<&str, ([usize; 3], [usize; 2], usize)> = BTreeMap::new();
    for j in &judgements {
        let e = per_item.entry(&j.item_id).or_default();
        e.0[j.misleading as usize] += 1;
        match j.distinguishable {
            Some(true) => e.1[0] += 1,
            Some(false) => e.1[1] += 1,
            None => {}
        }
        e.2 += 1;
    }
    let complete: Vec<&str> = per_item
        .iter()
        .filter(|(_, (_, _, n))| *n == by_rater.len())
        .map(|(id, _)| *id)
        .collect();
    let sheets: Vec<(String, Vec<(String, Rating)>)> = by_rater
        .iter()
        .map(|(rater, js)| {
            let kept = js
                .iter()
                .filter(|j| complete.contains(&j.item_id.as_str()))
                .map(|j| (j.item_id.clone(), j.misleading))
                .collect();
            ((*rater).to_owned(), kept)
        })
        .collect();
    let fleiss = (sheets.len() >= 2 && !complete.is_empty())
        .then(|| agreement(&sheets).ok())
        .flatten();
    let item_figures = items
        .iter()
        .map(|id| {
            let (counts, dist, _) = per_item.get(id.as_str()).copied().unwrap_or_default();
            ItemFigures {
                item_id: id.clone(),
                counts,
                majority: majority(&counts),
                distinguishable: dist,
            }
        })
        .collect();
    Figures {
        raters: by_rater
            .iter()
            .map(|(r, js)| ((*r).to_owned(), js.len()))
            .collect(),
        sample: items.len(),
        items: item_figures,
        complete: complete.len(),
        fleiss,
        readers: reader_agreement(&per_item, readers),
    }
}

type PerItem<'a> = BTreeMap<&'a str, ([usize; 3], [usize; 2], usize)>;

fn reader_agreement(
    per_item: &PerItem<'_>,
    readers: &BTreeMap<String, ReaderSays>,
) -> Vec<ReaderAgreement> {
    type Pairs = Vec<(bool, bool)>;
    let mut pairs: BTreeMap<&str, (Pairs, Pairs)> = BTreeMap::new();
    for (id, says) in readers {
        let Some((counts, dist, _)) = per_item.get(id.as_str()) else {
            continue;
        };
        let people_misled = strict(counts[1] + counts[2], counts[0]);
        let people_dist = strict(dist[0], dist[1]);
        for (model, misled, set) in says {
            let e = pairs.entry(model).or_default();
            if let (Some(p), Some(r)) = (people_misled, misled) {
                e.0.push((p, *r));
            }
            if let (Some(p), Some(r)) = (people_dist, set) {
                e.1.push((p, *r));
            }
        }
    }
    pairs
        .into_iter()
        .map(|(model, (m, d))| ReaderAgreement {
            model: model.to_owned(),
            misleading: cohen(&m),
            distinguishable: cohen(&d),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cohen_of_a_known_table() {
        // 20 items: both yes 8, both no 7, judge a yes only 2, judge b yes only 3.
        let mut p = vec![(true, true); 8];
        p.extend(vec![(false, false); 7]);
        p.extend(vec![(true, false); 2]);
        p.extend(vec![(false, true); 3]);
        let c = cohen(&p);
        // p_o = 0.75; p_a = 0.5, p_b = 0.55; p_e = 0.5; kappa = 0.5.
        assert!((c.kappa.unwrap() - 0.5).abs() < 1e-12);
        let (lo, hi) = c.interval.unwrap();
        let se = (0.75f64 * 0.25 / (20.0 * 0.25)).sqrt();
        assert!((lo - (0.5 - 1.96 * se)).abs() < 1e-12 && (hi - (0.5 + 1.96 * se)).abs() < 1e-12);
        assert_eq!(cohen(&[(true, true), (true, true)]).kappa, None);
    }

    #[test]
    fn fleiss_is_over_the_items_every_rater_rated() {
        let j = |r: &str, i: &str, m| Judgement {
            rater: r.into(),
            item_id: i.into(),
            misleading: m,
            distinguishable: None,
            comment: String::new(),
        };
        let items: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let js = vec![
            j("x", "a", Rating::Not),
            j("y", "a", Rating::Not),
            j("x", "b", Rating::Highly),
            j("y", "b", Rating::Somewhat),
            j("x", "c", Rating::Highly),
        ];
        let f = figures(&items, &js, &BTreeMap::new());
        assert_eq!(f.complete, 2);
        assert_eq!(f.raters, vec![("x".into(), 3), ("y".into(), 2)]);
        assert_eq!(f.fleiss.as_ref().unwrap().items.len(), 2);
        assert_eq!(f.items[2].majority, Some("highly"));
        assert_eq!(f.items[1].majority, None);
    }
}
