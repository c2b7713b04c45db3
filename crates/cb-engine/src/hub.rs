//! What makes a build a Hugging Face dataset as it stands: the YAML block at the top of a
//! card (license, language, tasks, size, source datasets, tags, and `configs` naming the
//! data files so that `datasets.load_dataset` and the Hub read exactly those, split by
//! split), and the benchmark-level card `<out>/<benchmark>/README.md` with one config per
//! domain and file, written from the manifests on disk.

use crate::output::{write_atomic, REJECTS};
use crate::EngineError;
use cb_model::{CardMeta, DataFile, Manifest, SourceLicense};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::fmt::Write;
use std::path::Path;

/// The Hub tags of every build.
pub const TAGS: [&str; 3] = ["knowledge-conflict", "counterfactual", "robustness"];

/// The recipe's card metadata completed for its output `format`: the split is `train` (the
/// Hub's name for data without splits) when the recipe names none, and the tasks are those
/// of the format when the recipe names none.
pub fn complete(meta: &CardMeta, format: &str) -> CardMeta {
    let mut m = meta.clone();
    if m.split.is_empty() {
        m.split = "train".into();
    }
    if m.task_categories.is_empty() {
        let mut tasks = vec!["multiple-choice", "question-answering"];
        if format == "recall" {
            tasks.push("text-generation");
        }
        m.task_categories = tasks.into_iter().map(String::from).collect();
    }
    if m.task_ids.is_empty() {
        m.task_ids = vec!["multiple-choice-qa".into()];
    }
    m
}

/// How much a license restricts reuse, from public domain (0) to not known (7). An
/// identifier not listed is taken as the most restrictive: nothing can be assumed of it.
fn restriction(license: &str) -> u8 {
    match license {
        "cc0-1.0" | "pddl" | "unlicense" => 0,
        "mit" | "isc" | "bsd-2-clause" => 1,
        // Permissive, with more conditions (no endorsement, notices, patents).
        "bsd-3-clause"
        | "apache-2.0"
        | "bsl-1.0"
        | "cdla-permissive-1.0"
        | "cdla-permissive-2.0" => 2,
        "cc-by-4.0" | "cc-by-3.0" | "cc-by-2.0" | "odc-by" => 3,
        "cc-by-sa-4.0" | "cc-by-sa-3.0" | "cdla-sharing-1.0" | "odbl" | "gpl-3.0" | "lgpl-3.0"
        | "gfdl" => 4,
        "cc-by-nc-4.0" | "cc-by-nc-3.0" | "cc-by-nc-sa-4.0" | "cc-by-nc-sa-3.0" => 5,
        "cc-by-nd-4.0" | "cc-by-nc-nd-4.0" => 6,
        _ => 7,
    }
}

/// The card's `license`: the most restrictive of the sources' licenses (all of them where
/// several are equally restrictive), `unknown` when no source states one.
pub fn card_license<'a>(licenses: impl IntoIterator<Item = &'a SourceLicense>) -> Vec<String> {
    let ids: BTreeSet<&str> = licenses.into_iter().map(|l| l.license.as_str()).collect();
    let Some(max) = ids.iter().map(|l| restriction(l)).max() else {
        return vec!["unknown".into()];
    };
    ids.into_iter()
        .filter(|l| restriction(l) == max)
        .map(String::from)
        .collect()
}

/// The Hub's size category of `n` rows.
pub fn size_category(n: u64) -> &'static str {
    const SIZES: [(u64, &str); 6] = [
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
        (10_000_000, "1M<n<10M"),
        (100_000_000, "10M<n<100M"),
    ];
    SIZES
        .iter()
        .find(|(limit, _)| n < *limit)
        .map_or("100M<n<1B", |(_, s)| s)
}

/// One `configs` entry: a config that loads one file as one split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub name: String,
    pub split: String,
    pub path: String,
    pub rows: u64,
    pub bytes: u64,
    /// Whether it loads `rejects.jsonl` (not counted in the size).
    pub rejects: bool,
}

