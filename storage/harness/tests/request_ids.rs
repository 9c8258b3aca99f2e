//! Exactly-once writes against real processes: writes that carry a request
//! id, sent through the gateway while answers time out and the leader is
//! killed, and retried with the same id until definite, are each applied
//! exactly once, which the change history (a watch from index 1) shows.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;
use strata_client::proto::ChangeKind;
use strata_client::{Client, WatchSelector};
use strata_harness::Cluster;

/// Writes per writer.
const WRITES: usize = 150;
/// How long one write may be retried before the test gives up on it.
const RETRY_LIMIT: Duration = Duration::from_secs(30);

/// What a writer saw.
#[derive(Debug, Default)]
struct Tally {
    /// Answers that said the write was a replay of an applied one.
    replayed: usize,
    /// Attempts that ended without a definite answer and were sent again.
    retried: usize,
}

/// Puts `<prefix><n>` = `v<n>` through the gateway over REST, each sent
/// again after every answer that is not definite (503, 504, a lost
/// connection) until it is 200; with `ids`, every attempt of one write
/// carries the same `x-strata-request-id`.
async fn write(c_http: reqwest::Client, gateway: String, prefix: &str, ids: bool) -> Tally {
    let mut tally = Tally::default();
    for n in 0..WRITES {
        let key = format!("{prefix}{n:04}");
        let started = Instant::now();
        loop {
            let mut req = c_http
                .put(format!("{gateway}/v1/kv/{key}"))
                .body(format!("v{n}"))
                .timeout(Duration::from_secs(5));
            if ids {
                req = req.header("x-strata-request-id", format!("{prefix}-{n}"));
            }
            match req.send().await {
                Ok(r) if r.status().is_success() => {
                    let body: Value = r.json().await.unwrap();
                    if body["replayed"] == true {
                        tally.replayed += 1;
                    }
                    break;
                }
                Ok(r) => {
                    let status = r.status().as_u16();
                    assert!(
                        status == 503 || status == 504,
                        "{key}: {status} {}",
                        r.text().await.unwrap_or_default()
                    );
                }
                Err(_) => {}
            }
            tally.retried += 1;
            assert!(started.elapsed() < RETRY_LIMIT, "{key} never succeeded");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    tally
}

/// How many times the history from index 1 puts each key under `prefix`.
async fn puts_per_key(gateway: &str, prefix: &str, last_index: u64) -> BTreeMap<String, usize> {
    let client = Client::connect(gateway).await.unwrap();
    let selector = WatchSelector::Prefix(prefix.as_bytes().to_vec());
    let mut watcher = client.watch(selector, 1, Some(Duration::from_millis(200)));
    let mut puts = BTreeMap::new();
    loop {
        let m = tokio::time::timeout(Duration::from_secs(20), watcher.next())
            .await
            .expect("a watch message within 20 s")
            .unwrap();
        for e in &m.events {
            if e.kind == ChangeKind::Put as i32 {
                *puts
                    .entry(String::from_utf8(e.key.to_vec()).unwrap())
                    .or_insert(0) += 1;
            }
        }
        if m.index >= last_index {
            return puts;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_retried_with_their_request_id_are_applied_exactly_once() {
    // Proves: with answers timing out (an 8 ms request timeout and
    // followers stalling 25 ms at a time, so that many writes are answered
    // 504 although they commit) and the leader killed midway, writes that carry a request id and are retried until
    // definite (by the gateway after a 504, and by the client) are applied
    // exactly once each, the retries of applied ones answered `replayed`;
    // the same writes without an id, retried the same way, are applied
    // more than once (the failure the ids prevent), which shows that the
    // run did produce outcomes that were unknown yet applied.
    let mut c = Cluster::start_with_args(3, &["--request-timeout-ms", "8"])
        .await
        .unwrap();
    let gateway = c.gateway_url();
    let http = c.http().clone();
    let with_ids = tokio::spawn(write(http.clone(), gateway.clone(), "once/", true));
    let without = tokio::spawn(write(http.clone(), gateway.clone(), "plain/", false));
    // For 1.5 s, both followers stall for 25 ms at a time (well inside an
    // election timeout): a write proposed meanwhile outlives its 8 ms and
    // is answered 504, then commits once they resume. On a fast, idle host
    // the timeout alone rarely fires.
    let leader = c.wait_leader(Duration::from_secs(10)).await.unwrap();
    let followers: Vec<u64> = c
        .node_ids()
        .into_iter()
        .filter(|&id| id != leader)
        .collect();
    let stutter_until = std::time::Instant::now() + Duration::from_millis(1500);
    while std::time::Instant::now() < stutter_until {
        for &id in &followers {
            c.pause(id).unwrap();
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
        for &id in &followers {
            c.resume(id).unwrap();
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let leader = c.wait_leader(Duration::from_secs(10)).await.unwrap();
    c.kill(leader).unwrap();
    c.wait_leader(Duration::from_secs(15)).await.unwrap();
    c.start_node(leader).unwrap();
    let with_ids = with_ids.await.unwrap();
    let without = without.await.unwrap();

    // The client's own retries under one id carry this write through the
    // same timeouts.
    let last = Client::connect(&gateway)
        .await
        .unwrap()
        .with_request_ids()
        .put("end", "end")
        .await
        .unwrap()
        .index;
    let once = puts_per_key(&gateway, "once/", last).await;
    let plain = puts_per_key(&gateway, "plain/", last).await;
    let twice = |puts: &BTreeMap<String, usize>| puts.values().filter(|n| **n > 1).count();
    eprintln!(
        "with ids: {} retries, {} answers replayed, {} keys put more than once; \
         without: {} retries, {} keys put more than once",
        with_ids.retried,
        with_ids.replayed,
        twice(&once),
        without.retried,
        twice(&plain)
    );
    assert_eq!(once.len(), WRITES, "a write with an id is missing");
    assert!(
        once.values().all(|n| *n == 1),
        "writes with ids applied twice: {:?}",
        once.iter().filter(|(_, n)| **n > 1).collect::<Vec<_>>()
    );
    assert_eq!(plain.len(), WRITES, "a write without an id is missing");
    assert!(
        with_ids.replayed > 0 && twice(&plain) > 0,
        "the run made no write whose outcome was unknown yet applied; logs in {}",
        c.log_dir().display()
    );
}

/// Puts `key` on node `id` directly, as the gateway sends its `attempt`th
/// attempt of a write under `request_id`, giving the node `wait_ms` for it.
async fn put_attempt(
    c: &Cluster,
    id: u64,
    key: &str,
    request_id: &str,
    attempt: u32,
    wait_ms: u64,
) -> (u16, Value) {
    let r = c
        .http()
        .put(format!("{}/v1/kv/{key}", c.node_url(id)))
        .header("x-strata-request-id", request_id)
        .header("x-envoy-attempt-count", attempt.to_string())
        .header("x-envoy-expected-rq-timeout-ms", wait_ms.to_string())
        .body("first")
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// The leader node `id` knows of (0: none); None when it does not answer.
async fn leader_seen_by(c: &Cluster, id: u64) -> Option<u64> {
    let r = c
        .http()
        .get(format!("{}/v1/cluster/status", c.node_url(id)))
        .timeout(Duration::from_secs(2))
        .send()
        .await
        .ok()?;
    r.json::<Value>().await.ok()?["leader_id"].as_u64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_refused_by_a_node_that_cannot_know_is_an_unknown_outcome() {
    // Proves (the gateway's retries as a node sees them): a write whose
    // first attempt was appended by a leader cut off from its followers,
    // and whose second attempt finds that node without a leader, is
    // answered "outcome unknown" (504 / DEADLINE_EXCEEDED), not "no leader
    // is known; retry" (503 / UNAVAILABLE, which says it was not applied):
    // once one follower is back, the first attempt commits. A first
    // attempt refused the same way is still a plain 503, and is never
    // applied.
    let mut c = Cluster::start(3).await.unwrap();
    let leader = c.wait_leader(Duration::from_secs(10)).await.unwrap();
    let followers: Vec<u64> = c
        .node_ids()
        .into_iter()
        .filter(|&id| id != leader)
        .collect();
    for &id in &followers {
        c.kill(id).unwrap();
    }

    // Attempt 1: appended by the leader alone, never confirmed.
    let (status, body) = put_attempt(&c, leader, "cut-off", "cut-off-1", 1, 1500).await;
    assert_eq!(status, 504, "the first attempt: {body}");
    // The leader steps down, having heard from no quorum.
    let started = Instant::now();
    while leader_seen_by(&c, leader).await != Some(0) {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "node {leader} kept its leadership alone; logs in {}",
            c.log_dir().display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Attempt 2, and a gRPC attempt 3, reach a node without a leader.
    let (status, body) = put_attempt(&c, leader, "cut-off", "cut-off-1", 2, 1500).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (504, Some("OUTCOME_UNKNOWN")),
        "a retry refused for want of a leader: {body}"
    );
    let mut kv = strata_client::proto::kv_client::KvClient::connect(c.node_url(leader))
        .await
        .unwrap();
    let mut req = strata_client::once::request(
        strata_client::proto::PutRequest {
            key: "cut-off".into(),
            value: "first".into(),
            ..Default::default()
        },
        "cut-off-1",
    );
    req.metadata_mut()
        .insert("x-envoy-attempt-count", "3".parse().unwrap());
    let refused = kv.put(req).await.expect_err("no leader");
    assert_eq!(
        refused.code(),
        tonic::Code::DeadlineExceeded,
        "a gRPC retry refused for want of a leader: {refused:?}"
    );
    // A first attempt refused the same way is definite.
    let (status, body) = put_attempt(&c, leader, "never", "never-1", 1, 1500).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (503, Some("UNAVAILABLE")),
        "{body}"
    );

    // With one follower back, the old leader (its log the longer) is
    // elected again and commits the first attempt.
    c.start_node(followers[0]).unwrap();
    assert_eq!(
        c.wait_leader(Duration::from_secs(30)).await.unwrap(),
        leader
    );
    let client = Client::connect(&c.node_url(leader)).await.unwrap();
    let got = client.get("cut-off", false).await.unwrap();
    assert_eq!(
        got.as_deref(),
        Some(&b"first"[..]),
        "the first attempt was applied: a 503 to its retry would have been false"
    );
    assert!(
        client.get("never", false).await.unwrap().is_none(),
        "the refused first attempt was applied"
    );
    // Sent again under its id, the write is answered as applied.
    let (status, body) = put_attempt(&c, leader, "cut-off", "cut-off-1", 1, 5000).await;
    assert_eq!(
        (status, body["replayed"].as_bool()),
        (200, Some(true)),
        "{body}"
    );
}
