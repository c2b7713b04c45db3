//! `conflictbench eval conflictbank`: a model under test asked every question of a
//! ConflictBank-style build (`conflictbank.jsonl`, rows of [`CbRow`]) in ConflictBank's
//! settings ([`SETTINGS`]: no evidence, the correct one, each conflict alone, and the correct
//! one with each conflict in both orders), through the same LLM layer, window and flags as
//! `eval kre` and `eval recall`.
//!
//! Each prompt is the one `export conflictbank` writes (`conflictbank_export::messages_of`);
//! the letter is read from the reply ([`extract_reply`]: the options' texts count too, an
//! answer with none is `null`). The answers go to prediction files in the layout
//! ConflictBank's `inference.py` writes, `OUT/<domain>/seed-<seed>/<setting>.json`, and the
//! figures are [`evaluate_predictions`] of each such folder (the one formula, and its filter:
//! only the questions right with no evidence and with the correct evidence count), so
//! `eval conflictbank-predictions` on a folder gives the same figures. `default` and
//! `correct` always run: the filter needs them.
//!
//! Each request asks for the top `--logprobs N` log-probabilities of the answer's first
//! token (20 unless told; 0 asks for none). Where the endpoint sends them, the line's `prob`
//! is the four letters' probabilities as ConflictBank's `inference.py` makes them
//! ([`option_probabilities`]) and the figures include the average entropy; where it sends
//! none (an endpoint that ignores the request), the line has no `prob` and the entropy of a
//! setting whose scored questions lack one is "not measured", with the reason in
//! `results.json` ([`entropy_note`]), never a number made up. The letter itself is still the
//! one the answer's text gives.
//!
//! Memory: the jobs in the window and, per row, where it lies (the rows are read again for
//! each seed and setting, one pass writing one file); the prediction lines wait in a
//! temporary folder (the system's) until [`write_all`] moves them.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use cb_audit::{FileKind, Payload, Row};
use cb_llm::{BackendKind, Llm, Progress};
use cb_model::conflictbank::CbRow;
use serde::Serialize;
use serde_json::json;

use crate::conflictbank::{evaluate_predictions, CbResults, SETTINGS};
use crate::conflictbank_export::{messages_of, setting_evidence, user_part};
use crate::conflictbank_prob::option_probabilities;
use crate::options::settings;
use crate::report::{write_file, DataIdentity, Identity};
use crate::run::{extract_reply, run_stream, Job, Reply};
use crate::source::{load, Source};
use crate::templates::Templates;
use crate::{EvalError, EvalOptions};

/// The prediction lines written, by what they hold.
#[derive(Debug, Clone, Copy, Default)]
pub struct LineCounts {
    pub lines: usize,
    /// Lines with `prob`.
    pub with_prob: usize,
    /// Lines of calls that failed for good (`error`), and those refused with HTTP 400.
    pub failed: usize,
    pub refused: usize,
}

/// What the results say of the average entropy, given the top log-probabilities asked for
/// (`None`: not asked) and the lines written.
pub fn entropy_note(asked: Option<u8>, counts: LineCounts) -> String {
    let LineCounts {
        lines,
        with_prob,
        failed,
        refused,
    } = counts;
    let failures = if failed > 0 {
        format!(" ({failed} of {lines} calls failed and have no answer)")
    } else {
        String::new()
    };
    match asked {
        None => "not measured: --logprobs 0 asks the model for no log-probabilities, so no prediction line has `prob`".into(),
        Some(_) if with_prob == 0 && refused > 0 => format!(
            "not measured: {refused} of {lines} requests were refused with HTTP 400 and no line has `prob`; an endpoint that does not take `logprobs` refuses them: run again with --logprobs 0"
        ),
        Some(n) if with_prob == lines && lines > 0 => format!(
            "measured: every prediction line's `prob` comes from the top {n} log-probabilities the endpoint returned for the answer's first token, as ConflictBank's inference.py makes it"
        ),
        Some(n) if with_prob == 0 => format!(
            "not measured: the endpoint returned no log-probabilities of A to D among the top {n} for any answer (it ignores `logprobs`, or the answers were not letters), so no prediction line has `prob`{failures}"
        ),
        Some(n) => format!(
            "partly measured: {with_prob} of {lines} prediction lines have `prob` (for the others the endpoint returned no log-probabilities of A to D among the top {n}){failures}; a setting whose scored questions lack one has no average entropy"
        ),
    }
}

