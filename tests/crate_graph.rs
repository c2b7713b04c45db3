//! The map cannot drift: the crate graph that ARCHITECTURE.md draws is the one Cargo builds,
//! and the absences it states hold.
//!
//! - Every workspace crate's direct dependencies on other workspace crates, normal and dev, are
//!   exactly the ones listed in ARCHITECTURE.md's "Crate graph" section (read from `cargo
//!   metadata`, nothing to keep in step by hand but that section).
//! - cb-engine reaches no cb-steps through normal dependencies (the engine names no step), and
//!   cb-steps no cb-engine at all.
//! - Only cb-llm and cb-mock depend on an HTTP or OpenAI client or server crate.
//! - Only the CLI depends on clap, indicatif or tracing-subscriber.
//! - Inside each crate, the modules do not import each other in a circle, at any depth (read
//!   from the `use`, `crate::`, `super::` and `self::` paths of the sources, and the root's
//!   `mod` declarations, tests left out): no children of one module name each other's items
//!   in a circle, directly or through their siblings. The root (lib.rs or main.rs) declares
//!   and re-exports, so a module that names something the root defines itself makes a circle
//!   with it; below the root, a child naming its parent's own items is nesting, not a circle.
//! - Every library crate's root holds only module declarations, re-exports and docs.
//! - No function runs over 80 lines; no source file over 600 lines of code (comments, blank
//!   lines and tests aside; cb-eval's `compare.rs` 800).
//! - ARCHITECTURE.md's code map has one entry a crate, naming every module its root declares;
//!   its glossary has each of the domain's words once; every name either gives in backticks
//!   is in the sources.
//! - Every root `tests/*.rs` file is the source of some crate's test target, so none is left
//!   unrun (the CLI crate lists them by hand, `autotests = false`).

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The direct workspace dependencies of one crate: (normal, dev).
type Edges = BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Workspace packages as `cargo metadata` reports them: name -> (manifest dir, deps json).
fn metadata() -> Vec<Value> {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    v["packages"].as_array().expect("packages").clone()
}

/// Each workspace crate's name and `src` folder.
fn crate_sources() -> Vec<(String, PathBuf)> {
    metadata()
        .iter()
        .map(|p| {
            let manifest = PathBuf::from(p["manifest_path"].as_str().expect("manifest_path"));
            let src = manifest.parent().expect("crate dir").join("src");
            (p["name"].as_str().expect("name").to_string(), src)
        })
        .collect()
}

fn dep_names(pkg: &Value, kind: Option<&str>) -> BTreeSet<String> {
    pkg["dependencies"]
        .as_array()
        .expect("dependencies")
        .iter()
        .filter(|d| d["kind"].as_str() == kind)
        .map(|d| d["name"].as_str().expect("name").to_string())
        .collect()
}

/// Each workspace crate's direct dependencies on workspace crates, from Cargo.
fn cargo_edges(pkgs: &[Value]) -> Edges {
    let members: BTreeSet<String> = pkgs
        .iter()
        .map(|p| p["name"].as_str().expect("name").to_string())
        .collect();
    pkgs.iter()
        .map(|p| {
            let keep = |s: BTreeSet<String>| -> BTreeSet<String> {
                s.into_iter().filter(|d| members.contains(d)).collect()
            };
            (
                p["name"].as_str().expect("name").to_string(),
                (keep(dep_names(p, None)), keep(dep_names(p, Some("dev")))),
            )
        })
        .collect()
}

/// The graph ARCHITECTURE.md states: in its "## Crate graph" section, one line a crate,
/// `` `crate` -> a, b (dev: c, d) `` (`-> nothing` for none).
fn documented_edges() -> Edges {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let section = text
        .split("\n## ")
        .find(|s| s.starts_with("Crate graph"))
        .expect("ARCHITECTURE.md has a '## Crate graph' section");
    let list = |s: &str| -> BTreeSet<String> {
        s.split(',')
            .map(|x| x.trim().trim_matches('`').to_string())
            .filter(|x| !x.is_empty() && x != "nothing")
            .collect()
    };
    let mut edges = Edges::new();
    for line in section.lines() {
        let Some(rest) = line.trim().strip_prefix("- `") else {
            continue;
        };
        let Some((name, deps)) = rest.split_once("` ->") else {
            continue;
        };
        let (normal, dev) = match deps.split_once("(dev:") {
            Some((n, d)) => (n, d.trim_end().trim_end_matches(')')),
            None => (deps, ""),
        };
        edges.insert(name.to_string(), (list(normal), list(dev)));
    }
    edges
}

