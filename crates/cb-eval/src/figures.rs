//! A figure of the results ([`Figure`]): its value per seed, mean and interval, from the
//! per-item scores by its metric's one formula.

use crate::metric::{self, Metric};
use crate::report::{self, Figure};
use crate::scores::Scores;
use cb_metrics::Summary;

/// Builds a [`Figure`]: `g(seed, items)` is the figure of one seed over the items at these
/// indices (with repeats in a bootstrap resample; `0..n_items` is the observed sample). The
/// value per seed is `g` over all items; the interval is the percentile bootstrap of the mean
/// over seeds, the same resampled items for every seed ([`cb_metrics::bootstrap`]).
pub(crate) fn figure(
    domain: &str,
    task: &str,
    setting: &str,
    metric: Metric,
    n_items: usize,
    seeds: &[u64],
    g: &dyn Fn(u64, &[usize]) -> Option<f64>,
) -> Figure {
    let id = format!("{domain}/{task}/{setting}/{metric}");
    let interval = cb_metrics::bootstrap::interval(
        n_items,
        report::BOOTSTRAP_RESAMPLES,
        report::BOOTSTRAP_SEED,
        &id,
        |idx| Summary::of(seeds.iter().map(|s| g(*s, idx))).mean,
    );
    let all: Vec<usize> = (0..n_items).collect();
    let per_seed: Vec<Option<f64>> = seeds.iter().map(|s| g(*s, &all)).collect();
    Figure {
        domain: domain.to_owned(),
        task: task.to_owned(),
        setting: setting.to_owned(),
        metric,
        n_items,
        summary: Summary::of(per_seed.iter().copied()),
        interval,
        per_seed,
    }
}

/// Every figure of `task` that the settings `run` allow ([`metric::candidates`],
/// [`metric::reads`]), each from `scores` by its one formula, with its `n_items`.
pub(crate) fn figures_of(
    domain: &str,
    task: &str,
    scores: &Scores,
    run: &[String],
    seeds: &[u64],
) -> Vec<Figure> {
    metric::candidates(task)
        .into_iter()
        .filter(|(setting, m)| {
            metric::reads(task, setting, *m).is_some_and(|r| r.resolve(run).is_ok())
        })
        .map(|(setting, m)| {
            let g = |seed: u64, idx: &[usize]| m.value(setting, &scores.seed(seed), idx);
            Figure {
                n_items: m.n_items(scores, seeds),
                ..figure(domain, task, setting, m, scores.n, seeds, &g)
            }
        })
        .collect()
}
