//! Bad inputs and stopped runs fail loudly and lose nothing: configuration errors (exit 2)
//! before any work, malformed and duplicate source records as rejects that say where and
//! why, a byte order mark accepted everywhere, a huge reading-comprehension passage built in
//! linear time, stale temporary files cleaned, the spend of a stopped run recorded, and the
//! audit's handling of odd files.

#![allow(clippy::print_stderr)] // a skipped test says so
mod common;

use cb_mock::MockServer;
use common::*;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Output;

fn cli(args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

fn offline_args<'a>(domain: &'a str, raw: &'a str, out: &'a str) -> Vec<&'a str> {
    vec!["kre", "--domains", domain, "--raw", raw, "--out", out]
}

fn rejects(dir: &Path) -> Vec<Value> {
    read_jsonl(&dir.join("rejects.jsonl"))
}

fn reject_of<'a>(rejects: &'a [Value], id: &str) -> &'a Value {
    rejects
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no reject of {id} in {rejects:?}"))
}

/// The id `write_cqa` gives its `i`-th question (0-based).
fn cqa_id(i: usize) -> String {
    format!("{:032x}", i + 1)
}

fn three_questions(raw: &Path) {
    let c = ["alpha", "bravo", "charlie", "delta", "echo"];
    write_cqa(
        raw,
        &[
            ("Which word comes first?", c, "A", Some("alpha is first")),
            ("Which word comes second?", c, "B", Some("bravo is second")),
            ("Which word comes third?", c, "C", Some("charlie is third")),
        ],
    );
}

