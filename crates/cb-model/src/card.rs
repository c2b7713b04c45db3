//! What a build tells the Hugging Face Hub about itself: the metadata of its dataset card
//! (from the recipe's `[card]` table, completed by the engine) and the data files that the
//! card's `configs` name. Both are kept in the manifest, so that a card over several builds
//! (`generated/<benchmark>/README.md`) is written from the manifests on disk alone.

use serde::{Deserialize, Serialize};

/// The Hub metadata of one domain.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CardMeta {
    /// The title the Hub shows.
    pub pretty_name: String,
    /// The split the rows are published under: the split of the source they come from
    /// (`validation` for a dev set, `test`), or `train`, the Hub's name for data without
    /// splits.
    pub split: String,
    /// Which part of the source that is, in words (for the card's body).
    pub source_split: String,
    /// ISO 639-1 codes of the text.
    pub language: Vec<String>,
    /// Hub task categories and task ids; the engine fills them from the output format when
    /// the recipe leaves them empty.
    pub task_categories: Vec<String>,
    pub task_ids: Vec<String>,
    /// Hub `source_datasets`: `extended|<hub id>`, or `extended|other-<name>` for a source
    /// that is not on the Hub.
    pub source_datasets: Vec<String>,
    /// The license of every source, as its publisher states it.
    pub licenses: Vec<SourceLicense>,
    /// What the reader check's control (the golden context leading to the golden answer)
    /// measures on this domain, where its golden contexts cannot be relied on to lead to the
    /// golden answer; the card says it beside the reader. Empty (and not written) where the
    /// control measures reading.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub control_measures: String,
}

/// The license of one source.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceLicense {
    /// The source, as the card names it (e.g. `SQuAD v2.0`).
    pub source: String,
    /// The Hub's license identifier (`cc-by-sa-4.0`, `mit`, ...; `unknown` when the
    /// publisher states none).
    pub license: String,
    /// Where and how the publisher states it.
    pub stated: String,
}

/// One data file of a build: the config that loads it, its path inside the build folder,
/// the split, the number of rows and of bytes. A file with no rows gets no config (the
/// `datasets` library cannot load an empty split) but is still listed here.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataFile {
    pub config: String,
    pub path: String,
    pub split: String,
    pub rows: u64,
    pub bytes: u64,
}
