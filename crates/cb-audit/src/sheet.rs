//! The human-review sheet (CSV) and the agreement of filled sheets.
//!
//! A row is rated on two scales ([`Scale`]). `rating` takes one of the KRE paper's three
//! levels of appendix A.4, `not`, `somewhat` or `highly` (misleading: [`Rating`]);
//! `plausible` one of `implausible`, `somewhat` or `plausible` (could a careful reader who
//! does not know the answer accept the passage as written: [`Plausibility`]); `comment` is
//! free. A sheet written before the plausibility scale has no `plausible` column and
//! still reads: its rows are rated on A.4's scale alone. [`agreement`] joins several filled
//! sheets on `item_id` and reports, per item, the counts, the majority (or the tie) and the
//! share of agreeing rater pairs; over all items, the percent agreement (mean of the
//! per-item shares) and Fleiss' kappa over the three levels. [`sheet_agreement`] does so
//! for both scales, plausibility over the items every sheet rated on it.

use crate::{AuditError, Item};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

/// The columns of the sheet, in order.
pub const COLUMNS: [&str; 14] = [
    "item_id",
    "domain",
    "file",
    "kind",
    "question",
    "options",
    "answer",
    "negative_or_edited_answer",
    "context",
    "edited_or_negative_context",
    "failed_checks",
    "rating",
    "plausible",
    "comment",
];

/// Writes the sheet of `items` (read with [`crate::Report::items_at`]).
pub fn write_sheet<W: std::io::Write>(out: W, items: &[Item]) -> Result<(), csv::Error> {
    write_filled_sheet(out, items, |_| None)
}

/// What a rater wrote of one item: the `rating`, `plausible` and `comment` cells.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filled {
    pub rating: String,
    pub plausibility: String,
    pub comment: String,
}

/// Writes the sheet of `items` with the cells that `filled` gives an item (by `item_id`;
/// empty where it gives none): a rater's sheet as they would fill it.
pub fn write_filled_sheet<W: std::io::Write>(
    out: W,
    items: &[Item],
    filled: impl Fn(&str) -> Option<Filled>,
) -> Result<(), csv::Error> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(COLUMNS)?;
    for it in items {
        let options = it
            .options
            .iter()
            .enumerate()
            .map(|(i, o)| format!("{}. {o}", cb_model::letter(i)))
            .collect::<Vec<_>>()
            .join(" | ");
        let failed = it
            .failed
            .iter()
            .map(|(c, _)| c.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let f = filled(&it.item_id).unwrap_or_default();
        w.write_record(
            [
                it.item_id.as_str(),
                &it.domain,
                &it.file,
                it.kind.as_str(),
                &it.question,
                &options,
                &it.answer,
                &it.other_answer,
                &it.original,
                &it.edited,
                &failed,
                &f.rating,
                &f.plausibility,
                &f.comment,
            ]
            .map(|c| inert(c).into_owned()),
        )?;
    }
    w.flush()?;
    Ok(())
}

/// A cell a spreadsheet would run as a formula (it starts with `=`, `+`, `-`, `@`, a tab or
/// a carriage return) with a `'` before it, so that it is shown as text; others as they are.
/// [`read_ratings`] takes the `'` off an `item_id` again.
pub fn inert(cell: &str) -> std::borrow::Cow<'_, str> {
    if cell.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{cell}").into()
    } else {
        cell.into()
    }
}

/// A scale of three levels that raters rate an item on, lowest first.
pub trait Scale: Copy + Eq + Ord + Serialize + std::fmt::Debug + 'static {
    /// The levels, lowest first (their order is the index of [`Scale::index`]).
    const ALL: [Self; 3];
    /// The scale's name, as reports name it.
    const NAME: &'static str;
    /// The position of the level in [`Scale::ALL`].
    fn index(self) -> usize;
    /// The level as the sheet writes it.
    fn as_str(self) -> &'static str;
    /// The level a cell names (case-insensitive), if any.
    fn parse(s: &str) -> Option<Self>;
}

/// A rater's judgement of how misleading an item's context is (KRE appendix A.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rating {
    Not,
    Somewhat,
    Highly,
}

impl Rating {
    pub const ALL: [Rating; 3] = [Rating::Not, Rating::Somewhat, Rating::Highly];

    /// `not`, `somewhat`, `highly`, case-insensitive, optionally followed by `misleading`.
    pub fn parse(s: &str) -> Option<Rating> {
        let l = s.trim().to_lowercase();
        let l = l.strip_suffix("misleading").unwrap_or(&l).trim().to_owned();
        match l.as_str() {
            "not" => Some(Rating::Not),
            "somewhat" => Some(Rating::Somewhat),
            "highly" => Some(Rating::Highly),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Rating::Not => "not",
            Rating::Somewhat => "somewhat",
            Rating::Highly => "highly",
        }
    }
}

