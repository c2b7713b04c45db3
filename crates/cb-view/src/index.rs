//! What the viewer knows of a folder at one moment (a [`Snapshot`]): its domains, data files
//! and rejects, and per row a few bytes (offset, failing checks, the reader's verdict), from
//! which every list and filter is answered; the records themselves are read again from their
//! offsets when a page shows them.
//!
//! A snapshot is made by the audit (`cb_audit::audit_paths`: checks, findings, the sample's
//! outlines) and one more streaming pass over the files (offsets and reader verdicts); it is
//! made again when the files change (a build renames its finished files into place).

use crate::error::ViewError;
use crate::record::{self, Layout};
use crate::stats::ReaderSaid;
use cb_audit::{FileKind, CHECKS};
use rand::seq::SliceRandom;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

// A row's failing checks are one bit each.
const _: () = assert!(CHECKS.len() <= 64);

/// A reader's verdict on a row, as its `reader` column says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// No reader read it (an offline build, `--reader none`, released rows).
    None,
    /// Every check passed.
    Passed,
    /// Some check (the control included) failed.
    Failed,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::None => "none",
            Verdict::Passed => "passed",
            Verdict::Failed => "failed",
        }
    }
}

/// What the snapshot keeps of a row (24 bytes).
#[derive(Debug, Clone, Copy)]
pub struct RowFacts {
    pub offset: u64,
    /// Bit `i`: the row fails `CHECKS[i]`.
    pub checks: u64,
    pub file: u16,
    pub reader: Verdict,
    /// Several readers whose picks differ on some check.
    pub panel_split: bool,
}

/// One data file.
#[derive(Debug, Clone)]
pub struct DataFile {
    pub path: PathBuf,
    pub kind: FileKind,
    pub layout: Layout,
    pub domain: usize,
    /// The place of its first row among all rows.
    pub first: usize,
    pub rows: usize,
}

/// One reject, as the snapshot keeps it.
#[derive(Debug, Clone, Copy)]
pub struct RejectFacts {
    pub offset: u64,
    /// Index into [`Snapshot::reasons`].
    pub reason: u16,
    /// The rows it holds under `row`: those of an item the reader refused
    /// (`reader_disagrees`: KRE one, RECALL its sample's), 0 for any other reject.
    pub refused_rows: u8,
}

/// A folder of a build's outputs (`kre/cose`), or the folder of a file viewed alone.
#[derive(Debug, Clone, Default)]
pub struct Domain {
    /// Relative to the viewed path (`kre/cose`).
    pub name: String,
    pub dir: PathBuf,
    pub files: Vec<usize>,
    pub rows: usize,
    pub rejects_file: Option<PathBuf>,
    pub rejects: Vec<RejectFacts>,
}

/// A row of the rating sample: where it is and its `item_id` (as on the review sheet).
#[derive(Debug, Clone)]
pub struct SampleItem {
    pub at: Sampled,
    pub item_id: String,
}

/// Where a row of the rating sample is: a row of the files (the reader let it stand), or a
/// row the reader refused, kept in a reject's `row` (its `part`-th: KRE's only row, RECALL's
/// `qa_a`, `qa_na`... and `text_generation` rows in that order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sampled {
    Row(usize),
    Refused {
        domain: usize,
        reject: usize,
        part: u8,
    },
}

/// The viewed folder at one moment.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub root: PathBuf,
    pub domains: Vec<Domain>,
    pub files: Vec<DataFile>,
    pub rows: Vec<RowFacts>,
    /// Reject reason codes, in order of first appearance.
    pub reasons: Vec<String>,
    pub report: Option<cb_audit::Report>,
    /// The rating sample (drawn by `add_sample`: the half-and-half rule is there), in the
    /// order raters are shown it.
    pub sample: Vec<SampleItem>,
    /// How many rows of the sample the reader refused.
    pub sample_refused: usize,
    /// Reader models named in the rows' `reader` columns (the first reader, then a panel's).
    pub readers: Vec<String>,
    pub fingerprint: Fingerprint,
    /// The audit has run (checks and the sample are known).
    pub audited: bool,
}

