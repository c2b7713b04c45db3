//! The figures: each metric's name (its key in `results.json` and `compare.json`), its
//! formula over the compact per-item scores of [`crate::scores`], and the settings it reads,
//! each written once. `eval`'s tables and charts, the bootstrap intervals and `eval compare`
//! all compute a figure through [`Metric::value`]; which figures a run reports, and which a
//! comparison can recompute, both follow from [`reads`].

use crate::scores::{Answer, Scores, SeedScores};
use cb_metrics::bleu::{score, BleuStats, Smooth};
use cb_metrics::kre::{adaptivity, dmss, fr, fr_upper, rr, vr};
use cb_metrics::recall::{accuracy, m_rate, RCounts};
use cb_metrics::{ratio, Summary};
use serde::{Serialize, Serializer};

/// RECALL's settings, in the paper's order: original context, edited context, no context.
pub const RECALL_SETTINGS: [&str; 3] = ["original", "edited", "none"];

/// KRE's settings, in the paper's order. `memory` always runs: the others need its split.
pub const KRE_SETTINGS: [&str; 7] = [
    "memory",
    "zero_shot",
    "all_positive",
    "all_negative",
    "mixed",
    "role_dependent",
    "role_intuitive",
];

/// KRE's few-shot configurations.
pub const FEW_SHOT: [&str; 3] = ["all_positive", "all_negative", "mixed"];

/// The "setting" of KRE's figures averaged over the few-shot configurations run.
pub const FEW_SHOT_MEAN: &str = "few_shot_mean";

/// The "setting" of KRE's figures made of the two roles.
pub const ROLES: &str = "roles";

/// The settings whose VR and RR bound FR from above.
const FR_UPPER_FROM: [&str; 3] = ["zero_shot", "role_dependent", "role_intuitive"];

/// A metric of the papers, as a figure names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Metric {
    /// RECALL: the share of questions answered right (an invalid answer is wrong).
    Acc,
    /// RECALL: ACC on the items answered right with no context (the split KRE's VR and RR
    /// use).
    AccKnown,
    /// The share of invalid answers (no option, several options, refusals).
    InvalidRate,
    /// RECALL's misleading rate (eq. 1): among the items known with no context, the share
    /// answered wrong with the edited context.
    MRate,
    /// Corpus BLEU (sacrebleu's defaults).
    Bleu,
    /// The mean ROUGE-L F-measure.
    RougeL,
    /// RECALL's mistake reappearance rate (eq. 2 or 3).
    RRate,
    /// KRE: the share answered right with no context.
    MemoryAcc,
    /// KRE's vulnerable robustness.
    Vr,
    /// KRE's resilient robustness.
    Rr,
    /// KRE's factual robustness.
    Fr,
    /// KRE's decision-making style score.
    Dmss,
    /// KRE: the share answered with the option the negative context supports.
    NegativeRate,
    /// KRE: DMSS under the intuitive role minus DMSS under the dependent role.
    Adaptivity,
    /// KRE: FR from the best VR and RR over zero-shot and the two roles.
    FrUpper,
}

const ALL: [Metric; 15] = [
    Metric::Acc,
    Metric::AccKnown,
    Metric::InvalidRate,
    Metric::MRate,
    Metric::Bleu,
    Metric::RougeL,
    Metric::RRate,
    Metric::MemoryAcc,
    Metric::Vr,
    Metric::Rr,
    Metric::Fr,
    Metric::Dmss,
    Metric::NegativeRate,
    Metric::Adaptivity,
    Metric::FrUpper,
];

