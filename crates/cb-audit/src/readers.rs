//! The readers of audited builds. Where an audited data file has the `manifest.json` of its
//! build beside it and that build's reader check read the rows, the report gives each
//! reader's figures as the build counted them over every row it read, kept and refused
//! alike (a data file holds only the kept rows, so its own `reader` column cannot show a
//! reader's refusals): the rows it judged and let stand (a reader of several), each check's
//! pass rate, its controls and whether they make it trusted
//! (`cb_model::manifest::ReaderTrust`), and with several readers each pair's agreement and
//! Cohen's kappa (`cb_model::manifest::Agreement`).

use crate::{AuditError, FileSummary};
use cb_model::manifest::{Agreement, CheckTally, ReaderInfo};
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
    pub controls_asked: u64,
    pub controls_passed: u64,
    pub control_lower_bound: Option<f64>,
    pub trusted: bool,
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
            control_lower_bound: r.trust.lower_bound,
            trusted: r.trust.verified,
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
        if let Some(r) = reader_of(&manifest)? {
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

/// The `reader` of the manifest at `path` (`None`: not read).
fn reader_of(path: &Path) -> Result<Option<ReaderInfo>, AuditError> {
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
    match v.get("reader") {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(r) => serde_json::from_value(r.clone()).map(Some).map_err(bad),
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
            let _ = writeln!(
                s,
                "  {} at {}: {rows}checks passed {}; controls {}/{} (Wilson 95 % lower bound {bound}): {}",
                r.model,
                r.endpoint,
                checks.join(", "),
                r.controls_passed,
                r.controls_asked,
                if r.trusted { "trusted" } else { "unreliable" }
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