/// Names, sizes and times of the files a snapshot was made from; a change makes a new one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fingerprint(Vec<(PathBuf, u64, u128)>);

/// Sample size and seed of the rating sample (the review sheet's: `audit --sheet`).
#[derive(Debug, Clone, Copy)]
pub struct SampleSpec {
    pub size: usize,
    pub seed: u64,
}

/// The folders under `root` (itself included) that hold a build's outputs, or are being
/// written by one: data files, `rejects.jsonl`, `manifest.json` or temporary files.
pub fn domain_dirs(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        entries.sort();
        let mut is_domain = false;
        for p in &entries {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
            let name = name.unwrap_or_default();
            if p.is_dir() {
                if depth < 6 && !name.starts_with('.') {
                    walk(p, depth + 1, out);
                }
            } else if name.ends_with(".jsonl") || name.ends_with(".json") || name.contains(".tmp-")
            {
                is_domain = true;
            }
        }
        if is_domain {
            out.push(dir.to_path_buf());
        }
    }
    let mut out = Vec::new();
    if root.is_dir() {
        walk(root, 0, &mut out);
    } else if let Some(parent) = root.parent() {
        out.push(parent.to_path_buf());
    }
    out.sort();
    out
}

/// The fingerprint of what a snapshot of `root` reads.
pub fn fingerprint(root: &Path) -> Fingerprint {
    let mut out = Vec::new();
    let dirs = if root.is_dir() {
        domain_dirs(root)
    } else {
        Vec::new()
    };
    let mut files: Vec<PathBuf> = dirs
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|rd| rd.flatten().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().map(|n| n.to_string_lossy().into_owned());
            let n = n.unwrap_or_default();
            !n.starts_with('.') && (n.ends_with(".json") || n.ends_with(".jsonl"))
        })
        .collect();
    if root.is_file() {
        files.push(root.to_path_buf());
    }
    files.sort();
    for p in files {
        if let Ok(m) = std::fs::metadata(&p) {
            let t = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
            out.push((p, m.len(), t.map_or(0, |t| t.as_nanos())));
        }
    }
    Fingerprint(out)
}

fn name_of(root: &Path, dir: &Path) -> String {
    match dir.strip_prefix(root) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| dir.display().to_string()),
    }
}

impl Snapshot {
    /// Reads `root` (a folder or one file): the audit, then the offsets and verdicts.
    pub fn read(root: &Path, spec: SampleSpec) -> Result<Snapshot, ViewError> {
        Snapshot::index(root)?.audit(spec)
    }

