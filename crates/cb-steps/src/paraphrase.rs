//! Step 1 of RECALL (paper section 2.3): the source as one paragraph. EventKG: the
//! key-value record written out as prose; UJ: the term's sentences condensed.

use crate::prelude::*;
use crate::recall::{base_key, is_fixed, kv, record_lines, Mode};
use cb_model::recall::name_of;
use cb_model::spans::mentions;
use cb_model::{date, text, KvItem};
use cb_quality as quality;
use std::collections::HashSet;

/// The step table's constructor.
pub fn build(spec: &StepSpec, prompts: &Files) -> Result<Box<dyn Step>, StepError> {
    let (mode, model) = Mode::with_model(spec, prompts, "paraphrase", 400)?;
    Ok(Model::boxed(model, Paraphrase { mode }))
}

/// Record mode: the record as one natural paragraph, which must state every value
/// but the description (the description is prose that the paragraph may reword; dates may
/// be written in any usual form). Text mode: the sentences condensed into one short
/// paragraph with no repeated information, which must name the term and be shorter than the
/// sentences put together.
///
/// Offline rule. Record: the description, then one templated sentence per item ("It began
/// on 30 May 1431.", "It took place in Rouen.", "Its participant was Pierre Cauchon.").
/// Text: the sentences in order, leaving out each one whose words mostly repeat an earlier
/// one (and, when none does, the one that overlaps the others most).
#[derive(Debug)]
pub struct Paraphrase {
    mode: Mode,
}

impl ModelBacked for Paraphrase {
    async fn apply<'a>(
        &'a self,
        model: &'a ModelStep,
        item: &'a mut Item,
        ctx: &'a StepCtx<'_>,
    ) -> Result<(), StepFailure> {
        let paragraph = match self.mode {
            Mode::Record => {
                let record = kv(item)?;
                if record.is_empty() {
                    return Err(StepFailure::reject("no_record", "the item has no `kv`"));
                }
                let a = model.ask(
                    item,
                    "",
                    [("record_lines", record_lines(&record))],
                    offline_record_paragraph(&record),
                );
                ask(ctx, item, a, |raw| validate_record_paragraph(raw, &record)).await?
            }
            Mode::Text => {
                let term = item.require(fields::TERM)?.to_owned();
                let sentences = item.require_texts(fields::SENTENCES)?;
                let offline = offline_condense(&term, &sentences);
                let a = model.ask(item, "", [], offline);
                ask(ctx, item, a, |raw| {
                    validate_text_paragraph(raw, &term, &sentences)
                })
                .await?
            }
        };
        item.set(fields::PARAGRAPH, paragraph);
        Ok(())
    }
}

fn validate_record_paragraph(raw: &str, record: &[KvItem]) -> Result<String, String> {
    let p = clean_text_answer(raw);
    if p.is_empty() {
        return Err("empty: the paragraph is empty".into());
    }
    if text::looks_like_refusal(&p) {
        return Err("refusal: the answer declines the task".into());
    }
    let keys: Vec<&str> = record.iter().map(|i| i.key.as_str()).collect();
    if let Some(k) = quality::echoed_label(&p, &keys, "") {
        return Err(format!(
            "prompt_echo: the paragraph repeats the record's \"{k}:\" line; write prose"
        ));
    }
    let missing: Vec<String> = record
        .iter()
        .filter(|i| i.kind != "description" && mentions(&p, &i.value, &i.kind).is_empty())
        .map(|i| format!("{} ({})", i.value, i.key))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "missing_values: the paragraph must state every value; missing: {}",
            missing.join("; ")
        ));
    }
    Ok(p)
}

fn validate_text_paragraph(raw: &str, term: &str, sentences: &[String]) -> Result<String, String> {
    let p = clean_text_answer(raw);
    if p.is_empty() {
        return Err("empty: the paragraph is empty".into());
    }
    if text::looks_like_refusal(&p) {
        return Err("refusal: the answer declines the task".into());
    }
    if text::find_word_occurrences(&p, term).is_empty() {
        return Err(format!("no_term: the paragraph must name \"{term}\""));
    }
    let joined = sentences.join(" ");
    if p.chars().count() >= joined.chars().count() {
        return Err(format!(
            "too_long: the paragraph ({} characters) must be shorter than the sentences together ({})",
            p.chars().count(),
            joined.chars().count()
        ));
    }
    Ok(p)
}

