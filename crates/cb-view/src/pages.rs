//! The pages: overview, rows and rejects (filters, search, pages of 50), one row whole with
//! its lineage, one reject, the live progress of a build.

use crate::error::ViewError;
use crate::index::{Snapshot, Verdict};
use crate::record;
use crate::state::AppState;
use crate::templates::link;
use axum::extract::{Query, State};
use axum::response::Html;
use cb_audit::CHECKS;
use minijinja::context;
use serde::Deserialize;
use std::sync::Arc;

/// Rows (or rejects) a list page shows.
pub const PAGE: usize = 50;

pub type Shared = State<Arc<AppState>>;

/// Renders a template with the page's title and the staleness note.
pub fn render(
    s: &AppState,
    name: &str,
    title: &str,
    ctx: minijinja::Value,
) -> Result<Html<String>, ViewError> {
    let stale = s.stale.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let auditing = !s.snapshot().audited && stale.is_none();
    let base = context! { title, stale, auditing };
    let t = s.templates.get_template(name)?;
    Ok(Html(t.render(context! { ..ctx, ..base })?))
}

/// A filter value as given, trimmed: empty means none.
pub fn filter_value(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

pub fn domains_ctx(snap: &Snapshot, selected: Option<usize>) -> Vec<minijinja::Value> {
    snap.domains
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let files: Vec<String> = d
                .files
                .iter()
                .filter_map(|f| snap.files[*f].path.file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .collect();
            context! { index => i, name => d.name, rows => d.rows, rejects => d.rejects.len(),
            files, selected => selected == Some(i) }
        })
        .collect()
}

pub async fn overview(State(s): Shared) -> Result<Html<String>, ViewError> {
    let snap = s.snapshot();
    let mut counts = vec![0usize; snap.reasons.len()];
    for d in &snap.domains {
        for r in &d.rejects {
            counts[r.reason as usize] += 1;
        }
    }
    let reasons: Vec<_> = snap
        .reasons
        .iter()
        .enumerate()
        .map(|(i, name)| context! { index => i, name, count => counts[i] })
        .collect();
    let checks: Vec<_> = snap
        .report
        .iter()
        .flat_map(|r| r.checks.iter())
        .filter(|c| c.failed > 0)
        .map(|c| {
            context! { code => c.code, severity => c.severity.as_str(), failed => c.failed,
            checked => c.checked, meaning => c.meaning }
        })
        .collect();
    let count = |v: Verdict| snap.rows.iter().filter(|r| r.reader == v).count();
    let verdicts = context! { passed => count(Verdict::Passed), failed => count(Verdict::Failed),
    none => count(Verdict::None) };
    let ctx = context! {
        root => snap.root.display().to_string(), rows => snap.rows.len(), files => snap.files.len(),
        rejects => counts.iter().sum::<usize>(), domains => domains_ctx(&snap, None), reasons,
        checks, verdicts, readers => snap.readers, split => snap.rows.iter().filter(|r| r.panel_split).count(),
    };
    render(&s, "overview.html", "Overview", ctx)
}

#[derive(Debug, Deserialize, Default)]
pub struct RowsQuery {
    pub domain: Option<String>,
    pub check: Option<String>,
    pub verdict: Option<String>,
    pub split: Option<String>,
    pub reason: Option<String>,
    pub q: Option<String>,
    pub page: Option<usize>,
}

impl RowsQuery {
    fn link(&self, path: &str, page: usize) -> String {
        let page = page.to_string();
        let mut parts = vec![("page", page.as_str())];
        for (k, v) in [
            ("domain", &self.domain),
            ("check", &self.check),
            ("verdict", &self.verdict),
            ("split", &self.split),
            ("reason", &self.reason),
            ("q", &self.q),
        ] {
            if let Some(v) = filter_value(v) {
                parts.push((k, v));
            }
        }
        link(path, parts)
    }

    pub fn domain(&self, snap: &Snapshot) -> Result<Option<usize>, ViewError> {
        match filter_value(&self.domain) {
            None => Ok(None),
            Some(d) => d
                .parse::<usize>()
                .ok()
                .filter(|d| *d < snap.domains.len())
                .map(Some)
                .ok_or_else(|| ViewError::BadRequest(format!("no folder {d}"))),
        }
    }
}