impl Scale for Rating {
    const ALL: [Rating; 3] = Rating::ALL;
    const NAME: &'static str = "misleading";
    fn index(self) -> usize {
        self as usize
    }
    fn as_str(self) -> &'static str {
        Rating::as_str(self)
    }
    fn parse(s: &str) -> Option<Self> {
        Rating::parse(s)
    }
}

/// A rater's judgement of whether a careful reader who does not know the answer could
/// accept an item's context as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Plausibility {
    /// A careful reader would reject it at once.
    Implausible,
    /// A possible passage with something odd in it.
    Somewhat,
    /// A careful reader could accept it as written.
    Plausible,
}

impl Scale for Plausibility {
    const ALL: [Plausibility; 3] = [
        Plausibility::Implausible,
        Plausibility::Somewhat,
        Plausibility::Plausible,
    ];
    const NAME: &'static str = "plausible";
    fn index(self) -> usize {
        self as usize
    }
    fn as_str(self) -> &'static str {
        match self {
            Plausibility::Implausible => "implausible",
            Plausibility::Somewhat => "somewhat",
            Plausibility::Plausible => "plausible",
        }
    }
    /// `implausible`, `somewhat` (or `somewhat plausible`), `plausible`, case-insensitive.
    fn parse(s: &str) -> Option<Self> {
        let l = s.trim().to_lowercase();
        match l.as_str() {
            "implausible" => Some(Plausibility::Implausible),
            "somewhat" | "somewhat plausible" => Some(Plausibility::Somewhat),
            "plausible" => Some(Plausibility::Plausible),
            _ => None,
        }
    }
}

/// One row of a filled sheet: the item, its A.4 rating and its plausibility (`None`: the
/// cell is empty, or the sheet has no `plausible` column).
#[derive(Debug, Clone, PartialEq)]
pub struct SheetRow {
    pub item_id: String,
    pub rating: Rating,
    pub plausibility: Option<Plausibility>,
}

/// Reads the `item_id` and `rating` columns of a filled sheet ([`read_sheet`] without the
/// plausibility).
pub fn read_ratings(path: &Path) -> Result<Vec<(String, Rating)>, AuditError> {
    Ok(read_sheet(path)?
        .into_iter()
        .map(|r| (r.item_id, r.rating))
        .collect())
}

/// Reads the `item_id`, `rating` and (where the sheet has it) `plausible` columns of a
/// filled sheet. A missing or invalid rating, an invalid plausibility (an empty one is
/// "not rated on that scale"), or a repeated item, is an error naming the file and line.
pub fn read_sheet(path: &Path) -> Result<Vec<SheetRow>, AuditError> {
    let p = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| AuditError::Io {
        path: p.clone(),
        source: e,
    })?;
    // Lines are counted here: on `\r\n` line ends the CSV reader's record position stops
    // at the `\n` of the line before (its line count is then one short), so the line ends
    // at that position are skipped before counting.
    let line_of = |pos: Option<&csv::Position>| {
        pos.map_or(0, |pos| {
            let mut start = (pos.byte() as usize).min(bytes.len());
            while bytes.get(start).is_some_and(|b| matches!(b, b'\r' | b'\n')) {
                start += 1;
            }
            1 + bytes[..start].iter().filter(|b| **b == b'\n').count() as u64
        })
    };
    let mut r = csv::Reader::from_reader(bytes.as_slice());
    let sheet_err = |line: u64, message: String| AuditError::Sheet {
        path: p.clone(),
        line,
        message,
    };
    let headers = r
        .headers()
        .map_err(|e| sheet_err(1, e.to_string()))?
        .clone();
    let find = |name: &str| headers.iter().position(|h| h.trim() == name);
    let col = |name: &str| find(name).ok_or_else(|| sheet_err(1, format!("no \"{name}\" column")));
    let (id_col, rating_col) = (col("item_id")?, col("rating")?);
    let plausibility_col = find(Plausibility::NAME);
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for rec in r.records() {
        let rec = rec.map_err(|e| sheet_err(line_of(e.position()), e.to_string()))?;
        let line = line_of(rec.position());
        let cell = rec.get(id_col).unwrap_or("");
        let id = match cell.strip_prefix('\'') {
            Some(rest) if inert(rest) != rest => rest,
            _ => cell,
        };
        let id = id.trim().to_owned();
        if id.is_empty() {
            return Err(sheet_err(line, "empty item_id".into()));
        }
        let raw = rec.get(rating_col).unwrap_or("");
        let rating = Rating::parse(raw).ok_or_else(|| {
            sheet_err(
                line,
                format!("rating \"{raw}\" of {id} is not one of not, somewhat, highly"),
            )
        })?;
        let raw = plausibility_col.and_then(|c| rec.get(c)).unwrap_or("");
        let plausibility = match raw.trim() {
            "" => None,
            _ => Some(Plausibility::parse(raw).ok_or_else(|| {
                sheet_err(
                    line,
                    format!("plausible \"{raw}\" of {id} is not one of implausible, somewhat, plausible (or empty)"),
                )
            })?),
        };
        if !seen.insert(id.clone()) {
            return Err(sheet_err(line, format!("item {id} is rated twice")));
        }
        out.push(SheetRow {
            item_id: id,
            rating,
            plausibility,
        });
    }
    Ok(out)
}

