//! What an evaluation's answers come to, the part KRE and RECALL share: the files read (and
//! the data identity hashed on the way), each job's [`Asked`], and [`Outcomes`] (each file's
//! scores and the prediction lines), where a benchmark's [`Judge`] scores one reply.

use crate::report::{Identity, Predictions};
use crate::run::Reply;
use crate::scores::Scores;
use crate::source::{load, Source};
use crate::{EvalError, EvalOptions};
use cb_audit::{FileKind, Row};
use serde_json::{json, Map, Value};
use std::path::Path;
use std::sync::Arc;

/// What every job of an evaluation asks: a row of a file in a setting with a seed.
pub(crate) struct Asked {
    /// The file's index among those read.
    pub(crate) file: usize,
    pub(crate) row: Arc<Row>,
    /// The row's [`crate::report::row_sha256`].
    pub(crate) hash: Arc<str>,
    pub(crate) setting: &'static str,
    pub(crate) seed: u64,
}

/// The group a prediction line goes to (domain, setting and seed; lines of one group keep
/// their order).
pub(crate) type Group = (String, usize, u64);

/// Where one judged reply goes: its file, the file's scores, and its prediction line so far.
pub(crate) struct Judged<'a> {
    pub(crate) file: &'a Source,
    pub(crate) scores: &'a mut Scores,
    pub(crate) line: &'a mut Map<String, Value>,
}

/// A benchmark's part: the files it reads, and in recording one reply what its job asked,
/// what its prediction line says beyond the fields every benchmark writes, and the score it
/// adds.
pub(crate) trait Judge {
    /// The benchmark's name, the line's first field.
    const BENCHMARK: &'static str;
    /// Whether the benchmark reads files of `kind`.
    fn reads(kind: FileKind) -> bool;
    /// The domain of `row`, a row of the file at `path`.
    fn domain(path: &Path, row: &Row) -> String;
    /// A data error if `row` of `f` cannot be asked.
    fn check(f: &Source, row: &Row) -> Result<(), EvalError>;
    /// What the job asked.
    fn asked(&self) -> &Asked;
    /// The task of file `f`, said after its domain (RECALL's), if any.
    fn task(_f: &Source) -> Option<&'static str> {
        None
    }
    /// The context the question came with, said after the item (KRE's), if any.
    fn context(&self) -> Option<&'static str> {
        None
    }
    /// Scores reply `r` into its file's scores and appends what the line says of it (the
    /// choice or the text's scores) to the line; returns the group the line goes to.
    fn judge(&self, r: &Reply, to: Judged<'_>) -> Result<Group, EvalError>;
}

/// What the answers come to: each file's scores and the prediction lines (spooled, grouped).
pub(crate) struct Outcomes {
    pub(crate) scores: Vec<Scores>,
    pub(crate) predictions: Predictions,
}

impl Outcomes {
    /// No answer yet: `scores` (one a file, empty) and no prediction line.
    pub(crate) fn new(scores: Vec<Scores>) -> Self {
        Self {
            scores,
            predictions: Predictions::default(),
        }
    }

    /// Scores job `m`'s reply `r` and writes its prediction line: benchmark, domain, the
    /// task, setting, seed, item, the context, the prompt key and the raw answer, then what
    /// the judge says, then the error (if any) and the row's hash.
    pub(crate) fn record<J: Judge>(
        &mut self,
        files: &[Source],
        m: &J,
        r: &Reply,
    ) -> Result<(), EvalError> {
        let a = m.asked();
        let f = &files[a.file];
        let mut line = Map::new();
        line.insert("benchmark".into(), json!(J::BENCHMARK));
        line.insert("domain".into(), json!(f.domain));
        if let Some(task) = J::task(f) {
            line.insert("task".into(), json!(task));
        }
        line.insert("setting".into(), json!(a.setting));
        line.insert("seed".into(), json!(a.seed));
        line.insert("item".into(), json!(a.row.id));
        if let Some(context) = m.context() {
            line.insert("context".into(), json!(context));
        }
        line.insert("prompt_key".into(), json!(r.key));
        line.insert("raw".into(), json!(r.raw));
        let to = Judged {
            file: f,
            scores: &mut self.scores[a.file],
            line: &mut line,
        };
        let group = m.judge(r, to)?;
        if let Some(e) = &r.error {
            line.insert("error".into(), json!(e));
        }
        line.insert("row_sha256".into(), json!(a.hash));
        self.predictions.push(group, &Value::Object(line))
    }

    /// The prediction lines, written out of their spool.
    pub(crate) fn finish(mut self) -> Result<Predictions, EvalError> {
        self.predictions.flush()?;
        Ok(self.predictions)
    }
}

/// The files of `opts.data` that benchmark `J` reads, each row checked and hashed into the
/// data's identity (with its domain).
pub(crate) fn load_checked<J: Judge>(
    opts: &EvalOptions,
) -> Result<(Vec<Source>, Identity), EvalError> {
    let mut identity = Identity::default();
    let files = load(opts, J::reads, J::domain, &mut |src, row| {
        identity.add(&src.domain, row);
        J::check(src, row)
    })?;
    Ok((files, identity))
}
