#![allow(clippy::print_stderr)] // the tests print the figures they measure
//! End-to-end tests of `conflictbench build kre` on the commonsense recipes: fidelity to the
//! released files, caching, resume after SIGKILL, determinism across concurrency, replay,
//! budget, secrets and bad input.

mod common;

use cb_mock::MockServer;
use common::*;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

#[tokio::test(flavor = "multi_thread")]
async fn built_rows_equal_the_released_rows_they_share() {
    let Some(data) = shared_data() else { return };
    let out = tempfile::tempdir().unwrap();
    let o = build(
        &[
            "kre",
            "--domains",
            "cose,ecare",
            "--raw",
            data.to_str().unwrap(),
            "--out",
            out.path().to_str().unwrap(),
        ],
        &[],
    )
    .await;
    assert!(o.status.success(), "{}", text(&o));
    for (domain, expect_min) in [("cose", 30), ("ecare", 150)] {
        let dir = out.path().join("kre").join(domain);
        let built = read_json(&dir.join(format!("{domain}.json")));
        let released = read_json(&data.join(format!("kre/{domain}.json")));
        let by_question: HashMap<&str, &Value> = built
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["question"].as_str().unwrap(), r))
            .collect();
        let mut shared = 0;
        for rel in released.as_array().unwrap() {
            if let Some(b) = by_question.get(rel["question"].as_str().unwrap()) {
                shared += 1;
                for key in ["question", "choices", "answer", " golden_context"] {
                    assert_eq!(b[key], rel[key], "{domain}: {key} of {}", rel["question"]);
                }
            }
        }
        assert!(shared >= expect_min, "{domain}: only {shared} shared rows");
        if domain == "ecare" {
            // Every row of dev_full.jsonl is kept (premises that say "cannot" or that are
            // the golden answer included), and every released row is among them.
            let lines = std::fs::read_to_string(data.join("ecare/dev_full.jsonl"))
                .unwrap()
                .lines()
                .filter(|l| !l.trim().is_empty())
                .count();
            assert_eq!(built.as_array().unwrap().len(), lines, "ecare rows kept");
            assert_eq!(
                shared,
                released.as_array().unwrap().len(),
                "ecare released rows"
            );
        }
        for r in built.as_array().unwrap() {
            let cand = r["candidate"].as_str().unwrap();
            let idx = (cand.as_bytes()[0] - b'A') as usize;
            assert_eq!(r["negative_answer"], r["choices"][idx], "{r}");
            assert_ne!(r["candidate"], r["answer"], "{r}");
            assert!(
                !r["negative_context"].as_str().unwrap().trim().is_empty(),
                "{r}"
            );
        }
        let m = read_json(&dir.join("manifest.json"));
        assert_eq!(m["backend"], "offline");
        assert_eq!(m["offline"], true);
        assert!(std::fs::read_to_string(dir.join("README.md"))
            .unwrap()
            .contains("Offline build"));
        assert_counts_add_up(&dir);
        eprintln!("{domain}: {shared} released rows shared, all deterministic fields equal");
    }
    // The released layout: 4-space indent, the leading-space key, no trailing newline.
    let bytes = std::fs::read(out.path().join("kre/cose/cose.json")).unwrap();
    assert!(bytes.starts_with(b"[\n    {\n        \"question\""));
    assert!(String::from_utf8_lossy(&bytes).contains("\n        \" golden_context\": "));
}