#[test]
fn architecture_md_draws_the_crate_graph_cargo_builds() {
    let actual = cargo_edges(&metadata());
    let drawn = documented_edges();
    let show = |e: &Edges| {
        e.iter()
            .map(|(k, (n, d))| {
                let join = |s: &BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>().join(", ");
                let n = if n.is_empty() {
                    "nothing".to_string()
                } else {
                    join(n)
                };
                if d.is_empty() {
                    format!("- `{k}` -> {n}")
                } else {
                    format!("- `{k}` -> {n} (dev: {})", join(d))
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        show(&drawn),
        show(&actual),
        "ARCHITECTURE.md's crate graph (left) differs from Cargo's (right); \
         the right-hand lines are what the section should say"
    );
}

/// Every crate `from` reaches through normal dependencies, itself included.
fn normal_closure(edges: &Edges, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_string()];
    while let Some(c) = todo.pop() {
        if seen.insert(c.clone()) {
            todo.extend(edges.get(&c).map(|e| e.0.clone()).unwrap_or_default());
        }
    }
    seen
}

#[test]
fn the_engine_names_no_step_and_the_steps_no_engine() {
    let edges = cargo_edges(&metadata());
    assert!(
        !normal_closure(&edges, "cb-engine").contains("cb-steps"),
        "cb-engine reaches cb-steps through normal dependencies"
    );
    let (normal, dev) = &edges["cb-steps"];
    assert!(
        !normal_closure(&edges, "cb-steps").contains("cb-engine") && !dev.contains("cb-engine"),
        "cb-steps depends on cb-engine (normal: {normal:?}, dev: {dev:?})"
    );
}

/// Workspace crates that depend (normal or dev) on any of `crates`.
fn users_of(pkgs: &[Value], crates: &[&str]) -> BTreeSet<String> {
    pkgs.iter()
        .filter(|p| {
            let deps = dep_names(p, None)
                .into_iter()
                .chain(dep_names(p, Some("dev")))
                .chain(dep_names(p, Some("build")));
            deps.into_iter().any(|d| crates.contains(&d.as_str()))
        })
        .map(|p| p["name"].as_str().expect("name").to_string())
        .collect()
}

#[test]
fn only_the_llm_layer_and_the_mock_speak_http() {
    let http = [
        "reqwest",
        "hyper",
        "hyper-util",
        "axum",
        "async-openai",
        "tower-http",
        "ureq",
        "http",
    ];
    let pkgs = metadata();
    // The browser tests name `http::Method` in a WebDriver command fantoccini lacks (the
    // browser's log): the types crate as a dev-dependency beside fantoccini speaks nothing.
    let users: BTreeSet<String> = users_of(&pkgs, &http[..http.len() - 1])
        .into_iter()
        .chain(pkgs.iter().filter_map(|p| {
            let normal = dep_names(p, None)
                .into_iter()
                .chain(dep_names(p, Some("build")));
            let speaks = normal.into_iter().any(|d| d == "http")
                || (dep_names(p, Some("dev")).contains("http")
                    && !dep_names(p, Some("dev")).contains("fantoccini"));
            speaks.then(|| p["name"].as_str().expect("name").to_string())
        }))
        .collect();
    // cb-view serves its pages (axum) and calls nothing: no client crate is among its deps.
    let allowed: BTreeSet<String> = ["cb-llm", "cb-mock", "cb-view"].map(String::from).into();
    assert!(
        users.is_subset(&allowed),
        "crates speaking HTTP beside cb-llm and cb-mock: {:?}",
        users.difference(&allowed).collect::<Vec<_>>()
    );
}

#[test]
fn only_the_cli_knows_clap_progress_bars_and_the_log_subscriber() {
    let users = users_of(&metadata(), &["clap", "indicatif", "tracing-subscriber"]);
    assert_eq!(users, BTreeSet::from(["conflictbench".to_string()]));
}

/// The module a source file defines, as a path below the crate root (`[]` for the root).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("file under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without its test modules and comments.
fn code_of(text: &str) -> String {
    let mut code = String::new();
    let mut skip_depth: Option<usize> = None;
    let mut depth = 0usize;
    let mut cfg_test = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") {
            continue;
        }
        if trimmed.starts_with("#[cfg(test)]") {
            cfg_test = true;
            continue;
        }
        let item = ["pub(crate) ", "pub(super) ", "pub "]
            .iter()
            .find_map(|v| trimmed.strip_prefix(v))
            .unwrap_or(trimmed);
        if cfg_test && skip_depth.is_none() && item.starts_with("mod ") && trimmed.ends_with('{') {
            skip_depth = Some(depth);
        }
        cfg_test = false;
        depth += line.matches('{').count();
        depth = depth.saturating_sub(line.matches('}').count());
        if let Some(d) = skip_depth {
            if depth <= d {
                skip_depth = None;
            }
            continue;
        }
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// The crate paths a piece of code names: `crate::a::b` and `use crate::{a::{b, c}, d}`
/// expanded, each as its segments after `crate`; `super::` and `self::` paths, and those that
/// start at one of `module`'s `children` (`run::Built`), are resolved against `module`.
fn named_paths(code: &str, module: &[String], children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes: Vec<char> = code.chars().collect();
    let starts = |k: usize, word: &str| {
        let w: Vec<char> = word.chars().collect();
        bytes[k..].starts_with(&w) && bytes[k + w.len()..].starts_with(&[':', ':'])
    };
    let mut i = 0;
    while i < bytes.len() {
        let boundary = i == 0
            || !(bytes[i - 1].is_alphanumeric() || bytes[i - 1] == '_' || bytes[i - 1] == ':');
        let word: String = bytes[i..]
            .iter()
            .take_while(|c| c.is_alphanumeric() || **c == '_')
            .collect();
        let (prefix, skip): (Vec<String>, usize) = if !boundary || word.is_empty() {
            i += 1;
            continue;
        } else if starts(i, "crate") {
            (Vec::new(), 7)
        } else if starts(i, "super") {
            let mut base = module.to_vec();
            let mut k = i;
            while starts(k, "super") {
                base.pop();
                k += 7;
            }
            (base, k - i)
        } else if starts(i, "self") {
            (module.to_vec(), 6)
        } else if children.contains(&word) && starts(i, &word) {
            (module.to_vec(), 0)
        } else {
            i += word.len();
            continue;
        };
        let (tree, used) = path_tree(&bytes[i + skip..]);
        for p in tree {
            let mut full = prefix.clone();
            full.extend(p);
            out.push(full);
        }
        i += skip + used.max(1);
    }
    out
}

/// Reads a path tree (`a::b`, `a::{b, c::d}`, `{a, b}`) from the start of `s`: the
/// expanded paths and the characters read.
fn path_tree(s: &[char]) -> (Vec<Vec<String>>, usize) {
    let (tree, used) = use_tree(s);
    (tree.into_iter().map(|(p, _)| p).collect(), used)
}

/// A path of a `use` tree and the name it is renamed to (`a::{b as c}`), if any.
type Aliased = (Vec<String>, Option<String>);

/// [`path_tree`], each path with its new name, if any.
fn use_tree(s: &[char]) -> (Vec<Aliased>, usize) {
    let skip_space = |mut i: usize| {
        while i < s.len() && s[i].is_whitespace() {
            i += 1;
        }
        i
    };
    let ident = |mut i: usize| {
        let start = i;
        while i < s.len() && (s[i].is_alphanumeric() || s[i] == '_') {
            i += 1;
        }
        (s[start..i].iter().collect::<String>(), i)
    };
    let mut i = 0;
    let mut segs = Vec::new();
    loop {
        i = skip_space(i);
        if i < s.len() && s[i] == '{' {
            i += 1;
            let mut all = Vec::new();
            loop {
                let (sub, used) = use_tree(&s[i..]);
                i += used;
                for (p, alias) in sub {
                    let mut full = segs.clone();
                    full.extend(p);
                    all.push((full, alias));
                }
                while i < s.len() && (s[i].is_whitespace() || s[i] == ',') {
                    i += 1;
                }
                if i >= s.len() || s[i] == '}' {
                    return (all, i + 1);
                }
                if used == 0 {
                    // A glob or other token no path starts with.
                    i += 1;
                }
            }
        }
        let (seg, end) = ident(i);
        if seg.is_empty() {
            return (vec![(segs, None)], i);
        }
        segs.push(seg);
        i = end;
        if s[i..].starts_with(&[':', ':']) {
            i += 2;
            continue;
        }
        let at = skip_space(i);
        if at > i && s[at..].starts_with(&['a', 's']) {
            let (alias, end) = ident(skip_space(at + 2));
            if at + 2 < s.len() && s[at + 2].is_whitespace() && !alias.is_empty() {
                return (vec![(segs, Some(alias))], end);
            }
        }
        return (vec![(segs, None)], i);
    }
}

fn longest_module(path: &[String], modules: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains(p))
}

/// What the `use` items of a module's own code (its lines at the left margin: not a
/// function's, not an inline module's) bring into it: each name (its alias where renamed) and
/// the full path it stands for, as segments after `crate`; `None` for a name from another
/// crate. Paths start at `crate`, `self`, `super` or a child module of `module`.
fn imports_of(
    code: &str,
    module: &[String],
    modules: &BTreeSet<Vec<String>>,
) -> BTreeMap<String, Option<Vec<String>>> {
    let mut map = BTreeMap::new();
    let mut offset = 0;
    for line in code.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let mut item = line;
        if let Some(r) = item.strip_prefix("pub") {
            item = r.trim_start();
            if item.starts_with('(') {
                item = item.split_once(')').map_or("", |(_, r)| r.trim_start());
            }
        }
        let Some(tree) = item.strip_prefix("use ") else {
            continue;
        };
        let from = start + line.len() - tree.len();
        let end = code[from..].find(';').map_or(code.len(), |e| from + e);
        let chars: Vec<char> = code[from..end].chars().collect();
        for (mut path, alias) in use_tree(&chars).0 {
            if path.last().is_some_and(|s| s == "self") {
                path.pop();
            }
            if let Some(name) = alias.or_else(|| path.last().cloned()) {
                map.insert(name, absolute(&path, module, modules));
            }
        }
    }
    map
}

