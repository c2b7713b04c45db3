//! Sources of the ConflictBank-style recipes at any size for the `scale` bench: the shared
//! samples (`../shared/data/popqa/popqa.sample.json`, `../shared/data/mquake/MQuAKE-*.sample.json`;
//! the bundled `raw/` samples when they are missing) repeated and perturbed until they hold
//! the facts asked for. The first copy of a record is the record itself; every later copy
//! gives its entities new names (each label with a made-up word of its copy after it, each
//! Wikidata id with `c` and its copy number), so every fact and every prompt is new, and the
//! objects of a relation grow with the source (the pool of `draw_from_pool` sees ever more
//! distinct values). Written into a temporary folder by the bench, never committed.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Syllables of the made-up words that tell copies apart.
const SYLLABLES: [&str; 16] = [
    "ka", "ri", "mo", "te", "lu", "sa", "ne", "vo", "di", "ba", "fe", "go", "hu", "pi", "ra", "zo",
];

/// The word of copy `c` (`c` >= 1): distinct copies, distinct words.
fn tag(c: usize) -> String {
    let mut n = c;
    let mut w = String::new();
    loop {
        w.push_str(SYLLABLES[n % SYLLABLES.len()]);
        n /= SYLLABLES.len();
        if n == 0 {
            break;
        }
    }
    format!("{}{}n", w[..1].to_uppercase(), &w[1..])
}

/// The shared sample `shared` under `../shared/data`, else the bundled one `bundled` under
/// `raw/`.
fn sample(repo: &Path, shared: &str, bundled: &str) -> Vec<Value> {
    let shared = repo.join("../shared/data").join(shared);
    let path: PathBuf = if shared.is_file() {
        shared
    } else {
        repo.join("raw").join(bundled)
    };
    eprintln!("scale: facts repeated from {}", path.display());
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// `text` with every label of `labels` (longest first, whole JSON string contents included)
/// followed by ` WORD`, and every id of `ids` (a whole JSON string) followed by `cC`.
fn renamed(text: &str, labels: &[String], ids: &[String], c: usize) -> String {
    let word = tag(c);
    let mut labels: Vec<&String> = labels.iter().filter(|l| l.len() > 1).collect();
    labels.sort_by_key(|l| std::cmp::Reverse(l.len()));
    labels.dedup();
    let mut out = text.to_owned();
    // Placeholders first, so that a shorter label inside a longer one is not renamed twice.
    for (i, l) in labels.iter().enumerate() {
        out = out.replace(l.as_str(), &format!("\u{1}{i}\u{2}"));
    }
    for (i, l) in labels.iter().enumerate() {
        out = out.replace(&format!("\u{1}{i}\u{2}"), &format!("{l} {word}"));
    }
    for id in ids {
        out = out.replace(&format!("\"{id}\""), &format!("\"{id}c{c}\""));
    }
    out
}

/// Writes `raw/popqa/popqa.json`: `facts` PopQA facts. Copies rename their subject, and every
/// other copy its object too.
pub fn write_popqa(repo: &Path, raw: &Path, facts: usize) {
    let base = sample(repo, "popqa/popqa.sample.json", "popqa/popqa.json");
    let mut out = Vec::with_capacity(facts);
    for k in 0..facts {
        let rec = &base[k % base.len()];
        let c = k / base.len();
        let mut rec = if c == 0 {
            rec.clone()
        } else {
            let mut labels = vec![rec["subj"].as_str().unwrap_or_default().to_owned()];
            if c % 2 == 1 {
                labels.push(rec["obj"].as_str().unwrap_or_default().to_owned());
            }
            serde_json::from_str(&renamed(&rec.to_string(), &labels, &[], c)).unwrap()
        };
        rec["id"] = json!(k);
        out.push(rec);
    }
    let dir = raw.join("popqa");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("popqa.json"), Value::Array(out).to_string()).unwrap();
}

/// The labels and ids of a MQuAKE case's entities: subjects and objects of its chains and
/// of its edits.
fn entities(case: &Value) -> (Vec<String>, Vec<String>) {
    let (mut labels, mut ids) = (Vec::new(), Vec::new());
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    for key in ["triples", "new_triples"] {
        for t in case["orig"][key].as_array().into_iter().flatten() {
            ids.extend([s(&t[0]), s(&t[2])]);
        }
    }
    for key in ["triples_labeled", "new_triples_labeled"] {
        for t in case["orig"][key].as_array().into_iter().flatten() {
            labels.extend([s(&t[0]), s(&t[2])]);
        }
    }
    for e in case["requested_rewrite"].as_array().into_iter().flatten() {
        labels.extend([s(&e["subject"]), s(&e["target_new"]["str"])]);
        labels.push(s(&e["target_true"]["str"]));
        ids.extend([s(&e["target_new"]["id"]), s(&e["target_true"]["id"])]);
    }
    ids.retain(|i| !i.is_empty());
    ids.sort();
    ids.dedup();
    (labels, ids)
}

/// The facts the `mquake` reader gives for a case (before `distinct`): the chain's hops and
/// each edit off the chain.
fn facts_of(case: &Value) -> usize {
    let chain = case["orig"]["triples"].as_array().map_or(0, Vec::len);
    let on_chain = |e: &Value| {
        case["orig"]["triples"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t[1] == e["relation_id"] && t[2] == e["target_true"]["id"])
    };
    let off = case["requested_rewrite"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| !on_chain(e))
        .count();
    chain + off
}

/// Writes `raw/mquake/MQuAKE-CF.json` and `MQuAKE-T.json`: cases of both samples in turn, with
/// new case ids, until they give about `facts` facts.
pub fn write_mquake(repo: &Path, raw: &Path, facts: usize) {
    let cf = sample(
        repo,
        "mquake/MQuAKE-CF.sample.json",
        "mquake/MQuAKE-CF.json",
    );
    let t = sample(repo, "mquake/MQuAKE-T.sample.json", "mquake/MQuAKE-T.json");
    let base: Vec<(bool, &Value)> = cf
        .iter()
        .map(|c| (false, c))
        .chain(t.iter().map(|c| (true, c)))
        .collect();
    let (mut out_cf, mut out_t, mut given) = (Vec::new(), Vec::new(), 0);
    let mut k = 0;
    while given < facts {
        let (is_t, case) = base[k % base.len()];
        let c = k / base.len();
        let mut case: Value = if c == 0 {
            case.clone()
        } else {
            let (labels, ids) = entities(case);
            serde_json::from_str(&renamed(&case.to_string(), &labels, &ids, c)).unwrap()
        };
        case["case_id"] = json!(k + 1);
        given += facts_of(&case);
        if is_t {
            out_t.push(case);
        } else {
            out_cf.push(case);
        }
        k += 1;
    }
    let dir = raw.join("mquake");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("MQuAKE-CF.json"), Value::Array(out_cf).to_string()).unwrap();
    std::fs::write(dir.join("MQuAKE-T.json"), Value::Array(out_t).to_string()).unwrap();
}
