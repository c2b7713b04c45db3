//! Rating: a rater, under their name, rates the sample (the sheet's rows, same size and seed,
//! and half of it from the rows a reader refused where there are some: blind to the verdict,
//! [`crate::index::Snapshot::sampled`]) on KRE appendix A.4's questions (the answer set,
//! then how misleading the negative context is) and on plausibility (could a careful reader
//! who does not know the answer accept the negative context as written); the agreement page
//! and the sheet export, both scales in each. A ConflictBank-style row is rated once per
//! conflicting evidence, beside the correct one, on three questions: how misleading, how
//! plausible, and does it contradict the correct evidence ([`crate::conflictbank`]).

use crate::conflictbank::{cause_named, cb_row, rating_id, rating_ids};
use crate::detail::{options_ctx, sides};
use crate::error::ViewError;
use crate::index::{reader_scales, Snapshot};
use crate::pages::{render, Shared};
use crate::ratings::{check_rater, Judgement};
use crate::stats::{figures, Figures, ReaderSays};
use crate::templates::{link, marks};
use axum::extract::{Form, Query, RawQuery, State};
use axum::http::header;
use axum::response::{Html, IntoResponse, Redirect, Response};
use cb_audit::sheet::{Filled, Plausibility, Rating, Scale};
use minijinja::context;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Deserialize)]
pub struct RateQuery {
    pub rater: Option<String>,
    pub item: Option<usize>,
    /// The answer to the first question (the answer set alone), `yes` or `no`: the item's
    /// second step (the contexts, the golden and negative options, the misleading scale).
    pub distinguishable: Option<String>,
    /// The conflicting evidence of a ConflictBank-style row to rate (its cause); the first
    /// one the rater has not rated when not given.
    pub cause: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct RateForm {
    pub rater: String,
    pub item_id: String,
    pub misleading: String,
    /// `implausible`, `somewhat` or `plausible`; a post without it is refused (the page
    /// asks both scales).
    #[serde(default)]
    pub plausible: String,
    pub distinguishable: Option<String>,
    /// A ConflictBank-style row's conflicting evidence rated (its cause); required for such a
    /// row, refused for any other.
    pub cause: Option<String>,
    /// `yes` or `no`: does the conflicting evidence contradict the correct one; required
    /// with `cause`, refused without it.
    pub contradicts: Option<String>,
    #[serde(default)]
    pub comment: String,
    /// The viewer's form token ([`crate::state::AppState::form_token`]).
    #[serde(default)]
    pub form_token: String,
}

#[derive(Debug, Deserialize)]
pub struct ExportQuery {
    pub rater: Option<String>,
}

/// `yes`, `no`, or nothing said.
fn parse_distinguishable(v: Option<&str>) -> Result<Option<bool>, ViewError> {
    parse_yes_no("distinguishable", v)
}

/// The answer `name` holds: `yes`, `no`, or nothing said.
fn parse_yes_no(name: &str, v: Option<&str>) -> Result<Option<bool>, ViewError> {
    match v.map(str::trim) {
        None | Some("") => Ok(None),
        Some("yes") => Ok(Some(true)),
        Some("no") => Ok(Some(false)),
        Some(other) => Err(ViewError::BadRequest(format!(
            "{name} \"{other}\" is not yes or no; nothing was stored"
        ))),
    }
}

/// Whether `mine` holds a rating of the item `id`: of the item, or of each of its
/// conflicting evidences (a ConflictBank-style row).
fn rated(mine: &BTreeMap<String, Judgement>, id: &str) -> bool {
    mine.contains_key(id) || rating_ids(id).iter().all(|r| mine.contains_key(r))
}

/// The id a posted rating is stored under and its contradiction answer: a ConflictBank-style
/// row's rating names the conflicting evidence rated and says whether it contradicts the
/// correct one; any other row's names neither.
fn stored_as(
    f: &RateForm,
    item_id: &str,
    record: &serde_json::Value,
) -> Result<(String, Option<bool>), ViewError> {
    let cause = f.cause.as_deref().map(str::trim).filter(|c| !c.is_empty());
    let contradicts = parse_yes_no("contradicts", f.contradicts.as_deref())?;
    let bad = |m: String| Err(ViewError::BadRequest(format!("{m}; nothing was stored")));
    match (cb_row(record), cause) {
        (None, None) if contradicts.is_some() => bad(format!(
            "contradicts is asked only of a ConflictBank-style row's conflicting evidences, and {item_id} is not such a row"
        )),
        (None, None) => Ok((item_id.to_owned(), None)),
        (None, Some(_)) => bad(format!(
            "cause is asked only of a ConflictBank-style row's conflicting evidences, and {item_id} is not such a row"
        )),
        (Some(_), None) => bad(format!(
            "{item_id} is a ConflictBank-style row: a rating names the cause of the conflicting evidence it rates (misinformation, temporal, semantic)"
        )),
        (Some(row), Some(c)) => {
            let Some(cause) = cause_named(c).filter(|k| row.conflict(*k).is_some()) else {
                return bad(format!(
                    "cause \"{c}\" is not one of {item_id}'s conflicting evidences (misinformation, temporal, semantic)"
                ));
            };
            if parse_distinguishable(f.distinguishable.as_deref())?.is_some() {
                return bad("the answer-set question is not asked of a conflicting evidence".into());
            }
            match contradicts {
                Some(_) => Ok((rating_id(item_id, cause), contradicts)),
                None => bad("contradicts (yes or no) is missing: the page asks whether the conflicting evidence contradicts the correct one".into()),
            }
        }
    }
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
    let read_only = s.ratings.read_only.clone();
    let Some(rater) = q.rater.as_deref().filter(|r| !r.trim().is_empty()) else {
        let ctx = context! {
            sample => snap.sample.len(), refused => snap.sample_refused, seed => spec.seed, read_only
        };
        return render(&s, "rate.html", "Rate", ctx);
    };
    let rater = check_rater(rater)?;
    let distinguishable = parse_distinguishable(q.distinguishable.as_deref())?;
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
        .map(|it| context! { item_id => it.item_id, done => rated(&mine, &it.item_id) })
        .collect();
    let done = snap
        .sample
        .iter()
        .filter(|it| rated(&mine, &it.item_id))
        .count();
    let at = match q.item {
        Some(k) if k < snap.sample.len() => Some(k),
        Some(k) => return Err(ViewError::NotFound(format!("the sample has no item {k}"))),
        None => snap.sample.iter().position(|it| !rated(&mine, &it.item_id)),
    };
    let mut ctx = context! {
        rater, done, sample => snap.sample.len(), items, position => at.map(|k| k + 1),
        item_index => at, read_only, form_token => s.form_token,
    };
    if let Some(k) = at {
        let (v, item) = snap.sampled(snap.sample[k].at)?;
        if let Some(row) = cb_row(&v) {
            if distinguishable.is_some() {
                return Err(ViewError::BadRequest(
                    "the answer-set question is not asked of a ConflictBank-style row".into(),
                ));
            }
            let cb = crate::conflictbank::rate_ctx(&row, &item.item_id, q.cause.as_deref(), &mine)?;
            return render(&s, "rate.html", "Rate", context! { cb, item, ..ctx });
        }
        if q.cause.is_some() {
            return Err(ViewError::BadRequest(format!(
                "{} is not a ConflictBank-style row: it has no conflicting evidences to name",
                item.item_id
            )));
        }
        let previous = mine.get(&item.item_id).map(|j| {
            context! { misleading => j.misleading.as_str(), distinguishable => j.distinguishable,
            plausibility => j.plausibility.map(Scale::as_str), comment => j.comment }
        });
        // The answer set is asked first, before the golden option and the contexts show.
        ctx = match distinguishable {
            None => context! { plain_options => item.options, item, previous, ..ctx },
            Some(d) => context! {
                options => options_ctx(&item), sides => sides(&item), item, previous,
                distinguishable => if d { "yes" } else { "no" }, ..ctx
            },
        };
    }
    render(&s, "rate.html", "Rate", ctx)
}

pub async fn rate_post(State(s): Shared, Form(f): Form<RateForm>) -> Result<Response, ViewError> {
    if !crate::secret::same_secret(&f.form_token, &s.form_token) {
        return Err(ViewError::Forbidden(
            "refused: the form carries no token of this viewer (it was not sent from the viewer's own Rate page, or the viewer was started again since: reload the page); nothing was stored".into(),
        ));
    }
    let rater = check_rater(&f.rater)?;
    let snap = s.snapshot();
    // The page wrote the item's id with its hidden characters marked.
    let item = snap
        .sample
        .iter()
        .find(|it| it.item_id == f.item_id || marks(&it.item_id) == f.item_id)
        .ok_or_else(|| {
            ViewError::BadRequest(format!("{} is not in the rating sample", f.item_id))
        })?;
    let misleading = Rating::parse(&f.misleading).ok_or_else(|| {
        ViewError::BadRequest(format!(
            "misleading \"{}\" is not one of not, somewhat, highly",
            f.misleading
        ))
    })?;
    let plausibility = Plausibility::parse(&f.plausible).ok_or_else(|| {
        ViewError::BadRequest(format!(
            "plausible \"{}\" is not one of implausible, somewhat, plausible (the page asks both scales); nothing was stored",
            f.plausible
        ))
    })?;
    let (record, _) = snap.sampled(item.at)?;
    let (item_id, contradicts) = stored_as(&f, &item.item_id, &record)?;
    let j = Judgement {
        rater: rater.clone(),
        item_id,
        misleading,
        plausibility: Some(plausibility),
        distinguishable: parse_distinguishable(f.distinguishable.as_deref())?,
        contradicts,
        comment: f.comment,
    };
    let s2 = s.clone();
    blocking(move || s2.ratings.put(&j)).await?;
    Ok(Redirect::to(&link("/rate", [("rater", rater.as_str())])).into_response())
}

/// What is rated of the sample: the ids ratings are stored under (an item's, or one per
/// conflicting evidence of a ConflictBank-style row), what the readers said of each, and how
/// many are conflicting evidences.
type Rated = (Vec<String>, BTreeMap<String, ReaderSays>, usize);

fn rated_units(snap: &Snapshot) -> Result<Rated, ViewError> {
    let mut ids = Vec::new();
    let mut out = BTreeMap::new();
    let mut evidences = 0;
    for it in &snap.sample {
        let (v, _) = snap.sampled(it.at)?;
        let units: Vec<(String, ReaderSays)> = match cb_row(&v) {
            Some(row) => {
                evidences += row.conflicts.len();
                row.conflicts
                    .iter()
                    .map(|c| {
                        let says = crate::conflictbank::reader_says(&v, c.cause);
                        (rating_id(&it.item_id, c.cause), says)
                    })
                    .collect()
            }
            None => vec![(it.item_id.clone(), reader_scales(&v))],
        };
        for (id, says) in units {
            if !says.is_empty() {
                out.insert(id.clone(), says);
            }
            ids.push(id);
        }
    }
    Ok((ids, out, evidences))
}

/// The raters a page counts: those named by `among=` in the query, every rater when none is.
fn among(query: Option<&str>) -> Option<BTreeSet<String>> {
    let chosen: BTreeSet<String> = form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .filter(|(k, _)| k == "among")
        .map(|(_, v)| v.trim().to_owned())
        .collect();
    (!chosen.is_empty()).then_some(chosen)
}

/// Every judgement, and those of the raters counted.
fn judgements(
    s: &crate::state::AppState,
    chosen: Option<&BTreeSet<String>>,
) -> Result<(Vec<Judgement>, Vec<Judgement>), ViewError> {
    let all = s.ratings.all()?;
    let counted = all
        .iter()
        .filter(|j| chosen.is_none_or(|c| c.contains(&j.rater)))
        .cloned()
        .collect();
    Ok((all, counted))
}

/// Each rater with the ratings they gave of the sample and whether they are counted.
pub type Raters = Vec<(String, usize, bool)>;

/// The figures of the ratings so far, of the raters counted (all when `chosen` is `None`).
pub fn current(
    s: &crate::state::AppState,
    chosen: Option<&BTreeSet<String>>,
) -> Result<(Figures, Raters), ViewError> {
    let snap = s.snapshot();
    let (ids, says, evidences) = rated_units(&snap)?;
    let (all, counted) = judgements(s, chosen)?;
    let mut raters: BTreeMap<String, usize> = BTreeMap::new();
    for j in all.iter().filter(|j| ids.contains(&j.item_id)) {
        *raters.entry(j.rater.clone()).or_default() += 1;
    }
    let raters = raters
        .into_iter()
        .map(|(r, n)| {
            let on = chosen.is_none_or(|c| c.contains(&r));
            (r, n, on)
        })
        .collect();
    let mut f = figures(&ids, &counted, &says);
    // The sample counts rows; a ConflictBank-style row's conflicting evidences are items.
    f.evidences = evidences;
    f.sample = snap.sample.len();
    Ok((f, raters))
}

pub async fn agreement_page(
    State(s): Shared,
    RawQuery(q): RawQuery,
) -> Result<Html<String>, ViewError> {
    let chosen = among(q.as_deref());
    let s2 = s.clone();
    let c2 = chosen.clone();
    let (f, raters) = blocking(move || current(&s2, c2.as_ref())).await?;
    let among: Vec<(&str, &str)> = raters
        .iter()
        .filter(|r| r.2 && chosen.is_some())
        .map(|r| ("among", r.0.as_str()))
        .collect();
    let exports: Vec<String> = f
        .raters
        .iter()
        .map(|(r, _)| {
            link(
                "/export",
                [("rater", r.as_str())].into_iter().chain(among.clone()),
            )
        })
        .collect();
    let ctx = context! {
        f, raters, exports, ratings => s.settings.ratings.display().to_string(),
        set_aside => chosen.is_some(), refused => s.snapshot().sample_refused,
    };
    render(&s, "agreement.html", "Agreement", ctx)
}

/// A rater's sheet (the review sheet's CSV, `rating`, `plausible` and `comment` filled;
/// `plausible` empty where the rating was stored before that scale) of the items every
/// rater counted rated.
pub fn sheet(
    s: &crate::state::AppState,
    rater: &str,
    chosen: Option<&BTreeSet<String>>,
) -> Result<Vec<u8>, ViewError> {
    let snap = s.snapshot();
    let (_, counted) = judgements(s, chosen)?;
    if !counted.iter().any(|j| j.rater == rater) {
        return Err(ViewError::NotFound(format!(
            "no ratings by {rater} among the raters counted"
        )));
    }
    let ids: Vec<String> = snap.sample.iter().map(|i| i.item_id.clone()).collect();
    let f = figures(&ids, &counted, &BTreeMap::new());
    if !f.raters.iter().any(|(r, _)| r == rater) {
        return Err(ViewError::NotFound(format!(
            "no ratings by {rater} of the review sheet's rows (ratings of a ConflictBank-style row's conflicting evidences are not written to the sheet)"
        )));
    }
    let raters = f.raters.len();
    let mut items = Vec::new();
    for (it, fig) in snap.sample.iter().zip(&f.items) {
        if fig.counts.iter().sum::<usize>() == raters {
            items.push(snap.sampled(it.at)?.1);
        }
    }
    let mine: BTreeMap<&str, &Judgement> = counted
        .iter()
        .filter(|j| j.rater == rater)
        .map(|j| (j.item_id.as_str(), j))
        .collect();
    let mut out = Vec::new();
    cb_audit::sheet::write_filled_sheet(&mut out, &items, |id| {
        mine.get(id).map(|j| Filled {
            rating: j.misleading.as_str().to_owned(),
            plausibility: j.plausibility.map_or("", Scale::as_str).to_owned(),
            comment: j.comment.clone(),
        })
    })
    .map_err(|e| ViewError::BadRequest(e.to_string()))?;
    Ok(out)
}

pub async fn export(
    State(s): Shared,
    Query(q): Query<ExportQuery>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ViewError> {
    let rater = check_rater(q.rater.as_deref().unwrap_or(""))?;
    let chosen = among(raw.as_deref());
    let s2 = s.clone();
    let who = rater.clone();
    let csv = blocking(move || sheet(&s2, &who, chosen.as_ref())).await?;
    let file = sheet_file_name(&rater);
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{file}\""),
            ),
        ],
        csv,
    )
        .into_response())
}

