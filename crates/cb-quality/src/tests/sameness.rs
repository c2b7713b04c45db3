//! The checks as they were before they stopped allocating per word (issue 37), compared
//! with the checks of the crate on every string of the shared CommonsenseQA, CoS-E and
//! e-CARE samples (`../shared/data`; a missing folder fails under `CI=true`) and on tricky
//! hand-made texts: every verdict and every returned value must be the same.

use super::*;
use cb_model::text::{normalize, tokens, Normalized};

/// The old rules, word for word.
mod reference {
    use super::*;

    pub fn stem(word: &str) -> String {
        let root = ["ing", "ed", "s"]
            .iter()
            .find_map(|suffix| word.strip_suffix(suffix).filter(|r| r.chars().count() >= 3))
            .unwrap_or(word);
        root.chars().take(5).collect()
    }

    pub fn content_stems(text: &str) -> rustc_hash::FxHashSet<String> {
        tokens(text)
            .iter()
            .filter(|w| !is_function_word(w))
            .map(|w| stem(w))
            .collect()
    }

    pub fn added_words(context: &str, given: &str) -> Vec<String> {
        let have = content_stems(given);
        let mut seen = rustc_hash::FxHashSet::default();
        let mut out: Vec<String> = Vec::new();
        for w in tokens(context) {
            if !is_function_word(&w) && !have.contains(&stem(&w)) && seen.insert(w.clone()) {
                out.push(w);
            }
        }
        out
    }

    pub fn restates(context: &str, negative_answer: &str, given: &[&str]) -> bool {
        let mut known = format!("{negative_answer}\n{}", TASK_WORDS.join(" "));
        for g in given {
            known.push('\n');
            known.push_str(g);
        }
        !normalize(context).is_empty()
            && !normalize(negative_answer).is_empty()
            && added_words(context, &known).len() < RESTATE_MIN_ADDED
    }

    pub fn leans_to_golden(context: &str, negative: &str, golden: &str, given: &[&str]) -> bool {
        let known: rustc_hash::FxHashSet<String> =
            given.iter().flat_map(|g| content_stems(g)).collect();
        let said = content_stems(context);
        let (golden, negative) = (content_stems(golden), content_stems(negative));
        let used = |own: &rustc_hash::FxHashSet<String>, other: &rustc_hash::FxHashSet<String>| {
            own.iter()
                .filter(|w| !other.contains(*w) && !known.contains(*w) && said.contains(*w))
                .count()
        };
        let (g, n) = (used(&golden, &negative), used(&negative, &golden));
        g > 0 && g >= n
    }

    fn first_unshared(
        terms: &[&'static str],
        answer: &str,
        material: &str,
    ) -> Option<&'static str> {
        let answer = Normalized::new(answer);
        let given = Normalized::new(material);
        terms.iter().copied().find(|t| {
            let n = normalize(t);
            answer.contains_normalized(&n) && !given.contains_normalized(&n)
        })
    }

