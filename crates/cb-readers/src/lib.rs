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
//!
//! # Streaming and errors
//! Every reader streams: line-based files are read line by line through a `BufRead`, CSV
//! record by record, and the SQuAD document is walked by a serde visitor on a thread that
//! holds one paragraph at a time. Nothing loads a whole file.
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

use std::path::{Path, PathBuf};

pub use cb_model::{Origin, SourceRecord};
pub use records::{ReadError, ReaderOptions, Records};

pub mod commonsenseqa;
pub mod cos_e;
pub mod ecqa;
pub mod eventkg;
pub mod jsonl;
pub mod musique;
mod records;
pub mod squad;
pub mod uj;
mod util;

const READER_NAMES: &[&str] = &[
    "commonsenseqa",
    "cos_e",
    "ecqa_csv",
    "ecqa_jsonl",
    "eventkg",
    "jsonl",
    "squad_v2",
    "musique",
    "uj",
];

/// The names [`open`] accepts.
pub fn reader_names() -> &'static [&'static str] {
    READER_NAMES
}

/// Whether the named reader selects records itself, from the options `limit`, `sample` and
/// `seed` (`eventkg`): its memory then grows with the selection, not with the input.
pub fn selects_records(reader: &str) -> bool {
    reader == "eventkg"
}

/// Opens one file with the named reader (`eventkg` also takes a dump folder: its `*.nq`
/// files, sorted, as one dump). Unknown name or bad option -> Config error naming
/// the reader/option; a file that cannot be opened -> File error naming the path.
pub fn open(reader: &str, path: &Path, opts: &ReaderOptions) -> Result<Records, ReadError> {
    let file = path.display().to_string();
    match reader {
        "commonsenseqa" => {
            util::no_options(reader, opts)?;
            util::json_lines(path, file, commonsenseqa::Format)
        }
        "cos_e" => {
            util::no_options(reader, opts)?;
            util::json_lines(path, file, cos_e::Format)
        }
        "ecqa_csv" => {
            util::no_options(reader, opts)?;
            ecqa::open_csv(path, file)
        }
        "ecqa_jsonl" => {
            util::no_options(reader, opts)?;
            util::json_lines(path, file, ecqa::JsonlFormat)
        }
        "jsonl" => {
            let format = jsonl::Format::from_options(opts)?;
            util::json_lines(path, file, format)
        }
        "squad_v2" => {
            util::no_options(reader, opts)?;
            squad::open(path, file)
        }
        "musique" => {
            util::no_options(reader, opts)?;
            util::json_lines(path, file, musique::Format)
        }
        "uj" => uj::open(path, file, opts),
        "eventkg" if path.is_dir() => {
            eventkg::open(&resolve_inputs(path, &["*.nq".to_string()])?, opts)
        }
        "eventkg" => eventkg::open(&[path.to_path_buf()], opts),
        other => Err(ReadError::Config(format!(
            "unknown reader `{other}`; known readers: {}",
            READER_NAMES.join(", ")
        ))),
    }
}

/// Opens a list of files (the matches of the recipe's input patterns, in order) with the
/// named reader. `eventkg` reads them as one dump; every other reader reads them one after
/// the other, as [`open`] would, opening each file only when the one before it is done.
/// No file -> Config error. The first file is opened at once (so a bad option or a missing
/// first file is an `Err` here); a later file that cannot be opened is a File error yielded
/// in its turn, and the iterator stops after it.
pub fn open_set(
    reader: &str,
    paths: &[PathBuf],
    opts: &ReaderOptions,
) -> Result<Records, ReadError> {
    if reader == "eventkg" {
        return eventkg::open(paths, opts);
    }
    let Some((first, rest)) = paths.split_first() else {
        return Err(ReadError::Config(format!(
            "reader `{reader}`: no input file given"
        )));
    };
    let current = open(reader, first, opts)?;
    Ok(Box::new(Chain {
        reader: reader.to_string(),
        opts: opts.clone(),
        rest: rest.iter().cloned().collect(),
        current: Some(current),
    }))
}

/// The records of several files, one file after the other.
struct Chain {
    reader: String,
    opts: ReaderOptions,
    rest: std::collections::VecDeque<PathBuf>,
    current: Option<Records>,
}

impl Iterator for Chain {
    type Item = Result<SourceRecord, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let current = self.current.as_mut()?;
            if let Some(item) = current.next() {
                if item.as_ref().is_err_and(ReadError::is_fatal) {
                    self.current = None;
                }
                return Some(item);
            }
            let path = self.rest.pop_front();
            self.current = None;
            match path.map(|p| open(&self.reader, &p, &self.opts)) {
                None => return None,
                Some(Ok(records)) => self.current = Some(records),
                Some(Err(e)) => return Some(Err(e)),
            }
        }
    }
}

/// Files of `dir` matching the recipe's glob patterns: the FIRST pattern that matches at
/// least one file wins; its matches are returned sorted. No match -> Config error naming dir
/// and patterns. A relative pattern (with or without `/`) is taken relative to `dir`; an
/// absolute one as is. `*` does not cross `/`; directories never match.
pub fn resolve_inputs(dir: &Path, patterns: &[String]) -> Result<Vec<PathBuf>, ReadError> {
    if patterns.is_empty() {
        return Err(ReadError::Config(format!(
            "no input pattern given for {}",
            dir.display()
        )));
    }
    let options = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: false,
    };
    for pattern in patterns {
        let full = if Path::new(pattern).is_absolute() {
            pattern.clone()
        } else {
            let escaped = glob::Pattern::escape(&dir.to_string_lossy());
            Path::new(&escaped)
                .join(pattern)
                .to_string_lossy()
                .into_owned()
        };
        let paths = glob::glob_with(&full, options)
            .map_err(|e| ReadError::Config(format!("bad input pattern `{pattern}`: {}", e.msg)))?;
        let mut found: Vec<PathBuf> = paths
            .filter_map(Result::ok)
            .filter(|p| p.is_file())
            .collect();
        if !found.is_empty() {
            found.sort();
            found.dedup();
            return Ok(found);
        }
    }
    let quoted: Vec<String> = patterns.iter().map(|p| format!("`{p}`")).collect();
    let missing = if dir.is_dir() {
        ""
    } else {
        " (the directory does not exist)"
    };
    Err(ReadError::Config(format!(
        "no file in {}{missing} matches any of the input patterns {}",
        dir.display(),
        quoted.join(", ")
    )))
}