fn set_line(path: &Path, line: usize, content: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    if line > lines.len() {
        lines.push(content.to_owned());
    } else {
        lines[line - 1] = content.to_owned();
    }
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_that_cannot_produce_a_row_is_refused_before_touching_outputs() {
    let raw = tempfile::tempdir().unwrap();
    three_questions(raw.path());
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("kre/cose");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("cose.json"), "a previous good build").unwrap();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    for flag in ["--limit", "--sample"] {
        let mut args = offline_args("cose", r, o);
        args.extend([flag, "0"]);
        let res = build(&args, &[]).await;
        assert_eq!(res.status.code(), Some(2), "{flag}: {}", text(&res));
        assert!(
            text(&res).contains("must be a whole number from 1 to"),
            "{}",
            text(&res)
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("cose.json")).unwrap(),
            "a previous good build",
            "{flag} 0 replaced the previous build"
        );
        assert!(!dir.join("runs.jsonl").exists());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_input_source_names_the_known_ones() {
    let raw = tempfile::tempdir().unwrap();
    three_questions(raw.path());
    let out = tempfile::tempdir().unwrap();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let file = raw.path().join("cos_e/cose_dev_v1.11.jsonl");
    let cose = format!("cose={}", file.display());
    for input in [cose.as_str(), "nosrc=/tmp"] {
        let mut args = offline_args("cose", r, o);
        args.extend(["--input", input]);
        let res = build(&args, &[]).await;
        assert_eq!(res.status.code(), Some(2), "{input}: {}", text(&res));
        let t = text(&res);
        assert!(t.contains("commonsenseqa, cos_e"), "{t}");
        assert!(
            !out.path().join("kre").exists(),
            "{input}: something was written"
        );
    }
    // The right name is accepted.
    let good = format!("cos_e={}", file.display());
    let mut args = offline_args("cose", r, o);
    args.extend(["--input", good.as_str()]);
    let res = build(&args, &[]).await;
    assert!(res.status.success(), "{}", text(&res));
}

/// Issue 50: a pipe given to `--input` is said to be one (not "no such file or folder"),
/// with exit 2 before any file, and never opened (a FIFO opened waits for a writer).
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn a_pipe_given_to_input_is_said_to_be_no_regular_file() {
    let raw = tempfile::tempdir().unwrap();
    three_questions(raw.path());
    let out = tempfile::tempdir().unwrap();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let fifo = raw.path().join("questions.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let missing = raw.path().join("no-such.jsonl");
    for (path, said) in [
        (&fifo, "not a regular file or a folder"),
        (&missing, "no such file or folder"),
    ] {
        let input = format!("cos_e={}", path.display());
        let mut args = offline_args("cose", r, o);
        args.extend(["--input", input.as_str()]);
        let res = build(&args, &[]).await;
        let t = text(&res);
        assert_eq!(res.status.code(), Some(2), "{t}");
        assert!(t.contains(&input) && t.contains(said), "{t}");
        assert!(!out.path().join("kre").exists(), "{t}");
    }
    // A pipe given as a models or pool file is refused, not opened (it would wait for a
    // writer).
    let fifo = fifo.to_str().unwrap();
    for flag in ["--models", "--endpoints"] {
        let mut args = offline_args("cose", r, o);
        args.extend([flag, fifo]);
        let res = tokio::time::timeout(std::time::Duration::from_secs(60), build(&args, &[]))
            .await
            .unwrap_or_else(|_| panic!("{flag} FIFO: the build waits on the pipe"));
        let t = text(&res);
        assert_eq!(res.status.code(), Some(2), "{flag}: {t}");
        assert!(
            t.contains(fifo) && t.contains("not a regular file"),
            "{flag}: {t}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn budget_values_that_are_not_finite_or_negative_are_configuration_errors() {
    let mock = MockServer::start(model()).await;
    let raw = tempfile::tempdir().unwrap();
    three_questions(raw.path());
    let out = tempfile::tempdir().unwrap();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let base = mock.base_url();
    let cases: [&[&str]; 5] = [
        &["--max-cost", "nan"],
        &["--price-input", "nan", "--price-output", "1"],
        &["--price-input", "1", "--price-output=-5"],
        &["--max-cost=-1"],
        &["--max-cost", "inf"],
    ];
    for extra in cases {
        let mut args = openai_args("cose", &base, r, o);
        args.extend(extra);
        let res = build(&args, &[]).await;
        assert_eq!(res.status.code(), Some(2), "{extra:?}: {}", text(&res));
        let said = text(&res);
        assert!(
            said.contains("must be a number from 0 to 10000")
                || said.contains("must be a number above 0, at most 1000000"),
            "{said}"
        );
    }
    assert_eq!(mock.request_count(), 0);
    assert!(!out.path().join("kre").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_budget_that_cannot_pay_one_call_says_so() {
    let mock = MockServer::start(model()).await;
    let raw = tempfile::tempdir().unwrap();
    three_questions(raw.path());
    let out = tempfile::tempdir().unwrap();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let base = mock.base_url();
    for budget in [["--max-tokens", "50"], ["--max-cost", "0.00001"]] {
        let mut args = openai_args("cose", &base, r, o);
        args.extend(["--price-input", "1", "--price-output", "1"]);
        args.extend(budget);
        let res = build(&args, &[]).await;
        let t = text(&res);
        assert_eq!(res.status.code(), Some(2), "{budget:?}: {t}");
        assert!(t.contains("cannot pay for one call"), "{t}");
        assert!(!t.contains("run the same command again"), "{t}");
    }
    assert_eq!(mock.request_count(), 0);
}

/// A dry run reads the run's one budget: a budget that cannot pay for one call is the same
/// configuration error (exit 2) as in the build, before anything is created, and the totals
/// line says whether the estimate is within `--max-cost` and `--max-tokens`.
#[tokio::test(flavor = "multi_thread")]
async fn a_dry_run_says_what_the_budget_would_do() {
    let mock = MockServer::start(model()).await;
    let raw = tempfile::tempdir().unwrap();
    many_questions(raw.path(), 20);
    let out = tempfile::tempdir().unwrap();
    let o = out.path().join("new");
    let (r, o) = (raw.path().to_str().unwrap(), o.to_str().unwrap());
    let base = mock.base_url();
    let dry = |budget: &[&str]| -> Vec<String> {
        let mut args = openai_args("cose", &base, r, o);
        args.extend(["--price-input", "1", "--price-output", "1", "--dry-run"]);
        let mut args: Vec<String> = args.into_iter().map(str::to_owned).collect();
        args.extend(budget.iter().map(|a| (*a).to_owned()));
        args
    };
    let run = |args: Vec<String>| async move {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        build(&args, &[]).await
    };
    let tiny = run(dry(&["--max-tokens", "50"])).await;
    let t = text(&tiny);
    assert_eq!(tiny.status.code(), Some(2), "{t}");
    assert!(t.contains("cannot pay for one call"), "{t}");
    assert!(!Path::new(o).exists(), "a refused dry run created {o}");
    let total = |o: &Output| -> String {
        let t = text(o);
        t.lines()
            .find(|l| l.starts_with("total: "))
            .unwrap_or_else(|| panic!("no totals line in {t}"))
            .to_owned()
    };
    let free = run(dry(&[])).await;
    assert_eq!(free.status.code(), Some(0), "{}", text(&free));
    let line = total(&free);
    assert!(
        !line.contains("--max-"),
        "no cap, nothing said of one: {line}"
    );
    // The estimate's tokens: `total: N calls to make, ~T tokens, ...`.
    let tokens: u64 = line
        .split('~')
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(tokens > 4_000, "20 questions estimate {tokens} tokens");
    let half = (tokens / 2).to_string();
    let over = run(dry(&[
        "--max-tokens",
        Box::leak(half.clone().into_boxed_str()),
    ]))
    .await;
    assert_eq!(over.status.code(), Some(0), "{}", text(&over));
    let line = total(&over);
    assert!(
        line.contains(&format!("over --max-tokens {half}")),
        "{line}"
    );
    assert!(line.contains("exit code 3"), "{line}");
    let within = run(dry(&["--max-cost", "100"])).await;
    assert!(
        total(&within).contains("within --max-cost 100"),
        "{}",
        text(&within)
    );
    assert_eq!(mock.request_count(), 0, "a dry run sends nothing");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_stopped_by_the_budget_records_its_spend() {
    let mock = MockServer::start(model()).await;
    let raw = tempfile::tempdir().unwrap();
    many_questions(raw.path(), 20);
    let out = tempfile::tempdir().unwrap();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let base = mock.base_url();
    let mut args = openai_args("cose", &base, r, o);
    args.extend([
        "--concurrency",
        "1",
        "--max-tokens",
        "1500",
        "--price-input",
        "2",
        "--price-output",
        "8",
    ]);
    let stopped = build(&args, &[]).await;
    assert_eq!(stopped.status.code(), Some(3), "{}", text(&stopped));
    let dir = out.path().join("kre/cose");
    assert!(
        !dir.join("cose.json").exists(),
        "a stopped build wrote outputs"
    );
    let runs = read_jsonl(&dir.join("runs.jsonl"));
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = &runs[0];
    assert!(
        run["stopped"]
            .as_str()
            .unwrap()
            .contains("--max-tokens 1500"),
        "{run}"
    );
    let calls = mock.request_count() as u64;
    assert!(calls > 0);
    assert_eq!(run["llm"]["upstream_calls"], calls, "{run}");
    assert!(run["llm"]["spent_usd"].as_f64().unwrap() > 0.0, "{run}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_joined_record_is_the_cause_named_in_the_reject() {
    let raw = tempfile::tempdir().unwrap();
    three_questions(raw.path());
    let cose = raw.path().join("cos_e/cose_dev_v1.11.jsonl");
    // Line 2: a field of the wrong type (its id can be read); line 3: not JSON at all.
    set_line(
        &cose,
        2,
        &json!({"id": cqa_id(1), "explanation": {"open-ended": 5, "selected": ""}}).to_string(),
    );
    set_line(&cose, 3, "{\"id\": \"broken");
    let out = tempfile::tempdir().unwrap();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let res = build(&offline_args("cose", r, o), &[]).await;
    assert!(res.status.success(), "{}", text(&res));
    let dir = out.path().join("kre/cose");
    let rj = rejects(&dir);
    let second = reject_of(&rj, &cqa_id(1));
    assert_eq!(second["stage"], "join", "{second}");
    assert_eq!(second["reason"], "bad_value", "{second}");
    let detail = second["detail"].as_str().unwrap();
    assert!(
        detail.contains("cose_dev_v1.11.jsonl:2") && detail.contains("is a number, not a string"),
        "{detail}"
    );
    // A line whose id cannot be read: the lookup misses, and says which line could not be read.
    let third = reject_of(&rj, &cqa_id(2));
    assert_eq!(third["reason"], "no_match", "{third}");
    let detail = third["detail"].as_str().unwrap();
    assert!(detail.contains("cose_dev_v1.11.jsonl:3"), "{detail}");
    assert_counts_add_up(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn duplicate_ids_are_rejects_naming_the_first_line() {
    let raw = tempfile::tempdir().unwrap();
    three_questions(raw.path());
    // The primary source repeats question 1's id on line 3.
    let cqa = raw.path().join("commonsenseqa/dev_rand_split.jsonl");
    let text3 = std::fs::read_to_string(&cqa).unwrap();
    let line3 = text3
        .lines()
        .nth(2)
        .unwrap()
        .replace(&cqa_id(2), &cqa_id(0));
    set_line(&cqa, 3, &line3);
    // The joined source holds question 2's explanation twice (lines 2 and 4).
    let cose = raw.path().join("cos_e/cose_dev_v1.11.jsonl");
    set_line(
        &cose,
        4,
        &json!({"id": cqa_id(1), "explanation": {"open-ended": "another one", "selected": ""}})
            .to_string(),
    );
    let out = tempfile::tempdir().unwrap();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let res = build(&offline_args("cose", r, o), &[]).await;
    assert!(res.status.success(), "{}", text(&res));
    let dir = out.path().join("kre/cose");
    let rj = rejects(&dir);
    assert_eq!(rj.len(), 2, "{rj:?}");
    let primary = &rj.iter().find(|r| r["stage"] == "read").unwrap();
    assert_eq!(primary["id"], cqa_id(0));
    assert_eq!(primary["reason"], "duplicate_id");
    assert!(
        primary["origin"]
            .as_str()
            .unwrap()
            .ends_with("dev_rand_split.jsonl:3"),
        "{primary}"
    );
    assert!(
        primary["detail"]
            .as_str()
            .unwrap()
            .contains("dev_rand_split.jsonl:1"),
        "{primary}"
    );
    let joined = reject_of(&rj, &cqa_id(1));
    assert_eq!(joined["stage"], "join");
    assert_eq!(joined["reason"], "duplicate_id");
    let detail = joined["detail"].as_str().unwrap();
    assert!(
        detail.contains("cose_dev_v1.11.jsonl:2") && detail.contains("cose_dev_v1.11.jsonl:4"),
        "{detail}"
    );
    let rows = read_json(&dir.join("cose.json"));
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");
    assert_counts_add_up(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn ecare_label_out_of_range_and_missing_fields_are_rejects_with_the_record_id() {
    let Some(data) = shared_data() else {
        eprintln!("skipped: ../shared/data is missing");
        return;
    };
    let sample = std::fs::read_to_string(data.join("ecare/dev_full.jsonl")).unwrap();
    let mut lines: Vec<Value> = sample
        .lines()
        .take(3)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines[1]["label"] = json!(2);
    lines[2].as_object_mut().unwrap().remove("premise");
    let ids: Vec<String> = lines
        .iter()
        .map(|l| match &l["index"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    let raw = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(raw.path().join("ecare")).unwrap();
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(raw.path().join("ecare/dev_full.jsonl"), body).unwrap();
    let out = tempfile::tempdir().unwrap();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let res = build(&offline_args("ecare", r, o), &[]).await;
    assert!(res.status.success(), "{}", text(&res));
    let dir = out.path().join("kre/ecare");
    let rj = rejects(&dir);
    let label = reject_of(&rj, &ids[1]);
    assert_eq!(label["stage"], "map", "{label}");
    assert!(
        label["detail"].as_str().unwrap().contains("not 2"),
        "{label}"
    );
    let missing = reject_of(&rj, &ids[2]);
    assert_eq!(missing["reason"], "missing_field", "{missing}");
    assert!(
        missing["detail"].as_str().unwrap().contains("premise"),
        "{missing}"
    );
    let rows = read_json(&dir.join("ecare.json"));
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");
    assert_counts_add_up(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_byte_order_mark_is_accepted_by_the_squad_reader_and_the_audit() {
    let Some(data) = shared_data() else {
        eprintln!("skipped: ../shared/data is missing");
        return;
    };
    let raw = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(raw.path().join("squad_v2")).unwrap();
    let mut doc = b"\xEF\xBB\xBF".to_vec();
    doc.extend(std::fs::read(data.join("squad_v2/dev-v2.0.normans.json")).unwrap());
    std::fs::write(raw.path().join("squad_v2/dev-v2.0.json"), doc).unwrap();
    let out = tempfile::tempdir().unwrap();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let mut args = offline_args("squad", r, o);
    args.extend(["--limit", "6"]);
    let res = build(&args, &[]).await;
    assert!(res.status.success(), "{}", text(&res));
    let m = read_json(&out.path().join("kre/squad/manifest.json"));
    assert_eq!(m["stages"][0]["in"], 6, "{m}");
    assert!(m["rows"].as_u64().unwrap() > 0, "{m}");

    let kre = out.path().join("cose.json");
    let mut released = b"\xEF\xBB\xBF".to_vec();
    released.extend(std::fs::read(data.join("kre/cose.json")).unwrap());
    std::fs::write(&kre, released).unwrap();
    let res = cli(&["audit", kre.to_str().unwrap()]);
    assert!(res.status.success(), "{}", text(&res));
    assert!(text(&res).contains("audited 150 rows"), "{}", text(&res));
}

#[tokio::test(flavor = "multi_thread")]
async fn stale_temporary_files_are_removed_by_the_next_build() {
    let raw = tempfile::tempdir().unwrap();
    three_questions(raw.path());
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("kre/cose");
    std::fs::create_dir_all(&dir).unwrap();
    // A process that has ended: its temporary file is stale. This test's own process runs.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let stale = dir.join(format!(".cose.json.tmp-{dead}"));
    let live = dir.join(format!(".rejects.jsonl.tmp-{}", std::process::id()));
    std::fs::write(&stale, "half a file").unwrap();
    std::fs::write(&live, "being written").unwrap();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let res = build(&offline_args("cose", r, o), &[]).await;
    assert!(res.status.success(), "{}", text(&res));
    assert!(!stale.exists(), "the stale temporary file is still there");
    assert!(
        live.exists(),
        "a running process's temporary file was removed"
    );
    assert!(dir.join("cose.json").exists());
}

/// A SQuAD document with one paragraph of about `bytes` bytes whose answer, the year 1066,
/// is mentioned five times.
fn big_squad(raw: &Path, bytes: usize) -> String {
    const WORDS: [&str; 12] = [
        "duke", "fleet", "harbour", "abbey", "council", "river", "castle", "bishop", "market",
        "charter", "knights", "valley",
    ];
    let mut context = String::with_capacity(bytes + 200);
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let (mut sentence, mut mentions) = (0, 0);
    let every = bytes / 80 / 5;
    while context.len() < bytes {
        if sentence % every == every / 2 && mentions < 5 {
            context.push_str("In 1066 the duke crossed the sea. ");
            mentions += 1;
        }
        for w in 0..12 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let word = WORDS[(state % 12) as usize];
            if w == 0 {
                context.push_str(&word[..1].to_uppercase());
                context.push_str(&word[1..]);
            } else {
                context.push(' ');
                context.push_str(word);
            }
        }
        context.push_str(". ");
        sentence += 1;
    }
    context.truncate(context.trim_end().len());
    let start = context[..context.find("1066").unwrap()].chars().count();
    let doc = json!({"version": "v2.0", "data": [{"title": "Big", "paragraphs": [{
        "context": context,
        "qas": [{"id": "big-1", "question": "In what year did the duke cross the sea?",
                 "answers": [{"text": "1066", "answer_start": start}], "is_impossible": false}]
    }]}]});
    std::fs::create_dir_all(raw.join("squad_v2")).unwrap();
    std::fs::write(raw.join("squad_v2/dev-v2.0.json"), doc.to_string()).unwrap();
    context
}

#[tokio::test(flavor = "multi_thread")]
async fn a_large_reading_comprehension_context_builds() {
    let raw = tempfile::tempdir().unwrap();
    let context = big_squad(raw.path(), 2_000_000);
    assert_eq!(context.matches("1066").count(), 5);
    let out = tempfile::tempdir().unwrap();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let res = build(&offline_args("squad", r, o), &[]).await;
    assert!(res.status.success(), "{}", text(&res));
    let rows = read_json(&out.path().join("kre/squad/squad.json"));
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{}", text(&res));
    let row = &rows[0];
    // The released layout's key has a leading space.
    assert_eq!(row[" golden_context"].as_str().unwrap(), context);
    let negative = row["negative_answer"].as_str().unwrap();
    assert_ne!(negative, "1066");
    // Every mention of the answer, and nothing else, is replaced by the negative answer.
    assert_eq!(
        row["negative_context"].as_str().unwrap(),
        context.replace("1066", negative)
    );
}

#[test]
fn audit_reports_files_it_skips_and_reads_a_zero_row_build() {
    let Some(data) = shared_data() else {
        eprintln!("skipped: ../shared/data is missing");
        return;
    };
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(data.join("kre/cose.json"), d.path().join("cose.json")).unwrap();
    std::fs::write(d.path().join("config.json"), r#"{"name": "not rows"}"#).unwrap();
    std::fs::write(d.path().join("numbers.json"), "[1, 2, 3]").unwrap();
    let res = cli(&["audit", d.path().to_str().unwrap()]);
    assert!(res.status.success(), "{}", text(&res));
    let t = text(&res);
    assert!(t.contains("audited 150 rows in 1 file(s)"), "{t}");
    assert!(
        t.contains("config.json: its top level is an object, not an array of objects"),
        "{t}"
    );
    assert!(t.contains("numbers.json: an array of a number"), "{t}");
}

#[tokio::test(flavor = "multi_thread")]
async fn audit_of_a_zero_row_build_folder_gives_zero_rows() {
    // Every question lacks its explanation: the build keeps no row.
    let raw = tempfile::tempdir().unwrap();
    let c = ["alpha", "bravo", "charlie", "delta", "echo"];
    write_cqa(raw.path(), &[("Which word comes first?", c, "A", None)]);
    let out = tempfile::tempdir().unwrap();
    let (r, o) = (raw.path().to_str().unwrap(), out.path().to_str().unwrap());
    let res = build(&offline_args("cose", r, o), &[]).await;
    assert!(res.status.success(), "{}", text(&res));
    let dir = out.path().join("kre/cose");
    assert_eq!(read_json(&dir.join("manifest.json"))["rows"], 0);
    for target in [dir.clone(), dir.join("cose.json")] {
        let res = cli(&["audit", target.to_str().unwrap()]);
        assert!(res.status.success(), "{}: {}", target.display(), text(&res));
        assert!(text(&res).contains("audited 0 rows"), "{}", text(&res));
    }
}

#[test]
fn audit_names_the_line_of_invalid_utf8() {
    let Some(data) = shared_data() else {
        eprintln!("skipped: ../shared/data is missing");
        return;
    };
    let rows = read_json(&data.join("kre/cose.json"));
    let mut bytes = Vec::new();
    for (i, row) in rows.as_array().unwrap().iter().take(3).enumerate() {
        let line = row.to_string();
        if i == 1 {
            // A Latin-1 "é" in the middle of the second line.
            let (a, b) = line.split_at(20);
            bytes.extend(a.as_bytes());
            bytes.push(0xE9);
            bytes.extend(b.as_bytes());
        } else {
            bytes.extend(line.as_bytes());
        }
        bytes.push(b'\n');
    }
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("rows.jsonl");
    std::fs::write(&p, bytes).unwrap();
    let res = cli(&["audit", p.to_str().unwrap()]);
    assert_eq!(res.status.code(), Some(2), "{}", text(&res));
    let t = text(&res);
    assert!(t.contains("rows.jsonl: line 2: invalid UTF-8"), "{t}");
}

#[test]
fn agreement_counts_lines_from_the_header_on_any_line_end() {
    let d = tempfile::tempdir().unwrap();
    let good = d.path().join("good.csv");
    std::fs::write(
        &good,
        "item_id,rating\ncose.json#0,not\ncose.json#1,highly\n",
    )
    .unwrap();
    for (name, end) in [("unix.csv", "\n"), ("windows.csv", "\r\n")] {
        let bad = d.path().join(name);
        let body = ["item_id,rating", "cose.json#0,maybe", "cose.json#1,not", ""].join(end);
        std::fs::write(&bad, body).unwrap();
        let res = cli(&["agreement", good.to_str().unwrap(), bad.to_str().unwrap()]);
        assert_eq!(res.status.code(), Some(2), "{}", text(&res));
        let t = text(&res);
        // The header is line 1: the first data row is line 2.
        assert!(
            t.contains(&format!("{name}: line 2: rating \"maybe\"")),
            "{t}"
        );
    }
}
