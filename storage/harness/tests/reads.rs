//! Linearizable reads in both read modes.

use std::time::Duration;

use reqwest::StatusCode;
use strata_harness::Cluster;

async fn read_your_writes_on_a_follower(c: &Cluster) {
    let follower = c.follower().await.unwrap();
    for i in 0..50 {
        let key = format!("ryw-{i}");
        let r = c
            .http()
            .put(format!("{}/v1/kv/{key}", c.gateway_url()))
            .body(key.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        // A default (linearizable) read on another node right after the
        // acknowledgement must see the write.
        let r = c
            .http()
            .get(format!("{}/v1/kv/{key}", c.node_url(follower)))
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.status(),
            StatusCode::OK,
            "{key} missing on node {follower}"
        );
        assert_eq!(r.text().await.unwrap(), key);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn safe_reads_on_a_follower_see_every_acknowledged_write() {
    let c = Cluster::start(3).await.unwrap();
    read_your_writes_on_a_follower(&c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_reads_on_a_follower_see_every_acknowledged_write() {
    let mut c = Cluster::start_with_args(3, &["--read-mode", "lease"])
        .await
        .unwrap();
    read_your_writes_on_a_follower(&c).await;
    // And across a leader change.
    let leader = c.wait_leader(Duration::from_secs(5)).await.unwrap();
    c.kill(leader).unwrap();
    c.wait_gateway_leader(Duration::from_secs(10))
        .await
        .unwrap();
    read_your_writes_on_a_follower(&c).await;
}
