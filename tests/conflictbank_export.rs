//! `conflictbench export conflictbank`: a ConflictBank-style build written as ConflictBank's
//! evaluation input (one file per setting, one JSON object a line with `prompt`,
//! `true_label`, `replaced_label`, `uncertain_label`), and `eval conflictbank-predictions`
//! on what ConflictBank's `inference.py` would write back (each line with `prediction` and
//! `prob` added).

mod common;

use common::{read_jsonl, repo, text};
use serde_json::{json, Value};
use std::path::Path;

const SETTINGS: [&str; 11] = [
    "default",
    "correct",
    "misinformation",
    "temporal",
    "semantic",
    "correct_misinformation",
    "correct_temporal",
    "correct_semantic",
    "misinformation_correct",
    "temporal_correct",
    "semantic_correct",
];

fn conflictbench(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .args(args)
        .output()
        .unwrap()
}

/// A row of fact `i`: the true option at a letter that moves with `i`.
fn row(i: usize) -> Value {
    let object = format!("Object {i}");
    let replaced = format!("Replaced {i}");
    let mut options = vec![
        object.clone(),
        replaced.clone(),
        "Uncertain".to_string(),
        format!("Other {i}"),
    ];
    options.rotate_left(i % 4);
    let letter = |text: &str| ["A", "B", "C", "D"][options.iter().position(|o| o == text).unwrap()];
    let evidence = |cause: &str, style: &str| {
        json!({"cause": cause, "claim": format!("Subject {i} has {replaced}."),
               "text": format!("The {cause} evidence of fact {i} says Subject {i} has {replaced}."), "style": style})
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
        "conflicts": [evidence("misinformation", "news"),
                      {"cause": "temporal", "claim": "c", "text": format!("The temporal evidence of fact {i}: since 2031, {replaced}."),
                       "style": "book", "time": "2031"},
                      {"cause": "semantic", "claim": "c", "text": format!("The semantic evidence of fact {i}: another Subject {i}, {replaced}."),
                       "style": "news", "description": "a namesake"}],
        "qa": {"question": format!("What is Subject {i}'s occupation?"), "options": options.clone(),
               "true_label": letter(&object), "replaced_label": letter(&replaced), "uncertain_label": letter("Uncertain")}
    })
}

fn write_rows(path: &Path, rows: &[Value]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let body: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(path, body).unwrap();
}

