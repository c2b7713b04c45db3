//! `conflictbench view` over HTTP: bad input is exit 2 before anything is bound or written;
//! beyond loopback every route refuses a request without the token (on loopback, one for
//! another host); a post from another page stores nothing and says why; every answer carries
//! the same headers; every submitted rating survives a killed server; two raters rating at
//! once lose nothing; the pages list, filter and search what the files hold, check their page
//! numbers, mark hidden characters and keep a row's link when files come; a bad file is
//! reported once per change; ratings that cannot be written leave the pages reading; the
//! rating sample of a build read by a scripted reader holds the rows it kept and those it
//! refused, half and half, shown alike, and the page's reader-versus-people kappa over both is
//! the one computed by hand, and a refused RECALL sample's rows are drawn and rated as rows of
//! their files; a rater set aside leaves Fleiss' kappa to the others.

mod common;
#[path = "common/view.rs"]
mod view_common;

use std::path::Path;
use std::process::Command;
use view_common::{
    exchange, first_row_link, form_token, get, rate, rating_body, read_build, request, sample_ids,
    start_viewer, start_viewer_as, view_command,
};

/// `conflictbench view ARGS`, expected to exit at once; killed (and the test failed) if it
/// serves instead.
fn view(args: &[&str]) -> std::process::Output {
    view_as(&[], args)
}

/// [`view`] run through `prefix` (`setpriv ...`, or nothing).
fn view_as(prefix: &[&str], args: &[&str]) -> std::process::Output {
    let mut child = view_command(prefix)
        .args(args)
        .env_remove("CONFLICTBENCH_VIEW_TOKEN")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("view {args:?} did not exit");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn offline_build(out: &Path) {
    let raw = common::repo().join("raw");
    let o = Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .args([
            "build",
            "kre",
            "--domains",
            "squad",
            "--no-progress",
            "--raw",
        ])
        .arg(&raw)
        .arg("--out")
        .arg(out)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::text(&o));
}

#[test]
fn bad_input_is_exit_2_with_a_sentence_and_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("gen");
    offline_build(&out);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let o = out.to_str().unwrap();
    let missing = d.path().join("nothing-here");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![missing.to_str().unwrap()], "does not exist"),
        (
            vec![o, "--token", "abcdefghijklmnopqrstuv"],
            "--token guards a --host other than loopback",
        ),
        (
            vec![o, "--host", "0.0.0.0", "--token", "short"],
            "--token must be at least 16",
        ),
        (vec![o, "--host", "example.org"], "not an IP address"),
        (
            vec![o, "--sample", "0"],
            "0 is too small: must be a whole number from 1 to 1000000",
        ),
        (
            vec![o, "--port", &port],
            "is in use; choose another with --port",
        ),
        (
            vec![o, "--ratings", "/no/such/folder/r.sqlite"],
            "--ratings: the folder",
        ),
        (vec![o, "--ratings", o], "names a folder"),
        (vec![o, "--cache", missing.to_str().unwrap()], "--cache"),
    ];
    // What cannot be served is refused before the port is bound: each names its file, not
    // the port in use.
    let source = d.path().join("source");
    std::fs::create_dir_all(&source).unwrap();
    let csqa = source.join("dev_rand_split.jsonl");
    std::fs::write(&csqa, "{\"id\": \"1a\", \"question\": \"Where is a cup kept?\", \"choices\": {\"label\": [\"A\", \"B\"], \"text\": [\"cupboard\", \"oven\"]}, \"answerKey\": \"A\"}\n").unwrap();
    let empty = d.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let garbage = d.path().join("garbage.sqlite");
    std::fs::write(&garbage, "these are not the ratings you are looking for\n").unwrap();
    let other_cache = d.path().join("other-cache.sqlite");
    rusqlite::Connection::open(&other_cache)
        .unwrap()
        .execute_batch("CREATE TABLE responses (key TEXT)")
        .unwrap();
    let other_db = d.path().join("other.sqlite");
    rusqlite::Connection::open(&other_db)
        .unwrap()
        .execute_batch("CREATE TABLE notes (text TEXT)")
        .unwrap();
    let (csqa_s, source_s, empty_s) = (
        csqa.to_str().unwrap(),
        source.to_str().unwrap(),
        empty.to_str().unwrap(),
    );
    let (garbage_s, other_s) = (garbage.to_str().unwrap(), other_db.to_str().unwrap());
    let other_cache_s = other_cache.to_str().unwrap();
    let refused: Vec<(Vec<&str>, &str)> = vec![
        (vec![csqa_s], "dev_rand_split.jsonl: its first record is not a benchmark row"),
        (vec![source_s], "holds no benchmark rows"),
        (vec![empty_s], "empty.jsonl: holds no benchmark rows"),
        (vec![o, "--ratings", garbage_s], "garbage.sqlite: not a ratings file"),
        (vec![o, "--ratings", other_s], "other.sqlite: not a ratings file of the viewer: it holds no ratings table (tables: notes)"),
        (vec![o, "--cache", garbage_s], "garbage.sqlite: not a response cache of conflictbench"),
        (vec![o, "--cache", other_cache_s], "other-cache.sqlite: not a response cache of conflictbench: cache: no such column"),
    ];
    let cases = cases
        .into_iter()
        .chain(refused.into_iter().map(|(mut args, said)| {
            args.extend(["--port", port.as_str()]);
            (args, said)
        }));
    for (args, said) in cases {
        let r = view(&args);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(said), "{args:?}: {err}");
        // One sentence, after the audit's warnings on the files it did not read (a value
        // clap refuses is followed by its pointer to --help).
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with("For more information, try"))
            .collect();
        assert!(
            lines[..lines.len() - 1]
                .iter()
                .all(|l| l.contains("WARN") && l.contains("not audited")),
            "{args:?}: one sentence: {err}"
        );
    }
    // A malformed row names its file and line.
    let rows = std::fs::read_to_string(out.join("kre/squad/squad.jsonl")).unwrap();
    let first = rows.lines().next().unwrap();
    std::fs::write(
        out.join("kre/squad/squad.jsonl"),
        format!("{first}\n{{\"question\": \n"),
    )
    .unwrap();
    let r = view(&[o, "--port", "0"]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(
        err.contains("squad.jsonl") && err.contains("line 2"),
        "{err}"
    );
    assert!(!out.join("view-ratings.sqlite").exists());
    drop(taken);
}

