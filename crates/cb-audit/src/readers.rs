//! The readers of audited builds. Where an audited data file has the `manifest.json` of its
//! build beside it and that build's reader check read the rows, the report gives each
//! reader's figures as the build counted them over every row it read, kept and refused
//! alike (a data file holds only the kept rows, so its own `reader` column cannot show a
//! reader's refusals): the rows it judged and let stand (a reader of several), each check's
//! pass rate, its controls and whether they make it trusted
//! (`cb_model::manifest::ReaderTrust`), and with several readers each pair's agreement and
//! Cohen's kappa (`cb_model::manifest::Agreement`).
//!
//! Beside the readers, the two quality axes of every audited build ([`axes_of_files`],
//! `cb_model::axes`): how misleading and how plausible its reader found the rows, where it
//! asked; where it did not (no reader, no `plausible` check, no manifest beside the file),
//! the report says the axis was not measured.

use crate::{AuditError, FileSummary};
use cb_model::axes::{self, AxisMeasure};
use cb_model::manifest::{Agreement, CheckTally, ReaderInfo, StageCounts, Untrusted};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

/// The readers of one build.
#[derive(Debug, Clone, Serialize)]
pub struct BuildReaders {
    /// The build's manifest.
    pub manifest: String,
    pub readers: Vec<ReaderFigures>,
    /// Each pair of readers' agreement (empty with one reader).
    pub agreement: Vec<Agreement>,
}

/// One reader's figures.
#[derive(Debug, Clone, Serialize)]
pub struct ReaderFigures {
    pub model: String,
    pub endpoint: String,
    /// Rows it judged and let stand (known for each reader of several).
    pub rows: Option<CheckTally>,
    /// Per check, asked and passed.
    pub checks: BTreeMap<String, CheckTally>,
    /// Controls answered with an option (the measure's count) and passed.
    pub controls_asked: u64,
    pub controls_passed: u64,
    /// Controls answered "none of these": the golden context led to no answer; left out of
    /// the measure (not written when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub controls_no_answer: u64,
    /// Controls failed on golden contexts noted `golden_unrelated` (supporting no option);
    /// left out of the measure (not written when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub controls_unrelated: u64,
    pub control_lower_bound: Option<f64>,
    pub trusted: bool,
    /// Not trusted for answering "none of these" to most controls.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub abstaining: bool,
    /// Why it is not trusted (`None`: it is), as the build decided it.
    #[serde(skip)]
    pub untrusted: Option<Untrusted>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ReaderFigures {
    fn of(r: &ReaderInfo) -> Self {
        ReaderFigures {
            model: r.model.clone(),
            endpoint: r.endpoint.clone(),
            rows: r.rows,
            checks: r.checks.clone(),
            controls_asked: r.trust.controls_asked,
            controls_passed: r.trust.controls_passed,
            controls_no_answer: r.trust.controls_no_answer,
            controls_unrelated: r.trust.controls_unrelated,
            control_lower_bound: r.trust.lower_bound,
            trusted: r.trust.verified,
            abstaining: r.trust.untrusted() == Some(Untrusted::Abstaining),
            untrusted: r.trust.untrusted(),
        }
    }
}

/// The readers of the builds whose data files are among `files` (each manifest once, in
/// the order of the files); builds that nobody read give nothing.
pub fn of_files(files: &[FileSummary]) -> Result<Vec<BuildReaders>, AuditError> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for f in files {
        let Some(dir) = Path::new(&f.path).parent() else {
            continue;
        };
        let manifest = dir.join("manifest.json");
        if !manifest.is_file() || !seen.insert(manifest.clone()) {
            continue;
        }
        if let (Some(r), _) = manifest_of(&manifest)? {
            let readers = if r.panel.is_empty() {
                vec![ReaderFigures::of(&r)]
            } else {
                r.panel.iter().map(ReaderFigures::of).collect()
            };
            out.push(BuildReaders {
                manifest: manifest.display().to_string(),
                readers,
                agreement: r.agreement,
            });
        }
    }
    Ok(out)
}

