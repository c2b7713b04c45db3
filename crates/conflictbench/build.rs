//! Compiles the repository's `recipes/` and `prompts/` into the binary: writes
//! `OUT_DIR/bundled.rs` with two sorted tables of `(relative path, include_str!(file))`.
//! Hidden files (a leading `.`) are left out.
#![allow(clippy::print_stdout)] // cargo reads a build script's instructions from its stdout

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn files(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    for e in entries {
        let p = e.expect("directory entry").path();
        if p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        {
            continue;
        }
        if p.is_dir() {
            files(root, &p, out);
        } else if p.is_file() {
            let rel = p.strip_prefix(root).expect("under the root");
            let name: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            out.push((name.join("/"), p.canonicalize().expect("canonical path")));
        }
    }
}

fn table(repo: &Path, folder: &str) -> String {
    let root = repo.join(folder);
    println!("cargo:rerun-if-changed={}", root.display());
    let mut list = Vec::new();
    files(&root, &root, &mut list);
    list.sort();
    let mut s = String::from("&[\n");
    for (name, path) in list {
        let _ = writeln!(
            s,
            "    ({name:?}, include_str!({:?})),",
            path.display().to_string()
        );
    }
    s.push(']');
    s
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let repo = manifest.join("../..");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let code = format!(
        "/// The repository's `recipes/` at build time.\npub static RECIPES: &[(&str, &str)] = {};\n\
         /// The repository's `prompts/` at build time.\npub static PROMPTS: &[(&str, &str)] = {};\n",
        table(&repo, "recipes"),
        table(&repo, "prompts")
    );
    std::fs::write(out.join("bundled.rs"), code).expect("write bundled.rs");
}
