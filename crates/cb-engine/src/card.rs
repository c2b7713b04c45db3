//! The dataset card (`README.md` of an output folder): the Hub's metadata block, how to
//! load it, what it is, how it was made, what the counts are, the schema, the licenses and
//! how to cite the sources. The text is the template `templates/card.md` (minijinja); this
//! module gathers what it shows from the recipe and the manifest.

use crate::hub;
use crate::recipe::Recipe;
use cb_model::manifest::{ReaderQuestion, ReaderTrust, Untrusted};
use cb_model::{Manifest, ReaderInfo};
use minijinja::{context, Environment};
use serde::Serialize;
use std::sync::OnceLock;

/// The card's template, compiled into the binary.
const TEMPLATE: &str = include_str!("../templates/card.md");

/// The environment that holds the card's template: block tags on their own lines leave no
/// blank line, the final newline is kept, nothing is escaped (the card is Markdown).
fn environment() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_keep_trailing_newline(true);
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        env.add_template("card.md", TEMPLATE)
            .expect("the card template parses");
        env
    })
}

/// What the card says of the reader that checked the rows.
#[derive(Serialize)]
struct ReaderView<'a> {
    model: &'a str,
    endpoint: &'a str,
    backend: &'a str,
    /// `check passed of asked`, comma-separated.
    tallies: String,
    /// Whether its controls show it reliable (`cb_model::manifest::ReaderTrust`'s rule), and
    /// if not, why (with a panel: the panel's reason, [`ReaderInfo::untrusted`]).
    verified: bool,
    untrusted: Option<Untrusted>,
    /// Control questions answered with an option (the measure's count) and passed.
    asked: u64,
    passed: u64,
    /// Control questions answered "none of these", left out of the measure, and what the
    /// card says of them (`cb_model::manifest::ReaderTrust::no_answer_note`).
    no_answer: u64,
    no_answer_note: Option<String>,
    /// Control questions failed on golden contexts noted `golden_unrelated`, set aside too
    /// (named by the same note).
    unrelated: u64,
    /// The Wilson 95 % lower bound of its control pass rate, to two places (`none`: none asked).
    bound: String,
    /// Why in words (`cb_model::manifest::ReaderTrust::why`).
    why: String,
    /// What the reader was told, word for word (the system part of its question).
    instruction: Option<&'a str>,
    /// Every question it was asked, word for word.
    questions: &'a [ReaderQuestion],
    /// The rule in words.
    rule: String,
    /// In a panel's entry: the rows it judged and let stand.
    judged: u64,
    stood: u64,
    /// With several readers: each one, and each pair's agreement.
    panel: Vec<ReaderView<'a>>,
    agreement: Vec<AgreementView<'a>>,
}

/// The agreement of two readers.
#[derive(Serialize)]
struct AgreementView<'a> {
    readers: &'a [String; 2],
    rows: u64,
    both_stand: u64,
    first_only: u64,
    second_only: u64,
    neither: u64,
    /// To four places, or why there is none.
    kappa: String,
}

/// One stage's row of the counts table.
#[derive(Serialize)]
struct StageView<'a> {
    name: &'a str,
    in_: u64,
    out: u64,
    rejected: u64,
    reasons: String,
}

