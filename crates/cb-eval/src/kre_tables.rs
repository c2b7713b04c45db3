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
    let seeds = opts.seeds.as_slice();
    for (domain, which) in &groups {
        let n: usize = which.iter().map(|fi| files[*fi].rows.len()).sum();
        // Every setting's items per seed, built once; a resample picks positions in them.
        let mut cache: BTreeMap<(&'static str, u64), Vec<KreItem>> = BTreeMap::new();
        for setting in SETTINGS {
            if setting != "memory" && !wanted.iter().any(|w| w == setting) {
                continue;
            }
            for &seed in seeds {
                cache.insert((setting, seed), items(which, golds, answers, setting, seed));
            }
        }
        let its = |setting: &'static str, seed: u64, idx: &[usize]| -> Vec<KreItem> {
            cache
                .get(&(setting, seed))
                .map(|v| crate::pick(v, idx))
                .unwrap_or_default()
        };
        let share = |m: &[KreItem], p: &dyn Fn(&KreItem) -> bool| {
            ratio(m.iter().filter(|i| p(i)).count(), m.len())
        };
        // VR is on the items a seed's memory answers right, RR on the others: their `n` is
        // the mean over seeds of that split's size, rounded up (the bootstrap resamples all items and
        // splits each resample, as the figure itself does).
        let known_n = crate::mean_count(seeds.iter().map(|s| {
            cache
                .get(&("memory", *s))
                .map_or(0, |v| v.iter().filter(|i| i.known()).count())
        }));
        let unknown_n = crate::mean_count(seeds.iter().map(|s| {
            cache
                .get(&("memory", *s))
                .map_or(0, |v| v.iter().filter(|i| !i.known()).count())
        }));
        let n_of = |metric: &str| match metric {
            "vr" => known_n,
            "rr" => unknown_n,
            _ => n,
        };
        figs.push(figure(
            domain,
            "kre",
            "memory",
            "memory_acc",
            n,
            seeds,
            &|s, idx| share(&its("memory", s, idx), &|i| i.known()),
        ));
        figs.push(figure(
            domain,
            "kre",
            "memory",
            "invalid_rate",
            n,
            seeds,
            &|s, idx| share(&its("memory", s, idx), &|i| i.memory.is_none()),
        ));
        for setting in SETTINGS.iter().skip(1) {
            if !wanted.iter().any(|w| w == setting) {
                continue;
            }
            let fig = |metric: &str, g: &dyn Fn(&[KreItem]) -> Option<f64>| crate::Figure {
                n_items: n_of(metric),
                ..figure(domain, "kre", setting, metric, n, seeds, &|s, idx| {
                    g(&its(setting, s, idx))
                })
            };
            figs.push(fig("vr", &vr));
            figs.push(fig("rr", &rr));
            figs.push(fig("fr", &|i| fr(vr(i), rr(i))));
            figs.push(fig("dmss", &dmss));
            figs.push(fig("invalid_rate", &|i| {
                share(i, &|x| x.with_context.is_none())
            }));
            figs.push(fig("negative_rate", &|i| {
                share(i, &|x| x.with_context == Some(x.negative))
            }));
        }
        let have = |s: &str| wanted.iter().any(|w| w == s);
        let few: Vec<&'static str> = FEW_SHOT.iter().copied().filter(|s| have(s)).collect();
        if !few.is_empty() {
            for (metric, g) in [("vr", vr as fn(&[KreItem]) -> Option<f64>), ("rr", rr)] {
                figs.push(crate::Figure {
                    n_items: n_of(metric),
                    ..figure(
                        domain,
                        "kre",
                        "few_shot_mean",
                        metric,
                        n,
                        seeds,
                        &|s, idx| Summary::of(few.iter().map(|c| g(&its(c, s, idx)))).mean,
                    )
                });
            }
        }
        if have("role_dependent") && have("role_intuitive") {
            figs.push(figure(
                domain,
                "kre",
                "roles",
                "adaptivity",
                n,
                seeds,
                &|s, idx| {
                    adaptivity(
                        dmss(&its("role_intuitive", s, idx)),
                        dmss(&its("role_dependent", s, idx)),
                    )
                },
            ));
            figs.push(figure(
                domain,
                "kre",
                "roles",
                "fr_upper",
                n,
                seeds,
                &|s, idx| {
                    let sets: Vec<Vec<KreItem>> = ["zero_shot", "role_dependent", "role_intuitive"]
                        .into_iter()
                        .filter(|x| have(x))
                        .map(|x| its(x, s, idx))
                        .collect();
                    let vrs: Vec<_> = sets.iter().map(|i| vr(i)).collect();
                    let rrs: Vec<_> = sets.iter().map(|i| rr(i)).collect();
                    fr_upper(&vrs, &rrs)
                },
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
            note: "Known questions (right without context) are asked with the negative context, the others with the golden one. few_shot_mean averages the three few-shot configurations. VR is on the known questions and RR on the others: their n is that split's size (the mean over seeds, rounded up).".into(),
        },
    ]
}