/// The configs of one build's files: as they are for the domain's own card; for the
/// benchmark card (`domain` given), under `<domain>/` and named `<domain>_<config>`, except
/// the domain's main KRE file, whose config is the domain's name already. Files without
/// rows get none.
pub fn configs(files: &[DataFile], domain: Option<&str>) -> Vec<Config> {
    files
        .iter()
        .filter(|f| f.rows > 0)
        .map(|f| {
            let (name, path) = match domain {
                None => (f.config.clone(), f.path.clone()),
                Some(d) if f.config == d => (d.to_owned(), format!("{d}/{}", f.path)),
                Some(d) => (format!("{d}_{}", f.config), format!("{d}/{}", f.path)),
            };
            Config {
                name,
                path,
                split: f.split.clone(),
                rows: f.rows,
                bytes: f.bytes,
                rejects: f.config == REJECTS,
            }
        })
        .collect()
}

/// The YAML block that opens a card. The first config is the default one (what
/// `load_dataset(folder)` loads); the size counts the rows of every config but the rejects.
/// `dataset_info` gives each config's rows (which `datasets` checks when it loads) and the
/// bytes of its file: `datasets` keys its cache of a local folder on the card, so a rebuild
/// that changes a file must change the card, or a reload would serve the old rows.
pub fn front_matter<'a>(
    pretty_name: &str,
    metas: impl IntoIterator<Item = &'a CardMeta> + Clone,
    configs: &[Config],
) -> String {
    let union = |pick: fn(&CardMeta) -> &Vec<String>| -> Vec<String> {
        let set: BTreeSet<&String> = metas.clone().into_iter().flat_map(pick).collect();
        set.into_iter().cloned().collect()
    };
    let license = card_license(metas.clone().into_iter().flat_map(|m| &m.licenses));
    let rows: u64 = configs.iter().filter(|c| !c.rejects).map(|c| c.rows).sum();
    let mut top = Map::new();
    top.insert("pretty_name".into(), json!(pretty_name));
    top.insert(
        "license".into(),
        match license.as_slice() {
            [one] => json!(one),
            _ => json!(license),
        },
    );
    top.insert("language".into(), json!(union(|m| &m.language)));
    top.insert(
        "task_categories".into(),
        json!(union(|m| &m.task_categories)),
    );
    top.insert("task_ids".into(), json!(union(|m| &m.task_ids)));
    top.insert("size_categories".into(), json!([size_category(rows)]));
    top.insert(
        "source_datasets".into(),
        json!(union(|m| &m.source_datasets)),
    );
    top.insert("tags".into(), json!(TAGS));
    let infos: Vec<Value> = configs
        .iter()
        .map(|c| {
            json!({
                "config_name": c.name,
                "splits": [{"name": c.split, "num_bytes": c.bytes, "num_examples": c.rows}],
                "download_size": c.bytes,
            })
        })
        .collect();
    top.insert("dataset_info".into(), Value::Array(infos));
    let configs: Vec<Value> = configs
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut o = Map::new();
            o.insert("config_name".into(), json!(c.name));
            if i == 0 {
                o.insert("default".into(), json!(true));
            }
            o.insert(
                "data_files".into(),
                json!([{"split": c.split, "path": c.path}]),
            );
            Value::Object(o)
        })
        .collect();
    top.insert("configs".into(), Value::Array(configs));
    let mut s = String::from("---\n");
    yaml_map(&top, 0, &mut s);
    s.push_str("---\n\n");
    s
}

/// The Python lines that load `config` of the folder `folder`.
pub fn load_example(folder: &str, configs: &[Config]) -> String {
    let mut s = String::from("```python\nfrom datasets import load_dataset\n\n");
    let _ = writeln!(
        s,
        "ds = load_dataset(\"{folder}\")  # the default config{}",
        configs
            .first()
            .map(|c| format!(": {}", c.name))
            .unwrap_or_default()
    );
    for c in configs.iter().skip(1).take(2) {
        let _ = writeln!(
            s,
            "ds = load_dataset(\"{folder}\", \"{}\", split=\"{}\")",
            c.name, c.split
        );
    }
    s.push_str("```\n");
    s
}