/// What the card shows of reader `r`: its tallies and whether its controls make it trusted.
fn reader_view(r: &ReaderInfo) -> ReaderView<'_> {
    ReaderView {
        model: &r.model,
        endpoint: &r.endpoint,
        backend: &r.backend,
        tallies: r
            .checks
            .iter()
            .map(|(check, t)| {
                let mut aside = Vec::new();
                if t.none > 0 {
                    aside.push(format!("{} none of these", t.none));
                }
                if t.unrelated > 0 {
                    aside.push(format!("{} on unrelated golden contexts", t.unrelated));
                }
                match aside.is_empty() {
                    true => format!("{check} {} of {}", t.passed, t.asked),
                    false => format!("{check} {} of {} ({})", t.passed, t.asked, aside.join(", ")),
                }
            })
            .collect::<Vec<_>>()
            .join(", "),
        verified: r.untrusted().is_none(),
        untrusted: r.untrusted(),
        asked: r.trust.controls_asked,
        passed: r.trust.controls_passed,
        no_answer: r.trust.controls_no_answer,
        no_answer_note: r.trust.no_answer_note(),
        unrelated: r.trust.controls_unrelated,
        bound: r
            .trust
            .lower_bound
            .map_or("none".to_owned(), |l| format!("{l:.2}")),
        why: r.trust.why(),
        instruction: r.instruction.as_deref(),
        questions: &r.questions,
        rule: ReaderTrust::rule(),
        judged: r.rows.map_or(0, |t| t.asked),
        stood: r.rows.map_or(0, |t| t.passed),
        panel: r.panel.iter().map(reader_view).collect(),
        agreement: r
            .agreement
            .iter()
            .map(|a| AgreementView {
                readers: &a.readers,
                rows: a.rows,
                both_stand: a.both_stand,
                first_only: a.first_only,
                second_only: a.second_only,
                neither: a.neither,
                kappa: a.kappa.map_or_else(
                    || "undefined (one verdict for every row)".to_owned(),
                    |k| format!("{k:.4}"),
                ),
            })
            .collect(),
    }
}

/// The card of a build of `recipe` described by its manifest `m`.
pub fn render(recipe: &Recipe, m: &Manifest) -> String {
    let configs = hub::configs(&m.data_files, None);
    let title = format!("{} / {}", m.benchmark.to_uppercase(), m.domain);
    let pretty = if m.card.pretty_name.is_empty() {
        &title
    } else {
        &m.card.pretty_name
    };
    let reader = m.reader.as_ref().map(reader_view);
    let stages: Vec<StageView> = m
        .stages
        .iter()
        .map(|c| StageView {
            name: &c.name,
            in_: c.in_,
            out: c.out,
            rejected: c.rejected,
            reasons: c
                .reasons
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect::<Vec<_>>()
                .join(", "),
        })
        .collect();
    let ctx = context! {
        front_matter => hub::front_matter(pretty, [&m.card], &configs),
        title,
        description => &recipe.description,
        offline => m.offline,
        reader,
        control_measures => &m.card.control_measures,
        axes => cb_model::axes::measure(m.reader.as_ref(), &m.stages).map(|a| a.sentence()),
        config_table => hub::config_table(&configs),
        empty => m.data_files.iter().filter(|f| f.rows == 0).map(|f| f.path.as_str()).collect::<Vec<_>>(),
        split => &m.card.split,
        source_split => &m.card.source_split,
        load_example => hub::load_example(&format!("generated/{}/{}", m.benchmark, m.domain), &configs),
        tool => &m.tool,
        tool_version => &m.tool_version,
        recipe => &m.recipe,
        recipe_hash => short(&m.recipe_hash),
        backend => &m.backend,
        model => &m.model,
        endpoint => &m.endpoint,
        reader_cell => m.reader.as_ref().map_or("none (not reader-verified)".to_owned(), reader_cell),
        seed => m.seed,
        rows => m.rows,
        rejected => m.rejected,
        calls => m.llm.calls,
        prompt_tokens => m.llm.prompt_tokens,
        completion_tokens => m.llm.completion_tokens,
        cost => format!("{:.4}", m.llm.estimated_cost_usd),
        models => model_views(m),
        inputs => m.inputs.iter().map(|i| context! { path => &i.path, source => &i.source, sha256 => short(&i.sha256) }).collect::<Vec<_>>(),
        prompts => m.prompts.iter().map(|(name, hash)| context! { name, hash => short(hash) }).collect::<Vec<_>>(),
        stages,
        filtered => m.filtered.iter().map(|(reason, count)| context! { reason, count }).collect::<Vec<_>>(),
        recall => recipe.format == "recall",
        rows_output => recipe.rows.as_ref().map(|r| context! { file => &r.file, config => &r.config, about => &r.about }),
        domain => &m.domain,
        notes => &recipe.notes,
        license_section => hub::license_section([&m.card]),
        cite => &recipe.cite,
    };
    environment()
        .get_template("card.md")
        .and_then(|t| t.render(ctx))
        .expect("the card template renders every manifest")
}

