//! Every build is a Hugging Face dataset as it stands: each card opens with the Hub's YAML
//! block, its `configs` name every data file exactly once (and only files that exist), the
//! row counts are the manifest's, and within a file every row has the same keys with the
//! same types, so that `datasets.load_dataset` infers one schema. The benchmark-level card
//! (`<out>/<benchmark>/README.md`) does the same over the domains on disk.
//!
//! Set `CONFLICTBENCH_KEEP_OUT=DIR` to keep the builds under `DIR` (for
//! `scripts/hub_check.py`, which loads them with the `datasets` library).

mod common;

use cb_mock::{responder, MockServer, Reply};
use common::*;
use serde_json::Value;
use serde_yaml_ng::Value as Yaml;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// An output folder: a temporary one, or `CONFLICTBENCH_KEEP_OUT/<name>` when set.
struct Out {
    path: PathBuf,
    _tmp: Option<tempfile::TempDir>,
}

fn out(name: &str) -> Out {
    match std::env::var_os("CONFLICTBENCH_KEEP_OUT") {
        Some(keep) => {
            let path = PathBuf::from(keep).join(name);
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir_all(&path).unwrap();
            Out { path, _tmp: None }
        }
        None => {
            let t = tempfile::tempdir().unwrap();
            Out {
                path: t.path().to_path_buf(),
                _tmp: Some(t),
            }
        }
    }
}

/// The YAML block that opens `README.md` of `dir`.
fn front_matter(dir: &Path) -> Yaml {
    let card = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let rest = card
        .strip_prefix("---\n")
        .unwrap_or_else(|| panic!("{}: the card does not open with ---", dir.display()));
    let end = rest.find("\n---\n").expect("the YAML block is closed");
    serde_yaml_ng::from_str(&rest[..end + 1])
        .unwrap_or_else(|e| panic!("{}: the YAML does not parse: {e}", dir.display()))
}

fn strings(y: &Yaml) -> Vec<String> {
    match y {
        Yaml::String(s) => vec![s.clone()],
        Yaml::Sequence(s) => s
            .iter()
            .map(|v| v.as_str().expect("a list of strings").to_owned())
            .collect(),
        other => panic!("expected a string or a list of strings, got {other:?}"),
    }
}

/// One config of a card: name, split, path, default.
#[derive(Debug)]
struct Config {
    name: String,
    split: String,
    path: String,
    default: bool,
}

/// Checks the Hub fields of the card of `dir` and returns its license and configs.
fn card(dir: &Path) -> (Vec<String>, Vec<Config>) {
    let y = front_matter(dir);
    let at = |k: &str| {
        y.get(k)
            .unwrap_or_else(|| panic!("{}: no `{k}` in the card", dir.display()))
    };
    assert!(!at("pretty_name").as_str().unwrap().is_empty());
    let license = strings(at("license"));
    assert!(!license.is_empty());
    assert_eq!(strings(at("language")), ["en"], "{}", dir.display());
    assert!(strings(at("task_categories")).contains(&"multiple-choice".to_owned()));
    assert_eq!(strings(at("task_ids")), ["multiple-choice-qa"]);
    let size = strings(at("size_categories"));
    assert!(
        size.len() == 1 && size[0].contains('n'),
        "{}: {size:?}",
        dir.display()
    );
    assert!(!strings(at("source_datasets")).is_empty());
    let tags = strings(at("tags"));
    for t in ["knowledge-conflict", "counterfactual", "robustness"] {
        assert!(
            tags.contains(&t.to_owned()),
            "{}: tags {tags:?}",
            dir.display()
        );
    }
    let configs: Vec<Config> = at("configs")
        .as_sequence()
        .unwrap()
        .iter()
        .map(|c| {
            let files = c["data_files"].as_sequence().unwrap();
            assert_eq!(files.len(), 1, "one file per config: {c:?}");
            Config {
                name: c["config_name"].as_str().unwrap().to_owned(),
                split: files[0]["split"].as_str().unwrap().to_owned(),
                path: files[0]["path"].as_str().unwrap().to_owned(),
                default: c.get("default").and_then(Yaml::as_bool) == Some(true),
            }
        })
        .collect();
    let defaults: Vec<&str> = configs
        .iter()
        .filter(|c| c.default)
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(defaults.len(), 1, "{}: one default config", dir.display());
    let names: BTreeSet<&str> = configs.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names.len(), configs.len(), "config names are unique");
    (license, configs)
}

