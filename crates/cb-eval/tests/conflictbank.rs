//! ConflictBank's figures from the shared prediction files equal those its own
//! `evaluate.py` printed (`../shared/data/metrics/conflictbank/expected.json`), to the last
//! digit; skipped when the folder is absent, a failure under `CI=true`.

use std::path::{Path, PathBuf};

use cb_eval::conflictbank::{evaluate_predictions, SETTINGS};
use cb_eval::EvalError;
use serde_json::Value;

fn shared() -> Option<PathBuf> {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/metrics/conflictbank");
    if dir.join("expected.json").is_file() {
        Some(dir)
    } else if std::env::var("CI").as_deref() == Ok("true") {
        panic!("shared test folder {} is missing", dir.display());
    } else {
        None
    }
}

#[test]
fn every_figure_equals_conflictbanks_evaluate_py() {
    let Some(dir) = shared() else { return };
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    let results = evaluate_predictions(&dir.join("predictions")).unwrap();
    assert_eq!(results.questions, 60);
    assert_eq!(results.scored, 44, "the README: 44 of the 60 are scored");
    let expected = expected.as_object().unwrap();
    assert_eq!(
        results.settings.keys().collect::<Vec<_>>(),
        expected
            .keys()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
    );
    let mut checked = 0;
    for (setting, want) in expected {
        assert!(SETTINGS.contains(&setting.as_str()), "{setting}");
        let got = serde_json::to_value(results.settings[setting]).unwrap();
        for (figure, value) in want.as_object().unwrap() {
            // Both sides are the doubles nearest a 2-decimal number: equal as printed.
            assert_eq!(
                format!("{}", got[figure].as_f64().unwrap()),
                format!("{}", value.as_f64().unwrap()),
                "{setting} {figure}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 8 * 5);
}

#[test]
fn a_folder_without_its_baselines_or_with_a_short_file_is_refused() {
    let Some(dir) = shared() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let src = dir.join("predictions");
    std::fs::copy(src.join("default.json"), tmp.path().join("default.json")).unwrap();
    let err = evaluate_predictions(tmp.path()).unwrap_err();
    assert!(
        matches!(&err, EvalError::Config(m) if m.contains("correct.json")),
        "{err}"
    );
    std::fs::copy(src.join("correct.json"), tmp.path().join("correct.json")).unwrap();
    let text = std::fs::read_to_string(src.join("temporal.json")).unwrap();
    let short: String = text.lines().take(59).map(|l| format!("{l}\n")).collect();
    std::fs::write(tmp.path().join("temporal.json"), short).unwrap();
    let err = evaluate_predictions(tmp.path()).unwrap_err();
    assert!(err.to_string().contains("59 lines"), "{err}");
    let bad = text.replacen("\"true_label\": \"", "\"true_label\": \"X", 1);
    std::fs::write(tmp.path().join("temporal.json"), bad).unwrap();
    let err = evaluate_predictions(tmp.path()).unwrap_err();
    assert!(err.to_string().contains("temporal.json: line 1"), "{err}");
}