/// The figures of one domain and seed: those of its prediction folder.
#[derive(Debug, Clone, Serialize)]
pub struct CbRun {
    pub domain: String,
    pub seed: u64,
    /// The prediction folder, relative to the output folder.
    pub folder: String,
    /// `None` when no figure exists (see `note`).
    pub figures: Option<CbResults>,
    pub note: Option<String>,
}

/// Everything a ConflictBank evaluation found (`results.json`).
#[derive(Debug, Serialize)]
pub struct CbEvaluation {
    pub benchmark: &'static str,
    pub backend: String,
    pub endpoint: String,
    pub model: String,
    pub seeds: Vec<u64>,
    pub settings: Vec<String>,
    /// The prompt template: name and SHA-256.
    pub prompts: Vec<(String, String)>,
    pub data: DataIdentity,
    /// The top log-probabilities asked for (`None`: not asked).
    pub logprobs: Option<u8>,
    pub entropy: String,
    pub runs: Vec<CbRun>,
    /// The prediction files made, until written out; `None` in a dry run.
    #[serde(skip)]
    staged: Option<tempfile::TempDir>,
}

/// What a job asked, for its prediction line.
struct Meta {
    pass: usize,
    id: String,
    prompt: String,
    labels: [String; 3],
    options: Vec<String>,
}

/// One pass over a file's rows: a seed and a setting.
#[derive(Clone, Copy)]
struct Pass {
    file: usize,
    seed: u64,
    setting: &'static str,
}

fn cb(row: &Row) -> &CbRow {
    match &row.payload {
        Payload::Cb(c) => c,
        _ => unreachable!("loaded as ConflictBank-style rows"),
    }
}

/// The domain of a rows file: its folder's name.
fn domain_of(path: &Path, _: &Row) -> String {
    path.parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "conflictbank".to_string())
}

/// The settings run: those asked for (all by default), with `default` and `correct` always.
fn wanted(asked: &[String]) -> Result<Vec<&'static str>, EvalError> {
    let chosen = settings(asked, SETTINGS)?;
    Ok(SETTINGS
        .iter()
        .copied()
        .filter(|s| ["default", "correct"].contains(s) || chosen.iter().any(|c| c == s))
        .collect())
}

