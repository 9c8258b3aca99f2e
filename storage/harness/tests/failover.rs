//! Failures of whole processes: `kill -9` of the leader, and a restart of
//! every node.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use strata_harness::Cluster;

async fn get(c: &Cluster, key: &str) -> (StatusCode, String) {
    let r = c
        .http()
        .get(format!("{}/v1/kv/{key}", c.gateway_url()))
        .send()
        .await
        .unwrap();
    (r.status(), r.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_leader_elects_another_and_writes_resume() {
    // Proves: after kill -9 of the leader a new leader is elected among the
    // survivors, writes through Envoy succeed again, and nothing acknowledged
    // before the kill is lost.
    let mut c = Cluster::start(3).await.unwrap();
    let mut acked = BTreeMap::new();
    for i in 0..50 {
        let (k, v) = (format!("before-{i}"), format!("v{i}"));
        c.put_until_ok(&k, &v, Duration::from_secs(5))
            .await
            .unwrap();
        acked.insert(k, v);
    }
    let old = c.wait_leader(Duration::from_secs(5)).await.unwrap();
    c.kill(old).unwrap();
    let killed_at = Instant::now();
    c.put_until_ok("after-kill", "ok", Duration::from_secs(10))
        .await
        .unwrap();
    eprintln!(
        "first write after the kill succeeded after {:?}",
        killed_at.elapsed()
    );
    let new = c.wait_leader(Duration::from_secs(10)).await.unwrap();
    assert_ne!(new, old);
    for (k, v) in &acked {
        assert_eq!(get(&c, k).await, (StatusCode::OK, v.clone()), "{k}");
    }
    // The old leader rejoins as a follower and catches up.
    c.start_node(old).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = c
            .http()
            .get(format!(
                "{}/v1/kv/after-kill?consistency=stale",
                c.node_url(old)
            ))
            .send()
            .await;
        if let Ok(r) = r
            && r.status() == StatusCode::OK
        {
            assert_eq!(r.text().await.unwrap(), "ok");
            break;
        }
        assert!(Instant::now() < deadline, "restarted node did not catch up");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_restart_keeps_every_acknowledged_write() {
    // Proves: acknowledged writes are durable: kill -9 every node at once,
    // start them again, and every acknowledged key reads back.
    let mut c = Cluster::start(3).await.unwrap();
    let mut acked = BTreeMap::new();
    for i in 0..200 {
        let (k, v) = (format!("key-{i:04}"), format!("value-{i}"));
        c.put_until_ok(&k, &v, Duration::from_secs(5))
            .await
            .unwrap();
        acked.insert(k, v);
    }
    let del = c
        .http()
        .delete(format!("{}/v1/kv/key-0000", c.gateway_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(del.status(), StatusCode::OK);
    acked.remove("key-0000");
    for id in c.node_ids() {
        c.kill(id).unwrap();
    }
    for id in c.node_ids() {
        c.start_node(id).unwrap();
    }
    c.wait_gateway_leader(Duration::from_secs(30))
        .await
        .unwrap();
    for (k, v) in &acked {
        assert_eq!(get(&c, k).await, (StatusCode::OK, v.clone()), "{k}");
    }
    assert_eq!(get(&c, "key-0000").await.0, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minority_refuses_writes_with_a_clear_error() {
    // Proves: with two of three nodes stopped, the survivor accepts no write
    // (nothing is acknowledged without a quorum) and says so at once with a
    // retryable UNAVAILABLE instead of hanging.
    let mut c = Cluster::start(3).await.unwrap();
    let survivor = c.wait_leader(Duration::from_secs(5)).await.unwrap();
    for id in c.node_ids() {
        if id != survivor {
            c.kill(id).unwrap();
        }
    }
    // The old leader steps down once check-quorum notices it lost its quorum.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let started = Instant::now();
        let r = c
            .http()
            .put(format!("{}/v1/kv/lonely", c.node_url(survivor)))
            .body("x")
            .timeout(Duration::from_secs(6))
            .send()
            .await
            .unwrap();
        let status = r.status();
        if status == StatusCode::SERVICE_UNAVAILABLE {
            assert_eq!(r.headers()["x-strata-retryable"], "true");
            let body: serde_json::Value = r.json().await.unwrap();
            assert_eq!(body["code"], "UNAVAILABLE");
            assert!(
                started.elapsed() < Duration::from_secs(1),
                "refusal took {:?}",
                started.elapsed()
            );
            break;
        }
        // Before stepping down, a write times out as OUTCOME_UNKNOWN: never OK.
        assert_eq!(
            status,
            StatusCode::GATEWAY_TIMEOUT,
            "{}",
            r.text().await.unwrap()
        );
        assert!(Instant::now() < deadline, "the minority kept taking writes");
    }
    let r = c
        .http()
        .get(format!(
            "{}/v1/kv/lonely?consistency=stale",
            c.node_url(survivor)
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        StatusCode::NOT_FOUND,
        "a write without quorum was applied"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_stream_reports_the_election_and_how_long_it_took() {
    // Proves: a survivor's /v1/cluster/events stream reports the election
    // after the leader dies: the new leader with the term and how long the
    // group had no leader (and the election it started, if it won).
    let mut c = Cluster::start(3).await.unwrap();
    let leader = c.wait_leader(Duration::from_secs(5)).await.unwrap();
    let watcher = c.follower().await.unwrap();
    let mut stream = c
        .http()
        .get(format!("{}/v1/cluster/events", c.node_url(watcher)))
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .unwrap();
    c.kill(leader).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut text = String::new();
    let mut kinds = Vec::new();
    let elected = loop {
        assert!(
            Instant::now() < deadline,
            "no election reported; saw {kinds:?}"
        );
        let chunk = tokio::time::timeout(Duration::from_secs(2), stream.chunk()).await;
        let Ok(Ok(Some(chunk))) = chunk else { continue };
        text.push_str(&String::from_utf8_lossy(&chunk));
        let mut found = None;
        while let Some(end) = text.find("\n\n") {
            let frame: String = text.drain(..end + 2).collect();
            let Some(data) = frame.strip_prefix("event: raft\ndata: ") else {
                continue;
            };
            let e: serde_json::Value = serde_json::from_str(data.trim()).unwrap();
            kinds.push(e["kind"].as_str().unwrap().to_string());
            if e["kind"] == "leader_changed"
                && e["leader_id"]
                    .as_u64()
                    .is_some_and(|l| l != 0 && l != leader)
            {
                found = Some(e);
            }
        }
        if let Some(e) = found {
            break e;
        }
    };
    // A node reports its own elections; the other survivor may have won.
    if elected["leader_id"] == watcher {
        assert!(kinds.iter().any(|k| k == "election_started"), "{kinds:?}");
    }
    assert!(elected["duration_ms"].as_u64().unwrap() > 0, "{elected}");
    assert!(elected["term"].as_u64().unwrap() > 0);
    eprintln!("election seen by node {watcher}: {elected}");
}
