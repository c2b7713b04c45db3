//! From source files to items: read the primary source (streaming), look each record up in
//! the joined side tables, map its fields with the recipe's expressions, apply the filters.
//! Everything that does not become an item becomes a [`Reject`] at its position.

use crate::recipe::{toml_to_json, Recipe, SourceSpec};
use crate::{EngineError, Item};
use cb_model::manifest::InputFile;
use cb_model::{Reject, SourceRecord};
use cb_step::template::environment;
use minijinja::{Environment, Value as JValue};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
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

fn input_file(source: &str, path: &Path) -> Result<InputFile, EngineError> {
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
    let (origin, detail) = match e {
        cb_readers::ReadError::Record {
            file,
            line,
            message,
            ..
        } => (format!("{file}:{line}"), message.clone()),
        other => (String::new(), other.to_string()),
    };
    Reject {
        id: format!("#{index}"),
        origin,
        stage: "read".into(),
        reason: e.code().to_owned(),
        detail,
        raw_response: None,
        attempts: 0,
    }
}

/// Reads one source spec's files completely into a table keyed by record id (for joins).
fn load_table(
    spec: &SourceSpec,
    opts: &SourceOptions,
    inputs: &mut Vec<InputFile>,
) -> Result<HashMap<String, SourceRecord>, EngineError> {
    let mut table = HashMap::new();
    let ropts = toml_to_json(&spec.options);
    for path in resolve(spec, opts)? {
        inputs.push(input_file(&spec.name, &path)?);
        for rec in cb_readers::open(&spec.reader, &path, &ropts)? {
            match rec {
                Ok(r) => {
                    table.entry(r.id.clone()).or_insert(r);
                }
                Err(e) if e.is_fatal() || opts.strict => return Err(e.into()),
                // A broken line of a side table: the items that needed it are rejected as
                // `no_match`; the line itself is reported in the log.
                Err(e) => {
                    tracing::warn!(source = %spec.name, error = %e, "skipping a malformed record of a joined source")
                }
            }
        }
    }
    Ok(table)
}