/// The places of `matches` on page `page`, the total, and the pager's links.
pub struct Paged {
    pub shown: Vec<usize>,
    pub total: usize,
    pub page: usize,
}

/// The places of `matching` on page `page` (from 0); a page past the last is an error naming
/// how many there are.
pub fn page_of(matching: impl Iterator<Item = usize>, page: usize) -> Result<Paged, ViewError> {
    let from = page.saturating_mul(PAGE);
    let mut shown = Vec::new();
    let mut total = 0;
    for i in matching {
        if total >= from && total - from < PAGE {
            shown.push(i);
        }
        total += 1;
    }
    let pages = total.div_ceil(PAGE).max(1);
    if page >= pages {
        return Err(ViewError::NotFound(format!(
            "no page {page}: pages run from 0 to {}",
            pages - 1
        )));
    }
    Ok(Paged { shown, total, page })
}

pub fn pager_ctx(q: &RowsQuery, path: &str, p: &Paged) -> minijinja::Value {
    let first = p.page * PAGE + 1;
    context! {
        total => p.total, first, last => first + p.shown.len() - usize::from(!p.shown.is_empty()),
        prev => (p.page > 0).then(|| q.link(path, p.page - 1)),
        next => ((p.page + 1) * PAGE < p.total).then(|| q.link(path, p.page + 1)),
    }
}

/// Whether the record at `offset` of `path` holds `needle` (lowercase) in one of its texts.
pub fn record_contains(
    path: &std::path::Path,
    layout: record::Layout,
    offset: u64,
    needle: &str,
) -> bool {
    record::read_at(path, layout, offset).is_ok_and(|v| {
        let mut text = String::new();
        record::text_of(&v, &mut text);
        text.contains(needle)
    })
}

pub async fn rows(State(s): Shared, Query(q): Query<RowsQuery>) -> Result<Html<String>, ViewError> {
    let snap = s.snapshot();
    let domain = q.domain(&snap)?;
    let check = match filter_value(&q.check) {
        None => None,
        Some(c) => Some(
            CHECKS
                .iter()
                .position(|x| x.code == c)
                .ok_or_else(|| ViewError::BadRequest(format!("no audit check {c}")))?,
        ),
    };
    let verdict = filter_value(&q.verdict).map(str::to_owned);
    let split = filter_value(&q.split).is_some();
    let needle = filter_value(&q.q).map(str::to_lowercase);
    let snap2 = snap.clone();
    let paged = tokio::task::spawn_blocking(move || {
        let matching = (0..snap2.rows.len()).filter(|&i| {
            let r = &snap2.rows[i];
            let f = &snap2.files[r.file as usize];
            domain.is_none_or(|d| f.domain == d)
                && check.is_none_or(|c| r.checks & (1 << c) != 0)
                && verdict.as_deref().is_none_or(|v| r.reader.as_str() == v)
                && (!split || r.panel_split)
                && needle
                    .as_deref()
                    .is_none_or(|n| record_contains(&f.path, f.layout, r.offset, n))
        });
        (page_of(matching, q.page.unwrap_or(0)), q)
    })
    .await
    .map_err(|e| ViewError::BadRequest(e.to_string()))?;
    let (paged, q) = paged;
    let paged = paged?;
    let mut rows = Vec::new();
    for &n in &paged.shown {
        let (_, item) = snap.row(n)?;
        let reader = snap.rows[n].reader;
        rows.push(context! {
            n, link => snap.row_link(n), domain => snap.domains[snap.files[snap.rows[n].file as usize].domain].name,
            id => item.id, question => short(&item.question, 160),
            failed => item.failed.iter().map(|(c, _)| c.clone()).collect::<Vec<_>>(),
            verdict => reader.as_str(),
        });
    }
    let checks: Vec<_> = snap.report.iter().flat_map(|r| r.checks.iter()).filter(|c| c.failed > 0)
        .map(|c| context! { code => c.code, failed => c.failed, selected => filter_value(&q.check) == Some(c.code) })
        .collect();
    let ctx = context! {
        domains => domains_ctx(&snap, domain), checks, verdict => filter_value(&q.verdict), split,
        q => filter_value(&q.q), rows, ..pager_ctx(&q, "/rows", &paged)
    };
    render(&s, "rows.html", "Rows", ctx)
}

pub fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_owned();
    }
    let mut t: String = s.chars().take(n).collect();
    t.push('…');
    t
}
