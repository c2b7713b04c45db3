//! Helpers of the end-to-end tests: paths, the shared data (a failure under CI when missing),
//! running the binary, a deterministic stand-in for the model, and reading outputs.
#![allow(dead_code)]

use cb_mock::{responder, ChatRequest, Reply};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// `../shared/data`, or `None` (skip) when absent outside CI; under `CI=true` a missing
/// folder fails the test.
pub fn shared_data() -> Option<PathBuf> {
    let p = repo().join("../shared/data");
    if p.is_dir() {
        return Some(p.canonicalize().unwrap());
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true but {} is missing",
        p.display()
    );
    None
}

/// Runs `conflictbench build ...` with the repository's recipes and prompts.
pub async fn build(args: &[&str], envs: &[(&str, &str)]) -> Output {
    build_with(&repo().join("recipes"), args, envs).await
}

/// Runs `conflictbench build ...` with the recipes of `recipes` and the repository's prompts.
pub async fn build_with(recipes: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    build_command(recipes, args, envs).output().await.unwrap()
}

/// Starts `conflictbench build ...` (repository recipes and prompts) in the background, its
/// output dropped: for tests that kill a build midway.
pub fn spawn_build(args: &[&str]) -> tokio::process::Child {
    build_command(&repo().join("recipes"), args, &[])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// `conflictbench build ARGS` with the recipes of `recipes`, the repository's prompts, no
/// progress bar and none of the caller's endpoint, key or log settings, then `envs`.
pub fn build_command(
    recipes: &Path,
    args: &[&str],
    envs: &[(&str, &str)],
) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"));
    cmd.arg("build")
        .args(args)
        .arg("--recipes")
        .arg(recipes)
        .arg("--prompts")
        .arg(repo().join("prompts"))
        .arg("--no-progress")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("RUST_LOG")
        .env_remove("CONFLICTBENCH_LOG");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd
}

/// Runs `conflictbench eval ARGS` with the repository's prompts, no progress bar and none of
/// the caller's endpoint, key or log settings.
pub async fn eval(args: &[&str]) -> Output {
    eval_with_prompts(&repo().join("prompts"), args).await
}

/// [`eval`] with the prompts of `prompts`.
pub async fn eval_with_prompts(prompts: &Path, args: &[&str]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .arg("eval")
        .args(args)
        .arg("--prompts")
        .arg(prompts)
        .arg("--no-progress")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("RUST_LOG")
        .env_remove("CONFLICTBENCH_LOG")
        .output()
        .await
        .unwrap()
}

pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Every file under `dir` (relative path -> bytes), except the per-run log and the cache.
pub fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                stack.push(p);
            } else if name != "runs.jsonl" && !name.contains("sqlite") {
                out.insert(
                    p.strip_prefix(dir).unwrap().display().to_string(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    out
}

pub fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap()
}

pub fn read_jsonl(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Checks the manifest's counts add up: per stage in = out + rejected, reasons sum to
/// rejected, rows + rejected = records read, rejects.jsonl has `rejected` lines.
pub fn assert_counts_add_up(dir: &Path) {
    let m = read_json(&dir.join("manifest.json"));
    for s in m["stages"].as_array().unwrap() {
        let (i, o, r) = (
            s["in"].as_u64().unwrap(),
            s["out"].as_u64().unwrap(),
            s["rejected"].as_u64().unwrap(),
        );
        assert_eq!(i, o + r, "stage {s}");
        let sum: u64 = s["reasons"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(sum, r, "stage {s}");
    }
    let read_in = m["stages"][0]["in"].as_u64().unwrap();
    assert_eq!(
        m["rows"].as_u64().unwrap() + m["rejected"].as_u64().unwrap(),
        read_in
    );
    let rejects = read_jsonl(&dir.join("rejects.jsonl"));
    assert_eq!(rejects.len() as u64, m["rejected"].as_u64().unwrap());
}

/// The model stand-in: answers the negative-explanation prompt with a sentence that names
/// the option it was asked to support, derived from the prompt alone (so it is deterministic);
/// reads a multiple-choice question (the reader check) as a context follower.
pub fn model_reply(req: &ChatRequest) -> Reply {
    if let Some(r) = reader_reply(req) {
        return r;
    }
    let all = all_text(req);
    let target = between(&all, "give a reason why \"", "\"")
        .or_else(|| between(&all, "explains why \"", "\""))
        .unwrap_or_default();
    Reply::Content(format!(
        "Most people would agree that {target} is the natural answer here."
    ))
}

/// The reader's answer when `req` is a multiple-choice question (the reader's and the eval's
/// prompts end with "Answer with the letter"): the option its context names
/// ([`cb_mock::reader_script::follow_context`]); a judged check's passing option.
pub fn reader_reply(req: &ChatRequest) -> Option<Reply> {
    // The judged checks (`reader/judge.md`): an editor that finds no flaw.
    if let Some(pick) = cb_mock::reader_script::judge(req.last_user(), false) {
        return Some(Reply::Content(pick));
    }
    let mcq = req
        .last_user()
        .contains("Answer with the letter")
        .then(|| cb_mock::reader_script::parse(req.last_user()))
        .flatten()?;
    Some(Reply::Content(cb_mock::reader_script::follow_context(&mcq)))
}

/// The system part and the request proper (a template's worked examples left out), joined by
/// newlines.
pub fn all_text(req: &ChatRequest) -> String {
    req.request_text()
}

/// `build kre --domains DOMAIN` against an OpenAI-compatible `base`, model `m`.
pub fn openai_args<'a>(domain: &'a str, base: &'a str, raw: &'a str, out: &'a str) -> Vec<&'a str> {
    model_args("kre", domain, base, raw, out)
}

/// `build kre --domains DOMAIN` on a pool of `endpoints` (each `--endpoint E`), model `m`.
pub fn pool_args<'a>(
    domain: &'a str,
    raw: &'a str,
    out: &'a str,
    endpoints: &[&'a str],
) -> Vec<&'a str> {
    let mut a = build_args("kre", domain, raw, out);
    for e in endpoints {
        a.extend(["--endpoint", e]);
    }
    a.extend(["--reader", "none"]);
    a
}

/// `build BENCHMARK --domains DOMAIN` against an OpenAI-compatible `base`, model `m`, the
/// writer's path alone (`--reader none`: the reader check has its own tests, `reader.rs`,
/// and [`reading_args`]).
pub fn model_args<'a>(
    benchmark: &'a str,
    domain: &'a str,
    base: &'a str,
    raw: &'a str,
    out: &'a str,
) -> Vec<&'a str> {
    let mut a = reading_args(benchmark, domain, base, raw, out);
    a.extend(["--reader", "none"]);
    a
}

