//! Recipes: one TOML file per domain says which reader reads which files, how the
//! source fields map onto the benchmark's fields, which filters apply and which steps run
//! with which prompts. A new domain in a format an existing reader handles is a new recipe
//! file (and its prompts), nothing else.

use crate::EngineError;
use cb_step::Files;
pub use cb_step::StepSpec;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// A source: which reader reads which files of `--raw/<dir>`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceSpec {
    /// The folder under `--raw`, and the name used by `--input NAME=PATH`.
    pub name: String,
    pub reader: String,
    /// Glob patterns; the first one that matches any file is used.
    pub files: Vec<String>,
    /// Reader options (e.g. `id_field`).
    #[serde(default)]
    pub options: toml::Table,
}

/// A side table joined onto each primary record.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JoinSpec {
    #[serde(flatten)]
    pub source: SourceSpec,
    /// Expression over the primary record that gives the key to look up (joined records are
    /// keyed by their id).
    pub on: String,
    /// Name under which the joined record's fields are visible to expressions.
    #[serde(rename = "as")]
    pub alias: String,
    /// An item without a match is rejected (`join` stage, reason `no_match`).
    #[serde(default = "yes")]
    pub required: bool,
}

fn yes() -> bool {
    true
}

/// Keep an item only when `when` is true; otherwise it is filtered out with `reason`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterSpec {
    pub when: String,
    pub reason: String,
}

/// A recipe file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    pub benchmark: String,
    pub domain: String,
    pub description: String,
    /// Output format: `kre`, `kre_rc`, `recall`, or `rows` (the rows the recipe's `[output]`
    /// table composes: [`crate::rows`]).
    pub format: String,
    /// Format `rows`: the file written and each row's columns.
    #[serde(default)]
    pub output: Option<crate::rows::OutputSpec>,
    /// Built by `build <benchmark>` without `--domains` (alternates say `false`).
    #[serde(default = "yes")]
    pub default: bool,
    /// How to cite the sources, one line each (goes into the card).
    #[serde(default)]
    pub cite: Vec<String>,
    /// Notes for the card (quirks, what differs from the paper).
    #[serde(default)]
    pub notes: Vec<String>,
    /// The Hub metadata of the card: title, split, language, source datasets, the
    /// sources' licenses (`[card]` table).
    #[serde(default)]
    pub card: cb_model::CardMeta,
    pub source: SourceSpec,
    #[serde(default)]
    pub join: Vec<JoinSpec>,
    /// Output field -> expression over the source record.
    pub fields: BTreeMap<String, String>,
    #[serde(default)]
    pub filter: Vec<FilterSpec>,
    #[serde(default)]
    pub steps: Vec<StepSpec>,
    /// The file name, the origin of its set (`bundled` or the folder, as in
    /// [`Files::origin`]) and the file's content hash.
    #[serde(skip)]
    pub file: String,
    #[serde(skip)]
    pub origin: String,
    #[serde(skip)]
    pub hash: String,
    /// Where the recipe is, for messages (`recipes/kre-cose.toml`, `bundled:kre-cose.toml`).
    #[serde(skip)]
    pub located: String,
    /// Per `[[steps]]` entry: its header's line and each key's line (1-based).
    #[serde(skip)]
    pub step_lines: Vec<(usize, BTreeMap<String, usize>)>,
    /// Format `rows`: the `[output]` table checked ([`Recipe::load`]).
    #[serde(skip)]
    pub rows: Option<std::sync::Arc<crate::rows::RowsSpec>>,
}

/// The output formats a recipe may name.
pub const FORMATS: [&str; 4] = ["kre", "kre_rc", "recall", "rows"];

impl Recipe {
    /// `benchmark-domain`, the recipe's name in seeds, manifests and progress.
    pub fn name(&self) -> String {
        format!("{}-{}", self.benchmark, self.domain)
    }

    /// Parses recipe `name` of `recipes` (a folder or the bundled set).
    pub fn load(recipes: &Files, name: &str) -> Result<Self, EngineError> {
        let text = recipes
            .read(name)
            .map_err(|e| EngineError::Config(format!("cannot read recipe {e}")))?;
        let mut recipe: Recipe = toml::from_str(&text)
            .map_err(|e| EngineError::Config(format!("recipe {}: {e}", recipes.locate(name))))?;
        recipe.file = name.to_owned();
        recipe.origin = recipes.origin();
        recipe.hash = cb_step::prompt::sha256_hex(text.as_bytes());
        recipe.located = recipes.locate(name);
        recipe.step_lines = step_lines(&text);
        recipe.rows = recipe.check_format()?;
        Ok(recipe)
    }

