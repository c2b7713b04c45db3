#![allow(clippy::print_stderr)] // the budget test prints what it paid
//! Routing (issue 34): who answers each call is decided once, when the command and its
//! recipes load, by one roster. Every contradiction between flags, recipe and models file is
//! refused before any file or cache is made, naming the file and line or the flag; one budget
//! pays for every layer of the command; every figure counts every layer and agrees with the
//! endpoints' own journals; a signal stops every layer.

mod common;

use cb_mock::{responder, MockServer, Reply};
use common::*;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The bundled e-CARE recipe with `lines` put after its `kind = "KIND"` line for each
/// `(KIND, lines)`, alone in `dir/recipes`; gives the folder and the edited text.
fn ecare_with(dir: &Path, edits: &[(&str, &str)]) -> (PathBuf, String) {
    recipe_with(dir, "kre-ecare.toml", edits)
}

/// [`ecare_with`] for the bundled recipe `file`.
fn recipe_with(dir: &Path, file: &str, edits: &[(&str, &str)]) -> (PathBuf, String) {
    let mut text = std::fs::read_to_string(repo().join("recipes").join(file)).unwrap();
    for (kind, lines) in edits {
        let at = format!("kind = \"{kind}\"\n");
        let edited = text.replacen(&at, &format!("{at}{lines}\n"), 1);
        assert_ne!(edited, text, "no step {kind}");
        text = edited;
    }
    let folder = dir.join("recipes");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join(file), &text).unwrap();
    (folder, text)
}

/// The 1-based line of the first line of `text` that starts with `start`.
fn line_of(text: &str, start: &str) -> usize {
    text.lines()
        .position(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line {start:?}"))
        + 1
}

const MODELS: &str = "[models.cheap]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"cheap-m\"\n\n[models.strong]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"strong-m\"\n\n[models.public]\nbase_url = \"https://api.example.com/v1\"\nmodel = \"gpt-4o\"\n";

/// One case of the table: recipe edits, a models file (`None`: [`MODELS`]), flags, and what
/// the refusal must say (`{recipe}` stands for the edited recipe's path, `{models}` for the
/// models file's).
struct Case {
    what: &'static str,
    edits: &'static [(&'static str, &'static str)],
    models: Option<&'static str>,
    flags: &'static [&'static str],
    /// Substrings of the error; `LINE:pattern` is the recipe's line starting with `pattern`.
    says: &'static [&'static str],
}

const WITH_MODEL: &[&str] = &["--base-url", "http://127.0.0.1:9/v1", "--model", "w"];

