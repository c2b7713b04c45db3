//! From source files to items: read the primary source (streaming), look each record up in
//! the joined side tables, map its fields with the recipe's expressions, apply the filters.
//! Everything that does not become an item becomes a [`Reject`] at its position.

use crate::join::Table;
use crate::recipe::{toml_to_json, JoinSpec, Recipe, SourceSpec};
use crate::{EngineError, Item};
use cb_model::manifest::InputFile;
use cb_model::{Reject, SourceRecord, StageCounts};
use cb_readers::ReadError;
use cb_step::template::environment;
use minijinja::{Environment, Value as JValue};
use serde_json::{Map, Value};
use std::collections::{hash_map, BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Where the sources are and how strictly to read them.
#[derive(Debug, Clone, Default)]
pub struct SourceOptions {
    pub raw: PathBuf,
    /// `--input NAME=PATH` overrides: a file, or a folder searched with the recipe's globs.
    pub inputs: BTreeMap<String, PathBuf>,
    /// Read at most this many primary records.
    pub limit: Option<usize>,
    /// A seeded sample of this many primary records (readers that select records only).
    pub sample: Option<usize>,
    /// The seed of the sample (the build's seed).
    pub seed: u64,
    /// A malformed record stops the build instead of becoming a reject.
    pub strict: bool,
}

/// What reading produced: items and rejects by position, filter counts, files read.
#[derive(Debug, Default)]
pub struct Loaded {
    pub entries: Vec<Result<Item, Reject>>,
    pub inputs: Vec<InputFile>,
    /// Counts per stage name (`read`, `join`, `map`, `filter`): (in, rejected, reasons).
    pub stages: Vec<cb_model::StageCounts>,
    pub filtered: BTreeMap<String, u64>,
}

/// The files one source spec reads.
pub fn resolve(spec: &SourceSpec, opts: &SourceOptions) -> Result<Vec<PathBuf>, EngineError> {
    match opts.inputs.get(&spec.name) {
        Some(p) if p.is_file() => Ok(vec![p.clone()]),
        Some(p) if p.is_dir() => Ok(cb_readers::resolve_inputs(p, &spec.files)?),
        Some(p) => Err(EngineError::Config(format!(
            "--input {}={}: no such file or folder",
            spec.name,
            p.display()
        ))),
        None => {
            let dir = opts.raw.join(&spec.name);
            if !dir.is_dir() {
                return Err(EngineError::Config(format!(
                    "source folder {} does not exist (use --raw DIR or --input {}=PATH)",
                    dir.display(),
                    spec.name
                )));
            }
            Ok(cb_readers::resolve_inputs(&dir, &spec.files)?)
        }
    }
}

pub(crate) fn input_file(source: &str, path: &Path) -> Result<InputFile, EngineError> {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let mut f = std::fs::File::open(path)
        .map_err(|e| EngineError::Input(format!("{}: {e}", path.display())))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| EngineError::Input(format!("{}: {e}", path.display())))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(InputFile {
        source: source.to_owned(),
        path: path.display().to_string(),
        sha256: hex::encode(h.finalize()),
    })
}

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
/// or a reject at its position, in source order.
pub fn load(recipe: &Recipe, opts: &SourceOptions) -> Result<Loaded, EngineError> {
    let env = environment();
    let mut loaded = Loaded::default();
    let primary_files = resolve(&recipe.source, opts)?;
    let tables = load_joins(recipe, opts, &mut loaded.inputs)?;
    let records = read(recipe, opts, &primary_files, &mut loaded.inputs)?;
    let mut tally = Tally::new();
    // Where each id was first read: a second record with the same id is a reject.
    let mut seen: HashMap<String, String> = HashMap::new();
    for (index, rec) in records.enumerate() {
        let entry = match accept(rec, index, &mut seen, opts.strict)? {
            Ok(rec) => to_item(&env, recipe, &tables, index, &rec)
                .map_err(|(stage, why)| (stage, reject(&rec, stage, why))),
            Err(r) => Err((Stage::Read, r)),
        };
        tally.count(&entry);
        if let Err((Stage::Filter, r)) = &entry {
            *loaded.filtered.entry(r.reason.clone()).or_default() += 1;
        }
        loaded.entries.push(entry.map_err(|(_, r)| r));
    }
    loaded.stages = tally.finish();
    Ok(loaded)
}

/// The joined side tables, each read completely and keyed by id, with its join spec (their
/// files recorded in `inputs`, before the primary source's).
fn load_joins<'r>(
    recipe: &'r Recipe,
    opts: &SourceOptions,
    inputs: &mut Vec<InputFile>,
) -> Result<Vec<(&'r JoinSpec, Table)>, EngineError> {
    recipe
        .join
        .iter()
        .map(|j| Ok((j, Table::load(&j.source, opts, inputs)?)))
        .collect()
}

/// Read: opens the primary source's files (recorded in `inputs`) as one stream of records in
/// file order, at most `--limit` of them. A reader that selects records itself (EventKG) takes
/// the limit and the sample as options, so that what it holds grows with the selection, not
/// with the dump (and its malformed lines, reported before its records, do not count against
/// the limit); with any other reader `--sample` is a configuration error.
fn read(
    recipe: &Recipe,
    opts: &SourceOptions,
    files: &[PathBuf],
    inputs: &mut Vec<InputFile>,
) -> Result<impl Iterator<Item = Result<SourceRecord, ReadError>>, EngineError> {
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
    for path in files {
        inputs.push(input_file(&recipe.source.name, path)?);
    }
    let limit = opts.limit.filter(|_| !selects).unwrap_or(usize::MAX);
    Ok(cb_readers::open_set(reader, files, &ropts)?.take(limit))
}

/// Read, per record: the record, or the reject of a malformed record or of an id already read
/// (naming where it was first read). A fatal read error, or any malformed record with
/// `--strict`, stops the build.
fn accept(
    rec: Result<SourceRecord, ReadError>,
    index: usize,
    seen: &mut HashMap<String, String>,
    strict: bool,
) -> Result<Result<SourceRecord, Reject>, EngineError> {
    match rec {
        Ok(r) => match seen.entry(r.id.clone()) {
            hash_map::Entry::Vacant(v) => {
                v.insert(r.origin.to_string());
                Ok(Ok(r))
            }
            hash_map::Entry::Occupied(first) => {
                let why = Why::new(
                    "duplicate_id",
                    format!("id {} was already read at {}", r.id, first.get()),
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
            Ok(Some(j)) => Value::Object(j.fields.clone()),
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

/// Evaluates one expression against a JSON context.
pub fn eval(env: &Environment<'_>, expr: &str, ctx: &Map<String, Value>) -> Result<Value, String> {
    let compiled = env.compile_expression(expr).map_err(|e| format!("{e:#}"))?;
    let value = compiled
        .eval(JValue::from_serialize(ctx))
        .map_err(|e| format!("{e:#}"))?;
    if value.is_undefined() {
        return Err("undefined".into());
    }
    serde_json::to_value(&value).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
