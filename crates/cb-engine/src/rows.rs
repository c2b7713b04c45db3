//! The general output format `rows`: one JSON object a line in the file the recipe names
//! (`[output] file`), each row made by the recipe's `[output.row]` table from a finished
//! item. Every string of the table is an expression over the item's fields (the language of
//! `[fields]`: `subject`, `'misinformation'`, `'offline rules' if offline else 'model'`); a
//! table is an object, an array a list, a number or a boolean itself. The engine knows no
//! column: the recipe says what is written. Keys come out in alphabetical order within each
//! object (the order TOML tables are read in).
//!
//! Besides the item's fields, an expression sees [`ROW_VARS`]: `item_id` (the source id),
//! `origin` (file and line), `recipe` (`benchmark-domain`), `offline` (true when the
//! build's writer is the offline rules), `lineage` (the item's model calls), `reader` (the
//! reader check's verdicts, `null` without one) and `warnings` (the lexical warnings, a
//! list).

use crate::expr::eval;
use crate::EngineError;
use cb_step::{fields, Item};
use minijinja::Environment;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// The names an `[output.row]` expression sees beside the item's fields.
pub const ROW_VARS: [&str; 7] = [
    "item_id", "origin", "recipe", "offline", "lineage", "reader", "warnings",
];

/// A recipe's `[output]` table (format `rows`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// The rows file in the output folder (`conflictbank.jsonl`).
    pub file: String,
    /// The card's config that loads it (default: the recipe's domain).
    #[serde(default)]
    pub config: Option<String>,
    /// What the card says of the rows, in a sentence or two.
    #[serde(default)]
    pub about: String,
    /// The row, its values expressions over the finished item.
    pub row: toml::Table,
}

/// One value of the row template.
#[derive(Debug, Clone)]
enum Cell {
    Expr(String),
    Literal(Value),
    Object(Vec<(String, Cell)>),
    List(Vec<Cell>),
}

impl Cell {
    fn of(v: &toml::Value) -> Cell {
        match v {
            toml::Value::String(s) => Cell::Expr(s.clone()),
            toml::Value::Table(t) => {
                Cell::Object(t.iter().map(|(k, v)| (k.clone(), Cell::of(v))).collect())
            }
            toml::Value::Array(a) => Cell::List(a.iter().map(Cell::of).collect()),
            other => Cell::Literal(serde_json::to_value(other).unwrap_or(Value::Null)),
        }
    }

    /// Every expression with its place (`qa.options[2]`).
    fn exprs<'a>(&'a self, at: &str, out: &mut Vec<(String, &'a str)>) {
        match self {
            Cell::Expr(e) => out.push((at.to_owned(), e)),
            Cell::Literal(_) => {}
            Cell::Object(kv) => {
                for (k, v) in kv {
                    let at = if at.is_empty() {
                        k.clone()
                    } else {
                        format!("{at}.{k}")
                    };
                    v.exprs(&at, out);
                }
            }
            Cell::List(items) => {
                for (i, v) in items.iter().enumerate() {
                    v.exprs(&format!("{at}[{i}]"), out);
                }
            }
        }
    }

    fn eval(
        &self,
        env: &Environment<'static>,
        ctx: &Map<String, Value>,
        at: &str,
    ) -> Result<Value, String> {
        Ok(match self {
            Cell::Expr(e) => eval(env, e, ctx).map_err(|m| format!("column {at} = `{e}`: {m}"))?,
            Cell::Literal(v) => v.clone(),
            Cell::Object(kv) => {
                let mut m = Map::new();
                for (k, v) in kv {
                    let at = if at.is_empty() {
                        k.clone()
                    } else {
                        format!("{at}.{k}")
                    };
                    m.insert(k.clone(), v.eval(env, ctx, &at)?);
                }
                Value::Object(m)
            }
            Cell::List(items) => Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| v.eval(env, ctx, &format!("{at}[{i}]")))
                    .collect::<Result<_, _>>()?,
            ),
        })
    }
}

/// A recipe's `rows` output, checked and ready to write rows.
#[derive(Debug)]
pub struct RowsSpec {
    pub file: String,
    pub config: String,
    pub about: String,
    row: Cell,
    env: Environment<'static>,
}