/// Which items a figure is on, for its `n_items`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subset {
    All,
    /// The items answered right in this no-context setting (per seed).
    Known(&'static str),
    /// The others.
    Unknown(&'static str),
}

impl Subset {
    /// The number of items a figure of this subset is on in `seed`.
    fn size(self, scores: &Scores, seed: u64) -> usize {
        let all: Vec<usize> = (0..scores.n).collect();
        let answers = |s| scores.seed(seed).answers(s, &all).collect::<Vec<_>>();
        match self {
            Subset::All => scores.n,
            Subset::Known(s) => answers(s).iter().filter(|a| a.correct()).count(),
            Subset::Unknown(s) => answers(s).iter().filter(|a| !a.correct()).count(),
        }
    }
}

impl Metric {
    /// The `n_items` of this figure: all items, or for a figure on the items a seed knows (or
    /// does not) the mean over seeds of that subset's size, rounded up (a subset that some
    /// seed has is never `n = 0`).
    pub fn n_items(self, scores: &Scores, seeds: &[u64]) -> usize {
        match self.subset() {
            Subset::All => scores.n,
            subset => crate::scores::mean_count(seeds.iter().map(|s| subset.size(scores, *s))),
        }
    }

    /// The name in `results.json`, `compare.json` and the tables.
    pub fn key(self) -> &'static str {
        match self {
            Metric::Acc => "acc",
            Metric::AccKnown => "acc@known",
            Metric::InvalidRate => "invalid_rate",
            Metric::MRate => "m_rate",
            Metric::Bleu => "bleu",
            Metric::RougeL => "rouge_l",
            Metric::RRate => "r_rate",
            Metric::MemoryAcc => "memory_acc",
            Metric::Vr => "vr",
            Metric::Rr => "rr",
            Metric::Fr => "fr",
            Metric::Dmss => "dmss",
            Metric::NegativeRate => "negative_rate",
            Metric::Adaptivity => "adaptivity",
            Metric::FrUpper => "fr_upper",
        }
    }

    /// The metric named `key`, if this version knows it.
    pub fn parse(key: &str) -> Option<Metric> {
        ALL.into_iter().find(|m| m.key() == key)
    }

    /// The factor to the tables' units: percentages, BLEU as sacrebleu prints it.
    pub fn scale(self) -> f64 {
        match self {
            Metric::Bleu => 1.0,
            _ => 100.0,
        }
    }

    /// The range the metric spans in the tables' units: DMSS -100..100, adaptivity (a
    /// difference of two DMSS) -200..200, every other figure from 0 to 100 (a chart widens
    /// it to its values).
    pub fn natural_range(self) -> (f64, f64) {
        match self {
            Metric::Dmss => (-100.0, 100.0),
            Metric::Adaptivity => (-200.0, 200.0),
            _ => (0.0, 100.0),
        }
    }

    /// The items a figure of this metric is on: VR, `acc@known` and M-Rate on the known ones,
    /// RR on the others, the rest on all.
    pub fn subset(self) -> Subset {
        match self {
            Metric::AccKnown | Metric::MRate => Subset::Known("none"),
            Metric::Vr => Subset::Known("memory"),
            Metric::Rr => Subset::Unknown("memory"),
            _ => Subset::All,
        }
    }

    /// The figure of this metric in `setting` over the items at `idx` of one seed's scores
    /// (with repeats in a bootstrap resample; `0..n` is the sample itself); `None` when its
    /// denominator is empty. The one formula of every figure.
    pub fn value(self, setting: &str, s: &SeedScores<'_>, idx: &[usize]) -> Option<f64> {
        let share = |setting: &str, p: fn(Answer) -> bool| {
            let (mut yes, mut all) = (0, 0);
            for a in s.answers(setting, idx) {
                all += 1;
                yes += usize::from(p(a));
            }
            ratio(yes, all)
        };
        match self {
            Metric::Acc => accuracy(
                &s.answers(setting, idx)
                    .map(Answer::correct)
                    .collect::<Vec<_>>(),
            ),
            Metric::AccKnown => {
                let with = s.answers(setting, idx);
                let on_known: Vec<bool> = s
                    .answers("none", idx)
                    .zip(with)
                    .filter(|(none, _)| none.correct())
                    .map(|(_, a)| a.correct())
                    .collect();
                accuracy(&on_known)
            }
            Metric::InvalidRate => share(setting, Answer::invalid),
            Metric::NegativeRate => share(setting, Answer::is_negative),
            Metric::MemoryAcc => share("memory", Answer::correct),
            Metric::MRate => {
                let pairs: Vec<(bool, bool)> = s
                    .answers("none", idx)
                    .zip(s.answers("edited", idx))
                    .map(|(none, edited)| (none.correct(), edited.correct()))
                    .collect();
                m_rate(&pairs)
            }
            Metric::Bleu | Metric::RougeL | Metric::RRate => text_value(self, setting, s, idx),
            Metric::Vr | Metric::Rr if setting == FEW_SHOT_MEAN => {
                let g = if self == Metric::Vr { vr } else { rr };
                let present = FEW_SHOT.iter().filter(|c| s.has(c));
                Summary::of(present.map(|c| g(&s.kre(c, idx)))).mean
            }
            Metric::Vr => vr(&s.kre(setting, idx)),
            Metric::Rr => rr(&s.kre(setting, idx)),
            Metric::Fr => {
                let k = s.kre(setting, idx);
                fr(vr(&k), rr(&k))
            }
            Metric::Dmss => dmss(&s.kre(setting, idx)),
            Metric::Adaptivity => adaptivity(
                dmss(&s.kre("role_intuitive", idx)),
                dmss(&s.kre("role_dependent", idx)),
            ),
            Metric::FrUpper => {
                let sets: Vec<_> = FR_UPPER_FROM
                    .iter()
                    .filter(|x| s.has(x))
                    .map(|x| s.kre(x, idx))
                    .collect();
                let vrs: Vec<_> = sets.iter().map(|i| vr(i)).collect();
                let rrs: Vec<_> = sets.iter().map(|i| rr(i)).collect();
                fr_upper(&vrs, &rrs)
            }
        }
    }
}

