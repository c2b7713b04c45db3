//! `conflictbench eval conflictbank` against a scripted model (cb-mock) whose answers give
//! figures computed here by hand: ConflictBank's filter (right with no evidence and with the
//! correct evidence), both orders of the inter-context settings, the prediction folders in the
//! layout `eval conflictbank-predictions` reads, a cached second run, and a bad build folder.

mod common;

use cb_mock::{responder, MockServer, Reply};
use common::{eval, read_json, read_jsonl, repo, snapshot, text};
use serde_json::{json, Value};
use std::path::Path;

const ROWS: usize = 6;

/// The four options of fact `i`, the true one at a letter that moves with `i`.
fn options(i: usize) -> Vec<String> {
    let mut o = vec![
        format!("Object {i}"),
        format!("Replaced {i}"),
        "Uncertain".to_string(),
        format!("Other {i}"),
    ];
    o.rotate_left(i % 4);
    o
}

fn letter_of(i: usize, text: &str) -> &'static str {
    ["A", "B", "C", "D"][options(i).iter().position(|o| o == text).unwrap()]
}

fn row(i: usize) -> Value {
    let (object, replaced) = (format!("Object {i}"), format!("Replaced {i}"));
    let conflict = |cause: &str| {
        let mut c = json!({"cause": cause, "claim": format!("Subject {i} has {replaced}."),
               "text": format!("The {cause} evidence of fact {i} says Subject {i} has {replaced}."),
               "style": "news"});
        match cause {
            "temporal" => c["time"] = json!("2031"),
            "semantic" => c["description"] = json!("a namesake"),
            _ => {}
        }
        c
    };
    json!({
        "id": format!("f{i}"),
        "fact": {"subject": format!("Subject {i}"), "subject_id": format!("Q{}", 100 + i),
                 "relation": "occupation", "relation_id": "P106",
                 "object": object, "object_id": format!("Q{}", 200 + i)},
        "replaced_object": replaced,
        "correct": {"claim": format!("Subject {i} has {object}."),
                    "text": format!("The correct evidence of fact {i} says Subject {i} has {object}."),
                    "style": "wikipedia"},
        "conflicts": [conflict("misinformation"), conflict("temporal"), conflict("semantic")],
        "qa": {"question": format!("What is Subject {i}'s occupation?"), "options": options(i),
               "true_label": letter_of(i, &object), "replaced_label": letter_of(i, &replaced),
               "uncertain_label": letter_of(i, "Uncertain")}
    })
}

/// What the scripted model answers for fact `i` when the evidence shown last is `last`
/// (`none`, `correct` or a cause): `T` the true object, `R` the replaced one, `U` the
/// uncertain answer, `X` "I don't know".
fn script(i: usize, last: &str) -> char {
    let table = match last {
        // Fact 3 wrong with no evidence, fact 4 with the correct one, fact 5 with both: only
        // facts 0, 1 and 2 are scored.
        "none" => "TTTRTR",
        "correct" => "TTTTXX",
        "misinformation" => "RRTRRR",
        "temporal" => "UTTUUU",
        "semantic" => "RUXRRR",
        other => panic!("no script for {other}"),
    };
    table.chars().nth(i).unwrap()
}

/// The scripted model: it reads the fact from the question and follows the evidence shown
/// last; it answers with the letter for even facts and with the option's text for odd ones.
fn model() -> cb_mock::Responder {
    responder(|req| {
        let prompt = req.last_user();
        let i: usize = common::between(prompt, "What is Subject ", "'s")
            .and_then(|s| s.parse().ok())
            .expect("a question");
        let last = ["correct", "misinformation", "temporal", "semantic"]
            .iter()
            .filter_map(|k| {
                prompt
                    .rfind(&format!("The {k} evidence of fact {i}"))
                    .map(|p| (p, *k))
            })
            .max()
            .map_or("none", |(_, k)| k);
        let text = match script(i, last) {
            'T' => format!("Object {i}"),
            'R' => format!("Replaced {i}"),
            'U' => "Uncertain".to_string(),
            _ => return Reply::Content("I don't know.".into()),
        };
        if i.is_multiple_of(2) {
            Reply::Content(letter_of(i, &text).to_string())
        } else {
            Reply::Content(text)
        }
    })
}

