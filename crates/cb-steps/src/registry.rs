//! The table of step kinds, [`STEPS`]: each kind's constructor, parameters and fields.

use crate::general::{compose, draw, options, write};
use crate::{
    answer_edit, distractors, negative_context, negative_explanation, nonanswer_edit, paraphrase,
    pick_negative, qa, reader_check, recall,
};
use cb_step::params::{Param, MODEL_PARAMS};
use cb_step::{fields, Registry, StepFields, StepKind};

/// Every step kind a recipe may name: its constructor, its parameters and the fields it
/// reads and writes (checked along a recipe's chain before any work).
pub const STEPS: Registry = Registry::new(&[
    kind(
        "pick_negative",
        pick_negative::build,
        &[pick_negative::PARAMS, MODEL_PARAMS],
        |_| {
            StepFields::new(
                &[fields::CHOICES, fields::ANSWER],
                &[fields::CANDIDATE, fields::NEGATIVE_ANSWER],
            )
        },
    ),
    kind(
        "negative_explanation",
        negative_explanation::build,
        &[MODEL_PARAMS, negative_explanation::PARAMS],
        |_| {
            StepFields::new(
                &[
                    fields::QUESTION,
                    fields::CHOICES,
                    fields::ANSWER,
                    fields::GOLDEN_CONTEXT,
                    fields::NEGATIVE_ANSWER,
                ],
                &[fields::NEGATIVE_CONTEXT],
            )
        },
    ),
    kind("distractors", distractors::build, &[MODEL_PARAMS], |_| {
        StepFields::new(
            &[
                fields::QUESTION,
                fields::ANSWER_TEXT,
                fields::ALIASES,
                fields::GOLDEN_CONTEXT,
            ],
            &[
                fields::CHOICES,
                fields::ANSWER,
                fields::CANDIDATE,
                fields::NEGATIVE_ANSWER,
            ],
        )
    }),
    kind(
        "negative_context",
        negative_context::build,
        &[MODEL_PARAMS, negative_context::PARAMS],
        |_| {
            StepFields::new(
                &[
                    fields::QUESTION,
                    fields::ANSWER_TEXT,
                    fields::GOLDEN_CONTEXT,
                    fields::NEGATIVE_ANSWER,
                ],
                &[fields::NEGATIVE_CONTEXT],
            )
        },
    ),
    kind(
        "paraphrase",
        paraphrase::build,
        &[MODEL_PARAMS, recall::MODE],
        |s| recall::fields(s, &[], &[fields::PARAGRAPH]),
    ),
    kind("qa", qa::build, &[MODEL_PARAMS, recall::MODE], |s| {
        recall::fields(
            s,
            &[fields::PARAGRAPH],
            &[
                fields::QUESTION,
                fields::ANSWER,
                fields::ANSWER_VALUE,
                fields::ANSWER_KEY,
                fields::ANSWER_KIND,
            ],
        )
    }),
    kind(
        "answer_edit",
        answer_edit::build,
        &[MODEL_PARAMS, recall::MODE],
        |s| {
            recall::fields(
                s,
                &[
                    fields::PARAGRAPH,
                    fields::QUESTION,
                    fields::ANSWER,
                    fields::ANSWER_VALUE,
                    fields::ANSWER_KIND,
                    fields::ANSWER_KEY,
                    fields::DOMAIN,
                ],
                &[
                    fields::EDITED_ANSWER,
                    fields::OPTIONS,
                    fields::ANSWER_OPTION,
                    fields::QA_A_CONTEXT,
                    fields::QA_A_EDITS,
                    fields::EDITED_KV,
                ],
            )
        },
    ),
    kind(
        "nonanswer_edit",
        nonanswer_edit::build,
        &[MODEL_PARAMS, recall::MODE, nonanswer_edit::PARAMS],
        |s| {
            recall::fields(
                s,
                &[
                    fields::PARAGRAPH,
                    fields::QUESTION,
                    fields::ANSWER,
                    fields::ANSWER_VALUE,
                    fields::ANSWER_KIND,
                    fields::ANSWER_KEY,
                    fields::EDITED_ANSWER,
                    fields::QA_A_EDITS,
                ],
                &[
                    fields::QA_NA_CONTEXT,
                    fields::QA_NA_EDITS,
                    fields::TG_EDITED_SOURCE,
                    fields::TG_EDITS,
                ],
            )
        },
    ),
    kind(
        "insert_sentence",
        nonanswer_edit::sentence::build,
        &[],
        |_| {
            StepFields::new(
                &[
                    fields::PARAGRAPH,
                    fields::ANSWER,
                    fields::TERM,
                    fields::DOMAIN,
                ],
                &[
                    fields::QA_NA_SENTENCE_CONTEXT,
                    fields::QA_NA_SENTENCE_EDITS,
                    fields::DONOR_TERM,
                ],
            )
        },
    ),
    // General kinds: their fields are the recipe's parameters.
    kind(
        "draw_from_pool",
        draw::build_draw,
        &[draw::DRAW_PARAMS],
        draw::draw_fields,
    ),
    kind(
        "pick_value",
        draw::build_pick,
        &[draw::PICK_PARAMS],
        draw::pick_fields,
    ),
    kind(
        "compose",
        compose::build,
        &[compose::PARAMS],
        compose::fields,
    ),
    kind(
        "write_text",
        write::build,
        &[MODEL_PARAMS, write::PARAMS],
        write::fields,
    ),
    kind(
        "make_options",
        options::build,
        &[options::PARAMS],
        options::fields,
    ),
    kind(
        "reader_check",
        reader_check::build,
        &[reader_check::PARAMS, reader_check::FIELDS_PARAMS],
        reader_check::fields,
    ),
]);

