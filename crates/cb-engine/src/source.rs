//! From source files to items: read the primary source record by record, look each record
//! up in the joined side tables, map its fields with the recipe's expressions, apply the
//! filters. Everything that does not become an item becomes a [`Reject`] at its position.
//!
//! [`Source::open`] reads the joined side tables (held in memory, keyed by id: the one part
//! of the sources that is loaded whole) and hashes the input files; each [`Source::pass`]
//! then streams the primary source from its start, so a build can make a first pass (the
//! steps' indexes) and a second (the steps) without holding any item between them. What a
//! pass keeps of the records it has read is [`Seen`], the ids read so far: a 16-byte hash
//! and a place (about 40 bytes a record with the table's overhead), never the records.

pub use crate::expr::eval;
use crate::inputs::Watched;
pub use crate::inputs::{resolve, SourceOptions};
use crate::join::Table;
use crate::recipe::{toml_to_json, JoinSpec, Recipe};
use crate::{EngineError, Item};
use cb_model::manifest::InputFile;
use cb_model::{Reject, SourceRecord, StageCounts};
use cb_readers::ReadError;
use cb_step::template::environment;
use minijinja::Environment;
use serde_json::{Map, Value};
use std::collections::{hash_map, BTreeMap, HashMap};
use std::path::PathBuf;

/// What reading produced: items and rejects by position (only [`load`] collects them; a
/// build streams them), filter counts, files read.
#[derive(Debug, Default)]
pub struct Loaded {
    pub entries: Vec<Result<Item, Reject>>,
    pub inputs: Vec<InputFile>,
    /// Counts per stage name (`read`, `join`, `map`, `filter`): (in, rejected, reasons).
    pub stages: Vec<cb_model::StageCounts>,
    pub filtered: BTreeMap<String, u64>,
}

/// One primary record after loading: the item, or the reject at its position.
pub type Entry = Result<Item, Reject>;

fn read_error_reject(e: &cb_readers::ReadError, index: usize) -> Reject {
    let (id, origin, detail) = match e {
        cb_readers::ReadError::Record {
            file,
            line,
            id,
            message,
            ..
        } => (id.clone(), format!("{file}:{line}"), message.clone()),
        other => (None, String::new(), other.to_string()),
    };
    Reject {
        id: id.unwrap_or_else(|| format!("#{index}")),
        origin,
        stage: "read".into(),
        reason: e.code().to_owned(),
        detail,
        raw_response: None,
        attempts: 0,
        row: None,
    }
}

/// The stages a record goes through before the steps, in flow order; their counts are the
/// first entries of the manifest's `stages`, under these names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Read,
    Join,
    Map,
    Filter,
}

impl Stage {
    const ALL: [Stage; 4] = [Stage::Read, Stage::Join, Stage::Map, Stage::Filter];

    fn name(self) -> &'static str {
        match self {
            Stage::Read => "read",
            Stage::Join => "join",
            Stage::Map => "map",
            Stage::Filter => "filter",
        }
    }
}

/// Where a record ended: an item, or a reject by a stage.
type Ended = Result<Item, (Stage, Reject)>;

/// Reads, joins, maps and filters the recipe's source: every primary record becomes an item
/// or a reject at its position, in source order, all of them collected (for tests and
/// tools; a build streams them with [`Source::pass`]).
pub fn load(recipe: &Recipe, opts: &SourceOptions) -> Result<Loaded, EngineError> {
    let source = Source::open(recipe, opts)?;
    let mut pass = source.pass()?;
    let entries = pass.by_ref().collect::<Result<Vec<_>, _>>()?;
    let (stages, filtered) = pass.finish();
    Ok(Loaded {
        entries,
        inputs: source.inputs,
        stages,
        filtered,
    })
}