#[tokio::test(flavor = "multi_thread")]
async fn second_build_makes_no_call_and_writes_identical_files_and_replay_reproduces() {
    let mock = MockServer::start(model()).await;
    let raw = tempfile::tempdir().unwrap();
    many_questions(raw.path(), 30);
    let out = tempfile::tempdir().unwrap();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let base = mock.base_url();
    let first = build(&openai_args("cose", &base, r, o), &[]).await;
    assert!(first.status.success(), "{}", text(&first));
    let calls = mock.request_count();
    assert_eq!(calls, 30, "one call per item");
    let snap = snapshot(out.path());
    let second = build(&openai_args("cose", &base, r, o), &[]).await;
    assert!(second.status.success(), "{}", text(&second));
    assert_eq!(
        mock.request_count(),
        calls,
        "the second build called upstream"
    );
    assert_eq!(
        snapshot(out.path()),
        snap,
        "the second build wrote different bytes"
    );
    // Replay: no endpoint flags, endpoint and model come from the manifest; nothing is sent.
    let replay = build(
        &[
            "kre",
            "--domains",
            "cose",
            "--backend",
            "replay",
            "--raw",
            r,
            "--out",
            o,
        ],
        &[],
    )
    .await;
    assert!(replay.status.success(), "{}", text(&replay));
    assert_eq!(mock.request_count(), calls);
    assert_eq!(snapshot(out.path()), snap);
    // Replay against an empty cache names the missing request and fails.
    let empty = tempfile::tempdir().unwrap();
    let cache = empty.path().join("c.sqlite");
    let miss = build(
        &[
            "kre",
            "--domains",
            "cose",
            "--backend",
            "replay",
            "--base-url",
            &base,
            "--model",
            "m",
            "--raw",
            r,
            "--out",
            empty.path().to_str().unwrap(),
            "--cache",
            cache.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    assert!(!miss.status.success());
    assert!(
        text(&miss).contains("no cached answer for item"),
        "{}",
        text(&miss)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrency_1_and_64_give_identical_files() {
    let mock = MockServer::start(model()).await;
    let raw = tempfile::tempdir().unwrap();
    many_questions(raw.path(), 40);
    let mut snaps = Vec::new();
    for c in ["1", "64"] {
        let out = tempfile::tempdir().unwrap();
        let base = mock.base_url();
        let mut args = openai_args(
            "cose",
            &base,
            raw.path().to_str().unwrap(),
            out.path().to_str().unwrap(),
        );
        args.extend(["--concurrency", c]);
        let o = build(&args, &[]).await;
        assert!(o.status.success(), "{}", text(&o));
        snaps.push(snapshot(out.path()));
    }
    assert!(snaps[0].keys().any(|k| k.ends_with("cose.json")));
    assert_eq!(snaps[0], snaps[1]);
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_builds_resume_without_paying_twice() {
    let n = 60usize;
    for kill_after in [3usize, 25, 50] {
        let mock = MockServer::start(model()).await;
        mock.set_latency(std::time::Duration::from_millis(40));
        let raw = tempfile::tempdir().unwrap();
        many_questions(raw.path(), n);
        let out = tempfile::tempdir().unwrap();
        let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
        let base = mock.base_url();
        let mut args = openai_args("cose", &base, r, o);
        args.extend(["--concurrency", "4"]);
        let mut child = spawn_build(&args);
        while mock.request_count() < kill_after {
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        child.start_kill().unwrap(); // SIGKILL
        child.wait().await.unwrap();
        let cache = cb_llm::Cache::open(&out.path().join("llm-cache.sqlite")).unwrap();
        let cached = cache.len().unwrap() as usize;
        drop(cache);
        let sent_before = mock.request_count();
        assert!(
            cached <= sent_before && cached < n,
            "kill at {kill_after}: {cached} cached"
        );
        // No output file is half-written: whatever exists parses.
        for (name, bytes) in snapshot(out.path()) {
            if name.ends_with(".json") {
                serde_json::from_slice::<Value>(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
            }
        }
        let again = build(&args, &[]).await;
        assert!(again.status.success(), "{}", text(&again));
        let sent_after = mock.request_count() - sent_before;
        assert_eq!(
            sent_after,
            n - cached,
            "kill at {kill_after}: resumed run re-sent cached requests"
        );
        let rows = read_json(&out.path().join("kre/cose/cose.json"));
        assert_eq!(rows.as_array().unwrap().len(), n);
        assert_counts_add_up(&out.path().join("kre/cose"));
        eprintln!("killed after {kill_after} requests: {cached} cached, resume sent {sent_after}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_api_key_is_never_written_or_logged() {
    let key = "sk-test-DO-NOT-LEAK-4242";
    let mock = MockServer::start(model()).await;
    mock.push_faults([
        cb_mock::Reply::rate_limited("0"),
        cb_mock::Reply::server_error(500),
        cb_mock::Reply::bad_request("nope"),
    ]);
    let raw = tempfile::tempdir().unwrap();
    many_questions(raw.path(), 5);
    let out = tempfile::tempdir().unwrap();
    let o = build(
        &openai_args(
            "cose",
            &mock.base_url(),
            raw.path().to_str().unwrap(),
            out.path().to_str().unwrap(),
        ),
        &[("OPENAI_API_KEY", key), ("RUST_LOG", "trace")],
    )
    .await;
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        mock.journal()
            .iter()
            .all(|j| j.authorization.as_deref() == Some(&format!("Bearer {key}"))),
        "the key was not sent"
    );
    assert!(!text(&o).contains(key), "the key is in the output or logs");
    let mut stack = vec![out.path().to_path_buf()];
    let mut files = 0;
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files += 1;
                let bytes = std::fs::read(&p).unwrap();
                assert!(
                    !bytes.windows(key.len()).any(|w| w == key.as_bytes()),
                    "key found in {}",
                    p.display()
                );
            }
        }
    }
    assert!(
        files >= 6,
        "expected outputs and the cache, found {files} files"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_is_reported_with_file_and_line() {
    let raw = tempfile::tempdir().unwrap();
    many_questions(raw.path(), 4);
    let f = raw.path().join("commonsenseqa/dev_rand_split.jsonl");
    let mut content = std::fs::read_to_string(&f).unwrap();
    let third = content.lines().nth(2).unwrap().to_owned();
    content = content.replace(&third, &third[..third.len() / 2]);
    std::fs::write(&f, content).unwrap();
    let out = tempfile::tempdir().unwrap();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let ok = build(&["kre", "--domains", "cose", "--raw", r, "--out", o], &[]).await;
    assert!(ok.status.success(), "{}", text(&ok));
    let rejects = read_jsonl(&out.path().join("kre/cose/rejects.jsonl"));
    let bad: Vec<&Value> = rejects.iter().filter(|r| r["stage"] == "read").collect();
    assert_eq!(bad.len(), 1, "{rejects:?}");
    assert!(
        bad[0]["origin"]
            .as_str()
            .unwrap()
            .ends_with("dev_rand_split.jsonl:3"),
        "{}",
        bad[0]
    );
    assert_eq!(
        read_json(&out.path().join("kre/cose/cose.json"))
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert_counts_add_up(&out.path().join("kre/cose"));

    let strict = build(
        &[
            "kre",
            "--domains",
            "cose",
            "--raw",
            r,
            "--out",
            o,
            "--strict",
        ],
        &[],
    )
    .await;
    assert_eq!(strict.status.code(), Some(1), "{}", text(&strict));
    assert!(
        text(&strict).contains("dev_rand_split.jsonl:3"),
        "{}",
        text(&strict)
    );

    let missing = build(
        &[
            "kre",
            "--domains",
            "cose",
            "--raw",
            "/nonexistent/raw",
            "--out",
            o,
        ],
        &[],
    )
    .await;
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));
    assert!(
        text(&missing).contains("/nonexistent/raw/commonsenseqa"),
        "{}",
        text(&missing)
    );

    // ECQA's CSV with a row short of columns.
    let ecqa = raw.path().join("ecqa");
    std::fs::create_dir_all(&ecqa).unwrap();
    std::fs::write(
        ecqa.join("cqa_data_val.csv"),
        ",q_no,q_concept,q_text,q_op1,q_op2,q_op3,q_op4,q_op5,q_ans,taskA_pos,taskA_neg,taskB\n\
         0,id1,door,Where is a door?,house,tree,sea,sky,cloud,house,\"doors are in houses\nhouses have doors\",trees have no doors,A house has doors.\n\
         1,id2,cat,Where does a cat sleep?,bed,oven\n",
    )
    .unwrap();
    let e = build(&["kre", "--domains", "ecqa", "--raw", r, "--out", o], &[]).await;
    assert!(e.status.success(), "{}", text(&e));
    let rejects = read_jsonl(&out.path().join("kre/ecqa/rejects.jsonl"));
    assert_eq!(rejects.len(), 1, "{rejects:?}");
    assert_eq!(rejects[0]["reason"], "missing_field");
    assert!(
        rejects[0]["origin"]
            .as_str()
            .unwrap()
            .ends_with("cqa_data_val.csv:4"),
        "{}",
        rejects[0]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_domain_needs_only_a_recipe_file_and_a_prompt() {
    let tmp = tempfile::tempdir().unwrap();
    let recipes = tmp.path().join("recipes");
    let prompts = tmp.path().join("prompts");
    std::fs::create_dir_all(&recipes).unwrap();
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::write(
        prompts.join("riddle.md"),
        "=== user ===\nRiddle: {{ question }}\nWrite one sentence that makes \"{{ negative_answer }}\" look right.\n",
    )
    .unwrap();
    std::fs::write(
        recipes.join("kre-riddles.toml"),
        r#"benchmark = "kre"
domain = "riddles"
format = "kre"
description = "Riddles from a JSON-lines file with a numeric id, choices as an object."
[source]
name = "riddles"
reader = "jsonl"
files = ["*.jsonl"]
options = { id_field = "n" }
[fields]
question = "q"
choices = "[opts.a, opts.b, opts.c]"
answer = "right"
golden_context = "why"
[[filter]]
when = "why | length > 3"
reason = "short_explanation"
[[steps]]
kind = "pick_negative"
how = "random"
[[steps]]
kind = "negative_explanation"
prompt = "riddle.md"
offline_template = "Everyone knows the answer is {{ negative_answer }}."
"#,
    )
    .unwrap();
    let raw = tmp.path().join("raw/riddles");
    std::fs::create_dir_all(&raw).unwrap();
    std::fs::write(
        raw.join("r.jsonl"),
        "{\"n\": 1, \"q\": \"What has keys but no locks?\", \"opts\": {\"a\": \"a piano\", \"b\": \"a door\", \"c\": \"a map\"}, \"right\": 0, \"why\": \"A piano has keys.\"}\n\
         {\"n\": 2, \"q\": \"What runs but never walks?\", \"opts\": {\"a\": \"a dog\", \"b\": \"water\", \"c\": \"a clock\"}, \"right\": 1, \"why\": \"no\"}\n",
    )
    .unwrap();
    let out = tmp.path().join("out");
    let o = tokio::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .args(["build", "kre", "--domains", "riddles", "--no-progress"])
        .arg("--recipes")
        .arg(&recipes)
        .arg("--prompts")
        .arg(&prompts)
        .arg("--raw")
        .arg(tmp.path().join("raw"))
        .arg("--out")
        .arg(&out)
        .output()
        .await
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let rows = read_json(&out.join("kre/riddles/riddles.json"));
    assert_eq!(rows.as_array().unwrap().len(), 1);
    assert_eq!(rows[0]["choices"][0], "a piano");
    assert_eq!(rows[0]["answer"], "A");
    let m = read_json(&out.join("kre/riddles/manifest.json"));
    assert_eq!(m["filtered"]["short_explanation"], 1);
    assert_counts_add_up(&out.join("kre/riddles"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_budget_stops_cleanly_and_the_next_run_finishes() {
    let mock = MockServer::start(model()).await;
    let raw = tempfile::tempdir().unwrap();
    many_questions(raw.path(), 20);
    let out = tempfile::tempdir().unwrap();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let base = mock.base_url();
    let mut args = openai_args("cose", &base, r, o);
    args.extend(["--concurrency", "1", "--max-tokens", "1500"]);
    let stopped = build(&args, &[]).await;
    assert_eq!(stopped.status.code(), Some(3), "{}", text(&stopped));
    assert!(
        text(&stopped).contains("run the same command again"),
        "{}",
        text(&stopped)
    );
    let spent = mock.request_count();
    assert!(spent > 0 && spent < 20, "{spent}");
    assert!(
        !Path::new(o).join("kre/cose/cose.json").exists(),
        "a stopped build wrote outputs"
    );
    let args = openai_args("cose", &base, r, o);
    let done = build(&args, &[]).await;
    assert!(done.status.success(), "{}", text(&done));
    assert_eq!(mock.request_count(), 20, "the resumed build paid twice");
}

#[tokio::test(flavor = "multi_thread")]
async fn dry_run_counts_calls_without_calling() {
    let mock = MockServer::start(model()).await;
    let raw = tempfile::tempdir().unwrap();
    many_questions(raw.path(), 12);
    let out = tempfile::tempdir().unwrap();
    let base = mock.base_url();
    let mut args = openai_args(
        "cose",
        &base,
        raw.path().to_str().unwrap(),
        out.path().to_str().unwrap(),
    );
    args.push("--dry-run");
    let o = build(&args, &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(mock.request_count(), 0);
    assert!(text(&o).contains("12 to make"), "{}", text(&o));
    assert!(!out.path().join("kre").exists());
}

/// The kre-cose recipe as bundled, with the believable pick (the step's default: `how`
/// left out) asked at temperature 0.3, resampled, in a recipes folder of its own.
fn believable_cose_recipe() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let bundled = std::fs::read_to_string(repo().join("recipes/kre-cose.toml")).unwrap();
    let how = "how = \"random\"\n";
    assert!(bundled.contains(how));
    let recipe = bundled.replace(
        how,
        "temperature = 0.3\non_invalid = \"resample\"\nretries_on_invalid = 2\n",
    );
    std::fs::write(dir.path().join("kre-cose.toml"), recipe).unwrap();
    dir
}

/// The believable pick (issue 48 item 2): the model is shown the question, the golden
/// answer and the wrong options, not the golden context, and its choice becomes the
/// negative answer; "none" refuses the row (`no_believable_negative`); an answer naming no
/// listed letter is asked again with its reason (`bad_choice`). Offline, the seeded pick
/// stands, the same as `how = "random"`, and the row says so (`random_pick`).
#[tokio::test(flavor = "multi_thread")]
async fn the_believable_pick_is_the_models_choice_or_the_row_is_refused() {
    let raw = tempfile::tempdir().unwrap();
    write_cqa(
        raw.path(),
        &[
            (
                "Case pick: where would you most likely find a stapler?",
                ["office", "hair", "desk drawer", "space station", "river"],
                "A",
                Some("Offices keep staplers for paperwork."),
            ),
            (
                "Case decline: what do you sit on at a desk?",
                ["chair", "cloud", "hair", "moon", "thunder"],
                "A",
                Some("A chair stands at a desk."),
            ),
            (
                "Case again: what do people drink in the morning?",
                ["coffee", "sand", "milk", "glue", "paint"],
                "A",
                Some("Coffee is a morning drink."),
            ),
        ],
    );
    let mock = MockServer::start(cb_mock::responder(|req| {
        let all = all_text(req);
        if !all.contains("most believable") {
            return model_reply(req);
        }
        let case = between(&all, "Case ", ":").unwrap_or("").to_owned();
        let again = req.last_user().contains("could not be used: bad_choice");
        cb_mock::Reply::content(match case.as_str() {
            "pick" => r#"{"option": "C"}"#,
            "decline" => r#"{"option": "none"}"#,
            "again" if again => r#"{"option": "C"}"#,
            _ => r#"{"option": "Z"}"#,
        })
    }))
    .await;
    let recipes = believable_cose_recipe();
    let out = tempfile::tempdir().unwrap();
    let (r, o, base) = (
        raw.path().to_str().unwrap(),
        out.path().to_str().unwrap(),
        mock.base_url(),
    );
    let built = build_with(recipes.path(), &openai_args("cose", &base, r, o), &[]).await;
    assert!(built.status.success(), "{}", text(&built));
    let dir = out.path().join("kre/cose");
    assert_counts_add_up(&dir);
    let rows = read_json(&dir.join("cose.json"));
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0]["negative_answer"], "desk drawer", "{}", rows[0]);
    assert_eq!(rows[0]["candidate"], "C");
    assert_eq!(rows[1]["negative_answer"], "milk", "{}", rows[1]);
    let rejects = read_jsonl(&dir.join("rejects.jsonl"));
    assert_eq!(rejects.len(), 1, "{rejects:?}");
    assert_eq!(rejects[0]["stage"], "pick_negative");
    assert_eq!(
        rejects[0]["reason"], "no_believable_negative",
        "{}",
        rejects[0]
    );
    // What the model was shown: the wrong options only, lettered as in the row, and never
    // the golden context; a refused choice was asked again with its reason.
    let asked: Vec<String> = mock
        .journal()
        .into_iter()
        .map(|e| all_text(&cb_mock::ChatRequest::new(e.body)))
        .filter(|t| t.contains("most believable") && t.contains("Case "))
        .collect();
    let pick = asked.iter().find(|t| t.contains("Case pick")).unwrap();
    assert!(
        pick.contains("C. desk drawer") && pick.contains("B. hair"),
        "{pick}"
    );
    assert!(
        !pick.contains("A. office") && !pick.contains("Offices keep"),
        "{pick}"
    );
    let again: Vec<&String> = asked.iter().filter(|t| t.contains("Case again")).collect();
    assert_eq!(again.len(), 2, "{again:?}");
    assert!(
        again[1].contains("could not be used: bad_choice: \"Z\" is not one of the letters"),
        "{}",
        again[1]
    );

    // Offline: the seeded pick of `how = "random"`, noted.
    let offline = |recipes: std::path::PathBuf| {
        let out = tempfile::tempdir().unwrap();
        let raw = raw.path().to_owned();
        async move {
            let args = [
                "kre",
                "--domains",
                "cose",
                "--raw",
                raw.to_str().unwrap(),
                "--out",
                out.path().to_str().unwrap(),
            ];
            let o = build_with(&recipes, &args, &[]).await;
            assert!(o.status.success(), "{}", text(&o));
            read_jsonl(&out.path().join("kre/cose/cose.jsonl"))
        }
    };
    let believable = offline(recipes.path().to_owned()).await;
    let random = offline(repo().join("recipes")).await;
    let (b, r) = (&believable, &random);
    assert_eq!(b.len(), 3);
    for (b, r) in b.iter().zip(r) {
        assert_eq!(b["candidate"], r["candidate"], "{b} / {r}");
        let notes = b["warnings"].as_array().unwrap();
        assert!(
            notes
                .iter()
                .any(|n| n.as_str().unwrap().starts_with("random_pick: ")),
            "{b}"
        );
        assert!(!r["warnings"].to_string().contains("random_pick"), "{r}");
    }
}
