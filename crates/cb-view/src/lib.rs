//! `conflictbench view`: a local web server over a build folder (or any audited file or
//! folder, the released KRE files included).
//!
//! - Browse: every folder of outputs with its rows and rejects; filters by reject reason,
//!   audit check, reader verdict and panel disagreement; full-text search; a row whole with
//!   its two texts side by side (the audit page's marking), the reader's picks and controls,
//!   and its lineage opened to each call's prompt and answer (read from the cache).
//! - Live: while a build writes into the folder, each recipe's rows and rejects so far, the
//!   latest answers and the spend per model, read without locking the build.
//! - Rate: raters rate a sample drawn blind to the reader's verdict (the review sheet's rows,
//!   same size and seed as `audit --sheet`, and, where a reader refused rows, half of it from
//!   those, kept in the rejects' `row`; [`index::Snapshot::sampled`]) on KRE appendix A.4's
//!   scales; ratings go to one SQLite file; the page shows Fleiss' kappa
//!   over raters and Cohen's kappa between the people and each reader; each rater's sheet
//!   exports to the review sheet's CSV, which `conflictbench agreement` reads.
//!
//! Memory is bounded by a few bytes a row ([`index::RowFacts`], 24 bytes: the record's
//! offset, its failing checks, the reader's verdict) and the records a page shows: records
//! are read again from their offsets, never all held. Nothing is written but the ratings
//! file; every text of the data is escaped and the pages run no script; a rating is taken only
//! from the viewer's own page. The binding, the token and the port are the caller's (the
//! CLI): [`server::serve`] takes a bound listener.

pub mod cache;
pub mod conflictbank;
pub mod detail;
pub mod error;
pub mod index;
pub mod live;
pub mod pages;
pub mod rate;
pub mod ratings;
pub mod record;
pub mod secret;
pub mod server;
pub mod state;
pub mod stats;
pub mod templates;