fn cases() -> Vec<Case> {
    vec![
        Case {
            what: "a recipe's model on a rule step",
            edits: &[("pick_negative", "model = \"strong\"")],
            models: None,
            flags: WITH_MODEL,
            says: &["LINE:model = \"strong\"", "calls no model", "pick_negative"],
        },
        Case {
            what: "--model-for on a rule step",
            edits: &[],
            models: None,
            flags: &["--model-for", "pick_negative=strong"],
            says: &["--model-for pick_negative=strong", "calls no model"],
        },
        Case {
            what: "a step given two models",
            edits: &[],
            models: None,
            flags: &[
                "--model-for",
                "negative_explanation=strong",
                "--model-for",
                "negative_explanation=cheap",
            ],
            says: &[
                "--model-for negative_explanation=strong and --model-for negative_explanation=cheap",
                "one model",
            ],
        },
        Case {
            what: "the reader routed by a recipe's model",
            edits: &[("reader_check", "model = \"strong\"")],
            models: None,
            flags: WITH_MODEL,
            says: &["LINE:model = \"strong\"", "--reader strong", "readers = [\"strong\"]"],
        },
        Case {
            what: "the reader routed by --model-for",
            edits: &[],
            models: None,
            flags: &["--model-for", "reader_check=strong"],
            says: &["--model-for reader_check=strong", "--reader strong"],
        },
        Case {
            what: "--reader beside a recipe panel",
            edits: &[("reader_check", "readers = [\"strong\"]")],
            models: None,
            flags: &["--reader", "cheap"],
            says: &["LINE:readers = ", "--reader cheap", "keep one"],
        },
        Case {
            what: "--reader-base-url beside a recipe panel",
            edits: &[("reader_check", "readers = [\"strong\"]")],
            models: None,
            flags: &[
                "--reader-base-url",
                "http://127.0.0.1:9/v1",
                "--reader-model",
                "r",
            ],
            says: &["LINE:readers = ", "--reader-base-url/--reader-model"],
        },
        Case {
            what: "an empty panel",
            edits: &[("reader_check", "readers = []")],
            models: None,
            flags: &[],
            says: &["LINE:readers = []", "names nobody"],
        },
        Case {
            what: "an unknown agree",
            edits: &[("reader_check", "readers = [\"strong\", \"cheap\"]\nagree = \"most\"")],
            models: None,
            flags: &[],
            says: &["LINE:agree = ", "unknown `agree = \"most\"`"],
        },
        Case {
            what: "agree without readers",
            edits: &[("reader_check", "agree = \"all\"")],
            models: None,
            flags: &[],
            says: &["LINE:agree = ", "`agree` needs `readers`"],
        },
        Case {
            what: "votes = 0",
            edits: &[("reader_check", "votes = 0")],
            models: None,
            flags: &[],
            says: &["LINE:votes = 0", "must be a whole number from 1 to 100"],
        },
        Case {
            what: "max_tokens = 0",
            edits: &[("reader_check", "max_tokens = 0")],
            models: None,
            flags: &[],
            says: &["LINE:max_tokens = 0", "must be a whole number from 1 to 1000000"],
        },
        Case {
            what: "a share that is not a number",
            edits: &[("reader_check", "max_answer_set_share = nan")],
            models: None,
            flags: &[],
            says: &["LINE:max_answer_set_share = nan", "NaN is not a number: must be a number from 0 to 1"],
        },
        Case {
            what: "a reader named twice",
            edits: &[("reader_check", "readers = [\"strong\", \"strong\"]")],
            models: None,
            flags: &[],
            says: &["LINE:readers = ", "names \"strong\" twice"],
        },
        Case {
            what: "--model-for in a build that runs offline",
            edits: &[],
            models: None,
            flags: &["--model-for", "negative_explanation=strong"],
            says: &["--model-for negative_explanation=strong", "runs offline", "--base-url"],
        },
        Case {
            what: "a recipe's model in a build that runs offline",
            edits: &[("negative_explanation", "model = \"strong\"")],
            models: None,
            flags: &[],
            says: &["LINE:model = \"strong\"", "runs offline", "--base-url"],
        },
        Case {
            what: "concurrency = 0 in a models file",
            edits: &[],
            models: Some("[models.a]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n\n[models.b]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\nconcurrency = 0\n"),
            flags: &[],
            says: &["{models}:5: models.b", "`concurrency = 0`"],
        },
        Case {
            what: "a reserved name in a models file",
            edits: &[],
            models: Some("[models.none]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n"),
            flags: &[],
            says: &["{models}:1: models.none", "reserved"],
        },
        Case {
            what: "the API key of an offline build's named reader",
            edits: &[],
            models: None,
            flags: &["--reader", "public"],
            says: &["models.public.base_url", "OPENAI_API_KEY"],
        },
        Case {
            what: "the API key of an offline build's panel",
            edits: &[("reader_check", "readers = [\"public\"]")],
            models: None,
            flags: &[],
            says: &["models.public.base_url", "OPENAI_API_KEY"],
        },
        Case {
            what: "the API key of an offline build's --reader-base-url",
            edits: &[],
            models: None,
            flags: &[
                "--reader-base-url",
                "https://api.example.com/v1",
                "--reader-model",
                "gpt-4o",
            ],
            says: &["--reader-base-url", "OPENAI_API_KEY"],
        },
    ]
}

