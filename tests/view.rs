//! `conflictbench view` over HTTP: bad input is exit 2 before anything is bound or written;
//! beyond loopback every route refuses a request without the token (on loopback, one for
//! another host); every submitted rating survives a killed server; two raters rating at
//! once lose nothing; the pages list, filter and search what the files hold.

mod common;
#[path = "common/view.rs"]
mod view_common;

use std::path::Path;
use std::process::Command;
use view_common::{get, rate, read_build, request, sample_ids, start_viewer};

/// `conflictbench view ARGS`, expected to exit at once; killed (and the test failed) if it
/// serves instead.
fn view(args: &[&str]) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_conflictbench"))
        .arg("view")
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
        (vec![o, "--sample", "0"], "--sample must be at least 1"),
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
    for (args, said) in cases {
        let r = view(&args);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(said), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one sentence: {err}");
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
    ("GET", "/row/0", ""),
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
    let reader = cb_mock::MockServer::start(cb_mock::reader_script::context_follower()).await;
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
    let reader = cb_mock::MockServer::start(cb_mock::reader_script::context_follower()).await;
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
    let (_, p) = get(v.port, "/row/0");
    assert!(p.contains("cb-prompt") && p.contains("cb-answer"), "{p}");
}