/// Every route, with a method and a body.
const ROUTES: [(&str, &str, &str); 11] = [
    ("GET", "/", ""),
    ("GET", "/rows", ""),
    ("GET", "/rows?q=mount", ""),
    ("GET", "/row?file=kre%2Fsquad%2Fsquad.jsonl&n=0", ""),
    ("GET", "/rejects", ""),
    ("GET", "/reject/0/0", ""),
    ("GET", "/live", ""),
    ("GET", "/rate?rater=x", ""),
    ("POST", "/rate", "rater=x&item_id=y&misleading=not"),
    ("GET", "/agreement", ""),
    ("GET", "/export?rater=x", ""),
];

#[test]
fn beyond_loopback_every_route_refuses_a_request_without_the_token() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("gen");
    offline_build(&out);
    let token = "tok_0123456789abcdef";
    let v = start_viewer(&[out.to_str().unwrap(), "--host", "0.0.0.0", "--token", token]);
    assert!(
        v.address.ends_with(&format!("?token={token}")),
        "{}",
        v.address
    );
    let bearer = format!("Authorization: Bearer {token}");
    let wrong = "Authorization: Bearer tok_0123456789abcdeX";
    let cookie = format!("Cookie: cb_view_token={token}");
    for (method, path, body) in ROUTES {
        for headers in [vec![], vec![wrong], vec!["Cookie: cb_view_token=nope"]] {
            let (status, text) = request(v.port, method, path, &headers, body);
            assert_eq!(status, 401, "{method} {path} {headers:?}: {text}");
        }
        for headers in [vec![bearer.as_str()], vec![cookie.as_str()]] {
            let (status, text) = request(v.port, method, path, &headers, body);
            assert_ne!(status, 401, "{method} {path}: {text}");
        }
    }
    let (status, _) = get(v.port, &format!("/?token={token}"));
    assert_eq!(status, 200);
    // Without --token, a random one is printed and required.
    let v2 = start_viewer(&[out.to_str().unwrap(), "--host", "0.0.0.0"]);
    let printed = v2.address.split("?token=").nth(1).unwrap().to_owned();
    assert_eq!(printed.len(), 32, "{}", v2.address);
    assert_eq!(get(v2.port, "/").0, 401);
    assert_eq!(get(v2.port, &format!("/?token={printed}")).0, 200);
    // Nothing was written: no rating was accepted without the token.
    assert!(!out.join("view-ratings.sqlite").exists());
}

#[test]
fn on_loopback_a_request_for_another_host_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("gen");
    offline_build(&out);
    let v = start_viewer(&[out.to_str().unwrap()]);
    assert_eq!(v.address, format!("http://127.0.0.1:{}/", v.port));
    assert_eq!(get(v.port, "/").0, 200);
    for (method, path, body) in ROUTES {
        let (status, _) = request(v.port, method, path, &["Host: attacker.example"], body);
        assert_eq!(status, 403, "{method} {path}");
    }
}

