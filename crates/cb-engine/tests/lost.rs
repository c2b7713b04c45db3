//! A task that panics while it builds an item is a lost task: the build fails with
//! [`EngineError::Lost`] (the CLI's exit code 1), naming the recipe, never as a configuration
//! error (exit code 2), and writes nothing.

use cb_engine::source::SourceOptions;
use cb_engine::{build_recipe, BuildOptions, EngineError, NoProgress, Recipe, Routes};
use cb_llm::{Llm, LlmConfig};
use cb_step::{Files, Item, Registry, Step, StepCtx, StepError, StepFields, StepFuture, StepKind};

#[derive(Debug)]
struct Boom;

impl Step for Boom {
    fn name(&self) -> &str {
        "boom"
    }
    fn run<'a>(&'a self, _: &'a mut Item, _: &'a StepCtx<'_>) -> StepFuture<'a> {
        Box::pin(async { panic!("a step that panics") })
    }
}

fn boom(_: &cb_step::StepSpec, _: &Files) -> Result<Box<dyn Step>, StepError> {
    Ok(Box::new(Boom))
}

const BOOM: Registry = Registry::new(&[StepKind {
    kind: "boom",
    build: boom,
    params: &[],
    fields: |_| StepFields::default(),
}]);

#[tokio::test(flavor = "multi_thread")]
async fn a_panicking_task_is_a_lost_task_not_a_configuration_error() {
    let dir = tempfile::tempdir().unwrap();
    let recipes = dir.path().join("recipes");
    std::fs::create_dir_all(&recipes).unwrap();
    std::fs::write(
        recipes.join("kre-boom.toml"),
        "benchmark = \"kre\"\ndomain = \"boom\"\nformat = \"kre\"\ndescription = \"a step that panics\"\n\n[source]\nname = \"src\"\nreader = \"jsonl\"\nfiles = [\"*.jsonl\"]\n\n[fields]\nquestion = \"q\"\ngolden_context = \"q\"\nchoices = \"c\"\nanswer = \"a\"\n\n[[steps]]\nkind = \"boom\"\n",
    )
    .unwrap();
    let raw = dir.path().join("raw/src");
    std::fs::create_dir_all(&raw).unwrap();
    std::fs::write(
        raw.join("a.jsonl"),
        "{\"id\": \"1\", \"q\": \"?\", \"c\": [\"x\", \"y\"], \"a\": \"A\"}\n",
    )
    .unwrap();
    let recipe = Recipe::load(&Files::Dir(recipes), "kre-boom.toml").unwrap();
    let out = dir.path().join("out");
    let opts = BuildOptions {
        sources: SourceOptions {
            raw: dir.path().join("raw"),
            ..SourceOptions::default()
        },
        out: out.clone(),
        prompts: Files::Dir(dir.path().into()),
        seed: 1,
        write: true,
        steps: BOOM,
    };
    let routes = Routes::new(Llm::new(LlmConfig::offline()).unwrap());
    let e = build_recipe(&recipe, &opts, &routes, &NoProgress)
        .await
        .unwrap_err();
    assert!(matches!(e, EngineError::Lost(_)), "{e:?}");
    let said = e.to_string();
    assert!(
        said.contains("kre-boom") && said.contains("panicked"),
        "{said}"
    );
    assert!(!out.join("kre/boom/manifest.json").exists());
}