/// The data files of a build folder: every JSONL file but the run log, relative to `root`.
fn data_files(dir: &Path, root: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .filter(|p| !p.ends_with("runs.jsonl"))
        .map(|p| p.strip_prefix(root).unwrap().display().to_string())
        .collect();
    v.sort();
    v
}

fn line_count(p: &Path) -> u64 {
    std::fs::read_to_string(p).unwrap().lines().count() as u64
}

/// The type of a JSON value, as a loader infers it; `null` fits any type.
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Null,
    Bool,
    Int,
    Float,
    Str,
    List(Box<Shape>),
    Object(BTreeMap<String, Shape>),
}

fn shape(v: &Value) -> Shape {
    match v {
        Value::Null => Shape::Null,
        Value::Bool(_) => Shape::Bool,
        Value::Number(n) if n.is_f64() => Shape::Float,
        Value::Number(_) => Shape::Int,
        Value::String(_) => Shape::Str,
        Value::Array(a) => {
            let mut s = Shape::Null;
            for (i, x) in a.iter().enumerate() {
                s = unify(s, shape(x)).unwrap_or_else(|e| panic!("list item {i}: {e}"));
            }
            Shape::List(Box::new(s))
        }
        Value::Object(o) => Shape::Object(o.iter().map(|(k, v)| (k.clone(), shape(v))).collect()),
    }
}

/// The one type both shapes are, or why there is none (a key missing on one side, two
/// types for one key).
fn unify(a: Shape, b: Shape) -> Result<Shape, String> {
    match (a, b) {
        (Shape::Null, x) | (x, Shape::Null) => Ok(x),
        (Shape::List(a), Shape::List(b)) => Ok(Shape::List(Box::new(unify(*a, *b)?))),
        (Shape::Object(a), Shape::Object(b)) => {
            let (ka, kb): (BTreeSet<_>, BTreeSet<_>) = (a.keys().collect(), b.keys().collect());
            if ka != kb {
                return Err(format!(
                    "keys differ: {:?} vs {:?}",
                    ka.symmetric_difference(&kb).collect::<Vec<_>>(),
                    kb.symmetric_difference(&ka).collect::<Vec<_>>()
                ));
            }
            let mut b = b;
            a.into_iter()
                .map(|(k, x)| {
                    let y = b.remove(&k).unwrap();
                    unify(x, y)
                        .map(|s| (k.clone(), s))
                        .map_err(|e| format!("{k}: {e}"))
                })
                .collect::<Result<_, _>>()
                .map(Shape::Object)
        }
        (a, b) if a == b => Ok(a),
        (a, b) => Err(format!("{a:?} vs {b:?}")),
    }
}

/// Every row of the JSONL file `p` has the same keys with the same types; returns the keys.
fn assert_stable_columns(p: &Path) -> BTreeSet<String> {
    let mut all = Shape::Null;
    for (i, row) in read_jsonl(p).iter().enumerate() {
        assert!(row.is_object(), "{}:{}: not an object", p.display(), i + 1);
        all = unify(all, shape(row)).unwrap_or_else(|e| panic!("{}:{}: {e}", p.display(), i + 1));
    }
    match all {
        Shape::Object(o) => o.into_keys().collect(),
        _ => BTreeSet::new(),
    }
}

