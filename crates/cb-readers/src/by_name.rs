//! The readers by name: the names a recipe may give, and [`open`] / [`open_set`], which open
//! one file or a list of files with the named reader.

use crate::{
    commonsenseqa, cos_e, ecqa, eventkg, json_array, jsonl, mquake, musique, popqa, resolve_inputs,
    squad, uj, util, ReadError, ReaderOptions, Records, SourceRecord,
};
use std::path::{Path, PathBuf};

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
    "popqa",
    "mquake",
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
        "popqa" => {
            util::no_options(reader, opts)?;
            json_array::open(path, file, popqa::Format)
        }
        "mquake" => json_array::open(
            path,
            file,
            mquake::Format::from_options(opts)?.for_file(path),
        ),
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
