//! `build --batch-dir` end to end, the binary against the mock: the KRE SQuAD recipe (two
//! model steps, so two rounds of files) through `conflictbench batches run-dir` writes what an
//! online build writes, asking each request once; a build killed while it imports or writes
//! resumes; refused output lines (not JSON, another model, not an answer, a duplicate, an
//! unknown request) are reported with their file and line, never cached, and their requests
//! written again; a server refusing the `json_schema` form (llama-cpp-python) steps the build
//! down to `json_object` through the files, the executor not retrying the refusals; a small
//! `--batch-window` writes the requests in rounds of that many items, in as many build runs,
//! and ends with the same files; a configuration error said once the folders are locked
//! leaves no file.

#[path = "common/batch_dir.rs"]
mod batch_dir;
mod common;

use batch_dir::*;
use common::*;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Output;

async fn run_dir(s: &Setup, dir: &Path) -> Output {
    let o = tokio::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .args(["batches", "run-dir"])
        .arg(dir)
        .args(["--base-url", &s.base])
        .env_remove("OPENAI_API_KEY")
        .output()
        .await
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    o
}

/// Runs build and executor in turn until the build ends; returns the build's exits.
async fn loop_to_the_end(s: &Setup, out: &Path, dir: &Path) -> Vec<i32> {
    answer_until_done(
        || build_files(s, out, dir),
        || async {
            run_dir(s, dir).await;
        },
        8,
    )
    .await
}

