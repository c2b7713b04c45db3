//! BLEU and ROUGE-L against the reference values that sacrebleu 2.6.0 and rouge-score 0.1.2
//! computed on `../shared/data/metrics/bleu_rouge_fixtures.json` (skipped when the file is
//! absent, unless `CI=true`).

use cb_metrics::bleu::{corpus_bleu, sentence_bleu, Smooth};
use cb_metrics::rouge::rouge_l;
use serde_json::Value;
use std::path::Path;

const TOL: f64 = 1e-4;

fn fixtures() -> Option<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/metrics/bleu_rouge_fixtures.json");
    if !path.is_file() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "shared test file {} is missing",
            path.display()
        );
        return None;
    }
    Some(serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap())
}

fn pairs(f: &Value) -> Vec<(&str, &str, &Value)> {
    f["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["hypothesis"].as_str().unwrap(),
                p["reference"].as_str().unwrap(),
                p,
            )
        })
        .collect()
}

#[test]
fn sentence_bleu_matches_sacrebleu() {
    let Some(f) = fixtures() else { return };
    let pairs = pairs(&f);
    assert!(pairs.len() >= 10);
    for (h, r, p) in pairs {
        let want = p["sentence_bleu"].as_f64().unwrap();
        let got = sentence_bleu(h, r);
        assert!((got - want).abs() < TOL, "{h:?} vs {r:?}: {got} != {want}");
    }
}

#[test]
fn corpus_bleu_matches_sacrebleu() {
    let Some(f) = fixtures() else { return };
    assert_eq!(
        f["corpus_bleu_signature"].as_str().unwrap(),
        "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"
    );
    let want = f["corpus_bleu"].as_f64().unwrap();
    let pairs = pairs(&f);
    let hr = || pairs.iter().map(|(h, r, _)| (*h, *r));
    let got = corpus_bleu(hr(), Smooth::Exp);
    assert!((got - want).abs() < TOL, "{got} != {want}");
    // Every order matches somewhere in this corpus, so smoothing does not change it.
    assert!((corpus_bleu(hr(), Smooth::None) - want).abs() < TOL);
}

#[test]
fn rouge_l_matches_rouge_score() {
    let Some(f) = fixtures() else { return };
    for (h, r, p) in pairs(&f) {
        let s = rouge_l(r, h);
        for (key, got) in [
            ("rougeL_f", s.fmeasure),
            ("rougeL_p", s.precision),
            ("rougeL_r", s.recall),
        ] {
            let want = p[key].as_f64().unwrap();
            assert!(
                (got - want).abs() < TOL,
                "{key} of {h:?} vs {r:?}: {got} != {want}"
            );
        }
    }
}