    pub fn talks_about_task(answer: &str, material: &str) -> Option<&'static str> {
        let starts: Vec<String> = answer.split(['.', '!', '?', '\n']).map(normalize).collect();
        TASK_TALK_OPENINGS
            .iter()
            .find(|o| {
                let o = format!("{} ", normalize(o));
                starts.iter().any(|s| s.starts_with(&o))
            })
            .copied()
            .or_else(|| first_unshared(TASK_TALK, answer, material))
    }

    pub fn denies(answer: &str, material: &str) -> Option<&'static str> {
        first_unshared(DENIALS, answer, material)
    }

    pub fn echoed_term(answer: &str, material: &str) -> Option<&'static str> {
        first_unshared(PROMPT_TERMS, answer, material)
    }

    pub fn language(text: &str) -> Option<Language> {
        let mut letters = 0usize;
        let mut scripts: Vec<(&'static str, usize)> = Vec::new();
        for c in text.chars().filter(|c| c.is_alphabetic()) {
            letters += 1;
            if let Some(s) = script(c) {
                match scripts.iter_mut().find(|(n, _)| *n == s) {
                    Some(e) => e.1 += 1,
                    None => scripts.push((s, 1)),
                }
            }
        }
        if let Some(&(s, n)) = scripts.iter().max_by_key(|(_, n)| *n) {
            if n >= 4 && 2 * n > letters {
                return Some(Language::Script(s));
            }
        }
        let words = tokens(text);
        // Each word's lists, looked up once (a bit per list of `STOPWORDS`).
        let mut counts = [0usize; STOPWORDS.len()];
        let lists = stopword_lists();
        for w in &words {
            if let Some(&bits) = lists.get(w.as_str()) {
                for (i, n) in counts.iter_mut().enumerate() {
                    *n += usize::from(bits & (1 << i) != 0);
                }
            }
        }
        let mut hits: Vec<(Language, usize)> = STOPWORDS
            .iter()
            .zip(counts)
            .map(|((lang, _), n)| (*lang, n))
            .collect();
        hits.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        let (best, n) = hits[0];
        let second = hits[1].1;
        (n >= 3 && n * 10 >= words.len() && n >= 2 * second.max(1)).then_some(best)
    }

    pub fn other_language(answer: &str, source: &str) -> Option<(Language, Language)> {
        let a = language(answer)?;
        let s = language(source)?;
        (a != s).then_some((a, s))
    }

    pub fn echoed_label<'a>(answer: &str, labels: &[&'a str], material: &str) -> Option<&'a str> {
        let material = material.to_lowercase();
        for line in answer.lines() {
            if !line.trim().is_empty() && material.contains(&line.trim().to_lowercase()) {
                continue;
            }
            let l = line
                .trim()
                .trim_start_matches(|c: char| c.is_ascii_digit() || "-*•.) \"'`>#".contains(c));
            let Some((head, _)) = l.split_once(':') else {
                continue;
            };
            let head = head.trim().trim_end_matches(['"', '\'', ')']);
            let head = head.split(" (").next().unwrap_or(head).trim();
            if let Some(l) = labels.iter().find(|l| l.eq_ignore_ascii_case(head)) {
                return Some(l);
            }
        }
        None
    }
}

/// Hand-made texts the samples may lack: case, digits, articles and number words, task
/// words, characters whose lower case is longer or shorter or depends on the neighbours.
const TRICKY: &[&str] = &[
    "",
    " ",
    "...!?",
    "The",
    "THE AN A",
    "a",
    "The answer is: A cupboard",
    "the answer to the question is seven.",
    "The answer is.",
    "The Answer Is Rain\nthe answer to it",
    "One, two, THREE, twenty-one; Twenty",
    "ones twos thes ans sevens",
    "ÉCOLE école Écoles ÉCOLED",
    "İstanbul İİ istanbul İSTANBULS",
    "ΟΔΟΣ οδος ΟΔΟΣ. ΣΟΦΟΣ ΚΑΛΟΣ.ΑΛΦΑ",
    "Σ σ ς ΌΣΟΣ",
    "\u{212A}elvin \u{212A} K k",
    "東京 北京 漢字です 東京です",
    "emoji 😀 🎉 smile😀face",
    "ß STRASSE straße ẞ",
    "42 3.14 1,000 x2 2x",
    "umbrella umbrellas buses bus business",
    "raining rained rains rain grows grew growing",
    "Provide another reason that supports it; explain the explanation.",
    "This passage is in the passage of the original text, the wrong choice.",
    "It would not be the cause, it wouldn't; unlikely.",
    "Reference explanation: the other option\nCorrect answer: yes",
    "A: bank\nB: library\n- bakery: bread",
    "x",
];

fn sample_texts() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data");
    let mut out: Vec<String> = TRICKY.iter().map(|s| (*s).to_owned()).collect();
    for dir in ["commonsenseqa", "cos_e", "ecare"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "shared data folder {} is missing",
                root.join(dir).display()
            );
            continue;
        };
        let mut paths: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
        paths.sort();
        for path in paths
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        {
            for line in std::fs::read_to_string(path).unwrap().lines() {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                    collect_strings(&v, &mut out);
                }
            }
        }
    }
    out
}

fn collect_strings(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}

