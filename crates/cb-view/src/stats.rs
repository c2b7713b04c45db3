//! The figures of the rating page, on both scales (how misleading, KRE appendix A.4; how
//! plausible) and on the yes / no question asked of a ConflictBank-style conflicting evidence
//! (does it contradict the correct evidence?): ratings done per rater, each item's counts and majority, Fleiss' kappa over
//! the raters (`cb_audit::sheet::agreement`, on the items every rater rated on that scale:
//! the figures `conflictbench agreement` prints for the exported sheets), and Cohen's kappa
//! between the people's majority and each reader's verdict, with its interval.

use crate::ratings::Judgement;
use cb_audit::sheet::{agreement, Agreement, Plausibility, Rating, Scale};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// What one reader said of one item (`None`: not asked, or not recorded).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReaderSaid {
    pub model: String,
    /// It picked the negative answer from the negative context.
    pub misled: Option<bool>,
    /// It told the real answer from the options alone.
    pub answer_set: Option<bool>,
    /// Asked as an editor, it found the negative context plausible (the reader check's
    /// `plausible` question).
    pub plausible: Option<bool>,
    /// Asked as an editor, it confirmed that the conflicting evidence contradicts the
    /// correct one (a ConflictBank-style reader check's `conflict_*` question).
    pub contradicts: Option<bool>,
}

/// What the readers said of one item.
pub type ReaderSays = Vec<ReaderSaid>;

/// One item of the sample.
#[derive(Debug, Clone, Serialize)]
pub struct ItemFigures {
    pub item_id: String,
    /// Ratings per level: not, somewhat, highly misleading.
    pub counts: [usize; 3],
    /// The most frequent level, or `None` on a tie or with no rating.
    pub majority: Option<&'static str>,
    /// Ratings per level: implausible, somewhat, plausible.
    pub plausibility: [usize; 3],
    /// The most frequent plausibility, or `None` on a tie or with none.
    pub plausibility_majority: Option<&'static str>,
    /// Raters who found the answer set distinguishable, and who did not.
    pub distinguishable: [usize; 2],
    /// Raters who found the conflicting evidence contradicts the correct one, and who did not.
    pub contradicts: [usize; 2],
}

/// Fleiss' kappa of a yes / no question, over the items every rater counted answered.
#[derive(Debug, Clone, Serialize)]
pub struct YesNoAgreement {
    /// Items every rater counted answered.
    pub complete: usize,
    /// Raters counted (two at least for a kappa).
    pub raters: usize,
    /// The mean share of agreeing rater pairs per item (`None` with no item or one rater).
    pub percent_agreement: Option<f64>,
    /// `None` with fewer than two raters, no item, or every answer the same.
    pub kappa: Option<f64>,
}

/// Fleiss' kappa of items each answered yes / no by the same `raters` raters (`counts`: yes,
/// no per item).
pub fn fleiss_yes_no(counts: &[[usize; 2]], raters: usize) -> YesNoAgreement {
    let mut out = YesNoAgreement {
        complete: counts.len(),
        raters,
        percent_agreement: None,
        kappa: None,
    };
    if raters < 2 || counts.is_empty() {
        return out;
    }
    let (n, items) = (raters as f64, counts.len() as f64);
    let p_bar = counts
        .iter()
        .map(|c| (c.iter().map(|&k| (k * k) as f64).sum::<f64>() - n) / (n * (n - 1.0)))
        .sum::<f64>()
        / items;
    let yes = counts.iter().map(|c| c[0] as f64).sum::<f64>() / (items * n);
    let p_e = yes * yes + (1.0 - yes) * (1.0 - yes);
    out.percent_agreement = Some(p_bar);
    out.kappa = (p_e < 1.0).then(|| (p_bar - p_e) / (1.0 - p_e));
    out
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

/// A reader against the people's majority, on each scale.
#[derive(Debug, Clone, Serialize)]
pub struct ReaderAgreement {
    pub model: String,
    /// The people found the negative context misleading (somewhat or highly, a strict
    /// majority) / the reader picked the negative answer.
    pub misleading: Cohen,
    /// The people's majority / the reader told the real answer from the options alone.
    pub distinguishable: Cohen,
    /// The people found the negative context plausible (plausible, a strict majority over
    /// implausible and somewhat) / the reader, asked as an editor, found it plausible.
    pub plausible: Cohen,
    /// The people's strict majority / the reader confirmed that the conflicting evidence
    /// contradicts the correct one (its `conflict_*` check).
    pub contradicts: Cohen,
}

/// Fleiss' kappa on one scale, over the items every rater counted rated on it.
#[derive(Debug, Clone, Serialize)]
pub struct ScaleAgreement<L: Scale> {
    /// Items every rater counted rated on this scale.
    pub complete: usize,
    /// `None` with fewer than two raters counted or no item they all rated.
    pub fleiss: Option<Agreement<L>>,
}

/// Everything the rating page shows.
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    pub raters: Vec<(String, usize)>,
    pub sample: usize,
    /// The conflicting evidences of the sample's ConflictBank-style rows, each an item.
    pub evidences: usize,
    pub items: Vec<ItemFigures>,
    /// Items every rater rated (the misleading scale's Fleiss' kappa is over these).
    pub complete: usize,
    pub fleiss: Option<Agreement>,
    /// The plausibility scale (ratings stored before it was asked have none).
    pub plausibility: ScaleAgreement<Plausibility>,
    /// Does the conflicting evidence contradict the correct one (ConflictBank-style items).
    pub contradicts: YesNoAgreement,
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

fn majority<L: Scale>(counts: &[usize; 3]) -> Option<&'static str> {
    let max = *counts.iter().max()?;
    let top: Vec<usize> = (0..3).filter(|&i| counts[i] == max).collect();
    (max > 0 && top.len() == 1).then(|| L::ALL[top[0]].as_str())
}

