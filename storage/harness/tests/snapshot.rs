//! Log compaction and catch-up by snapshot, with real processes.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::Value;
use strata_harness::Cluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follower_down_through_compactions_catches_up_by_snapshot() {
    // Proves: the leader compacts its log while a follower is down; the
    // restarted follower cannot be sent the entries it missed, gets a
    // snapshot instead, and then serves exactly the same data.
    let mut c = Cluster::start_with_args(
        3,
        &[
            "--compact-log-entries",
            "200",
            "--compact-keep-entries",
            "20",
        ],
    )
    .await
    .unwrap();
    let follower = c.follower().await.unwrap();
    c.kill(follower).unwrap();

    let total = 1200usize;
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let http = c.http().clone();
            let gw = c.gateway_url();
            tokio::spawn(async move {
                for i in (w..total).step_by(8) {
                    let r = http
                        .put(format!("{gw}/v1/kv/snap/{i:05}"))
                        .body(format!("v{i}"))
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }

    c.start_node(follower).unwrap();
    let url = format!(
        "{}/v1/kv?prefix=snap/&limit=1000&consistency=stale&keys_only=true",
        c.node_url(follower)
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = c.http().get(&url).send().await;
        if let Ok(r) = r
            && r.status() == StatusCode::OK
        {
            let page: Value = r.json().await.unwrap();
            if page["kvs"].as_array().map_or(0, Vec::len) == 1000
                && page["next_page_token"].is_string()
            {
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "follower did not catch up; logs in {}",
            c.log_dir().display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let leader = c.wait_leader(Duration::from_secs(5)).await.unwrap();
    for id in [leader, follower] {
        for line in c.node_log(id).lines().filter(|l| l.contains("snapshot")) {
            eprintln!("node {id}: {line}");
        }
    }
    assert!(
        c.node_log(follower).contains("snapshot installed"),
        "the follower caught up without a snapshot"
    );
    assert!(
        c.node_log(leader).contains("snapshot sent"),
        "the leader never sent one"
    );
    // Every value matches, read locally on the follower.
    for i in (0..total).step_by(97) {
        let r = c
            .http()
            .get(format!(
                "{}/v1/kv/snap/{i:05}?consistency=stale",
                c.node_url(follower)
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(r.text().await.unwrap(), format!("v{i}"));
    }
}
