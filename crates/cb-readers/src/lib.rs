//! Streaming readers of the source datasets of conflictbench.
//!
//! A reader turns one source file into [`SourceRecord`]s: a dataset id, the file and line the
//! record came from, and a flat JSON object of fields that each reader documents in its module:
//!
//! | reader          | module            | format                                                   |
//! |-----------------|-------------------|----------------------------------------------------------|
//! | `commonsenseqa` | [`commonsenseqa`] | CommonsenseQA JSONL, official nested and flattened (hub) layouts |
//! | `cos_e`         | [`cos_e`]         | CoS-E JSONL explanations                                 |
//! | `ecqa_csv`      | [`ecqa`]          | ECQA `cqa_data_{train,val,test}.csv` written by pandas   |
//! | `ecqa_jsonl`    | [`ecqa`]          | ECQA `ecqa.jsonl` (explanations keyed by CommonsenseQA id) |
//! | `eventkg`       | [`eventkg`]       | an EventKG dump: a set of N-Quads (or N-Triples) files read as one |
//! | `jsonl`         | [`jsonl`]         | any JSON-lines file of objects (e-CARE, ...)             |
//! | `squad_v2`      | [`squad`]         | the official SQuAD v2.0 JSON document                    |
//! | `musique`       | [`musique`]       | MuSiQue-Ans v1.0 JSONL                                   |
//! | `uj`            | [`uj`]            | UJ-CS/Math/Phy: parallel `.src`/`.tgt` text, or JSONL    |
//! | `popqa`         | [`popqa`]         | PopQA facts, a JSON array (lists written as text decoded) |
//! | `mquake`        | [`mquake`]        | MQuAKE-CF / MQuAKE-T cases, a JSON array, read as facts  |
//!
//! The fact readers (`popqa`, `mquake`) give every record the same fact fields: `subject`,
//! `subject_id`, `subject_aliases`, `relation`, `relation_id` (a Wikidata property),
//! `object`, `object_id`, `object_aliases`, `question`, beside the source's own.
//!
//! # Streaming and errors
//! Every reader streams: line-based files are read line by line through a `BufRead`, CSV
//! record by record, and the SQuAD document is walked by a serde visitor on a thread that
//! holds one paragraph at a time; JSON arrays (PopQA, MQuAKE) are walked the same way, one
//! element at a time (their record errors' `line` is the element's 0-based index). Nothing
//! loads a whole file.
//!
//! Errors come as items of the iterator ([`Records`]):
//! - [`ReadError::Record`]: one record is malformed; the iterator goes on with the next one.
//!   `line` is the 1-based line of the record (for CSV the line where the record starts; for
//!   SQuAD the 0-based running question index, see [`squad`]). Codes:
//!   - `malformed_json`: the line is not valid JSON (a truncated line included);
//!   - `bad_encoding`: the line is not valid UTF-8;
//!   - `missing_field`: a required key or CSV column is absent;
//!   - `bad_value`: a value has the wrong type or an impossible value (the line is not a JSON
//!     object, an `answerKey` that is not among the labels, ...);
//!   - `malformed_csv`: the CSV parser rejected the record;
//!   - `malformed_nquads`: an N-Quads line does not parse (reader `eventkg`).
//! - [`ReadError::File`]: the file cannot be opened or read, or its overall structure is
//!   broken (a bad CSV header, a SQuAD document that is not valid JSON). Fatal: it is the last
//!   item the iterator yields.
//! - [`ReadError::Config`]: an unknown reader, a bad option, no file matching the input
//!   patterns. Returned by [`open`], [`open_set`] and [`resolve_inputs`], never yielded
//!   (except by [`open_set`] for a later file of the list that the reader refuses).
//!
//! Most readers read one file; [`open_set`] reads a list of files: the `eventkg` reader takes
//! the list as one dump (its records join statements from all of them, see [`eventkg`]),
//! every other reader reads the files one after the other.
//!
//! Blank lines are skipped; a last line without a final newline is read like any other; a
//! UTF-8 byte order mark at the start of a file and `\r\n` line ends are accepted.

pub use by_name::{open, open_set, reader_names, selects_records};
pub use cb_model::{Origin, SourceRecord};
pub use inputs::resolve_inputs;
pub use records::{ReadError, ReaderOptions, Records};

mod by_name;
pub mod commonsenseqa;
pub mod cos_e;
pub mod ecqa;
pub mod eventkg;
mod inputs;
mod json_array;
pub mod jsonl;
pub mod mquake;
pub mod musique;
pub mod popqa;
mod pylit;
mod records;
pub mod squad;
pub mod uj;
mod util;
