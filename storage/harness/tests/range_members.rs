//! Membership changes on a cluster of several ranges: a node that joins,
//! is promoted in place of another and so replaces it, in every range.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::Value;
use strata_harness::Cluster;

/// A key in each range once the key space is split at `m` and `t`.
const KEYS: [&str; 3] = ["a", "n", "x"];

/// The ranges the gateway's answering node lists; none while the gateway
/// answers otherwise (a moment during a change).
async fn ranges(c: &Cluster) -> Vec<Value> {
    let r = c
        .http()
        .get(format!("{}/v1/cluster/status", c.gateway_url()))
        .send()
        .await
        .unwrap();
    if r.status() != StatusCode::OK {
        return Vec::new();
    }
    let st: Value = r.json().await.unwrap();
    st["ranges"].as_array().cloned().unwrap_or_default()
}

fn ids(range: &Value, field: &str) -> BTreeSet<u64> {
    range[field]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default()
}

/// Waits until every one of the three ranges, as the gateway's answering
/// node knows them, has `voters` and `learners`.
async fn every_range(c: &Cluster, voters: &[u64], learners: &[u64]) {
    let (voters, learners): (BTreeSet<u64>, BTreeSet<u64>) = (
        voters.iter().copied().collect(),
        learners.iter().copied().collect(),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let rs = ranges(c).await;
        if rs.len() == 3
            && rs
                .iter()
                .all(|r| ids(r, "voters") == voters && ids(r, "learners") == learners)
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "every range with voters {voters:?} and learners {learners:?} within 30 s: {rs:?}; \
             logs in {}",
            c.log_dir().display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `method path` through the gateway until it answers 200 (a promotion
/// is refused 503 until the learner has caught up in every range).
async fn until_ok(c: &Cluster, method: reqwest::Method, path: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = c
            .http()
            .request(method.clone(), format!("{}{path}", c.gateway_url()))
            .send()
            .await
            .unwrap();
        let status = r.status();
        let body = r.text().await.unwrap();
        if status == StatusCode::OK {
            return;
        }
        assert!(
            status == StatusCode::SERVICE_UNAVAILABLE && Instant::now() < deadline,
            "{method} {path}: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_replaced_in_a_cluster_of_three_ranges_is_replaced_in_each() {
    // Proves: with the key space split in three ranges, a fourth node
    // that joins becomes a learner of every range (its replicas started
    // from the leaders' snapshots), its promotion in place of node 1 makes
    // it a voter of every range and removes node 1 from each, and every
    // range then commits with node 4's vote: node 2 is killed, so each
    // range's quorum is node 3 and node 4.
    let mut c = Cluster::start(3).await.unwrap();
    c.wait_leader(Duration::from_secs(10)).await.unwrap();
    let client = c.admin_client().await.unwrap();
    for key in ["m", "t"] {
        client.split_range(key).await.unwrap();
    }
    for key in KEYS {
        client.put(key, "before").await.unwrap();
    }
    every_range(&c, &[1, 2, 3], &[]).await;

    c.add_joining_node(4).unwrap();
    every_range(&c, &[1, 2, 3], &[4]).await;
    until_ok(
        &c,
        reqwest::Method::POST,
        "/v1/cluster/members/4/promote?replace=1",
    )
    .await;
    every_range(&c, &[2, 3, 4], &[]).await;

    // Node 4 holds every range's keys.
    for key in KEYS {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let r = c
                .http()
                .get(format!("{}/v1/kv/{key}?consistency=stale", c.node_url(4)))
                .send()
                .await
                .unwrap();
            if r.status() == StatusCode::OK {
                assert_eq!(r.text().await.unwrap(), "before");
                break;
            }
            assert!(Instant::now() < deadline, "node 4 lacks {key}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    // Each range commits with nodes 3 and 4 alone.
    c.kill(1).unwrap();
    c.kill(2).unwrap();
    for key in KEYS {
        c.put_until_ok(key, "after", Duration::from_secs(20))
            .await
            .unwrap_or_else(|e| panic!("range of {key} takes no write on nodes 3 and 4: {e}"));
        let r = c
            .http()
            .get(format!("{}/v1/kv/{key}", c.node_url(4)))
            .send()
            .await
            .unwrap();
        assert_eq!(r.text().await.unwrap(), "after", "{key} through node 4");
    }
}