/// Files of one kind have the same columns in every domain (a value that does not apply
/// to a domain is `null`, not a missing key): the KRE rows, each RECALL file, the rejects.
fn assert_same_columns_across_domains(builds: &[PathBuf]) {
    let mut by_kind: BTreeMap<String, Vec<(PathBuf, BTreeSet<String>)>> = BTreeMap::new();
    for dir in builds {
        let domain = dir.file_name().unwrap().to_string_lossy().into_owned();
        for f in data_files(dir, dir) {
            let keys = assert_stable_columns(&dir.join(&f));
            if keys.is_empty() {
                continue;
            }
            let kind = if f == format!("{domain}.jsonl") {
                "rows".to_owned()
            } else {
                f.clone()
            };
            by_kind.entry(kind).or_default().push((dir.join(&f), keys));
        }
    }
    for (kind, files) in by_kind {
        for (path, keys) in &files[1..] {
            assert_eq!(
                keys,
                &files[0].1,
                "{kind}: {} vs {}",
                path.display(),
                files[0].0.display()
            );
        }
    }
}

/// Checks one domain build (card, manifest, files) and returns its card's license.
fn check_domain(dir: &Path, split: &str) -> Vec<String> {
    let (license, configs) = card(dir);
    let m = read_json(&dir.join("manifest.json"));
    let listed: BTreeMap<&str, (&str, u64)> = m["data_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap(),
                (f["config"].as_str().unwrap(), f["rows"].as_u64().unwrap()),
            )
        })
        .collect();
    let on_disk = data_files(dir, dir);
    assert_eq!(
        listed.keys().copied().collect::<Vec<_>>(),
        on_disk,
        "{}: the manifest lists every data file",
        dir.display()
    );
    for file in &on_disk {
        let p = dir.join(file);
        assert_stable_columns(&p);
        let (config, rows) = listed[file.as_str()];
        assert_eq!(line_count(&p), rows, "{}: rows", p.display());
        let naming: Vec<&Config> = configs.iter().filter(|c| &c.path == file).collect();
        if rows == 0 {
            assert!(naming.is_empty(), "{file} is empty but named by a config");
        } else {
            assert_eq!(
                naming.len(),
                1,
                "{}: {file} named by {naming:?}",
                dir.display()
            );
            assert_eq!(naming[0].name, config);
            assert_eq!(naming[0].split, split, "{}: split", dir.display());
        }
    }
    for c in &configs {
        assert!(dir.join(&c.path).is_file(), "{}: {c:?}", dir.display());
    }
    assert_eq!(
        configs
            .iter()
            .filter(|c| c.default)
            .map(|c| c.name.as_str())
            .next(),
        configs.first().map(|c| c.name.as_str())
    );
    assert_eq!(m["card"]["split"], split);
    license
}

/// Checks the benchmark card of `bench` (a folder of domain builds): one config per data file
/// with rows of every domain, names prefixed by the domain, and returns its license.
fn check_benchmark(bench: &Path, domains: &[&str]) -> Vec<String> {
    let (license, configs) = card(bench);
    let mut expected = Vec::new();
    for d in domains {
        for f in data_files(&bench.join(d), bench) {
            if line_count(&bench.join(&f)) > 0 {
                expected.push(f);
            }
        }
    }
    let mut named: Vec<String> = configs.iter().map(|c| c.path.clone()).collect();
    named.sort();
    expected.sort();
    assert_eq!(named, expected, "{}: every data file once", bench.display());
    for c in &configs {
        let domain = c.path.split('/').next().unwrap();
        assert!(
            c.name == domain || c.name.starts_with(&format!("{domain}_")),
            "{c:?}"
        );
    }
    license
}

