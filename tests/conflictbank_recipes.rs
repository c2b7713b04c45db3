//! The ConflictBank-style recipes (`conflictbank-popqa`, `conflictbank-mquake`): a new kind
//! of construction made of recipes, prompts and general step kinds alone. From a folder made
//! by `init` (no Rust change) the offline build writes `conflictbank.jsonl` rows in the shape
//! `export conflictbank` reads, labelled as the rules', with every invariant of the rows; a
//! model build through the mock writes the model's rows and counts each of the reader's
//! refusals by reason.

mod common;
#[path = "common/view.rs"]
mod view_common;

use cb_mock::{responder, ChatRequest, MockServer, Reply};
use cb_model::conflictbank::CbRow;
use cb_model::text::{contains_phrase, names};
use common::{read_json, read_jsonl, repo, text};
use std::collections::BTreeMap;
use std::path::Path;

fn conflictbench(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .current_dir(dir)
        .args(args)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("RUST_LOG")
        .env_remove("CONFLICTBENCH_LOG")
        .output()
        .unwrap()
}

/// The rows of a build's domain, each read as `CbRow` (what `export conflictbank` reads) and
/// held to the invariants: the row's own (`CbRow::problems`: causes in order, labels three
/// different letters, the true and replaced options the objects, four different options),
/// the true object never named in a conflicting evidence, and the replaced object named in
/// each.
fn checked_rows(dir: &Path) -> Vec<serde_json::Value> {
    let rows = read_jsonl(&dir.join("conflictbank.jsonl"));
    for r in &rows {
        let row: CbRow = serde_json::from_value(r.clone()).unwrap();
        assert!(
            row.problems().is_empty(),
            "{}: {:?}",
            row.id,
            row.problems()
        );
        for c in &row.conflicts {
            assert!(
                !names(&c.evidence.text, &row.fact.object)
                    || contains_phrase(&row.fact.subject, &row.fact.object),
                "{}: {:?} names the true object {}",
                row.id,
                c.cause,
                row.fact.object
            );
            assert!(
                contains_phrase(&c.evidence.text, &row.replaced_object),
                "{}",
                row.id
            );
        }
        assert!(contains_phrase(&row.correct.text, &row.fact.object));
    }
    rows
}