/// The file name of `rater`'s sheet: `review_NAME.csv`, NAME kept where it is ASCII letters,
/// digits, `-` and `_`, every other byte written `.XX` (hex). Two raters never share a name
/// (`=cmd` and `+cmd` are `review_.3dcmd.csv` and `review_.2bcmd.csv`), and no name starts
/// with what a spreadsheet reads as a formula.
pub fn sheet_file_name(rater: &str) -> String {
    let mut name = String::from("review_");
    for b in rater.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            name.push(char::from(b));
        } else {
            name.push_str(&format!(".{b:02x}"));
        }
    }
    name.push_str(".csv");
    name
}

#[cfg(test)]
mod tests {
    use super::sheet_file_name;

    #[test]
    fn every_rater_exports_to_a_file_of_its_own_safe_in_a_spreadsheet() {
        let raters = [
            "=cmd|' /C calc'!A0",
            "+cmd|' /C calc'!A0",
            "=cmd",
            "+cmd",
            "-cmd",
            "@cmd",
            "_cmd",
            ".3dcmd",
            "anna",
            "Anna",
            "anna b",
            "anna_b",
            "anna.b",
            "zoë",
            "zo.c3.ab",
        ];
        let names: std::collections::BTreeSet<String> =
            raters.iter().map(|r| sheet_file_name(r)).collect();
        assert_eq!(names.len(), raters.len(), "{names:?}");
        for n in &names {
            assert!(n.starts_with("review_") && n.ends_with(".csv"), "{n}");
            assert!(
                n.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)),
                "{n}"
            );
        }
        assert_eq!(sheet_file_name("=cmd"), "review_.3dcmd.csv");
        assert_eq!(sheet_file_name("anna_b"), "review_anna_b.csv");
    }
}