/// A recipe's sources, opened: the joined side tables read, the files to stream resolved
/// and hashed, and watched until the last pass ends.
pub struct Source<'r> {
    recipe: &'r Recipe,
    opts: &'r SourceOptions,
    env: Environment<'static>,
    files: Vec<PathBuf>,
    tables: Vec<(&'r JoinSpec, Table)>,
    /// The files read (the joined sources' first, then the primary source's).
    pub inputs: Vec<InputFile>,
    /// The same files, watched: each pass ends by checking that none changed since it was
    /// hashed.
    watched: Vec<Watched>,
}

impl<'r> Source<'r> {
    /// Resolves the primary source's files, reads the joined side tables and hashes every
    /// input file.
    pub fn open(recipe: &'r Recipe, opts: &'r SourceOptions) -> Result<Self, EngineError> {
        let mut watched = Vec::new();
        let files = resolve(&recipe.source, opts)?;
        let tables = load_joins(recipe, opts, &mut watched)?;
        for path in &files {
            watched.push(Watched::new(&recipe.source.name, path)?);
        }
        Ok(Source {
            recipe,
            opts,
            env: environment(),
            files,
            tables,
            inputs: watched.iter().map(|w| w.input.clone()).collect(),
            watched,
        })
    }

    /// A pass over the primary source from its first record: an iterator of [`Entry`]s in
    /// source order (an `Err` stops the build: a fatal read error, a malformed record with
    /// `--strict`, or, after the last record, an input file that changed since it was hashed).
    pub fn pass(&self) -> Result<Pass<'_, 'r>, EngineError> {
        self.pass_to(self.limit())
    }

    /// A pass over the whole primary source, `--limit` aside: the first pass, which fills
    /// the views, so that a step draws from every item of the source (another object of the
    /// relation) and a limited build's rows are the first rows of the whole build. A record
    /// past the limit is read for the views only: a malformed one there is a reject of this
    /// pass, never a stop of a `--strict` build. A reader that selects records itself
    /// (EventKG) still takes the limit: its selection is the source.
    pub fn pass_whole(&self) -> Result<Pass<'_, 'r>, EngineError> {
        self.pass_to(usize::MAX)
    }

    /// The records a build reads: at most `--limit`, unless the reader takes it itself.
    pub fn limit(&self) -> usize {
        let selects = cb_readers::selects_records(&self.recipe.source.reader);
        self.opts.limit.filter(|_| !selects).unwrap_or(usize::MAX)
    }

    fn pass_to(&self, records: usize) -> Result<Pass<'_, 'r>, EngineError> {
        Ok(Pass {
            source: self,
            records: read(self.recipe, self.opts, &self.files)?
                .take(records)
                .enumerate(),
            seen: Seen::default(),
            tally: Tally::new(),
            filtered: BTreeMap::new(),
            ended: false,
        })
    }

    /// Whether every input file still holds what was hashed for the manifest.
    pub fn unchanged(&self) -> Result<(), EngineError> {
        self.watched.iter().try_for_each(Watched::check)
    }
}

/// One pass over the primary source (see [`Source::pass`]).
pub struct Pass<'s, 'r> {
    source: &'s Source<'r>,
    records: std::iter::Enumerate<Records>,
    seen: Seen,
    tally: Tally,
    filtered: BTreeMap<String, u64>,
    /// Whether the last record was read (and the inputs checked).
    ended: bool,
}

type Records = std::iter::Take<cb_readers::Records>;

impl Pass<'_, '_> {
    /// Whether a malformed record at `index` stops the build (`--strict`, within the limit).
    fn strict_at(&self, index: usize) -> bool {
        self.source.opts.strict && index < self.source.limit()
    }
}

impl Iterator for Pass<'_, '_> {
    type Item = Result<Entry, EngineError>;