#[test]
fn an_init_folder_builds_the_conflictbank_recipes_offline_with_their_invariants() {
    let d = tempfile::tempdir().unwrap();
    let o = conflictbench(d.path(), &["init", "mine"]);
    assert!(o.status.success(), "{}", text(&o));
    let mine = d.path().join("mine");
    let raw = repo().join("raw");
    let mut sources = vec![raw.clone()];
    sources.extend(common::shared_data());
    for (k, raw) in sources.iter().enumerate() {
        let out = d.path().join(format!("out{k}"));
        let args = [
            "build",
            "conflictbank",
            "--raw",
            raw.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--no-progress",
        ];
        let o = conflictbench(&mine, &args);
        assert!(o.status.success(), "{}", text(&o));
        for domain in ["popqa", "mquake"] {
            let dir = out.join("conflictbank").join(domain);
            common::assert_counts_add_up(&dir);
            let m = read_json(&dir.join("manifest.json"));
            assert_eq!(m["offline"], true);
            assert_eq!(m["recipe_from"], "recipes", "the init folder's recipes");
            let rows = checked_rows(&dir);
            assert!(!rows.is_empty(), "{domain}");
            assert!(rows.iter().all(|r| r["generated_by"] == "offline rules"));
            // Styles are drawn, not fixed.
            let styles: std::collections::BTreeSet<String> = rows
                .iter()
                .flat_map(|r| r["conflicts"].as_array().unwrap().iter())
                .map(|c| c["style"].as_str().unwrap().to_owned())
                .collect();
            if rows.len() > 5 {
                assert_eq!(styles.len(), 3, "{domain}: {styles:?}");
            }
            let card = std::fs::read_to_string(dir.join("README.md")).unwrap();
            assert!(card.contains("Su et al., 2024. ConflictBank"), "{domain}");
            assert!(card.contains("Offline build"), "{domain}");
            assert!(
                card.contains("`conflictbank.jsonl` (config `conflictbank`)"),
                "{domain}"
            );
            assert!(card.contains("\nlicense: mit\n"), "{domain}");
            let hub = std::fs::read_to_string(out.join("conflictbank/README.md")).unwrap();
            assert!(
                hub.contains(&format!("{domain}/conflictbank.jsonl")),
                "{hub}"
            );
        }
        let pop = read_jsonl(&out.join("conflictbank/popqa/conflictbank.jsonl"));
        if k > 0 {
            assert!(pop.len() >= 150, "the shared PopQA sample: {}", pop.len());
        }
        // MQuAKE's edits give the replaced object where the source has one.
        let mq = read_jsonl(&out.join("conflictbank/mquake/conflictbank.jsonl"));
        assert!(mq.iter().any(|r| r["replaced_from"] == "source"));
        if k == 0 {
            // The bundled MQuAKE sample holds at least three objects of each relation it
            // draws from, so nearly every fact becomes a row, some replaced from the pool (a
            // sample of one object per relation gave 1 row of 9).
            assert!(mq.len() >= 15, "bundled MQuAKE: {} rows", mq.len());
            assert!(mq.iter().any(|r| r["replaced_from"] == "pool"));
            let m = read_json(&out.join("conflictbank/mquake/manifest.json"));
            assert!(m["rejected"].as_u64() <= Some(1), "{}", m["rejected"]);
        }
        // `export conflictbank` reads the rows as they are.
        let ex = d.path().join(format!("export{k}"));
        let o = conflictbench(
            &mine,
            &[
                "export",
                "conflictbank",
                out.to_str().unwrap(),
                ex.to_str().unwrap(),
            ],
        );
        assert!(o.status.success(), "{}", text(&o));
        let lines = read_jsonl(&ex.join("popqa/misinformation.json"));
        assert_eq!(lines.len(), pop.len());
        // `audit` checks every invariant of the rows: none fails on the build...
        let bench = out.join("conflictbank");
        let o = conflictbench(
            &mine,
            &["audit", bench.to_str().unwrap(), "--fail-on", "error"],
        );
        assert!(o.status.success(), "{}", text(&o));
        assert!(
            text(&o).contains("cb_conflict_names_true_object"),
            "{}",
            text(&o)
        );
        // ...and a planted true object in a conflicting evidence fails it.
        let bad = d.path().join(format!("bad{k}"));
        std::fs::create_dir_all(&bad).unwrap();
        let mut first = pop[0].clone();
        let object = first["fact"]["object"].as_str().unwrap().to_owned();
        first["conflicts"][2]["text"] = format!("It was never {object}.").into();
        std::fs::write(bad.join("conflictbank.jsonl"), format!("{first}\n")).unwrap();
        let o = conflictbench(
            &mine,
            &["audit", bad.to_str().unwrap(), "--fail-on", "error"],
        );
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(
            text(&o)
                .lines()
                .any(|l| l.starts_with("cb_conflict_names_true_object") && l.contains(" 1/1 ")),
            "{}",
            text(&o)
        );
    }
}

/// The claim a writer prompt asks for (`... supports this claim: the R of S is X.`).
fn asked_claim(user: &str) -> Option<String> {
    let (_, rest) = user
        .split_once("supports this claim: ")
        .or_else(|| user.split_once("supports this fact: "))?;
    let claim = rest.lines().next()?.trim();
    Some(cb_model::text::ucfirst(claim))
}

/// Subjects whose rows the scripted reader refuses, each for one reason.
const DISAGREES: &str = "Barack Obama";
const NO_CONFLICT: &str = "Albert Einstein";
const IMPLAUSIBLE: &str = "Marie Curie";

/// The plausibility questions the scripted reader was asked: the shared one, the question of
/// fit, the question of change.
static ASKED: [std::sync::atomic::AtomicUsize; 3] = [
    std::sync::atomic::AtomicUsize::new(0),
    std::sync::atomic::AtomicUsize::new(0),
    std::sync::atomic::AtomicUsize::new(0),
];