/// The table of `configs`: name, file, split, rows.
pub fn config_table(configs: &[Config]) -> String {
    let mut s = String::from("| config | file | split | rows |\n|---|---|---|---:|\n");
    for c in configs {
        let _ = writeln!(
            s,
            "| `{}` | `{}` | {} | {} |",
            c.name, c.path, c.split, c.rows
        );
    }
    s
}

/// The license section of a card: the card's license and why, then each source's own.
pub fn license_section<'a>(metas: impl IntoIterator<Item = &'a CardMeta> + Clone) -> String {
    let license = card_license(metas.clone().into_iter().flat_map(|m| &m.licenses));
    let mut s = String::from("## License\n\n");
    let _ = writeln!(
        s,
        "The rows are derived from their sources and carry the sources' terms. The card's license, `{}`, is the most restrictive of the sources' licenses (from the least: public domain; permissive like MIT; permissive with more conditions like BSD-3-Clause or Apache-2.0; attribution; share-alike; non-commercial; no-derivatives; and last a license not stated or not known). Each source's own, as its publisher states it:\n",
        license.join("`, `")
    );
    let mut seen = BTreeSet::new();
    for l in metas.into_iter().flat_map(|m| &m.licenses) {
        if seen.insert((&l.source, &l.license)) {
            let _ = writeln!(s, "- {}: `{}`. {}", l.source, l.license, l.stated);
        }
    }
    if seen.is_empty() {
        s.push_str("- The recipe names no source license: find out before you publish.\n");
    }
    s.push_str("\nThe generated text (negative contexts, edits, paraphrases) comes from the backend named in each manifest; check that model's terms of use too.\n");
    s
}

/// Writes `<out>/<benchmark>/README.md`: one config per domain folder and data file on
/// disk (folders in name order, so the card depends only on what is there), the union of
/// their metadata, the most restrictive license. A folder whose manifest cannot be read or
/// names a file that is not there is left out with a warning.
pub fn write_benchmark_card(out: &Path, benchmark: &str) -> Result<(), EngineError> {
    let dir = out.join(benchmark);
    let read_err = |source| EngineError::Write {
        path: dir.clone(),
        source,
    };
    let mut folders: Vec<String> = std::fs::read_dir(&dir)
        .map_err(read_err)?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("manifest.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    folders.sort();
    let mut builds = Vec::new();
    for folder in folders {
        let path = dir.join(&folder).join("manifest.json");
        let manifest: Manifest = match std::fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
        {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!("{}: left out of the benchmark card: {e}", path.display());
                continue;
            }
        };
        let missing: Vec<&str> = manifest
            .data_files
            .iter()
            .filter(|f| f.rows > 0 && !dir.join(&folder).join(&f.path).is_file())
            .map(|f| f.path.as_str())
            .collect();
        if !missing.is_empty() || manifest.data_files.is_empty() {
            tracing::warn!(
                "{}: left out of the benchmark card: {}",
                dir.join(&folder).display(),
                if missing.is_empty() {
                    "its manifest lists no data files (built by an older version: build it again)"
                        .to_owned()
                } else {
                    format!("missing {}", missing.join(", "))
                }
            );
            continue;
        }
        builds.push((folder, manifest));
    }
    let card = benchmark_card(benchmark, &builds);
    write_atomic(&dir.join("README.md"), card.as_bytes())
}

