//! The recipes and prompt templates a command uses, and `init`, which writes the bundled ones
//! into a folder to start a new domain from them.
//!
//! Each of the two sets is looked for on its own, first match wins:
//! 1. `--recipes DIR` / `--prompts DIR`;
//! 2. `recipes/` / `prompts/` in the current folder, when it is there (the repository root,
//!    or a folder made by `conflictbench init`);
//! 3. the copies compiled into the binary from the repository's folders (`bundled`).
//!
//! The manifest of a build records which was used (`recipe_from`, `prompts_from`) beside the
//! files' hashes.

use anyhow::Context;
use cb_engine::recipe::load_recipes;
use cb_engine::{Files, Recipe};
use clap::Args;
use std::path::{Path, PathBuf};

mod bundled {
    include!(concat!(env!("OUT_DIR"), "/bundled.rs"));
}

/// Where recipes are looked for, for error messages.
pub const LOOKUP: &str = "recipes and prompts are looked for in --recipes DIR / --prompts DIR, \
     else in recipes/ and prompts/ of the current folder, else the ones built into the binary \
     (`conflictbench init DIR` writes those out)";

fn resolve(
    flag: Option<&Path>,
    folder: &str,
    bundled: &'static [(&'static str, &'static str)],
) -> Files {
    match flag {
        Some(d) => Files::Dir(d.to_path_buf()),
        None if Path::new(folder).is_dir() => Files::Dir(PathBuf::from(folder)),
        None => Files::Bundled(bundled),
    }
}

/// The recipe set: `--recipes`, else `./recipes`, else the bundled one.
pub fn recipe_files(flag: Option<&Path>) -> Files {
    resolve(flag, "recipes", bundled::RECIPES)
}

/// The prompt set: `--prompts`, else `./prompts`, else the bundled one. A `--prompts` folder
/// that does not exist is a configuration error.
pub fn prompt_files(flag: Option<&Path>) -> anyhow::Result<Files> {
    not_a_folder(flag, "prompts")?;
    Ok(resolve(flag, "prompts", bundled::PROMPTS))
}

/// A `--recipes` or `--prompts` folder (`what`) that is not one is a configuration error,
/// which says whether the path is missing or a file.
fn not_a_folder(flag: Option<&Path>, what: &str) -> anyhow::Result<()> {
    match flag.filter(|d| !d.is_dir()) {
        None => Ok(()),
        Some(d) => Err(crate::config_error::config_err(format!(
            "the {what} folder {} {}; {LOOKUP}",
            d.display(),
            if d.exists() {
                "is a file, not a folder"
            } else {
                "does not exist"
            }
        ))),
    }
}

/// Every recipe of the set chosen by `flag`; an unreadable folder says where recipes are
/// looked for.
pub fn recipes(flag: Option<&Path>) -> anyhow::Result<(Files, Vec<Recipe>)> {
    let files = recipe_files(flag);
    not_a_folder(flag, "recipes")?;
    let all = load_recipes(&files)?;
    if all.is_empty() {
        return Err(crate::config_error::config_err(format!(
            "no *.toml recipe in {}; {LOOKUP}",
            files.origin()
        )));
    }
    Ok((files, all))
}

/// `conflictbench init DIR`.
#[derive(Args, Debug)]
pub struct InitArgs {
    /// Folder to write `recipes/` and `prompts/` into (created if needed).
    pub dir: PathBuf,
    /// Overwrite files that exist with other content.
    #[arg(long)]
    pub force: bool,
}

/// Writes the bundled recipes and prompts under `DIR/recipes/` and `DIR/prompts/`. Files
/// already there with the same content are left as they are; with other content they stop
/// the command before anything is written, unless `--force`.
pub fn init(args: &InitArgs) -> anyhow::Result<String> {
    let sets = [("recipes", bundled::RECIPES), ("prompts", bundled::PROMPTS)];
    let mut todo = Vec::new();
    let mut differ = Vec::new();
    for (folder, files) in sets {
        for (name, text) in files {
            let path = args.dir.join(folder).join(name);
            match std::fs::read(&path) {
                Ok(bytes) if bytes == text.as_bytes() => {}
                Ok(_) => {
                    differ.push(path.display().to_string());
                    todo.push((path, *text));
                }
                Err(_) => todo.push((path, *text)),
            }
        }
    }
    if !differ.is_empty() && !args.force {
        return Err(crate::config_error::config_err(format!(
            "these files exist with other content (nothing was written; --force overwrites them): {}",
            differ.join(", ")
        )));
    }
    for (path, text) in &todo {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(format!(
        "{} file(s) written under {dir}/recipes and {dir}/prompts ({} recipes, {} prompts bundled). \
         Run conflictbench from {dir} to use them, or pass --recipes {dir}/recipes --prompts {dir}/prompts.",
        todo.len(),
        bundled::RECIPES.len(),
        bundled::PROMPTS.len(),
        dir = args.dir.display()
    ))
}