/// The quality axes of one audited build, or of a data file with no build manifest beside it.
#[derive(Debug, Clone, Serialize)]
pub struct BuildAxes {
    /// The build's manifest, or the data file.
    pub of: String,
    pub axes: [AxisMeasure; 2],
}

/// Why a file without a manifest beside it has no measured axis.
const NO_MANIFEST: &str =
    "no build manifest beside the file, so no reader verdicts: released files, or files moved out of their build";

/// The quality axes of the builds whose data files are among `files` (each manifest once, in
/// the order of the files), and of each file that has no manifest beside it.
pub fn axes_of_files(files: &[FileSummary]) -> Result<Vec<BuildAxes>, AuditError> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for f in files {
        let manifest = Path::new(&f.path)
            .parent()
            .map(|d| d.join("manifest.json"))
            .filter(|m| m.is_file());
        let Some(manifest) = manifest else {
            let mut axes = axes::measure(None, &[]);
            for a in &mut axes {
                a.why = Some(NO_MANIFEST);
            }
            out.push(BuildAxes {
                of: f.path.clone(),
                axes,
            });
            continue;
        };
        if !seen.insert(manifest.clone()) {
            continue;
        }
        let (reader, stages) = manifest_of(&manifest)?;
        out.push(BuildAxes {
            of: manifest.display().to_string(),
            axes: axes::measure(reader.as_ref(), &stages),
        });
    }
    Ok(out)
}

/// The summary's lines for `axes`: each build's two axes.
pub fn axes_summary(axes: &[BuildAxes]) -> String {
    let mut s = String::new();
    for b in axes {
        let _ = writeln!(s, "quality axes of {}:", b.of);
        for a in &b.axes {
            let _ = writeln!(s, "  {}", a.sentence());
        }
    }
    if !axes.is_empty() {
        s.push_str("  (people rate both axes on the Rate page of `conflictbench view`)\n");
    }
    s
}

/// The `reader` of the manifest at `path` (`None`: not read) and its stage counts.
fn manifest_of(path: &Path) -> Result<(Option<ReaderInfo>, Vec<StageCounts>), AuditError> {
    let p = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| AuditError::Io {
        path: p.clone(),
        source,
    })?;
    let bad = |e: serde_json::Error| AuditError::Parse {
        path: p.clone(),
        location: format!("line {}", e.line()),
        message: e.to_string(),
    };
    let v: serde_json::Value = serde_json::from_str(&text).map_err(bad)?;
    let stages = match v.get("stages") {
        None | Some(serde_json::Value::Null) => Vec::new(),
        Some(s) => serde_json::from_value(s.clone()).map_err(bad)?,
    };
    match v.get("reader") {
        None | Some(serde_json::Value::Null) => Ok((None, stages)),
        Some(r) => Ok((
            Some(serde_json::from_value(r.clone()).map_err(bad)?),
            stages,
        )),
    }
}

