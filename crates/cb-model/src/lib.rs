//! The core data model of conflictbench. This crate does no IO: it holds the types that
//! readers produce, steps transform and writers serialise, plus the pure helpers every
//! part shares (seeded randomness, text normalisation).

pub mod axes;
pub mod card;
pub mod conflictbank;
pub mod date;
pub mod json;
pub mod kre;
pub mod lcs;
pub mod manifest;
pub mod range;
pub mod recall;
pub mod record;
pub mod reject;
pub mod rng;
pub mod spans;
pub mod text;

pub use card::{CardMeta, DataFile, SourceLicense};
pub use conflictbank::{Cause, CbRow, Style};
pub use kre::{letter, letter_index, negative_option, picked_option, KreRow, NONE_OPTION};
pub use manifest::{CheckTally, Manifest, ReaderInfo, StageCounts};
pub use range::Range;
pub use recall::{Edit, KvItem, QaRow, TextGenRow};
pub use record::{Origin, SourceRecord};
pub use reject::Reject;
pub use rng::item_rng;
