//! Named models (issue 31): `--models FILE` names models, a recipe step calls one with
//! `model = "NAME"`, `--model-for STEP=NAME` overrides it, `--reader NAME` reads with one.
//! The KRE SQuAD recipe against three mocks: each step's calls reach its model's endpoint
//! only; switching a step's model asks that step again and nothing it does not feed; an
//! unknown name is refused at load naming the file, the line and the names known.

mod common;

use cb_mock::MockServer;
use common::*;
use std::path::Path;

/// What a request to the stand-in model is, by its instructions.
fn step_of(body: &serde_json::Value) -> &'static str {
    let text = body.to_string();
    if text.contains("You write wrong answer options") {
        "distractors"
    } else if text.contains("You edit passages") {
        "negative_context"
    } else if text.contains("Answer with the letter") {
        "reader"
    } else if text.contains("Greet me in one short sentence") {
        // The structured-output probe, once per endpoint and model.
        "probe"
    } else {
        "other"
    }
}

/// The steps of the requests `mock` received, with their counts (the probe left out).
fn steps(mock: &MockServer) -> std::collections::BTreeMap<&'static str, usize> {
    let mut out = std::collections::BTreeMap::new();
    for j in mock
        .journal()
        .iter()
        .filter(|j| step_of(&j.body) != "probe")
    {
        *out.entry(step_of(&j.body)).or_default() += 1;
    }
    out
}

/// The bundled SQuAD recipe with `distractors` on model `model`, alone in a folder.
fn recipes_with_model(dir: &Path, model: &str) -> std::path::PathBuf {
    let text = std::fs::read_to_string(repo().join("recipes/kre-squad.toml")).unwrap();
    let edited = text.replacen(
        "kind = \"distractors\"\n",
        &format!("kind = \"distractors\"\nmodel = \"{model}\"\n"),
        1,
    );
    assert_ne!(edited, text);
    let folder = dir.join("recipes");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("kre-squad.toml"), edited).unwrap();
    folder
}

#[tokio::test(flavor = "multi_thread")]
async fn each_step_calls_its_named_model_and_a_switch_asks_again_only_that_step() {
    let (default, cheap, strong) = (
        MockServer::start(cb_mock::stand_in::model()).await,
        MockServer::start(cb_mock::stand_in::model()).await,
        MockServer::start(cb_mock::stand_in::model()).await,
    );
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models.toml");
    std::fs::write(
        &models,
        format!(
            "[models.cheap]\nbase_url = \"{}\"\nmodel = \"cheap-m\"\n\n[models.strong]\nbase_url = \"{}\"\nmodel = \"strong-m\"\nprice_input = 1.0\nprice_output = 2.0\n",
            cheap.base_url(),
            strong.base_url()
        ),
    )
    .unwrap();
    let recipes = recipes_with_model(dir.path(), "cheap");
    let out = dir.path().join("out");
    let (raw, out_s, models_s) = (
        repo().join("raw").display().to_string(),
        out.display().to_string(),
        models.display().to_string(),
    );
    let base = default.base_url();
    let args = |extra: &[&'static str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "kre",
            "--domains",
            "squad",
            "--raw",
            &raw,
            "--out",
            &out_s,
            "--backend",
            "openai",
            "--base-url",
            &base,
            "--model",
            "m",
            "--models",
            &models_s,
            "--model-for",
            "negative_context=strong",
            "--reader",
            "strong",
            "--limit",
            "6",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let run = |extra: &'static [&'static str]| {
        let a = args(extra);
        let recipes = recipes.clone();
        async move {
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            build_with(&recipes, &a, &[]).await
        }
    };

    // A dry run estimates each model apart and calls nobody.
    let o = run(&["--dry-run"]).await;
    assert!(o.status.success(), "{}", text(&o));
    let said = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        said.contains("; cheap: ") && said.contains("; strong: ") && said.contains("to make"),
        "{said}"
    );
    for m in [&default, &cheap, &strong] {
        assert!(m.journal().is_empty(), "a dry run calls nobody");
    }

    let o = run(&[]).await;
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        default.journal().is_empty(),
        "no step calls the default model"
    );
    let (c, s) = (steps(&cheap), steps(&strong));
    assert!(c.get("distractors").is_some_and(|n| *n > 0), "{c:?}");
    assert_eq!(
        c.len(),
        1,
        "the cheap model writes the distractors only: {c:?}"
    );
    assert!(s.get("negative_context").is_some_and(|n| *n > 0), "{s:?}");
    assert!(s.get("reader").is_some_and(|n| *n > 0), "{s:?}");
    assert!(!s.contains_key("distractors"), "{s:?}");
    let said = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        said.contains("; cheap: ") && said.contains("; strong: "),
        "the line names each model's calls: {said}"
    );
    let distractor_calls = c["distractors"];
    models_are_recorded(&out.join("kre/squad"), &c, &s);
    // Each call's model is in the row's lineage: the named one, or none for the build's own.
    let rows = read_jsonl(&out.join("kre/squad/squad.jsonl"));
    assert!(!rows.is_empty());
    for r in &rows {
        for call in r["lineage"].as_array().unwrap() {
            let want = match call["step"].as_str().unwrap() {
                "distractors" => Some("cheap"),
                "negative_context" | "reader_check" => Some("strong"),
                _ => None,
            };
            assert_eq!(call["model"].as_str(), want, "{call}");
        }
    }

    // distractors on "strong": asked again there, nothing of it on "cheap"; the stand-in
    // answers both the same, so what follows (same prompts, same model) comes from the cache.
    cheap.clear_journal();
    strong.clear_journal();
    let o = run(&["--model-for", "distractors=strong"]).await;
    assert!(o.status.success(), "{}", text(&o));
    assert!(cheap.journal().is_empty());
    assert!(default.journal().is_empty());
    let s = steps(&strong);
    assert_eq!(
        s.get("distractors"),
        Some(&distractor_calls),
        "every distractors call is asked again of the new model: {s:?}"
    );
    assert_eq!(s.len(), 1, "nothing else is asked again: {s:?}");
}

