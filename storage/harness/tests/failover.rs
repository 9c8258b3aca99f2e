//! Failures of whole processes: `kill -9` of the leader, and a restart of
//! every node.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use strata_harness::Cluster;

/// Puts through the gateway until one succeeds or `timeout` passes.
async fn put_until_ok(
    c: &Cluster,
    key: &str,
    value: &str,
    timeout: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let r = c
            .http()
            .put(format!("{}/v1/kv/{key}", c.gateway_url()))
            .body(value.to_string())
            .timeout(Duration::from_secs(3))
            .send()
            .await;
        match r {
            Ok(r) if r.status() == StatusCode::OK => return Ok(()),
            Ok(r) => {
                let status = r.status();
                anyhow::ensure!(
                    status == StatusCode::SERVICE_UNAVAILABLE
                        || status == StatusCode::GATEWAY_TIMEOUT,
                    "unexpected {status}: {}",
                    r.text().await.unwrap_or_default()
                );
            }
            Err(e) => anyhow::ensure!(e.is_timeout() || e.is_connect() || e.is_request(), "{e}"),
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "no successful put of {key} within {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

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
        put_until_ok(&c, &k, &v, Duration::from_secs(5))
            .await
            .unwrap();
        acked.insert(k, v);
    }
    let old = c.wait_leader(Duration::from_secs(5)).await.unwrap();
    c.kill(old).unwrap();
    let killed_at = Instant::now();
    put_until_ok(&c, "after-kill", "ok", Duration::from_secs(10))
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
        put_until_ok(&c, &k, &v, Duration::from_secs(5))
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
