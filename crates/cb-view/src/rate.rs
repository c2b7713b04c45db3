//! Rating: a rater, under their name, rates the review sample (the sheet's rows: same size,
//! same seed) on KRE appendix A.4's scales; the agreement page and the sheet export.

use crate::detail::{options_ctx, sides};
use crate::error::ViewError;
use crate::index::{reader_scales, Snapshot};
use crate::pages::{render, Shared};
use crate::ratings::{check_rater, Judgement};
use crate::stats::{figures, Figures, ReaderSays};
use axum::extract::{Form, Query, State};
use axum::http::header;
use axum::response::{Html, IntoResponse, Redirect, Response};
use cb_audit::sheet::Rating;
use minijinja::context;
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, Deserialize)]
pub struct RateQuery {
    pub rater: Option<String>,
    pub item: Option<usize>,
}

#[derive(Debug, Deserialize)]
pub struct RateForm {
    pub rater: String,
    pub item_id: String,
    pub misleading: String,
    pub distinguishable: Option<String>,
    #[serde(default)]
    pub comment: String,
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ViewError> + Send + 'static,
) -> Result<T, ViewError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ViewError::BadRequest(e.to_string()))?
}

pub async fn rate_page(
    State(s): Shared,
    Query(q): Query<RateQuery>,
) -> Result<Html<String>, ViewError> {
    let snap = s.snapshot();
    let spec = s.settings.sample;
    let Some(rater) = q.rater.as_deref().filter(|r| !r.trim().is_empty()) else {
        let ctx = context! { sample => snap.sample.len(), seed => spec.seed };
        return render(&s, "rate.html", "Rate", ctx);
    };
    let rater = check_rater(rater)?;
    let s2 = s.clone();
    let who = rater.clone();
    let mine: BTreeMap<String, Judgement> = blocking(move || s2.ratings.all())
        .await?
        .into_iter()
        .filter(|j| j.rater == who)
        .map(|j| (j.item_id.clone(), j))
        .collect();
    let items: Vec<_> = snap
        .sample
        .iter()
        .map(|it| context! { item_id => it.item_id, done => mine.contains_key(&it.item_id) })
        .collect();
    let at = match q.item {
        Some(k) if k < snap.sample.len() => Some(k),
        Some(k) => return Err(ViewError::NotFound(format!("the sample has no item {k}"))),
        None => snap
            .sample
            .iter()
            .position(|it| !mine.contains_key(&it.item_id)),
    };
    let mut ctx = context! {
        rater, done => mine.len(), sample => snap.sample.len(), items, position => at.map(|k| k + 1),
    };
    if let Some(k) = at {
        let (_, item) = snap.row(snap.sample[k].row)?;
        let previous = mine.get(&item.item_id).map(|j| {
            context! { misleading => j.misleading.as_str(), distinguishable => j.distinguishable,
            comment => j.comment }
        });
        ctx = context! { options => options_ctx(&item), sides => sides(&item), item, previous, ..ctx };
    }
    render(&s, "rate.html", "Rate", ctx)
}

pub async fn rate_post(State(s): Shared, Form(f): Form<RateForm>) -> Result<Response, ViewError> {
    let rater = check_rater(&f.rater)?;
    let snap = s.snapshot();
    if !snap.sample.iter().any(|it| it.item_id == f.item_id) {
        return Err(ViewError::BadRequest(format!(
            "{} is not in the rating sample",
            f.item_id
        )));
    }
    let misleading = Rating::parse(&f.misleading).ok_or_else(|| {
        ViewError::BadRequest(format!(
            "misleading \"{}\" is not one of not, somewhat, highly",
            f.misleading
        ))
    })?;
    let distinguishable = match f.distinguishable.as_deref().map(str::trim) {
        None | Some("") => None,
        Some("yes") => Some(true),
        Some("no") => Some(false),
        Some(other) => {
            return Err(ViewError::BadRequest(format!(
                "distinguishable \"{other}\" is not yes or no"
            )))
        }
    };
    let j = Judgement {
        rater: rater.clone(),
        item_id: f.item_id,
        misleading,
        distinguishable,
        comment: f.comment,
    };
    let s2 = s.clone();
    blocking(move || s2.ratings.put(&j)).await?;
    Ok(Redirect::to(&format!("/rate?rater={}", crate::pages::enc(&rater))).into_response())
}

/// What the readers said of the sample's items.
fn reader_says(snap: &Snapshot) -> Result<BTreeMap<String, ReaderSays>, ViewError> {
    let mut out = BTreeMap::new();
    for it in &snap.sample {
        let (v, _) = snap.row(it.row)?;
        let says = reader_scales(&v);
        if !says.is_empty() {
            out.insert(it.item_id.clone(), says);
        }
    }
    Ok(out)
}

/// The figures of the ratings so far.
pub fn current(s: &crate::state::AppState) -> Result<Figures, ViewError> {
    let snap = s.snapshot();
    let ids: Vec<String> = snap.sample.iter().map(|i| i.item_id.clone()).collect();
    Ok(figures(&ids, &s.ratings.all()?, &reader_says(&snap)?))
}

pub async fn agreement_page(State(s): Shared) -> Result<Html<String>, ViewError> {
    let s2 = s.clone();
    let f = blocking(move || current(&s2)).await?;
    let ctx = context! { f, ratings => s.settings.ratings.display().to_string() };
    render(&s, "agreement.html", "Agreement", ctx)
}

/// A rater's sheet (the review sheet's CSV, `rating` and `comment` filled) of the items
/// every rater rated.
pub fn sheet(s: &crate::state::AppState, rater: &str) -> Result<Vec<u8>, ViewError> {
    let snap = s.snapshot();
    let all = s.ratings.all()?;
    if !all.iter().any(|j| j.rater == rater) {
        return Err(ViewError::NotFound(format!("no ratings by {rater}")));
    }
    let ids: Vec<String> = snap.sample.iter().map(|i| i.item_id.clone()).collect();
    let f = figures(&ids, &all, &BTreeMap::new());
    let raters = f.raters.len();
    let mut items = Vec::new();
    for (it, fig) in snap.sample.iter().zip(&f.items) {
        if fig.counts.iter().sum::<usize>() == raters {
            items.push(snap.row(it.row)?.1);
        }
    }
    let mine: BTreeMap<&str, &Judgement> = all
        .iter()
        .filter(|j| j.rater == rater)
        .map(|j| (j.item_id.as_str(), j))
        .collect();
    let mut out = Vec::new();
    cb_audit::sheet::write_filled_sheet(&mut out, &items, |id| {
        mine.get(id)
            .map(|j| (j.misleading.as_str().to_owned(), j.comment.clone()))
    })
    .map_err(|e| ViewError::BadRequest(e.to_string()))?;
    Ok(out)
}

pub async fn export(State(s): Shared, Query(q): Query<RateQuery>) -> Result<Response, ViewError> {
    let rater = check_rater(q.rater.as_deref().unwrap_or(""))?;
    let s2 = s.clone();
    let who = rater.clone();
    let csv = blocking(move || sheet(&s2, &who)).await?;
    let file: String = rater
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"review_{file}.csv\""),
            ),
        ],
        csv,
    )
        .into_response())
}
