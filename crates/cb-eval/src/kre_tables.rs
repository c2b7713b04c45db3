//! The KRE figures (per domain and pooled, per setting and seed) and the paper-style tables.

use crate::kre::{FEW_SHOT, SETTINGS};
use crate::report::{cell, Table};
use crate::{figure, EvalOptions, Loaded, Results};
use cb_metrics::kre::{adaptivity, dmss, fr, fr_upper, rr, style, vr, KreItem};
use cb_metrics::{ratio, Summary};
use std::collections::BTreeMap;

pub(crate) type Answers = BTreeMap<(usize, usize, &'static str, u64), Option<usize>>;

/// The KRE items of `setting` for one seed, over the files in `which`.
fn items(
    which: &[usize],
    golds: &[Vec<(usize, usize)>],
    answers: &Answers,
    setting: &'static str,
    seed: u64,
) -> Vec<KreItem> {
    let mut out = Vec::new();
    for &fi in which {
        for (ri, &(gold, negative)) in golds[fi].iter().enumerate() {
            let memory = answers.get(&(fi, ri, "memory", seed)).copied().flatten();
            let Some(with_context) = answers.get(&(fi, ri, setting, seed)) else {
                continue;
            };
            out.push(KreItem {
                gold,
                negative,
                memory,
                with_context: *with_context,
            });
        }
    }
    out
}

pub(crate) fn figures(
    opts: &EvalOptions,
    files: &[Loaded],
    golds: &[Vec<(usize, usize)>],
    answers: &Answers,
    wanted: &[String],
) -> Vec<crate::Figure> {
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (fi, f) in files.iter().enumerate() {
        match groups.iter_mut().find(|g| g.0 == f.domain) {
            Some(g) => g.1.push(fi),
            None => groups.push((f.domain.clone(), vec![fi])),
        }
    }
    if groups.len() > 1 {
        groups.push(("all".into(), (0..files.len()).collect()));
    }
    let mut figs = Vec::new();
    for (domain, which) in &groups {
        let n: usize = which.iter().map(|fi| files[*fi].rows.len()).sum();
        let per_seed = |f: &dyn Fn(u64) -> Option<f64>| -> Vec<Option<f64>> {
            opts.seeds.iter().map(|s| f(*s)).collect()
        };
        let its = |setting: &'static str, seed: u64| items(which, golds, answers, setting, seed);
        let mem = |seed: u64| its("memory", seed);
        figs.push(figure(
            domain,
            "kre",
            "memory",
            "memory_acc",
            n,
            per_seed(&|s| {
                let m = mem(s);
                ratio(m.iter().filter(|i| i.known()).count(), m.len())
            }),
        ));
        figs.push(figure(
            domain,
            "kre",
            "memory",
            "invalid_rate",
            n,
            per_seed(&|s| {
                let m = mem(s);
                ratio(m.iter().filter(|i| i.memory.is_none()).count(), m.len())
            }),
        ));
        for setting in SETTINGS.iter().skip(1) {
            if !wanted.iter().any(|w| w == setting) {
                continue;
            }
            let per = |g: &dyn Fn(&[KreItem]) -> Option<f64>| per_seed(&|s| g(&its(setting, s)));
            figs.push(figure(domain, "kre", setting, "vr", n, per(&vr)));
            figs.push(figure(domain, "kre", setting, "rr", n, per(&rr)));
            figs.push(figure(
                domain,
                "kre",
                setting,
                "fr",
                n,
                per(&|i| fr(vr(i), rr(i))),
            ));
            figs.push(figure(domain, "kre", setting, "dmss", n, per(&dmss)));
            figs.push(figure(
                domain,
                "kre",
                setting,
                "invalid_rate",
                n,
                per(&|i| {
                    ratio(
                        i.iter().filter(|x| x.with_context.is_none()).count(),
                        i.len(),
                    )
                }),
            ));
            figs.push(figure(
                domain,
                "kre",
                setting,
                "negative_rate",
                n,
                per(&|i| {
                    ratio(
                        i.iter()
                            .filter(|x| x.with_context == Some(x.negative))
                            .count(),
                        i.len(),
                    )
                }),
            ));
        }
        let have = |s: &str| wanted.iter().any(|w| w == s);
        let few: Vec<&'static str> = FEW_SHOT.iter().copied().filter(|s| have(s)).collect();
        if !few.is_empty() {
            for (metric, g) in [("vr", vr as fn(&[KreItem]) -> Option<f64>), ("rr", rr)] {
                figs.push(figure(
                    domain,
                    "kre",
                    "few_shot_mean",
                    metric,
                    n,
                    per_seed(&|s| Summary::of(few.iter().map(|c| g(&its(c, s)))).mean),
                ));
            }
        }
        if have("role_dependent") && have("role_intuitive") {
            figs.push(figure(
                domain,
                "kre",
                "roles",
                "adaptivity",
                n,
                per_seed(&|s| {
                    adaptivity(
                        dmss(&its("role_intuitive", s)),
                        dmss(&its("role_dependent", s)),
                    )
                }),
            ));
            figs.push(figure(
                domain,
                "kre",
                "roles",
                "fr_upper",
                n,
                per_seed(&|s| {
                    let sets: Vec<Vec<KreItem>> = ["zero_shot", "role_dependent", "role_intuitive"]
                        .iter()
                        .filter(|x| have(x))
                        .map(|x| its(x, s))
                        .collect();
                    let vrs: Vec<_> = sets.iter().map(|i| vr(i)).collect();
                    let rrs: Vec<_> = sets.iter().map(|i| rr(i)).collect();
                    fr_upper(&vrs, &rrs)
                }),
            ));
        }
    }
    figs
}

pub(crate) fn tables(r: &Results, files: &[Loaded]) -> Vec<Table> {
    let mut domains: Vec<String> = Vec::new();
    for f in files {
        if !domains.contains(&f.domain) {
            domains.push(f.domain.clone());
        }
    }
    if domains.len() > 1 {
        domains.push("all".into());
    }
    let g = |d: &str, s: &str, m: &str| cell(r.get(d, "kre", s, m));
    let h = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let board = domains
        .iter()
        .map(|d| {
            let st = r
                .get(d, "kre", "zero_shot", "dmss")
                .and_then(|f| f.summary.mean)
                .map_or("n/a", |m| style(m).as_str());
            vec![
                d.clone(),
                g(d, "zero_shot", "vr"),
                g(d, "zero_shot", "rr"),
                g(d, "zero_shot", "fr"),
                g(d, "roles", "fr_upper"),
                g(d, "zero_shot", "dmss"),
                st.to_owned(),
                g(d, "roles", "adaptivity"),
            ]
        })
        .collect();
    let memory = domains
        .iter()
        .map(|d| {
            vec![
                d.clone(),
                g(d, "memory", "memory_acc"),
                g(d, "memory", "invalid_rate"),
            ]
        })
        .collect();
    let mut settings = Vec::new();
    for d in &domains {
        for s in SETTINGS.iter().skip(1).chain(["few_shot_mean"].iter()) {
            if r.get(d, "kre", s, "vr").is_none() {
                continue;
            }
            settings.push(vec![
                d.clone(),
                (*s).to_owned(),
                g(d, s, "vr"),
                g(d, s, "rr"),
                g(d, s, "fr"),
                g(d, s, "dmss"),
                g(d, s, "negative_rate"),
                g(d, s, "invalid_rate"),
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
            note: "Known questions (right without context) are asked with the negative context, the others with the golden one. few_shot_mean averages the three few-shot configurations.".into(),
        },
    ]
}
