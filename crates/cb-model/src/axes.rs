//! The two axes a conflict is judged on, and what a build's manifest says of each.
//!
//! A conflict is worth publishing when its context is both *misleading* (KRE appendix A.4:
//! it pushes a reader toward the wrong answer) and *plausible* (a careful reader who does
//! not know the answer could accept it as written). People rate both on the viewer's Rate
//! page; a build's reader check measures them with its own questions, whose tallies the
//! manifest keeps under `reader.checks`:
//! - misleading: `negative` (KRE: the reader, given the negative context, picks the
//!   negative answer) or `qa_a` (RECALL: given the answer-edited context, the edited answer);
//! - plausible: `plausible` (the reader, asked as an editor, finds the context one a careful
//!   reader would accept; a row it finds implausible is refused `reader_implausible`).
//!
//! An axis is *measured* where the build's reader asked its check; elsewhere (no reader, an
//! offline build, a reader check without that question, released files) it is not, and the
//! audit and the card say so rather than stay silent.

use crate::manifest::{ReaderInfo, StageCounts};
use serde::Serialize;

/// An axis of quality.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    Misleading,
    Plausible,
}

impl Axis {
    pub const ALL: [Axis; 2] = [Axis::Misleading, Axis::Plausible];

    pub fn name(self) -> &'static str {
        match self {
            Axis::Misleading => "misleading",
            Axis::Plausible => "plausible",
        }
    }

    /// The reader checks whose verdicts measure the axis, the first one a manifest has
    /// counting.
    pub fn checks(self) -> &'static [&'static str] {
        match self {
            Axis::Misleading => &["negative", "qa_a"],
            Axis::Plausible => &["plausible"],
        }
    }

    /// Where none of [`Axis::checks`] was asked, the family of checks named by the recipe's
    /// fields that measures the axis (a reader check of mode "fields": `leads_FIELD`, each
    /// context leading to its letter; `plausible_FIELD`), whose tallies add up.
    pub fn family(self) -> &'static str {
        match self {
            Axis::Misleading => "leads_",
            Axis::Plausible => "plausible_",
        }
    }

    /// The reject reason of a row refused on this axis alone (`None`: the axis shares its
    /// reason with other checks: `reader_disagrees` is also the control's).
    pub fn reject(self) -> Option<&'static str> {
        match self {
            Axis::Misleading => None,
            Axis::Plausible => Some("reader_implausible"),
        }
    }

    /// Why the axis was not measured where the reader asked none of its checks.
    fn not_asked(self) -> &'static str {
        match self {
            Axis::Misleading => {
                "the reader check did not ask whether the context leads to its answer: no `negative` or `qa_a` check"
            }
            Axis::Plausible => {
                "the reader check did not ask whether the context is one a careful reader would accept: no `plausible` check"
            }
        }
    }
}

/// One reader's verdicts on an axis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AxisReader {
    pub model: String,
    /// Rows asked the axis' check, and passed.
    pub asked: u64,
    pub passed: u64,
}

/// What a build measured on one axis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AxisMeasure {
    pub axis: Axis,
    /// The reader check that measured it (a family of them: `leads_*`); `None`: not
    /// measured (`why` says why).
    pub check: Option<String>,
    /// Each reader's tally of that check (one, or each of a panel).
    pub readers: Vec<AxisReader>,
    /// Rows refused for this axis alone (its [`Axis::reject`] reason, over every stage);
    /// `None` where the axis has no reason of its own or was not measured.
    pub refused: Option<u64>,
    /// Why it was not measured (`None` when it was).
    pub why: Option<&'static str>,
}

impl AxisMeasure {
    pub fn measured(&self) -> bool {
        self.check.is_some()
    }

    /// The axis in one sentence (no final stop): who passed its check on how many rows and
    /// how many rows were refused for it, or why it was not measured.
    pub fn sentence(&self) -> String {
        let name = self.axis.name();
        let Some(check) = &self.check else {
            return format!(
                "{name}: not measured ({})",
                self.why.unwrap_or("no reader verdicts")
            );
        };
        let readers: Vec<String> = self
            .readers
            .iter()
            .map(|r| format!("`{}` {} of {}", r.model, r.passed, r.asked))
            .collect();
        let refused = match (self.refused, self.axis.reject()) {
            (Some(n), Some(reason)) => format!("; {n} rows refused `{reason}`"),
            _ => String::new(),
        };
        format!(
            "{name}: the reader's `{check}` check passed by {}{refused}",
            readers.join(", ")
        )
    }
}