/// BLEU, ROUGE-L and the R-Rate: each from per-item scores (corpus BLEU of a resample is the
/// score of its items' summed statistics, the R-Rate that of their summed counts).
fn text_value(metric: Metric, setting: &str, s: &SeedScores<'_>, idx: &[usize]) -> Option<f64> {
    let texts: Vec<_> = s.texts(setting, idx).collect();
    match metric {
        Metric::Bleu => (!texts.is_empty()).then(|| {
            let mut total = BleuStats::default();
            for t in &texts {
                total += t.bleu;
            }
            score(&total, Smooth::Exp, false)
        }),
        Metric::RougeL => (!texts.is_empty())
            .then(|| texts.iter().map(|t| t.rouge).sum::<f64>() / texts.len() as f64),
        _ => {
            let mut total = RCounts::default();
            for t in &texts {
                total += t.r;
            }
            total.r_rate(s.aligned())
        }
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

impl Serialize for Metric {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.key())
    }
}

/// The settings a figure reads: every one of `needs`, and those of `uses` that were run
/// (at least one of them when `one_of_uses`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reads {
    pub needs: Vec<String>,
    pub uses: &'static [&'static str],
    pub one_of_uses: bool,
}

/// Why a figure cannot be made from the settings run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// None of the settings it averages (the few-shot ones).
    OneOf,
    /// This setting.
    Setting(String),
}

impl Reads {
    fn of(needs: &[&str]) -> Reads {
        Reads {
            needs: needs.iter().map(|s| (*s).to_owned()).collect(),
            uses: &[],
            one_of_uses: false,
        }
    }

    /// The settings to read, given the settings `run`, or what is missing.
    pub fn resolve(&self, run: &[String]) -> Result<Vec<String>, Missing> {
        let used: Vec<String> = self
            .uses
            .iter()
            .filter(|u| run.iter().any(|r| r == *u))
            .map(|u| (*u).to_owned())
            .collect();
        if self.one_of_uses && used.is_empty() {
            return Err(Missing::OneOf);
        }
        if let Some(s) = self.needs.iter().find(|s| !run.contains(s)) {
            return Err(Missing::Setting(s.clone()));
        }
        let mut out = self.needs.clone();
        out.extend(used);
        Ok(out)
    }
}

