//! The files of a source folder that a recipe's input patterns match.

use crate::ReadError;
use std::path::{Path, PathBuf};

/// Files of `dir` matching the recipe's glob patterns: the FIRST pattern that matches at
/// least one file wins; its matches are returned sorted. No match -> Config error naming dir
/// and patterns. A relative pattern (with or without `/`) is taken relative to `dir`; an
/// absolute one as is. `*` does not cross `/`; directories never match.
pub fn resolve_inputs(dir: &Path, patterns: &[String]) -> Result<Vec<PathBuf>, ReadError> {
    if patterns.is_empty() {
        return Err(ReadError::Config(format!(
            "no input pattern given for {}",
            dir.display()
        )));
    }
    let options = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: false,
    };
    for pattern in patterns {
        let full = if Path::new(pattern).is_absolute() {
            pattern.clone()
        } else {
            let escaped = glob::Pattern::escape(&dir.to_string_lossy());
            Path::new(&escaped)
                .join(pattern)
                .to_string_lossy()
                .into_owned()
        };
        let paths = glob::glob_with(&full, options)
            .map_err(|e| ReadError::Config(format!("bad input pattern `{pattern}`: {}", e.msg)))?;
        let mut found: Vec<PathBuf> = paths
            .filter_map(Result::ok)
            .filter(|p| p.is_file())
            .collect();
        if !found.is_empty() {
            found.sort();
            found.dedup();
            return Ok(found);
        }
    }
    let quoted: Vec<String> = patterns.iter().map(|p| format!("`{p}`")).collect();
    let missing = if dir.is_dir() {
        ""
    } else {
        " (the directory does not exist)"
    };
    Err(ReadError::Config(format!(
        "no file in {}{missing} matches any of the input patterns {}",
        dir.display(),
        quoted.join(", ")
    )))
}
