//! `build --batch-dir` against the mock, for the tests of the loop whoever answers the files
//! (`batches run-dir` in `batch_files.rs`, Ray Data in `ray_batch.rs`; included with
//! `#[path]`): the KRE SQuAD build (two model steps, so two rounds of files), its online twin,
//! the folder's input files and a comparison of build folders that names what differs.
#![allow(dead_code)]

use crate::common::{build, model_args, read_jsonl, repo, snapshot, text};
use cb_mock::MockServer;
use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;
use std::process::Output;

/// Exit code of a build whose requests wait in batch files.
pub const WAITING: i32 = 4;

pub struct Setup {
    pub mock: MockServer,
    pub base: String,
    pub raw: String,
}

pub async fn setup() -> Setup {
    setup_with(cb_mock::stand_in::model()).await
}

pub async fn setup_with(model: cb_mock::Responder) -> Setup {
    let mock = MockServer::start(model).await;
    let base = mock.base_url();
    let raw = repo().join("raw").to_str().unwrap().to_owned();
    Setup { mock, base, raw }
}

pub fn squad_args<'a>(s: &'a Setup, out: &'a str) -> Vec<&'a str> {
    model_args("kre", "squad", &s.base, &s.raw, out)
}

/// [`squad_args`] through batch files in `dir`.
pub fn files_args<'a>(s: &'a Setup, out: &'a Path, dir: &'a Path) -> Vec<&'a str> {
    let mut args = squad_args(s, out.to_str().unwrap());
    args.extend(["--batch-dir", dir.to_str().unwrap()]);
    args
}

pub async fn build_files(s: &Setup, out: &Path, dir: &Path) -> Output {
    build(&files_args(s, out, dir), &[]).await
}

/// The input files of `dir` (name -> custom ids, in order).
pub fn inputs(dir: &Path) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        if name.starts_with("requests-") && name.ends_with(".jsonl") && !name.contains(".output") {
            let ids = read_jsonl(&dir.join(&name))
                .iter()
                .map(|l| l["custom_id"].as_str().unwrap().to_owned())
                .collect();
            out.insert(name, ids);
        }
    }
    out
}

/// Runs `build` and `answer` in turn until the build exits 0 (at most `max_runs` builds);
/// returns the build's exits. Every waiting build must say so and name the executors.
pub async fn answer_until_done<B, BF, A, AF>(
    mut build: B,
    mut answer: A,
    max_runs: usize,
) -> Vec<i32>
where
    B: FnMut() -> BF,
    BF: Future<Output = Output>,
    A: FnMut() -> AF,
    AF: Future<Output = ()>,
{
    let mut exits = Vec::new();
    loop {
        let o = build().await;
        let code = o.status.code().unwrap();
        exits.push(code);
        match code {
            0 => return exits,
            WAITING => {
                let said = text(&o);
                assert!(said.contains("waiting for answers"), "{said}");
                assert!(said.contains("batches run-dir"), "{said}");
                assert!(said.contains("vllm.entrypoints.openai.run_batch"), "{said}");
                assert!(said.contains("scripts/ray-batch.py"), "{said}");
                assert!(exits.len() < max_runs, "no end after {exits:?}");
                answer().await;
            }
            _ => panic!("the build exited {code}: {}", text(&o)),
        }
    }
}

pub fn squad_files(out: &Path) -> BTreeMap<String, Vec<u8>> {
    snapshot(&out.join("kre/squad"))
}

/// Fails naming the files that differ and their first differing line.
pub fn assert_same(got: &BTreeMap<String, Vec<u8>>, want: &BTreeMap<String, Vec<u8>>) {
    let names: Vec<&String> = got.keys().chain(want.keys()).collect();
    let mut diffs = Vec::new();
    for name in names {
        let (a, b) = (
            String::from_utf8_lossy(got.get(name).map_or(&[][..], |v| v)).into_owned(),
            String::from_utf8_lossy(want.get(name).map_or(&[][..], |v| v)).into_owned(),
        );
        if a != b {
            let first = a
                .lines()
                .zip(b.lines())
                .find(|(x, y)| x != y)
                .map(|(x, y)| {
                    let at = x.chars().zip(y.chars()).take_while(|(p, q)| p == q).count();
                    let from = at.saturating_sub(60);
                    let cut = |t: &str| t.chars().skip(from).take(200).collect::<String>();
                    format!("\n  got:  ...{}\n  want: ...{}", cut(x), cut(y))
                })
                .unwrap_or_default();
            diffs.push(format!("{name}{first}"));
        }
    }
    diffs.dedup();
    assert!(
        diffs.is_empty(),
        "files differ from the online build's:\n{}",
        diffs.join("\n")
    );
}

/// The online build of the same recipe on the same mock: its files and the requests its
/// steps made (its one structured-output probe left out: batch files cannot probe, they
/// start with `json-schema`, which the stand-in enforces).
pub async fn online(s: &Setup) -> (tempfile::TempDir, BTreeMap<String, Vec<u8>>, usize) {
    let out = tempfile::tempdir().unwrap();
    let before = s.mock.request_count();
    let o = build(&squad_args(s, out.path().to_str().unwrap()), &[]).await;
    assert!(o.status.success(), "{}", text(&o));
    let files = squad_files(out.path());
    (out, files, s.mock.request_count() - before - 1)
}