    /// The first reading: folders, files, each row's offset and reader verdict, the rejects
    /// (no audit yet: no checks, no sample). A record that is not JSON is an error naming its
    /// file and line (or record).
    pub fn index(root: &Path) -> Result<Snapshot, ViewError> {
        let fingerprint = fingerprint(root);
        let mut s = Snapshot {
            root: root.to_path_buf(),
            fingerprint,
            ..Snapshot::default()
        };
        for dir in domain_dirs(root) {
            let rejects = dir.join("rejects.jsonl");
            s.domains.push(Domain {
                name: name_of(root, &dir),
                rejects_file: (root.is_dir() && rejects.is_file()).then_some(rejects),
                dir,
                ..Domain::default()
            });
        }
        let found = match cb_audit::load::find_files(&[root.to_path_buf()]) {
            Ok(f) => f.files,
            // A folder whose build has not written a data file yet.
            Err(cb_audit::AuditError::Input(_)) if root.is_dir() => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        for (path, kind) in found {
            s.add_file(path, kind)?;
        }
        for d in 0..s.domains.len() {
            s.add_rejects(d)?;
        }
        Ok(s)
    }

    /// Refuses what holds no benchmark rows: a file with none, a file whose first record is
    /// not one (a source file, say), a folder whose JSON files hold none. A folder with no
    /// JSON file at all is a build still to write them, and is served.
    pub fn check_rows(&self) -> Result<(), ViewError> {
        let refuse = |path: &Path, message: String| ViewError::Record {
            path: path.display().to_string(),
            message,
        };
        for f in &self.files {
            if f.rows == 0 && self.root.is_file() {
                return Err(refuse(&f.path, "holds no benchmark rows".into()));
            }
            if f.rows > 0 {
                self.row(f.first).map_err(|e| {
                    refuse(
                        &f.path,
                        format!("its first record is not a benchmark row: {e}"),
                    )
                })?;
            }
        }
        let data: Vec<&PathBuf> = (self.fingerprint.0.iter())
            .map(|(p, _, _)| p)
            .filter(|p| {
                let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
                !cb_audit::load::NEVER.contains(&name.unwrap_or_default().as_str())
            })
            .collect();
        if self.files.is_empty() && !data.is_empty() {
            let names: Vec<String> = data.iter().map(|p| p.display().to_string()).collect();
            return Err(refuse(
                &self.root,
                format!(
                    "holds no benchmark rows (its JSON files are not benchmark files: {})",
                    names.join(", ")
                ),
            ));
        }
        Ok(())
    }

    /// The second reading: the audit of every row (its checks), and the rating sample.
    pub fn audit(mut self, spec: SampleSpec) -> Result<Snapshot, ViewError> {
        if !self.files.is_empty() {
            self.report = Some(cb_audit::audit_paths(&[self.root.clone()])?);
        }
        self.check_against_audit()?;
        self.add_findings()?;
        self.add_sample(spec)?;
        self.audited = true;
        Ok(self)
    }

    fn domain_of(&mut self, dir: &Path) -> usize {
        if let Some(i) = self.domains.iter().position(|d| d.dir == dir) {
            return i;
        }
        self.domains.push(Domain {
            name: name_of(&self.root, dir),
            dir: dir.to_path_buf(),
            ..Domain::default()
        });
        self.domains.len() - 1
    }

    fn add_file(&mut self, path: PathBuf, kind: FileKind) -> Result<(), ViewError> {
        let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
        let domain = self.domain_of(&dir);
        let file = self.files.len() as u16;
        let layout = Layout::of(kind);
        let first = self.rows.len();
        let mut readers = std::mem::take(&mut self.readers);
        let mut push = |offset: u64, v: &Value| {
            let (reader, panel_split) = verdict_of(v.get("reader"), &mut readers);
            self.rows.push(RowFacts {
                offset,
                checks: 0,
                file,
                reader,
                panel_split,
            });
        };
        match layout {
            Layout::Lines => record::for_each_line(&path, |offset, number, line| {
                let v: Value = serde_json::from_str(line).map_err(|e| ViewError::Record {
                    path: path.display().to_string(),
                    message: format!("line {number}: {e}"),
                })?;
                push(offset, &v);
                Ok(())
            })?,
            Layout::Array => {
                for offset in record::array_offsets(&path)? {
                    let v = record::read_at(&path, layout, offset)?;
                    push(offset, &v);
                }
            }
        }
        self.readers = readers;
        let rows = self.rows.len() - first;
        self.domains[domain].rows += rows;
        self.domains[domain].files.push(self.files.len());
        self.files.push(DataFile {
            path,
            kind,
            layout,
            domain,
            first,
            rows,
        });
        Ok(())
    }

    fn check_against_audit(&self) -> Result<(), ViewError> {
        let audited = self.report.as_ref().map_or(0, |r| r.rows);
        if audited != self.rows.len() {
            return Err(ViewError::Record {
                path: self.root.display().to_string(),
                message: format!(
                    "the files changed while they were read ({audited} rows audited, {} indexed); read again shortly",
                    self.rows.len()
                ),
            });
        }
        Ok(())
    }

    fn add_findings(&mut self) -> Result<(), ViewError> {
        let Some(report) = &self.report else {
            return Ok(());
        };
        for f in report.findings.iter()? {
            let (row, f) = f?;
            if let Some(bit) = CHECKS.iter().position(|c| c.code == f.check) {
                if let Some(r) = self.rows.get_mut(row) {
                    r.checks |= 1 << bit;
                }
            }
        }
        Ok(())
    }

    fn add_rejects(&mut self, d: usize) -> Result<(), ViewError> {
        let Some(path) = self.domains[d].rejects_file.clone() else {
            return Ok(());
        };
        let mut ids: BTreeMap<String, u16> = self
            .reasons
            .iter()
            .enumerate()
            .map(|(i, r)| (r.clone(), i as u16))
            .collect();
        let mut rejects = Vec::new();
        record::for_each_line(&path, |offset, number, line| {
            let v: Value = serde_json::from_str(line).map_err(|e| ViewError::Record {
                path: path.display().to_string(),
                message: format!("line {number}: {e}"),
            })?;
            let reason = v.get("reason").and_then(Value::as_str).unwrap_or("unknown");
            let next = ids.len() as u16;
            let id = *ids.entry(reason.to_owned()).or_insert(next);
            if id == next {
                self.reasons.push(reason.to_owned());
            }
            let refused = v.get("row").map_or(0, |r| refused_rows(r).len());
            rejects.push(RejectFacts {
                offset,
                reason: id,
                refused_rows: refused.min(u8::MAX as usize) as u8,
            });
            Ok(())
        })?;
        self.domains[d].rejects = rejects;
        Ok(())
    }

    /// The rating sample, drawn blind to the reader's verdict: with rows the reader refused
    /// (rejects holding their `row`), half of it (rounded down) is drawn from those, seeded,
    /// and the rest is the review sheet's stratified sample of the files' rows (the reader let
    /// them stand); either side short of its half leaves the rest to the other. The two are
    /// shown shuffled together (seeded), so a row's place does not tell its verdict. Without
    /// refused rows the sample is the review sheet's (`audit --sheet`, same size and seed),
    /// in file order.
    fn add_sample(&mut self, spec: SampleSpec) -> Result<(), ViewError> {
        let mut pool: Vec<Sampled> = Vec::new();
        for (domain, d) in self.domains.iter().enumerate() {
            for (reject, r) in d.rejects.iter().enumerate() {
                pool.extend((0..r.refused_rows).map(|part| Sampled::Refused {
                    domain,
                    reject,
                    part,
                }));
            }
        }
        let kept = self.report.as_ref().map_or(0, |r| r.outline.len());
        let mut refused = pool.len().min(spec.size / 2);
        let keep = kept.min(spec.size - refused);
        refused = pool.len().min(spec.size - keep);
        let mut sample = Vec::with_capacity(keep + refused);
        if let Some(report) = &self.report {
            let rows = cb_audit::sample::stratified_sample(report, keep, spec.seed);
            let items = report.items_at(&rows)?;
            sample.extend(rows.into_iter().zip(items).map(|(row, item)| SampleItem {
                at: Sampled::Row(row),
                item_id: item.item_id,
            }));
        }
        if refused > 0 {
            let mut rng = cb_model::item_rng(spec.seed, "view-sample", "refused", "draw");
            pool.shuffle(&mut rng);
            for at in pool.into_iter().take(refused) {
                let item_id = self.sampled(at)?.1.item_id;
                sample.push(SampleItem { at, item_id });
            }
            let mut rng = cb_model::item_rng(spec.seed, "view-sample", "both", "order");
            sample.shuffle(&mut rng);
        }
        self.sample = sample;
        self.sample_refused = refused;
        Ok(())
    }

    /// Reads a row of the rating sample again: its record and its item, a row the reader
    /// refused as its file would hold it (the domain's KRE file, or the RECALL file of its
    /// part), so that the page shows it as it shows any other.
    pub fn sampled(&self, at: Sampled) -> Result<(Value, cb_audit::Item), ViewError> {
        let (domain, reject, part) = match at {
            Sampled::Row(row) => return self.row(row),
            Sampled::Refused {
                domain,
                reject,
                part,
            } => (domain, reject, part as usize),
        };
        let record = self.reject(domain, reject)?;
        let d = &self.domains[domain];
        let (name, v) = refused_rows(&record["row"])
            .into_iter()
            .nth(part)
            .ok_or_else(|| ViewError::NotFound(format!("no refused row {part} in {}", d.name)))?;
        // KRE: the domain's file (`squad.jsonl`); ConflictBank-style: its rows file; as the
        // rows the reader let stand.
        let own = (d.files.iter().map(|&f| &self.files[f])).find(|f| {
            matches!(
                f.kind,
                FileKind::KreJson | FileKind::KreJsonl | FileKind::ConflictBank
            )
        });
        let path = match name {
            Some(name) => d.dir.join(name),
            None => own.map_or_else(
                || {
                    let stem = d.dir.file_name().unwrap_or_default().to_string_lossy();
                    d.dir.join(format!("{stem}.jsonl"))
                },
                |f| f.path.clone(),
            ),
        };
        let kind = match name {
            Some("qa_a.jsonl") => FileKind::QaA,
            Some("qa_na.jsonl") => FileKind::QaNa,
            Some(_) => FileKind::TextGeneration,
            None if own.is_some_and(|f| f.kind == FileKind::ConflictBank) => FileKind::ConflictBank,
            None => FileKind::KreJsonl,
        };
        let names = cb_audit::load::RowNames::of(&path);
        let parsed = names.row(
            kind,
            part,
            &format!("rejects.jsonl record {reject}"),
            v.clone(),
        )?;
        Ok((v.clone(), cb_audit::item_of(parsed, Vec::new())))
    }

    /// A file's name as links give it: its path under the viewed folder (its name, when a
    /// file is viewed alone).
    pub fn file_name(&self, file: &DataFile) -> String {
        match file.path.strip_prefix(&self.root) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel.to_string_lossy().into_owned(),
            _ => file
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        }
    }