    fn next(&mut self) -> Option<Self::Item> {
        let Some((index, rec)) = self.records.next() else {
            // The pass read what the manifest names, or it stops the build.
            let ended = std::mem::replace(&mut self.ended, true);
            return (!ended)
                .then(|| self.source.unchanged().err())
                .flatten()
                .map(Err);
        };
        let src = self.source;
        let strict = self.strict_at(index);
        let entry = match accept(rec, index, &mut self.seen, strict) {
            Err(e) => return Some(Err(e)),
            Ok(Ok(rec)) => to_item(&src.env, src.recipe, &src.tables, index, &rec)
                .map_err(|(stage, why)| (stage, reject(&rec, stage, why))),
            Ok(Err(r)) => Err((Stage::Read, r)),
        };
        self.tally.count(&entry);
        if let Err((Stage::Filter, r)) = &entry {
            *self.filtered.entry(r.reason.clone()).or_default() += 1;
        }
        Some(Ok(entry.map_err(|(_, r)| r)))
    }
}

impl Pass<'_, '_> {
    /// The counts of the records read so far (all of them once the pass has ended): each
    /// loading stage's, and the filtered ones by reason.
    pub fn finish(self) -> (Vec<StageCounts>, BTreeMap<String, u64>) {
        (self.tally.finish(), self.filtered)
    }
}

/// The ids a pass has read, for the `duplicate_id` rejects: per id a 128-bit hash (the first
/// 16 bytes of its SHA-256) and where it was read (the file as an index into the files seen,
/// the line), about 40 bytes a record with the table's overhead. Two different ids share a
/// hash with a chance of about n^2 / 2^129 (1e-27 for a million records).
#[derive(Default)]
struct Seen {
    first: HashMap<u128, (u32, u64)>,
    files: Vec<String>,
}

impl Seen {
    /// Records where `id` was read; where it was first read when it was read before.
    fn first_read(&mut self, id: &str, origin: &cb_model::Origin) -> Option<String> {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(id.as_bytes());
        let key = u128::from_be_bytes(digest[..16].try_into().expect("16 of 32 bytes"));
        match self.first.entry(key) {
            hash_map::Entry::Occupied(o) => {
                let (file, line) = *o.get();
                Some(format!("{}:{line}", self.files[file as usize]))
            }
            hash_map::Entry::Vacant(v) => {
                if self.files.last() != Some(&origin.file) {
                    self.files.push(origin.file.clone());
                }
                v.insert((self.files.len() as u32 - 1, origin.line));
                None
            }
        }
    }
}

/// The joined side tables, each read completely and keyed by id, with its join spec (their
/// files recorded in `inputs`, before the primary source's).
fn load_joins<'r>(
    recipe: &'r Recipe,
    opts: &SourceOptions,
    inputs: &mut Vec<Watched>,
) -> Result<Vec<(&'r JoinSpec, Table)>, EngineError> {
    recipe
        .join
        .iter()
        .map(|j| Ok((j, Table::load(&j.source, opts, inputs)?)))
        .collect()
}

/// Read: opens the primary source's files as one stream of records in
/// file order (the pass takes at most `--limit` of them, [`Source::limit`]). A reader that selects records itself (EventKG) takes
/// the limit and the sample as options, so that what it holds grows with the selection, not
/// with the dump (and its malformed lines, reported before its records, do not count against
/// the limit); with any other reader `--sample` is a configuration error.
fn read(
    recipe: &Recipe,
    opts: &SourceOptions,
    files: &[PathBuf],
) -> Result<cb_readers::Records, EngineError> {
    let mut ropts = toml_to_json(&recipe.source.options);
    let reader = recipe.source.reader.as_str();
    let selects = cb_readers::selects_records(reader);
    if selects {
        if let Some(l) = opts.limit {
            ropts.insert("limit".into(), Value::from(l as u64));
        }
        if let Some(n) = opts.sample {
            ropts.insert("sample".into(), Value::from(n as u64));
            ropts.insert("seed".into(), Value::from(opts.seed));
        }
    } else if opts.sample.is_some() {
        return Err(EngineError::Config(format!(
            "--sample needs a reader that selects records itself (eventkg); recipe {} reads with `{reader}`",
            recipe.name()
        )));
    }
    Ok(cb_readers::open_set(reader, files, &ropts)?)
}