/// The agreement on one item.
#[derive(Debug, Clone, Serialize)]
pub struct ItemAgreement<L: Scale = Rating> {
    pub item_id: String,
    /// Ratings per level, lowest first (A.4: not, somewhat, highly).
    pub counts: [usize; 3],
    /// The most frequent level, or `None` on a tie.
    pub majority: Option<L>,
    /// The tied levels (empty when there is a majority).
    pub tied: Vec<L>,
    /// Share of rater pairs that agree: sum n_j (n_j - 1) / (n (n - 1)).
    pub agreement: f64,
}

/// The agreement of several raters over the same items, on one scale.
#[derive(Debug, Clone, Serialize)]
pub struct Agreement<L: Scale = Rating> {
    pub raters: usize,
    pub items: Vec<ItemAgreement<L>>,
    /// Mean of the per-item agreement.
    pub percent_agreement: f64,
    /// Share of all ratings per level, lowest first.
    pub category_shares: [f64; 3],
    /// (P̄ - P_e) / (1 - P_e); `None` when P_e = 1 (every rating in one level).
    pub fleiss_kappa: Option<f64>,
}

/// Computes the agreement of the sheets `(name, ratings)` on the scale `L`; every sheet must
/// rate the same items.
pub fn agreement<L: Scale>(
    sheets: &[(String, Vec<(String, L)>)],
) -> Result<Agreement<L>, AuditError> {
    if sheets.len() < 2 {
        return Err(AuditError::Input(
            "agreement needs at least two filled sheets".into(),
        ));
    }
    let mut per_item: BTreeMap<String, [usize; 3]> = BTreeMap::new();
    let first: BTreeSet<&String> = sheets[0].1.iter().map(|(id, _)| id).collect();
    for (name, ratings) in sheets {
        let ids: BTreeSet<&String> = ratings.iter().map(|(id, _)| id).collect();
        if let Some(missing) = first.difference(&ids).next() {
            return Err(AuditError::Input(format!(
                "{name} does not rate item {missing} (rated in {})",
                sheets[0].0
            )));
        }
        if let Some(extra) = ids.difference(&first).next() {
            return Err(AuditError::Input(format!(
                "{name} rates item {extra}, which {} does not",
                sheets[0].0
            )));
        }
        for (id, r) in ratings {
            per_item.entry(id.clone()).or_default()[r.index()] += 1;
        }
    }
    let n = sheets.len();
    let pairs = (n * (n - 1)) as f64;
    let mut items = Vec::with_capacity(per_item.len());
    let mut totals = [0usize; 3];
    for (item_id, counts) in per_item {
        for j in 0..3 {
            totals[j] += counts[j];
        }
        let max = counts.iter().copied().max().unwrap_or(0);
        let top: Vec<L> = L::ALL
            .iter()
            .copied()
            .filter(|r| counts[r.index()] == max)
            .collect();
        let agree = counts
            .iter()
            .map(|&c| (c * c.saturating_sub(1)) as f64)
            .sum::<f64>()
            / pairs;
        items.push(ItemAgreement {
            item_id,
            counts,
            majority: (top.len() == 1).then(|| top[0]),
            tied: if top.len() > 1 { top } else { Vec::new() },
            agreement: agree,
        });
    }
    let m = items.len() as f64;
    let p_bar = if items.is_empty() {
        0.0
    } else {
        items.iter().map(|i| i.agreement).sum::<f64>() / m
    };
    let all = (items.len() * n) as f64;
    let shares = totals.map(|t| if all > 0.0 { t as f64 / all } else { 0.0 });
    let p_e: f64 = shares.iter().map(|p| p * p).sum();
    let kappa = (p_e < 1.0 && !items.is_empty()).then(|| (p_bar - p_e) / (1.0 - p_e));
    Ok(Agreement {
        raters: n,
        items,
        percent_agreement: p_bar,
        category_shares: shares,
        fleiss_kappa: kappa,
    })
}

