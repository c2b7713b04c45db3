//! Several recipes built at once ([`build_recipes`]) write what each built alone writes, and
//! their outcomes come back in the jobs' order.

use cb_engine::recipe::select;
use cb_engine::source::SourceOptions;
use cb_engine::{build_recipe, build_recipes, load_recipes, BuildOptions, NoProgress, RecipeJob};
use cb_llm::{Llm, LlmConfig};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every file under `dir` but the run log, by relative path.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().unwrap() != "runs.jsonl" {
                let name = p.strip_prefix(dir).unwrap().display().to_string();
                out.insert(name, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn options(out: &Path) -> BuildOptions {
    BuildOptions {
        sources: SourceOptions {
            raw: repo().join("raw"),
            ..SourceOptions::default()
        },
        out: out.to_path_buf(),
        prompts: cb_engine::Files::Dir(repo().join("prompts")),
        seed: cb_engine::build::DEFAULT_SEED,
        write: true,
        steps: cb_steps::STEPS,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn recipes_built_together_write_what_each_writes_alone() {
    let recipes = load_recipes(&cb_engine::Files::Dir(repo().join("recipes"))).unwrap();
    let selected = select(&recipes, "all", &[]).unwrap();
    assert!(selected.len() >= 4, "{}", selected.len());
    let routes = cb_engine::Routes::new(Llm::new(LlmConfig::offline()).unwrap());
    let (alone, together) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());

    let opts = options(alone.path());
    let mut rows = Vec::new();
    for r in &selected {
        let o = build_recipe(r, &opts, &routes, &NoProgress).await.unwrap();
        rows.push((o.recipe, o.rows));
    }

    let opts = options(together.path());
    let jobs: Vec<RecipeJob> = selected
        .iter()
        .map(|r| RecipeJob {
            recipe: r,
            opts: &opts,
            routes: &routes,
        })
        .collect();
    let outcomes = build_recipes(&jobs, &NoProgress).await;
    let got: Vec<(String, u64)> = outcomes
        .into_iter()
        .map(|o| o.map(|o| (o.recipe, o.rows)).unwrap())
        .collect();
    assert_eq!(got, rows);
    assert!(rows.iter().all(|(_, n)| *n > 0), "{rows:?}");
    let (a, b) = (files(alone.path()), files(together.path()));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (name, bytes) in &a {
        assert!(b[name] == *bytes, "{name} differs");
    }
}
