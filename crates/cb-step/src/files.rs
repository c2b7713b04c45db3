//! Where recipes and prompt templates are read from: a folder on disk, or the copies compiled
//! into the binary (the repository's `recipes/` and `prompts/` at build time).

use std::path::PathBuf;

/// A set of text files, addressed by their path relative to the set's root with `/`
/// separators (`kre-cose.toml`, `kre/negative_explanation.md`).
#[derive(Debug, Clone)]
pub enum Files {
    /// A folder on disk.
    Dir(PathBuf),
    /// Files compiled into the binary: `(relative path, text)`, sorted by path.
    Bundled(&'static [(&'static str, &'static str)]),
}

impl Files {
    /// What the manifest records as the origin: `bundled`, or the folder as given.
    pub fn origin(&self) -> String {
        match self {
            Self::Dir(d) => d.display().to_string(),
            Self::Bundled(_) => "bundled".to_owned(),
        }
    }

    /// Where `name` is, for messages: `DIR/name` or `bundled:name`.
    pub fn locate(&self, name: &str) -> String {
        match self {
            Self::Dir(d) => d.join(name).display().to_string(),
            Self::Bundled(_) => format!("bundled:{name}"),
        }
    }

    /// The text of `name`; the error says where it was looked for.
    pub fn read(&self, name: &str) -> Result<String, String> {
        match self {
            Self::Dir(d) => {
                let p = d.join(name);
                std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))
            }
            Self::Bundled(files) => files
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, t)| (*t).to_owned())
                .ok_or_else(|| {
                    format!("bundled:{name}: no such file among the bundled ones (`conflictbench init DIR` writes them out)")
                }),
        }
    }

    /// The names of the files directly at the root whose name ends with `.{ext}`, sorted.
    pub fn top_level(&self, ext: &str) -> Result<Vec<String>, String> {
        let suffix = format!(".{ext}");
        let mut names: Vec<String> = match self {
            Self::Dir(d) => std::fs::read_dir(d)
                .map_err(|e| format!("{}: {e}", d.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .filter_map(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
                .filter(|n| n.ends_with(&suffix))
                .collect(),
            Self::Bundled(files) => files
                .iter()
                .map(|(n, _)| (*n).to_owned())
                .filter(|n| !n.contains('/') && n.ends_with(&suffix))
                .collect(),
        };
        names.sort();
        Ok(names)
    }
}

/// Writes `bytes` to `path` atomically: a temporary file `.NAME.tmp-PID` beside it, synced,
/// then renamed over it, so a reader never sees half a file (the folder is created first).
pub fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    static SET: &[(&str, &str)] = &[("a.toml", "x = 1"), ("kre/p.md", "hi"), ("z.txt", "")];

    #[test]
    fn bundled_files_are_read_and_listed_like_a_folder() {
        let b = Files::Bundled(SET);
        assert_eq!(b.read("kre/p.md").unwrap(), "hi");
        assert!(b.read("kre/q.md").unwrap_err().contains("bundled:kre/q.md"));
        assert_eq!(b.top_level("toml").unwrap(), vec!["a.toml"]);
        assert_eq!(b.origin(), "bundled");

        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.toml"), "x = 1").unwrap();
        std::fs::create_dir(d.path().join("kre")).unwrap();
        std::fs::write(d.path().join("kre/p.md"), "hi").unwrap();
        let f = Files::Dir(d.path().to_path_buf());
        assert_eq!(f.read("kre/p.md").unwrap(), "hi");
        assert_eq!(f.top_level("toml").unwrap(), vec!["a.toml"]);
        assert!(Files::Dir(d.path().join("missing"))
            .top_level("toml")
            .is_err());
    }
}