/// Read, per record: the record, or the reject of a malformed record or of an id already read
/// (naming where it was first read). A fatal read error, or any malformed record with
/// `--strict`, stops the build.
fn accept(
    rec: Result<SourceRecord, ReadError>,
    index: usize,
    seen: &mut Seen,
    strict: bool,
) -> Result<Result<SourceRecord, Reject>, EngineError> {
    match rec {
        Ok(r) => match seen.first_read(&r.id, &r.origin) {
            None => Ok(Ok(r)),
            Some(first) => {
                let why = Why::new(
                    "duplicate_id",
                    format!("id {} was already read at {first}", r.id),
                );
                Ok(Err(reject(&r, Stage::Read, why)))
            }
        },
        Err(e) if e.is_fatal() || strict => Err(e.into()),
        Err(e) => Ok(Err(read_error_reject(&e, index))),
    }
}

/// One read record through join, map and filter: its item, or the stage that turned it down
/// and why.
fn to_item(
    env: &Environment<'_>,
    recipe: &Recipe,
    tables: &[(&JoinSpec, Table)],
    index: usize,
    rec: &SourceRecord,
) -> Result<Item, (Stage, Why)> {
    let ctx = join(env, tables, rec).map_err(|w| (Stage::Join, w))?;
    let fields = map(env, recipe, &ctx).map_err(|w| (Stage::Map, w))?;
    filter(env, recipe, ctx, &fields).map_err(|w| (Stage::Filter, w))?;
    Ok(Item {
        index,
        id: rec.id.clone(),
        origin: rec.origin.clone(),
        fields,
        calls: Vec::new(),
    })
}

/// Join: the context the recipe's expressions see, the record's fields at top level and as
/// `record`, its id as `id`, and each joined record under its alias (`null` for an optional
/// join that found none). A join key that does not evaluate (`bad_key`) or a required
/// partner that cannot be given (the table's reason) rejects the record.
fn join(
    env: &Environment<'_>,
    tables: &[(&JoinSpec, Table)],
    rec: &SourceRecord,
) -> Result<Map<String, Value>, Why> {
    let mut ctx: Map<String, Value> = rec.fields.clone();
    ctx.insert("record".into(), Value::Object(rec.fields.clone()));
    ctx.insert("id".into(), Value::String(rec.id.clone()));
    for (spec, table) in tables {
        let key = match eval(env, &spec.on, &ctx) {
            Ok(Value::String(s)) => s,
            Ok(other) => other.to_string(),
            Err(e) => return Err(Why::new("bad_key", format!("join key `{}`: {e}", spec.on))),
        };
        let joined = match table.get(&key, spec.required) {
            Ok(Some(fields)) => Value::Object(fields),
            Ok(None) => Value::Null,
            Err(miss) => return Err(Why::new(&miss.reason, miss.detail)),
        };
        ctx.insert(spec.alias.clone(), joined);
    }
    Ok(ctx)
}

/// Map: the item's fields, each the value of the recipe's expression in the joined context,
/// then checked against what the output format needs. An expression that does not evaluate,
/// or fields the format cannot use, reject the record (`bad_field`).
fn map(
    env: &Environment<'_>,
    recipe: &Recipe,
    ctx: &Map<String, Value>,
) -> Result<Map<String, Value>, Why> {
    let mut fields = Map::new();
    for (name, expr) in &recipe.fields {
        let v = eval(env, expr, ctx)
            .map_err(|e| Why::new("bad_field", format!("field {name} = `{expr}`: {e}")))?;
        fields.insert(name.clone(), v);
    }
    crate::format::check_mapped(&recipe.format, &mut fields)
        .map_err(|m| Why::new("bad_field", m))?;
    Ok(fields)
}