    /// The address of a row's page: its file and its place there, so that it names the same
    /// row when other files come.
    pub fn row_link(&self, row: usize) -> String {
        let Some(file) = self.file_of(row) else {
            return "/rows".into();
        };
        let n = (row - file.first).to_string();
        crate::templates::link("/row", [("file", self.file_name(file).as_str()), ("n", &n)])
    }

    /// The row at place `n` of the file named `name` (as [`Snapshot::file_name`] gives it).
    pub fn find_row(&self, name: &str, n: usize) -> Result<usize, ViewError> {
        let file = self
            .files
            .iter()
            .find(|f| self.file_name(f) == name)
            .ok_or_else(|| ViewError::NotFound(format!("no data file {name}")))?;
        if n >= file.rows {
            return Err(ViewError::NotFound(format!(
                "{name} has {} rows: no row {n}",
                file.rows
            )));
        }
        Ok(file.first + n)
    }

    /// The file a row is in.
    pub fn file_of(&self, row: usize) -> Option<&DataFile> {
        self.rows.get(row).map(|r| &self.files[r.file as usize])
    }

    /// Reads row `row` again: its record and its item (as the audit shows it).
    pub fn row(&self, row: usize) -> Result<(Value, cb_audit::Item), ViewError> {
        let facts = self
            .rows
            .get(row)
            .ok_or_else(|| ViewError::NotFound(format!("no row {row}")))?;
        let file = &self.files[facts.file as usize];
        let v = record::read_at(&file.path, file.layout, facts.offset)?;
        let names = cb_audit::load::RowNames::of(&file.path);
        let index = row - file.first;
        let parsed = names.row(file.kind, index, &format!("row {index}"), v.clone())?;
        let failed = CHECKS
            .iter()
            .enumerate()
            .filter(|(i, _)| facts.checks & (1 << i) != 0)
            .map(|(_, c)| (c.code.to_owned(), String::new()))
            .collect();
        Ok((v, cb_audit::item_of(parsed, failed)))
    }