/// A strict majority of yes over no, if any.
fn strict(yes: usize, no: usize) -> Option<bool> {
    (yes != no).then_some(yes > no)
}

/// What the raters counted said of one item.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    misleading: [usize; 3],
    plausibility: [usize; 3],
    distinguishable: [usize; 2],
    contradicts: [usize; 2],
    /// Raters who rated it, and who rated its plausibility.
    raters: usize,
    plausibility_raters: usize,
}

/// Fleiss' kappa on the scale that `level` reads, over the items of `tally` that all raters
/// of `by_rater` rated on it (`rated` counts them).
fn scale_agreement<L: Scale>(
    by_rater: &BTreeMap<&str, Vec<&Judgement>>,
    tally: &BTreeMap<&str, Tally>,
    rated: impl Fn(&Tally) -> usize,
    level: impl Fn(&Judgement) -> Option<L>,
) -> ScaleAgreement<L> {
    let complete: BTreeSet<&str> = tally
        .iter()
        .filter(|(_, t)| rated(t) == by_rater.len())
        .map(|(id, _)| *id)
        .collect();
    let sheets: Vec<(String, Vec<(String, L)>)> = by_rater
        .iter()
        .map(|(rater, js)| {
            let kept = js
                .iter()
                .filter(|j| complete.contains(j.item_id.as_str()))
                .filter_map(|j| Some((j.item_id.clone(), level(j)?)))
                .collect();
            ((*rater).to_owned(), kept)
        })
        .collect();
    let fleiss = (sheets.len() >= 2 && !complete.is_empty())
        .then(|| agreement(&sheets).ok())
        .flatten();
    ScaleAgreement {
        complete: complete.len(),
        fleiss,
    }
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
    let mut tally: BTreeMap<&str, Tally> = BTreeMap::new();
    for j in &judgements {
        let t = tally.entry(&j.item_id).or_default();
        t.misleading[j.misleading.index()] += 1;
        if let Some(p) = j.plausibility {
            t.plausibility[p.index()] += 1;
            t.plausibility_raters += 1;
        }
        match j.distinguishable {
            Some(true) => t.distinguishable[0] += 1,
            Some(false) => t.distinguishable[1] += 1,
            None => {}
        }
        match j.contradicts {
            Some(true) => t.contradicts[0] += 1,
            Some(false) => t.contradicts[1] += 1,
            None => {}
        }
        t.raters += 1;
    }
    let misleading = scale_agreement(&by_rater, &tally, |t| t.raters, |j| Some(j.misleading));
    let plausibility = scale_agreement(
        &by_rater,
        &tally,
        |t| t.plausibility_raters,
        |j| j.plausibility,
    );
    let item_figures = items
        .iter()
        .map(|id| {
            let t = tally.get(id.as_str()).copied().unwrap_or_default();
            ItemFigures {
                item_id: id.clone(),
                counts: t.misleading,
                majority: majority::<Rating>(&t.misleading),
                plausibility: t.plausibility,
                plausibility_majority: majority::<Plausibility>(&t.plausibility),
                distinguishable: t.distinguishable,
                contradicts: t.contradicts,
            }
        })
        .collect();
    let answered: Vec<[usize; 2]> = tally
        .values()
        .map(|t| t.contradicts)
        .filter(|c| c[0] + c[1] == by_rater.len())
        .collect();
    Figures {
        raters: by_rater
            .iter()
            .map(|(r, js)| ((*r).to_owned(), js.len()))
            .collect(),
        sample: items.len(),
        evidences: 0,
        items: item_figures,
        complete: misleading.complete,
        fleiss: misleading.fleiss,
        plausibility,
        contradicts: fleiss_yes_no(&answered, by_rater.len()),
        readers: reader_agreement(&tally, readers),
    }
}