#[test]
#[allow(clippy::print_stderr)]
fn stems_are_the_strings_they_were() {
    let texts = sample_texts();
    let mut words = 0usize;
    for t in &texts {
        assert_eq!(language(t), reference::language(t), "language {t:?}");
        for w in tokens(t) {
            assert_eq!(stem(&w).as_str(), reference::stem(&w), "{w:?}");
            words += 1;
        }
        let mut new: Vec<String> = content_stems(t)
            .iter()
            .map(|s| s.as_str().to_owned())
            .collect();
        let mut old: Vec<String> = reference::content_stems(t).into_iter().collect();
        new.sort();
        old.sort();
        assert_eq!(new, old, "{t:?}");
    }
    assert!(words > 30_000, "{words}");
    eprintln!("stems: {} texts, {words} words compared", texts.len());
}

/// The checks of an answer `c` against `material` give what they gave before; whether it
/// talks about the task.
fn same_on_material(c: &str, material: &str, labels: &[&str]) -> bool {
    let a = reference::talks_about_task(c, material);
    assert_eq!(
        talks_about_task(c, material),
        a,
        "talks_about_task {c:?} {material:?}"
    );
    assert_eq!(
        denies(c, material),
        reference::denies(c, material),
        "denies {c:?}"
    );
    assert_eq!(
        other_language(c, material),
        reference::other_language(c, material),
        "other_language {c:?} {material:?}"
    );
    assert_eq!(
        echoed_term(c, material),
        reference::echoed_term(c, material),
        "echoed_term {c:?}"
    );
    assert_eq!(
        echoed_label(c, labels, material),
        reference::echoed_label(c, labels, material),
        "echoed_label {c:?}"
    );
    a.is_some()
}

#[test]
#[allow(clippy::print_stderr)]
fn checks_give_what_they_gave_before() {
    let texts = sample_texts();
    // Answers and options: the short texts.
    let short: Vec<&str> = texts
        .iter()
        .map(String::as_str)
        .filter(|t| t.split_whitespace().count() <= 5)
        .collect();
    assert!(!short.is_empty());
    let (mut cases, mut restated, mut leaning, mut talking) = (0usize, 0usize, 0usize, 0usize);
    for (i, t) in texts.iter().enumerate() {
        let negative = short[i % short.len()];
        let golden = short[(i * 7 + 1) % short.len()];
        let question = texts[(i * 3 + 2) % texts.len()].as_str();
        let contexts = [
            t.clone(),
            negative.to_owned(),
            format!("{question} {negative}"),
            format!("The answer is {negative}."),
            format!("{golden} because {negative}"),
            format!("{t} {golden}s"),
            format!("The {negative} should provide another reason. {golden}"),
        ];
        let givens: [&[&str]; 3] = [&[], &[question], &[question, t]];
        for c in &contexts {
            for given in givens {
                let r = reference::restates(c, negative, given);
                assert_eq!(
                    restates(c, negative, given),
                    r,
                    "restates {c:?} {negative:?} {given:?}"
                );
                restated += usize::from(r);
                let l = reference::leans_to_golden(c, negative, golden, given);
                assert_eq!(
                    leans_to_golden(c, negative, golden, given),
                    l,
                    "leans_to_golden {c:?} {negative:?} {golden:?} {given:?}"
                );
                leaning += usize::from(l);
                cases += 1;
            }
            let known = format!("{negative}\n{question}");
            assert_eq!(
                added_words(c, &known),
                reference::added_words(c, &known),
                "added_words {c:?}"
            );
            let labels = [negative, golden, "A", "Bakery", "Correct answer"];
            for material in ["", question, negative] {
                talking += usize::from(same_on_material(c, material, &labels));
            }
        }
    }
    // The verdicts both ways are exercised.
    assert!(
        restated > 1_000 && leaning > 1_000 && talking > 1_000,
        "{restated} {leaning} {talking}"
    );
    eprintln!(
        "checks: {} texts, {cases} restates/leans_to_golden cases ({restated} restate, {leaning} lean), {talking} talk about the task",
        texts.len()
    );
}