/// The rows of the per-model table (none without named models): the build's own model
/// (the first entry) and an unnamed reader have no name and say what they are.
fn model_views(m: &Manifest) -> Vec<minijinja::Value> {
    m.models
        .iter()
        .enumerate()
        .map(|(i, u)| {
            let name = match (&u.name, i) {
                (Some(n), _) => format!("`{n}`"),
                (None, 0) => "the build's own (`--model`)".to_owned(),
                (None, _) => "the reader (`--reader-model`)".to_owned(),
            };
            let steps = if u.steps.is_empty() {
                "none".to_owned()
            } else {
                u.steps.join(", ")
            };
            let t = &u.totals;
            context! {
                model => &u.model, name, endpoint => &u.endpoint, steps,
                calls => t.calls, prompt_tokens => t.prompt_tokens,
                completion_tokens => t.completion_tokens,
                cost => format!("{:.4}", t.estimated_cost_usd),
            }
        })
        .collect()
}

/// The reader's cell of the table: who read (each reader of a panel), and whether trusted.
fn reader_cell(r: &ReaderInfo) -> String {
    let who = if r.panel.is_empty() {
        format!("{} at {}", r.model, r.endpoint)
    } else {
        r.panel
            .iter()
            .map(|p| format!("{} at {}", p.model, p.endpoint))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let trusted = match r.untrusted() {
        None => "",
        Some(Untrusted::ReadNothing) => " (read no row: not reader-verified)",
        Some(Untrusted::TooFew) => " (too few controls to measure it: not reader-verified)",
        Some(Untrusted::Abstaining) => {
            " (answered \"none of these\" to most controls: not reader-verified)"
        }
        Some(Untrusted::Unreliable) => " (unreliable: not reader-verified)",
    };
    format!("{who}{trusted}")
}

fn short(h: &str) -> &str {
    &h[..h.len().min(12)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use cb_model::CheckTally;

    /// A manifest with a filter, an empty data file and a reader that passed `passed` of
    /// `asked` controls.
    fn manifest(r: &Recipe, passed: u64, asked: u64) -> Manifest {
        with_none(r, passed, asked, 0)
    }

    /// The same, `none` of the `asked` controls answered "none of these".
    fn with_none(r: &Recipe, passed: u64, asked: u64, none: u64) -> Manifest {
        let mut m: Manifest = serde_json::from_value(serde_json::json!({
            "tool": "conflictbench", "tool_version": "0", "benchmark": "kre", "domain": "x",
            "recipe": "r.toml", "recipe_hash": "abcdef0123456789", "description": "d",
            "backend": "openai", "offline": false, "model": "m", "endpoint": "e", "seed": 42,
            "inputs": [], "prompts": {}, "stages": [], "filtered": {"too_short": 3},
            "rows": 0, "rejected": 3, "files": [],
            "llm": {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                    "estimated_cost_usd": 0.0, "price_per_million": [0.0, 0.0]},
            "data_files": [{"config": "rejects", "path": "rejects.jsonl",
                            "split": "validation", "rows": 0, "bytes": 0}]
        }))
        .unwrap();
        let checks = [(
            "control".to_owned(),
            CheckTally {
                asked,
                passed,
                none,
                unrelated: 0,
            },
        )]
        .into();
        m.reader = Some(ReaderInfo {
            instruction: Some("Answer from the passage.".into()),
            ..ReaderInfo::new("openai".into(), "rm".into(), "http://r".into(), checks)
        });
        m.card = hub::complete(&r.card, &r.format);
        m
    }

    /// A reader that failed its controls, one asked too few, one that passed them; a filter
    /// and an empty data file: every optional part of the template shows, and no template
    /// syntax is left in the text.
    #[test]
    fn every_optional_part_renders() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../recipes");
        let recipes = crate::load_recipes(&crate::Files::Dir(dir)).unwrap();
        let r = &recipes[0];
        let unreliable = render(r, &manifest(r, 1, 10));
        let too_few = render(r, &manifest(r, 3, 3));
        let verified = render(r, &manifest(r, 12, 12));
        let none = render(r, &with_none(r, 10, 12, 2));
        let abstains = render(r, &with_none(r, 10, 30, 20));
        for (card, part) in [
            (&unreliable, "> **Not reader-verified: an unreliable reader.** `rm` at `http://r` (openai) read the rows back, told: \"Answer from the passage.\", but it passed only 1 of 10 control questions (the golden context leading to the golden answer; Wilson 95 % lower bound 0.02), and the card calls rows reader-verified only with at least 10 controls asked and the lower bound of the Wilson 95 % interval of their pass rate at least 0.70."),
            (&unreliable, "Checks passed: control 1 of 10. Rebuild with a stronger reader."),
            (&unreliable, "| reader | rm at http://r (unreliable: not reader-verified) |"),
            // The manifest's row count, never another value of the same name.
            (&unreliable, "| rows | 0 |"),
            (&too_few, "> **Not reader-verified: too few controls.** `rm` at `http://r` (openai) read the rows back, told: \"Answer from the passage.\". It was asked only 3 control questions (the golden context leading to the golden answer) and passed 3: too few to measure a reader, which says nothing yet of how it reads;"),
            (&too_few, "Build more rows (a larger `--limit` or `--sample`) to measure it."),
            (&too_few, "| reader | rm at http://r (too few controls to measure it: not reader-verified) |"),
            (&verified, "given the row's question and options with the generated context alone and told: \"Answer from the passage.\", chose the answer"),
            (&verified, "> **Reader-verified** by `rm` at `http://r` (openai)"),
            (&verified, "Checks passed: control 12 of 12. The reader is trusted on its controls: it passed 12 of 12 control questions (the golden context leading to the golden answer; Wilson 95 % lower bound 0.76)"),
            (&verified, "| reader | rm at http://r |"),
            (&none, "> **Reader-verified** by `rm`"),
            (&none, "Checks passed: control 10 of 12 (2 none of these). The reader is trusted on its controls: it passed 10 of 10 control questions answered with an option (the golden context leading to the golden answer; Wilson 95 % lower bound 0.72)"),
            (&none, "Beside them, 2 controls found no answer in their golden context (the reader picked \"none of these\"): those rows' data cannot lead to the golden answer (their control fails: reader_control_failed, refused unless the recipe's control is \"record\"); they measure the data, not the reader, and are not counted against it."),
            (&abstains, "> **Not reader-verified: a reader that abstains.** `rm` at `http://r` (openai) read the rows back, told: \"Answer from the passage.\", but it answered \"none of these\" to 20 of its 30 control questions (the golden context leading to the golden answer), more than 50 %: it may be abstaining rather than reading"),
            (&abstains, "Read some of the rows refused `reader_control_failed`: where their golden context states the answer, rebuild with a reader that answers from the passage"),
            (&abstains, "| reader | rm at http://r (answered \"none of these\" to most controls: not reader-verified) |"),
            (&unreliable, "\nNo config for `rejects.jsonl`: no rows"),
            (&unreliable, "\nFiltered out, by reason:\n\n- too_short: 3\n\n## Files\n\n"),
        ] {
            assert!(card.contains(part), "{part:?} not in\n{card}");
        }
        assert!(!unreliable.contains("Reader-verified") && !too_few.contains("Reader-verified"));
        assert!(!too_few.contains("unreliable") && !too_few.contains("stronger reader"));
        assert!(!abstains.contains("unreliable") && !abstains.contains("Reader-verified"));
        assert!(!none.contains("unreliable") && !verified.contains("none of these"));
        for card in [&unreliable, &too_few, &verified, &none, &abstains] {
            assert!(!card.contains("{{") && !card.contains("{%"));
        }
    }

    /// Each reason a reader is not trusted (and trust itself) is decided once, and said in all
    /// three places from it: the log's warning (the manifest's sentence), its advice, and the
    /// card, in its notice and in its table's reader cell; no reason shows another's words.
    #[test]
    fn each_reason_a_reader_is_untrusted_is_said_in_the_log_the_advice_and_the_card() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../recipes");
        let recipes = crate::load_recipes(&crate::Files::Dir(dir)).unwrap();
        let r = &recipes[0];
        use Untrusted::*;
        // Per reason: the control tally (passed, asked, none); how the warning goes on after
        // "the reader rm "; words of the advice; the card's notice after "> **"; the reader
        // cell's note after "| reader | rm at http://r".
        #[rustfmt::skip]
        let cases = [
            (None, (12, 12, 0), "", "", "Reader-verified** by", ""),
            (Some(ReadNothing), (0, 0, 0), "read no row (every item was rejected before the reader check)", "see rejects.jsonl for what stopped every item before it", "Not reader-verified: no row reached the reader.**", " (read no row: not reader-verified)"),
            (Some(TooFew), (3, 3, 0), "was asked only 3 control questions", "build more rows (a larger --limit or --sample)", "Not reader-verified: too few controls.**", " (too few controls to measure it: not reader-verified)"),
            (Some(Abstaining), (10, 30, 20), "answered \"none of these\" to 20 of its 30 control questions", "the reader abstains rather than reads", "Not reader-verified: a reader that abstains.**", " (answered \"none of these\" to most controls: not reader-verified)"),
            (Some(Unreliable), (1, 10, 0), "is unreliable: it passed only 1 of 10 control questions", "choose a stronger reader", "Not reader-verified: an unreliable reader.**", " (unreliable: not reader-verified)"),
        ];
        let shown = |notice: &str, cell: &str| {
            let cell = format!("| reader | rm at http://r{cell} |");
            (format!("> **{notice}"), cell)
        };
        for (reason, (passed, asked, none), warning, advice, notice, cell) in cases {
            let m = with_none(r, passed, asked, none);
            let reader = m.reader.as_ref().unwrap();
            assert_eq!(reader.untrusted(), reason);
            assert_eq!(reader.trust.untrusted(), reason);
            let said = reader.warning().unwrap_or_default();
            let expected = reason.map_or(String::new(), |_| format!("the reader rm {warning}"));
            assert!(said.starts_with(&expected), "{reason:?}: {said}");
            assert_eq!(said.is_empty(), reason.is_none(), "{reason:?}: {said}");
            let told = reason.map_or("", Untrusted::advice);
            assert!(told.contains(advice), "{reason:?}: {told}");
            let card = render(r, &m);
            let (notice, cell) = shown(notice, cell);
            assert!(
                card.contains(&notice),
                "{reason:?}: {notice:?} not in\n{card}"
            );
            assert!(card.contains(&cell), "{reason:?}: {cell:?} not in\n{card}");
            for (other, _, _, other_advice, other_notice, other_cell) in cases {
                let (other_notice, other_cell) = shown(other_notice, other_cell);
                let other_words = card.contains(&other_notice) || card.contains(&other_cell);
                assert!(
                    other == reason || !other_words,
                    "{reason:?} shows {other:?}"
                );
                let advised = !other_advice.is_empty() && told.contains(other_advice);
                assert!(
                    other == reason || !advised,
                    "{reason:?} advises as {other:?}"
                );
            }
        }
    }

    /// The card reports both quality axes: measured where the reader asked the axis' check
    /// (with the rows refused for it), "not measured" and why where it did not, or where
    /// nobody read the rows.
    #[test]
    fn the_card_reports_both_axes_measured_or_not() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../recipes");
        let recipes = crate::load_recipes(&crate::Files::Dir(dir)).unwrap();
        let r = &recipes[0];
        let mut m = manifest(r, 12, 12);
        let plain = render(r, &m);
        for part in [
            "**Quality, on two axes.**",
            "- misleading: not measured (the reader check did not ask whether the context leads to its answer: no `negative` or `qa_a` check).\n",
            "- plausible: not measured (the reader check did not ask whether the context is one a careful reader would accept: no `plausible` check).\n",
        ] {
            assert!(plain.contains(part), "{part:?} not in\n{plain}");
        }
        let reader = m.reader.as_mut().unwrap();
        let tally = |asked, passed| CheckTally {
            asked,
            passed,
            ..CheckTally::default()
        };
        reader.checks.insert("negative".into(), tally(12, 9));
        reader.checks.insert("plausible".into(), tally(9, 7));
        m.stages = vec![cb_model::StageCounts {
            name: "reader_check".into(),
            in_: 12,
            out: 7,
            rejected: 5,
            reasons: [
                ("reader_disagrees".to_owned(), 3),
                ("reader_implausible".to_owned(), 2),
            ]
            .into(),
        }];
        let read = render(r, &m);
        for part in [
            "- misleading: the reader's `negative` check passed by `rm` 9 of 12.\n",
            "- plausible: the reader's `plausible` check passed by `rm` 7 of 9; 2 rows refused `reader_implausible`.\n",
        ] {
            assert!(read.contains(part), "{part:?} not in\n{read}");
        }
        m.reader = None;
        let offline = render(r, &m);
        assert!(
            offline.contains("- plausible: not measured (no reader read the rows back).\n"),
            "{offline}"
        );
    }

    /// The card quotes every question the reader check put, word for word as the recipe's
    /// step asks it: SQuAD's (the none option last after the row's options, the editor's
    /// coherence, residual and plausibility questions with their own instruction, the answer
    /// set), cose's (the none option with its negative and control questions, and the
    /// plausibility question) and RECALL's.
    #[test]
    fn the_card_quotes_every_question_the_reader_was_asked() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let recipes = crate::load_recipes(&crate::Files::Dir(root.join("recipes"))).unwrap();
        let prompts = crate::Files::Dir(root.join("prompts"));
        let card_of = |domain: &str| {
            let r = recipes.iter().find(|r| r.domain == domain).unwrap();
            let steps = r.load_steps(&cb_steps::STEPS, &prompts).unwrap();
            let step = steps.iter().find(|s| s.reads()).unwrap();
            let mut m = manifest(r, 12, 12);
            let reader = m.reader.as_mut().unwrap();
            reader.instruction = step.prompt().map(|p| p.system.trim().to_owned());
            reader.questions = step.reader_questions();
            let reader = reader.clone();
            (render(r, &m), reader)
        };
        let none = cb_model::NONE_OPTION;
        let (card, reader) = card_of("squad");
        let checks: Vec<&str> = reader.questions.iter().map(|q| q.check.as_str()).collect();
        assert_eq!(
            checks,
            [
                "negative",
                "coherent",
                "residual",
                "plausible",
                "grounded",
                "control",
                "answer_set"
            ]
        );
        let told = reader.instruction.as_deref().unwrap();
        for q in &reader.questions {
            let own = if q.told == told {
                String::new()
            } else {
                format!(", told: \"{}\"", q.told)
            };
            let quoted = format!("`{}`{own}:\n\n```text\n{}\n```\n", q.check, q.asked);
            assert!(card.contains(&quoted), "{quoted:?} not in\n{card}");
            let offered = q.asked.contains(none);
            assert_eq!(offered, ["negative", "control"].contains(&q.check.as_str()));
        }
        for part in [
            "`negative`:\n\n```text\nPassage:\n<<<\n[the negative context]\n>>>\n\nQuestion: [the row's question]\nA: [the golden answer]\nB: [the negative answer]\nC: [each other option]\nD: none of these: the passage does not state what the question asks\n\nAnswer with the letter of the option the passage supports (one of A, B, C, D).\n```",
            "`coherent`, told: \"You check the passages of a reading test",
            "\n>>>\n\nA test asks \"[the row's question]\" about this passage, whose answer is meant to be \"[the negative answer]\"; the test's other options are \"[the golden answer]\", \"[each other option]\".",
            "`control`:\n\n```text\nPassage:\n<<<\n[the golden context]\n>>>",
            "`answer_set`, told: \"You answer multiple-choice questions.",
            "`plausible`, told: \"You check the passages of a reading test",
            "\n>>>\n\nSet aside whether this passage is true: it may differ from what you know on purpose, and that alone is no fault. Read it as someone who does not know the answer it gives, as a passage of an encyclopedia, a textbook or a news report. Which describes it best?\nA: plausible: a careful reader who does not know the answer could take it as written\nB: somewhat: it could be a real passage, but something in it is off (a stretched claim, a jump in the reasoning, a detail that does not fit the rest)\nC: implausible: a careful reader would reject it at once (absurd, self-contradictory, or a common word given a meaning it does not have)\n",
        ] {
            assert!(card.contains(part), "{part:?} not in\n{card}");
        }
        let (card, reader) = card_of("cose");
        let checks: Vec<&str> = reader.questions.iter().map(|q| q.check.as_str()).collect();
        assert_eq!(checks, ["negative", "plausible", "control"]);
        for q in &reader.questions {
            let offered = q.asked.contains(none);
            assert_eq!(offered, q.check != "plausible", "{}", q.asked);
        }
        assert!(
            card.contains("`plausible`, told: \"You check the passages"),
            "{card}"
        );
        // RECALL's: the editor's kind and coherence questions among the row's own.
        let (card, reader) = card_of("uj");
        let checks: Vec<&str> = reader.questions.iter().map(|q| q.check.as_str()).collect();
        assert_eq!(
            checks,
            [
                "qa_a",
                "kind",
                "plausible",
                "qa_na",
                "coherent",
                "plausible_qa_na",
                "qa_na_sentence",
                "plausible_qa_na_sentence",
                "control"
            ]
        );
        assert!(card.contains("`kind`, told: \"You check"), "{card}");
        // A manifest without questions (written before they were recorded) has no list.
        let r = &recipes[0];
        assert!(!render(r, &manifest(r, 12, 12)).contains("What the reader was asked"));
    }

    /// A panel: each reader's line names its controls answered "none of these" apart, and a
    /// reader that answered so to most is said to abstain.
    #[test]
    fn a_panel_names_each_readers_controls_answered_none() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../recipes");
        let recipes = crate::load_recipes(&crate::Files::Dir(dir)).unwrap();
        let r = &recipes[0];
        let member = |model: &str, passed, asked, none| {
            let mut m = with_none(r, passed, asked, none).reader.unwrap();
            m.model = model.into();
            m.rows = Some(CheckTally {
                asked,
                passed,
                none: 0,
                unrelated: 0,
            });
            m
        };
        let mut m = with_none(r, 10, 12, 2);
        let panel = vec![member("a", 10, 12, 2), member("b", 5, 12, 7)];
        m.reader = Some(ReaderInfo {
            panel: panel.clone(),
            ..panel[0].clone()
        });
        let card = render(r, &m);
        for part in [
            "> **Not reader-verified: a reader that abstains** by 2 readers",
            "; a reader answered \"none of these\" to more than half of its controls, so it may be abstaining rather than reading",
            "- `a` at `http://r`: let 10 of 12 rows stand; checks passed: control 10 of 12 (2 none of these); 10 of 10 controls answered with an option (Wilson 95 % lower bound 0.72): trusted; 2 controls found no answer in their golden context",
            "- `b` at `http://r`: let 5 of 12 rows stand; checks passed: control 5 of 12 (7 none of these); 5 of 5 controls answered with an option (Wilson 95 % lower bound 0.57): it may be abstaining rather than reading.\n",
        ] {
            assert!(card.contains(part), "{part:?} not in\n{card}");
        }
        assert!(!card.contains("unreliable"), "{card}");
    }

    /// With named models the card has a table of them after the build's; without, none.
    #[test]
    fn named_models_get_a_row_each() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../recipes");
        let recipes = crate::load_recipes(&crate::Files::Dir(dir)).unwrap();
        let r = &recipes[0];
        let mut m = manifest(r, 12, 12);
        let plain = render(r, &m);
        assert!(!plain.contains("The models (named"), "{plain}");
        let totals = |calls, cost| cb_model::manifest::LlmTotals {
            calls,
            prompt_tokens: 10 * calls,
            completion_tokens: calls,
            estimated_cost_usd: cost,
            price_per_million: [1.0, 2.0],
        };
        let one =
            |name: Option<&str>, model: &str, steps: &[&str], t| cb_model::manifest::ModelUse {
                name: name.map(str::to_owned),
                backend: "openai".into(),
                model: model.into(),
                endpoint: "http://e".into(),
                steps: steps.iter().map(|s| s.to_string()).collect(),
                totals: t,
            };
        m.models = vec![
            one(None, "m", &[], totals(0, 0.0)),
            one(
                Some("strong"),
                "s-m",
                &["negative_context", "reader_check"],
                totals(7, 0.00012),
            ),
        ];
        let card = render(r, &m);
        for row in [
            "| m | the build's own (`--model`) | http://e | none | 0 | 0 | 0 | $0.0000 |\n",
            "| s-m | `strong` | http://e | negative_context, reader_check | 7 | 70 | 7 | $0.0001 |\n\nInputs:",
        ] {
            assert!(card.contains(row), "{row:?} not in\n{card}");
        }
        assert!(!card.contains("{{") && !card.contains("{%"));
    }
}