    /// The output format is known; `rows` has its `[output]` table (checked), the others
    /// none (a table that would be ignored is refused).
    fn check_format(&self) -> Result<Option<std::sync::Arc<crate::rows::RowsSpec>>, EngineError> {
        let bad = |m: String| EngineError::Config(format!("recipe {}: {m}", self.located));
        if !FORMATS.contains(&self.format.as_str()) {
            return Err(bad(format!(
                "unknown format `{}`; known: {}",
                self.format,
                FORMATS.join(", ")
            )));
        }
        match (&self.output, self.format.as_str()) {
            (None, "rows") => Err(bad(
                "format `rows` needs an [output] table (its `file` and `[output.row]`)".into(),
            )),
            (Some(_), f) if f != "rows" => Err(bad(format!(
                "an [output] table is read only with format `rows`, not `{f}`"
            ))),
            (Some(o), _) => crate::rows::RowsSpec::of(o, &self.domain)
                .map(|r| Some(std::sync::Arc::new(r)))
                .map_err(bad),
            (None, _) => Ok(None),
        }
    }

    /// Checks every step entry against the step table before any work: a known kind, known
    /// parameters, each of its type, and a chain in which every field a step reads is one of
    /// the recipe's `[fields]` or written by an earlier step. The error names the file, the
    /// line, the step and the key or field.
    pub fn check_steps(&self, steps: &cb_step::Registry) -> Result<(), EngineError> {
        let mut have: BTreeSet<String> = self.fields.keys().cloned().collect();
        for (i, spec) in self.steps.iter().enumerate() {
            let at = |key: Option<&str>| self.step_at(i, key);
            let fields = steps
                .check(spec)
                .and_then(|()| steps.fields(spec))
                .map_err(|e| {
                    EngineError::Config(format!("{}: {}", at(e.key.as_deref()), e.message))
                })?;
            if let Some(missing) = fields.reads.iter().find(|f| !have.contains(*f)) {
                return Err(EngineError::Config(format!(
                    "{}: it reads the field `{missing}`, which neither the recipe's [fields] nor an earlier step gives (there: {})",
                    at(None),
                    have.iter().map(String::as_str).collect::<Vec<_>>().join(", ")
                )));
            }
            have.extend(fields.writes);
        }
        if let Some(rows) = &self.rows {
            let vars = crate::rows::ROW_VARS;
            let missing = rows
                .names()
                .into_iter()
                .find(|(n, _)| !have.contains(n) && !vars.contains(&n.as_str()));
            if let Some((name, column)) = missing {
                return Err(EngineError::Config(format!(
                    "{}: [output.row] column {column} reads `{name}`, which neither the recipe's [fields], a step nor the row's own names ({}) give (there: {})",
                    self.located,
                    vars.join(", "),
                    have.iter().map(String::as_str).collect::<Vec<_>>().join(", ")
                )));
            }
        }
        Ok(())
    }
}

impl Recipe {
    /// Where step `i` (0-based) of the recipe is, for messages: the file, the line of `key`
    /// in its entry (else of its header), the step's number and name.
    pub fn step_at(&self, i: usize, key: Option<&str>) -> String {
        let lines = self.step_lines.get(i);
        let line = lines
            .and_then(|(_, keys)| key.and_then(|k| keys.get(k)))
            .or(lines.map(|(header, _)| header))
            .map_or(String::new(), |l| format!(":{l}"));
        let name = self.steps.get(i).map_or("?", |s| s.name());
        format!("{}{line}: step {} ({name})", self.located, i + 1)
    }

    /// Builds every step of the (checked) recipe with its prompts: what a step's constructor
    /// refuses (`votes = 0`, an unknown `agree`, a reader named twice, a missing prompt) is a
    /// configuration error naming the file, the line of the key it concerns and the step.
    pub fn load_steps(
        &self,
        registry: &cb_step::Registry,
        prompts: &Files,
    ) -> Result<Vec<Box<dyn cb_step::Step>>, EngineError> {
        self.steps
            .iter()
            .enumerate()
            .map(|(i, spec)| {
                registry.build(spec, prompts).map_err(|e| match e {
                    cb_step::StepError::Config(m) => {
                        let own = format!("step {}: ", spec.name());
                        let m = m.strip_prefix(&own).unwrap_or(&m).to_owned();
                        let keys = self.step_lines.get(i).map(|(_, k)| k);
                        let key =
                            keys.and_then(|k| k.keys().find(|k| m.contains(&format!("`{k}"))));
                        EngineError::Config(format!(
                            "{}: {m}",
                            self.step_at(i, key.map(String::as_str))
                        ))
                    }
                    other => other.into(),
                })
            })
            .collect()
    }