/// The parameters a general kind cannot go without, for tests that build every kind from a
/// bare entry.
#[cfg(test)]
pub(crate) fn required_params(kind: &str) -> &'static str {
    match kind {
        "draw_from_pool" => "value = \"object\"\ninto = \"other\"\n",
        "pick_value" => "values = [\"news\"]\ninto = \"style\"\n",
        "compose" => "template = \"{{ subject }}\"\ninto = \"claim\"\n",
        "write_text" => "prompt = \"conflictbank/misinformation_evidence.md\"\ninto = \"text\"\noffline_template = \"{{ subject }}\"\n",
        "make_options" => "options = [\"a\", \"b\"]\ninto = \"options\"\n",
        _ => "",
    }
}

const fn kind(
    kind: &'static str,
    build: cb_step::Constructor,
    params: &'static [&'static [Param]],
    fields: fn(&cb_step::StepSpec) -> StepFields,
) -> StepKind {
    StepKind {
        kind,
        build,
        params,
        fields,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cb_step::Files;

    /// Every label a bundled template puts before material (`Question: {{ question }}`,
    /// `Passage:` then `<<<`) is one the echo check knows.
    #[test]
    fn the_echo_check_knows_every_label_of_the_bundled_prompts() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../prompts");
        let mut seen = 0;
        for sub in ["kre", "recall", "conflictbank"] {
            for f in std::fs::read_dir(dir.join(sub)).unwrap() {
                let path = f.unwrap().path();
                let text = std::fs::read_to_string(&path).unwrap();
                // The template parts only: worked examples are literal text.
                let p = cb_step::Prompt::parse(&path.display().to_string(), &text).unwrap();
                let text = format!("{}\n{}", p.system, p.user);
                let lines: Vec<&str> = text.lines().collect();
                for (i, line) in lines.iter().enumerate() {
                    let Some((head, rest)) = line.split_once(':') else {
                        continue;
                    };
                    let next = lines.get(i + 1).copied().unwrap_or("");
                    let rest = rest.trim_start().trim_start_matches('"');
                    let shows = rest.starts_with("{{")
                        || rest.starts_with("{%")
                        || (rest.is_empty() && (next.starts_with("<<<") || next.starts_with("{%")));
                    if head.contains('{') || !shows {
                        continue;
                    }
                    seen += 1;
                    assert!(
                        cb_quality::PROMPT_LABELS.contains(&head.trim()),
                        "label {head:?} is not in PROMPT_LABELS"
                    );
                }
            }
        }
        assert!(seen >= 15, "{seen}");
    }

    /// Every numeric key of every step kind (found in the step table, so a new one cannot be
    /// left out) takes both ends of its range and refuses 0 where it is outside, its largest
    /// value plus one, NaN, infinity and a negative value, naming the key and the range.
    #[test]
    fn every_numeric_recipe_key_refuses_a_value_outside_its_range() {
        use cb_model::Range;
        use cb_step::params::ParamType;
        use cb_step::StepSpec;
        let mut tried = Vec::new();
        for kind in STEPS.kinds() {
            for p in STEPS.params(kind) {
                let (ParamType::Integer(range) | ParamType::Number(range)) = p.ty else {
                    continue;
                };
                let entry = |v: &str| -> StepSpec {
                    toml::from_str(&format!("kind = \"{kind}\"\n{} = {v}", p.key))
                        .unwrap_or_else(|e| panic!("{kind}.{}: {v}: {e}", p.key))
                };
                let (ends, mut bad) = match range {
                    Range::Whole { min, max } => {
                        // TOML's integers end at i64::MAX: a larger one cannot be written.
                        let over = (max < i64::MAX as u64).then(|| (max + 1).to_string());
                        let mut bad: Vec<String> = over.into_iter().collect();
                        if min > 0 {
                            bad.push("0".into());
                        }
                        (vec![min.to_string(), max.to_string()], bad)
                    }
                    Range::Real { min, open_min, max } => {
                        let low = if open_min { max } else { min };
                        let mut bad = vec![format!("{:?}", max + 1.0)];
                        if min > 0.0 || open_min {
                            bad.push("0".into());
                        }
                        (vec![format!("{low:?}"), format!("{max:?}")], bad)
                    }
                };
                bad.extend(["nan", "inf", "-inf", "-1"].map(String::from));
                for v in &ends {
                    if let Err(e) = STEPS.check(&entry(v)) {
                        panic!(
                            "{kind}.{} = {v}: refused, yet in {range}: {}",
                            p.key, e.message
                        );
                    }
                }
                for v in &bad {
                    let e = STEPS
                        .check(&entry(v))
                        .expect_err(&format!("{kind}.{} = {v}", p.key));
                    assert_eq!(e.key.as_deref(), Some(p.key), "{v}: {}", e.message);
                    assert!(
                        e.message.contains(&format!("`{}`", p.key))
                            && e.message.contains(&format!("must be {range}")),
                        "{kind}.{} = {v}: {}",
                        p.key,
                        e.message
                    );
                }
                tried.push(format!("{kind}.{}", p.key));
            }
        }
        for key in [
            "temperature",
            "max_tokens",
            "top_p",
            "seed",
            "votes",
            "min_similarity",
        ] {
            assert!(
                tried.iter().any(|t| t.ends_with(&format!(".{key}"))),
                "{key}: {tried:?}"
            );
        }
    }

    #[test]
    fn every_kind_builds_with_the_bundled_prompts() {
        let prompts =
            Files::Dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../prompts"));
        let kinds: Vec<&str> = STEPS.kinds().collect();
        assert_eq!(kinds.len(), 15);
        for kind in kinds {
            for mode in ["record", "text"] {
                // The reader reads KRE rows or RECALL rows.
                let mode = match (kind, mode) {
                    ("reader_check", "record") => "kre",
                    ("reader_check", _) => "recall",
                    _ => mode,
                };
                // Only the kinds that declare `mode` take it.
                let takes_mode = STEPS.explain(kind).unwrap().contains("\n  mode ");
                let mut entry = format!("kind = \"{kind}\"\n{}", required_params(kind));
                if takes_mode {
                    entry.push_str(&format!("mode = \"{mode}\"\n"));
                }
                if kind == "negative_explanation" {
                    entry.push_str("prompt = \"kre/negative_explanation_choice.md\"\n");
                }
                let spec: cb_step::StepSpec = toml::from_str(&entry).unwrap();
                let step = STEPS.build(&spec, &prompts).unwrap();
                assert_eq!(step.name(), kind);
                // `pick_negative` asks a model by default (`how = "believable"`).
                let rule_only = [
                    "insert_sentence",
                    "draw_from_pool",
                    "pick_value",
                    "compose",
                    "make_options",
                ]
                .contains(&kind);
                assert_eq!(step.prompt().is_none(), rule_only, "{kind}");
            }
        }
        // KRE's seeded pick asks none, and takes no model parameter.
        let random: cb_step::StepSpec =
            toml::from_str("kind = \"pick_negative\"\nhow = \"random\"").unwrap();
        assert!(STEPS.build(&random, &prompts).unwrap().prompt().is_none());
        for bad in [
            "kind = \"pick_negative\"\nhow = \"random\"\ntemperature = 0.5",
            "kind = \"pick_negative\"\nhow = \"likely\"",
        ] {
            let spec: cb_step::StepSpec = toml::from_str(bad).unwrap();
            let e = STEPS.build(&spec, &prompts).unwrap_err().to_string();
            assert!(e.contains("`how") || e.contains("`temperature`"), "{e}");
        }
        let bad: cb_step::StepSpec = toml::from_str("kind = \"qa\"\nmode = \"table\"").unwrap();
        assert!(STEPS.build(&bad, &prompts).is_err());
        // A parameter another kind takes is not this one's.
        let bad: cb_step::StepSpec =
            toml::from_str("kind = \"distractors\"\nmode = \"record\"").unwrap();
        let e = STEPS.build(&bad, &prompts).unwrap_err().to_string();
        assert!(e.contains("unknown parameter `mode`"), "{e}");
    }
}
