//! The binary from any folder: bundled recipes and prompts (and `init`, which writes them
//! out), errors that name the way out, and colour only on a terminal.

mod common;

use common::{repo, text};
use std::path::Path;
use std::process::{Command, Output};

fn cb(cwd: &Path, args: &[&str]) -> Output {
    cb_env(cwd, args, &[])
}

fn cb_env(cwd: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_conflictbench"));
    c.args(args)
        .current_dir(cwd)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("RUST_LOG")
        .env_remove("CONFLICTBENCH_LOG")
        .env_remove("NO_COLOR");
    for (k, v) in envs {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn raw() -> String {
    repo().join("raw").display().to_string()
}

/// Every file under `dir` (relative path -> bytes), the per-run log and the cache left out.
fn files(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    common::snapshot(dir)
}

#[test]
fn outside_the_repository_the_bundled_recipes_and_prompts_build_the_same_files() {
    let d = tempfile::tempdir().unwrap();
    let o = cb(d.path(), &["recipes"]);
    assert!(o.status.success(), "{}", text(&o));
    let listing = String::from_utf8_lossy(&o.stdout);
    for r in [
        "cose",
        "ecare",
        "squad",
        "eventkg",
        "uj",
        "(recipes: bundled)",
    ] {
        assert!(listing.contains(r), "{r} missing from:\n{listing}");
    }

    let bundled = d.path().join("bundled");
    let o = cb(
        d.path(),
        &[
            "build",
            "kre",
            "--domains",
            "cose,ecare",
            "--raw",
            &raw(),
            "--out",
            "bundled",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let folders = d.path().join("folders");
    let o = cb(
        d.path(),
        &[
            "build",
            "kre",
            "--domains",
            "cose,ecare",
            "--raw",
            &raw(),
            "--out",
            "folders",
            "--recipes",
            &repo().join("recipes").display().to_string(),
            "--prompts",
            &repo().join("prompts").display().to_string(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));

    let (a, b) = (files(&bundled), files(&folders));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (name, bytes) in &a {
        if name.ends_with("manifest.json") {
            let mut ma: serde_json::Value = serde_json::from_slice(bytes).unwrap();
            let mut mb: serde_json::Value = serde_json::from_slice(&b[name]).unwrap();
            assert_eq!(ma["recipe_from"], "bundled");
            assert_eq!(ma["prompts_from"], "bundled");
            assert_eq!(
                mb["recipe_from"].as_str().unwrap(),
                repo().join("recipes").display().to_string()
            );
            assert!(!ma["prompts"].as_object().unwrap().is_empty());
            for m in [&mut ma, &mut mb] {
                let o = m.as_object_mut().unwrap();
                o.remove("recipe_from");
                o.remove("prompts_from");
            }
            assert_eq!(ma, mb, "{name}: same recipe and prompt hashes, same counts");
        } else {
            assert!(
                *bytes == b[name],
                "{name} differs between bundled and folders"
            );
        }
    }
}

#[test]
fn init_writes_the_bundled_set_and_a_build_there_uses_it() {
    let d = tempfile::tempdir().unwrap();
    let o = cb(d.path(), &["init", "mybench"]);
    assert!(o.status.success(), "{}", text(&o));
    let mine = d.path().join("mybench");
    for folder in ["recipes", "prompts"] {
        let theirs = common::snapshot(&repo().join(folder));
        let ours = common::snapshot(&mine.join(folder));
        assert_eq!(ours, theirs, "{folder}: init wrote the repository's files");
    }
    // Again: nothing differs, nothing to do. A changed file stops it unless --force.
    assert!(cb(d.path(), &["init", "mybench"]).status.success());
    let edited = mine.join("recipes/kre-cose.toml");
    std::fs::write(&edited, "# mine\n").unwrap();
    let o = cb(d.path(), &["init", "mybench"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("kre-cose.toml") && text(&o).contains("--force"));
    assert_eq!(std::fs::read_to_string(&edited).unwrap(), "# mine\n");
    assert!(cb(d.path(), &["init", "mybench", "--force"])
        .status
        .success());
    assert_ne!(std::fs::read_to_string(&edited).unwrap(), "# mine\n");

    // Inside the folder, its recipes/ and prompts/ are used (and recorded).
    let o = cb(
        &mine,
        &[
            "build",
            "kre",
            "--domains",
            "ecare",
            "--raw",
            &raw(),
            "--limit",
            "5",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let m = common::read_json(&mine.join("generated/kre/ecare/manifest.json"));
    assert_eq!(m["recipe_from"], "recipes");
    assert_eq!(m["prompts_from"], "prompts");
}

#[test]
fn errors_name_the_way_out() {
    let d = tempfile::tempdir().unwrap();
    let cwd = d.path();

    let o = cb(cwd, &["build", "rcall"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("kre, recall, all"),
        "the choices are listed: {}",
        text(&o)
    );

    let o = cb(cwd, &["recipes", "--recipes", "nowhere"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    for part in [
        "nowhere",
        "--recipes DIR",
        "recipes/",
        "built into the binary",
    ] {
        assert!(text(&o).contains(part), "{part}: {}", text(&o));
    }
    let o = cb(
        cwd,
        &["build", "kre", "--prompts", "nowhere", "--raw", &raw()],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("prompts folder nowhere"), "{}", text(&o));

    // A base URL that is not an absolute http(s) URL: exit 2 before any work.
    for bad in ["notaurl", "127.0.0.1:8000/v1", "ftp://example.org/v1"] {
        let o = cb(
            cwd,
            &[
                "build",
                "kre",
                "--domains",
                "cose",
                "--raw",
                &raw(),
                "--out",
                "out",
                "--base-url",
                bad,
                "--model",
                "m",
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o));
        assert!(text(&o).contains("--base-url"), "{bad}: {}", text(&o));
        assert!(!cwd.join("out").exists(), "{bad}: nothing written");
    }

    // A public host without a key: exit 2 naming the variable. The check runs before any
    // call, so nothing here reaches the network; a dry run sends nothing and needs no key.
    let public = [
        "build",
        "kre",
        "--domains",
        "cose",
        "--raw",
        &raw(),
        "--out",
        "out",
        "--base-url",
        "https://api.openai.com/v1",
        "--model",
        "gpt-4o-mini",
        "--max-retries",
        "0",
        "--timeout-s",
        "1",
    ];
    let o = cb(cwd, &public);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("OPENAI_API_KEY"), "{}", text(&o));
    assert!(!cwd.join("out").exists());
    let o = cb_env(cwd, &public, &[("OPENAI_API_KEY", "  ")]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "a blank key is no key: {}",
        text(&o)
    );
    let mut dry = public.to_vec();
    dry.push("--dry-run");
    let o = cb(cwd, &dry);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_local_server_needs_no_key() {
    let d = tempfile::tempdir().unwrap();
    let mock = cb_mock::MockServer::start(common::model()).await;
    let (base, raw, out) = (mock.base_url(), raw(), d.path().display().to_string());
    let mut args = common::openai_args("cose", &base, &raw, &out);
    args.extend(["--limit", "3"]);
    let o = common::build(&args, &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    assert!(!mock.journal().is_empty(), "the local server was called");

    // In a pool every endpoint is checked, not only the first: a public one without a key
    // stops the build before the local one is called.
    mock.clear_journal();
    let pool = common::pool_args("cose", &raw, &out, &[&base, "https://api.openai.com/v1"]);
    let o = common::build(&pool, &[]).await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("api.openai.com") && text(&o).contains("OPENAI_API_KEY"),
        "{}",
        text(&o)
    );
    assert!(mock.journal().is_empty(), "nothing was sent");
}

/// Runs `args` under a pseudo-terminal (util-linux `script`), so that stderr is a terminal.
fn under_tty(cwd: &Path, args: &[&str], no_color: bool) -> Option<String> {
    let script = ["/usr/bin/script", "/bin/script"]
        .into_iter()
        .find(|p| Path::new(p).is_file())?;
    let cmd = std::iter::once(env!("CARGO_BIN_EXE_conflictbench"))
        .chain(args.iter().copied())
        .map(|a| format!("'{a}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let mut c = Command::new(script);
    c.args(["-qec", &cmd, "/dev/null"])
        .current_dir(cwd)
        .env_remove("NO_COLOR")
        .env_remove("RUST_LOG")
        .env("TERM", "xterm");
    if no_color {
        c.env("NO_COLOR", "1");
    }
    let o = c.output().unwrap();
    Some(String::from_utf8_lossy(&o.stdout).into_owned())
}

#[test]
fn colour_only_on_a_terminal_and_never_with_no_color() {
    let Some(data) = common::shared_data() else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let released = data.join("kre/ecare.json").display().to_string();
    let args = ["--log", "info", "audit", released.as_str()];
    let esc = "\u{1b}[";

    let o = cb(d.path(), &args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{}", text(&o));
    assert!(err.contains("INFO"), "a log line is written: {err}");
    assert!(
        !err.contains(esc),
        "no colour codes when stderr is not a terminal: {err:?}"
    );

    let Some(tty) = under_tty(d.path(), &args, false) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but util-linux `script` is missing"
        );
        return;
    };
    assert!(tty.contains("INFO"), "{tty}");
    assert!(tty.contains(esc), "colour on a terminal: {tty:?}");
    let plain = under_tty(d.path(), &args, true).unwrap();
    assert!(plain.contains("INFO"), "{plain}");
    assert!(!plain.contains(esc), "NO_COLOR: no colour codes: {plain:?}");
}

/// `build kre --domains squad` on `raw` with the recipes of `recipes`, into `out`.
fn squad_build<'a>(raw: &'a str, recipes: &'a Path, out: &'a Path) -> Vec<&'a str> {
    vec![
        "build",
        "kre",
        "--domains",
        "squad",
        "--raw",
        raw,
        "--recipes",
        recipes.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]
}

/// The bundled recipes copied to a fresh folder, `file` edited by `edit`.
fn recipes_with(file: &str, edit: impl Fn(String) -> String) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(repo().join("recipes")).unwrap() {
        let p = e.unwrap().path();
        let mut text = std::fs::read_to_string(&p).unwrap();
        if p.file_name().unwrap() == file {
            text = edit(text);
        }
        std::fs::write(dir.path().join(p.file_name().unwrap()), text).unwrap();
    }
    dir
}

#[test]
fn a_misspelt_or_mistyped_step_parameter_is_refused_before_any_work() {
    let cwd = tempfile::tempdir().unwrap();
    let out = cwd.path().join("out");
    let raw = raw();
    for (edit, key, near) in [
        ("max_tokens = 120", "max_tokns = 120", Some("max_tokens")),
        (
            "retries_on_invalid = 3",
            "retries_on_invalid_ = 3",
            Some("retries_on_invalid"),
        ),
        ("min_similarity = 0.6", "min_similarity = \"0.6\"", None),
    ] {
        let recipes = recipes_with("kre-squad.toml", |t| t.replacen(edit, key, 1));
        let text_of = std::fs::read_to_string(recipes.path().join("kre-squad.toml")).unwrap();
        let line = 1 + text_of.lines().position(|l| l == key).unwrap();
        for dry in [false, true] {
            let mut args = squad_build(&raw, recipes.path(), &out);
            let base = "http://127.0.0.1:9/v1";
            if dry {
                args.extend(["--dry-run", "--base-url", base, "--model", "m"]);
            }
            let o = cb(cwd.path(), &args);
            assert_eq!(o.status.code(), Some(2), "{key}: {}", text(&o));
            let e = text(&o);
            let key_name = key.split(' ').next().unwrap();
            assert!(e.contains(&format!("kre-squad.toml:{line}:")), "{e}");
            assert!(e.contains(&format!("`{key_name}`")), "{e}");
            match near {
                Some(n) => assert!(e.contains(&format!("did you mean `{n}`?")), "{e}"),
                None => assert!(
                    e.contains("must be a number from 0 to 1, not string"),
                    "{e}"
                ),
            }
        }
        assert!(!out.exists(), "nothing was written");
    }
    // `recipes --explain` lists a kind's parameters.
    let o = cb(cwd.path(), &["recipes", "--explain", "negative_context"]);
    assert!(o.status.success(), "{}", text(&o));
    for key in ["min_similarity", "max_tokens", "on_invalid", "prompt"] {
        assert!(text(&o).contains(key), "{}", text(&o));
    }
    // ... each number with its range (issue 50).
    for range in [
        "Range: a number from 0 to 1.",
        "Range: a whole number from 1 to 1000000.",
        "Range: a number from 0 to 2.",
    ] {
        assert!(text(&o).contains(range), "{}", text(&o));
    }
    let o = cb(cwd.path(), &["recipes", "--explain", "negative_contxt"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("known: pick_negative"), "{}", text(&o));
}

#[test]
fn a_recipe_whose_steps_are_swapped_is_refused_at_load_naming_the_step_and_the_field() {
    let cwd = tempfile::tempdir().unwrap();
    let out = cwd.path().join("out");
    // kre-squad.toml with its two model steps in the other order: the rewrite reads the
    // negative answer that only the distractors step writes.
    let recipes = recipes_with("kre-squad.toml", |t| {
        let first = t.find("[[steps]]").unwrap();
        let second = first + 9 + t[first + 9..].find("[[steps]]").unwrap();
        let third = second + 9 + t[second + 9..].find("\n# The papers'").unwrap();
        format!(
            "{}{}\n{}{}",
            &t[..first],
            t[second..third].trim_end(),
            &t[first..second],
            &t[third..]
        )
    });
    let text_of = std::fs::read_to_string(recipes.path().join("kre-squad.toml")).unwrap();
    let line = 1 + text_of.lines().position(|l| l == "[[steps]]").unwrap();
    let raw = raw();
    let o = cb(cwd.path(), &squad_build(&raw, recipes.path(), &out));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let e = text(&o);
    assert!(
        e.contains(&format!("kre-squad.toml:{line}: step 1 (negative_context)")),
        "{e}"
    );
    assert!(e.contains("reads the field `negative_answer`"), "{e}");
    assert!(!out.exists(), "nothing was written");
}

/// The sentences that tell the user what to check name the setting at fault: a reader
/// nobody listens for names `--reader-base-url` (the build's own `--base-url` works), and a
/// `--batch-dir` naming a file says so with the path, not the OS's bare "File exists".
#[tokio::test(flavor = "multi_thread")]
async fn messages_name_the_setting_at_fault() {
    let d = tempfile::tempdir().unwrap();
    let mock = cb_mock::MockServer::start(common::model()).await;
    let (base, raw) = (mock.base_url(), raw());
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}/v1", l.local_addr().unwrap().port())
    };
    let out = d.path().join("out").display().to_string();
    let mut args = common::reading_args("kre", "cose", &base, &raw, &out);
    args.extend(["--limit", "2", "--max-retries", "0"]);
    args.extend(["--reader-base-url", &closed, "--reader-model", "r"]);
    let o = common::build(&args, &[]).await;
    let said = text(&o);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!("the endpoint {closed} cannot be reached"))
            && said.contains("check that the server is running and --reader-base-url"),
        "{said}"
    );
    assert!(!said.contains("and --base-url"), "{said}");

    let file = d.path().join("batches.txt");
    std::fs::write(&file, "not a folder").unwrap();
    let o = cb(
        d.path(),
        &[
            "build",
            "kre",
            "--domains",
            "cose",
            "--raw",
            &raw,
            "--out",
            "out2",
            "--model",
            "m",
            "--batch-dir",
            file.to_str().unwrap(),
        ],
    );
    let said = text(&o);
    assert_eq!(o.status.code(), Some(2), "{said}");
    assert!(
        said.contains(&format!(
            "--batch-dir {} names a file, not a folder",
            file.display()
        )),
        "{said}"
    );
    assert!(!said.contains("os error"), "{said}");
    assert!(!d.path().join("out2").exists(), "nothing written");
}
