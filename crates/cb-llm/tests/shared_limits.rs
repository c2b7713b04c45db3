//! Layers a run's [`Roster`] makes for one role (the recipes of one build, built at once)
//! keep one `--concurrency` against the endpoint together; layers of other roles, or of
//! another roster, each have theirs; `stop_all` stops every layer the roster made.

use cb_llm::{
    BackendKind, Budget, Call, EndpointSpec, Llm, LlmConfig, PoolConfig, Role, Roster, Transport,
};
use std::time::Duration;

mod common;

fn call(layer: usize, i: usize) -> Call {
    common::question(
        format!("layer {layer} question {i}"),
        format!("item-{layer}-{i}"),
    )
}

const LATENCY: Duration = Duration::from_millis(150);

/// The most requests the mock had in flight at once (each from its arrival for a latency),
/// after the two layers `make` gives sent 6 calls each at once, at `--concurrency 2` each
/// (`pool`: through a pool of the one endpoint at concurrency 2).
async fn most_in_flight(pool: bool, make: impl Fn(LlmConfig) -> (Llm, Llm)) -> usize {
    let mock = cb_mock::MockServer::start(cb_mock::responder(|_| cb_mock::Reply::ContentWith {
        content: "fine".into(),
        finish_reason: "stop".into(),
        usage: Some((10, 10)),
    }))
    .await;
    mock.set_latency(LATENCY);
    let dir = tempfile::tempdir().unwrap();
    let mut c = LlmConfig::offline();
    c.backend = BackendKind::Openai;
    c.base_url = mock.base_url();
    c.model = "m".into();
    c.cache_path = Some(dir.path().join("c.sqlite"));
    c.concurrency = 2;
    if pool {
        // One endpoint of concurrency 2, reached through a pool.
        c.transport = Transport::Pool(PoolConfig {
            name: "p".into(),
            endpoints: vec![EndpointSpec {
                base_url: mock.base_url(),
                concurrency: 2,
                rpm: None,
                tpm: None,
            }],
            open_after: 3,
            cooldown: Duration::from_secs(2),
        });
    }
    let (first, second) = make(c);
    let mut tasks = Vec::new();
    for (n, llm) in [first, second].into_iter().enumerate() {
        for i in 0..6 {
            let llm = llm.clone();
            tasks.push(tokio::spawn(async move { llm.complete(&call(n, i)).await }));
        }
    }
    for t in tasks {
        assert!(!t.await.unwrap().unwrap().cached);
    }
    let at: Vec<_> = mock.journal().iter().map(|e| e.at).collect();
    assert_eq!(at.len(), 12);
    at.iter()
        .map(|&t| at.iter().filter(|&&a| a <= t && t < a + LATENCY).count())
        .max()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn layers_under_one_name_share_one_concurrency() {
    let roster = Roster::new(Budget::default());
    let most = most_in_flight(false, |c| {
        let first = roster.layer(&Role::Writer, c.clone()).unwrap();
        let second = roster.layer(&Role::Writer, c).unwrap();
        (first, second)
    })
    .await;
    assert_eq!(
        most, 2,
        "two layers under one name keep --concurrency 2 together"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn layers_with_limiters_of_their_own_each_have_their_concurrency() {
    let roster = Roster::new(Budget::default());
    let most = most_in_flight(false, |c| {
        let first = roster.layer(&Role::Writer, c.clone()).unwrap();
        // Another name: a limiter of its own.
        let second = roster.layer(&Role::Named("x".into()), c).unwrap();
        (first, second)
    })
    .await;
    assert_eq!(most, 4, "two limiters of 2 each");
    let most = most_in_flight(false, |c| {
        // Two rosters (two runs): nothing shared.
        let first = Llm::new(c.clone()).unwrap();
        let second = Llm::new(c).unwrap();
        (first, second)
    })
    .await;
    assert_eq!(most, 4, "two limiters of 2 each");
}

#[tokio::test(flavor = "multi_thread")]
async fn layers_under_one_name_share_one_pool() {
    let roster = Roster::new(Budget::default());
    let most = most_in_flight(true, |c| {
        let first = roster.layer(&Role::Writer, c.clone()).unwrap();
        let second = roster.layer(&Role::Writer, c).unwrap();
        (first, second)
    })
    .await;
    assert_eq!(
        most, 2,
        "one pool: its endpoint's concurrency 2 for both layers"
    );
    let most = most_in_flight(true, |c| {
        // Two rosters (two runs): nothing shared.
        let first = Llm::new(c.clone()).unwrap();
        let second = Llm::new(c).unwrap();
        (first, second)
    })
    .await;
    assert_eq!(most, 4, "a pool each");
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_all_stops_every_layer_of_every_role_and_those_made_after() {
    let mock = cb_mock::MockServer::start(cb_mock::fixed("A")).await;
    let dir = tempfile::tempdir().unwrap();
    let mut c = LlmConfig::offline();
    c.backend = BackendKind::Openai;
    c.base_url = mock.base_url();
    c.model = "m".into();
    c.cache_path = Some(dir.path().join("c.sqlite"));
    c.max_retries = 0;
    let roster = Roster::new(Budget::default());
    let roles = [Role::Writer, Role::Reader, Role::Named("x".into())];
    let layers: Vec<Llm> = roles
        .iter()
        .map(|r| roster.layer(r, c.clone()).unwrap())
        .collect();
    let stopped = roster.stop_all("stopped by SIGINT");
    assert_eq!(stopped, roles.to_vec());
    let late = roster.layer(&Role::Named("y".into()), c).unwrap();
    for (i, l) in layers.iter().chain([&late]).enumerate() {
        let e = l
            .complete(&common::question(format!("q{i}"), format!("i{i}")))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("SIGINT"), "{e}");
    }
    assert_eq!(mock.request_count(), 0, "a stopped layer sends nothing");
}

/// A stop reaches every transport by the same flag (issue 44, item 3): layers of one roster,
/// one for each way a call travels (online, an endpoint pool, the Batch API, batch files),
/// stopped while their calls wait (the Batch API's and the files' for their round to start)
/// send nothing more: no request, no upload or batch, no file written; each call ends with the
/// stop's reason.
#[tokio::test(flavor = "multi_thread")]
async fn a_stop_reaches_every_transport_before_it_sends_anything() {
    let mock = cb_mock::MockServer::start(cb_mock::fixed("A")).await;
    let (dir, folder) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut c = LlmConfig::offline();
    c.backend = BackendKind::Openai;
    c.base_url = mock.base_url();
    c.model = "m".into();
    c.cache_path = Some(dir.path().join("c.sqlite"));
    c.max_retries = 0;
    let quiet = Duration::from_millis(400);
    let pool = PoolConfig {
        name: "p".into(),
        endpoints: vec![EndpointSpec {
            base_url: mock.base_url(),
            concurrency: 1,
            rpm: None,
            tpm: None,
        }],
        open_after: 3,
        cooldown: Duration::from_secs(1),
    };
    let batch = cb_llm::BatchOptions {
        quiet,
        poll_initial: Duration::from_millis(20),
        ..Default::default()
    };
    let files = cb_llm::FilesOptions {
        quiet,
        ..cb_llm::FilesOptions::new(folder.path().to_path_buf())
    };
    let roster = Roster::new(Budget::default());
    let transports = [
        Transport::Online,
        Transport::Pool(pool),
        Transport::BatchApi(batch),
        Transport::BatchFiles(files),
    ];
    let mut calls = tokio::task::JoinSet::new();
    for (i, t) in transports.into_iter().enumerate() {
        let mut c = c.clone();
        c.transport = t;
        let layer = roster.layer(&Role::Named(format!("t{i}")), c).unwrap();
        calls.spawn(async move { layer.complete(&call(i, 0)).await });
    }
    // Within the rounds' quiet period (the online and pool calls are answered by then, or
    // stopped before they are sent).
    tokio::time::sleep(Duration::from_millis(100)).await;
    roster.stop_all("stopped by SIGINT");
    let mut ended = 0;
    while let Some(done) = calls.join_next().await {
        if let Err(e) = done.unwrap() {
            assert!(e.to_string().contains("SIGINT"), "{e}");
            ended += 1;
        }
    }
    // Nothing of the rounds was sent or written: they had not started at the stop.
    assert!(ended >= 2, "{ended} calls stopped");
    assert!(mock.request_count() <= 2, "{}", mock.request_count());
    assert_eq!(mock.batch_count(), 0, "a batch was made after the stop");
    let written: Vec<_> = std::fs::read_dir(folder.path()).unwrap().collect();
    assert!(
        written.is_empty(),
        "a batch file was written after the stop: {written:?}"
    );
}

/// A mock answering every request after `latency`, with its usage.
async fn slow_mock(latency: Duration) -> cb_mock::MockServer {
    let mock = cb_mock::MockServer::start(cb_mock::responder(|_| cb_mock::Reply::ContentWith {
        content: "fine".into(),
        finish_reason: "stop".into(),
        usage: Some((10, 10)),
    }))
    .await;
    mock.set_latency(latency);
    mock
}

/// Waits until `mock` has received `n` requests.
async fn received(mock: &cb_mock::MockServer, n: usize) {
    let t0 = std::time::Instant::now();
    while mock.request_count() < n {
        assert!(t0.elapsed() < Duration::from_secs(30), "no request came");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// A writer layer of `roster` on a pool of `mock` alone at `concurrency`, its cache in `dir`,
/// with no retries.
fn pool_layer(
    roster: &Roster,
    mock: &cb_mock::MockServer,
    concurrency: usize,
    dir: &std::path::Path,
) -> Llm {
    let mut c = LlmConfig::offline();
    c.backend = BackendKind::Openai;
    c.model = "m".into();
    c.cache_path = Some(dir.join("c.sqlite"));
    c.max_retries = 0;
    c.transport = Transport::Pool(PoolConfig {
        name: "p".into(),
        endpoints: vec![EndpointSpec {
            base_url: mock.base_url(),
            concurrency,
            rpm: None,
            tpm: None,
        }],
        open_after: 3,
        cooldown: Duration::from_secs(1),
    });
    roster.layer(&Role::Writer, c).unwrap()
}

/// A pool call waiting for a replica's slot when the layer is stopped sends nothing once the
/// slot frees: the stop is read after the wait, as an online call reads it after its own.
#[tokio::test(flavor = "multi_thread")]
async fn a_pool_call_waiting_for_a_replica_at_the_stop_is_never_sent() {
    let mock = slow_mock(Duration::from_millis(300)).await;
    let dir = tempfile::tempdir().unwrap();
    let roster = Roster::new(Budget::default());
    let layer = pool_layer(&roster, &mock, 1, dir.path());
    let calls: Vec<_> = (0..2)
        .map(|i| {
            let layer = layer.clone();
            tokio::spawn(async move { layer.complete(&call(0, i)).await })
        })
        .collect();
    // One call in flight, the other waiting for the replica's one slot.
    received(&mock, 1).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    roster.stop_all("stopped by SIGINT");
    let ended: Vec<_> = joined(calls).await;
    assert_eq!(ended.iter().filter(|r| r.is_ok()).count(), 1, "{ended:?}");
    let stopped = ended.iter().find_map(|r| r.as_ref().err()).unwrap();
    assert!(stopped.to_string().contains("SIGINT"), "{stopped}");
    assert_eq!(mock.request_count(), 1, "a call was sent after the stop");
    assert_eq!(layer.stats().upstream_calls, 1);
}

async fn joined(
    calls: Vec<tokio::task::JoinHandle<Result<cb_llm::Completion, cb_llm::LlmError>>>,
) -> Vec<Result<cb_llm::Completion, cb_llm::LlmError>> {
    let mut ended = Vec::new();
    for c in calls {
        ended.push(c.await.unwrap());
    }
    ended
}

/// After a stop, [`Roster::settled`] waits for the calls under way (a stopped build records
/// its counts then): one whose task is cancelled, as a stopped build's are, and one whose
/// answer comes; by the time it returns each request the mock received is counted sent and
/// the answer that came is accounted.
#[tokio::test(flavor = "multi_thread")]
async fn settled_waits_for_the_calls_under_way_after_a_stop() {
    let mock = slow_mock(Duration::from_secs(1)).await;
    let dir = tempfile::tempdir().unwrap();
    let mut c = LlmConfig::offline();
    c.backend = BackendKind::Openai;
    c.base_url = mock.base_url();
    c.model = "m".into();
    c.cache_path = Some(dir.path().join("c.sqlite"));
    c.max_retries = 0;
    let roster = Roster::new(Budget::default());
    let (writer, reader) = (
        roster.layer(&Role::Writer, c.clone()).unwrap(),
        roster.layer(&Role::Reader, c).unwrap(),
    );
    let cancelled = {
        let writer = writer.clone();
        tokio::spawn(async move { writer.complete(&call(0, 0)).await })
    };
    let answered = {
        let reader = reader.clone();
        tokio::spawn(async move { reader.complete(&call(1, 0)).await })
    };
    received(&mock, 2).await;
    roster.stop_all("stopped by SIGINT");
    let early = tokio::time::timeout(Duration::from_millis(100), roster.settled()).await;
    assert!(early.is_err(), "settled with two calls in flight");
    cancelled.abort();
    tokio::time::timeout(Duration::from_secs(10), roster.settled())
        .await
        .expect("calls still under way once one was cancelled and the other answered");
    let (w, r) = (writer.stats(), reader.stats());
    assert_eq!((w.upstream_calls, r.upstream_calls), (1, 1));
    assert_eq!(r.completion_tokens, 10, "the answer that came is accounted");
    assert!(answered.await.unwrap().is_ok());
    assert!(cancelled.await.unwrap_err().is_cancelled());
    assert_eq!(mock.request_count(), 2);
}

/// Pool calls of `layer` for items `items`, each in a task of its own.
fn spawned(
    layer: &Llm,
    items: std::ops::Range<usize>,
) -> Vec<tokio::task::JoinHandle<Result<cb_llm::Completion, cb_llm::LlmError>>> {
    items
        .map(|i| {
            let layer = layer.clone();
            tokio::spawn(async move { layer.complete(&call(0, i)).await })
        })
        .collect()
}

/// Cancels `calls` (drops their futures, as a recipe drops the calls of the items it gives up
/// or of a build it stops) and waits until they are gone.
async fn cancelled(
    calls: Vec<tokio::task::JoinHandle<Result<cb_llm::Completion, cb_llm::LlmError>>>,
) {
    for c in calls {
        c.abort();
        assert!(c.await.unwrap_err().is_cancelled());
    }
}

/// A pool call cancelled while it holds a replica's slot (its request under way) gives the
/// slot back: the pool, shared by every recipe of the build, keeps its whole concurrency for
/// the calls after it.
#[tokio::test(flavor = "multi_thread")]
async fn a_pool_call_cancelled_in_its_slot_gives_the_slot_back() {
    let mock = slow_mock(Duration::from_secs(600)).await;
    let dir = tempfile::tempdir().unwrap();
    let roster = Roster::new(Budget::default());
    let layer = pool_layer(&roster, &mock, 2, dir.path());
    // Both slots taken by requests the mock holds, then both calls cancelled.
    let calls = spawned(&layer, 0..2);
    received(&mock, 2).await;
    cancelled(calls).await;
    // Two more at once: each gets a slot and is sent while the other is under way, which a
    // pool short of a slot would never do.
    let calls = spawned(&layer, 2..4);
    received(&mock, 4).await;
    cancelled(calls).await;
    // And a call after them is answered.
    mock.set_latency(Duration::ZERO);
    let answered = tokio::time::timeout(Duration::from_secs(30), layer.complete(&call(0, 4)))
        .await
        .expect("the pool kept no free slot after the cancelled calls");
    assert_eq!(answered.unwrap().text, "fine");
    assert_eq!(mock.request_count(), 5);
    assert_eq!(layer.stats().upstream_calls, 5);
}