fn reader_agreement(
    tally: &BTreeMap<&str, Tally>,
    readers: &BTreeMap<String, ReaderSays>,
) -> Vec<ReaderAgreement> {
    type Pairs = Vec<(bool, bool)>;
    let mut pairs: BTreeMap<&str, [Pairs; 4]> = BTreeMap::new();
    for (id, says) in readers {
        let Some(t) = tally.get(id.as_str()) else {
            continue;
        };
        let m = t.misleading;
        let p = t.plausibility;
        let people = [
            strict(m[1] + m[2], m[0]),
            strict(t.distinguishable[0], t.distinguishable[1]),
            strict(p[2], p[0] + p[1]),
            strict(t.contradicts[0], t.contradicts[1]),
        ];
        for r in says {
            let e = pairs.entry(&r.model).or_default();
            let reader = [r.misled, r.answer_set, r.plausible, r.contradicts];
            for k in 0..4 {
                if let (Some(a), Some(b)) = (people[k], reader[k]) {
                    e[k].push((a, b));
                }
            }
        }
    }
    pairs
        .into_iter()
        .map(|(model, [m, d, p, c])| ReaderAgreement {
            model: model.to_owned(),
            misleading: cohen(&m),
            distinguishable: cohen(&d),
            plausible: cohen(&p),
            contradicts: cohen(&c),
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
            plausibility: None,
            distinguishable: None,
            contradicts: None,
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

    /// Both scales, computed by hand. Three raters, four items; z's rating of d was stored
    /// before the plausibility scale (it has none).
    ///
    /// Misleading (not, somewhat, highly): a (0,0,3) P = 1; b (2,1,0) P = 1/3; c (0,1,2)
    /// P = 1/3; d (0,1,2) P = 1/3. P̄ = 1/2; shares 2/12, 3/12, 7/12, P_e = 62/144 = 31/72;
    /// kappa = (1/2 - 31/72) / (41/72) = 5/41. Majorities: highly, not, highly, highly.
    ///
    /// Plausibility (implausible, somewhat, plausible), over a, b, c (d lacks z's): a (0,1,2)
    /// P = 1/3; b (3,0,0) P = 1; c (0,0,3) P = 1. P̄ = 7/9; shares 3/9, 1/9, 5/9,
    /// P_e = 35/81; kappa = (63/81 - 35/81) / (46/81) = 14/23. d: (1,1,0), a tie.
    ///
    /// The reader's plausibility (a yes, b no, c no, d no) against the people's strict
    /// majority of "plausible" over the other two levels (a yes 2-1, b no 0-3, c yes 3-0,
    /// d no 0-2): pairs (y,y) (n,n) (y,n) (n,n); p_o = 3/4; people yes 1/2, reader 1/4:
    /// p_e = 1/8 + 3/8 = 1/2; kappa = 1/2; se = sqrt(3/16 / (4 · 1/4)) = 0.4330, interval
    /// [0.5 - 0.8487, 1] (clipped).
    #[test]
    fn both_scales_as_by_hand() {
        use Plausibility::{Implausible, Plausible};
        use Rating::{Highly, Not};
        let j = |r: &str, i: &str, m, p| Judgement {
            rater: r.into(),
            item_id: i.into(),
            misleading: m,
            plausibility: p,
            distinguishable: None,
            contradicts: None,
            comment: String::new(),
        };
        let items: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        let js = vec![
            j("x", "a", Highly, Some(Plausible)),
            j("y", "a", Highly, Some(Plausible)),
            j("z", "a", Highly, Some(Plausibility::Somewhat)),
            j("x", "b", Not, Some(Implausible)),
            j("y", "b", Rating::Somewhat, Some(Implausible)),
            j("z", "b", Not, Some(Implausible)),
            j("x", "c", Highly, Some(Plausible)),
            j("y", "c", Rating::Somewhat, Some(Plausible)),
            j("z", "c", Highly, Some(Plausible)),
            j("x", "d", Highly, Some(Implausible)),
            j("y", "d", Highly, Some(Plausibility::Somewhat)),
            j("z", "d", Rating::Somewhat, None),
        ];
        let said = |p: bool| {
            ReaderSays::from([ReaderSaid {
                model: "r".into(),
                plausible: Some(p),
                ..ReaderSaid::default()
            }])
        };
        let readers: BTreeMap<String, ReaderSays> = [
            ("a", said(true)),
            ("b", said(false)),
            ("c", said(false)),
            ("d", said(false)),
        ]
        .map(|(i, s)| (i.to_owned(), s))
        .into();
        let f = figures(&items, &js, &readers);
        assert_eq!(f.complete, 4);
        let k = f.fleiss.as_ref().unwrap().fleiss_kappa.unwrap();
        assert!((k - 5.0 / 41.0).abs() < 1e-12, "{k}");
        let majorities: Vec<_> = f.items.iter().map(|i| i.majority).collect();
        assert_eq!(
            majorities,
            [Some("highly"), Some("not"), Some("highly"), Some("highly")]
        );
        assert_eq!(f.plausibility.complete, 3);
        let p = f.plausibility.fleiss.as_ref().unwrap();
        assert!((p.fleiss_kappa.unwrap() - 14.0 / 23.0).abs() < 1e-12);
        assert!((p.percent_agreement - 7.0 / 9.0).abs() < 1e-12);
        let majorities: Vec<_> = f.items.iter().map(|i| i.plausibility_majority).collect();
        assert_eq!(
            majorities,
            [
                Some("plausible"),
                Some("implausible"),
                Some("plausible"),
                None
            ]
        );
        assert_eq!(f.items[3].plausibility, [1, 1, 0]);
        let r = &f.readers[0];
        assert_eq!((r.misleading.items, r.plausible.items), (0, 4));
        assert!((r.plausible.agreement - 0.75).abs() < 1e-12);
        assert!((r.plausible.kappa.unwrap() - 0.5).abs() < 1e-12);
        let (lo, hi) = r.plausible.interval.unwrap();
        assert!((lo - (0.5 - 1.96 * 0.1875f64.sqrt())).abs() < 1e-12 && hi == 1.0);
    }

    /// The contradiction question, by hand. Three raters, four items (a: yes yes yes; b: yes
    /// no no; c: no no no; d: yes, yes and one not answered, so left out of Fleiss).
    /// P_a = 1, P_b = 1/3, P_c = 1: P̄ = 7/9; yes share 4/9: P_e = 16/81 + 25/81 = 41/81;
    /// kappa = (63/81 - 41/81) / (40/81) = 22/40 = 0.55. The reader's confirmations (a yes,
    /// b yes, c no, d yes) against the people's strict majority (a yes, b no, c no, d yes):
    /// p_o = 3/4; people yes 1/2, reader 3/4: p_e = 3/8 + 1/8 = 1/2; kappa = 1/2.
    #[test]
    fn the_contradiction_question_as_by_hand() {
        let j = |r: &str, i: &str, c| Judgement {
            rater: r.into(),
            item_id: i.into(),
            misleading: Rating::Highly,
            plausibility: None,
            distinguishable: None,
            contradicts: c,
            comment: String::new(),
        };
        let items: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        let (y, n) = (Some(true), Some(false));
        let js = vec![
            j("x", "a", y),
            j("y", "a", y),
            j("z", "a", y),
            j("x", "b", y),
            j("y", "b", n),
            j("z", "b", n),
            j("x", "c", n),
            j("y", "c", n),
            j("z", "c", n),
            j("x", "d", y),
            j("y", "d", y),
            j("z", "d", None),
        ];
        let said = |c: bool| {
            ReaderSays::from([ReaderSaid {
                model: "r".into(),
                contradicts: Some(c),
                ..ReaderSaid::default()
            }])
        };
        let readers: BTreeMap<String, ReaderSays> = [
            ("a", said(true)),
            ("b", said(true)),
            ("c", said(false)),
            ("d", said(true)),
        ]
        .map(|(i, s)| (i.to_owned(), s))
        .into();
        let f = figures(&items, &js, &readers);
        assert_eq!((f.contradicts.complete, f.contradicts.raters), (3, 3));
        assert!((f.contradicts.kappa.unwrap() - 0.55).abs() < 1e-12);
        assert!((f.contradicts.percent_agreement.unwrap() - 7.0 / 9.0).abs() < 1e-12);
        assert_eq!(f.items[1].contradicts, [1, 2]);
        assert_eq!(f.items[3].contradicts, [2, 0]);
        let c = &f.readers[0].contradicts;
        assert_eq!(c.items, 4);
        assert!((c.agreement - 0.75).abs() < 1e-12 && (c.kappa.unwrap() - 0.5).abs() < 1e-12);
        // One rater: no kappa; every answer the same: no kappa either.
        assert_eq!(fleiss_yes_no(&[[1, 0]], 1).kappa, None);
        assert_eq!(fleiss_yes_no(&[[2, 0], [2, 0]], 2).kappa, None);
    }
}
