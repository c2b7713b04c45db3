//! `conflictbench view` over a ConflictBank-style build: a row's page shows each conflicting
//! evidence beside the correct one (cause, style, claim, time or description, the replaced
//! object and the QA); the Rate page asks each conflicting evidence's three questions
//! (misleading, plausible, contradicts), refuses a post that leaves one out or names no
//! evidence, stores the contradiction answer in a ratings file migrated from before that
//! question, and the Agreement page counts it: Fleiss' kappa between raters and Cohen's
//! kappa against the reader's `conflict_*` verdicts, as computed by hand.

mod common;
#[path = "common/view.rs"]
mod view_common;

use serde_json::Value;
use std::path::Path;
use std::process::Command;
use view_common::{enc, first_row_link, get, request, sample_ids, start_viewer, unescape};

/// An offline ConflictBank-style build of the repository's PopQA sample into `out`; its rows.
fn offline_build(out: &Path) -> Vec<Value> {
    let o = Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .args([
            "build",
            "conflictbank",
            "--domains",
            "popqa",
            "--no-progress",
        ])
        .arg("--raw")
        .arg(common::repo().join("raw"))
        .arg("--out")
        .arg(out)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::text(&o));
    rows(out)
}

fn rows_file(out: &Path) -> std::path::PathBuf {
    out.join("conflictbank/popqa/conflictbank.jsonl")
}

fn rows(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(rows_file(out))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The text of the page between `start` and the next `end`.
fn between<'a>(page: &'a str, start: &str, end: &str) -> &'a str {
    let from = page
        .split_once(start)
        .unwrap_or_else(|| panic!("no {start} in {page}"))
        .1;
    from.split(end).next().unwrap()
}

/// minijinja's escaping of a text.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#x27;")
        .replace('/', "&#x2f;")
}