/// The summary's lines for `builds`: each reader's pass rates and trust, each pair's kappa.
pub fn summary(builds: &[BuildReaders]) -> String {
    let mut s = String::new();
    for b in builds {
        let _ = writeln!(s, "readers of {}:", b.manifest);
        for r in &b.readers {
            let rows = r.rows.map_or(String::new(), |t| {
                format!("let {} of {} rows stand; ", t.passed, t.asked)
            });
            let checks: Vec<String> = r
                .checks
                .iter()
                .map(|(c, t)| format!("{c} {}/{}", t.passed, t.asked))
                .collect();
            let bound = r
                .control_lower_bound
                .map_or("none".to_owned(), |l| format!("{l:.2}"));
            let mut none = match r.controls_no_answer {
                0 => String::new(),
                k => format!(
                    " answered with an option, {k} more found no answer in their golden context (not counted)"
                ),
            };
            if r.controls_unrelated > 0 {
                none.push_str(&format!(
                    ", {} more failed on golden contexts unrelated to their question (golden_unrelated, not counted)",
                    r.controls_unrelated
                ));
            }
            let verdict = match r.untrusted {
                None => "trusted".to_owned(),
                Some(Untrusted::Abstaining) => {
                    "abstaining (\"none of these\" to most controls)".to_owned()
                }
                Some(Untrusted::TooFew) => format!(
                    "not measured (too few controls: at least {} are needed)",
                    cb_model::manifest::ReaderTrust::MIN_CONTROLS
                ),
                Some(Untrusted::ReadNothing) => "not measured (it read no row)".to_owned(),
                Some(Untrusted::Unreliable) => "unreliable".to_owned(),
            };
            let _ = writeln!(
                s,
                "  {} at {}: {rows}checks passed {}; controls {}/{}{none} (Wilson 95 % lower bound {bound}): {verdict}",
                r.model,
                r.endpoint,
                checks.join(", "),
                r.controls_passed,
                r.controls_asked,
            );
        }
        for a in &b.agreement {
            let kappa = a
                .kappa
                .map_or("undefined".to_owned(), |k| format!("{k:.4}"));
            let _ = writeln!(
                s,
                "  {} and {} on {} rows: both let {} stand, only the first {}, only the second {}, neither {}; Cohen's kappa {kappa}",
                a.readers[0], a.readers[1], a.rows, a.both_stand, a.first_only, a.second_only, a.neither
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(passed: u64, asked: u64, none: u64) -> ReaderFigures {
        let checks = [(
            "control".to_owned(),
            CheckTally {
                asked,
                passed,
                none,
                unrelated: 0,
            },
        )];
        ReaderFigures::of(&ReaderInfo::new(
            "openai".into(),
            "m".into(),
            "e".into(),
            checks.into(),
        ))
    }

    /// Controls answered "none of these" are named apart from the measure's count; a reader
    /// that answered so to most is said to abstain, not to be unreliable; without any, the
    /// line and the report's fields are as before.
    #[test]
    fn the_summary_names_controls_answered_none() {
        let build = |r: ReaderFigures| BuildReaders {
            manifest: "x/manifest.json".into(),
            readers: vec![r],
            agreement: Vec::new(),
        };
        let s = summary(&[build(figures(10, 12, 2))]);
        assert!(
            s.contains("controls 10/10 answered with an option, 2 more found no answer in their golden context (not counted) (Wilson 95 % lower bound 0.72): trusted"),
            "{s}"
        );
        let s = summary(&[build(figures(5, 12, 7))]);
        assert!(
            s.contains("controls 5/5 answered with an option, 7 more found no answer in their golden context (not counted) (Wilson 95 % lower bound 0.57): abstaining (\"none of these\" to most controls)"),
            "{s}"
        );
        let plain = figures(12, 12, 0);
        let s = summary(&[build(plain.clone())]);
        assert!(
            s.contains("checks passed control 12/12; controls 12/12 (Wilson 95 % lower bound 0.76): trusted"),
            "{s}"
        );
        // Too few controls, all passed, or none at all: not measured, not "unreliable".
        let s = summary(&[build(figures(4, 4, 0))]);
        assert!(
            s.contains("controls 4/4 (Wilson 95 % lower bound 0.51): not measured (too few controls: at least 10 are needed)"),
            "{s}"
        );
        let s = summary(&[build(figures(0, 0, 0))]);
        assert!(s.contains(": not measured (it read no row)"), "{s}");
        let s = summary(&[build(figures(3, 4, 0))]);
        assert!(s.contains("): unreliable"), "{s}");
        let v = serde_json::to_value(&plain).unwrap();
        assert!(v.get("controls_no_answer").is_none() && v.get("abstaining").is_none());
        assert!(v.get("controls_unrelated").is_none());
        // Issue 48's cose reader: 14 of 16, the two failures on unrelated golden contexts.
        let checks = [(
            "control".to_owned(),
            CheckTally {
                asked: 16,
                passed: 14,
                none: 0,
                unrelated: 2,
            },
        )];
        let r = ReaderFigures::of(&ReaderInfo::new(
            "openai".into(),
            "m".into(),
            "e".into(),
            checks.into(),
        ));
        assert_eq!(r.controls_unrelated, 2);
        let s = summary(&[build(r)]);
        assert!(
            s.contains("controls 14/14, 2 more failed on golden contexts unrelated to their question (golden_unrelated, not counted) (Wilson 95 % lower bound 0.78): trusted"),
            "{s}"
        );
    }
}
