//! The KRE figures (per domain and pooled, per setting and seed) and the paper-style tables.

use crate::figures::figures_of;
use crate::metric::{Metric, FEW_SHOT_MEAN, KRE_SETTINGS as SETTINGS};
use crate::report::{cell, Table};
use crate::scores::Scores;
use crate::{Figure, Results};
use cb_metrics::kre::style;

/// The figures of every domain (the files of one domain pooled) and, with several domains,
/// of them all (`all`), from each file's scores (`files`: domain and scores, in the order
/// read).
pub(crate) fn figures(files: &[(String, Scores)], run: &[String], seeds: &[u64]) -> Vec<Figure> {
    let mut groups: Vec<(String, Scores)> = Vec::new();
    for (domain, scores) in files {
        match groups.iter_mut().find(|g| g.0 == *domain) {
            Some(g) => g.1.append(scores),
            None => groups.push((domain.clone(), scores.clone())),
        }
    }
    if groups.len() > 1 {
        let mut all = Scores::default();
        for (_, scores) in files {
            all.append(scores);
        }
        groups.push(("all".into(), all));
    }
    groups
        .iter()
        .flat_map(|(domain, scores)| figures_of(domain, "kre", scores, run, seeds))
        .collect()
}

/// The domains of the tables: each in the order first read, then `all` when there are
/// several.
fn domains(files: &[(String, Scores)]) -> Vec<String> {
    let mut domains: Vec<String> = Vec::new();
    for (d, _) in files {
        if !domains.contains(d) {
            domains.push(d.clone());
        }
    }
    if domains.len() > 1 {
        domains.push("all".into());
    }
    domains
}

pub(crate) fn tables(r: &Results, files: &[(String, Scores)]) -> Vec<Table> {
    let domains = domains(files);
    let g = |d: &str, s: &str, m: Metric| cell(r.get(d, "kre", s, m));
    let h = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let board = domains
        .iter()
        .map(|d| {
            let st = r
                .get(d, "kre", "zero_shot", Metric::Dmss)
                .and_then(|f| f.summary.mean)
                .map_or("n/a", |m| style(m).as_str());
            vec![
                d.clone(),
                g(d, "zero_shot", Metric::Vr),
                g(d, "zero_shot", Metric::Rr),
                g(d, "zero_shot", Metric::Fr),
                g(d, "roles", Metric::FrUpper),
                g(d, "zero_shot", Metric::Dmss),
                st.to_owned(),
                g(d, "roles", Metric::Adaptivity),
            ]
        })
        .collect();
    let memory = domains
        .iter()
        .map(|d| {
            vec![
                d.clone(),
                g(d, "memory", Metric::MemoryAcc),
                g(d, "memory", Metric::InvalidRate),
            ]
        })
        .collect();
    let mut settings = Vec::new();
    for d in &domains {
        for s in SETTINGS.iter().skip(1).chain([FEW_SHOT_MEAN].iter()) {
            if r.get(d, "kre", s, Metric::Vr).is_none() {
                continue;
            }
            settings.push(vec![
                d.clone(),
                (*s).to_owned(),
                g(d, s, Metric::Vr),
                g(d, s, Metric::Rr),
                g(d, s, Metric::Fr),
                g(d, s, Metric::Dmss),
                g(d, s, Metric::NegativeRate),
                g(d, s, Metric::InvalidRate),
            ]);
        }
    }
    vec![
        Table {
            title: "Leaderboard (the layout of KRE Table 2)".into(),
            header: h(&["Domain", "VR", "RR", "FR", "FR upper", "DMSS", "Style", "Adaptivity"]),
            rows: board,
            note: "Zero-shot VR, RR, FR and DMSS (×100); FR upper and adaptivity from the two roles (×100). FR = (VR + RR) / 2, DMSS, style (±20 band), adaptivity and FR upper are readings of the paper's prose: see the cb-metrics documentation.".into(),
        },
        Table {
            title: "Memory assessment (the layout of KRE Table 1)".into(),
            header: h(&["Domain", "Answered correctly without context", "Invalid"]),
            rows: memory,
            note: String::new(),
        },
        Table {
            title: "Factual robustness and style per setting".into(),
            header: h(&["Domain", "Setting", "VR", "RR", "FR", "DMSS", "Negative answer", "Invalid"]),
            rows: settings,
            note: "Known questions (right without context) are asked with the negative context, the others with the golden one. few_shot_mean averages the three few-shot configurations. VR is on the known questions and RR on the others: their n is that split's size (the mean over seeds, rounded up).".into(),
        },
    ]
}
