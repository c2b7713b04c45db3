//! The pages of one thing: a row whole (texts side by side, the reader's picks, its lineage
//! opened to each call's prompt and answer from the cache), a reject, the rejects list and
//! the live progress of a build.

use crate::cache;
use crate::error::ViewError;
use crate::index::Snapshot;
use crate::live;
use crate::pages::{
    domains_ctx, filter_value, page_of, pager_ctx, record_contains, render, short, RowsQuery,
    Shared,
};
use crate::record::Layout;
use axum::extract::{Path, Query, State};
use axum::response::Html;
use minijinja::context;
use serde::Deserialize;
use serde_json::Value;

/// The options of an item, each with its class and its label in words (golden, negative or
/// edited, none).
pub fn options_ctx(item: &cb_audit::Item) -> Vec<minijinja::Value> {
    let other = match item.kind {
        cb_audit::ItemKind::Kre => "negative answer",
        cb_audit::ItemKind::ConflictBank => "replaced object",
        _ => "edited answer",
    };
    item.options
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let (class, label) = if item.answer_option == Some(i) {
                ("cb-gold", "golden answer")
            } else if item.other_option == Some(i) {
                ("cb-negative", other)
            } else {
                ("", "")
            };
            context! { text => o, class, label }
        })
        .collect()
}

/// The two texts of an item side by side, the edits marked (the audit page's markup, built
/// from escaped text).
pub fn sides(item: &cb_audit::Item) -> minijinja::Value {
    let labels = match item.kind {
        cb_audit::ItemKind::Kre => ("golden context", "negative context"),
        cb_audit::ItemKind::TextGeneration => ("source", "edited source"),
        cb_audit::ItemKind::ConflictBank => ("correct evidence", "conflicting evidences"),
        _ => ("context", "edited context"),
    };
    minijinja::Value::from_safe_string(cb_audit::html::side_by_side_html(
        &item.original,
        &item.edited,
        labels,
    ))
}

/// The readers' verdicts on a row of `options` options: a pick of the none option (the
/// letter after the last option, `cb_model::picked_option`) is shown with its words.
fn readers_ctx(v: &Value, options: usize) -> Vec<minijinja::Value> {
    let Some(r) = v.get("reader").filter(|r| r.is_object()) else {
        return Vec::new();
    };
    let named = |l: &Value| match l.as_str() {
        Some(l) if cb_model::letter_index(l) == Some(options) => {
            format!("{l}: {}", cb_model::NONE_OPTION)
        }
        Some(l) => l.to_owned(),
        None => "none".to_owned(),
    };
    let one = |p: &Value, stands: Option<bool>| {
        let checks: Vec<_> = p["checks"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                let picks: Vec<String> = c["picks"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(named)
                    .collect();
                context! { check => c["check"].as_str(), expected => c["expected"].as_str(),
                picks => picks.join(", "), pick => named(&c["pick"]),
                passed => c["passed"].as_bool() }
            })
            .collect();
        context! { model => p["model"].as_str().unwrap_or("reader"), stands, checks }
    };
    match r.get("panel").and_then(Value::as_array) {
        Some(panel) if !panel.is_empty() => panel
            .iter()
            .map(|p| one(p, p["stands"].as_bool()))
            .collect(),
        _ => vec![one(r, None)],
    }
}

fn lineage_ctx(
    v: &Value,
    cache_path: &std::path::Path,
) -> Result<Vec<minijinja::Value>, ViewError> {
    let mut out = Vec::new();
    for l in v["lineage"].as_array().into_iter().flatten() {
        let key = l["cache_key"].as_str().unwrap_or("");
        let call = if key.is_empty() {
            None
        } else {
            cache::call(cache_path, key)?
        };
        out.push(context! {
            step => l["step"].as_str(), template => l["template"].as_str(),
            attempt => l["attempt"].as_u64(), key, call,
        });
    }
    Ok(out)
}

/// A row's address: its file (under the viewed folder) and its place there.
#[derive(Debug, Deserialize)]
pub struct RowAt {
    pub file: String,
    pub n: usize,
}