    /// Reads reject `i` of domain `d` again.
    pub fn reject(&self, d: usize, i: usize) -> Result<Value, ViewError> {
        let dom = self
            .domains
            .get(d)
            .ok_or_else(|| ViewError::NotFound(format!("no domain {d}")))?;
        let (Some(path), Some(r)) = (&dom.rejects_file, dom.rejects.get(i)) else {
            return Err(ViewError::NotFound(format!(
                "no reject {i} in {}",
                dom.name
            )));
        };
        record::read_at(path, Layout::Lines, r.offset)
    }
}

/// The rows of a refused item's `row` (a reject's), each with the RECALL file that would
/// hold it (`None`: KRE, the domain's file).
fn refused_rows(row: &Value) -> Vec<(Option<&'static str>, &Value)> {
    if !row.is_object() {
        return Vec::new();
    }
    if row.get("qa_a").is_none() {
        return vec![(None, row)];
    }
    let qa_na = row["qa_na"].as_array().into_iter().flatten();
    std::iter::once((Some("qa_a.jsonl"), &row["qa_a"]))
        .chain(qa_na.map(|r| (Some("qa_na.jsonl"), r)))
        .chain([(Some("text_generation.jsonl"), &row["text_generation"])])
        .filter(|(_, r)| r.is_object())
        .collect()
}