/// Reads, joins, maps and filters the recipe's source.
pub fn load(recipe: &Recipe, opts: &SourceOptions) -> Result<Loaded, EngineError> {
    let env = environment();
    let mut loaded = Loaded::default();
    let primary_files = resolve(&recipe.source, opts)?;
    let mut tables = Vec::new();
    for j in &recipe.join {
        tables.push((j, load_table(&j.source, opts, &mut loaded.inputs)?));
    }
    let mut counts: BTreeMap<&str, cb_model::StageCounts> = BTreeMap::new();
    for s in ["read", "join", "map", "filter"] {
        counts.insert(
            s,
            cb_model::StageCounts {
                name: s.into(),
                ..Default::default()
            },
        );
    }
    fn reject(
        counts: &mut BTreeMap<&str, cb_model::StageCounts>,
        stage: &str,
        r: Reject,
        entries: &mut Vec<Result<Item, Reject>>,
    ) {
        let c = counts.get_mut(stage).expect("known stage");
        c.rejected += 1;
        *c.reasons.entry(r.reason.clone()).or_default() += 1;
        entries.push(Err(r));
    }
    let mut ropts = toml_to_json(&recipe.source.options);
    let reader = recipe.source.reader.as_str();
    // Readers that select records themselves (EventKG) take the limit and the sample, so
    // that what they hold grows with the selection, not with the dump.
    if cb_readers::selects_records(reader) {
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
    for path in &primary_files {
        loaded.inputs.push(input_file(&recipe.source.name, path)?);
    }
    let mut index = 0usize;
    // A reader that selects records applies the limit itself (and reports its malformed
    // lines before its records, which must not count against the limit).
    let limit = opts.limit.filter(|_| !cb_readers::selects_records(reader));
    for rec in cb_readers::open_set(reader, &primary_files, &ropts)? {
        if limit.is_some_and(|l| index >= l) {
            break;
        }
        counts.get_mut("read").expect("stage").in_ += 1;
        let rec = match rec {
            Ok(r) => r,
            Err(e) if e.is_fatal() || opts.strict => return Err(e.into()),
            Err(e) => {
                reject(
                    &mut counts,
                    "read",
                    read_error_reject(&e, index),
                    &mut loaded.entries,
                );
                index += 1;
                continue;
            }
        };
        let base = |stage: &str, reason: &str, detail: String| Reject {
            id: rec.id.clone(),
            origin: rec.origin.to_string(),
            stage: stage.into(),
            reason: reason.into(),
            detail,
            raw_response: None,
            attempts: 0,
        };
        // Context for expressions: the record's fields at top level and as `record`,
        // each joined record under its alias.
        let mut ctx: Map<String, Value> = rec.fields.clone();
        ctx.insert("record".into(), Value::Object(rec.fields.clone()));
        ctx.insert("id".into(), Value::String(rec.id.clone()));
        counts.get_mut("join").expect("stage").in_ += 1;
        let mut missing = None;
        for (spec, table) in &tables {
            let key = match eval(&env, &spec.on, &ctx) {
                Ok(Value::String(s)) => s,
                Ok(other) => other.to_string(),
                Err(e) => {
                    missing = Some(base(
                        "join",
                        "bad_key",
                        format!("join key `{}`: {e}", spec.on),
                    ));
                    break;
                }
            };
            match table.get(&key) {
                Some(j) => {
                    ctx.insert(spec.alias.clone(), Value::Object(j.fields.clone()));
                }
                None if spec.required => {
                    missing = Some(base(
                        "join",
                        "no_match",
                        format!("no record with id {key} in source {}", spec.source.name),
                    ));
                    break;
                }
                None => {
                    ctx.insert(spec.alias.clone(), Value::Null);
                }
            }
        }
        if let Some(r) = missing {
            reject(&mut counts, "join", r, &mut loaded.entries);
            index += 1;
            continue;
        }
        counts.get_mut("map").expect("stage").in_ += 1;
        let mut fields = Map::new();
        let mut failed = None;
        for (name, expr) in &recipe.fields {
            match eval(&env, expr, &ctx) {
                Ok(v) => {
                    fields.insert(name.clone(), v);
                }
                Err(e) => {
                    failed = Some(base(
                        "map",
                        "bad_field",
                        format!("field {name} = `{expr}`: {e}"),
                    ));
                    break;
                }
            }
        }
        if failed.is_none() {
            if let Err(m) = crate::format::check_mapped(&recipe.format, &mut fields) {
                failed = Some(base("map", "bad_field", m));
            }
        }
        if let Some(r) = failed {
            reject(&mut counts, "map", r, &mut loaded.entries);
            index += 1;
            continue;
        }
        counts.get_mut("filter").expect("stage").in_ += 1;
        let mut fctx = ctx.clone();
        fctx.extend(fields.clone());
        let mut dropped = None;
        for f in &recipe.filter {
            match eval(&env, &f.when, &fctx) {
                Ok(v) if truthy(&v) => {}
                Ok(_) => {
                    dropped = Some(base(
                        "filter",
                        &f.reason,
                        format!("filter `{}` is false", f.when),
                    ));
                    break;
                }
                Err(e) => {
                    dropped = Some(base(
                        "filter",
                        "bad_filter",
                        format!("filter `{}`: {e}", f.when),
                    ));
                    break;
                }
            }
        }
        if let Some(r) = dropped {
            *loaded.filtered.entry(r.reason.clone()).or_default() += 1;
            reject(&mut counts, "filter", r, &mut loaded.entries);
            index += 1;
            continue;
        }
        loaded.entries.push(Ok(Item {
            index,
            id: rec.id.clone(),
            origin: rec.origin.clone(),
            fields,
            calls: Vec::new(),
        }));
        index += 1;
    }
    for (_, mut c) in counts {
        c.out = c.in_ - c.rejected;
        loaded.stages.push(c);
    }
    // Report stages in flow order.
    loaded.stages.sort_by_key(|c| {
        ["read", "join", "map", "filter"]
            .iter()
            .position(|s| *s == c.name)
    });
    Ok(loaded)
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