#[test]
fn export_writes_every_setting_for_inference_py_and_its_predictions_score() {
    let tmp = tempfile::tempdir().unwrap();
    let rows: Vec<Value> = (0..6).map(row).collect();
    write_rows(
        &tmp.path()
            .join("generated/conflictbank/popqa/conflictbank.jsonl"),
        &rows,
    );
    let out = tmp.path().join("input");
    let prompts = repo().join("prompts");
    let generated = tmp.path().join("generated");
    let args = [
        "export",
        "conflictbank",
        generated.to_str().unwrap(),
        out.to_str().unwrap(),
        "--prompts",
        prompts.to_str().unwrap(),
    ];
    let o = conflictbench(&args);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("popqa: 6 rows"), "{}", text(&o));
    let dir = out.join("popqa");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut want: Vec<String> = SETTINGS.iter().map(|s| format!("{s}.json")).collect();
    want.sort();
    assert_eq!(names, want);
    for setting in SETTINGS {
        let lines = read_jsonl(&dir.join(format!("{setting}.json")));
        assert_eq!(lines.len(), 6, "{setting}");
        for (i, line) in lines.iter().enumerate() {
            let keys: Vec<&str> = line
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(
                keys,
                [
                    "id",
                    "prompt",
                    "true_label",
                    "replaced_label",
                    "uncertain_label"
                ]
            );
            for key in ["true_label", "replaced_label", "uncertain_label"] {
                assert_eq!(line[key], rows[i]["qa"][key], "{setting} {key}");
            }
            let prompt = line["prompt"].as_str().unwrap();
            assert!(prompt.ends_with("\nAnswer:"), "{prompt}");
            assert!(
                prompt.contains(&format!("Question: What is Subject {i}'s occupation?\nA. ")),
                "{prompt}"
            );
            let shown: Vec<&str> = ["correct", "misinformation", "temporal", "semantic"]
                .into_iter()
                .filter(|e| prompt.contains(&format!("The {e} evidence of fact {i}")))
                .collect();
            let mut expected: Vec<&str> = setting.split('_').filter(|s| *s != "default").collect();
            let at = |e: &str| {
                prompt
                    .find(&format!("The {e} evidence of fact {i}"))
                    .unwrap()
            };
            let mut in_order = shown.clone();
            in_order.sort_by_key(|e| at(e));
            assert_eq!(in_order, expected, "{setting}: {prompt}");
            expected.sort();
            let mut shown = shown;
            shown.sort();
            assert_eq!(shown, expected);
        }
    }
    // The bytes depend only on the rows and the template: a second export is identical.
    let again = tmp.path().join("again");
    let mut args2 = args;
    args2[3] = again.to_str().unwrap();
    assert!(conflictbench(&args2).status.success());
    for setting in SETTINGS {
        let name = format!("popqa/{setting}.json");
        assert_eq!(
            std::fs::read(out.join(&name)).unwrap(),
            std::fs::read(again.join(&name)).unwrap()
        );
    }

    // What inference.py writes back: every field kept, `prediction` and `prob` added. The
    // model here answers with the last evidence it reads, and with nothing to read knows
    // every fact but 0 and 5 (where it answers the uncertain option).
    let preds = tmp.path().join("predictions");
    std::fs::create_dir_all(&preds).unwrap();
    for setting in SETTINGS {
        let mut body = String::new();
        for (i, mut line) in read_jsonl(&dir.join(format!("{setting}.json")))
            .into_iter()
            .enumerate()
        {
            let last = setting.rsplit('_').next().unwrap();
            let key = match last {
                "default" if i % 5 == 0 => "uncertain_label",
                "default" | "correct" => "true_label",
                _ => "replaced_label",
            };
            let pick = line[key].clone();
            let mut prob = serde_json::Map::new();
            for l in ["A", "B", "C", "D"] {
                prob.insert(l.into(), json!(if json!(l) == pick { 0.7 } else { 0.1 }));
            }
            line["prediction"] = pick;
            line["prob"] = Value::Object(prob);
            body.push_str(&format!("{line}\n"));
        }
        std::fs::write(preds.join(format!("{setting}.json")), body).unwrap();
    }
    let json_out = tmp.path().join("figures.json");
    let o = conflictbench(&[
        "eval",
        "conflictbank-predictions",
        preds.to_str().unwrap(),
        "--json",
        json_out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let figures: Value =
        serde_json::from_str(&std::fs::read_to_string(&json_out).unwrap()).unwrap();
    assert_eq!(figures["scored"], json!(4));
    let f = &figures["settings"];
    assert_eq!(f["misinformation"]["replaced_accuracy"], json!(100.0));
    assert_eq!(f["misinformation"]["memorization_ratio"], json!(0.0));
    assert_eq!(f["correct_temporal"]["replaced_accuracy"], json!(100.0));
    assert_eq!(f["temporal_correct"]["correct_accuracy"], json!(100.0));
    // -(0.7 log2 0.7 + 3 x 0.1 log2 0.1) = 1.3568 -> 1.36
    assert_eq!(f["semantic"]["average_entropy"], json!(1.36));
    assert!(
        text(&o).contains("| semantic_correct | 100 | 0 | 0 | 100 | 1.36 |"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_bad_row_or_no_rows_is_exit_2_naming_the_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bad = row(1);
    bad["qa"]["uncertain_label"] = bad["qa"]["true_label"].clone();
    let rows_file = tmp.path().join("dom/conflictbank.jsonl");
    write_rows(&rows_file, &[row(0), bad]);
    let out = tmp.path().join("out");
    let o = conflictbench(&[
        "export",
        "conflictbank",
        rows_file.to_str().unwrap(),
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("conflictbank.jsonl: line 2"),
        "{}",
        text(&o)
    );
    assert!(text(&o).contains("uncertain_label"), "{}", text(&o));
    assert!(!out.exists(), "a refused export leaves no folder");
    let o = conflictbench(&[
        "export",
        "conflictbank",
        rows_file.to_str().unwrap(),
        out.to_str().unwrap(),
        "--limit",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = conflictbench(&[
        "export",
        "conflictbank",
        tmp.path().join("none").to_str().unwrap(),
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("no ConflictBank-style rows"),
        "{}",
        text(&o)
    );
}