impl RowsSpec {
    /// Checks an `[output]` table: a `.jsonl` file name of its own (no folder, not a
    /// bookkeeping file), a row with at least one column, every expression compiling. The
    /// error is a sentence without the recipe's name (the caller adds it).
    pub fn of(spec: &OutputSpec, domain: &str) -> Result<Self, String> {
        let f = spec.file.as_str();
        if !f.ends_with(".jsonl")
            || f.contains(['/', '\\'])
            || f.starts_with('.')
            || f == "rejects.jsonl"
            || f == "runs.jsonl"
        {
            return Err(format!(
                "[output] file `{f}` must be a `.jsonl` file name of its own (no folder, not rejects.jsonl or runs.jsonl)"
            ));
        }
        if spec.row.is_empty() {
            return Err("[output.row] has no column".into());
        }
        let rows = RowsSpec {
            file: spec.file.clone(),
            config: spec.config.clone().unwrap_or_else(|| domain.to_owned()),
            about: spec.about.clone(),
            row: Cell::of(&toml::Value::Table(spec.row.clone())),
            env: cb_step::template::environment(),
        };
        // The rejects' config (`output::REJECTS`).
        if rows.config == "rejects" {
            return Err("[output] config `rejects` is the rejects' own".into());
        }
        for (at, e) in rows.exprs() {
            rows.env.compile_expression(e).map_err(|err| {
                format!("[output.row] column {at} = `{e}` does not compile: {err}")
            })?;
        }
        Ok(rows)
    }

    fn exprs(&self) -> Vec<(String, &str)> {
        let mut out = Vec::new();
        self.row.exprs("", &mut out);
        out
    }

    /// Every name the row's expressions read, with the column that reads it first.
    pub fn names(&self) -> Vec<(String, String)> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for (at, e) in self.exprs() {
            let Ok(expr) = self.env.compile_expression(e) else {
                continue;
            };
            let mut names: Vec<String> = expr.undeclared_variables(false).into_iter().collect();
            names.sort();
            for n in names {
                if seen.insert(n.clone()) {
                    out.push((n, at.clone()));
                }
            }
        }
        out
    }

    /// The row of a finished item. A column that does not evaluate is the error (the
    /// recipe's row reads what the item does not have).
    pub fn row(&self, item: &Item, recipe: &str, offline: bool) -> Result<Value, EngineError> {
        let mut ctx = item.fields.clone();
        let lineage = serde_json::to_value(&item.calls).expect("lineage serialises");
        let vars: [(&str, Value); 7] = [
            ("item_id", item.id.clone().into()),
            ("origin", item.origin.to_string().into()),
            ("recipe", recipe.into()),
            ("offline", offline.into()),
            ("lineage", lineage),
            (
                "reader",
                item.fields
                    .get(fields::READER)
                    .cloned()
                    .unwrap_or(Value::Null),
            ),
            ("warnings", item.texts(fields::WARNINGS).into()),
        ];
        for (k, v) in vars {
            ctx.insert(k.to_owned(), v);
        }
        self.row
            .eval(&self.env, &ctx, "")
            .map_err(|m| EngineError::Config(format!("the output row of item {}: {m}", item.id)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(row: &str) -> OutputSpec {
        toml::from_str(&format!("file = \"x.jsonl\"\n[row]\n{row}")).unwrap()
    }

    #[test]
    fn a_row_is_made_of_expressions_literals_tables_and_lists() {
        let s = RowsSpec::of(
            &spec("id = \"recipe ~ '/' ~ item_id\"\nn = 3\nlist = [\"a\", \"'lit'\"]\n[row.fact]\nsubject = \"a|upper\"\nby = \"'offline rules' if offline else 'model'\""),
            "d",
        )
        .unwrap();
        assert_eq!(s.config, "d");
        let item = Item {
            index: 0,
            id: "7".into(),
            origin: cb_model::Origin {
                file: "f".into(),
                line: 2,
            },
            fields: serde_json::json!({"a": "x"}).as_object().unwrap().clone(),
            calls: Vec::new(),
        };
        let row = s.row(&item, "cb-popqa", true).unwrap();
        assert_eq!(
            row,
            serde_json::json!({"fact": {"by": "offline rules", "subject": "X"}, "id": "cb-popqa/7", "list": ["x", "lit"], "n": 3})
        );
        let names: Vec<String> = s.names().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["offline", "a", "item_id", "recipe"]);
        let bad = RowsSpec::of(&spec("x = \"missing\""), "d").unwrap();
        let e = bad.row(&item, "r", false).unwrap_err().to_string();
        assert!(e.contains("column x = `missing`"), "{e}");
    }

    #[test]
    fn a_bad_output_table_is_refused_with_its_reason() {
        let mut s = spec("x = \"a\"");
        s.file = "../rows.jsonl".into();
        assert!(RowsSpec::of(&s, "d")
            .unwrap_err()
            .contains("file name of its own"));
        s.file = "rejects.jsonl".into();
        assert!(RowsSpec::of(&s, "d").is_err());
        let e = RowsSpec::of(&spec("x = \"a +\""), "d").unwrap_err();
        assert!(e.contains("column x = `a +` does not compile"), "{e}");
    }
}