/// A data error unless `row` can be asked in every setting of `run`.
fn check(f: &Source, row: &Row, run: &[&str]) -> Result<(), EvalError> {
    let r = cb(row);
    let mut problems = r.problems();
    for s in run {
        for cause in setting_evidence(s)
            .unwrap_or_default()
            .into_iter()
            .flatten()
        {
            let missing = format!("no {} evidence", cause.name());
            if r.conflict(cause).is_none() && !problems.contains(&missing) {
                problems.push(missing);
            }
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(EvalError::Config(format!(
        "{} row {}: {}",
        f.path.display(),
        r.id,
        problems.join("; ")
    )))
}

/// The files to evaluate, checked, and the data's identity; two files of one domain are
/// refused (their prediction folders would be one).
fn load_rows(opts: &EvalOptions, run: &[&str]) -> Result<(Vec<Source>, DataIdentity), EvalError> {
    let mut identity = Identity::default();
    let files = load(
        opts,
        |k| k == FileKind::ConflictBank,
        domain_of,
        &mut |src, row| {
            identity.add(&src.domain, row);
            check(src, row, run)
        },
    )?;
    for (i, f) in files.iter().enumerate() {
        if let Some(g) = files[..i].iter().find(|g| g.domain == f.domain) {
            return Err(EvalError::Config(format!(
                "{} and {} are both domain {:?}: their predictions would go to one folder; evaluate them apart (--data, --domains)",
                g.path.display(),
                f.path.display(),
                f.domain
            )));
        }
    }
    Ok((files, identity.finish()))
}

/// The folder of a domain and seed, relative to the output folder.
fn folder(domain: &str, seed: u64) -> PathBuf {
    Path::new(domain).join(format!("seed-{seed}"))
}

/// The job that asks `row` in pass `p` (number `pass`).
fn job(
    (templates, prompt, logprobs): (&Templates, &cb_step::Prompt, Option<u8>),
    f: &Source,
    (pass, p): (usize, Pass),
    row: &Row,
) -> Result<(Job, Meta), EvalError> {
    let r = cb(row);
    let evidence = setting_evidence(p.setting).unwrap_or_default();
    let mut messages = messages_of(r, &evidence, templates, prompt)?;
    let text = user_part(&messages);
    if let Some(last) = messages.last_mut() {
        last.content = text.clone();
    }
    let job = Job {
        label: format!("{}/{}/{}/{}", f.domain, p.setting, p.seed, r.id),
        messages,
        template: format!("eval/{}", prompt.name),
        template_hash: prompt.hash.clone(),
        seed: p.seed,
        top_logprobs: logprobs,
    };
    let meta = Meta {
        pass,
        id: r.id.clone(),
        prompt: text,
        labels: [
            r.qa.true_label.clone(),
            r.qa.replaced_label.clone(),
            r.qa.uncertain_label.clone(),
        ],
        options: r.qa.options.to_vec(),
    };
    Ok((job, meta))
}

/// The prediction lines of the passes, each pass one file under `staged`, opened when its
/// first line comes (the lines come in job order, pass after pass).
struct Lines<'a> {
    staged: &'a Path,
    passes: &'a [Pass],
    files: &'a [Source],
    open: Option<(usize, PathBuf, BufWriter<File>)>,
    counts: LineCounts,
}

impl Lines<'_> {
    fn write(&mut self, m: Meta, r: &Reply) -> Result<(), EvalError> {
        if self.open.as_ref().is_none_or(|(p, _, _)| *p != m.pass) {
            self.close()?;
            let p = self.passes[m.pass];
            let dir = self.staged.join(folder(&self.files[p.file].domain, p.seed));
            let path = dir.join(format!("{}.json", p.setting));
            let err = |source| EvalError::Write {
                path: path.clone(),
                source,
            };
            std::fs::create_dir_all(&dir).map_err(err)?;
            let w = BufWriter::new(File::create(&path).map_err(err)?);
            self.open = Some((m.pass, path, w));
        }
        let x = extract_reply(r, &m.options);
        let letter = x.choice.map(cb_model::letter);
        let mut line = json!({
            "id": m.id,
            "prompt": m.prompt,
            "true_label": m.labels[0],
            "replaced_label": m.labels[1],
            "uncertain_label": m.labels[2],
            "prediction": letter,
            "raw": r.raw,
            "how": x.how,
            "prompt_key": r.key,
        });
        if let Some(e) = &r.error {
            line["error"] = json!(e);
            self.counts.failed += 1;
            self.counts.refused += usize::from(e == "http_400");
        }
        if let Some(p) = r.top_logprobs.as_deref().and_then(option_probabilities) {
            line["prob"] = json!({"A": p[0], "B": p[1], "C": p[2], "D": p[3]});
            self.counts.with_prob += 1;
        }
        self.counts.lines += 1;
        let (_, path, w) = self.open.as_mut().expect("opened above");
        writeln!(w, "{line}").map_err(|source| EvalError::Write {
            path: path.clone(),
            source,
        })
    }

    fn close(&mut self) -> Result<(), EvalError> {
        if let Some((_, path, mut w)) = self.open.take() {
            w.flush()
                .map_err(|source| EvalError::Write { path, source })?;
        }
        Ok(())
    }
}

