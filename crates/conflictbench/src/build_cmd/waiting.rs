//! What a `--batch-dir` build whose requests wait in batch files says, and its exit code.

use crate::exit::{Exit, Stopped};
use anyhow::Context;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// A `--batch-dir` build with requests waiting in files: [`Exit::Waiting`], and what to run. The
/// files said are this build's (`files`: those its layers' calls waited on) still without
/// an output file, whatever else the folder holds.
pub(super) fn waiting_for(
    dir: &Path,
    recipes: &[String],
    files: BTreeSet<PathBuf>,
) -> anyhow::Result<Stopped> {
    let files = cb_llm::batch_files::pending(files)
        .with_context(|| format!("cannot read {}", dir.display()))?;
    let requests: usize = files.iter().map(|f| f.requests).sum();
    let mut m = format!(
        "{} waiting for answers: {requests} requests in {} batch files in {}\n",
        recipes.join(", "),
        files.len(),
        dir.display()
    );
    for f in &files {
        m.push_str(&format!(
            "  {}  {} requests, model {}\n",
            f.path.display(),
            f.requests,
            f.model
        ));
    }
    let (first, model) = files
        .first()
        .map(|f| (f.path.clone(), f.model.as_str()))
        .unwrap_or_default();
    m.push_str(&format!(
        "Answer each file into the file beside it named .output.jsonl instead of .jsonl, for example\n  \
         conflictbench batches run-dir {dir} --base-url URL\n  \
         python -m vllm.entrypoints.openai.run_batch -i {input} -o {output} --model {model}\n  \
         python scripts/ray-batch.py {dir} --base-url URL   (Ray Data; --model-source M on GPUs)\n\
         then run this command again: it imports the answers and goes on (see README, \"Batch files\").",
        dir = dir.display(),
        input = first.display(),
        output = cb_llm::batch_files::output_path(&first).display(),
    ));
    Ok(Stopped {
        code: Exit::Waiting,
        message: m,
    })
}