/// The benchmark card over `builds` (folder name, manifest).
pub fn benchmark_card(benchmark: &str, builds: &[(String, Manifest)]) -> String {
    let configs: Vec<Config> = builds
        .iter()
        .flat_map(|(folder, m)| configs(&m.data_files, Some(folder)))
        .collect();
    let metas = builds.iter().map(|(_, m)| &m.card);
    let upper = benchmark.to_uppercase();
    let mut s = front_matter(
        &format!("{upper} (conflictbench build)"),
        metas.clone(),
        &configs,
    );
    let _ = writeln!(s, "# {upper}\n");
    let _ = writeln!(
        s,
        "{} domain build(s) of {upper}, made by conflictbench, one folder each with its own card (`<domain>/README.md`: how it was built, the counts per stage, every field of the files). This card is written again after every build of {upper} into this folder and lists the builds on disk then. Each domain's data file and its rejects are a config of their own.\n",
        builds.len()
    );
    s.push_str(&config_table(&configs));
    s.push('\n');
    s.push_str(&load_example(&format!("generated/{benchmark}"), &configs));
    let _ = writeln!(s, "\n## Builds\n");
    let _ = writeln!(
        s,
        "| domain | split | source split | rows | rejected | generated by |\n|---|---|---|---:|---:|---|"
    );
    for (folder, m) in builds {
        let by = if m.offline {
            "offline rules (no model)".to_owned()
        } else {
            format!("{} `{}`", m.backend, m.model)
        };
        let _ = writeln!(
            s,
            "| `{folder}` | {} | {} | {} | {} | {by} |",
            m.card.split, m.card.source_split, m.rows, m.rejected
        );
    }
    if builds.iter().any(|(_, m)| m.offline) {
        s.push_str("\n> Builds marked \"offline rules\" were generated by the tool's deterministic rules, not by a language model: use them to check the pipeline and the formats, not as a benchmark.\n");
    }
    s.push('\n');
    s.push_str(&license_section(builds.iter().map(|(_, m)| &m.card)));
    s
}

/// Writes `map` as block YAML at `indent` spaces.
fn yaml_map(map: &Map<String, Value>, indent: usize, out: &mut String) {
    for (k, v) in map {
        out.push_str(&" ".repeat(indent));
        out.push_str(k);
        out.push(':');
        match v {
            Value::Array(a) if a.is_empty() => out.push_str(" []\n"),
            Value::Array(a) => {
                out.push('\n');
                yaml_list(a, indent, out);
            }
            Value::Object(o) => {
                out.push('\n');
                yaml_map(o, indent + 2, out);
            }
            scalar => {
                out.push(' ');
                out.push_str(&yaml_scalar(scalar));
                out.push('\n');
            }
        }
    }
}

/// Writes `list` as block YAML items at `indent` spaces (objects' first key on the dash's
/// line; nested lists in flow style, which no card needs).
fn yaml_list(list: &[Value], indent: usize, out: &mut String) {
    for v in list {
        out.push_str(&" ".repeat(indent));
        out.push_str("- ");
        match v {
            Value::Object(o) => {
                let mut item = String::new();
                yaml_map(o, indent + 2, &mut item);
                out.push_str(item.get(indent + 2..).unwrap_or_default());
            }
            Value::Array(_) => {
                out.push_str(&v.to_string());
                out.push('\n');
            }
            scalar => {
                out.push_str(&yaml_scalar(scalar));
                out.push('\n');
            }
        }
    }
}