/// Every contradiction of flags, recipe and models file is exit 2 naming the recipe's file
/// and line, the models file's, or the flag, before any file or cache is made.
#[tokio::test(flavor = "multi_thread")]
async fn every_contradiction_is_refused_at_load_with_its_place_and_nothing_is_made() {
    let raw = repo().join("raw").display().to_string();
    let mut failures = Vec::new();
    for (i, case) in cases().into_iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let (recipes, text) = ecare_with(dir.path(), case.edits);
        let models = dir.path().join("models.toml");
        std::fs::write(&models, case.models.unwrap_or(MODELS)).unwrap();
        let out = dir.path().join("out");
        let (out_s, models_s) = (out.display().to_string(), models.display().to_string());
        let mut args = vec![
            "kre",
            "--domains",
            "ecare",
            "--raw",
            &raw,
            "--out",
            &out_s,
            "--models",
            &models_s,
        ];
        args.extend(case.flags);
        let o = build_with(&recipes, &args, &[]).await;
        let said = text_of(&o);
        let recipe = recipes.join("kre-ecare.toml").display().to_string();
        let mut wrong = Vec::new();
        if o.status.code() != Some(2) {
            wrong.push(format!("exit {:?}", o.status.code()));
        }
        for s in case.says {
            let want = match s.strip_prefix("LINE:") {
                Some(start) => format!("{recipe}:{}: step", line_of(&text, start)),
                None => s.replace("{models}", &models_s),
            };
            if !said.contains(&want) {
                wrong.push(format!("no {want:?}"));
            }
        }
        if out.exists() {
            wrong.push("the output folder was made".into());
        }
        if !wrong.is_empty() {
            failures.push(format!("{i} {}: {}\n  {said}", case.what, wrong.join("; ")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn text_of(o: &std::process::Output) -> String {
    text(o).trim().to_owned()
}

/// What the routes allow, said by the dry run (it calls nobody and makes no file): a named
/// reader of an offline build reads; `--model-for` overrides a recipe's `model`; a panel and a
/// named step model each count their calls.
#[tokio::test(flavor = "multi_thread")]
async fn the_routes_the_rules_allow_are_the_ones_the_dry_run_counts() {
    let raw = repo().join("raw").display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models.toml");
    std::fs::write(&models, MODELS).unwrap();
    let models_s = models.display().to_string();
    type Check = fn(&str) -> bool;
    type Edits<'a> = &'a [(&'a str, &'a str)];
    let table: Vec<(Edits<'_>, Vec<&str>, Check)> = vec![
        // An offline build read by a named model: the writer calls nobody.
        (&[], vec!["--reader", "strong"], |s| {
            s.contains("; strong: ") && !s.contains("; strong: 0 calls") && !s.contains("cheap")
        }),
        // Too few rows to trust a reader: the dry run, which asked it nothing, says nothing
        // of its trust.
        (&[], vec!["--reader", "strong", "--limit", "4"], |s| {
            s.contains("; strong: ")
        }),
        // --model-for wins over the recipe's model; the writer keeps the other steps.
        (
            &[("negative_explanation", "model = \"cheap\"")],
            [WITH_MODEL, &["--model-for", "negative_explanation=strong"]].concat(),
            |s| s.contains("; strong: ") && !s.contains("cheap"),
        ),
        // A panel and a named step model, each counted apart.
        (
            &[
                ("negative_explanation", "model = \"strong\""),
                ("reader_check", "readers = [\"cheap\", \"strong\"]"),
            ],
            WITH_MODEL.to_vec(),
            |s| s.contains("; cheap: ") && s.contains("; strong: "),
        ),
    ];
    for (i, (edits, flags, check)) in table.into_iter().enumerate() {
        let sub = dir.path().join(format!("{i}"));
        let (recipes, _) = ecare_with(&sub, edits);
        let out = sub.join("out").display().to_string();
        let mut args = vec![
            "kre",
            "--domains",
            "ecare",
            "--raw",
            &raw,
            "--out",
            &out,
            "--models",
            &models_s,
            "--dry-run",
        ];
        args.extend(flags);
        let o = build_with(&recipes, &args, &[]).await;
        assert!(o.status.success(), "{i}: {}", text(&o));
        let said = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(check(&said), "{i}: {said}");
        // A dry run asked no reader anything: it warns of nothing they said.
        let logged = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(!logged.contains("reader-verified"), "{i}: {logged}");
        assert!(!sub.join("out").exists(), "{i}: a dry run made files");
    }
}

/// A reader that follows the context (the stand-in), each answer costing 100 prompt and 1
/// completion tokens.
fn priced_reader() -> cb_mock::Responder {
    responder(|req| match cb_mock::stand_in::answer(req) {
        Reply::Content(content) => Reply::ContentWith {
            content,
            finish_reason: "stop".into(),
            usage: Some((100, 1)),
        },
        other => other,
    })
}

/// USD of one reader answer at gpt-4o's built-in price (2.50 and 10.00 per million).
const PER_CALL: f64 = (100.0 * 2.5 + 10.0) / 1e6;

fn reader_requests(mock: &MockServer) -> usize {
    mock.journal()
        .iter()
        .filter(|j| j.body.to_string().contains("Answer with the letter"))
        .count()
}

/// One budget for the whole command: an offline writer read by a model over five recipes,
/// with `--max-cost` paying for a third of the reads, spends at most the budget plus the calls
/// in flight, exits 3, and the same command without the cap finishes paying for no read twice.
#[tokio::test(flavor = "multi_thread")]
async fn one_budget_pays_for_every_recipes_reader() {
    const CONCURRENCY: usize = 2;
    let raw = repo().join("raw").display().to_string();
    let run = |mock: &MockServer, out: &Path, budget: Option<String>| {
        let (base, out) = (mock.base_url(), out.display().to_string());
        let raw = raw.clone();
        async move {
            let conc = CONCURRENCY.to_string();
            let mut args: Vec<&str> = vec![
                "kre",
                "--raw",
                &raw,
                "--out",
                &out,
                "--reader-base-url",
                &base,
                "--reader-model",
                "gpt-4o",
                "--concurrency",
                &conc,
            ];
            if let Some(b) = &budget {
                args.extend(["--max-cost", b]);
            }
            build(&args, &[]).await
        }
    };
    // The reads of the five recipes, counted by a first build with no cap.
    let whole = MockServer::start(priced_reader()).await;
    let dir = tempfile::tempdir().unwrap();
    let o = run(&whole, &dir.path().join("whole"), None).await;
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(text(&o).matches(" rows, ").count(), 5, "{}", text(&o));
    let reads = reader_requests(&whole);
    assert!(reads >= 30, "{reads}");

    let mock = MockServer::start(priced_reader()).await;
    let budget = PER_CALL * (reads / 3) as f64;
    let out = dir.path().join("capped");
    let o = run(&mock, &out, Some(format!("{budget:.6}"))).await;
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let paid = reader_requests(&mock);
    let spent = PER_CALL * paid as f64;
    assert!(
        spent <= budget + PER_CALL * CONCURRENCY as f64 + 1e-9,
        "spent {spent} of a budget of {budget} ({paid} reads of {reads})"
    );
    assert!(paid > 0, "{}", text(&o));
    eprintln!("budget {budget:.6} USD: {paid} of {reads} reads paid, {spent:.6} USD spent");

    // Resumable: the same command without the cap pays for the rest only.
    let o = run(&mock, &out, None).await;
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(reader_requests(&mock), reads, "a read was paid twice");
}

/// The steps of the requests `mock` received, the structured-output probe left out.
fn calls_of(mock: &MockServer) -> u64 {
    mock.journal()
        .iter()
        .filter(|j| {
            !j.body
                .to_string()
                .contains("Greet me in one short sentence")
        })
        .count() as u64
}

/// The number before `what` in `s` after `from`, e.g. "; a: 12 upstream calls".
fn number_after(s: &str, from: &str, what: &str) -> u64 {
    let rest = &s[s.find(from).unwrap_or_else(|| panic!("no {from:?} in {s}")) + from.len()..];
    let n = rest.split(what).next().unwrap();
    n.rsplit(|c: char| !c.is_ascii_digit())
        .find(|t| !t.is_empty())
        .unwrap()
        .parse()
        .unwrap_or_else(|_| panic!("{from} ... {what} in {s}"))
}

/// A build with a panel of two named readers and a named step model: the dry run's calls per
/// model equal the real run's, and the build line, `runs.jsonl` and the manifest equal what
/// each mock received.
#[tokio::test(flavor = "multi_thread")]
async fn every_figure_counts_every_model_as_its_endpoint_does() {
    let (w, a, b, s) = (
        MockServer::start(cb_mock::stand_in::model()).await,
        MockServer::start(cb_mock::stand_in::model()).await,
        MockServer::start(cb_mock::stand_in::model()).await,
        MockServer::start(cb_mock::stand_in::model()).await,
    );
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models.toml");
    std::fs::write(
        &models,
        format!(
            "[models.a]\nbase_url = \"{}\"\nmodel = \"ra\"\n\n[models.b]\nbase_url = \"{}\"\nmodel = \"rb\"\n\n[models.s]\nbase_url = \"{}\"\nmodel = \"sm\"\n",
            a.base_url(),
            b.base_url(),
            s.base_url()
        ),
    )
    .unwrap();
    let (recipes, _) = recipe_with(
        dir.path(),
        "kre-squad.toml",
        &[
            ("negative_context", "model = \"s\""),
            ("reader_check", "readers = [\"a\", \"b\"]"),
        ],
    );
    let raw = repo().join("raw").display().to_string();
    let out = dir.path().join("out");
    let (out_s, models_s, base) = (
        out.display().to_string(),
        models.display().to_string(),
        w.base_url(),
    );
    let args = |dry: bool| {
        let mut v = vec![
            "kre",
            "--domains",
            "squad",
            "--raw",
            &raw,
            "--out",
            &out_s,
            "--models",
            &models_s,
            "--base-url",
            &base,
            "--model",
            "wm",
            "--limit",
            "6",
        ];
        if dry {
            v.push("--dry-run");
        }
        v
    };
    let o = build_with(&recipes, &args(true), &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    let dry = String::from_utf8_lossy(&o.stdout).into_owned();
    for m in [&w, &a, &b, &s] {
        assert_eq!(m.request_count(), 0, "a dry run calls nobody");
    }
    let o = build_with(&recipes, &args(false), &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    let line = String::from_utf8_lossy(&o.stdout).into_owned();
    let dir = out.join("kre/squad");
    let run = read_jsonl(&dir.join("runs.jsonl")).pop().unwrap();
    let manifest = read_json(&dir.join("manifest.json"));
    let used = manifest["models"].as_array().unwrap();
    // The line and runs.jsonl count every request the layer sent (the structured-output
    // probe included); the dry run and the manifest count the steps' calls (the probe left
    // out): each equals what the model's mock received.
    for (name, mock) in [
        (None, &w),
        (Some("a"), &a),
        (Some("b"), &b),
        (Some("s"), &s),
    ] {
        let (sent, calls) = (mock.request_count() as u64, calls_of(mock));
        assert!(calls > 0, "{name:?}: {line}");
        let (key, counters, model) = match name {
            None => (
                "kre-squad: ".to_owned(),
                &run["llm"],
                used.iter().find(|m| m["name"].is_null()),
            ),
            Some(n) => (
                format!("; {n}: "),
                &run["models"][n],
                used.iter().find(|m| m["name"] == n),
            ),
        };
        let line_key = if name.is_none() { " -> " } else { key.as_str() };
        assert_eq!(
            number_after(&dry, &key, " to make"),
            calls,
            "dry run, {name:?}: {dry}"
        );
        assert_eq!(
            number_after(&line, line_key, " upstream calls"),
            sent,
            "line, {name:?}: {line}"
        );
        assert_eq!(
            counters["upstream_calls"].as_u64(),
            Some(sent),
            "runs.jsonl, {name:?}"
        );
        assert_eq!(
            model.unwrap()["calls"].as_u64(),
            Some(calls),
            "manifest, {name:?}"
        );
    }
}

/// SIGINT during a build read by a panel of named models stops every layer (nothing more
/// reaches any endpoint), exits 130 saying so, and the next run pays for nothing twice.
#[tokio::test(flavor = "multi_thread")]
async fn sigint_stops_every_layer_and_the_next_run_pays_nothing_twice() {
    let (a, b) = (
        MockServer::start(cb_mock::stand_in::model()).await,
        MockServer::start(cb_mock::stand_in::model()).await,
    );
    for m in [&a, &b] {
        m.set_latency(Duration::from_millis(200));
    }
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models.toml");
    std::fs::write(
        &models,
        format!(
            "[models.a]\nbase_url = \"{}\"\nmodel = \"ra\"\nconcurrency = 1\n\n[models.b]\nbase_url = \"{}\"\nmodel = \"rb\"\nconcurrency = 1\n",
            a.base_url(),
            b.base_url()
        ),
    )
    .unwrap();
    let (recipes, _) = ecare_with(dir.path(), &[("reader_check", "readers = [\"a\", \"b\"]")]);
    let raw = repo().join("raw").display().to_string();
    let out = dir.path().join("out").display().to_string();
    let models_s = models.display().to_string();
    let args = [
        "kre",
        "--domains",
        "ecare",
        "--raw",
        &raw,
        "--out",
        &out,
        "--models",
        &models_s,
    ];
    let child = build_command(&recipes, &args, &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    let t0 = Instant::now();
    while a.answered() < 3 || b.answered() < 3 {
        assert!(t0.elapsed() < Duration::from_secs(60), "no answers came");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let o = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("the build did not stop")
        .unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    let said = text(&o);
    assert!(
        said.contains("SIGINT") && said.contains("model a") && said.contains("model b"),
        "{said}"
    );
    let at_stop = (a.request_count(), b.request_count());
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        (a.request_count(), b.request_count()),
        at_stop,
        "a layer went on calling after the stop"
    );
    let answered_first = a.answered() + b.answered();

    let o = build_with(&recipes, &args, &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    let run = read_jsonl(&dir.path().join("out/kre/ecare/runs.jsonl"))
        .pop()
        .unwrap();
    let hits: u64 = ["a", "b"]
        .iter()
        .map(|n| run["models"][n]["cache_hits"].as_u64().unwrap())
        .sum();
    // Each reader had at most one call in flight at the signal (concurrency 1): an answer
    // the mock sent then may never have been received; every other was committed and is a
    // cache hit now.
    assert!(
        hits + 2 >= answered_first,
        "{hits} hits of {answered_first} answers"
    );
}