    /// Checks that every step's `model` (and a reader check's `readers`) names one of the
    /// `known` named models; the error names the file, the line, the step and the names known.
    pub fn check_models(&self, known: &[&str]) -> Result<(), EngineError> {
        for (i, spec) in self.steps.iter().enumerate() {
            // A step's `model`, and the named readers of a reader check (`readers`).
            let readers = spec.strs("readers").unwrap_or_default();
            let mut named = spec
                .model
                .iter()
                .map(|m| ("model", m))
                .chain(readers.iter().map(|r| ("readers", r)));
            let Some((key, model)) = named.find(|(_, m)| !known.contains(&m.as_str())) else {
                continue;
            };
            let names = if known.is_empty() {
                "none: no --models file names any".to_owned()
            } else {
                known.join(", ")
            };
            return Err(EngineError::Config(format!(
                "{}: model `{model}` is not a named model (known: {names})",
                self.step_at(i, Some(key))
            )));
        }
        Ok(())
    }
}

/// The line of each `[[steps]]` header of a recipe's text and of each `key =` under it, up
/// to the next table header (1-based).
fn step_lines(text: &str) -> Vec<(usize, BTreeMap<String, usize>)> {
    let mut out: Vec<(usize, BTreeMap<String, usize>)> = Vec::new();
    let mut inside = false;
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with('[') {
            inside = t == "[[steps]]";
            if inside {
                out.push((n + 1, BTreeMap::new()));
            }
            continue;
        }
        if let (true, Some((key, _)), Some(last)) = (inside, t.split_once('='), out.last_mut()) {
            let key = key.trim().trim_matches('"');
            if !key.is_empty() && !key.starts_with('#') {
                last.1.entry(key.to_owned()).or_insert(n + 1);
            }
        }
    }
    out
}

/// Converts a TOML table of options to the JSON object the readers and steps take.
pub fn toml_to_json(t: &toml::Table) -> Map<String, Value> {
    serde_json::to_value(t)
        .ok()
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default()
}

/// Every `*.toml` recipe at the top of `recipes`, sorted by file name.
pub fn load_recipes(recipes: &Files) -> Result<Vec<Recipe>, EngineError> {
    let names = recipes
        .top_level("toml")
        .map_err(|e| EngineError::Config(format!("cannot read the recipes folder {e}")))?;
    names.iter().map(|n| Recipe::load(recipes, n)).collect()
}

/// The recipes a `build` command selects: those of `benchmark` (or all for `all`), limited to
/// `domains` when given (an unknown domain is an error listing the known ones), else the
/// default ones.
pub fn select<'a>(
    recipes: &'a [Recipe],
    benchmark: &str,
    domains: &[String],
) -> Result<Vec<&'a Recipe>, EngineError> {
    let of_bench: Vec<&Recipe> = recipes
        .iter()
        .filter(|r| benchmark == "all" || r.benchmark == benchmark)
        .collect();
    if of_bench.is_empty() {
        let mut known: Vec<&str> = recipes.iter().map(|r| r.benchmark.as_str()).collect();
        known.sort_unstable();
        known.dedup();
        known.push("all");
        return Err(EngineError::Config(format!(
            "no recipe for benchmark '{benchmark}'; choose one of: {}",
            known.join(", ")
        )));
    }
    if domains.is_empty() {
        return Ok(of_bench.into_iter().filter(|r| r.default).collect());
    }
    domains
        .iter()
        .map(|d| {
            of_bench
                .iter()
                .copied()
                .find(|r| &r.domain == d)
                .ok_or_else(|| {
                    let known: Vec<&str> = of_bench.iter().map(|r| r.domain.as_str()).collect();
                    EngineError::Config(format!(
                        "unknown domain '{d}' for {benchmark}; known: {}",
                        known.join(", ")
                    ))
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bundled_recipe_checks_clean_and_its_step_lines_are_found() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../recipes");
        let recipes = load_recipes(&Files::Dir(dir)).unwrap();
        assert!(recipes.len() >= 9);
        for r in &recipes {
            r.check_steps(&cb_steps::STEPS)
                .unwrap_or_else(|e| panic!("{}: {e}", r.file));
            assert_eq!(r.step_lines.len(), r.steps.len(), "{}", r.file);
        }
    }

    #[test]
    fn step_lines_are_the_headers_and_keys_under_them() {
        let text = "benchmark = \"x\"\n\n[[steps]]\nkind = \"a\"\n\n[[steps]]\n# note\nkind = \"b\"\nmax_tokens = 3\n\n[card]\nkind = \"no\"\n";
        let lines = step_lines(text);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].0, 3);
        assert_eq!(lines[0].1["kind"], 4);
        assert_eq!(lines[1].1["max_tokens"], 9);
        assert!(!lines[1].1.contains_key("# note"));
    }
}
