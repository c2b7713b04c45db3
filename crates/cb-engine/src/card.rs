//! The dataset card (`README.md` of an output folder): the Hub's metadata block, how to
//! load it, what it is, how it was made, what the counts are, the schema, the licenses and
//! how to cite the sources. The text is the template `templates/card.md` (minijinja); this
//! module gathers what it shows from the recipe and the manifest.

use crate::hub;
use crate::recipe::Recipe;
use cb_model::Manifest;
use minijinja::{context, Environment};
use serde::Serialize;
use std::sync::OnceLock;

/// The card's template, compiled into the binary.
const TEMPLATE: &str = include_str!("../templates/card.md");

/// The environment that holds the card's template: block tags on their own lines leave no
/// blank line, the final newline is kept, nothing is escaped (the card is Markdown).
fn environment() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_keep_trailing_newline(true);
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        env.add_template("card.md", TEMPLATE)
            .expect("the card template parses");
        env
    })
}

/// What the card says of the reader that checked the rows.
#[derive(Serialize)]
struct ReaderView<'a> {
    model: &'a str,
    endpoint: &'a str,
    backend: &'a str,
    /// `check passed of asked`, comma-separated.
    tallies: String,
    /// (passed, asked) of the control questions when the reader failed too many of them.
    weak: Option<(u64, u64)>,
}

/// One stage's row of the counts table.
#[derive(Serialize)]
struct StageView<'a> {
    name: &'a str,
    in_: u64,
    out: u64,
    rejected: u64,
    reasons: String,
}

/// The card of a build of `recipe` described by its manifest `m`.
pub fn render(recipe: &Recipe, m: &Manifest) -> String {
    let configs = hub::configs(&m.data_files, None);
    let title = format!("{} / {}", m.benchmark.to_uppercase(), m.domain);
    let pretty = if m.card.pretty_name.is_empty() {
        &title
    } else {
        &m.card.pretty_name
    };
    let reader = m.reader.as_ref().map(|r| ReaderView {
        model: &r.model,
        endpoint: &r.endpoint,
        backend: &r.backend,
        tallies: r
            .checks
            .iter()
            .map(|(check, t)| format!("{check} {} of {}", t.passed, t.asked))
            .collect::<Vec<_>>()
            .join(", "),
        weak: r.weak_control(),
    });
    let stages: Vec<StageView> = m
        .stages
        .iter()
        .map(|c| StageView {
            name: &c.name,
            in_: c.in_,
            out: c.out,
            rejected: c.rejected,
            reasons: c
                .reasons
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect::<Vec<_>>()
                .join(", "),
        })
        .collect();
    let ctx = context! {
        front_matter => hub::front_matter(pretty, [&m.card], &configs),
        title,
        description => &recipe.description,
        offline => m.offline,
        reader,
        config_table => hub::config_table(&configs),
        empty => m.data_files.iter().filter(|f| f.rows == 0).map(|f| f.path.as_str()).collect::<Vec<_>>(),
        split => &m.card.split,
        source_split => &m.card.source_split,
        load_example => hub::load_example(&format!("generated/{}/{}", m.benchmark, m.domain), &configs),
        tool => &m.tool,
        tool_version => &m.tool_version,
        recipe => &m.recipe,
        recipe_hash => short(&m.recipe_hash),
        backend => &m.backend,
        model => &m.model,
        endpoint => &m.endpoint,
        reader_cell => m.reader.as_ref().map_or("none (not reader-verified)".to_owned(), |r| format!("{} at {}", r.model, r.endpoint)),
        seed => m.seed,
        rows => m.rows,
        rejected => m.rejected,
        calls => m.llm.calls,
        prompt_tokens => m.llm.prompt_tokens,
        completion_tokens => m.llm.completion_tokens,
        cost => format!("{:.4}", m.llm.estimated_cost_usd),
        inputs => m.inputs.iter().map(|i| context! { path => &i.path, source => &i.source, sha256 => short(&i.sha256) }).collect::<Vec<_>>(),
        prompts => m.prompts.iter().map(|(name, hash)| context! { name, hash => short(hash) }).collect::<Vec<_>>(),
        stages,
        filtered => m.filtered.iter().map(|(reason, count)| context! { reason, count }).collect::<Vec<_>>(),
        recall => recipe.format == "recall",
        domain => &m.domain,
        notes => &recipe.notes,
        license_section => hub::license_section([&m.card]),
        cite => &recipe.cite,
    };
    environment()
        .get_template("card.md")
        .and_then(|t| t.render(ctx))
        .expect("the card template renders every manifest")
}

fn short(h: &str) -> &str {
    &h[..h.len().min(12)]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that failed its controls, a filter and an empty data file: every optional
    /// part of the template shows, and no template syntax is left in the text.
    #[test]
    fn every_optional_part_renders() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../recipes");
        let recipes = crate::load_recipes(&crate::Files::Dir(dir)).unwrap();
        let r = &recipes[0];
        let mut m: Manifest = serde_json::from_value(serde_json::json!({
            "tool": "conflictbench", "tool_version": "0", "benchmark": "kre", "domain": "x",
            "recipe": "r.toml", "recipe_hash": "abcdef0123456789", "description": "d",
            "backend": "openai", "offline": false, "model": "m", "endpoint": "e", "seed": 42,
            "inputs": [], "prompts": {}, "stages": [], "filtered": {"too_short": 3},
            "rows": 0, "rejected": 3, "files": [],
            "llm": {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                    "estimated_cost_usd": 0.0, "price_per_million": [0.0, 0.0]},
            "data_files": [{"config": "rejects", "path": "rejects.jsonl",
                            "split": "validation", "rows": 0, "bytes": 0}],
            "reader": {"backend": "openai", "model": "rm", "endpoint": "http://r",
                       "checks": {"control": {"asked": 10, "passed": 1}}}
        }))
        .unwrap();
        m.card = hub::complete(&r.card, &r.format);
        let card = render(r, &m);
        for part in [
            "> **Reader-verified** by `rm` at `http://r` (openai)",
            "Checks passed: control 1 of 10.\n\n> **Warning: an unreliable reader.** It passed only 1 of 10",
            "\nNo config for `rejects.jsonl`: no rows",
            "\nFiltered out, by reason:\n\n- too_short: 3\n\n## Files\n\n",
        ] {
            assert!(card.contains(part), "{part:?} not in\n{card}");
        }
        assert!(!card.contains("{{") && !card.contains("{%"));
    }
}