/// [`model_args`] with the recipe's reader check read by the build's own model.
pub fn reading_args<'a>(
    benchmark: &'a str,
    domain: &'a str,
    base: &'a str,
    raw: &'a str,
    out: &'a str,
) -> Vec<&'a str> {
    let mut a = build_args(benchmark, domain, raw, out);
    a.extend(["--backend", "openai", "--base-url", base]);
    a
}

/// `BENCHMARK --domains DOMAIN --model m --raw RAW --out OUT`, whoever answers.
fn build_args<'a>(benchmark: &'a str, domain: &'a str, raw: &'a str, out: &'a str) -> Vec<&'a str> {
    vec![
        benchmark,
        "--domains",
        domain,
        "--model",
        "m",
        "--raw",
        raw,
        "--out",
        out,
    ]
}

pub fn model() -> cb_mock::Responder {
    responder(model_reply)
}

pub fn between<'a>(s: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let i = s.find(start)? + start.len();
    let j = s[i..].find(end)? + i;
    Some(&s[i..j])
}

/// Writes a small CommonsenseQA + CoS-E source folder with the given questions
/// (question, five choices, answer letter, explanation or None for no CoS-E row).
pub fn write_cqa(raw: &Path, rows: &[(&str, [&str; 5], &str, Option<&str>)]) {
    let cqa = raw.join("commonsenseqa");
    let cose = raw.join("cos_e");
    std::fs::create_dir_all(&cqa).unwrap();
    std::fs::create_dir_all(&cose).unwrap();
    let mut a = String::new();
    let mut b = String::new();
    for (i, (q, choices, ans, expl)) in rows.iter().enumerate() {
        let id = format!("{:032x}", i + 1);
        a.push_str(
            &serde_json::json!({
                "id": id, "question": q, "question_concept": "thing",
                "choices": {"label": ["A","B","C","D","E"], "text": choices}, "answerKey": ans
            })
            .to_string(),
        );
        a.push('\n');
        if let Some(e) = expl {
            b.push_str(
                &serde_json::json!({"id": id, "explanation": {"open-ended": e, "selected": ""}})
                    .to_string(),
            );
            b.push('\n');
        }
    }
    std::fs::write(cqa.join("dev_rand_split.jsonl"), a).unwrap();
    std::fs::write(cose.join("cose_dev_v1.11.jsonl"), b).unwrap();
}

/// CommonsenseQA + CoS-E rows "Case NAME: which word is first?" (choices alpha ... echo,
/// answer A, CoS-E explanation `explanation`), one per name: a mock model tells the cases
/// apart by NAME.
pub fn write_cases(raw: &Path, names: &[&str], explanation: &str) {
    let questions: Vec<String> = names
        .iter()
        .map(|n| format!("Case {n}: which word is first?"))
        .collect();
    let rows: Vec<(&str, [&str; 5], &str, Option<&str>)> = questions
        .iter()
        .map(|q| {
            let choices = ["alpha", "bravo", "charlie", "delta", "echo"];
            (q.as_str(), choices, "A", Some(explanation))
        })
        .collect();
    write_cqa(raw, &rows);
}

/// `n` generated questions, all with explanations.
pub fn many_questions(raw: &Path, n: usize) {
    let qs: Vec<(String, [String; 5], String)> = (0..n)
        .map(|i| {
            (
                format!("Question number {i}: where would you keep item {i}?"),
                [
                    format!("drawer {i}"),
                    format!("shelf {i}"),
                    format!("box {i}"),
                    format!("bag {i}"),
                    format!("car {i}"),
                ],
                format!("Item {i} is usually kept in a drawer."),
            )
        })
        .collect();
    let rows: Vec<(&str, [&str; 5], &str, Option<&str>)> = qs
        .iter()
        .map(|(q, c, e)| {
            (
                q.as_str(),
                [
                    c[0].as_str(),
                    c[1].as_str(),
                    c[2].as_str(),
                    c[3].as_str(),
                    c[4].as_str(),
                ],
                "A",
                Some(e.as_str()),
            )
        })
        .collect();
    write_cqa(raw, &rows);
}
