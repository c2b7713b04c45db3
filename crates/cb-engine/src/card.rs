//! The dataset card (`README.md` of an output folder): the Hub's metadata block, how to
//! load it, what it is, how it was made, what the counts are, the schema, the licenses and
//! how to cite the sources.

use crate::hub;
use crate::recipe::Recipe;
use cb_model::Manifest;
use std::fmt::Write;

pub fn render(recipe: &Recipe, m: &Manifest) -> String {
    let configs = hub::configs(&m.data_files, None);
    let title = format!("{} / {}", m.benchmark.to_uppercase(), m.domain);
    let pretty = if m.card.pretty_name.is_empty() {
        &title
    } else {
        &m.card.pretty_name
    };
    let mut s = hub::front_matter(pretty, [&m.card], &configs);
    let _ = writeln!(s, "# {title}\n");
    let _ = writeln!(s, "{}\n", recipe.description);
    if m.offline {
        let _ = writeln!(
            s,
            "> **Offline build.** The generated parts of this dataset (negative answers' contexts and any other model output) were produced by the tool's deterministic offline rules, not by a language model. Use it to check the pipeline and the formats; regenerate with `--backend openai` for a benchmark.\n"
        );
    }
    match &m.reader {
        Some(r) => {
            let tallies: Vec<String> = r
                .checks
                .iter()
                .map(|(check, t)| format!("{check} {} of {}", t.passed, t.asked))
                .collect();
            let _ = writeln!(
                s,
                "> **Reader-verified** by `{}` at `{}` ({}): every row was kept only after this model, given the row's question and options with the generated context alone, chose the answer that context is meant to lead to (the papers' human check, done by a model). Each row's `reader` column holds its picks; `rejects.jsonl` names the pick of every row it refused. Checks passed: {}.\n",
                r.model,
                r.endpoint,
                r.backend,
                tallies.join(", ")
            );
            if let Some((passed, asked)) = r.weak_control() {
                let _ = writeln!(
                    s,
                    "> **Warning: an unreliable reader.** It passed only {passed} of {asked} control questions (the golden context leading to the golden answer), so its verdicts say little about these rows. Rebuild with a stronger reader.\n"
                );
            }
        }
        None => {
            let _ = writeln!(
                s,
                "> **Not reader-verified.** No reader model answered these rows back, so nothing checked that each generated context leads to its intended answer; lexical checks only. Build with a reader (`--reader-base-url`, `--reader-model`, or a model build's own endpoint) to verify them.\n"
            );
        }
    }
    let _ = writeln!(s, "## Load it\n");
    s.push_str(&hub::config_table(&configs));
    let empty: Vec<&str> = m
        .data_files
        .iter()
        .filter(|f| f.rows == 0)
        .map(|f| f.path.as_str())
        .collect();
    if !empty.is_empty() {
        let _ = writeln!(
            s,
            "\nNo config for `{}`: no rows (the `datasets` library cannot load an empty split).",
            empty.join("`, `")
        );
    }
    let _ = writeln!(
        s,
        "\nSplit `{}`{}. The bookkeeping files (`manifest.json`, `runs.jsonl`) are in no config.\n",
        m.card.split,
        if m.card.source_split.is_empty() {
            String::new()
        } else {
            format!(": the rows come from {}", m.card.source_split)
        }
    );
    s.push_str(&hub::load_example(
        &format!("generated/{}/{}", m.benchmark, m.domain),
        &configs,
    ));
    s.push('\n');
    let _ = writeln!(s, "## How it was built\n");
    let _ = writeln!(s, "| | |\n|---|---|");
    let _ = writeln!(s, "| tool | {} {} |", m.tool, m.tool_version);
    let _ = writeln!(
        s,
        "| recipe | `{}` (sha256 `{}`) |",
        m.recipe,
        short(&m.recipe_hash)
    );
    let _ = writeln!(s, "| backend | {} |", m.backend);
    let _ = writeln!(s, "| model | {} |", m.model);
    let _ = writeln!(s, "| endpoint | {} |", m.endpoint);
    let _ = writeln!(
        s,
        "| reader | {} |",
        m.reader
            .as_ref()
            .map_or("none (not reader-verified)".to_owned(), |r| format!(
                "{} at {}",
                r.model, r.endpoint
            ))
    );
    let _ = writeln!(s, "| seed | {} |", m.seed);
    let _ = writeln!(s, "| rows | {} |", m.rows);
    let _ = writeln!(s, "| rejected or filtered | {} |", m.rejected);
    let _ = writeln!(
        s,
        "| model calls behind it | {} ({} prompt + {} completion tokens, about ${:.4}) |",
        m.llm.calls, m.llm.prompt_tokens, m.llm.completion_tokens, m.llm.estimated_cost_usd
    );
    let _ = writeln!(s, "\nInputs:\n");
    for i in &m.inputs {
        let _ = writeln!(
            s,
            "- `{}` ({}, sha256 `{}`)",
            i.path,
            i.source,
            short(&i.sha256)
        );
    }
    let _ = writeln!(s, "\nPrompts:\n");
    for (name, hash) in &m.prompts {
        let _ = writeln!(s, "- `prompts/{name}` (sha256 `{}`)", short(hash));
    }
    let _ = writeln!(s, "\n## Counts per stage\n");
    let _ = writeln!(
        s,
        "| stage | in | out | rejected | reasons |\n|---|---:|---:|---:|---|"
    );
    for c in &m.stages {
        let reasons: Vec<String> = c.reasons.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            c.name,
            c.in_,
            c.out,
            c.rejected,
            reasons.join(", ")
        );
    }
    if !m.filtered.is_empty() {
        let _ = writeln!(s, "\nFiltered out, by reason:\n");
        for (k, v) in &m.filtered {
            let _ = writeln!(s, "- {k}: {v}");
        }
    }
    let _ = writeln!(s, "\n## Files\n");
    if recipe.format == "recall" {
        let _ = writeln!(s, "{RECALL_FILES}");
    } else {
        let _ = writeln!(
            s,
            "- `{d}.json`: the released KRE layout, a JSON array indented by 4 spaces, each element `{{\"question\", \"answer\", \"negative_answer\", \"candidate\", \" golden_context\", \"negative_context\", \"choices\"}}`. The key `\" golden_context\"` keeps the leading space of the released files: this file is kept beside the JSONL so that KRE's released evaluation scripts, which read that key, run on this build unchanged. It holds the same rows as the JSONL under a key that makes a poor column name, so this file is in no config. `answer` and `candidate` are letters indexing `choices`; `negative_answer == choices[candidate]`.\n- `{d}.jsonl`: the same rows with clean key names (`golden_context`), plus `id`, `source_id`, `origin` (source file and line) and `lineage` (per model call: step, prompt template and its hash, cache key, attempt). This is the file the card's config `{d}` loads.",
            d = m.domain
        );
    }
    let _ = writeln!(s, "{COMMON_FILES}");
    if !recipe.notes.is_empty() {
        let _ = writeln!(s, "\n## Notes\n");
        for n in &recipe.notes {
            let _ = writeln!(s, "- {n}");
        }
    }
    let _ = writeln!(s);
    s.push_str(&hub::license_section([&m.card]));
    if !recipe.cite.is_empty() {
        let _ = writeln!(s, "\n## Cite the sources\n");
        for c in &recipe.cite {
            let _ = writeln!(s, "- {c}");
        }
    }
    s
}