/// A `use` path of `module` as segments after `crate`, or `None` when it starts in another
/// crate.
fn absolute(
    path: &[String],
    module: &[String],
    modules: &BTreeSet<Vec<String>>,
) -> Option<Vec<String>> {
    let mut base = module.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        Some(first) => {
            let mut child = module.to_vec();
            child.push(first.to_string());
            if !modules.contains(&child) {
                return None;
            }
        }
        None => return None,
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The module a crate path names or defines its item in: the longest module the path runs
/// through, following a name that module imports (a re-export, or a `use` its children may
/// name through `super::`) to where it comes from; `None` for a name from another crate.
fn home_of(
    path: &[String],
    modules: &BTreeSet<Vec<String>>,
    imports: &BTreeMap<Vec<String>, BTreeMap<String, Option<Vec<String>>>>,
    depth: usize,
) -> Option<Vec<String>> {
    let module = longest_module(path, modules).unwrap_or_default();
    let Some(name) = path.get(module.len()) else {
        return Some(module);
    };
    match imports.get(&module).and_then(|m| m.get(name)) {
        Some(None) => None,
        Some(Some(from)) if depth < 8 && from.as_slice() != &path[..=module.len()] => {
            let mut next = from.clone();
            next.extend(path[module.len() + 1..].iter().cloned());
            home_of(&next, modules, imports, depth + 1)
        }
        _ => Some(module),
    }
}

/// The node of the crate root in the module graph.
const ROOT: &str = "crate";

/// The modules the root declares (`mod a;`, `pub mod b;`, `pub(crate) mod c;`).
fn declared_modules(root_code: &str) -> Vec<String> {
    root_code
        .lines()
        .filter_map(|line| {
            let mut rest = line.trim_start();
            if let Some(r) = rest.strip_prefix("pub") {
                rest = r.trim_start();
                if rest.starts_with('(') {
                    rest = rest.split_once(')')?.1.trim_start();
                }
            }
            let name: String = rest
                .strip_prefix("mod ")?
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

/// Where module `m` stands in the graph of `parent`'s children: `parent`'s own node (the
/// code of its own file: `crate` for the root), the node of the child whose subtree holds
/// `m`, or `None` outside `parent`.
fn node_in(parent: &[String], m: &[String]) -> Option<String> {
    if !m.starts_with(parent) {
        return None;
    }
    Some(match m.get(parent.len()) {
        None if parent.is_empty() => ROOT.to_string(),
        None => parent.join("::"),
        Some(_) => m[..=parent.len()].join("::"),
    })
}

/// Every circle among the modules of the crate whose sources are in `src`, at every depth.
/// For each module with child modules (the root, node `crate`, first), a graph of its
/// children: an import edge runs from the child whose subtree names a path to the child where
/// that path's item lies. A name a module imports counts as the module it comes from (a
/// re-export, or a `use` its children reach through `super::`); any other name is its own.
///
/// The root declares and re-exports only, so its own code is a node too, with an edge to each
/// module it declares: a module naming something the root defines makes a circle with it.
/// Below the root a parent's own file is where its children's shared pieces live, and it
/// calls them: a child naming its parent's items is nesting, not a circle, so only circles
/// among the children count there. One circle each parent at most, in module order.
fn module_circles(src: &Path) -> Vec<Vec<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let codes: Vec<(Vec<String>, String)> = files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).expect("read source");
            (module_of(src, f), code_of(&text))
        })
        .collect();
    let modules: BTreeSet<Vec<String>> = codes.iter().map(|(m, _)| m.clone()).collect();
    let children = |parent: &[String]| -> BTreeSet<String> {
        modules
            .iter()
            .filter(|m| m.len() == parent.len() + 1 && m.starts_with(parent))
            .map(|m| m[parent.len()].clone())
            .collect()
    };
    let imports: BTreeMap<Vec<String>, _> = codes
        .iter()
        .map(|(m, c)| (m.clone(), imports_of(c, m, &modules)))
        .collect();
    // Every edge between modules, once: (from, to).
    let mut edges = BTreeSet::new();
    for (module, code) in &codes {
        for path in named_paths(code, module, &children(module)) {
            if let Some(to) = home_of(&path, &modules, &imports, 0) {
                edges.insert((module.clone(), to));
            }
        }
    }
    let parents: BTreeSet<Vec<String>> = modules
        .iter()
        .filter_map(|m| m.split_last().map(|(_, p)| p.to_vec()))
        .collect();
    let mut circles = Vec::new();
    for parent in &parents {
        let own = node_in(parent, parent).expect("a module is in itself");
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        if parent.is_empty() {
            let declared = children(parent).into_iter();
            graph.entry(own.clone()).or_default().extend(declared);
        }
        for (from, to) in &edges {
            if let (Some(a), Some(b)) = (node_in(parent, from), node_in(parent, to)) {
                // Below the root, the parent's own file is no node (see above).
                let nested = !parent.is_empty() && (a == own || b == own);
                if a != b && !nested {
                    graph.entry(a).or_default().insert(b);
                }
            }
        }
        circles.extend(find_cycle(&graph));
    }
    circles
}