fn ratings_in(file: &Path) -> Vec<(String, String, String)> {
    let c = rusqlite::Connection::open(file).unwrap();
    let mut st = c
        .prepare("SELECT rater, item_id, misleading FROM ratings ORDER BY rater, item_id")
        .unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn two_raters_at_once_lose_nothing_and_a_killed_server_keeps_every_rating() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("gen");
    let reader = cb_mock::MockServer::start(view_common::follower()).await;
    read_build(&out, &reader).await;
    let mut v = start_viewer(&[out.to_str().unwrap(), "--sample", "8", "--seed", "3"]);
    let port = v.port;
    let ids = sample_ids(port);
    assert!(ids.len() >= 5, "{ids:?}");
    let levels = ["not", "somewhat", "highly"];
    // Two raters in two threads (two tabs), each rating every item, interleaved.
    let threads: Vec<_> = ["ann", "bob"]
        .into_iter()
        .map(|rater| {
            let ids = ids.clone();
            std::thread::spawn(move || {
                for (k, id) in ids.iter().enumerate() {
                    assert_eq!(rate(port, rater, id, levels[k % 3], "no"), 303);
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    // A third rater goes on while the server is killed: every answered rating is kept.
    let ids2 = ids.clone();
    let carl = std::thread::spawn(move || {
        let mut stored = Vec::new();
        for round in 0..200 {
            let id = &ids2[round % ids2.len()];
            let level = levels[round % 3];
            let ok = std::panic::catch_unwind(|| rate(port, "carl", id, level, "yes"));
            match ok {
                Ok(303) => stored.push((id.clone(), level)),
                _ => break,
            }
        }
        stored
    });
    std::thread::sleep(std::time::Duration::from_millis(150));
    v.child.kill().unwrap();
    v.child.wait().unwrap();
    let stored = carl.join().unwrap();
    let file = out.join("view-ratings.sqlite");
    let got = ratings_in(&file);
    for rater in ["ann", "bob"] {
        let mine: Vec<_> = got.iter().filter(|r| r.0 == rater).collect();
        assert_eq!(mine.len(), ids.len(), "{rater}: {mine:?}");
        for (k, id) in ids.iter().enumerate() {
            assert!(
                mine.iter().any(|r| &r.1 == id && r.2 == levels[k % 3]),
                "{rater} {id}"
            );
        }
    }
    assert!(!stored.is_empty(), "carl rated nothing before the kill");
    // The last answered rating of each item carl rated is the one in the file.
    let mut last = std::collections::BTreeMap::new();
    for (id, level) in &stored {
        last.insert(id.clone(), *level);
    }
    for (id, level) in last {
        let row = got.iter().find(|r| r.0 == "carl" && r.1 == id);
        let in_file = row.map(|r| r.2.as_str());
        // A rating sent after the last answered one may have been stored too before the kill.
        assert!(in_file.is_some(), "carl's rating of {id} was lost");
        let _ = level;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn lists_filter_and_search_what_the_files_hold() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("gen");
    let reader = cb_mock::MockServer::start(view_common::follower()).await;
    read_build(&out, &reader).await;
    view_common::plant(&out);
    let v = start_viewer(&[out.to_str().unwrap()]);
    let rows = common::read_jsonl(&out.join("kre/squad/squad.jsonl"));
    let rejects = common::read_jsonl(&out.join("kre/squad/rejects.jsonl"));
    let (_, page) = get(v.port, &format!("/rows?q={}", view_common::enc("planted-")));
    assert!(page.contains("2 row(s)"), "{page}");
    // Each reason's filter lists exactly its rejects.
    let (_, overview) = get(v.port, "/");
    let reasons: std::collections::BTreeSet<&str> = rejects
        .iter()
        .map(|r| r["reason"].as_str().unwrap())
        .collect();
    assert!(reasons.contains("unanswerable"), "{reasons:?}");
    let squad = overview
        .split("href=\"/rows?domain=")
        .skip(1)
        .find(|s| {
            s.split('<')
                .next()
                .is_some_and(|l| l.ends_with("kre&#x2f;squad"))
        })
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_owned();
    for reason in &reasons {
        let index = overview
            .split("href=\"/rejects?reason=")
            .skip(1)
            .find(|s| {
                s.split('<')
                    .next()
                    .is_some_and(|l| l.ends_with(&format!(">{reason}")))
            })
            .and_then(|s| s.split('"').next())
            .unwrap_or_else(|| panic!("no link for {reason}"));
        let want = rejects.iter().filter(|r| r["reason"] == *reason).count();
        let (_, p) = get(v.port, &format!("/rejects?domain={squad}&reason={index}"));
        assert!(p.contains(&format!("{want} reject(s)")), "{reason}: {p}");
    }
    // Search finds the rows that hold a word, case aside, and no other.
    let word = "everest";
    let all: Vec<serde_json::Value> = ["squad", "cose", "ecare"]
        .iter()
        .flat_map(|d| common::read_jsonl(&out.join(format!("kre/{d}/{d}.jsonl"))))
        .collect();
    let want = all
        .iter()
        .filter(|r| r.to_string().to_lowercase().contains(word))
        .count();
    assert!(want > 0 && want < all.len() && rows.len() < all.len());
    let (_, p) = get(v.port, "/rows?q=EVEREST");
    assert!(p.contains(&format!("{want} row(s)")), "{p}");
    // A row's lineage opens to the reader's calls from the cache.
    let (_, p) = get(v.port, &first_row_link(v.port, "/rows"));
    assert!(p.contains("cb-prompt") && p.contains("cb-answer"), "{p}");
}

/// The value of header `name` in an answer's head.
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_post_from_another_page_stores_nothing_and_says_why() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("gen");
    let reader = cb_mock::MockServer::start(view_common::follower()).await;
    read_build(&out, &reader).await;
    let v = start_viewer(&[out.to_str().unwrap(), "--sample", "4"]);
    let ids = sample_ids(v.port);
    let token = form_token(v.port);
    let own = format!("Origin: http://127.0.0.1:{}", v.port);
    let other_port = "Origin: http://127.0.0.1:1".to_owned();
    let forged = |headers: &[&str], token: &str| {
        let body = rating_body(token, "mallory", &ids[0], "highly", "yes");
        request(v.port, "POST", "/rate", headers, &body)
    };
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (
            vec![other_port.as_str()],
            token.as_str(),
            "not of http://127.0.0.1:",
        ),
        (vec!["Origin: null"], token.as_str(), "from a page of null"),
        (
            vec!["Sec-Fetch-Site: cross-site"],
            token.as_str(),
            "Sec-Fetch-Site: cross-site",
        ),
        (
            vec!["Sec-Fetch-Site: same-site", own.as_str()],
            token.as_str(),
            "Sec-Fetch-Site: same-site",
        ),
        (vec![own.as_str()], "", "carries no token of this viewer"),
        (
            vec![own.as_str()],
            "0123456789abcdef0123456789abcdef",
            "carries no token of this viewer",
        ),
    ];
    for (headers, token, why) in cases {
        let (status, text) = forged(&headers, token);
        assert_eq!(status, 403, "{headers:?}: {text}");
        assert!(
            text.contains(why) && text.contains("nothing was stored"),
            "{headers:?}: {text}"
        );
    }
    assert!(
        !out.join("view-ratings.sqlite").exists(),
        "a refused post stored nothing"
    );
    // The viewer's own page, as a browser sends it, is taken.
    let same = ["Sec-Fetch-Site: same-origin", own.as_str()];
    assert_eq!(forged(&same, &token).0, 303);
    assert_eq!(ratings_in(&out.join("view-ratings.sqlite")).len(), 1);

    // Beyond loopback, the token's cookie goes with a page of another port of the same host
    // (cookies ignore ports): the origin still refuses it.
    let t = "tok_0123456789abcdef";
    let v2 = start_viewer(&[
        out.to_str().unwrap(),
        "--host",
        "0.0.0.0",
        "--token",
        t,
        "--sample",
        "4",
    ]);
    let cookie = format!("Cookie: cb_view_token={t}");
    let (_, page) = request(
        v2.port,
        "GET",
        "/rate?rater=x&item=0&distinguishable=no",
        &[&cookie],
        "",
    );
    let token2 = page
        .split("name=\"form_token\" value=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    assert_ne!(token2, token, "a form token per server");
    let body = rating_body(token2, "mallory", &ids[1], "not", "no");
    let (status, text) = request(
        v2.port,
        "POST",
        "/rate",
        &[&cookie, &other_port, "Sec-Fetch-Site: same-site"],
        &body,
    );
    assert_eq!(status, 403, "{text}");
    let (status, text) = request(
        v2.port,
        "POST",
        "/rate",
        &[&cookie],
        &rating_body(&token, "mallory", &ids[1], "not", "no"),
    );
    assert_eq!(status, 403, "the other server's form token: {text}");
    assert_eq!(ratings_in(&out.join("view-ratings.sqlite")).len(), 1);
}

#[test]
fn every_answer_refusals_included_carries_the_same_headers() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("gen");
    offline_build(&out);
    let v = start_viewer(&[out.to_str().unwrap()]);
    let t = "tok_0123456789abcdef";
    let v2 = start_viewer(&[out.to_str().unwrap(), "--host", "0.0.0.0", "--token", t]);
    let answers = [
        (v.port, "/", vec![], 200),
        (v.port, "/no-such-page", vec![], 404),
        (v.port, "/row?file=nothing.jsonl&n=0", vec![], 404),
        (v.port, "/rows?check=nonsense", vec![], 400),
        (v.port, "/", vec!["Host: attacker.example"], 403),
        (v2.port, "/", vec![], 401),
    ];
    let mut seen = Vec::new();
    for (port, path, headers, want) in answers {
        let (status, head, _) = exchange(port, "GET", path, &headers, "");
        assert_eq!(status, want, "{path}: {head}");
        let h: Vec<Option<&str>> = [
            "content-security-policy",
            "x-content-type-options",
            "referrer-policy",
            "cache-control",
            "x-frame-options",
        ]
        .iter()
        .map(|n| header(&head, n))
        .collect();
        assert!(h.iter().all(Option::is_some), "{path} {status}: {head}");
        seen.push(h.iter().map(|x| x.unwrap().to_owned()).collect::<Vec<_>>());
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]), "{seen:?}");
    assert!(seen[0][0].contains("default-src 'none'"));
}

#[tokio::test(flavor = "multi_thread")]
async fn pages_are_checked_hidden_characters_marked_and_a_link_stays_its_row() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("gen");
    let reader = cb_mock::MockServer::start(view_common::follower()).await;
    read_build(&out, &reader).await;
    view_common::plant(&out);
    let v = start_viewer(&[out.to_str().unwrap()]);
    // Page numbers: past the last, out of range, not a number.
    let (status, text) = get(v.port, "/rows?q=planted&page=1");
    assert_eq!(status, 404, "{text}");
    assert!(text.contains("pages run from 0 to 0"), "{text}");
    assert_eq!(get(v.port, &format!("/rows?page={}", usize::MAX)).0, 404);
    assert_eq!(get(v.port, "/rejects?page=99999").0, 404);
    assert_eq!(get(v.port, "/rows?page=-1").0, 400);
    // A direction override is a visible mark, never obeyed, on the list, the row and the
    // rating page.
    let link = first_row_link(v.port, "/rows?q=planted-0");
    for path in ["/rows?q=planted".to_owned(), link.clone()] {
        let (status, page) = get(v.port, &path);
        assert_eq!(status, 200);
        assert!(
            page.contains("[U+202E]gnirts desrever[U+202C]"),
            "{path}: {page}"
        );
        assert!(
            !page.contains('\u{202e}') && !page.contains('\u{202c}'),
            "{path}"
        );
    }
    // The row's link names the same row once a folder that sorts first appears.
    let before = get(v.port, &link).1;
    assert!(before.contains("planted-0"), "{before}");
    let early = out.join("kre/aaa");
    std::fs::create_dir_all(&early).unwrap();
    std::fs::copy(out.join("kre/squad/squad.jsonl"), early.join("aaa.jsonl")).unwrap();
    let start = std::time::Instant::now();
    while !get(v.port, "/").1.contains("kre&#x2f;aaa") {
        assert!(
            start.elapsed().as_secs() < 60,
            "the new folder was not read"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let after = get(v.port, &link).1;
    let id = |p: &str| {
        p.split("id=\"cb-id\">")
            .nth(1)
            .unwrap()
            .split('<')
            .next()
            .unwrap()
            .to_owned()
    };
    assert_eq!(id(&after), id(&before));
    assert_eq!(first_row_link(v.port, "/rows?q=planted-0"), link);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_comment_a_spreadsheet_would_run_is_exported_as_text() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("gen");
    let reader = cb_mock::MockServer::start(view_common::follower()).await;
    read_build(&out, &reader).await;
    let v = start_viewer(&[out.to_str().unwrap(), "--sample", "3"]);
    let ids = sample_ids(v.port);
    let token = form_token(v.port);
    let comments = [
        "=HYPERLINK(\"http://x.example\",\"y\")",
        "+1",
        "-2+3",
        "@SUM(A1)",
        "\tx",
    ];
    for (rater, comment) in [("ann", comments[0]), ("bob", comments[1])] {
        for (k, id) in ids.iter().enumerate() {
            let c = if k == 0 { comment } else { comments[2 + k % 3] };
            let body = format!(
                "form_token={token}&rater={rater}&item_id={}&misleading=not&plausible=somewhat&comment={}",
                view_common::enc(id),
                view_common::enc(c)
            );
            assert_eq!(request(v.port, "POST", "/rate", &[], &body).0, 303);
        }
    }
    let mut sheets = Vec::new();
    for rater in ["ann", "bob"] {
        let (status, csv) = get(v.port, &format!("/export?rater={rater}"));
        assert_eq!(status, 200, "{csv}");
        let mut r = csv::Reader::from_reader(csv.as_bytes());
        let mut n = 0;
        for rec in r.records() {
            let rec = rec.unwrap();
            for cell in rec.iter() {
                assert!(
                    !cell.starts_with(['=', '+', '-', '@', '\t', '\r']),
                    "{cell:?}"
                );
            }
            n += 1;
        }
        assert_eq!(n, ids.len());
        assert!(csv.contains("'=HYPERLINK") || csv.contains("'+1"), "{csv}");
        let f = d.path().join(format!("{rater}.csv"));
        std::fs::write(&f, csv).unwrap();
        sheets.push(f);
    }
    // `agreement` reads the escaped sheets back.
    let o = Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .arg("agreement")
        .args(&sheets)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::text(&o));
}

#[test]
fn a_bad_file_is_reported_once_per_change() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("gen");
    offline_build(&out);
    let log = d.path().join("stderr.log");
    let v = start_viewer_as(
        &[],
        &[out.to_str().unwrap()],
        std::fs::File::create(&log).unwrap().into(),
    );
    let bad = out.join("kre/squad/late.jsonl");
    let reported = || {
        std::fs::read_to_string(&log)
            .unwrap()
            .matches("cannot read the files")
            .count()
    };
    let wait_for = |n: usize| {
        let start = std::time::Instant::now();
        while reported() < n {
            assert!(start.elapsed().as_secs() < 30, "never reported");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        // Several looks later, still reported once.
        std::thread::sleep(std::time::Duration::from_millis(3500));
        assert_eq!(reported(), n, "{}", std::fs::read_to_string(&log).unwrap());
    };
    std::fs::write(&bad, "{\"question\": \n").unwrap();
    wait_for(1);
    let (_, page) = get(v.port, "/");
    assert!(
        page.contains("late.jsonl") && page.contains("could not be read again"),
        "{page}"
    );
    std::fs::write(&bad, "{\"question\": \n{\n").unwrap();
    wait_for(2);
    // Fixed: read again, the note gone.
    std::fs::remove_file(&bad).unwrap();
    let start = std::time::Instant::now();
    while get(v.port, "/").1.contains("could not be read again") {
        assert!(
            start.elapsed().as_secs() < 30,
            "the fixed folder was not read again"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// `setpriv` arguments that run a command as nobody, where this test runs with privileges
/// that ignore file modes (root); `None` when it must and cannot.
fn unprivileged(probe_dir: &Path) -> Option<Vec<&'static str>> {
    let probe = probe_dir.join(".probe");
    if std::fs::write(&probe, "").is_err() {
        return Some(Vec::new());
    }
    let _ = std::fs::remove_file(&probe);
    let ok = Command::new("setpriv")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then(|| {
        vec![
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ]
    })
}

#[tokio::test(flavor = "multi_thread")]
#[allow(clippy::print_stderr)]
async fn ratings_that_cannot_be_written_leave_the_pages_reading() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("gen");
    let reader = cb_mock::MockServer::start(view_common::follower()).await;
    read_build(&out, &reader).await;
    {
        let v = start_viewer(&[out.to_str().unwrap(), "--sample", "3"]);
        let ids = sample_ids(v.port);
        assert_eq!(rate(v.port, "ann", &ids[0], "highly", "no"), 303);
    }
    let file = out.join("view-ratings.sqlite");
    let mode =
        |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    mode(d.path(), 0o755);
    for entry in std::fs::read_dir(&out).unwrap() {
        let p = entry.unwrap().path();
        if p.is_file() {
            mode(&p, 0o444);
        }
    }
    mode(&out, 0o555);
    let Some(prefix) = unprivileged(&out) else {
        eprintln!("skipped: running with privileges that ignore file modes, and no setpriv");
        mode(&out, 0o755);
        return;
    };
    let before = std::fs::read(&file).unwrap();
    let mut v = start_viewer_as(
        &prefix,
        &[out.to_str().unwrap(), "--sample", "3"],
        std::process::Stdio::inherit(),
    );
    let mut said = String::new();
    std::io::BufRead::read_line(&mut v.stdout, &mut said).unwrap();
    assert!(said.contains("no rating can be saved"), "{said}");
    let (status, page) = get(v.port, "/rate");
    assert_eq!(status, 200);
    assert!(
        page.contains("cb-read-only") && !page.contains("cb-start"),
        "said before a rater starts: {page}"
    );
    let (status, page) = get(v.port, "/agreement");
    assert_eq!(status, 200, "the ratings so far are read: {page}");
    assert!(page.contains(">ann<"), "{page}");
    let ids = sample_ids(v.port);
    let body = rating_body(&form_token(v.port), "bob", &ids[0], "not", "no");
    let (status, text) = request(v.port, "POST", "/rate", &[], &body);
    assert_eq!(status, 503, "{text}");
    assert!(text.contains("nothing was stored"), "{text}");
    drop(v);
    // An explicit --ratings that cannot be written is refused at start.
    let args = [
        out.to_str().unwrap(),
        "--ratings",
        file.to_str().unwrap(),
        "--port",
        "0",
    ];
    let r = view_as(&prefix, &args);
    mode(&out, 0o755);
    assert_eq!(std::fs::read(&file).unwrap(), before, "nothing written");
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--ratings") && err.contains("cannot be written"),
        "{err}"
    );
}

/// A scripted reader: shown a context, it picks the option the context names (the mock's
/// context follower); shown the options alone (the answer-set test: no question, options as
/// `A: text` lines), it picks the longest.
fn follower_picking_the_longest() -> cb_mock::Responder {
    cb_mock::responder(|req: &cb_mock::ChatRequest| {
        let prompt = req.last_user();
        if let Some(letter) = cb_mock::reader_script::judge(prompt, false) {
            return cb_mock::Reply::Content(letter);
        }
        let reply = match cb_mock::reader_script::parse(prompt) {
            Some(q) => cb_mock::reader_script::follow_context(&q),
            None => prompt
                .lines()
                .filter_map(|l| l.split_once(": ").filter(|(k, _)| k.len() == 1))
                .max_by_key(|(_, text)| text.len())
                .map_or("None", |(k, _)| k)
                .to_owned(),
        };
        cb_mock::Reply::Content(reply)
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn the_page_measures_the_reader_against_people_as_by_hand() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("gen");
    let reader = cb_mock::MockServer::start(follower_picking_the_longest()).await;
    view_common::read_build_of(&out, &reader, "squad").await;
    let rows = common::read_jsonl(&out.join("kre/squad/squad.jsonl"));
    let rejects = common::read_jsonl(&out.join("kre/squad/rejects.jsonl"));
    // The rows the reader refused for its verdict keep their texts and verdicts in the
    // reject (no other reject has a `row`).
    let refused: Vec<&serde_json::Value> = rejects
        .iter()
        .filter(|r| r["reason"] == "reader_disagrees")
        .map(|r| &r["row"])
        .collect();
    assert!(rejects
        .iter()
        .all(|r| r.get("row").is_some() == (r["reason"] == "reader_disagrees")));
    assert_eq!((rows.len(), refused.len()), (4, 3), "{rejects:?}");
    let v = start_viewer(&[out.to_str().unwrap(), "--sample", "100"]);
    let ids = sample_ids(v.port);
    // The sample: every row kept and every row refused, shuffled together.
    let of = |id: &str| {
        let row =
            |r: &&serde_json::Value| id == format!("squad.jsonl#{}", r["id"].as_str().unwrap());
        (rows.iter().find(row).map(|r| (r, true)))
            .or_else(|| refused.iter().copied().find(row).map(|r| (r, false)))
            .unwrap_or_else(|| panic!("{id} is neither a row kept nor one refused"))
    };
    let kept: Vec<bool> = ids.iter().map(|id| of(id).1).collect();
    assert_eq!(
        kept,
        [true, true, false, true, false, false, true],
        "{ids:?}"
    );
    let (_, page) = get(v.port, "/rate");
    assert!(
        page.contains("3 rows the reader refused and 4 rows it let stand"),
        "{page}"
    );
    // A refused row is shown as a kept one is: the same marks, nothing naming a verdict.
    for step in ["", "&distinguishable=yes"] {
        let show = |k: usize| get(v.port, &format!("/rate?rater=probe&item={k}{step}")).1;
        let (kept_page, refused_page) = (show(0), show(4));
        for page in [&kept_page, &refused_page] {
            let question = page.split("<p><strong>").nth(1).unwrap();
            assert!(
                !question.contains("refus") && !question.contains("reject"),
                "{page}"
            );
        }
        for mark in [
            "id=\"cb-item\"",
            "cb-plain-options",
            "id=\"cb-options\"",
            "golden answer",
            "negative answer",
            "golden context",
            "negative context",
        ] {
            assert_eq!(
                kept_page.contains(mark),
                refused_page.contains(mark),
                "{mark}: {refused_page}"
            );
        }
    }
    // What the reader said, as the rows and the rejects record it: misled (it picked the
    // negative answer from the negative context) by every row it kept and by none it
    // refused; from the options alone it told the golden answer in the first row only (the
    // longest option), and it was not asked that of the rows it refused (items 2, 4, 5).
    let said = |k: usize, check: &str| {
        let checks = of(&ids[k]).0["reader"]["checks"].as_array().unwrap();
        let c = checks.iter().find(|c| c["check"] == check);
        c.map(|c| c["passed"].as_bool().unwrap())
    };
    let reader_misled: Vec<Option<bool>> = (0..7).map(|k| said(k, "negative")).collect();
    let t = Some(true);
    let f = Some(false);
    assert_eq!(reader_misled, [t, t, f, t, f, f, t]);
    let reader_set: Vec<Option<bool>> = (0..7).map(|k| said(k, "answer_set")).collect();
    assert_eq!(reader_set, [t, f, None, f, None, None, f], "{ids:?}");
    // Two raters agree throughout: the answer set tells the answer in items 0, 3 and 6; the
    // negative context does not mislead in items 1 and 4, it does (highly) in the others.
    let token = form_token(v.port);
    for (k, id) in ids.iter().enumerate() {
        for rater in ["ann", "bob"] {
            let dist = if k % 3 == 0 { "yes" } else { "no" };
            let level = if k == 1 || k == 4 { "not" } else { "highly" };
            let body = rating_body(&token, rater, id, level, dist);
            assert_eq!(request(v.port, "POST", "/rate", &[], &body).0, 303);
        }
    }
    let (_, page) = get(v.port, "/agreement");
    let table = page
        .split("id=\"cb-cohen\"")
        .nth(1)
        .unwrap()
        .split("</table>")
        .next()
        .unwrap();
    let cells: Vec<String> = table
        .split("<td")
        .skip(1)
        .map(|c| {
            c.split_once('>')
                .unwrap()
                .1
                .split("</td>")
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    // By hand, answer set, over the four items the reader was asked it of (0, 1, 3, 6),
    // (people, reader): (yes, yes), (no, no), (yes, no), (yes, no).
    // p_o = 2/4; people say yes 3/4, the reader 1/4: p_e = 3/4 · 1/4 + 1/4 · 3/4 = 3/8;
    // kappa = (1/2 - 3/8) / (1 - 3/8) = 0.2; se = sqrt(1/2 · 1/2 / (4 · (5/8)²)) = 0.4,
    // interval 0.2 ± 1.96 se = [-0.584, 0.984].
    assert_eq!(
        cells[6..12],
        [
            "reader",
            "answer set distinguishable",
            "4",
            "0.500",
            "0.2000",
            "[-0.584, 0.984]"
        ],
        "{table}"
    );
    // Misleading, over the seven, (people, reader): (yes, yes), (no, yes), (yes, no),
    // (yes, yes), (no, no), (yes, no), (yes, yes): p_o = 4/7; people say yes 5/7, the reader
    // 4/7: p_e = 5/7 · 4/7 + 2/7 · 3/7 = 26/49; kappa = (4/7 - 26/49) / (23/49) = 2/23 = 0.0870;
    // se = sqrt(4/7 · 3/7 / (7 · (23/49)²)) = 0.3985, interval 0.0870 ± 0.7810 =
    // [-0.694, 0.868]. (Over the rows kept alone the reader says "misled" of each,
    // and its kappa is 0 whatever the people say.)
    assert_eq!(
        cells[..6],
        [
            "reader",
            "misleading",
            "7",
            "0.571",
            "0.0870",
            "[-0.694, 0.868]"
        ],
        "{table}"
    );
    // Plausible, over the items whose reader column holds a `plausible` verdict (none where
    // the reader check does not ask it): every rater rated every item plausible, so people
    // and reader agree exactly on the items the reader found plausible.
    let plausible: Vec<bool> = (0..7).filter_map(|k| said(k, "plausible")).collect();
    let agree = plausible.iter().filter(|p| **p).count() as f64 / plausible.len().max(1) as f64;
    let n = plausible.len().to_string();
    let agree = format!("{agree:.3}");
    assert_eq!(
        cells[12..16],
        ["reader", "plausible", n.as_str(), agree.as_str()],
        "{table}"
    );
    // A third rater who rated one item (not misleading) leaves one item every rater rated:
    // ann, bob highly, carl not: P = (2 · 1) / (3 · 2) = 1/3, P_e = (2/3)² + (1/3)² = 5/9,
    // kappa = (1/3 - 5/9) / (4/9) = -0.5. Set aside, ann and bob agree on all seven items:
    // P = 1, P_e = (2/7)² + (5/7)² = 29/49, kappa = 1.
    let body = rating_body(&token, "carl", &ids[0], "not", "yes");
    assert_eq!(request(v.port, "POST", "/rate", &[], &body).0, 303);
    let fleiss = |query: &str| {
        let (_, page) = get(v.port, &format!("/agreement{query}"));
        let line = page
            .split("id=\"cb-fleiss\">")
            .nth(1)
            .unwrap()
            .split("</p>")
            .next()
            .unwrap();
        line.replace("<strong class=\"cb-kappa\">", "")
            .replace("</strong>", "")
    };
    assert_eq!(
        fleiss(""),
        "Fleiss' kappa: -0.5000; percent agreement 33.3% over 1 item(s) that all 3 raters rated."
    );
    assert_eq!(
        fleiss("?among=ann&among=bob"),
        "Fleiss' kappa: 1.0000; percent agreement 100.0% over 7 item(s) that all 2 raters rated."
    );
    let (_, page) = get(v.port, "/agreement?among=ann&among=bob");
    assert!(
        page.contains("value=\"carl\" aria-label") && !page.contains("value=\"carl\" checked"),
        "carl unticked"
    );
    assert!(
        page.contains("&#x2f;export?rater=ann&amp;among=ann&amp;among=bob"),
        "{page}"
    );
    // Ann's sheet among ann and bob holds the seven items they both rated.
    let (status, csv) = get(v.port, "/export?rater=ann&among=ann&among=bob");
    assert_eq!(status, 200, "{csv}");
    assert_eq!(
        csv::Reader::from_reader(csv.as_bytes()).records().count(),
        7
    );
    // A sample of four is half refused, half kept.
    drop(v);
    let v = start_viewer(&[out.to_str().unwrap(), "--sample", "4"]);
    let kept: Vec<bool> = sample_ids(v.port).iter().map(|id| of(id).1).collect();
    assert_eq!(kept.iter().filter(|k| **k).count(), 2, "{kept:?}");
    assert_eq!(kept.len(), 4);
    let (_, page) = get(v.port, "/rate");
    assert!(
        page.contains("2 rows the reader refused and 2 rows it let stand"),
        "{page}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_recall_sample_is_rated_as_the_rows_of_its_files() {
    // A reader that always answers "A" refuses every RECALL sample (the answer-edited context
    // wants the edited answer's option, the other edit the original's: never both "A").
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("gen");
    let reader = cb_mock::MockServer::start(cb_mock::fixed("A")).await;
    let raw = common::repo().join("raw");
    let base = reader.base_url();
    let o = common::build(
        &[
            "recall",
            "--domains",
            "uj",
            "--raw",
            raw.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--reader-base-url",
            &base,
            "--reader-model",
            "reader",
        ],
        &[],
    )
    .await;
    assert!(o.status.success(), "{}", common::text(&o));
    let rejects = common::read_jsonl(&out.join("recall/uj/rejects.jsonl"));
    let refused: Vec<&serde_json::Value> = rejects
        .iter()
        .filter(|r| r["reason"] == "reader_disagrees")
        .map(|r| &r["row"])
        .collect();
    assert!(!refused.is_empty());
    // Every row of a refused sample can be drawn: its QA-A row, its QA-NA rows and its
    // text-generation row, each named as its file names its rows.
    let v = start_viewer(&[out.to_str().unwrap(), "--sample", "1000"]);
    let ids = sample_ids(v.port);
    let mut want: Vec<String> = Vec::new();
    for r in &refused {
        want.push(format!("qa_a.jsonl#{}", r["qa_a"]["id"].as_str().unwrap()));
        for na in r["qa_na"].as_array().unwrap() {
            want.push(format!("qa_na.jsonl#{}", na["id"].as_str().unwrap()));
        }
        let tg = r["text_generation"]["id"].as_str().unwrap();
        want.push(format!("text_generation.jsonl#{tg}"));
    }
    let (mut got, mut want) = (ids.clone(), want);
    got.sort();
    want.sort();
    assert_eq!(got, want);
    let (_, page) = get(v.port, "/rate");
    assert!(
        page.contains(&format!(
            "{} rows the reader refused and 0 rows it let stand",
            ids.len()
        )),
        "{page}"
    );
    // Each is shown with its question and options, then its two texts, and can be rated.
    let k = ids
        .iter()
        .position(|id| id.starts_with("qa_a.jsonl#"))
        .unwrap();
    let (status, page) = get(v.port, &format!("/rate?rater=ann&item={k}"));
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("cb-plain-options"), "{page}");
    let (status, page) = get(
        v.port,
        &format!("/rate?rater=ann&item={k}&distinguishable=no"),
    );
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("edited context"), "{page}");
    assert_eq!(rate(v.port, "ann", &ids[k], "somewhat", "no"), 303);
}

/// The line of the agreement page whose element has `id`, without its markup.
fn page_line(port: u16, query: &str, id: &str) -> String {
    let (_, page) = get(port, &format!("/agreement{query}"));
    let line = page
        .split(&format!("id=\"{id}\">"))
        .nth(1)
        .unwrap_or_else(|| panic!("no {id}: {page}"))
        .split("</p>")
        .next()
        .unwrap();
    line.replace("<strong class=\"cb-kappa\">", "")
        .replace("</strong>", "")
}

/// Issue 48, item 1: the Rate page asks both scales (how misleading, KRE A.4; how
/// plausible), the agreement page and the export count both, as computed by hand; ratings
/// stored before the second scale still load.
#[tokio::test(flavor = "multi_thread")]
async fn both_scales_are_asked_counted_and_exported_as_by_hand() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("gen");
    let reader = cb_mock::MockServer::start(view_common::follower()).await;
    read_build(&out, &reader).await;
    let ratings = d.path().join("ratings.sqlite");
    let args = [
        out.to_str().unwrap(),
        "--sample",
        "4",
        "--ratings",
        ratings.to_str().unwrap(),
    ];
    let ids = sample_ids(start_viewer(&args).port);
    assert_eq!(ids.len(), 4);
    // A ratings file of the viewer before the plausibility scale: no such column, one
    // rating by w (item 0, not misleading).
    {
        let c = rusqlite::Connection::open(&ratings).unwrap();
        c.execute_batch(
            "CREATE TABLE ratings (rater TEXT NOT NULL, item_id TEXT NOT NULL,
             misleading TEXT NOT NULL, distinguishable INTEGER, comment TEXT NOT NULL,
             updated_unix INTEGER NOT NULL, PRIMARY KEY (rater, item_id))",
        )
        .unwrap();
        c.execute(
            "INSERT INTO ratings VALUES ('w', ?1, 'not', 0, 'before', 0)",
            [&ids[0]],
        )
        .unwrap();
    }
    let v = start_viewer(&args);
    // The second step of an item asks both questions, each with its three levels.
    let (_, page) = get(v.port, "/rate?rater=x&item=0&distinguishable=no");
    assert!(page.contains("How misleading is the negative (edited) context?"));
    assert!(page.contains(
        "Could a careful reader who does not know the answer accept the negative (edited) context as written?"
    ));
    for level in ["not", "somewhat", "highly"] {
        assert!(page.contains(&format!("name=\"misleading\" value=\"{level}\"")));
    }
    for level in ["implausible", "somewhat", "plausible"] {
        assert!(page.contains(&format!("name=\"plausible\" value=\"{level}\"")));
    }
    // A post without the plausibility is refused, naming it, and stores nothing.
    let token = form_token(v.port);
    let half =
        rating_body(&token, "x", &ids[0], "highly", "no").replace("plausible=plausible&", "");
    let (status, said) = request(v.port, "POST", "/rate", &[], &half);
    assert_eq!(status, 400, "{said}");
    assert!(said.contains("plausible \"\""), "{said}");
    assert_eq!(ratings_in(&ratings).len(), 1);
    // Three raters on both scales (items 0 to 3 as a to d):
    //   misleading   a: H H H   b: N S N   c: H S H   d: H H S
    //   plausibility a: P P S   b: I I I   c: P P P   d: I S S
    let levels = [
        [
            "highly/plausible",
            "not/implausible",
            "highly/plausible",
            "highly/implausible",
        ],
        [
            "highly/plausible",
            "somewhat/implausible",
            "somewhat/plausible",
            "highly/somewhat",
        ],
        [
            "highly/somewhat",
            "not/implausible",
            "highly/plausible",
            "somewhat/somewhat",
        ],
    ];
    for (rater, levels) in ["x", "y", "z"].iter().zip(levels) {
        for (id, both) in ids.iter().zip(levels) {
            let (m, p) = both.split_once('/').unwrap();
            let body = view_common::rating_body_both(&token, rater, id, (m, p), "no");
            assert_eq!(request(v.port, "POST", "/rate", &[], &body).0, 303);
        }
    }
    // By hand, misleading over x, y, z: P_a = 1, P_b = P_c = P_d = 1/3, P̄ = 1/2; shares
    // not 2/12, somewhat 3/12, highly 7/12, P_e = 31/72; kappa = (1/2 - 31/72) / (41/72)
    // = 5/41 = 0.1220.
    // Plausibility: P_a = 1/3, P_b = P_c = 1, P_d = 1/3, P̄ = 2/3; shares implausible
    // 4/12, somewhat 3/12, plausible 5/12, P_e = 50/144 = 25/72; kappa = (48/72 - 25/72) /
    // (47/72) = 23/47 = 0.4894.
    let xyz = "?among=x&among=y&among=z";
    assert_eq!(
        page_line(v.port, xyz, "cb-fleiss"),
        "Fleiss' kappa: 0.1220; percent agreement 50.0% over 4 item(s) that all 3 raters rated."
    );
    assert_eq!(
        page_line(v.port, xyz, "cb-fleiss-plausibility"),
        "Fleiss' kappa: 0.4894; percent agreement 66.7% over 4 item(s) that all 3 raters rated on this scale."
    );
    // Each item's counts and majorities on both scales.
    let (_, page) = get(v.port, &format!("/agreement{xyz}"));
    let row = |id: &str| {
        let id = id
            .replace('&', "&amp;")
            .replace('/', "&#x2f;")
            .replace('\'', "&#x27;");
        let cells = page.split(&format!("<tr><td>{id}</td>")).nth(1).unwrap();
        cells
            .split("</tr>")
            .next()
            .unwrap()
            .replace("<td class=\"n\">", "<td>")
    };
    assert_eq!(
        row(&ids[3]),
        "<td>0</td><td>1</td><td>2</td><td>highly</td><td>1</td><td>2</td><td>0</td><td>somewhat</td><td>0 / 3</td>"
    );
    assert_eq!(
        row(&ids[0]),
        "<td>0</td><td>0</td><td>3</td><td>highly</td><td>0</td><td>1</td><td>2</td><td>plausible</td><td>0 / 3</td>"
    );
    // With w counted (its one old rating): misleading over item 0 alone, counts (1, 0, 3):
    // P = 6/12 = 1/2, P_e = 1/16 + 9/16 = 5/8, kappa = (1/2 - 5/8) / (3/8) = -1/3; w rated
    // no plausibility, so no item has it from every rater: not measured, and said so.
    assert_eq!(
        page_line(v.port, "", "cb-fleiss"),
        "Fleiss' kappa: -0.3333; percent agreement 50.0% over 1 item(s) that all 4 raters rated."
    );
    assert!(
        page_line(v.port, "", "cb-fleiss-plausibility").starts_with("Not measured yet"),
        "{}",
        page_line(v.port, "", "cb-fleiss-plausibility")
    );
    // The exported sheets hold both scales; `conflictbench agreement` on them prints the
    // figures above.
    let mut sheets = Vec::new();
    for rater in ["x", "y", "z"] {
        let (status, csv) = get(
            v.port,
            &format!("/export?rater={rater}&among=x&among=y&among=z"),
        );
        assert_eq!(status, 200, "{csv}");
        let mut r = csv::Reader::from_reader(csv.as_bytes());
        let head = r.headers().unwrap().clone();
        let col = |name: &str| head.iter().position(|h| h == name).unwrap();
        let (id_col, m_col, p_col) = (col("item_id"), col("rating"), col("plausible"));
        let got: Vec<(String, String, String)> = r
            .records()
            .map(|rec| {
                let rec = rec.unwrap();
                (
                    rec[id_col].to_owned(),
                    rec[m_col].to_owned(),
                    rec[p_col].to_owned(),
                )
            })
            .collect();
        assert_eq!(got.len(), 4, "{csv}");
        if rater == "x" {
            let first = got.iter().find(|g| g.0 == ids[1]).unwrap();
            assert_eq!((first.1.as_str(), first.2.as_str()), ("not", "implausible"));
        }
        let f = d.path().join(format!("{rater}.csv"));
        std::fs::write(&f, csv).unwrap();
        sheets.push(f);
    }
    let o = Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .arg("agreement")
        .args(&sheets)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", common::text(&o));
    assert!(text.contains("Fleiss' kappa: 0.1220"), "{text}");
    assert!(
        text.contains("plausible, over the 4 of 4 items every sheet rated on it:"),
        "{text}"
    );
    assert!(text.contains("Fleiss' kappa: 0.4894"), "{text}");
    // The old rating is still there, read with the new ones.
    let all = ratings_in(&ratings);
    assert_eq!(all.len(), 13);
    assert!(all.contains(&("w".into(), ids[0].clone(), "not".into())));
}