/// The scripted model: a writer that states the claim it is asked for, a reader that follows
/// the context, and an editor that confirms conflicts and plausibility, except for the
/// subjects above.
fn scripted(req: &ChatRequest) -> Reply {
    let user = req.last_user();
    if let Some(claim) = asked_claim(user) {
        return Reply::content(format!(
            "{claim} The records of the archive say so plainly."
        ));
    }
    if let Some((_, rest)) = user.split_once("another entity named \"") {
        let name = rest.split('"').next().unwrap_or_default();
        return Reply::content(format!("{name} is a painter from a small coastal town."));
    }
    let about = |s: &str| user.contains(s);
    if user.contains("Would they give different answers?") {
        // A: yes, they contradict; B: no.
        return Reply::content(if about(NO_CONFLICT) { "B" } else { "A" });
    }
    if user.contains("Set aside whether this passage is true") {
        // The bundled recipes ask the misinformation the question of fit, the temporal
        // evidence the question of change and the semantic one the shared question.
        let asked = if user.contains("could really happen to such a subject") {
            2
        } else {
            usize::from(user.contains("check whether all its details still fit together"))
        };
        ASKED[asked].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    if let Some(pick) = cb_mock::reader_script::judge(user, about(IMPLAUSIBLE)) {
        return Reply::content(pick);
    }
    let q = cb_mock::reader_script::parse(user).expect("a reader question");
    if about(DISAGREES) {
        // A reader that answers from memory: the true object.
        let truth = "politician";
        let i = q.options.iter().position(|o| o == truth).unwrap();
        return Reply::content(cb_model::letter(i));
    }
    Reply::content(cb_mock::reader_script::follow_context(&q))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_build_writes_its_rows_and_counts_each_reader_refusal_by_reason() {
    let mock = MockServer::start(responder(scripted)).await;
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    let raw = repo().join("raw");
    let (raw, out_s, base) = (
        raw.to_str().unwrap(),
        out.to_str().unwrap(),
        mock.base_url(),
    );
    let args = common::reading_args("conflictbank", "popqa", &base, raw, out_s);
    let o = common::build(&args, &[("OPENAI_API_KEY", "k")]).await;
    assert!(o.status.success(), "{}", text(&o));
    let dir = out.join("conflictbank/popqa");
    common::assert_counts_add_up(&dir);
    let rejects = read_jsonl(&dir.join("rejects.jsonl"));
    let mut by_reason: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for r in &rejects {
        let key = (
            r["stage"].as_str().unwrap().to_owned(),
            r["reason"].as_str().unwrap().to_owned(),
        );
        by_reason
            .entry(key)
            .or_default()
            .push(r["id"].as_str().unwrap().to_owned());
    }
    let reader = |reason: &str| {
        by_reason
            .get(&("reader_check".to_owned(), reason.to_owned()))
            .cloned()
            .unwrap_or_default()
    };
    let asked = ASKED
        .each_ref()
        .map(|a| a.load(std::sync::atomic::Ordering::Relaxed));
    assert!(
        asked.iter().all(|n| *n > 0),
        "plausibility questions asked [shared, fit, change]: {asked:?}"
    );
    assert_eq!(reader("reader_disagrees"), ["1"], "{by_reason:?}");
    assert_eq!(reader("reader_no_conflict"), ["2"], "{by_reason:?}");
    assert_eq!(reader("reader_implausible"), ["3"], "{by_reason:?}");
    // Its detail names the question that refused it: the misinformation's, of fit.
    let implausible = rejects.iter().find(|r| r["reason"] == "reader_implausible");
    let detail = implausible.unwrap()["detail"].as_str().unwrap();
    assert!(
        detail.contains(
            "asked whether the details of the misinformation_evidence still fit together"
        ),
        "{detail}"
    );
    assert_eq!(rejects.len(), 3, "{by_reason:?}");
    // The manifest counts them by reason, and each refused row is kept for the raters.
    let m = read_json(&dir.join("manifest.json"));
    let stage = m["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "reader_check")
        .unwrap();
    assert_eq!(stage["rejected"], 3);
    for reason in [
        "reader_disagrees",
        "reader_no_conflict",
        "reader_implausible",
    ] {
        assert_eq!(stage["reasons"][reason], 1, "{reason}");
    }
    assert!(
        rejects.iter().all(|r| r["row"]["qa"]["options"].is_array()),
        "{rejects:?}"
    );
    // The rows: the model's texts, read back by the reader, every check named.
    let rows = checked_rows(&dir);
    assert_eq!(rows.len(), 3);
    for r in &rows {
        assert_eq!(r["generated_by"], "model");
        let checks: Vec<&str> = r["reader"]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["check"].as_str().unwrap())
            .collect();
        for c in [
            "leads_misinformation_evidence",
            "conflict_temporal_evidence",
            "plausible_semantic_evidence",
            "control",
        ] {
            assert!(checks.contains(&c), "{c}: {checks:?}");
        }
        let text = r["conflicts"][0]["text"].as_str().unwrap();
        assert!(
            text.ends_with("The records of the archive say so plainly."),
            "{text}"
        );
    }
    assert_eq!(m["offline"], false);
    // The card measures both quality axes from the families of checks the recipe names.
    let card = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(
        card.contains("misleading: the reader's `leads_*` check passed by `m` 11 of 12"),
        "{card}"
    );
    assert!(
        card.contains("plausible: the reader's `plausible_*` check passed by `m` 15 of 18; 1 rows refused `reader_implausible`"),
        "{card}"
    );
    // The viewer's rating sample draws the rows kept and those refused alike, and shows each
    // with its correct and conflicting evidences.
    let v = view_common::start_viewer(&[out_s, "--sample", "100"]);
    let ids = view_common::sample_ids(v.port);
    assert_eq!(ids.len(), 6, "{ids:?}");
    let (_, page) = view_common::get(v.port, "/rate");
    assert!(
        page.contains("3 rows the reader refused and 3 rows it let stand"),
        "{page}"
    );
    for k in 0..ids.len() {
        let (status, page) = view_common::get(v.port, &format!("/rate?rater=probe&item={k}"));
        assert_eq!(status, 200, "{page}");
        assert!(
            page.contains("correct evidence") && page.contains("conflicting evidences"),
            "{page}"
        );
    }
    assert!(m["reader"]["questions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|q| q["check"] == "conflict_misinformation_evidence"));
}

/// A limited build draws from the whole source, as the whole build does (the first pass fills
/// the steps' views from every record, `--limit` aside): another object of the relation,
/// KRE's distractors, RECALL's edited answers. So `--limit N` gives the first rows of the
/// whole build, byte for byte, and a small trial build is not starved of rows (MQuAKE's
/// sample with `--limit 10` gave 1 row of 10 when the pools held only the first 10 facts).
#[test]
fn a_limited_build_gives_the_first_rows_of_the_whole_build() {
    let Some(data) = common::shared_data() else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let bundled = repo().join("raw");
    for (benchmark, domain, raw, files, limit) in [
        (
            "conflictbank",
            "mquake",
            &data,
            &["conflictbank.jsonl"][..],
            "10",
        ),
        ("kre", "squad", &data, &["squad.jsonl"][..], "7"),
        (
            "recall",
            "uj",
            &bundled,
            &["qa_a.jsonl", "qa_na.jsonl"][..],
            "4",
        ),
    ] {
        let build = |name: &str, extra: &[&str]| {
            let out = d.path().join(name);
            let mut args = vec![
                "build",
                benchmark,
                "--domains",
                domain,
                "--backend",
                "offline",
            ];
            args.extend([
                "--raw",
                raw.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ]);
            args.extend(extra);
            let o = conflictbench(d.path(), &args);
            assert!(o.status.success(), "{}", text(&o));
            out.join(benchmark).join(domain)
        };
        let whole = build(&format!("{domain}-whole"), &[]);
        let limited = build(&format!("{domain}-limited"), &["--limit", limit]);
        let mut rows = 0;
        for f in files {
            let part = std::fs::read_to_string(limited.join(f)).unwrap();
            let all = std::fs::read_to_string(whole.join(f)).unwrap();
            assert!(all.starts_with(&part), "{domain} {f}: not a prefix");
            rows += part.lines().count();
        }
        let m = read_json(&limited.join("manifest.json"));
        let rejected = m["rejected"].as_u64().unwrap();
        assert!(
            rows as u64 > rejected,
            "{domain}: {rows} rows, {rejected} rejected"
        );
    }
}