/// Filter: the recipe's filters in order, each seeing the joined context with the mapped
/// fields over it; the first one that is false rejects the record with its reason, one that
/// does not evaluate with `bad_filter`.
fn filter(
    env: &Environment<'_>,
    recipe: &Recipe,
    ctx: Map<String, Value>,
    fields: &Map<String, Value>,
) -> Result<(), Why> {
    let mut fctx = ctx;
    fctx.extend(fields.clone());
    for f in &recipe.filter {
        match eval(env, &f.when, &fctx) {
            Ok(v) if truthy(&v) => {}
            Ok(_) => {
                let detail = format!("filter `{}` is false", f.when);
                return Err(Why::new(&f.reason, detail));
            }
            Err(e) => {
                let detail = format!("filter `{}`: {e}", f.when);
                return Err(Why::new("bad_filter", detail));
            }
        }
    }
    Ok(())
}

/// Why a stage turned a record down: the reject's reason code and detail.
struct Why {
    reason: String,
    detail: String,
}

impl Why {
    fn new(reason: &str, detail: String) -> Self {
        Why {
            reason: reason.into(),
            detail,
        }
    }
}

/// The reject of a read record by `stage`.
fn reject(rec: &SourceRecord, stage: Stage, why: Why) -> Reject {
    Reject {
        id: rec.id.clone(),
        origin: rec.origin.to_string(),
        stage: stage.name().into(),
        reason: why.reason,
        detail: why.detail,
        raw_response: None,
        attempts: 0,
        row: None,
    }
}

/// The counts of read, join, map and filter (in flow order): in, out, rejected and reasons.
struct Tally([StageCounts; 4]);

impl Tally {
    fn new() -> Self {
        Tally(Stage::ALL.map(|s| StageCounts {
            name: s.name().into(),
            ..Default::default()
        }))
    }

    /// Counts where one record ended: it entered every stage up to the one that rejected it
    /// (all of them when it became an item).
    fn count(&mut self, entry: &Ended) {
        let reached = match entry {
            Ok(_) => Stage::ALL.len(),
            Err((stage, _)) => *stage as usize + 1,
        };
        for c in self.0.iter_mut().take(reached) {
            c.in_ += 1;
        }
        if let Err((stage, r)) = entry {
            let c = &mut self.0[*stage as usize];
            c.rejected += 1;
            *c.reasons.entry(r.reason.clone()).or_default() += 1;
        }
    }

    /// The counts, each with out = in - rejected.
    fn finish(self) -> Vec<StageCounts> {
        self.0
            .into_iter()
            .map(|mut c| {
                c.out = c.in_ - c.rejected;
                c
            })
            .collect()
    }
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::plain_lookup;
    use minijinja::Value as JValue;