#[test]
fn a_row_shows_each_conflicting_evidence_beside_the_correct_one() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("gen");
    offline_build(&out);
    // A claim with markup and a direction control: escaped and marked on the page.
    let mut text = String::new();
    for mut r in rows(&out) {
        let claim = format!(
            "{} <i>odd</i>\u{202e}",
            r["conflicts"][0]["claim"].as_str().unwrap()
        );
        r["conflicts"][0]["claim"] = Value::from(claim);
        text.push_str(&format!("{r}\n"));
    }
    std::fs::write(rows_file(&out), text).unwrap();
    let rows = rows(&out);
    let v = start_viewer(&[
        out.to_str().unwrap(),
        "--ratings",
        d.path().join("r.sqlite").to_str().unwrap(),
    ]);
    let link = first_row_link(v.port, "/rows");
    let (status, page) = get(v.port, &link);
    assert_eq!(status, 200, "{page}");
    let id = unescape(between(&page, "<span id=\"cb-id\">", "</span>"));
    let row = rows
        .iter()
        .find(|r| id.ends_with(r["id"].as_str().unwrap()))
        .unwrap_or_else(|| panic!("no row {id}"));
    let fact = between(&page, "id=\"cb-fact\"", "</p>");
    for f in ["subject", "relation", "object"] {
        assert!(
            fact.contains(&esc(row["fact"][f].as_str().unwrap())),
            "{f}: {fact}"
        );
    }
    let replaced = esc(row["replaced_object"].as_str().unwrap());
    assert!(
        fact.contains(&format!("id=\"cb-replaced\">{replaced}<")),
        "{fact}"
    );
    assert!(page.contains(&esc(row["qa"]["question"].as_str().unwrap())));
    // The options labelled: the true object, the replaced object, the uncertain answer.
    let options = between(&page, "id=\"cb-options\">", "</ol>");
    let letter = |l: &str| (l.as_bytes()[0] - b'A') as usize;
    let items: Vec<&str> = options.split("<li").skip(1).collect();
    for (label, tag) in [
        ("true_label", "true object"),
        ("replaced_label", "replaced object"),
        ("uncertain_label", "uncertain"),
    ] {
        let k = letter(row["qa"][label].as_str().unwrap());
        let text = esc(row["qa"]["options"][k].as_str().unwrap());
        assert!(
            items[k].contains(&text) && items[k].contains(tag),
            "{label}: {}",
            items[k]
        );
    }
    // Each cause its own section: the correct evidence beside it, with its cause, style,
    // claim and what the cause adds.
    let correct = esc(row["correct"]["text"].as_str().unwrap());
    let styles = [
        ("news", "news report"),
        ("book", "book narrative"),
        ("wikipedia", "Wikipedia entry"),
    ];
    let style = |s: &Value| styles.iter().find(|(k, _)| s == k).unwrap().1;
    for c in row["conflicts"].as_array().unwrap() {
        let cause = c["cause"].as_str().unwrap();
        let section = between(&page, &format!("id=\"cb-evidence-{cause}\">"), "</section>");
        let head = between(section, "<h3>", "</h3>");
        assert!(head.starts_with(cause), "{head}");
        assert!(
            head.contains(&format!("conflicting evidence ({})", style(&c["style"]))),
            "{head}"
        );
        assert!(head.contains(&format!(
            "correct evidence ({})",
            style(&row["correct"]["style"])
        )));
        let claim = esc(c["claim"].as_str().unwrap()).replace('\u{202e}', "[U+202E]");
        assert!(section.contains(&claim), "{section}");
        assert!(section.contains(&esc(row["correct"]["claim"].as_str().unwrap())));
        // The two texts side by side (the edited side may mark words; its words are there).
        let sides = between(section, "class=\"cb-diff\">", "<div class=\"cb-meta");
        let (left, right) = sides.split_once("cb-edited").unwrap();
        assert!(left.contains(&correct), "{left}");
        let words = |s: &str| -> String {
            let mut t = String::new();
            let mut tag = false;
            for ch in s.chars() {
                match ch {
                    '<' => tag = true,
                    '>' => tag = false,
                    _ if !tag => t.push(ch),
                    _ => {}
                }
            }
            t.split_whitespace().collect::<Vec<_>>().join(" ")
        };
        let text = esc(c["text"].as_str().unwrap());
        assert!(words(right).contains(&text), "{cause}: {right}");
        for label in ["correct evidence".to_owned(), format!("{cause} evidence")] {
            assert!(
                sides.contains(&format!("class=\"cb-label\">{label}<")),
                "{sides}"
            );
        }
        match cause {
            "temporal" => assert!(section.contains(&format!(
                "class=\"cb-time\">{}<",
                esc(c["time"].as_str().unwrap())
            ))),
            "semantic" => assert!(section.contains(&esc(c["description"].as_str().unwrap()))),
            _ => {}
        }
    }
    // The page runs no script; the planted markup and control are text.
    assert!(
        !page.contains("<script") && !page.contains("<i>odd"),
        "{page}"
    );
    assert!(!page.contains('\u{202e}') && page.contains("&lt;i&gt;odd&lt;&#x2f;i&gt;[U+202E]"));
}

/// The reader's `conflict_*` verdicts on the row at `k` of the sample: row 0 confirms every
/// conflict; row 1 the misinformation one alone.
fn plant_verdicts(out: &Path, sample: &[String]) {
    let mut text = String::new();
    for mut r in rows(out) {
        let id = r["id"].as_str().unwrap().to_owned();
        if let Some(k) = sample.iter().position(|s| s.ends_with(&format!("#{id}"))) {
            let said = [[true, true, true], [true, false, false]][k];
            let checks: Vec<Value> = ["misinformation", "temporal", "semantic"]
                .iter()
                .zip(said)
                .map(|(c, p)| serde_json::json!({"check": format!("conflict_{c}_evidence"), "passed": p}))
                .collect();
            r["reader"] = serde_json::json!({"model": "r", "checks": checks});
        }
        text.push_str(&serde_json::to_string(&r).unwrap());
        text.push('\n');
    }
    std::fs::write(rows_file(out), text).unwrap();
}

