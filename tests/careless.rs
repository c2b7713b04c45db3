//! Settings a careless user gives (issue 44, items 4 and 5): a zero where none means anything,
//! two settings that name the same thing, a model the budget cannot price, a budget too small
//! for one call. Each is refused with exit code 2, naming the flag, file or model, before any
//! file is made (in a new folder or an old one), or given the one meaning the README says: a
//! reader keeps its own price (the batch price too) and its own concurrency, a reader of batch
//! files sends nothing and needs no key.

mod common;

use cb_mock::MockServer;
use common::*;
use std::path::Path;
use std::time::Duration;

/// `build kre --domains squad --limit 2` into `out`, the writer at `base`, then `more`.
fn squad<'a>(base: &'a str, raw: &'a str, out: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "kre",
        "--domains",
        "squad",
        "--limit",
        "2",
        "--raw",
        raw,
        "--out",
        out,
        "--model",
        "m",
        "--base-url",
        base,
    ];
    a.extend(more);
    a
}

/// A base URL nothing listens on: a refusal made before any call never reaches it.
fn dead() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}/v1", l.local_addr().unwrap())
}

/// Runs a build that must be refused (exit 2) naming every one of `names`, and leave `out`
/// as it was (absent, or the same files).
async fn refused(args: &[&str], out: &Path, names: &[&str]) {
    let before = out.exists().then(|| snapshot(out));
    let o = build(args, &[]).await;
    let said = text(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {said}");
    for n in names {
        assert!(
            said.contains(n),
            "{args:?}: the error does not name {n}: {said}"
        );
    }
    match before {
        None => assert!(!out.exists(), "{args:?} made {}", out.display()),
        Some(files) => assert_eq!(snapshot(out), files, "{args:?} changed the old folder"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_zero_is_refused_naming_its_flag_or_file_before_any_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (base, raw) = (dead(), repo().join("raw").display().to_string());
    let out = tmp.path().join("out");
    let o = out.display().to_string();
    let dir = tmp.path().join("batches").display().to_string();
    for (flag, more) in [
        ("--rpm", vec!["--rpm", "0"]),
        ("--tpm", vec!["--tpm", "0"]),
        ("--concurrency", vec!["--concurrency", "0"]),
        ("--timeout-s", vec!["--timeout-s", "0"]),
        ("--batch-poll-ms", vec!["--batch", "--batch-poll-ms", "0"]),
        (
            "--batch-max-requests",
            vec!["--batch", "--batch-max-requests", "0"],
        ),
        ("--batch-max-mb", vec!["--batch", "--batch-max-mb", "0"]),
        (
            "--batch-max-mb",
            vec!["--batch-dir", &dir, "--batch-max-mb", "0"],
        ),
        (
            "--batch-dir-max-lines",
            vec!["--batch-dir", &dir, "--batch-dir-max-lines", "0"],
        ),
    ] {
        refused(&squad(&base, &raw, &o, &more), &out, &[flag]).await;
        assert!(!tmp.path().join("batches").exists(), "{flag}");
    }
    // The same zeros in a models file and a pool.
    let models = tmp.path().join("models.toml");
    let m = models.display().to_string();
    for key in ["rpm", "tpm", "concurrency"] {
        std::fs::write(
            &models,
            format!("[models.cheap]\nbase_url = \"{base}\"\nmodel = \"c\"\n{key} = 0\n"),
        )
        .unwrap();
        let args = squad(&base, &raw, &o, &["--models", &m]);
        refused(&args, &out, &[&m, &format!("{key} = 0"), "from 1 to"]).await;
    }
    // Out of range the other way, and a price that is not a number.
    for (key, value, said) in [
        ("concurrency", "10001", "from 1 to 10000"),
        ("concurrency", "-1", "is negative"),
        (
            "concurrency",
            "1.5",
            "not a whole number: must be a whole number from 1 to 10000",
        ),
        ("rpm", "\"60\"", "not a whole number"),
        ("tpm", "4294967296", "from 1 to 1000000000"),
        ("price_input", "nan", "from 0 to 10000"),
        ("price_output", "-inf", "from 0 to 10000"),
    ] {
        std::fs::write(
            &models,
            format!("[models.cheap]\nbase_url = \"{base}\"\nmodel = \"c\"\n{key} = {value}\n"),
        )
        .unwrap();
        let args = squad(&base, &raw, &o, &["--models", &m]);
        refused(&args, &out, &[&m, key, said]).await;
    }
    for key in ["rpm", "tpm"] {
        let endpoint = format!("{base},{key}=0");
        let mut args = squad(&base, &raw, &o, &[]);
        args.truncate(args.len() - 2); // no --base-url: the pool is the endpoint
        args.extend(["--endpoint", &endpoint]);
        refused(&args, &out, &[&base, &format!("`{key}`: 0 is too small")]).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pool_files_reader_beside_a_reader_flag_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (base, raw) = (dead(), repo().join("raw").display().to_string());
    let out = tmp.path().join("out");
    let o = out.display().to_string();
    let pool = tmp.path().join("pool.toml");
    std::fs::write(
        &pool,
        format!("reader_model = \"judge\"\n[[endpoint]]\nurl = \"{base}\"\n"),
    )
    .unwrap();
    let models = tmp.path().join("models.toml");
    std::fs::write(
        &models,
        format!("[models.strong]\nbase_url = \"{base}\"\nmodel = \"s\"\n"),
    )
    .unwrap();
    let (p, m) = (pool.display().to_string(), models.display().to_string());
    let base_args = [
        "kre",
        "--domains",
        "squad",
        "--raw",
        &raw,
        "--out",
        &o,
        "--model",
        "m",
    ];
    for reader in [
        vec!["--reader", "none"],
        vec!["--reader", "strong", "--models", &m],
        vec!["--reader-model", "other"],
    ] {
        let mut args = base_args.to_vec();
        args.extend(["--endpoints", &p]);
        args.extend(&reader);
        refused(&args, &out, &["pool file's reader", reader[0]]).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_without_a_price_under_a_budget_is_refused_naming_it_and_how_to_price_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (base, raw) = (dead(), repo().join("raw").display().to_string());
    let out = tmp.path().join("out");
    let o = out.display().to_string();
    let models = tmp.path().join("models.toml");
    std::fs::write(
        &models,
        format!("[models.cheap]\nbase_url = \"{base}\"\nmodel = \"my-cheap\"\n\n[models.priced]\nbase_url = \"{base}\"\nmodel = \"my-priced\"\nprice_input = 1.0\nprice_output = 2.0\n"),
    )
    .unwrap();
    let m = models.display().to_string();
    let budget = ["--max-cost", "0.5"];
    let priced = ["--price-input", "1", "--price-output", "1"];
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        // The writer, unpriced, or priced by half.
        (
            budget.to_vec(),
            vec!["`m`", "--price-input and --price-output"],
        ),
        (
            [&budget[..], &["--price-input", "1"]].concat(),
            vec!["`m`", "--price-output"],
        ),
        // The reader: another model at another endpoint, and the writer's model elsewhere
        // (which keeps the writer's price, so only the first is refused).
        (
            [&budget[..], &priced[..], &["--reader-model", "my-reader"]].concat(),
            vec![
                "`my-reader`",
                "--reader-price-input and --reader-price-output",
            ],
        ),
        // A named model: by --model-for, by --reader NAME.
        (
            [
                &budget[..],
                &priced[..],
                &["--models", &m, "--model-for", "distractors=cheap"],
            ]
            .concat(),
            vec!["`my-cheap`", "models.cheap", "price_input"],
        ),
        (
            [
                &budget[..],
                &priced[..],
                &["--models", &m, "--reader", "cheap"],
            ]
            .concat(),
            vec!["`my-cheap`", "models.cheap", "price_input"],
        ),
    ];
    for (more, names) in cases {
        refused(&squad(&base, &raw, &o, &more), &out, &names).await;
    }
    // Priced everywhere (a built-in model, flags, a models file's keys): the dry run goes on.
    for more in [
        vec!["--reader-model", "gpt-4o-mini"],
        vec![
            "--reader-model",
            "r",
            "--reader-price-input",
            "1",
            "--reader-price-output",
            "1",
        ],
        vec!["--reader-base-url", "http://127.0.0.1:9/v1"],
        vec![
            "--models",
            &m,
            "--model-for",
            "distractors=priced",
            "--reader",
            "priced",
        ],
    ] {
        let mut args = squad(&base, &raw, &o, &[&budget[..], &priced[..]].concat());
        args.extend(more.iter().chain(&["--dry-run"]));
        let d = build(&args, &[]).await;
        assert!(d.status.success(), "{more:?}: {}", text(&d));
    }
    // No budget: an unpriced model is what the README says, $0.
    let d = build(&squad(&base, &raw, &o, &["--dry-run"]), &[]).await;
    assert!(d.status.success(), "{}", text(&d));
    assert!(!out.exists());
}

/// The reader's cost in a dry run's line (`; reader: ... ~$X`).
fn reader_usd(o: &std::process::Output) -> f64 {
    let t = String::from_utf8_lossy(&o.stdout).into_owned();
    let line = t
        .lines()
        .find(|l| l.contains("; reader: "))
        .unwrap_or_else(|| panic!("{t}"));
    let part = &line[line.find("; reader: ").unwrap()..];
    between(part, "~$", " ")
        .or_else(|| part.rsplit("~$").next())
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reader_keeps_its_own_price_at_the_batch_price_and_its_own_concurrency() {
    let mock = MockServer::start(cb_mock::stand_in::model()).await;
    let reader = MockServer::start(cb_mock::stand_in::model()).await;
    reader.set_latency(Duration::from_millis(60));
    let (base, rbase) = (mock.base_url(), reader.base_url());
    let raw = repo().join("raw").display().to_string();
    let tmp = tempfile::tempdir().unwrap();
    let o = tmp.path().join("out").display().to_string();
    // (One server for both: two mock servers number their batch files alike.)
    let reader_args = [
        "--reader-base-url",
        &base,
        "--reader-model",
        "r",
        "--reader-price-input",
        "4",
        "--reader-price-output",
        "8",
        "--price-input",
        "1",
        "--price-output",
        "1",
    ];
    // The dry run: the reader's estimate at the batch price is half its online one.
    // (CoS-E: its offline answers reach the reader check.)
    let mut dry = squad(&base, &raw, &o, &reader_args);
    dry[2] = "cose";
    dry.push("--dry-run");
    let online = build(&dry, &[]).await;
    assert!(online.status.success(), "{}", text(&online));
    dry.push("--batch");
    let batch = build(&dry, &[]).await;
    assert!(batch.status.success(), "{}", text(&batch));
    let (a, b) = (reader_usd(&online), reader_usd(&batch));
    assert!(
        a > 0.0 && (b - a / 2.0).abs() < 2e-4,
        "online ${a}, batch ${b}"
    );

    // A batch build: the manifest's reader is priced at half its flags, and the line,
    // runs.jsonl and the manifest give the same figures.
    let mut args = squad(&base, &raw, &o, &reader_args);
    args.extend(["--batch", "--batch-poll-ms", "10"]);
    let built = build(&args, &[]).await;
    assert!(built.status.success(), "{}", text(&built));
    let dir = tmp.path().join("out/kre/squad");
    let m = read_json(&dir.join("manifest.json"));
    let used = m["models"].as_array().unwrap_or_else(|| panic!("{m}"));
    let r = used
        .iter()
        .find(|u| u["model"] == "r")
        .unwrap_or_else(|| panic!("{m}"));
    assert_eq!(r["price_per_million"], serde_json::json!([2.0, 4.0]), "{m}");
    let run = read_jsonl(&dir.join("runs.jsonl")).pop().unwrap();
    let spent = run["reader"]["spent_usd"].as_f64().unwrap();
    let cost = r["estimated_cost_usd"].as_f64().unwrap();
    assert!(
        spent > 0.0 && (spent - cost).abs() < 1e-6,
        "runs.jsonl {spent}, manifest {cost}"
    );
    let line = String::from_utf8_lossy(&built.stdout).into_owned();
    assert!(
        line.contains(&format!(
            "reader: {} upstream calls",
            run["reader"]["upstream_calls"]
        )),
        "{line}"
    );
    assert!(line.contains(&format!("${spent:.4}")), "{line}");

    // A pool of two endpoints of 8 calls each: the reader keeps --concurrency 1, not 16.
    let pool = [
        "--endpoint",
        &base,
        "--endpoint",
        &base,
        "--concurrency",
        "1",
    ];
    let pool: Vec<String> = pool.iter().map(|s| s.to_string()).collect();
    let out2 = tmp.path().join("pool").display().to_string();
    let mut args = vec![
        "kre",
        "--domains",
        "squad",
        "--raw",
        &raw,
        "--out",
        &out2,
        "--model",
        "m",
        "--reader-base-url",
        &rbase,
        "--reader-model",
        "r",
    ];
    let eights: Vec<String> = pool
        .iter()
        .map(|s| {
            if s == &base {
                format!("{base},concurrency=8")
            } else {
                s.clone()
            }
        })
        .collect();
    args.extend(eights.iter().map(String::as_str));
    let before = reader.request_count();
    let built = build(&args, &[]).await;
    assert!(built.status.success(), "{}", text(&built));
    let at: Vec<std::time::Instant> = reader.journal()[before..].iter().map(|e| e.at).collect();
    assert!(at.len() > 5, "{}", at.len());
    let overlapping = at
        .windows(2)
        .filter(|w| w[1] - w[0] < Duration::from_millis(40))
        .count();
    assert_eq!(
        overlapping, 0,
        "the reader had several calls in flight at once"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reader_of_batch_files_sends_nothing_and_needs_no_key_nor_base_url() {
    let tmp = tempfile::tempdir().unwrap();
    let raw = repo().join("raw").display().to_string();
    for (i, reader) in [
        vec!["--reader-model", "r"],
        vec![
            "--reader-base-url",
            "https://api.openai.com/v1",
            "--reader-model",
            "gpt-4o-mini",
        ],
    ]
    .into_iter()
    .enumerate()
    {
        let out = tmp.path().join(format!("out{i}")).display().to_string();
        let dir = tmp.path().join(format!("batches{i}")).display().to_string();
        let mut args = vec![
            "kre",
            "--domains",
            "squad",
            "--limit",
            "2",
            "--raw",
            &raw,
            "--out",
            &out,
            "--model",
            "m",
            "--batch-dir",
            &dir,
        ];
        args.extend(&reader);
        let o = build(&args, &[]).await;
        assert_eq!(o.status.code(), Some(4), "{reader:?}: {}", text(&o));
        assert!(!text(&o).contains("--reader-base-url"), "{}", text(&o));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_budget_too_small_for_one_call_leaves_no_file_in_a_new_folder_or_an_old_one() {
    let mock = MockServer::start(cb_mock::stand_in::model()).await;
    let tmp = tempfile::tempdir().unwrap();
    let (base, raw) = (mock.base_url(), repo().join("raw").display().to_string());
    let out = tmp.path().join("out");
    let o = out.display().to_string();
    let dir = tmp.path().join("batches").display().to_string();
    let small = [
        "--max-cost",
        "0.000001",
        "--price-input",
        "1",
        "--price-output",
        "1",
    ];
    refused(
        &squad(&base, &raw, &o, &small),
        &out,
        &["cannot pay for one call"],
    )
    .await;
    // An old folder: a finished build of SQuAD; the new run adds CoS-E and batch files.
    let first = build(&squad(&base, &raw, &o, &["--reader", "none"]), &[]).await;
    assert!(first.status.success(), "{}", text(&first));
    let mut args = squad(&base, &raw, &o, &small);
    args[2] = "squad,cose";
    refused(&args, &out, &["cannot pay for one call"]).await;
    args.extend(["--batch-dir", &dir]);
    refused(&args, &out, &["cannot pay for one call"]).await;
    assert!(!tmp.path().join("batches").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reader_price_without_a_reader_of_its_own_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (base, raw) = (dead(), repo().join("raw").display().to_string());
    let out = tmp.path().join("out");
    let o = out.display().to_string();
    let price = ["--reader-price-input", "0.5", "--reader-price-output", "1"];
    for more in [&[][..], &["--reader", "none"][..]] {
        let mut args = squad(&base, &raw, &o, more);
        args.extend(price);
        refused(&args, &out, &["--reader-price-input", "--reader-model"]).await;
    }
    // An offline build (no --base-url) is refused the same way.
    let mut args = vec!["kre", "--domains", "squad", "--raw", &raw, "--out", &o];
    args.extend(price);
    refused(&args, &out, &["--reader-price-input"]).await;
}

/// The numbers of issue 50 at the process: every command given a number outside its range
/// (too large for the flag's type, NaN, infinite, negative, zero) exits 2 naming the flag and
/// the range, and leaves its working folder empty: no cache, no lock, no output. (Every numeric
/// flag of every command is tried against its range by the CLI's unit test
/// `every_numeric_flag_refuses_a_value_outside_its_stated_range`, which finds them in the
/// command line's definition.)
#[tokio::test(flavor = "multi_thread")]
async fn a_number_outside_its_range_exits_2_naming_it_before_any_file() {
    let base = dead();
    let max = "18446744073709551615";
    let tries: Vec<(Vec<&str>, &str, &str)> = vec![
        (
            vec!["build", "kre", "--dry-run", "--concurrency", max],
            "--concurrency",
            "from 1 to 10000",
        ),
        (
            vec![
                "build",
                "kre",
                "--concurrency",
                max,
                "--base-url",
                &base,
                "--model",
                "m",
            ],
            "--concurrency",
            "from 1 to 10000",
        ),
        (
            vec![
                "eval",
                "kre",
                "--concurrency",
                max,
                "--base-url",
                &base,
                "--model",
                "m",
            ],
            "--concurrency",
            "from 1 to 10000",
        ),
        (
            vec![
                "audit",
                "generated",
                "--concurrency",
                max,
                "--reader-base-url",
                &base,
                "--reader-model",
                "m",
            ],
            "--concurrency",
            "from 1 to 10000",
        ),
        (
            vec![
                "batches",
                "run-dir",
                ".",
                "--base-url",
                &base,
                "--concurrency",
                max,
            ],
            "--concurrency",
            "from 1 to 10000",
        ),
        (
            vec!["build", "kre", "--limit", "18446744073709551616"],
            "--limit",
            "from 1 to 18446744073709551615",
        ),
        (
            vec!["build", "kre", "--batch", "--batch-poll-ms", "120000"],
            "--batch-poll-ms",
            "from 1 to 60000",
        ),
        (
            vec!["build", "kre", "--max-cost", "nan"],
            "--max-cost",
            "above 0, at most 1000000",
        ),
        (
            vec!["build", "kre", "--price-input", "-1"],
            "--price-input",
            "from 0 to 10000",
        ),
        (
            vec!["build", "kre", "--batch", "--batch-price-factor", "inf"],
            "--batch-price-factor",
            "above 0, at most 1",
        ),
        (
            vec![
                "eval",
                "kre",
                "--temperature",
                "nan",
                "--base-url",
                &base,
                "--model",
                "m",
            ],
            "--temperature",
            "from 0 to 2",
        ),
        (
            vec![
                "eval",
                "kre",
                "--temperature",
                "1e400",
                "--base-url",
                &base,
                "--model",
                "m",
            ],
            "--temperature",
            "from 0 to 2",
        ),
        (
            vec![
                "eval",
                "kre",
                "--temperature",
                "-1",
                "--base-url",
                &base,
                "--model",
                "m",
            ],
            "--temperature",
            "from 0 to 2",
        ),
        (
            vec![
                "eval",
                "kre",
                "--answer-tokens",
                "0",
                "--base-url",
                &base,
                "--model",
                "m",
            ],
            "--answer-tokens",
            "from 1 to 1000000",
        ),
        (
            vec![
                "eval",
                "kre",
                "--seeds",
                "0",
                "--base-url",
                &base,
                "--model",
                "m",
            ],
            "--seeds",
            "from 1 to 1000",
        ),
        (
            vec!["audit", "generated", "--votes", "0"],
            "--votes",
            "from 1 to 100",
        ),
        (
            vec!["audit", "generated", "--sample", "-3"],
            "--sample",
            "from 1 to 1000000",
        ),
        (
            vec!["view", "generated", "--port", "65536"],
            "--port",
            "from 0 to 65535",
        ),
        (
            vec!["export", "lm-eval", "generated", "tasks", "--limit", "0"],
            "--limit",
            "from 1 to",
        ),
    ];
    for (args, flag, range) in tries {
        let cwd = tempfile::tempdir().unwrap();
        let o = tokio::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"))
            .args(&args)
            .current_dir(cwd.path())
            .env_remove("OPENAI_BASE_URL")
            .output()
            .await
            .unwrap();
        let said = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {said}");
        assert!(
            said.contains(&format!("'{flag} ")) && said.contains(range),
            "{args:?}: {said}"
        );
        let left: Vec<_> = std::fs::read_dir(cwd.path()).unwrap().collect();
        assert!(left.is_empty(), "{args:?} left {left:?}");
    }
}

/// Issue 50: the structured-output probe is a call the budget pays for like any other. A
/// budget that cannot pay for the probe and the call it is sent for is refused (exit 2)
/// before either is sent: the server receives nothing (it used to be sent the probe, paid
/// for, before the first call found the budget too small).
#[tokio::test(flavor = "multi_thread")]
async fn the_structured_output_probe_is_checked_against_the_budget_before_it_is_sent() {
    let mock = MockServer::start(cb_mock::stand_in::model()).await;
    let tmp = tempfile::tempdir().unwrap();
    let (base, raw) = (mock.base_url(), repo().join("raw").display().to_string());
    let out = tmp.path().join("out");
    let o = out.display().to_string();
    // Enough for the probe alone (a short prompt and 32 tokens), not for it and a call.
    let args = squad(&base, &raw, &o, &["--reader", "none", "--max-tokens", "60"]);
    let run = build(&args, &[]).await;
    let said = text(&run);
    assert_eq!(run.status.code(), Some(2), "{said}");
    assert!(said.contains("cannot pay for one call"), "{said}");
    assert_eq!(mock.request_count(), 0, "{said}");
    assert!(!out.exists(), "{said}");
}