fn cached(out: &Path, key: &str) -> bool {
    let cache = cb_llm::Cache::open(&out.join("llm-cache.sqlite")).unwrap();
    cache.get(key).unwrap().is_some()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_dir_build_writes_what_an_online_build_writes_asking_each_request_once() {
    let s = setup().await;
    let (_o, online_files, online_calls) = online(&s).await;
    assert!(online_calls > 10);

    let (out, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let before = s.mock.request_count();
    let exits = loop_to_the_end(&s, out.path(), dir.path()).await;
    // One round of files per model step, then the build.
    assert_eq!(exits, [WAITING, WAITING, 0]);
    assert_same(&squad_files(out.path()), &online_files);
    // Every request went into exactly one file, and the executor asked each once.
    let files = inputs(dir.path());
    assert_eq!(files.len(), 2, "{:?}", files.keys());
    let ids: Vec<&String> = files.values().flatten().collect();
    let distinct: HashSet<&String> = ids.iter().copied().collect();
    assert_eq!(ids.len(), distinct.len(), "a request was written twice");
    assert_eq!(ids.len(), online_calls);
    assert_eq!(s.mock.request_count() - before, online_calls);
    // Each line is the Batch API's: the exact online body under the cache key.
    let line = &read_jsonl(&dir.path().join("requests-00001.jsonl"))[0];
    assert_eq!(line["method"], "POST");
    assert_eq!(line["url"], "/v1/chat/completions");
    assert_eq!(line["body"]["model"], "m");
    assert!(cached(out.path(), line["custom_id"].as_str().unwrap()));
    let runs = read_jsonl(&out.path().join("kre/squad/runs.jsonl"));
    assert_eq!(runs.last().unwrap()["transport"]["mode"], "files");
    assert!(!dir.path().join("problems.log").exists());
    // Done: a further run asks nothing and writes no file.
    let o = build_files(&s, out.path(), dir.path()).await;
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(inputs(dir.path()).len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_dir_build_killed_between_rounds_resumes_without_asking_twice() {
    let s = setup().await;
    let (_o, online_files, online_calls) = online(&s).await;
    let (out, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let o = build_files(&s, out.path(), dir.path()).await;
    assert_eq!(o.status.code(), Some(WAITING), "{}", text(&o));
    run_dir(&s, dir.path()).await;
    // The run that imports round 1 and writes round 2, killed at a few moments of its work.
    for wait_ms in [30, 150, 400] {
        let mut child = spawn_build(&files_args(&s, out.path(), dir.path()));
        tokio::time::sleep(std::time::Duration::from_millis(wait_ms)).await;
        child.kill().await.unwrap(); // SIGKILL
        let _ = child.wait().await;
    }
    assert!(!out.path().join("kre/squad/squad.json").exists());
    let before = s.mock.request_count();
    loop_to_the_end(&s, out.path(), dir.path()).await;
    assert_same(&squad_files(out.path()), &online_files);
    let ids: Vec<String> = inputs(dir.path()).into_values().flatten().collect();
    let distinct: HashSet<&String> = ids.iter().collect();
    assert_eq!(ids.len(), distinct.len(), "a request was written twice");
    assert_eq!(ids.len(), online_calls);
    assert!(s.mock.request_count() - before < online_calls);
}

#[tokio::test(flavor = "multi_thread")]
async fn refused_output_lines_are_reported_with_file_and_line_and_asked_again() {
    let s = setup().await;
    let (_o, online_files, _) = online(&s).await;
    let (out, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let o = build_files(&s, out.path(), dir.path()).await;
    assert_eq!(o.status.code(), Some(WAITING), "{}", text(&o));
    run_dir(&s, dir.path()).await;
    let output: PathBuf = dir.path().join("requests-00001.output.jsonl");
    let text_of = std::fs::read_to_string(&output).unwrap();
    let mut lines: Vec<String> = text_of.lines().map(str::to_owned).collect();
    assert!(lines.len() >= 5);
    let id = |l: &str| {
        serde_json::from_str::<Value>(l).unwrap()["custom_id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let refused = [id(&lines[1]), id(&lines[2]), id(&lines[3])];
    // Line 2 broken off, line 3 answered by another model, line 4 not an answer; then line 1
    // again and a request the file never held.
    lines[1] = lines[1][..lines[1].len() / 2].to_owned();
    lines[2] = lines[2].replace("\"model\":\"m\"", "\"model\":\"other-model\"");
    let mut v: Value = serde_json::from_str(&lines[3]).unwrap();
    v["response"]["body"]["choices"] = Value::Array(vec![]);
    lines[3] = v.to_string();
    let dup = lines[0].clone();
    lines.push(dup);
    let mut unknown: Value = serde_json::from_str(&lines[0]).unwrap();
    unknown["custom_id"] = "not-a-request".into();
    lines.push(unknown.to_string());
    let n = lines.len();
    std::fs::write(&output, lines.join("\n") + "\n").unwrap();

    let o = build_files(&s, out.path(), dir.path()).await;
    assert_eq!(o.status.code(), Some(WAITING), "{}", text(&o));
    let said = text(&o);
    let problems = std::fs::read_to_string(dir.path().join("problems.log")).unwrap();
    let name = output.display().to_string();
    for (line, what) in [
        (2, "not a JSON object"),
        (3, "answered by model other-model, m was asked"),
        (4, "not an answer"),
        (
            n - 1,
            "answered twice; line 1 answered it first and that answer stands",
        ),
        (
            n,
            "custom_id not-a-request is not a request of requests-00001.jsonl",
        ),
    ] {
        let at = format!("{name}:{line}: ");
        for (place, t) in [("the log", &said), ("problems.log", &problems)] {
            assert!(
                t.lines().any(|l| l.contains(&at) && l.contains(what)),
                "{place} does not say {at}{what}:\n{t}"
            );
        }
    }
    assert_eq!(problems.lines().count(), 5, "{problems}");
    // Each refusal says one fact: a repeated line's request is answered (by its first
    // line), not asked again; a line naming no request has no request to ask again.
    for l in problems.lines().filter(|l| {
        l.starts_with(&format!("{name}:{}: ", n - 1)) || l.starts_with(&format!("{name}:{n}: "))
    }) {
        assert!(!l.contains("asked again"), "{l}");
    }
    for k in &refused {
        assert!(!cached(out.path(), k), "a refused line was cached");
    }
    // The three requests are written again, in a later file, once.
    let files = inputs(dir.path());
    let again: Vec<&String> = files
        .iter()
        .filter(|(name, _)| name.as_str() != "requests-00001.jsonl")
        .flat_map(|(_, ids)| ids)
        .filter(|i| refused.contains(i))
        .collect();
    assert_eq!(again.len(), 3, "{files:?}");
    // And answered this time, the build ends with the online build's files.
    loop_to_the_end(&s, out.path(), dir.path()).await;
    assert_same(&squad_files(out.path()), &online_files);
}

#[tokio::test(flavor = "multi_thread")]
async fn batch_files_need_no_server_url_nor_key_and_say_where_answers_came_from() {
    let s = setup().await;
    let (out, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let args = [
        "kre",
        "--domains",
        "squad",
        "--model",
        "m",
        "--raw",
        &s.raw,
        "--out",
        out.path().to_str().unwrap(),
        "--reader",
        "none",
        "--batch-dir",
        dir.path().to_str().unwrap(),
    ];
    let mut exits = Vec::new();
    loop {
        let o = build(&args, &[]).await;
        exits.push(o.status.code().unwrap());
        if o.status.success() {
            break;
        }
        assert_eq!(o.status.code(), Some(WAITING), "{}", text(&o));
        assert!(exits.len() < 5, "{exits:?}");
        run_dir(&s, dir.path()).await;
    }
    let manifest = read_json(&out.path().join("kre/squad/manifest.json"));
    assert_eq!(manifest["endpoint"], "batch-files", "{manifest}");
    assert_eq!(manifest["rows"], 10);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_structured_form_in_output_files_steps_the_build_down() {
    use cb_mock::structured::{emulate, StructuredServer};
    let s = setup_with(emulate(
        StructuredServer::LlamaCppPython,
        cb_mock::stand_in::model(),
    ))
    .await;
    // Online, the probe finds json-object.
    let (_o, online_files, _) = online(&s).await;
    let (out, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let o = build_files(&s, out.path(), dir.path()).await;
    assert_eq!(o.status.code(), Some(WAITING), "{}", text(&o));
    let first = inputs(dir.path())["requests-00001.jsonl"].clone();
    let before = s.mock.request_count();
    run_dir(&s, dir.path()).await;
    // One request each: a refusal of the form is an answer, not a failure to retry.
    assert_eq!(s.mock.request_count() - before, first.len());
    let o = build_files(&s, out.path(), dir.path()).await;
    assert_eq!(o.status.code(), Some(WAITING), "{}", text(&o));
    let second = read_jsonl(&dir.path().join("requests-00002.jsonl"));
    assert_eq!(second.len(), first.len());
    assert!(second
        .iter()
        .all(|l| l["body"]["response_format"]["type"] == "json_object"));
    loop_to_the_end(&s, out.path(), dir.path()).await;
    assert_same(&squad_files(out.path()), &online_files);
    assert!(!dir.path().join("problems.log").exists());
}

/// Sets the model of `key`'s answer in every output file of `dir` to another one.
fn answer_with_another_model(dir: &Path, key: &str) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if !p.to_string_lossy().ends_with(".output.jsonl") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let changed: Vec<String> = text
            .lines()
            .map(|l| {
                let mut v: Value = serde_json::from_str(l).unwrap();
                if v["custom_id"] == key {
                    v["response"]["body"]["model"] = "other-model".into();
                }
                v.to_string()
            })
            .collect();
        std::fs::write(&p, changed.join("\n") + "\n").unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_refused_in_every_file_is_rejected_after_max_retries_across_runs() {
    let s = setup().await;
    let (out, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut args = files_args(&s, out.path(), dir.path());
    args.extend(["--max-retries", "1"]);
    let key = {
        let o = build(&args, &[]).await;
        assert_eq!(o.status.code(), Some(WAITING), "{}", text(&o));
        inputs(dir.path())["requests-00001.jsonl"][0].clone()
    };
    // Each run sees one file come back without a usable answer for `key`: the count of
    // attempts is the journal's, not the run's.
    let mut exits = Vec::new();
    loop {
        run_dir(&s, dir.path()).await;
        answer_with_another_model(dir.path(), &key);
        let o = build(&args, &[]).await;
        exits.push(o.status.code().unwrap());
        if o.status.success() {
            break;
        }
        assert_eq!(o.status.code(), Some(WAITING), "{}", text(&o));
        assert!(exits.len() < 8, "{exits:?}");
    }
    let held: usize = inputs(dir.path())
        .values()
        .filter(|ids| ids.contains(&key))
        .count();
    assert_eq!(held, 2, "sent once and asked again once");
    let rejects = read_jsonl(&out.path().join("kre/squad/rejects.jsonl"));
    let reasons: Vec<&str> = rejects
        .iter()
        .filter_map(|r| r["reason"].as_str())
        .collect();
    assert!(
        reasons.contains(&"retries_exhausted_batch_wrong_model"),
        "{reasons:?}"
    );
    assert!(!cached(out.path(), &key));
}

/// [`files_args`] with rounds of at most `window` items.
fn windowed<'a>(s: &'a Setup, out: &'a Path, dir: &'a Path, window: &'a str) -> Vec<&'a str> {
    let mut args = files_args(s, out, dir);
    args.extend(["--batch-window", window]);
    args
}

#[tokio::test(flavor = "multi_thread")]
async fn a_small_batch_window_takes_several_rounds_and_ends_with_the_online_files() {
    let s = setup().await;
    let (_o, online_files, online_calls) = online(&s).await;
    let (out, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let before = s.mock.request_count();
    let args = windowed(&s, out.path(), dir.path(), "3");
    let exits = answer_until_done(
        || build(&args, &[]),
        || async {
            run_dir(&s, dir.path()).await;
        },
        8,
    )
    .await;
    // The build reads on past a window that waits: as many build runs as with one round a
    // step, each writing its step's requests of every item, three items' at a time.
    assert_eq!(exits, [WAITING, WAITING, 0]);
    assert_same(&squad_files(out.path()), &online_files);
    let files = inputs(dir.path());
    assert!(files.values().all(|ids| ids.len() <= 3), "{files:?}");
    // Ten questions, two model steps: at least four rounds a step.
    assert!(files.len() >= 8, "{:?}", files.keys());
    // Nothing asked twice: every request in one file, answered once.
    let ids: Vec<&String> = files.values().flatten().collect();
    let distinct: HashSet<&String> = ids.iter().copied().collect();
    assert_eq!(ids.len(), distinct.len(), "a request was written twice");
    assert_eq!(ids.len(), online_calls);
    assert_eq!(s.mock.request_count() - before, online_calls);
    assert!(!dir.path().join("problems.log").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_error_line_reaches_an_item_of_a_later_window_without_asking_again() {
    // Every output file is imported by the round of the first window; a request of a later
    // window answered there with a 400 ends as an online 400 does when its item comes in
    // that run (its item is rejected, it is not written again); like an online reject it is
    // not cached, so a later run asks it again.
    let s = setup().await;
    let (_o, online_files, _) = online(&s).await;
    let (out, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let args = windowed(&s, out.path(), dir.path(), "4");
    let o = build(&args, &[]).await;
    assert_eq!(o.status.code(), Some(WAITING), "{}", text(&o));
    run_dir(&s, dir.path()).await;
    let files = inputs(dir.path());
    let (last, ids) = files.iter().next_back().unwrap();
    assert!(files.len() >= 3, "{files:?}");
    let key = ids.last().unwrap().clone();
    let output = dir.path().join(last.replace(".jsonl", ".output.jsonl"));
    let lines: Vec<String> = std::fs::read_to_string(&output)
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if v["custom_id"] == key.as_str() {
                v["response"] = serde_json::json!({"status_code": 400, "body":
                    {"error": {"message": "this prompt is refused"}}});
            }
            v.to_string()
        })
        .collect();
    std::fs::write(&output, lines.join("\n") + "\n").unwrap();
    let o = build(&args, &[]).await;
    assert_eq!(o.status.code(), Some(WAITING), "{}", text(&o));
    let files = inputs(dir.path());
    let held = files.values().filter(|ids| ids.contains(&key)).count();
    assert_eq!(held, 1, "the refused request was written again: {files:?}");
    // Nine questions go on to their next step, a window at a time.
    let next: usize = files.values().map(Vec::len).sum::<usize>() - 10;
    assert_eq!(next, 9, "{files:?}");
    assert!(!cached(out.path(), &key));
    answer_until_done(
        || build(&args, &[]),
        || async {
            run_dir(&s, dir.path()).await;
        },
        8,
    )
    .await;
    assert_same(&squad_files(out.path()), &online_files);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_form_steps_every_window_down() {
    // The form refusals of the files are imported by the round of the first window; the
    // items of the later windows are asked in the form stepped down to, once each.
    use cb_mock::structured::{emulate, StructuredServer};
    let s = setup_with(emulate(
        StructuredServer::LlamaCppPython,
        cb_mock::stand_in::model(),
    ))
    .await;
    let (_o, online_files, _) = online(&s).await;
    let (out, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let args = windowed(&s, out.path(), dir.path(), "4");
    let o = build(&args, &[]).await;
    assert_eq!(o.status.code(), Some(WAITING), "{}", text(&o));
    let first: Vec<String> = inputs(dir.path()).into_values().flatten().collect();
    assert_eq!(first.len(), 10, "every question's first request is written");
    run_dir(&s, dir.path()).await;
    let o = build(&args, &[]).await;
    assert_eq!(o.status.code(), Some(WAITING), "{}", text(&o));
    let files = inputs(dir.path());
    let again: Vec<&String> = files.values().flatten().skip(first.len()).collect();
    assert_eq!(
        again.len(),
        10,
        "each refused request is asked once in the next form"
    );
    for name in files.keys().skip(3) {
        let lines = read_jsonl(&dir.path().join(name));
        assert!(lines
            .iter()
            .all(|l| l["body"]["response_format"]["type"] == "json_object"));
    }
    answer_until_done(
        || build(&args, &[]),
        || async {
            run_dir(&s, dir.path()).await;
        },
        8,
    )
    .await;
    assert_same(&squad_files(out.path()), &online_files);
    assert!(!dir.path().join("problems.log").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_window_of_0_or_without_batches_is_refused_before_any_file() {
    let s = setup().await;
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("batches");
    let o = build(&windowed(&s, out.path(), &dir, "0"), &[]).await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("'--batch-window <N>': 0 is too small"),
        "{}",
        text(&o)
    );
    let mut online = squad_args(&s, out.path().to_str().unwrap());
    online.extend(["--batch-window", "100"]);
    let o = build(&online, &[]).await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--batch-window") && text(&o).contains("--batch-dir"),
        "{}",
        text(&o)
    );
    assert!(!dir.exists() && !out.path().join("kre").exists());
    assert!(!out.path().join("llm-cache.sqlite").exists());
    // A dry run with batch files counts and writes nothing: not even the folder.
    let mut dry = windowed(&s, out.path(), &dir, "1");
    dry.push("--dry-run");
    let o = build(&dry, &[]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("calls to make"), "{}", text(&o));
    assert!(!dir.exists() && !out.path().join("kre").exists());
}

/// A configuration error said only once the build's folders are locked (a backend that
/// cannot write batch files, no `--model` to name what the files ask for, the same without
/// batch files) leaves nothing behind: not the batch folder, not the output folder, not the
/// empty cache file its lock made.
#[tokio::test(flavor = "multi_thread")]
async fn a_build_refused_once_its_folders_are_locked_leaves_no_file() {
    let s = setup().await;
    let tmp = tempfile::tempdir().unwrap();
    let (out, dir) = (tmp.path().join("out"), tmp.path().join("batches"));
    let (o, d) = (out.to_str().unwrap(), dir.to_str().unwrap());
    let common = ["kre", "--domains", "squad", "--raw", &s.raw, "--out", o];
    let cases: [(&[&str], &str); 3] = [
        (
            &["--batch-dir", d, "--backend", "offline"],
            "needs the openai backend",
        ),
        (&["--batch-dir", d], "needs --model"),
        (&["--base-url", &s.base], "needs --model"),
    ];
    for (more, says) in cases {
        let args: Vec<&str> = common.iter().chain(more).copied().collect();
        let r = build(&args, &[]).await;
        assert_eq!(r.status.code(), Some(2), "{more:?}: {}", text(&r));
        assert!(text(&r).contains(says), "{more:?}: {}", text(&r));
        let left: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert!(left.is_empty(), "{more:?} left {left:?}");
    }
    assert_eq!(s.mock.request_count(), 0);
}

/// The binary under test: `CB_TEST_BIN` when set (to run these tests against another build of
/// conflictbench, e.g. the one before a fix), else this checkout's.
fn binary() -> String {
    std::env::var("CB_TEST_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_conflictbench").into())
}

/// `conflictbench build kre` (every default KRE recipe at once) against the mock, with the
/// transport flags `how` (none: online).
async fn build_kre(s: &Setup, out: &Path, how: &[&str]) -> Output {
    let mut cmd = tokio::process::Command::new(binary());
    cmd.args(["build", "kre", "--model", "m", "--raw", &s.raw, "--out"])
        .arg(out)
        .args([
            "--backend",
            "openai",
            "--base-url",
            &s.base,
            "--reader",
            "none",
        ])
        .args(["--no-progress", "--recipes"])
        .arg(repo().join("recipes"))
        .arg("--prompts")
        .arg(repo().join("prompts"))
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("RUST_LOG")
        .env_remove("CONFLICTBENCH_LOG")
        .args(how);
    cmd.output().await.unwrap()
}

/// Each recipe's upstream calls over every run of its `runs.jsonl` in `out`.
fn calls_by_recipe(out: &Path) -> BTreeMap<String, u64> {
    let mut calls = BTreeMap::new();
    for e in std::fs::read_dir(out.join("kre")).unwrap() {
        let dir = e.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let runs = read_jsonl(&dir.join("runs.jsonl"));
        let n = runs
            .iter()
            .map(|r| r["llm"]["upstream_calls"].as_u64().unwrap())
            .sum();
        calls.insert(name, n);
    }
    calls
}

/// Each recipe counted the answers of its own files or batches, as the journal records them,
/// and together they are the `requests` asked.
fn counted_as_the_journal_says(out: &Path, requests: usize) {
    let journal = answers_by_owner(&out.join("llm-cache.sqlite"));
    let counted = calls_by_recipe(out);
    assert_eq!(counted.len(), 5, "{counted:?}");
    for (recipe, calls) in &counted {
        let owner = format!("kre-{recipe}/writer");
        assert_eq!(journal.get(&owner), Some(calls), "{recipe}: {journal:?}");
    }
    assert_eq!(counted.values().sum::<u64>(), requests as u64);
}

/// The answers imported from each owner's files, as `conflictbench batches` lists the journal.
fn answers_by_owner(cache: &Path) -> BTreeMap<String, u64> {
    let o = std::process::Command::new(binary())
        .args(["batches", "--json", "--cache"])
        .arg(cache)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let mut by = BTreeMap::new();
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        let owner = r["owner"].as_str().unwrap_or_default().to_owned();
        *by.entry(owner).or_default() += r["completed"].as_u64().unwrap();
    }
    by
}

/// Every KRE recipe built at once through one batch folder in rounds of 7 items, answered by
/// `run-dir` between the runs (issue 44, item 1): every request goes into exactly one input
/// file and reaches the server once, each recipe's `runs.jsonl` counts its own calls (those an
/// online build of it makes), the waiting message counts the requests in the files waiting,
/// and the build ends with the online build's files.
#[tokio::test(flavor = "multi_thread")]
#[allow(clippy::print_stderr)] // the counts, for the record
async fn every_kre_recipe_through_one_folder_writes_and_counts_each_request_once() {
    let s = setup().await;
    let online = tempfile::tempdir().unwrap();
    let o = build_kre(&s, online.path(), &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    let online_calls = s.mock.request_count();

    let (out, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    s.mock.clear_journal();
    let mut runs = 0;
    loop {
        runs += 1;
        assert!(runs <= 12, "no end after {runs} runs");
        let batch_dir = [
            "--batch-dir",
            dir.path().to_str().unwrap(),
            "--batch-window",
            "7",
        ];
        let o = build_kre(&s, out.path(), &batch_dir).await;
        if o.status.success() {
            break;
        }
        let said = text(&o);
        assert_eq!(o.status.code(), Some(WAITING), "{said}");
        // The message counts the requests of the files waiting for an output.
        let waiting: usize = inputs(dir.path())
            .iter()
            .filter(|(name, _)| {
                !dir.path()
                    .join(name.replace(".jsonl", ".output.jsonl"))
                    .exists()
            })
            .map(|(_, ids)| ids.len())
            .sum();
        assert!(
            said.contains(&format!("waiting for answers: {waiting} requests in")),
            "{waiting} requests wait: {said}"
        );
        let o = tokio::process::Command::new(binary())
            .args(["batches", "run-dir"])
            .arg(dir.path())
            .args(["--base-url", &s.base])
            .env_remove("OPENAI_API_KEY")
            .output()
            .await
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
    }
    let lines: Vec<String> = inputs(dir.path()).into_values().flatten().collect();
    let distinct: HashSet<&String> = lines.iter().collect();
    eprintln!(
        "{runs} runs: {} request lines, {} distinct, {online_calls} online calls",
        lines.len(),
        distinct.len()
    );
    assert_eq!(lines.len(), distinct.len(), "a request was written twice");
    // The online build also probed the structured-output form, which batch files never do.
    assert!(distinct.len() <= online_calls, "{online_calls}");
    assert_eq!(
        s.mock.request_count(),
        distinct.len(),
        "a request was sent twice"
    );
    counted_as_the_journal_says(out.path(), distinct.len());
    assert_same(
        &snapshot(&out.path().join("kre")),
        &snapshot(&online.path().join("kre")),
    );
}

/// The waiting message counts this build's files only: an input file of the folder that no
/// request of the build waits on (another build's, one copied in by hand) is not said.
#[tokio::test(flavor = "multi_thread")]
async fn the_waiting_message_says_only_the_files_this_build_waits_on() {
    let s = setup().await;
    let (out, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let o = build_files(&s, out.path(), dir.path()).await;
    assert_eq!(o.status.code(), Some(WAITING), "{}", text(&o));
    let ours = inputs(dir.path());
    let requests: usize = ours.values().map(Vec::len).sum();
    let foreign = dir.path().join("requests-00050.jsonl");
    std::fs::copy(dir.path().join("requests-00001.jsonl"), &foreign).unwrap();
    let o = build_files(&s, out.path(), dir.path()).await;
    let said = text(&o);
    assert_eq!(o.status.code(), Some(WAITING), "{said}");
    assert!(
        said.contains(&format!(
            "{requests} requests in {} batch files",
            ours.len()
        )),
        "{said}"
    );
    assert!(!said.contains("requests-00050"), "{said}");
}

/// The Batch API held to the same (issue 44, item 1): every KRE recipe at once through the
/// Batch API in rounds of 7 items submits each request once, each recipe counts the answers of
/// its own batches, and the build ends with the online build's files.
#[tokio::test(flavor = "multi_thread")]
async fn every_kre_recipe_through_the_batch_api_submits_and_counts_each_request_once() {
    let s = setup().await;
    let online = tempfile::tempdir().unwrap();
    let o = build_kre(&s, online.path(), &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    let online_calls = s.mock.request_count();
    s.mock.clear_journal();
    let out = tempfile::tempdir().unwrap();
    let batch = ["--batch", "--batch-poll-ms", "20", "--batch-window", "7"];
    let o = build_kre(&s, out.path(), &batch).await;
    assert!(o.status.success(), "{}", text(&o));
    let subs = s.mock.batch_submissions();
    let ids: HashSet<&str> = subs.iter().map(|s| s.custom_id.as_str()).collect();
    assert_eq!(ids.len(), subs.len(), "a request was submitted twice");
    assert!(ids.len() <= online_calls, "{} of {online_calls}", ids.len());
    assert_eq!(
        s.mock.request_count(),
        0,
        "the batch build made online calls"
    );
    counted_as_the_journal_says(out.path(), ids.len());
    assert_same(
        &snapshot(&out.path().join("kre")),
        &snapshot(&online.path().join("kre")),
    );
}

/// Issue 50: files an earlier run wrote and nobody answered yet may all be answered and
/// billed once a later run imports them, so the next run holds them against its budget as
/// it holds its own: a second run under the same `--max-tokens`, before anything is answered,
/// writes no new file beside them (it used to write a budget's worth more, so that the run
/// importing them all counted twice the budget). Once they are answered the build goes on.
#[tokio::test(flavor = "multi_thread")]
async fn files_an_earlier_run_left_unanswered_are_held_in_the_next_runs_budget() {
    let s = setup().await;
    let (out, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut args = files_args(&s, out.path(), dir.path());
    args.extend(["--batch-dir-max-lines", "1", "--max-tokens", "3000"]);
    let first = build(&args, &[]).await;
    assert_eq!(first.status.code(), Some(3), "{}", text(&first));
    let written = inputs(dir.path());
    assert!(
        (2..10).contains(&written.len()),
        "the budget should pay for a few one-request files: {written:?}"
    );
    let second = build(&args, &[]).await;
    assert!(
        matches!(second.status.code(), Some(3 | WAITING)),
        "{}",
        text(&second)
    );
    assert_eq!(
        inputs(dir.path()),
        written,
        "the second run wrote files beside those still waiting: {}",
        text(&second)
    );
    run_dir(&s, dir.path()).await;
    let third = build(&args, &[]).await;
    assert!(
        matches!(third.status.code(), Some(3 | WAITING)),
        "{}",
        text(&third)
    );
    assert!(
        inputs(dir.path()).len() > written.len(),
        "once answered and imported, the build goes on: {}",
        text(&third)
    );
}