/// The first circle [`module_circles`] finds, if any.
fn module_circle(src: &Path) -> Option<Vec<String>> {
    module_circles(src).into_iter().next()
}

fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(pos) = stack.iter().position(|s| s == n) {
            let mut c = stack[pos..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if done.contains(n) {
            return None;
        }
        stack.push(n.to_string());
        for m in graph.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, graph, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_crate_imports_its_own_modules_in_a_circle() {
    let mut circles = Vec::new();
    for (name, src) in crate_sources() {
        if let Some(c) = module_circle(&src) {
            circles.push(format!("{name}: {}", c.join(" -> ")));
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_circle_finder_sees_a_circle_through_a_reexport_and_a_use_tree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\npub use b::Thing;\n").expect("write");
    std::fs::write(src.join("a.rs"), "use crate::Thing;\npub fn f() {}\n").expect("write");
    std::fs::write(
        src.join("b.rs"),
        "use crate::{x::y, a::{f}};\npub struct Thing;\n#[cfg(test)]\nmod tests {\n}\n",
    )
    .expect("write");
    let c = module_circle(src).expect("a circle");
    assert_eq!(c, ["a", "b", "a"]);
    // Without b's import of a, no circle; a test module's imports do not count.
    std::fs::write(
        src.join("b.rs"),
        "pub struct Thing;\n#[cfg(test)]\nmod tests {\n    use crate::a::f;\n}\n\
         #[cfg(test)]\npub(crate) mod fixtures {\n    use crate::a::f;\n}\n",
    )
    .expect("write");
    assert_eq!(module_circle(src), None);
}

#[test]
fn the_circle_finder_sees_a_circle_through_the_root() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path();
    // The root declares a and b and defines Own; b's Thing is only re-exported.
    std::fs::write(
        src.join("lib.rs"),
        "mod a;\npub(crate) mod b;\npub use b::Thing;\npub struct Own;\n",
    )
    .expect("write");
    std::fs::write(src.join("a.rs"), "use crate::Thing;\n").expect("write");
    std::fs::write(src.join("b.rs"), "pub struct Thing;\n").expect("write");
    assert_eq!(
        module_circle(src),
        None,
        "a re-exported name is its module's"
    );
    // Names the root re-exports from another crate or under another name are not its own.
    std::fs::write(
        src.join("lib.rs"),
        "mod a;\npub(crate) mod b;\npub use b::Thing as Alias;\npub use other::Own;\n",
    )
    .expect("write");
    std::fs::write(src.join("a.rs"), "use crate::{Alias, Own};\n").expect("write");
    assert_eq!(module_circle(src), None, "a foreign or renamed re-export");
    std::fs::write(
        src.join("lib.rs"),
        "mod a;\npub(crate) mod b;\npub use b::Thing;\npub struct Own;\n",
    )
    .expect("write");
    // A name the root defines itself: a -> root -> a.
    std::fs::write(src.join("a.rs"), "use crate::{Own, Thing};\n").expect("write");
    assert_eq!(module_circle(src).expect("a circle"), ["a", "crate", "a"]);
    // Through a `crate::` path in code and a `super::` path of a nested module.
    std::fs::write(src.join("a.rs"), "pub fn f() {}\n").expect("write");
    std::fs::create_dir(src.join("b")).expect("mkdir");
    std::fs::rename(src.join("b.rs"), src.join("b/mod.rs")).expect("move");
    std::fs::write(src.join("b/mod.rs"), "mod c;\npub struct Thing;\n").expect("write");
    std::fs::write(
        src.join("b/c.rs"),
        "fn g() -> super::super::Own { todo!() }\n",
    )
    .expect("write");
    assert_eq!(module_circle(src).expect("a circle"), ["b", "crate", "b"]);
    // The root's own paths to a child count from the root; a child naming nothing back: none.
    std::fs::write(src.join("b/c.rs"), "fn g() {}\n").expect("write");
    std::fs::write(
        src.join("lib.rs"),
        "mod a;\nmod b;\nfn h() { crate::a::f() }\n",
    )
    .expect("write");
    assert_eq!(module_circle(src), None);
}

#[test]
fn the_circle_finder_looks_inside_every_module() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path();
    let write = |file: &str, text: &str| {
        let path = src.join(file);
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write("lib.rs", "mod p;\n");
    write(
        "p/mod.rs",
        "mod x;\nmod y;\npub struct Shared;\npub fn go() {\n    x::f();\n}\n",
    );
    // Two children that import each other, below the root: build_cmd's run and dry.
    write(
        "p/x.rs",
        "use super::y::g;\nuse super::Shared;\npub fn f() {\n    g();\n}\n",
    );
    write("p/y.rs", "use super::x::f;\npub fn g() {}\n");
    assert_eq!(module_circles(src), [["p::x", "p::y", "p::x"]]);
    // A child naming its parent's item while the parent calls it: nesting, no circle.
    write("p/y.rs", "pub fn g() {}\n");
    assert_eq!(module_circle(src), None);
    // Both children naming the parent's items, the parent calling both: still nesting.
    write("p/y.rs", "pub fn g(_: &super::Shared) {}\n");
    assert_eq!(module_circle(src), None);
    // A name the parent only imports is its module's: x names y's Thing through the parent.
    write(
        "p/mod.rs",
        "mod x;\nmod y;\nuse y::Thing;\npub struct Shared;\n",
    );
    write("p/x.rs", "pub fn f(_: super::Thing) {}\n");
    write(
        "p/y.rs",
        "pub struct Thing;\nfn g() {\n    super::x::f(Thing);\n}\n",
    );
    assert_eq!(
        module_circle(src).expect("a circle"),
        ["p::x", "p::y", "p::x"]
    );
    // Two levels down, by `crate::` paths; a test module's imports still do not count.
    write("p/mod.rs", "mod q;\n");
    write("p/q/mod.rs", "mod a;\nmod b;\n");
    write("p/q/a.rs", "pub fn f() {\n    crate::p::q::b::g();\n}\n");
    write(
        "p/q/b.rs",
        "pub fn g() {}\n#[cfg(test)]\nmod tests {\n    use crate::p::q::a::f;\n}\n",
    );
    std::fs::remove_file(src.join("p/x.rs")).expect("rm");
    std::fs::remove_file(src.join("p/y.rs")).expect("rm");
    assert_eq!(module_circle(src), None);
    write("p/q/b.rs", "pub fn g() {\n    crate::p::q::a::f();\n}\n");
    assert_eq!(module_circles(src), [["p::q::a", "p::q::b", "p::q::a"]]);
}

/// The functions of a source file longer than `max` lines, from `fn` to its closing brace
/// (rustfmt's layout: the brace at the `fn`'s indentation), test modules left out: `(name,
/// first line, lines)`.
fn long_functions(text: &str, max: usize) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .iter()
        .position(|l| l.starts_with("#[cfg(test)]"))
        .unwrap_or(lines.len());
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut out = Vec::new();
    for (i, line) in lines[..end].iter().enumerate() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(at) = words.iter().position(|w| *w == "fn") else {
            continue;
        };
        let before_ok = words[..at].iter().all(|w| {
            matches!(*w, "pub" | "async" | "const" | "unsafe" | "extern") || w.starts_with("pub(")
        });
        if !before_ok || line.trim_start().starts_with("//") {
            continue;
        }
        let name: String = words
            .get(at + 1)
            .map(|w| {
                w.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect()
            })
            .unwrap_or_default();
        let close = " ".repeat(indent(line)) + "}";
        if let Some(j) = lines[i + 1..end]
            .iter()
            .position(|l| l.starts_with(&close) && indent(l) == indent(line))
        {
            let n = j + 2;
            if n > max {
                out.push((name, i + 1, n));
            }
        }
    }
    out
}

#[test]
fn no_function_runs_over_80_lines() {
    let mut long = Vec::new();
    for (_, src) in crate_sources() {
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).expect("read source");
            for (name, line, n) in long_functions(&text, 80) {
                long.push(format!("{}:{line}: fn {name} is {n} lines", f.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over 80 lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_length_counter_counts_from_fn_to_its_brace() {
    let body = "    x();\n".repeat(78);
    let text = format!("pub async fn ok() {{\n{body}}}\n\nfn long() {{\n{body}    y();\n}}\n");
    assert_eq!(long_functions(&text, 80), [("long".to_string(), 82, 81)]);
}

/// The items of a crate root's code (tests and comments already left out) other than a
/// module declaration (`mod a;`), a re-export (`pub use ...;`, `pub(crate) use ...;`) or an
/// attribute: each as its first line.
fn root_items_beyond_declarations(root_code: &str) -> Vec<String> {
    let chars: Vec<char> = root_code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_whitespace() {
            i += 1;
            continue;
        }
        // An item: up to the `;` or the closing brace at depth 0; an attribute, to its `]`.
        let start = i;
        let attribute = chars[i] == '#';
        let mut depth = 0i32;
        while i < chars.len() {
            let c = chars[i];
            i += 1;
            match c {
                '{' | '[' | '(' => depth += 1,
                '}' | ']' | ')' => {
                    depth -= 1;
                    if depth == 0 && (attribute || c == '}') {
                        break;
                    }
                }
                ';' if depth == 0 => break,
                _ => {}
            }
        }
        if attribute {
            continue;
        }
        // A brace that closes a `use` tree is followed by the `;` that ends the item.
        let mut j = i;
        while j < chars.len() && chars[j].is_whitespace() {
            j += 1;
        }
        if chars.get(j) == Some(&';') {
            i = j + 1;
        }
        let item: String = chars[start..i].iter().collect();
        let mut rest = item.trim_start();
        let public = rest.starts_with("pub");
        if let Some(r) = rest.strip_prefix("pub") {
            rest = r.trim_start();
            if rest.starts_with('(') {
                rest = rest.split_once(')').map_or("", |(_, r)| r.trim_start());
            }
        }
        let declares = rest.starts_with("mod ") && item.trim_end().ends_with(';');
        let reexports = public && rest.starts_with("use ");
        if !declares && !reexports {
            out.push(item.trim().lines().next().unwrap_or("").to_string());
        }
    }
    out
}

#[test]
fn crate_roots_only_declare_modules_and_reexport() {
    let mut found = Vec::new();
    for (_, src) in crate_sources() {
        let lib = src.join("lib.rs");
        let Ok(text) = std::fs::read_to_string(&lib) else {
            continue;
        };
        for item in root_items_beyond_declarations(&code_of(&text)) {
            found.push(format!("{}: {item}", lib.display()));
        }
    }
    assert!(
        found.is_empty(),
        "crate roots hold more than module declarations, re-exports and docs (move these \
         into a module named for what they do):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_root_checker_sees_an_item_beside_the_declarations() {
    let ok = "#![doc = \"x\"]\nmod a;\npub(crate) mod b;\npub use a::{\n    C,\n    D,\n};\n\
              #[cfg(feature = \"x\")]\npub use b::E as F;\n";
    assert!(root_items_beyond_declarations(&code_of(ok)).is_empty());
    let tests = format!("{ok}#[cfg(test)]\nmod tests {{\n    fn t() {{}}\n}}\n");
    assert!(root_items_beyond_declarations(&code_of(&tests)).is_empty());
    let bad = format!(
        "{ok}use std::path::Path;\nconst N: usize = 1;\npub fn f() {{\n    g();\n}}\nmod inline {{\n}}\n"
    );
    assert_eq!(
        root_items_beyond_declarations(&code_of(&bad)),
        [
            "use std::path::Path;",
            "const N: usize = 1;",
            "pub fn f() {",
            "mod inline {"
        ]
    );
}

/// The modules a file declares for tests only (`#[cfg(test)] mod a;`, or `mod b;` inside a
/// `#[cfg(test)]` module), as paths below the file's own module.
fn test_only_modules(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut cfg_test = false;
    let mut depth = 0usize;
    // The inline modules open inside test code: the depth each began at, and its name.
    let mut open: Vec<(usize, String)> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("//") {
            continue;
        }
        if t.starts_with("#[cfg(test)]") {
            cfg_test = true;
            continue;
        }
        let item = ["pub(crate) ", "pub(super) ", "pub "]
            .iter()
            .find_map(|v| t.strip_prefix(v))
            .unwrap_or(t);
        if let Some(rest) = item.strip_prefix("mod ") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if cfg_test || !open.is_empty() {
                if t.ends_with(';') {
                    let mut path: Vec<String> = open.iter().map(|(_, n)| n.clone()).collect();
                    path.push(name);
                    out.push(path);
                } else if t.ends_with('{') {
                    open.push((depth, name));
                }
            }
        }
        if !t.starts_with('#') {
            cfg_test = false;
        }
        depth += line.matches('{').count();
        depth = depth.saturating_sub(line.matches('}').count());
        while open.last().is_some_and(|(d, _)| depth <= *d) {
            open.pop();
        }
    }
    out
}

/// The source files among `files` that only tests compile (the files of modules declared for
/// tests only, and everything below them).
fn test_only_files(files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut dirs = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).expect("read source");
        let stem = f.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let base = if matches!(stem, "lib" | "main" | "mod") {
            f.parent().expect("dir").to_path_buf()
        } else {
            f.with_extension("")
        };
        for m in test_only_modules(&text) {
            dirs.push(m.iter().fold(base.clone(), |p, s| p.join(s)));
        }
    }
    files
        .iter()
        .filter(|f| {
            dirs.iter()
                .any(|d| f.starts_with(d) || f.with_extension("") == *d)
        })
        .cloned()
        .collect()
}

/// Lines of code of a source file: comments, blank lines and test modules left out.
fn lines_of_code(text: &str) -> usize {
    code_of(text)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count()
}

/// Most lines of code a source file may hold: cb-eval's `compare.rs` (paired comparisons,
/// whose size is its own work) 800, every other file 600.
fn line_limit(file: &Path) -> usize {
    if file.ends_with("cb-eval/src/compare.rs") {
        800
    } else {
        600
    }
}

#[test]
fn no_source_file_runs_over_600_lines_of_code() {
    let mut long = Vec::new();
    for (_, src) in crate_sources() {
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let tests_only = test_only_files(&files);
        for f in files.iter().filter(|f| !tests_only.contains(*f)) {
            let n = lines_of_code(&std::fs::read_to_string(f).expect("read source"));
            if n > line_limit(f) {
                long.push(format!("{}: {n} lines of code", f.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "source files over their limit (600 lines of code, comments, blank lines and tests \
         aside; cb-eval's compare.rs 800):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_line_counter_leaves_out_comments_blanks_and_tests() {
    let text = "//! Docs.\n\n/// A function.\nfn f() {\n    // a comment\n    g();\n}\n\n\
                #[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n";
    assert_eq!(lines_of_code(text), 3);
    assert_eq!(
        test_only_modules("#[cfg(test)]\nmod tests {\n    /// Doc.\n    mod sameness;\n}\n#[cfg(test)]\n#[allow(x)]\nmod fixtures;\nmod real;\n"),
        [vec!["tests".to_string(), "sameness".to_string()], vec!["fixtures".to_string()]]
    );
}

/// Every word of the code of a crate's sources, lower-cased (comments and tests left out: a
/// name only a comment says is no name the code has; a header `Host` is the code's `HOST`),
/// with its modules' file names.
fn words_of_crate(src: &Path) -> BTreeSet<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut words = BTreeSet::new();
    for f in &files {
        if let Some(stem) = f.file_stem().and_then(|s| s.to_str()) {
            words.insert(stem.to_lowercase());
        }
        let code = code_of(&std::fs::read_to_string(f).expect("read source"));
        words.extend(
            code.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
                .map(str::to_lowercase),
        );
    }
    words
}

/// The Rust paths a piece of Markdown names in backticks (`Roster`, `Rounds::errors_ahead`,
/// `cb_llm::Roster`), as segments; flags, file names, code with spaces and values are
/// left out.
fn backticked_paths(md: &str) -> Vec<Vec<String>> {
    let identifier = |seg: &str| {
        seg.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && seg.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    md.split('`')
        .skip(1)
        .step_by(2)
        .map(|s| s.split("::").map(str::to_string).collect::<Vec<_>>())
        .filter(|segs| segs.iter().all(|seg| identifier(seg)))
        .collect()
}

/// The sections of ARCHITECTURE.md's `## title` that list entries `- **name**...`: each
/// entry's name and text.
fn entries(section: &str) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let body = text
        .split("\n## ")
        .find(|s| s.starts_with(section))
        .unwrap_or_else(|| panic!("ARCHITECTURE.md has a '## {section}' section"));
    body.split("\n- **")
        .skip(1)
        .filter_map(|e| {
            let (name, rest) = e.split_once("**")?;
            Some((name.to_string(), rest.to_string()))
        })
        .collect()
}

#[test]
fn the_code_map_and_the_glossary_name_what_the_sources_have() {
    let crates: BTreeMap<String, BTreeSet<String>> = crate_sources()
        .into_iter()
        .map(|(name, src)| (name, words_of_crate(&src)))
        .collect();
    let mut wrong = Vec::new();
    // The code map: one entry a crate, and each name it gives is in that crate's code (or,
    // for `other_crate::Name`, in the other crate's).
    let map = entries("Code map");
    let mapped: BTreeSet<String> = map.iter().map(|(n, _)| n.clone()).collect();
    let all: BTreeSet<String> = crates.keys().cloned().collect();
    if mapped != all {
        wrong.push(format!(
            "the code map's entries {mapped:?} are not the workspace's crates {all:?}"
        ));
    }
    let found = |krate: &str, path: &[String]| -> bool {
        let (krate, path) = match crates.get(&path[0].replace('_', "-")) {
            Some(_) if path.len() > 1 => (path[0].replace('_', "-"), &path[1..]),
            _ => (krate.to_string(), path),
        };
        crates
            .get(&krate)
            .is_some_and(|words| path.iter().all(|seg| words.contains(&seg.to_lowercase())))
    };
    for (krate, text) in &map {
        for path in backticked_paths(text) {
            if !found(krate, &path) {
                wrong.push(format!(
                    "code map, {krate}: `{}` is not in its sources",
                    path.join("::")
                ));
            }
        }
    }
    // Every module a crate's root declares (tests aside) is named in the crate's entry.
    for (name, src) in crate_sources() {
        let root = ["lib.rs", "main.rs"]
            .iter()
            .map(|f| src.join(f))
            .find(|f| f.is_file())
            .expect("a crate root");
        let text = std::fs::read_to_string(&root).expect("read root");
        let tests: Vec<Vec<String>> = test_only_modules(&text);
        let named: BTreeSet<String> = map
            .iter()
            .filter(|(n, _)| *n == name)
            .flat_map(|(_, t)| backticked_paths(t))
            .filter_map(|p| p.into_iter().next())
            .collect();
        for m in declared_modules(&code_of(&text)) {
            if !tests.contains(&vec![m.clone()]) && !named.contains(&m) {
                wrong.push(format!("code map, {name}: module `{m}` is not named"));
            }
        }
    }
    // The glossary: each of the domain's words once, each name in the sources of some crate.
    let glossary = entries("Glossary");
    for term in [
        "writer", "reader", "panel", "control", "round", "window", "spool", "roster", "route",
    ] {
        let n = glossary.iter().filter(|(t, _)| t == term).count();
        if n != 1 {
            wrong.push(format!("the glossary defines `{term}` {n} times"));
        }
    }
    for (term, text) in &glossary {
        for path in backticked_paths(text) {
            if !crates.keys().any(|k| found(k, &path)) {
                wrong.push(format!(
                    "glossary, {term}: `{}` is in no crate's sources",
                    path.join("::")
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "ARCHITECTURE.md:\n{}", wrong.join("\n"));
}

/// The bullets of a piece of Markdown, at any depth (`- ` at a line's start, after spaces),
/// each with the words of its text up to the next bullet, blank line or heading.
fn bullets(md: &str) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    let mut open = false;
    for line in md.lines() {
        let trimmed = line.trim_start();
        if let Some(text) = trimmed.strip_prefix("- ") {
            let head: String = text
                .split_whitespace()
                .take(6)
                .collect::<Vec<_>>()
                .join(" ");
            out.push((head, text.split_whitespace().count()));
            open = true;
        } else if trimmed.is_empty() || trimmed.starts_with('#') {
            open = false;
        } else if open {
            if let Some(last) = out.last_mut() {
                last.1 += trimmed.split_whitespace().count();
            }
        }
    }
    out
}

/// A code map entry a newcomer can take in: every entry and sub-entry is at most about 120
/// words (150 allowed); a longer one is split into sub-entries.
#[test]
fn every_code_map_entry_is_short() {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let map = text
        .split("\n## ")
        .find(|s| s.starts_with("Code map"))
        .expect("ARCHITECTURE.md has a '## Code map' section");
    let entries = bullets(map);
    assert!(entries.len() >= 13, "the code map's entries: {entries:?}");
    let long: Vec<String> = entries
        .iter()
        .filter(|(_, n)| *n > 150)
        .map(|(head, n)| format!("{head} ... ({n} words)"))
        .collect();
    assert!(
        long.is_empty(),
        "code map entries over 150 words (split them into sub-entries of about 120):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_bullet_counter_counts_each_entry_and_sub_entry_apart() {
    let md = "intro line\n- **a**: one two\n  three\n  - *sub* four five\n\nafter words\n- b\n";
    assert_eq!(
        bullets(md),
        [
            ("**a**: one two".to_string(), 4),
            ("*sub* four five".to_string(), 3),
            ("b".to_string(), 1)
        ]
    );
}

#[test]
fn names_in_backticks_are_paths_and_nothing_else() {
    assert_eq!(
        backticked_paths("a `Roster`, `Rounds::errors_ahead`, `--reader NAME`, `readers = [...]`, `templates/card.md`, `\"all\"`, `Host:`"),
        [
            vec!["Roster".to_string()],
            vec!["Rounds".to_string(), "errors_ahead".to_string()]
        ]
    );
}

/// The test targets of every workspace crate, as the absolute paths of their source files.
fn test_target_files(pkgs: &[Value]) -> BTreeSet<PathBuf> {
    pkgs.iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .filter(|t| {
            t["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "test"))
        })
        .filter_map(|t| t["src_path"].as_str().map(PathBuf::from))
        .filter_map(|p| p.canonicalize().ok())
        .collect()
}

/// The root `tests/*.rs` files are compiled only through `[[test]]` entries (the CLI crate
/// sets `autotests = false`), so a new file there that nobody registers would never run.
#[test]
fn every_root_test_file_is_a_test_target() {
    let targets = test_target_files(&metadata());
    let dir = root().join("tests");
    let mut unregistered = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("tests/ is readable") {
        let path = entry.expect("a tests/ entry").path();
        if path.extension().is_some_and(|e| e == "rs") {
            let real = path.canonicalize().expect("a test file resolves");
            if !targets.contains(&real) {
                unregistered.push(path.file_name().unwrap().to_string_lossy().into_owned());
            }
        }
    }
    assert!(
        unregistered.is_empty(),
        "tests/ files no test target runs (add a [[test]] entry to crates/conflictbench/Cargo.toml): {unregistered:?}"
    );
}