/// Both axes as a build recorded them: its reader (`None`: nobody read the rows) and its
/// stage counts (for the rows refused on an axis).
pub fn measure(reader: Option<&ReaderInfo>, stages: &[StageCounts]) -> [AxisMeasure; 2] {
    Axis::ALL.map(|axis| one(axis, reader, stages))
}

fn one(axis: Axis, reader: Option<&ReaderInfo>, stages: &[StageCounts]) -> AxisMeasure {
    let not = |why| AxisMeasure {
        axis,
        check: None,
        readers: Vec::new(),
        refused: None,
        why: Some(why),
    };
    let Some(r) = reader else {
        return not("no reader read the rows back");
    };
    let all: Vec<&ReaderInfo> = if r.panel.is_empty() {
        vec![r]
    } else {
        r.panel.iter().collect()
    };
    let asked = |c: &str| all.iter().any(|r| r.checks.contains_key(c));
    let family = axis.family();
    // The axis' own check where asked, else its family's (`None`: the exact check).
    let (check, prefix) = match axis.checks().iter().copied().find(|c| asked(c)) {
        Some(c) => (c.to_owned(), None),
        None if all
            .iter()
            .any(|r| r.checks.keys().any(|k| k.starts_with(family))) =>
        {
            (format!("{family}*"), Some(family))
        }
        None => return not(axis.not_asked()),
    };
    let counted = |k: &str| prefix.map_or(k == check, |p| k.starts_with(p));
    let readers = all
        .iter()
        .map(|r| {
            let (asked, passed) = r
                .checks
                .iter()
                .filter(|(k, _)| counted(k))
                .fold((0, 0), |(a, p), (_, t)| (a + t.asked, p + t.passed));
            AxisReader {
                model: r.model.clone(),
                asked,
                passed,
            }
        })
        .collect();
    let refused = axis.reject().map(|reason| {
        stages
            .iter()
            .filter_map(|s| s.reasons.get(reason))
            .sum::<u64>()
    });
    AxisMeasure {
        axis,
        check: Some(check),
        readers,
        refused,
        why: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::CheckTally;

    fn reader(checks: &[(&str, u64, u64)]) -> ReaderInfo {
        let checks = checks
            .iter()
            .map(|(c, asked, passed)| {
                let t = CheckTally {
                    asked: *asked,
                    passed: *passed,
                    ..CheckTally::default()
                };
                ((*c).to_owned(), t)
            })
            .collect();
        ReaderInfo::new("openai".into(), "rm".into(), "http://r".into(), checks)
    }

    #[test]
    fn an_axis_is_measured_only_where_its_check_was_asked() {
        let stages = [StageCounts {
            name: "reader_check".into(),
            in_: 50,
            out: 40,
            rejected: 10,
            reasons: [
                ("reader_implausible".to_owned(), 4),
                ("reader_disagrees".to_owned(), 6),
            ]
            .into(),
        }];
        let [m, p] = measure(None, &stages);
        assert!(!m.measured() && !p.measured());
        assert_eq!(
            p.sentence(),
            "plausible: not measured (no reader read the rows back)"
        );
        let old = reader(&[("negative", 50, 44), ("control", 50, 48)]);
        let [m, p] = measure(Some(&old), &stages);
        assert_eq!(
            m.sentence(),
            "misleading: the reader's `negative` check passed by `rm` 44 of 50"
        );
        assert!(p
            .sentence()
            .starts_with("plausible: not measured (the reader check did not ask"));
        let both = reader(&[("negative", 50, 44), ("plausible", 44, 40)]);
        let [_, p] = measure(Some(&both), &stages);
        assert_eq!(
            p.sentence(),
            "plausible: the reader's `plausible` check passed by `rm` 40 of 44; 4 rows refused `reader_implausible`"
        );
        let recall = reader(&[("qa_a", 9, 7)]);
        assert_eq!(
            measure(Some(&recall), &[])[0].check.as_deref(),
            Some("qa_a")
        );
        // A reader check of mode "fields": each family's tallies add up.
        let fields = reader(&[
            ("leads_a", 5, 4),
            ("leads_b", 5, 3),
            ("plausible_a", 4, 4),
            ("control", 5, 5),
        ]);
        let [misleading, plausible] = measure(Some(&fields), &[]);
        assert_eq!(
            misleading.sentence(),
            "misleading: the reader's `leads_*` check passed by `rm` 7 of 10"
        );
        assert_eq!(plausible.readers[0].passed, 4);
    }
}