fn write_rows(dir: &Path) -> std::path::PathBuf {
    let build = dir.join("generated/conflictbank");
    std::fs::create_dir_all(build.join("popqa")).unwrap();
    let body: String = (0..ROWS).map(|i| format!("{}\n", row(i))).collect();
    std::fs::write(build.join("popqa/conflictbank.jsonl"), body).unwrap();
    build
}

async fn run(build: &Path, out: &Path, base: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "conflictbank",
        "--data",
        build.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--base-url",
        base,
        "--model",
        "m",
        "--seeds",
        "1",
    ];
    args.extend_from_slice(extra);
    eval(&args).await
}

/// `[correct, replaced, uncertain, memorization ratio]` of a setting in `results.json`.
fn figures(results: &Value, setting: &str) -> [Value; 4] {
    let f = &results["runs"][0]["figures"]["settings"][setting];
    assert!(f.is_object(), "no figures for {setting}: {results}");
    assert_eq!(f["scored"], 3, "{setting}");
    assert_eq!(f["average_entropy"], Value::Null, "{setting}");
    [
        f["correct_accuracy"].clone(),
        f["replaced_accuracy"].clone(),
        f["uncertain_accuracy"].clone(),
        f["memorization_ratio"].clone(),
    ]
}

#[tokio::test]
async fn a_scripted_model_gives_hand_computed_figures_in_both_orders() {
    let tmp = tempfile::tempdir().unwrap();
    let build = write_rows(tmp.path());
    let server = MockServer::start(model()).await;
    let out = tmp.path().join("eval");
    let o = run(&build, &out, &server.base_url(), &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        server.request_count(),
        ROWS * 11,
        "a request a row and setting"
    );
    assert!(text(&o).contains("not measured"), "{}", text(&o));

    let r = read_json(&out.join("results.json"));
    assert_eq!(
        r["entropy"].as_str().unwrap().split(':').next(),
        Some("not measured")
    );
    let run0 = &r["runs"][0];
    assert_eq!(
        (run0["domain"].as_str(), run0["seed"].as_u64()),
        (Some("popqa"), Some(42))
    );
    // The filter: fact 3 is right only with the correct evidence, fact 4 only with none.
    let f = &run0["figures"];
    assert_eq!(
        (f["questions"].as_u64(), f["default_true"].as_u64()),
        (Some(6), Some(4))
    );
    assert_eq!(
        (f["correct_true"].as_u64(), f["scored"].as_u64()),
        (Some(4), Some(3))
    );
    // Over facts 0, 1, 2 (k of 3: round(k / 3 * 100, 2); MR from the rounded accuracies).
    let (third, two_thirds) = (json!(33.33), json!(66.67));
    let (zero, hundred) = (json!(0.0), json!(100.0));
    assert_eq!(
        figures(&r, "default"),
        [hundred.clone(), zero.clone(), zero.clone(), hundred.clone()]
    );
    assert_eq!(figures(&r, "correct"), figures(&r, "default"));
    let misinformation = [
        third.clone(),
        two_thirds.clone(),
        zero.clone(),
        third.clone(),
    ];
    let temporal = [
        two_thirds.clone(),
        zero.clone(),
        third.clone(),
        hundred.clone(),
    ];
    let semantic = [zero.clone(), third.clone(), third.clone(), zero.clone()];
    let all_true = figures(&r, "default");
    for (cause, want) in [
        ("misinformation", &misinformation),
        ("temporal", &temporal),
        ("semantic", &semantic),
    ] {
        assert_eq!(&figures(&r, cause), want, "{cause}");
        // The model follows the evidence shown last: the order matters.
        assert_eq!(
            &figures(&r, &format!("correct_{cause}")),
            want,
            "correct_{cause}"
        );
        assert_eq!(
            figures(&r, &format!("{cause}_correct")),
            all_true,
            "{cause}_correct"
        );
    }

    // The prediction folder: ConflictBank's layout, the export's prompts, and the same
    // figures from `eval conflictbank-predictions`.
    let pred = out.join("popqa/seed-42");
    let export = tmp.path().join("export");
    let prompts = repo().join("prompts");
    let exported = std::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .args([
            "export",
            "conflictbank",
            build.to_str().unwrap(),
            export.to_str().unwrap(),
        ])
        .args(["--prompts", prompts.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(exported.status.success(), "{}", text(&exported));
    for setting in cb_eval::conflictbank::SETTINGS {
        let ours = read_jsonl(&pred.join(format!("{setting}.json")));
        let theirs = read_jsonl(&export.join(format!("popqa/{setting}.json")));
        assert_eq!(ours.len(), ROWS, "{setting}");
        for (a, b) in ours.iter().zip(&theirs) {
            for key in [
                "id",
                "prompt",
                "true_label",
                "replaced_label",
                "uncertain_label",
            ] {
                assert_eq!(a[key], b[key], "{setting} {key}");
            }
        }
    }
    let sem = read_jsonl(&pred.join("semantic.json"));
    assert_eq!(
        sem[2]["prediction"],
        Value::Null,
        "fact 2 says it does not know"
    );
    assert_eq!(
        sem[1]["prediction"],
        json!(letter_of(1, "Uncertain")),
        "read from the text"
    );
    let json_out = tmp.path().join("again.json");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .args([
            "eval",
            "conflictbank-predictions",
            pred.to_str().unwrap(),
            "--json",
        ])
        .arg(&json_out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(read_json(&json_out), run0["figures"]);

    // A second run asks nothing (the cache) and writes the same bytes.
    let before = snapshot(&out);
    let o = run(&build, &out, &server.base_url(), &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        server.request_count(),
        ROWS * 11,
        "the second run made a request"
    );
    assert_eq!(snapshot(&out), before);

    // Fewer settings into the same folder: default and correct still run, the other setting
    // files of the first run go (the folder scores as this run did), and nothing is asked.
    let o = run(
        &build,
        &out,
        &server.base_url(),
        &["--settings", "temporal_correct"],
    )
    .await;
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(server.request_count(), ROWS * 11);
    let mut names: Vec<String> = std::fs::read_dir(&pred)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["correct.json", "default.json", "temporal_correct.json"]
    );
    let r = read_json(&out.join("results.json"));
    assert_eq!(
        r["settings"],
        json!(["default", "correct", "temporal_correct"])
    );
    assert_eq!(figures(&r, "temporal_correct"), all_true);
}

#[tokio::test]
async fn a_folder_without_conflictbank_rows_or_a_kre_flag_exits_2_before_any_file() {
    let tmp = tempfile::tempdir().unwrap();
    let build = tmp.path().join("build");
    std::fs::create_dir_all(build.join("popqa")).unwrap();
    std::fs::write(build.join("popqa/rows.jsonl"), "{}\n").unwrap();
    let server = MockServer::start(model()).await;
    let out = tmp.path().join("eval");
    let before = snapshot(tmp.path());
    let o = run(&build, &out, &server.base_url(), &[]).await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("conflictbank.jsonl"), "{}", text(&o));
    assert!(!out.exists(), "the output folder was made");
    assert_eq!(snapshot(tmp.path()), before, "a file was made");
    // A flag of `eval kre` is refused, not ignored, before any file too.
    let good = write_rows(tmp.path());
    let before = snapshot(tmp.path());
    let o = run(&good, &out, &server.base_url(), &["--hint"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--hint"), "{}", text(&o));
    assert_eq!(snapshot(tmp.path()), before, "a file was made");
    assert_eq!(server.request_count(), 0);
}
