//! The first pass over a source counts its items for a progress display and fills the views
//! the steps declare. A recipe whose steps declare no view, built with no display showing the
//! total, reads its source once: the build writes the same files either way, and a display
//! that shows the total is given the number of items.

use cb_engine::source::SourceOptions;
use cb_engine::{build_recipe, BuildOptions, Progress, Recipe, Routes};
use cb_llm::{Llm, LlmConfig};
use cb_step::Files;
use std::path::Path;
use std::sync::Mutex;

/// Records the totals it is given; shows them when `shows`.
struct Totals {
    shows: bool,
    seen: Mutex<Vec<u64>>,
}

impl Progress for Totals {
    fn shows_total(&self) -> bool {
        self.shows
    }
    fn start(&self, _recipe: &str, total: u64) {
        self.seen.lock().unwrap().push(total);
    }
}

/// Builds the bundled CoS-E recipe (no step declares a view) on three questions into `out`.
async fn build(dir: &Path, out: &Path, progress: &Totals) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let recipe = Recipe::load(&Files::Dir(repo.join("recipes")), "kre-cose.toml").unwrap();
    let opts = BuildOptions {
        sources: SourceOptions {
            raw: dir.join("raw"),
            ..SourceOptions::default()
        },
        out: out.to_path_buf(),
        prompts: Files::Dir(repo.join("prompts")),
        seed: 7,
        write: true,
        steps: cb_steps::STEPS,
    };
    let routes = Routes::new(Llm::new(LlmConfig::offline()).unwrap());
    build_recipe(&recipe, &opts, &routes, progress)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_source_is_counted_only_for_a_display_that_shows_the_total() {
    let dir = tempfile::tempdir().unwrap();
    let (q, e) = (
        dir.path().join("raw/commonsenseqa"),
        dir.path().join("raw/cos_e"),
    );
    std::fs::create_dir_all(&q).unwrap();
    std::fs::create_dir_all(&e).unwrap();
    let mut questions = String::new();
    let mut explanations = String::new();
    for (i, (stem, right, why)) in [
        (
            "Where would you keep milk cold?",
            "fridge",
            "A fridge keeps food cold.",
        ),
        (
            "What do you use to cut paper?",
            "scissors",
            "Scissors cut paper.",
        ),
        ("Where do fish live?", "water", "Fish live in water."),
    ]
    .into_iter()
    .enumerate()
    {
        questions.push_str(&format!(
            "{{\"id\": \"q{i}\", \"question\": \"{stem}\", \"question_concept\": \"x\", \"choices\": {{\"label\": [\"A\", \"B\", \"C\"], \"text\": [\"{right}\", \"desk\", \"roof\"]}}, \"answerKey\": \"A\"}}\n"
        ));
        explanations.push_str(&format!(
            "{{\"id\": \"q{i}\", \"explanation\": {{\"open-ended\": \"{why}\", \"selected\": \"{right}\"}}}}\n"
        ));
    }
    std::fs::write(q.join("dev_rand_split.jsonl"), questions).unwrap();
    std::fs::write(e.join("cose_dev_v1.11.jsonl"), explanations).unwrap();

    let (shown, hidden) = (dir.path().join("shown"), dir.path().join("hidden"));
    let counting = Totals {
        shows: true,
        seen: Mutex::new(Vec::new()),
    };
    build(dir.path(), &shown, &counting).await;
    assert_eq!(*counting.seen.lock().unwrap(), [3]);
    let quiet = Totals {
        shows: false,
        seen: Mutex::new(Vec::new()),
    };
    build(dir.path(), &hidden, &quiet).await;
    assert_eq!(*quiet.seen.lock().unwrap(), [0], "no pass only to count");

    let rows = |out: &Path, file: &str| std::fs::read(out.join("kre/cose").join(file)).unwrap();
    for file in ["cose.json", "cose.jsonl", "rejects.jsonl"] {
        assert_eq!(rows(&shown, file), rows(&hidden, file), "{file}");
    }
    let jsonl = String::from_utf8(rows(&hidden, "cose.jsonl")).unwrap();
    assert_eq!(jsonl.lines().count(), 3, "{jsonl}");
}