    #[test]
    fn names_read_straight_from_the_context_give_what_the_engine_gives() {
        let env = environment();
        let ctx: Map<String, Value> = serde_json::from_str(
            r#"{"q":"Why?","n":3,"big":18446744073709551615,"f":0.1,"neg":-2,"b":false,"z":null,
                "l":["a","b"],"mixed":[1,"a"],"o":{"x":"in","y":{"z":[]}},"true":"field",
                "e":[],"_u":"u"}"#,
        )
        .unwrap();
        for expr in [
            "q",
            "n",
            "big",
            "f",
            "neg",
            "b",
            "z",
            "l",
            "mixed",
            "o",
            "o.x",
            "o.y",
            "o.y.z",
            "true",
            "e",
            "_u",
            "missing",
            "o.missing",
            "q.x",
            "o.x.y",
            "o .x",
            "q ",
            "1q",
        ] {
            let full = (|| {
                let compiled = env.compile_expression(expr).map_err(|e| format!("{e:#}"))?;
                let value = compiled
                    .eval(JValue::from_serialize(&ctx))
                    .map_err(|e| format!("{e:#}"))?;
                if value.is_undefined() {
                    return Err("undefined".to_owned());
                }
                serde_json::to_value(&value).map_err(|e| e.to_string())
            })();
            let fast = eval(&env, expr, &ctx);
            assert_eq!(
                fast.as_ref().map(|v| serde_json::to_string(v).unwrap()),
                full.as_ref().map(|v| serde_json::to_string(v).unwrap()),
                "{expr}"
            );
        }
        assert!(plain_lookup("q", &ctx).is_some() && plain_lookup("o.x", &ctx).is_some());
        assert!(plain_lookup("true", &ctx).is_none() && plain_lookup("o", &ctx).is_none());
    }

    #[test]
    fn expressions_see_fields_and_dashed_keys() {
        let env = environment();
        let ctx: Map<String, Value> = serde_json::from_str(
            r#"{"premise":"It rained.","label":1,"record":{"ask-for":"cause"}}"#,
        )
        .unwrap();
        assert_eq!(
            eval(&env, "'A' if label == 0 else 'B'", &ctx).unwrap(),
            Value::from("B")
        );
        assert_eq!(
            eval(
                &env,
                "premise ~ (' why?' if record['ask-for'] == 'cause' else ' then?')",
                &ctx
            )
            .unwrap(),
            Value::from("It rained. why?")
        );
        assert!(eval(&env, "nope", &ctx).is_err());
    }

    /// The bundled KRE CoS-E recipe over a copy of the bundled samples in a folder of its own.
    fn cose_copy() -> (tempfile::TempDir, Recipe) {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let raw = tempfile::tempdir().unwrap();
        for (dir, file) in [
            ("commonsenseqa", "dev_rand_split.jsonl"),
            ("cos_e", "cose_dev_v1.11.jsonl"),
        ] {
            std::fs::create_dir_all(raw.path().join(dir)).unwrap();
            let from = repo.join("raw").join(dir).join(file);
            std::fs::copy(from, raw.path().join(dir).join(file)).unwrap();
        }
        let recipe =
            Recipe::load(&cb_step::Files::Dir(repo.join("recipes")), "kre-cose.toml").unwrap();
        (raw, recipe)
    }

    fn pass_over(source: &Source<'_>) -> Result<usize, EngineError> {
        source.pass()?.try_fold(0, |n, e| e.map(|_| n + 1))
    }

    #[test]
    fn a_source_changed_between_the_passes_stops_the_second_naming_the_file() {
        let (raw, recipe) = cose_copy();
        let opts = SourceOptions {
            raw: raw.path().to_owned(),
            ..Default::default()
        };
        let source = Source::open(&recipe, &opts).unwrap();
        let first = pass_over(&source).unwrap();
        assert!(first > 2);
        assert_eq!(pass_over(&source).unwrap(), first, "an unchanged file");
        // Cut to half, as a copy still being written or a file replaced would be.
        let primary = raw.path().join("commonsenseqa/dev_rand_split.jsonl");
        let text = std::fs::read_to_string(&primary).unwrap();
        let half: Vec<&str> = text.lines().take(first / 2).collect();
        std::fs::write(&primary, half.join("\n") + "\n").unwrap();
        let e = pass_over(&source).unwrap_err().to_string();
        assert!(e.contains(&primary.display().to_string()), "{e}");
        assert!(e.contains("changed during the build"), "{e}");
        assert!(matches!(source.unchanged(), Err(EngineError::Input(_))));
    }

    #[test]
    fn a_joined_source_rewritten_with_the_same_size_is_caught_by_its_hash() {
        let (raw, recipe) = cose_copy();
        let opts = SourceOptions {
            raw: raw.path().to_owned(),
            ..Default::default()
        };
        let source = Source::open(&recipe, &opts).unwrap();
        // Same length, one byte different, written at once: the stamp may not tell (same
        // size, a modification time in the same clock tick), the hash does.
        let joined = raw.path().join("cos_e/cose_dev_v1.11.jsonl");
        let mut bytes = std::fs::read(&joined).unwrap();
        let at = bytes.iter().position(|b| b.is_ascii_lowercase()).unwrap();
        bytes[at] = if bytes[at] == b'z' { b'y' } else { b'z' };
        std::fs::write(&joined, bytes).unwrap();
        let e = pass_over(&source).unwrap_err().to_string();
        assert!(e.contains(&joined.display().to_string()), "{e}");
    }
}