/// The settings figure `metric` of `task` in `setting` reads; `None` when that is no figure.
pub fn reads(task: &str, setting: &str, metric: Metric) -> Option<Reads> {
    let recall_context = matches!(setting, "original" | "edited");
    let kre_setting = KRE_SETTINGS[1..].contains(&setting);
    Some(match (task, metric) {
        ("qa_a" | "qa_na", Metric::Acc | Metric::InvalidRate) => Reads::of(&[setting]),
        ("qa_a" | "qa_na", Metric::AccKnown) if recall_context => Reads::of(&[setting, "none"]),
        ("qa_a" | "qa_na", Metric::MRate) if setting == "edited" => Reads::of(&["edited", "none"]),
        ("text_generation", Metric::Bleu | Metric::RougeL) => Reads::of(&[setting]),
        ("text_generation", Metric::RRate) if setting == "edited" => Reads::of(&["edited"]),
        ("kre", Metric::MemoryAcc | Metric::InvalidRate) if setting == "memory" => {
            Reads::of(&["memory"])
        }
        ("kre", Metric::Vr | Metric::Rr) if setting == FEW_SHOT_MEAN => Reads {
            uses: &FEW_SHOT,
            one_of_uses: true,
            ..Reads::of(&["memory"])
        },
        ("kre", Metric::Adaptivity) if setting == ROLES => {
            Reads::of(&["memory", "role_dependent", "role_intuitive"])
        }
        ("kre", Metric::FrUpper) if setting == ROLES => Reads {
            uses: &["zero_shot"],
            ..Reads::of(&["memory", "role_dependent", "role_intuitive"])
        },
        (
            "kre",
            Metric::Vr
            | Metric::Rr
            | Metric::Fr
            | Metric::Dmss
            | Metric::InvalidRate
            | Metric::NegativeRate,
        ) if kre_setting => Reads::of(&["memory", setting]),
        _ => return None,
    })
}

/// Every figure of `task` (`qa_a`, `qa_na`, `text_generation` or `kre`), as (setting,
/// metric), in the order `results.json` lists them; a run reports those whose settings it
/// ran ([`reads`]).
pub fn candidates(task: &str) -> Vec<(&'static str, Metric)> {
    let mut out = Vec::new();
    match task {
        "text_generation" => {
            for s in &RECALL_SETTINGS[..2] {
                out.extend([(*s, Metric::Bleu), (*s, Metric::RougeL)]);
            }
            out.push(("edited", Metric::RRate));
        }
        "kre" => {
            out.extend([
                ("memory", Metric::MemoryAcc),
                ("memory", Metric::InvalidRate),
            ]);
            for s in &KRE_SETTINGS[1..] {
                out.extend(
                    [
                        Metric::Vr,
                        Metric::Rr,
                        Metric::Fr,
                        Metric::Dmss,
                        Metric::InvalidRate,
                        Metric::NegativeRate,
                    ]
                    .map(|m| (*s, m)),
                );
            }
            out.extend([(FEW_SHOT_MEAN, Metric::Vr), (FEW_SHOT_MEAN, Metric::Rr)]);
            out.extend([(ROLES, Metric::Adaptivity), (ROLES, Metric::FrUpper)]);
        }
        _ => {
            for s in RECALL_SETTINGS {
                out.extend([(s, Metric::Acc), (s, Metric::InvalidRate)]);
            }
            out.extend([
                ("original", Metric::AccKnown),
                ("edited", Metric::AccKnown),
                ("edited", Metric::MRate),
            ]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip() {
        for m in ALL {
            assert_eq!(Metric::parse(m.key()), Some(m));
            assert_eq!(serde_json::to_string(&m).unwrap(), format!("\"{m}\""));
        }
        assert_eq!(Metric::parse("accuracy"), None);
    }

    #[test]
    fn reads_follow_the_settings_run() {
        let run = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let r = reads("qa_a", "edited", Metric::MRate).unwrap();
        assert_eq!(
            r.resolve(&run(&["edited", "none"])),
            Ok(run(&["edited", "none"]))
        );
        assert_eq!(
            r.resolve(&run(&["edited"])),
            Err(Missing::Setting("none".into()))
        );
        let few = reads("kre", FEW_SHOT_MEAN, Metric::Vr).unwrap();
        assert_eq!(
            few.resolve(&run(&["memory", "zero_shot"])),
            Err(Missing::OneOf)
        );
        assert_eq!(
            few.resolve(&run(&["memory", "mixed"])),
            Ok(run(&["memory", "mixed"]))
        );
        assert!(reads("kre", "memory", Metric::Vr).is_none());
        assert!(reads("text_generation", "original", Metric::RRate).is_none());
    }
}