fn rate_body(token: &str, rater: &str, item: &str, cause: &str, contradicts: &str) -> String {
    format!(
        "form_token={token}&rater={rater}&item_id={}&cause={cause}&misleading=highly&plausible=plausible&contradicts={contradicts}&comment=",
        enc(item)
    )
}

/// A ratings file of the viewer from before the contradiction question: both scales, no
/// `contradicts` column; w rated the first row's misinformation evidence.
fn old_ratings(path: &Path, first: &str) {
    let c = rusqlite::Connection::open(path).unwrap();
    c.execute_batch(
        "CREATE TABLE ratings (rater TEXT NOT NULL, item_id TEXT NOT NULL,
         misleading TEXT NOT NULL, distinguishable INTEGER, comment TEXT NOT NULL,
         updated_unix INTEGER NOT NULL, plausible TEXT, PRIMARY KEY (rater, item_id))",
    )
    .unwrap();
    c.execute(
        "INSERT INTO ratings VALUES ('w', ?1, 'not', NULL, 'before', 0, 'plausible')",
        [format!("{first}#misinformation")],
    )
    .unwrap();
}

/// Two raters answer the six conflicting evidences of a two-row sample:
///
/// ```text
///        row 0: mis tmp sem   row 1: mis tmp sem
///   x           yes yes no           yes no  yes
///   y           yes no  no           yes no  yes
/// ```
///
/// Fleiss: per evidence P = 1, 0, 1, 1, 1, 1, P̄ = 5/6; yes share 7/12, P_e = 74/144;
/// kappa = (120/144 - 74/144) / (70/144) = 23/35 = 0.6571.
///
/// Against the reader (row 0: yes yes yes; row 1: yes no no), the people's strict majority
/// (row 0's temporal a tie, left out): (yes, yes) (no, yes) (yes, yes) (no, no) (yes, no);
/// p_o = 3/5, both yes 3/5 of the time: p_e = 13/25, kappa = (2/25) / (12/25) = 1/6.
#[test]
fn the_contradiction_question_is_asked_stored_migrated_and_counted() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("gen");
    offline_build(&out);
    let ratings = d.path().join("ratings.sqlite");
    let args = [
        out.to_str().unwrap(),
        "--sample",
        "2",
        "--ratings",
        ratings.to_str().unwrap(),
    ];
    let sample = sample_ids(start_viewer(&args).port);
    assert_eq!(sample.len(), 2);
    plant_verdicts(&out, &sample);
    old_ratings(&ratings, &sample[0]);
    let v = start_viewer(&args);
    assert_eq!(
        sample_ids(v.port),
        sample,
        "the sample is drawn blind to the verdicts"
    );
    // The Rate page: the first evidence not rated, its three questions.
    let (status, page) = get(v.port, "/rate?rater=x");
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("<strong id=\"cb-cause\">misinformation</strong>"),
        "{page}"
    );
    assert!(page.contains("id=\"cb-evidence-misinformation\""));
    for q in [
        "name=\"misleading\" value=\"highly\"",
        "name=\"plausible\" value=\"plausible\"",
        "name=\"contradicts\" value=\"yes\"",
        "name=\"contradicts\" value=\"no\"",
    ] {
        assert!(page.contains(q), "{q}");
    }
    assert!(!page.contains("name=\"distinguishable\""));
    let token = between(&page, "name=\"form_token\" value=\"", "\"").to_owned();
    // Careless posts store nothing and say why.
    let good = rate_body(&token, "x", &sample[0], "misinformation", "yes");
    for (bad, says) in [
        (
            good.replace("&contradicts=yes", ""),
            "contradicts (yes or no) is missing",
        ),
        (
            good.replace("contradicts=yes", "contradicts=maybe"),
            "contradicts \"maybe\" is not yes or no",
        ),
        (
            good.replace("cause=misinformation", "cause=political"),
            "cause \"political\" is not one of",
        ),
        (
            good.replace("&cause=misinformation", ""),
            "a rating names the cause of the conflicting evidence",
        ),
        (
            format!("{good}&distinguishable=no"),
            "the answer-set question is not asked",
        ),
        (
            good.replace("plausible=plausible", "plausible="),
            "plausible \"\"",
        ),
    ] {
        let (status, said) = request(v.port, "POST", "/rate", &[], &bad);
        assert_eq!(status, 400, "{bad}: {said}");
        assert!(unescape(&said).contains(says), "{says}: {said}");
    }
    assert_eq!(stored(&ratings).len(), 1, "only w's old rating");
    let answers = [
        ("x", ["yes", "yes", "no", "yes", "no", "yes"]),
        ("y", ["yes", "no", "no", "yes", "no", "yes"]),
    ];
    for (rater, said) in answers {
        for (k, a) in said.iter().enumerate() {
            let cause = ["misinformation", "temporal", "semantic"][k % 3];
            let body = rate_body(&token, rater, &sample[k / 3], cause, a);
            let (status, page) = request(v.port, "POST", "/rate", &[], &body);
            assert_eq!(status, 303, "{page}");
        }
    }
    // Stored under ITEM#cause with the answer; w's old rating kept, with no answer.
    let got = stored(&ratings);
    assert_eq!(got.len(), 13);
    let answer = |rater: &str, item: &str, cause: &str| {
        let id = format!("{item}#{cause}");
        got.iter()
            .find(|(r, i, _)| r == rater && *i == id)
            .unwrap_or_else(|| panic!("no {rater} {id} in {got:?}"))
            .2
    };
    assert_eq!(answer("w", &sample[0], "misinformation"), None);
    assert_eq!(answer("x", &sample[0], "misinformation"), Some(true));
    assert_eq!(answer("x", &sample[0], "semantic"), Some(false));
    assert_eq!(answer("y", &sample[0], "temporal"), Some(false));
    // x has rated every evidence: the page says so.
    let (_, page) = get(v.port, "/rate?rater=x");
    assert!(
        page.contains("<span id=\"cb-done\">2</span> of 2"),
        "{page}"
    );
    assert!(page.contains("id=\"cb-finished\""));
    // The figures, w set aside (w never answered the question).
    let (status, page) = get(v.port, "/agreement?among=x&among=y");
    assert_eq!(status, 200, "{page}");
    let fleiss = between(&page, "id=\"cb-fleiss-contradicts\">", "</p>");
    assert!(
        fleiss.contains("0.6571") && fleiss.contains("over 6 evidence(s) that all 2 raters"),
        "{fleiss}"
    );
    let cohen = between(&page, "<td>contradicts the correct evidence</td>", "</tr>");
    assert!(
        cohen.contains(">5<") && cohen.contains("0.600") && cohen.contains("0.1667"),
        "{cohen}"
    );
    // Every rater counted: w's rating has no answer, so no evidence is answered by all.
    let (_, page) = get(v.port, "/agreement");
    let fleiss = between(&page, "id=\"cb-fleiss-contradicts\">", "</p>");
    assert!(fleiss.starts_with("Not measured yet"), "{fleiss}");
}

/// Every rating stored: rater, item id, contradiction answer.
fn stored(path: &Path) -> Vec<(String, String, Option<bool>)> {
    let c = rusqlite::Connection::open(path).unwrap();
    let has: i64 = c
        .query_row(
            "SELECT count(*) FROM pragma_table_info('ratings') WHERE name = 'contradicts'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let col = if has > 0 { "contradicts" } else { "NULL" };
    let mut st = c
        .prepare(&format!(
            "SELECT rater, item_id, {col} FROM ratings ORDER BY rater, item_id"
        ))
        .unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}