fn short(h: &str) -> &str {
    &h[..h.len().min(12)]
}

const COMMON_FILES: &str = "- `rejects.jsonl` (config `rejects`): every source record that did not become a row: `id`, `origin`, `stage`, `reason`, `detail`, `raw_response` (the model's answer when one was behind the rejection, else `null`), `attempts`.\n- `manifest.json`: everything above in machine-readable form. For every stage, in = out + rejected.\n- `runs.jsonl`: one line per run of the build (calls made upstream, cache hits, spend). It is the only file that differs between two runs with the same inputs, seed and cache.";

const RECALL_FILES: &str = "RECALL was not released; these files are conflictbench's own, complete enough to compute the paper's metrics from them alone. Offsets count Unicode characters (Python `str` indices), end exclusive.

Every row of a file has the same keys with the same types: a value that does not apply is `null` (`answer_key` and `edited_key` for UJ, `donor_term` but for sentence edits).

- `qa_a.jsonl` (config `qa_a`): question answering with the answer edited (QA-A), one row per sample. `id`, `domain` (`eventkg`, or the UJ domain `cs` / `math` / `phy`), `source_id` (event or term), `origin` (source file and line), `subject` (the event's name or the term), `task` = `qa_a`, `edit` = `answer`, `question`, `answer` (as the context writes it), `edited_answer`, `answer_key` (EventKG: the record key the answer is the value of), `options` (the answer and the edited answer, in a seeded order), `answer_option` (the letter of the right option), `context` (the paragraph of step 1), `edited_context` (every mention of the answer replaced by the edited answer), `edits` (one per change: `original`, `edited`, `original_span`, `edited_span`), `lineage` (per model call: step, prompt template and its hash, cache key, attempt).
- `qa_na.jsonl` (config `qa_na`): question answering with text outside the answer edited (QA-NA), same fields with `task` = `qa_na`. `edit` = `word`: people, places, dates (EventKG) or words (UJ) outside the answer replaced; `edit` = `sentence` (UJ): a sentence about another term (`donor_term`), renamed to this one, inserted. The answer still occurs verbatim in `edited_context`; the right option is still `answer`.
- `text_generation.jsonl` (config `text_generation`): `source` and `edited_source` (EventKG: the key-value record, a list of `{key, value, kind}`, and the same record with the answer's item changed, `edited_key` naming it; UJ: the paragraph, and the paragraph with the answer edit and the word edits), `target` (EventKG: the paragraph; UJ: the definition), `edited_words` (E) and `original_words` (O) for the mistake reappearance rate, `aligned` (true: E[j] replaced O[j], EventKG; false: two sets of words, UJ, as the paper's formula 3 needs).";
