//! Leadership moved on purpose: transfer to another voter, under load.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use strata_client::Client;
use strata_harness::Cluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_transfer_under_load_moves_leadership_without_losing_writes() {
    // Proves: a transfer through the gateway makes the target the leader,
    // concurrent writers see at most retryable errors, and every
    // acknowledged write is readable afterwards.
    let c = Cluster::start(3).await.unwrap();
    let old = c.wait_leader(Duration::from_secs(10)).await.unwrap();
    let target = c.follower().await.unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let writer = c.spawn_writer("load-", stop.clone());
    tokio::time::sleep(Duration::from_millis(300)).await;

    let resp = c
        .http()
        .post(format!("{}/v1/cluster/leader", c.gateway_url()))
        .json(&json!({ "target_id": target }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["leader_id"], target);
    assert_eq!(c.wait_leader(Duration::from_secs(5)).await.unwrap(), target);

    // And back again over gRPC, sent to a follower (forwarded to the leader).
    // A transfer that does not finish in time answers UNAVAILABLE, which is
    // safe to retry; a client does so.
    // The admin token travels with the forwarded request: the leader
    // checks it.
    let via_follower = Client::connect(&c.node_url(old))
        .await
        .unwrap()
        .with_token(c.admin_token())
        .unwrap();
    let mut attempts = 0;
    let back = loop {
        attempts += 1;
        match via_follower.transfer_leader(old).await {
            Err(e) if e.is_retryable() && attempts < 5 => {
                tokio::time::sleep(Duration::from_millis(200)).await
            }
            other => break other.unwrap(),
        }
    };
    assert_eq!(back, old);

    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let acked = writer.await.unwrap();
    assert!(
        acked.len() > 10,
        "the writer made progress: {}",
        acked.len()
    );
    let client = Client::connect(&c.gateway_url()).await.unwrap();
    for key in &acked {
        assert_eq!(
            client.get(key.clone(), false).await.unwrap().as_deref(),
            Some(key.as_bytes()),
            "{key}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfer_to_a_non_member_is_refused() {
    let c = Cluster::start(3).await.unwrap();
    let resp = c
        .http()
        .post(format!("{}/v1/cluster/leader", c.gateway_url()))
        .json(&json!({ "target_id": 9 }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["code"], "INVALID_ARGUMENT");
}