#[tokio::test(flavor = "multi_thread")]
async fn every_bundled_build_is_a_hub_dataset() {
    let out = out("bundled");
    let raw = repo().join("raw");
    let o = build(
        &[
            "all",
            "--raw",
            raw.to_str().unwrap(),
            "--out",
            out.path.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    assert!(o.status.success(), "{}", text(&o));
    let kre = out.path.join("kre");
    let recall = out.path.join("recall");
    for (domain, license, split) in [
        ("cose", "bsd-3-clause", "validation"),
        ("ecare", "mit", "validation"),
        ("ecqa", "cdla-sharing-1.0", "validation"),
        ("musique", "cc-by-4.0", "validation"),
        ("squad", "cc-by-sa-4.0", "validation"),
    ] {
        let got = check_domain(&kre.join(domain), split);
        assert_eq!(got, [license], "kre/{domain}");
        let card = std::fs::read_to_string(kre.join(domain).join("README.md")).unwrap();
        assert!(card.contains("## License") && card.contains("this file is in no config"));
    }
    assert_eq!(
        check_domain(&recall.join("eventkg"), "train"),
        ["cc-by-sa-4.0"]
    );
    assert_eq!(check_domain(&recall.join("uj"), "test"), ["apache-2.0"]);
    // UJ: each term has a sentence-grained QA-NA row besides the word-grained one, so the
    // QA-NA file has more rows than the build has items; the config's count is the file's.
    let m = read_json(&recall.join("uj/manifest.json"));
    let qa_na = m["data_files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["config"] == "qa_na")
        .unwrap();
    assert!(qa_na["rows"].as_u64().unwrap() > m["rows"].as_u64().unwrap());
    let builds: Vec<PathBuf> = [
        "kre/cose",
        "kre/ecare",
        "kre/ecqa",
        "kre/musique",
        "kre/squad",
    ]
    .iter()
    .chain(&["recall/eventkg", "recall/uj"])
    .map(|d| out.path.join(d))
    .collect();
    assert_same_columns_across_domains(&builds);

    let kre_license = check_benchmark(&kre, &["cose", "ecare", "ecqa", "musique", "squad"]);
    assert_eq!(kre_license, ["cc-by-sa-4.0", "cdla-sharing-1.0"]);
    assert_eq!(
        check_benchmark(&recall, &["eventkg", "uj"]),
        ["cc-by-sa-4.0"]
    );
    let recall_names: Vec<String> = card(&recall).1.into_iter().map(|c| c.name).collect();
    for name in [
        "eventkg_qa_a",
        "eventkg_text_generation",
        "uj_qa_na",
        "uj_qa_a",
    ] {
        assert!(recall_names.contains(&name.to_owned()), "{recall_names:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_benchmark_card_lists_the_builds_on_disk_and_only_depends_on_them() {
    let out = out("partial");
    let raw = repo().join("raw");
    let (r, o) = (raw.to_str().unwrap(), out.path.to_str().unwrap());
    let kre = out.path.join("kre");
    let names = || -> Vec<String> { card(&kre).1.into_iter().map(|c| c.name).collect() };
    let ecare = build(&["kre", "--domains", "ecare", "--raw", r, "--out", o], &[]).await;
    assert!(ecare.status.success(), "{}", text(&ecare));
    assert_eq!(names(), ["ecare"], "no rejects: no rejects config");
    assert_eq!(check_benchmark(&kre, &["ecare"]), ["mit"]);
    let first = std::fs::read(kre.join("README.md")).unwrap();

    let cose = build(&["kre", "--domains", "cose", "--raw", r, "--out", o], &[]).await;
    assert!(cose.status.success(), "{}", text(&cose));
    assert_eq!(names(), ["cose", "cose_rejects", "ecare"]);
    assert_eq!(check_benchmark(&kre, &["cose", "ecare"]), ["bsd-3-clause"]);
    let both = std::fs::read(kre.join("README.md")).unwrap();
    assert_ne!(first, both);
    // Building ecare again changes nothing on disk, so the card stays byte for byte.
    let again = build(&["kre", "--domains", "ecare", "--raw", r, "--out", o], &[]).await;
    assert!(again.status.success(), "{}", text(&again));
    assert_eq!(std::fs::read(kre.join("README.md")).unwrap(), both);
    // A folder whose data file went missing is left out rather than named.
    std::fs::remove_file(kre.join("cose/cose.jsonl")).unwrap();
    let again = build(&["kre", "--domains", "ecare", "--raw", r, "--out", o], &[]).await;
    assert!(again.status.success(), "{}", text(&again));
    assert_eq!(names(), ["ecare"]);
    // Building it again brings it back.
    let cose = build(&["kre", "--domains", "cose", "--raw", r, "--out", o], &[]).await;
    assert!(cose.status.success(), "{}", text(&cose));
    assert_eq!(std::fs::read(kre.join("README.md")).unwrap(), both);
}

/// The mock model: supports the option it is asked to support, except for questions about
/// the odd-numbered items, where it answers without naming the option (a reject that keeps
/// the raw answer).
fn picky_model(req: &cb_mock::ChatRequest) -> Reply {
    let all = all_text(req);
    let odd = between(&all, "Question number ", ":")
        .and_then(|n| n.parse::<u32>().ok())
        .is_some_and(|n| n % 2 == 1);
    if odd {
        return Reply::Content("I would rather not say which one.".into());
    }
    model_reply(req)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_build_against_a_model_keeps_one_schema_with_lineage_and_raw_rejects() {
    let mock = MockServer::start(responder(picky_model)).await;
    let raw = tempfile::tempdir().unwrap();
    many_questions(raw.path(), 12);
    let out = out("mock");
    let (r, o) = (raw.path().to_str().unwrap(), out.path.to_str().unwrap());
    let built = build(&openai_args("cose", &mock.base_url(), r, o), &[]).await;
    assert!(built.status.success(), "{}", text(&built));
    let dir = out.path.join("kre/cose");
    assert_eq!(check_domain(&dir, "validation"), ["bsd-3-clause"]);
    let rows = read_jsonl(&dir.join("cose.jsonl"));
    assert!(!rows.is_empty());
    assert!(rows
        .iter()
        .all(|r| !r["lineage"].as_array().unwrap().is_empty()));
    let rejects = read_jsonl(&dir.join("rejects.jsonl"));
    assert!(
        rejects.iter().any(|r| r["raw_response"].is_string()),
        "{rejects:#?}"
    );
    assert!(rejects.iter().all(|r| r.get("raw_response").is_some()));
    check_benchmark(&out.path.join("kre"), &["cose"]);
    let card = std::fs::read_to_string(out.path.join("kre/README.md")).unwrap();
    assert!(card.contains("openai `m`"), "{card}");
}

#[tokio::test(flavor = "multi_thread")]
async fn builds_from_the_shared_samples_are_hub_datasets() {
    let Some(data) = shared_data() else { return };
    let out = out("shared");
    let o = build(
        &[
            "kre",
            "--domains",
            "cose,ecare",
            "--raw",
            data.to_str().unwrap(),
            "--out",
            out.path.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    assert!(o.status.success(), "{}", text(&o));
    let kre = out.path.join("kre");
    check_domain(&kre.join("cose"), "validation");
    check_domain(&kre.join("ecare"), "validation");
    check_benchmark(&kre, &["cose", "ecare"]);
}

#[test]
fn unify_finds_missing_keys_and_mixed_types() {
    let s = |j: &str| shape(&serde_json::from_str(j).unwrap());
    assert!(unify(s(r#"{"a":null,"b":[]}"#), s(r#"{"a":"x","b":[{"k":1}]}"#)).is_ok());
    assert!(unify(s(r#"{"a":"x"}"#), s(r#"{"b":"x"}"#)).is_err());
    assert!(unify(s(r#"{"a":"x"}"#), s(r#"{"a":1}"#)).is_err());
    assert!(unify(s(r#"{"l":[{"k":1}]}"#), s(r#"{"l":[{"k":1,"j":2}]}"#)).is_err());
}