/// The manifest and the card of the build in `dir` list each model with its steps, calls,
/// tokens and cost; each named model's calls are those its mock received (`cheap`,
/// `strong`: the journals' counts by step, a first run with an empty cache), and the totals
/// are their sum.
fn models_are_recorded(
    dir: &Path,
    cheap: &std::collections::BTreeMap<&str, usize>,
    strong: &std::collections::BTreeMap<&str, usize>,
) {
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let models = m["models"].as_array().expect("a models list");
    let text = m.to_string();
    assert!(!text.contains("sk-") && !text.contains("api_key"), "{text}");
    let entry = |name: Option<&str>| {
        models
            .iter()
            .find(|e| e["name"].as_str() == name)
            .unwrap_or_else(|| panic!("{name:?} not in {models:?}"))
    };
    let (own, c, s) = (entry(None), entry(Some("cheap")), entry(Some("strong")));
    assert_eq!(models.len(), 3, "{models:?}");
    assert_eq!(models[0], *own, "the build's own model comes first");
    assert_eq!(
        (own["model"].as_str(), own["calls"].as_u64()),
        (Some("m"), Some(0))
    );
    assert_eq!(own["steps"], serde_json::json!([]), "no step calls it");
    assert_eq!(c["model"], "cheap-m");
    assert_eq!(c["steps"], serde_json::json!(["distractors"]));
    assert_eq!(s["model"], "strong-m");
    assert_eq!(
        s["steps"],
        serde_json::json!(["negative_context", "reader_check"])
    );
    let calls = |t: &std::collections::BTreeMap<&str, usize>| t.values().sum::<usize>() as u64;
    assert_eq!(c["calls"].as_u64(), Some(calls(cheap)), "{c}");
    assert_eq!(s["calls"].as_u64(), Some(calls(strong)), "{s}");
    assert!(c["endpoint"]
        .as_str()
        .unwrap()
        .starts_with("http://127.0.0.1:"));
    assert_ne!(c["endpoint"], s["endpoint"]);
    // The strong model's price (1 and 2 dollars a million tokens) gives its cost.
    let (pt, ct) = (
        s["prompt_tokens"].as_u64().unwrap(),
        s["completion_tokens"].as_u64().unwrap(),
    );
    assert!(pt > 0 && ct > 0, "{s}");
    assert_eq!(s["price_per_million"], serde_json::json!([1.0, 2.0]));
    let cost = ((pt as f64 + 2.0 * ct as f64) / 1e6 * 1e6).round() / 1e6;
    assert_eq!(s["estimated_cost_usd"].as_f64(), Some(cost));
    assert!(cost > 0.0);
    // The totals are the sum.
    let sum = |k: &str| models.iter().map(|e| e[k].as_u64().unwrap()).sum::<u64>();
    for k in ["calls", "prompt_tokens", "completion_tokens"] {
        assert_eq!(m["llm"][k].as_u64(), Some(sum(k)), "{k}");
    }
    let usd: f64 = models
        .iter()
        .map(|e| e["estimated_cost_usd"].as_f64().unwrap())
        .sum();
    assert!((m["llm"]["estimated_cost_usd"].as_f64().unwrap() - usd).abs() < 1e-9);
    // The card's table: a row a model, with its steps, calls and cost.
    let card = std::fs::read_to_string(dir.join("README.md")).unwrap();
    for (e, label, steps) in [
        (c, "`cheap`", "distractors"),
        (s, "`strong`", "negative_context, reader_check"),
        (own, "the build's own (`--model`)", "none"),
    ] {
        let row = format!(
            "| {} | {label} | {} | {steps} | {} | {} | {} | ${:.4} |",
            e["model"].as_str().unwrap(),
            e["endpoint"].as_str().unwrap(),
            e["calls"],
            e["prompt_tokens"],
            e["completion_tokens"],
            e["estimated_cost_usd"].as_f64().unwrap()
        );
        assert!(card.contains(&row), "{row} not in\n{card}");
    }
    // What this run sent and found cached, per named model, is in runs.jsonl only.
    assert!(!text.contains("cache_hits") && !text.contains("upstream_calls"));
    let runs = read_jsonl(&dir.join("runs.jsonl"));
    let last = runs.last().unwrap();
    let run = &last["models"]["cheap"];
    assert_eq!(run["calls"].as_u64(), Some(calls(cheap)), "{last}");
    assert_eq!(run["cache_hits"].as_u64(), Some(0), "{last}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_model_name_is_refused_naming_file_line_and_the_known_names() {
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models.toml");
    std::fs::write(
        &models,
        "[models.cheap]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"c\"\n[models.strong]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"s\"\n",
    )
    .unwrap();
    let recipes = recipes_with_model(dir.path(), "cheep");
    let line = std::fs::read_to_string(recipes.join("kre-squad.toml"))
        .unwrap()
        .lines()
        .position(|l| l == "model = \"cheep\"")
        .unwrap()
        + 1;
    let (raw, out) = (
        repo().join("raw").display().to_string(),
        dir.path().join("out").display().to_string(),
    );
    let base = ["kre", "--domains", "squad", "--raw", &raw, "--out", &out];
    let mut args = base.to_vec();
    args.extend(["--models", models.to_str().unwrap()]);
    let o = build_with(&recipes, &args, &[]).await;
    let said = text(&o);
    assert_eq!(o.status.code(), Some(2), "{said}");
    assert!(
        said.contains(&format!("kre-squad.toml:{line}:"))
            && said.contains("model `cheep`")
            && said.contains("known: cheap, strong"),
        "{said}"
    );
    assert!(!dir.path().join("out").exists(), "nothing written");
    // The same from the command line, and for the reader.
    for extra in [["--model-for", "distractors=cheep"], ["--reader", "cheep"]] {
        let mut a = base.to_vec();
        a.extend(["--models", models.to_str().unwrap()]);
        a.extend(extra);
        let o = build(&a, &[]).await;
        let said = text(&o);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {said}");
        assert!(
            said.contains("cheep") && said.contains("cheap, strong"),
            "{said}"
        );
    }
}

/// `--batch-dir` with named models: each model writes its own files (one model a file), the
/// waiting message names each file's model, and once every round is answered the build is
/// byte for byte the online build with the same models.
#[tokio::test(flavor = "multi_thread")]
async fn batch_files_hold_one_model_each_and_end_as_the_online_build() {
    let mock = MockServer::start(cb_mock::stand_in::model()).await;
    let base = mock.base_url();
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models.toml");
    std::fs::write(
        &models,
        format!(
            "[models.cheap]\nbase_url = \"{base}\"\nmodel = \"cheap-m\"\n[models.strong]\nbase_url = \"{base}\"\nmodel = \"strong-m\"\n"
        ),
    )
    .unwrap();
    let raw = repo().join("raw").display().to_string();
    let models_s = models.display().to_string();
    let args = |out: &Path| -> Vec<String> {
        [
            "kre",
            "--domains",
            "squad",
            "--raw",
            &raw,
            "--out",
            &out.display().to_string(),
            "--backend",
            "openai",
            "--base-url",
            &base,
            "--model",
            "m",
            "--models",
            &models_s,
            "--model-for",
            "distractors=cheap",
            "--model-for",
            "negative_context=strong",
            "--reader",
            "strong",
            "--limit",
            "6",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let run = |a: Vec<String>| async move {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        build(&a, &[]).await
    };
    let online_out = dir.path().join("online");
    let o = run(args(&online_out)).await;
    assert!(o.status.success(), "{}", text(&o));

    let (files_out, folder) = (dir.path().join("files"), dir.path().join("batches"));
    let mut files_args = args(&files_out);
    files_args.extend(["--batch-dir".to_owned(), folder.display().to_string()]);
    let mut said = String::new();
    for round in 0.. {
        assert!(round < 10, "no end after {round} rounds");
        let o = run(files_args.clone()).await;
        match o.status.code() {
            Some(0) => break,
            Some(4) => said.push_str(&text(&o)),
            other => panic!("the build exited {other:?}: {}", text(&o)),
        }
        let answered = tokio::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"))
            .args(["batches", "run-dir"])
            .arg(&folder)
            .args(["--base-url", &base])
            .env_remove("OPENAI_API_KEY")
            .output()
            .await
            .unwrap();
        assert!(answered.status.success(), "{}", text(&answered));
    }
    let mut models_of_files = std::collections::BTreeSet::new();
    for e in std::fs::read_dir(&folder).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.starts_with("requests-") && name.ends_with(".jsonl")) || name.contains(".output")
        {
            continue;
        }
        let models: std::collections::BTreeSet<String> = read_jsonl(&p)
            .iter()
            .map(|l| l["body"]["model"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(models.len(), 1, "{name} holds one model: {models:?}");
        models_of_files.extend(models);
    }
    assert_eq!(
        models_of_files,
        ["cheap-m", "strong-m"].map(String::from).into(),
        "each model wrote its own files"
    );
    assert!(
        said.contains("model cheap-m") && said.contains("model strong-m"),
        "{said}"
    );
    let (got, want) = (
        snapshot(&files_out.join("kre/squad")),
        snapshot(&online_out.join("kre/squad")),
    );
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &want {
        assert!(
            got[name] == *bytes,
            "{name} differs from the online build's"
        );
    }
}

/// A named model reached through a pool of endpoints (`[[models.NAME.endpoint]]`): its
/// step's calls are spread over the pool's endpoints and reach no other.
#[tokio::test(flavor = "multi_thread")]
async fn a_named_model_can_be_a_pool() {
    let (default, a, b) = (
        MockServer::start(cb_mock::stand_in::model()).await,
        MockServer::start(cb_mock::stand_in::model()).await,
        MockServer::start(cb_mock::stand_in::model()).await,
    );
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models.toml");
    std::fs::write(
        &models,
        format!(
            "[models.fleet]\nmodel = \"fleet-m\"\n[[models.fleet.endpoint]]\nurl = \"{}\"\nconcurrency = 1\n[[models.fleet.endpoint]]\nurl = \"{}\"\nconcurrency = 1\n",
            a.base_url(),
            b.base_url()
        ),
    )
    .unwrap();
    let (raw, out) = (
        repo().join("raw").display().to_string(),
        dir.path().join("out").display().to_string(),
    );
    let base = default.base_url();
    let args = [
        "kre",
        "--domains",
        "squad",
        "--raw",
        &raw,
        "--out",
        &out,
        "--backend",
        "openai",
        "--base-url",
        &base,
        "--model",
        "m",
        "--models",
        models.to_str().unwrap(),
        "--model-for",
        "distractors=fleet",
        "--reader",
        "none",
        "--limit",
        "6",
    ];
    let o = build(&args, &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    let (sa, sb, sd) = (steps(&a), steps(&b), steps(&default));
    for s in [&sa, &sb] {
        assert!(
            s.get("distractors").is_some_and(|n| *n > 0),
            "both endpoints answer: {s:?}"
        );
        assert_eq!(s.len(), 1, "the pool answers the distractors only: {s:?}");
    }
    assert!(!sd.contains_key("distractors"), "{sd:?}");
    assert!(sd.get("negative_context").is_some_and(|n| *n > 0), "{sd:?}");
}