/// A YAML scalar: a string plain where YAML reads it back as that string, else in double
/// quotes (JSON's escapes are YAML's); other values as JSON writes them.
fn yaml_scalar(v: &Value) -> String {
    let Value::String(s) = v else {
        return v.to_string();
    };
    let plain = s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && !s.ends_with(' ')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || " _./|<>+-()".contains(c))
        && s.parse::<f64>().is_err()
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "y" | "n"
        );
    if plain {
        s.clone()
    } else {
        Value::String(s.clone()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lic(id: &str) -> SourceLicense {
        SourceLicense {
            source: id.to_uppercase(),
            license: id.into(),
            stated: String::new(),
        }
    }

    #[test]
    fn the_most_restrictive_license_wins_and_ties_are_all_named() {
        let l = [lic("mit"), lic("cc-by-sa-4.0"), lic("bsd-3-clause")];
        assert_eq!(card_license(&l), ["cc-by-sa-4.0"]);
        assert_eq!(
            card_license(&[lic("mit"), lic("bsd-3-clause")]),
            ["bsd-3-clause"]
        );
        let l = [
            lic("cc-by-sa-4.0"),
            lic("cdla-sharing-1.0"),
            lic("cc-by-4.0"),
        ];
        assert_eq!(card_license(&l), ["cc-by-sa-4.0", "cdla-sharing-1.0"]);
        assert_eq!(
            card_license(&[lic("cc-by-sa-4.0"), lic("unknown")]),
            ["unknown"]
        );
        assert_eq!(card_license(&[]), ["unknown"]);
    }

    #[test]
    fn sizes_follow_the_hub_categories() {
        assert_eq!(size_category(0), "n<1K");
        assert_eq!(size_category(999), "n<1K");
        assert_eq!(size_category(1_000), "1K<n<10K");
        assert_eq!(size_category(250_000), "100K<n<1M");
    }

    #[test]
    fn benchmark_configs_are_prefixed_by_domain_and_empty_files_get_none() {
        let f = |config: &str, path: &str, rows| DataFile {
            config: config.into(),
            path: path.into(),
            split: "test".into(),
            rows,
            bytes: rows * 10,
        };
        let files = [
            f("uj", "uj.jsonl", 3),
            f("qa_na", "qa_na.jsonl", 2),
            f("rejects", "rejects.jsonl", 0),
        ];
        let c = configs(&files, Some("uj"));
        let names: Vec<_> = c
            .iter()
            .map(|c| (c.name.as_str(), c.path.as_str()))
            .collect();
        assert_eq!(
            names,
            [("uj", "uj/uj.jsonl"), ("uj_qa_na", "uj/qa_na.jsonl")]
        );
        assert_eq!(configs(&files, None)[1].name, "qa_na");
    }

    #[test]
    fn scalars_are_quoted_only_where_yaml_would_misread_them() {
        for (s, want) in [
            ("n<1K", "n<1K"),
            ("extended|tau/commonsense_qa", "extended|tau/commonsense_qa"),
            ("KRE / cose", "KRE / cose"),
            ("yes", "\"yes\""),
            ("1.0", "\"1.0\""),
            ("a: b", "\"a: b\""),
            ("-x", "\"-x\""),
            ("", "\"\""),
        ] {
            assert_eq!(yaml_scalar(&json!(s)), want, "{s}");
        }
    }

    #[test]
    fn front_matter_is_block_yaml_with_a_default_config() {
        let meta = CardMeta {
            pretty_name: "P".into(),
            split: "validation".into(),
            language: vec!["en".into()],
            licenses: vec![lic("mit")],
            ..Default::default()
        };
        let configs = [
            Config {
                name: "cose".into(),
                split: "validation".into(),
                path: "cose.jsonl".into(),
                rows: 3,
                bytes: 30,
                rejects: false,
            },
            Config {
                name: "rejects".into(),
                split: "validation".into(),
                path: "rejects.jsonl".into(),
                rows: 2,
                bytes: 20,
                rejects: true,
            },
        ];
        let y = front_matter("P", [&meta], &configs);
        assert!(
            y.starts_with("---\npretty_name: P\nlicense: mit\nlanguage:\n- en\n"),
            "{y}"
        );
        assert!(
            y.contains("task_ids: []\nsize_categories:\n- n<1K\n"),
            "{y}"
        );
        assert!(y.contains(
            "dataset_info:\n- config_name: cose\n  splits:\n  - name: validation\n    num_bytes: 30\n    num_examples: 3\n  download_size: 30\n"
        ), "{y}");
        assert!(y.contains(
            "configs:\n- config_name: cose\n  default: true\n  data_files:\n  - split: validation\n    path: cose.jsonl\n- config_name: rejects\n  data_files:\n"
        ), "{y}");
        assert!(y.ends_with("---\n\n"));
    }
}