/// The passes over `files` files: each file, per seed, per setting of `run`.
fn passes_of(files: usize, seeds: &[u64], run: &[&'static str]) -> Vec<Pass> {
    (0..files)
        .flat_map(|file| {
            seeds.iter().flat_map(move |&seed| {
                run.iter().map(move |&setting| Pass {
                    file,
                    seed,
                    setting,
                })
            })
        })
        .collect()
}

/// Runs the evaluation: every row of every file, per seed and setting; the figures of each
/// domain and seed from its prediction folder. Writes nothing but temporary files.
pub async fn evaluate(
    llm: &Llm,
    opts: &EvalOptions,
    progress: &dyn Progress,
) -> Result<CbEvaluation, EvalError> {
    let run = wanted(&opts.settings)?;
    let prompt = Templates::load(&opts.prompts, "conflictbank.md")?;
    let templates = Templates::new();
    let (files, data) = load_rows(opts, &run)?;
    let passes = passes_of(files.len(), &opts.seeds, &run);
    let total: usize = passes.iter().map(|p| files[p.file].len()).sum();
    let staged = tempfile::Builder::new()
        .prefix("conflictbench-conflictbank-")
        .tempdir()
        .map_err(|source| EvalError::Write {
            path: std::env::temp_dir(),
            source,
        })?;
    let mut lines = Lines {
        staged: staged.path(),
        passes: &passes,
        files: &files,
        open: None,
        counts: LineCounts::default(),
    };
    let logprobs = opts.logprobs.filter(|n| *n > 0);
    let tp = (&templates, &prompt, logprobs);
    let jobs = passes.iter().enumerate().flat_map(|(i, p)| {
        let f = &files[p.file];
        f.rows()
            .map(move |r| r.and_then(|(_, row)| job(tp, f, (i, *p), &row)))
    });
    let (sampling, conc) = (opts.sampling, opts.concurrency);
    let name = "eval conflictbank";
    run_stream(
        llm,
        jobs,
        sampling,
        conc,
        name,
        total as u64,
        progress,
        |m, r| lines.write(m, &r),
    )
    .await?;
    lines.close()?;
    let dry = llm.config().backend == BackendKind::DryRun;
    let mut runs = Vec::new();
    if !dry {
        for f in &files {
            for &seed in &opts.seeds {
                runs.push(figures_of(staged.path(), &f.domain, seed)?);
            }
        }
    }
    Ok(CbEvaluation {
        benchmark: "conflictbank",
        backend: llm.config().backend.name().into(),
        endpoint: llm.endpoint().into(),
        model: llm.config().model.clone(),
        seeds: opts.seeds.clone(),
        settings: run.iter().map(|s| (*s).to_owned()).collect(),
        prompts: vec![(format!("eval/{}", prompt.name), prompt.hash.clone())],
        data,
        logprobs,
        entropy: if dry {
            "not measured: a dry run sends nothing".into()
        } else {
            entropy_note(logprobs, lines.counts)
        },
        runs,
        staged: (!dry).then_some(staged),
    })
}

/// The figures of one prediction folder; where none exists (no question scored), why.
fn figures_of(staged: &Path, domain: &str, seed: u64) -> Result<CbRun, EvalError> {
    let rel = folder(domain, seed);
    let (figures, note) = match evaluate_predictions(&staged.join(&rel)) {
        Ok(r) => (Some(r), None),
        Err(EvalError::Config(m)) => {
            let m = m.replace(&staged.display().to_string(), "");
            (None, Some(m.trim_start_matches('/').to_owned()))
        }
        Err(e) => return Err(e),
    };
    Ok(CbRun {
        domain: domain.to_owned(),
        seed,
        folder: rel.to_string_lossy().into_owned(),
        figures,
        note,
    })
}

/// Writes the prediction folders (each file whole; a setting file of an earlier run that
/// this one did not run is removed, so the folder scores as this run did), `results.json`
/// and `results.md` into `out`.
pub fn write_all(out: &Path, e: &CbEvaluation) -> Result<(), EvalError> {
    let Some(staged) = &e.staged else {
        return Ok(());
    };
    for run in &e.runs {
        let from = staged.path().join(&run.folder);
        let to = out.join(&run.folder);
        for s in SETTINGS {
            let name = format!("{s}.json");
            let path = to.join(&name);
            if e.settings.iter().any(|w| w == s) {
                move_file(&from.join(&name), &to, &name)?;
            } else if path.is_file() {
                std::fs::remove_file(&path).map_err(|source| EvalError::Write { path, source })?;
            }
        }
    }
    let mut json = serde_json::to_vec_pretty(e).expect("json");
    json.push(b'\n');
    write_file(out, "results.json", &json)?;
    write_file(out, "results.md", markdown(e).as_bytes())
}

/// Moves a finished prediction file to `to/name`: renamed where both lie on one file system,
/// else copied whole (a temporary file beside it, then renamed).
fn move_file(from: &Path, to: &Path, name: &str) -> Result<(), EvalError> {
    let err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| EvalError::Write { path, source }
    };
    std::fs::create_dir_all(to).map_err(err(to))?;
    if std::fs::rename(from, to.join(name)).is_ok() {
        return Ok(());
    }
    let bytes = std::fs::read(from).map_err(err(from))?;
    write_file(to, name, &bytes)
}