/// "on 30 May 1431" for a day, "in May 1431" / "in 1431" / "in the 1430s" otherwise.
fn date_phrase(value: &str) -> String {
    match date::parse_rendered(value).map(|d| d.granularity) {
        Some(date::Granularity::Day) => format!("on {value}"),
        Some(date::Granularity::Decade | date::Granularity::Century) => format!("in the {value}"),
        _ => format!("in {value}"),
    }
}

pub fn offline_record_paragraph(record: &[KvItem]) -> String {
    let name = name_of(record).unwrap_or("The event");
    let mut out: Vec<String> = Vec::new();
    match record.iter().find(|i| i.kind == "description") {
        Some(d) => out.push(format!(
            "{name}: {}",
            d.value.trim_end_matches('.').to_owned() + "."
        )),
        None => out.push(format!("This is about {name}.")),
    }
    for i in record.iter().filter(|i| !is_fixed(&i.kind)) {
        let v = &i.value;
        let s = match (base_key(&i.key), i.kind.as_str()) {
            ("begin time", _) => format!("It began {}.", date_phrase(v)),
            ("end time", _) => format!("It ended {}.", date_phrase(v)),
            (_, "date") => format!("Its {} was {}.", i.key, v),
            ("location", _) => format!("It took place in {v}."),
            ("part of", _) => format!("It was part of {v}."),
            ("previous event", _) => format!("It came after {v}."),
            ("next event", _) => format!("It was followed by {v}."),
            (k, _) if k.ends_with(" of") => format!("It was the {k} {v}."),
            (k, _) => format!("Its {k} was {v}."),
        };
        out.push(s);
    }
    out.join(" ")
}

/// Share of `a`'s word types that `b` also has.
fn overlap(a: &str, b: &str) -> f64 {
    let ta: HashSet<String> = text::tokens(a).into_iter().collect();
    let tb: HashSet<String> = text::tokens(b).into_iter().collect();
    if ta.is_empty() {
        return 1.0;
    }
    ta.intersection(&tb).count() as f64 / ta.len() as f64
}

pub fn offline_condense(term: &str, sentences: &[String]) -> String {
    let mut kept: Vec<&String> = Vec::new();
    for s in sentences {
        if kept.iter().all(|k| overlap(s, k) < 0.6) {
            kept.push(s);
        }
    }
    if kept.len() == sentences.len() && kept.len() > 1 {
        // Nothing was repeated outright: leave out the sentence that shares most with the
        // others (never the first, which usually introduces the term).
        let worst = (1..kept.len())
            .max_by(|&a, &b| {
                let score = |i: usize| {
                    kept.iter()
                        .enumerate()
                        .filter(|(j, _)| *j != i)
                        .map(|(_, o)| overlap(kept[i], o))
                        .sum::<f64>()
                };
                score(a).total_cmp(&score(b)).then(b.cmp(&a))
            })
            .expect("at least two sentences");
        kept.remove(worst);
    }
    let mut p = kept.iter().map(|s| s.trim()).collect::<Vec<_>>().join(" ");
    if text::find_word_occurrences(&p, term).is_empty() {
        p = format!("{}: {p}", text::ucfirst(term));
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recall::fixtures::trial;

    #[test]
    fn the_offline_paragraph_states_every_value() {
        let p = offline_record_paragraph(&trial());
        assert_eq!(validate_record_paragraph(&p, &trial()).unwrap(), p);
        assert!(p.contains("It began on 9 January 1431."), "{p}");
        let missing = p.replace("Rouen", "Paris");
        assert!(validate_record_paragraph(&missing, &trial())
            .unwrap_err()
            .starts_with("missing_values"));
        // A date in another writing still counts.
        let echoed = format!("{p}\nlocation: Rouen");
        assert!(validate_record_paragraph(&echoed, &trial())
            .unwrap_err()
            .starts_with("prompt_echo"));
        let reworded = p.replace("9 January 1431", "January 9, 1431");
        assert!(validate_record_paragraph(&reworded, &trial()).is_ok());
    }

    #[test]
    fn the_offline_condensed_paragraph_is_shorter_and_names_the_term() {
        let s: Vec<String> = [
            "A stack is a collection of elements.",
            "A stack is a collection of elements with push and pop.",
            "Push adds an element.",
        ]
        .map(String::from)
        .to_vec();
        let p = offline_condense("stack", &s);
        validate_text_paragraph(&p, "stack", &s).unwrap();
        assert!(!p.contains("with push and pop"), "{p}");
    }
}