pub async fn row(State(s): Shared, Query(at): Query<RowAt>) -> Result<Html<String>, ViewError> {
    let snap = s.snapshot();
    let n = snap.find_row(&at.file, at.n)?;
    let (v, item) = snap.row(n)?;
    let failed: Vec<_> = item
        .failed
        .iter()
        .filter_map(|(code, _)| cb_audit::checks::info(code))
        .map(|c| context! { code => c.code, severity => c.severity.as_str(), meaning => c.meaning })
        .collect();
    let warnings: Vec<String> = v["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| match w {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    // A ConflictBank-style row: each conflicting evidence beside the correct one.
    let cb = crate::conflictbank::cb_row(&v).map(|r| {
        context! { fact => crate::conflictbank::fact_ctx(&r),
        evidences => crate::conflictbank::evidences_ctx(&r) }
    });
    let ctx = context! {
        cb, index => at.n, options => options_ctx(&item),
        sides => sides(&item), failed, warnings, readers => readers_ctx(&v, item.options.len()),
        lineage => lineage_ctx(&v, &s.settings.cache)?,
        cache => s.settings.cache.display().to_string(), item,
    };
    render(
        &s,
        "row.html",
        &format!(
            "Row {}",
            short(
                &v["id"]
                    .as_str()
                    .map_or_else(|| n.to_string(), str::to_owned),
                80
            )
        ),
        ctx,
    )
}

pub async fn reject(
    State(s): Shared,
    Path((d, i)): Path<(usize, usize)>,
) -> Result<Html<String>, ViewError> {
    let snap = s.snapshot();
    let v = snap.reject(d, i)?;
    let fields: Vec<(String, String)> = v
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            let text = match v {
                Value::String(s) => s.clone(),
                other => serde_json::to_string_pretty(other).unwrap_or_default(),
            };
            (k.clone(), text)
        })
        .collect();
    let ctx = context! { domain => snap.domains[d].name, i, fields };
    render(
        &s,
        "reject.html",
        &format!("Reject {}", short(v["id"].as_str().unwrap_or(""), 80)),
        ctx,
    )
}

/// Every reject, as (domain, place in its file), in folder order.
fn all_rejects(snap: &Snapshot) -> impl Iterator<Item = (usize, usize)> + '_ {
    snap.domains
        .iter()
        .enumerate()
        .flat_map(|(d, dom)| (0..dom.rejects.len()).map(move |i| (d, i)))
}

pub async fn rejects(
    State(s): Shared,
    Query(q): Query<RowsQuery>,
) -> Result<Html<String>, ViewError> {
    let snap = s.snapshot();
    let domain = q.domain(&snap)?;
    let reason = match filter_value(&q.reason) {
        None => None,
        Some(r) => Some(
            r.parse::<u16>()
                .ok()
                .filter(|r| (*r as usize) < snap.reasons.len())
                .ok_or_else(|| ViewError::BadRequest(format!("no reject reason {r}")))?,
        ),
    };
    let needle = filter_value(&q.q).map(str::to_lowercase);
    let list: Vec<(usize, usize)> = all_rejects(&snap).collect();
    let paged = page_of(
        (0..list.len()).filter(|&k| {
            let (d, i) = list[k];
            let dom = &snap.domains[d];
            domain.is_none_or(|x| x == d)
                && reason.is_none_or(|r| dom.rejects[i].reason == r)
                && needle.as_deref().is_none_or(|n| {
                    dom.rejects_file.as_deref().is_some_and(|p| {
                        record_contains(p, Layout::Lines, dom.rejects[i].offset, n)
                    })
                })
        }),
        q.page.unwrap_or(0),
    )?;
    let mut shown = Vec::new();
    for &k in &paged.shown {
        let (d, i) = list[k];
        let v = snap.reject(d, i)?;
        shown.push(context! {
            d, i, domain => snap.domains[d].name, id => v["id"].as_str(), stage => v["stage"].as_str(),
            reason => v["reason"].as_str(), detail => short(v["detail"].as_str().unwrap_or(""), 200),
        });
    }
    let reasons: Vec<_> = snap
        .reasons
        .iter()
        .enumerate()
        .map(|(i, name)| context! { index => i, name, selected => reason == Some(i as u16) })
        .collect();
    let ctx = context! {
        domains => domains_ctx(&snap, domain), reasons, q => filter_value(&q.q), rejects => shown,
        ..pager_ctx(&q, "/rejects", &paged)
    };
    render(&s, "rejects.html", "Rejects", ctx)
}

pub async fn live_page(State(s): Shared) -> Result<Html<String>, ViewError> {
    let (root, cache_path) = (s.settings.root.clone(), s.settings.cache.clone());
    let live = tokio::task::spawn_blocking(move || live::live(&root, &cache_path))
        .await
        .map_err(|e| ViewError::BadRequest(e.to_string()))??;
    let ctx = context! {
        every => 2, recipes => live.recipes.clone(), cache => s.settings.cache.display().to_string(), live,
    };
    render(&s, "live.html", "Live", ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pick one past a row's options is the none option, shown with its words; the
    /// row's letters and an invalid vote as before.
    #[test]
    fn a_none_pick_is_shown_as_the_none_option() {
        let v = serde_json::json!({"reader": {"model": "r", "checks": [
            {"check": "negative", "expected": "B", "picks": ["E", null, "B"], "pick": "E", "passed": false},
            {"check": "control", "expected": "A", "picks": ["A"], "pick": "A", "passed": true}]}});
        let shown = minijinja::Value::from(readers_ctx(&v, 4)).to_string();
        let none = format!("E: {}", cb_model::NONE_OPTION);
        assert!(
            shown.contains(&format!("\"picks\": \"{none}, none, B\""))
                && shown.contains(&format!("\"pick\": \"{none}\""))
                && shown.contains("\"pick\": \"A\""),
            "{shown}"
        );
        // With five options, "E" is an option's letter.
        let shown = minijinja::Value::from(readers_ctx(&v, 5)).to_string();
        assert!(!shown.contains(cb_model::NONE_OPTION), "{shown}");
    }
}