/// The verdict of a `reader` column and whether a panel's picks differ; reader models are
/// added to `readers` the first time they are met.
fn verdict_of(reader: Option<&Value>, readers: &mut Vec<String>) -> (Verdict, bool) {
    let Some(r) = reader.filter(|r| r.is_object()) else {
        return (Verdict::None, false);
    };
    let mut note = |m: Option<&str>| {
        if let Some(m) = m.filter(|m| !readers.iter().any(|r| r == m)) {
            readers.push(m.to_owned());
        }
    };
    note(r.get("model").and_then(Value::as_str));
    let checks = r.get("checks").and_then(Value::as_array);
    let passed = checks.is_some_and(|c| c.iter().all(|v| v["passed"] == true));
    let mut split = false;
    if let Some(panel) = r.get("panel").and_then(Value::as_array) {
        let mut picks: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for p in panel {
            note(p.get("model").and_then(Value::as_str));
            for c in p
                .get("checks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let name = c["check"].as_str().unwrap_or("").to_owned();
                picks.entry(name).or_default().push(c["pick"].clone());
            }
        }
        split = picks.values().any(|v| v.windows(2).any(|w| w[0] != w[1]));
    }
    let verdict = if passed {
        Verdict::Passed
    } else {
        Verdict::Failed
    };
    (verdict, split)
}

/// What one reader said of a row on the scales a rater uses: whether it was misled (its
/// first check, KRE's `negative`, passed), whether it told the answer from the options
/// alone (`answer_set` passed) and whether, asked as an editor, it found the context
/// plausible (`plausible` passed); `None` where it did not say.
pub fn reader_scales(record: &Value) -> Vec<ReaderSaid> {
    each_reader(record, |model, checks| {
        let passed = |name: &str| {
            checks
                .iter()
                .find(|c| c["check"] == name)
                .and_then(|c| c["passed"].as_bool())
        };
        ReaderSaid {
            model: model.to_owned(),
            misled: checks.first().and_then(|c| c["passed"].as_bool()),
            answer_set: passed("answer_set"),
            plausible: passed("plausible"),
            contradicts: None,
        }
    })
}

/// `one` applied to each reader of a row's `reader` column (each of a panel, or the single
/// reader), given its model's name and its checks; nothing where no reader read the row.
pub(crate) fn each_reader(
    record: &Value,
    one: impl Fn(&str, &[Value]) -> ReaderSaid,
) -> Vec<ReaderSaid> {
    let Some(r) = record.get("reader").filter(|r| r.is_object()) else {
        return Vec::new();
    };
    let said = |model: &Value, checks: &Value| {
        let checks = checks.as_array().map(Vec::as_slice).unwrap_or_default();
        one(model.as_str().unwrap_or("reader"), checks)
    };
    match r.get("panel").and_then(Value::as_array) {
        Some(panel) if !panel.is_empty() => panel
            .iter()
            .map(|p| said(&p["model"], &p["checks"]))
            .collect(),
        _ => vec![said(&r["model"], &r["checks"])],
    }
}