/// The agreement of filled sheets on both scales: A.4's over every item (the fields of
/// [`Agreement`], as before the second scale), plausibility over the items that every sheet
/// rated on it (`None`: no such item, the scale was not rated).
#[derive(Debug, Clone, Serialize)]
pub struct SheetAgreement {
    #[serde(flatten)]
    pub misleading: Agreement<Rating>,
    pub plausible: Option<Agreement<Plausibility>>,
}

/// [`agreement`] of the sheets `(name, rows)` on both scales.
pub fn sheet_agreement(sheets: &[(String, Vec<SheetRow>)]) -> Result<SheetAgreement, AuditError> {
    let a4: Vec<(String, Vec<(String, Rating)>)> = sheets
        .iter()
        .map(|(name, rows)| {
            let r = rows.iter().map(|r| (r.item_id.clone(), r.rating)).collect();
            (name.clone(), r)
        })
        .collect();
    let misleading = agreement(&a4)?;
    let every: BTreeSet<&str> = misleading
        .items
        .iter()
        .map(|i| i.item_id.as_str())
        .filter(|id| {
            sheets.iter().all(|(_, rows)| {
                rows.iter()
                    .any(|r| r.item_id == *id && r.plausibility.is_some())
            })
        })
        .collect();
    let plausible: Vec<(String, Vec<(String, Plausibility)>)> = sheets
        .iter()
        .map(|(name, rows)| {
            let r = rows
                .iter()
                .filter(|r| every.contains(r.item_id.as_str()))
                .filter_map(|r| Some((r.item_id.clone(), r.plausibility?)))
                .collect();
            (name.clone(), r)
        })
        .collect();
    let plausible = if every.is_empty() {
        None
    } else {
        Some(agreement(&plausible)?)
    };
    Ok(SheetAgreement {
        misleading,
        plausible,
    })
}

impl SheetAgreement {
    /// A plain-text report: A.4's scale ([`Agreement::summary`]), then plausibility's, or
    /// the sentence saying it was not rated.
    pub fn summary(&self) -> String {
        let mut s = self.misleading.summary();
        match &self.plausible {
            Some(p) => {
                let _ = write!(
                    s,
                    "\n\nplausible, over the {} of {} items every sheet rated on it:\n{}",
                    p.items.len(),
                    self.misleading.items.len(),
                    p.summary()
                );
            }
            None => s.push_str(
                "\n\nplausible: not measured (no item is rated on it in every sheet; sheets written before that scale have no `plausible` column)",
            ),
        }
        s
    }
}

impl<L: Scale> Agreement<L> {
    /// A plain-text report: one line per item, then the totals.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        // Each level's column one wider than its name (A.4: 4, 9 and 7, as before).
        let w = L::ALL.map(|l| l.as_str().len() + 1);
        let _ = writeln!(
            s,
            "{:<40} {:>w0$} {:>w1$} {:>w2$}  majority  agreement",
            "item",
            L::ALL[0].as_str(),
            L::ALL[1].as_str(),
            L::ALL[2].as_str(),
            w0 = w[0],
            w1 = w[1],
            w2 = w[2]
        );
        for it in &self.items {
            let maj = match it.majority {
                Some(r) => r.as_str().to_owned(),
                None => format!(
                    "tie ({})",
                    it.tied
                        .iter()
                        .map(|r| r.as_str())
                        .collect::<Vec<_>>()
                        .join("/")
                ),
            };
            let _ = writeln!(
                s,
                "{:<40} {:>w0$} {:>w1$} {:>w2$}  {maj:<8}  {:.3}",
                it.item_id,
                it.counts[0],
                it.counts[1],
                it.counts[2],
                it.agreement,
                w0 = w[0],
                w1 = w[1],
                w2 = w[2]
            );
        }
        let _ = writeln!(
            s,
            "{} items, {} raters; percent agreement {:.1}%",
            self.items.len(),
            self.raters,
            100.0 * self.percent_agreement
        );
        let _ = write!(
            s,
            "Fleiss' kappa: {}",
            self.fleiss_kappa.map_or(
                "undefined (all ratings in one category)".to_owned(),
                |k| format!("{k:.4}")
            )
        );
        s
    }
}