/// The figures as Markdown: a table per domain and seed ([`crate::conflictbank::markdown`]).
pub fn markdown(e: &CbEvaluation) -> String {
    let mut out = format!(
        "# ConflictBank evaluation of `{}` ({} backend, {})\n\nAverage entropy: {}.\n",
        e.model, e.backend, e.endpoint, e.entropy
    );
    for run in &e.runs {
        out.push_str(&format!(
            "\n## {}, seed {} (predictions: {}/)\n\n",
            run.domain, run.seed, run.folder
        ));
        match (&run.figures, &run.note) {
            (Some(f), _) => out.push_str(&crate::conflictbank::markdown(f)),
            (None, note) => {
                out.push_str(&format!("No figure: {}\n", note.as_deref().unwrap_or("")));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{entropy_note, wanted, LineCounts};

    #[test]
    fn the_entropy_note_says_what_came_back_and_why_not() {
        let counts = |lines, with_prob, failed, refused| LineCounts {
            lines,
            with_prob,
            failed,
            refused,
        };
        let note = |asked, c| entropy_note(asked, c);
        assert!(note(None, counts(4, 0, 0, 0)).starts_with("not measured: --logprobs 0"));
        assert!(note(Some(20), counts(4, 4, 0, 0)).starts_with("measured: "));
        let refused = note(Some(20), counts(4, 0, 4, 4));
        assert!(
            refused.starts_with("not measured: 4 of 4 requests were refused with HTTP 400")
                && refused.ends_with("run again with --logprobs 0"),
            "{refused}"
        );
        let ignored = note(Some(5), counts(4, 0, 1, 0));
        assert!(
            ignored.starts_with("not measured: the endpoint returned no log-probabilities")
                && ignored.contains("among the top 5")
                && ignored.contains("1 of 4 calls failed"),
            "{ignored}"
        );
        let partly = note(Some(20), counts(4, 3, 1, 1));
        assert!(partly.starts_with("partly measured: 3 of 4"), "{partly}");
    }

    #[test]
    fn default_and_correct_always_run_in_settings_order() {
        let s = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            wanted(&s(&["semantic_correct", "temporal"])).unwrap(),
            ["default", "correct", "temporal", "semantic_correct"]
        );
        assert_eq!(wanted(&[]).unwrap().len(), 11);
        assert!(wanted(&s(&["nonsense"])).is_err());
    }
}
