//! A member that lost its disk: it comes back empty under its old id and
//! command line, is told apart from a member that merely lags, stops with a
//! clear message, and is replaced the documented way (removed, then an
//! empty node started with `--join` under a new id).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::Value;
use strata_harness::Cluster;

/// What the node must say when it stops: what happened and what to do.
const LOST_STATE: &str = "lost data it had acknowledged";
const REMEDY: &str = "strata member remove";

/// Starts node `id` (with `--join` when `join`), waits until it ends by
/// itself and checks that it ended with an error exit (not a signal, not a
/// panic) and the clear message, in at most a few seconds.
async fn start_and_expect_clear_stop(c: &mut Cluster, id: u64, join: bool) {
    let log_before = c.node_log(id).len();
    if join {
        c.start_node_joining(id).unwrap();
    } else {
        c.start_node(id).unwrap();
    }
    let started = Instant::now();
    let status = c.wait_exit(id, Duration::from_secs(30)).await.unwrap();
    let took = started.elapsed();
    let log = String::from_utf8_lossy(&c.node_log(id).as_bytes()[log_before..]).into_owned();
    let panic = log
        .lines()
        .filter(|l| l.contains("panicked") || l.contains("out of range"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        panic.is_empty(),
        "node {id} panicked instead of stopping clearly ({status}):\n{panic}"
    );
    assert!(
        log.contains(LOST_STATE) && log.contains(REMEDY),
        "node {id} stopped ({status}) without the clear message; its log:\n{log}"
    );
    assert!(
        status.code().is_some_and(|code| code != 0),
        "node {id} must exit with an error code, not {status}"
    );
    assert!(
        took < Duration::from_secs(10),
        "node {id} took {took:?} to stop"
    );
    let said = log.lines().filter(|l| l.contains(LOST_STATE));
    eprintln!("node {id} stopped by itself after {took:?} ({status}), saying:");
    for line in said {
        eprintln!("  {line}");
    }
}

async fn members(c: &Cluster) -> Value {
    c.http()
        .get(format!("{}/v1/cluster/members", c.gateway_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The listing of member `id`, once the cluster lists it.
async fn wait_member(c: &Cluster, id: u64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let m = members(c).await;
        let found = m["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["id"] == id)
            .cloned();
        if let Some(member) = found {
            return member;
        }
        assert!(
            Instant::now() < deadline,
            "node {id} never joined; logs in {}",
            c.log_dir().display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Reads `key` from node `id` itself (a stale read: it answers from its
/// own data), waiting until it has caught up.
async fn read_on(c: &Cluster, id: u64, key: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = c
            .http()
            .get(format!("{}/v1/kv/{key}?consistency=stale", c.node_url(id)))
            .send()
            .await;
        if let Ok(r) = r
            && r.status() == StatusCode::OK
        {
            return r.text().await.unwrap();
        }
        assert!(Instant::now() < deadline, "node {id} never served {key}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn member_restarted_on_an_empty_disk_stops_clearly_and_returns_by_join() {
    // Proves: a follower killed, its data directory emptied and started
    // again with its old command line stops by itself within seconds with
    // an error exit and a message saying it lost acknowledged data and how
    // to bring it back (before: raft-rs panicked with "to_commit … is out
    // of range [last_index 5]" and the process aborted, at every restart);
    // so does starting it empty with `--join` while it is still a member;
    // the other two keep taking writes all along; removing it and starting
    // an empty node with `--join` under a new id brings the cluster back to
    // three voters, the new one caught up by snapshot and serving the data.
    let mut c = Cluster::start(3).await.unwrap();
    for i in 0..300 {
        let key = format!("before-{i:03}");
        c.put_until_ok(&key, &key, Duration::from_secs(5))
            .await
            .unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writer = c.spawn_writer("during-", stop.clone());
    let lost = c.follower().await.unwrap();
    c.kill(lost).unwrap();
    c.wipe(lost).unwrap();

    start_and_expect_clear_stop(&mut c, lost, false).await;
    c.put_until_ok("while-it-is-down", "ok", Duration::from_secs(10))
        .await
        .expect("the other two take writes");
    // A supervisor that restarts it gets the same clear stop, every time.
    start_and_expect_clear_stop(&mut c, lost, false).await;
    // So does starting it empty with --join before removing it: the
    // cluster still counts it as a voter holding what it acknowledged.
    c.wipe(lost).unwrap();
    start_and_expect_clear_stop(&mut c, lost, true).await;

    // The documented way back: remove the member and start an empty node
    // with `--join` under a new id. A new id, because raft knows members by
    // id only: messages the others addressed to the old member before its
    // removal (heartbeats still queued for it, counting what it had
    // acknowledged) would otherwise reach the new node and look like proof
    // that it lost state.
    let r = c
        .http()
        .delete(format!("{}/v1/cluster/members/{lost}", c.gateway_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let back = 4;
    c.add_joining_node(back).unwrap();
    assert_eq!(wait_member(&c, back).await["voter"], false);
    let r = c
        .http()
        .post(format!(
            "{}/v1/cluster/members/{back}/promote",
            c.gateway_url()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    assert_eq!(wait_member(&c, back).await["voter"], true);

    stop.store(true, Ordering::Relaxed);
    let acked = writer.await.unwrap();
    assert!(!acked.is_empty(), "the writer made no progress");
    for i in (0..300).step_by(37) {
        let key = format!("before-{i:03}");
        assert_eq!(read_on(&c, back, &key).await, key);
    }
    assert_eq!(read_on(&c, back, "while-it-is-down").await, "ok");
    let last = acked.last().unwrap();
    assert_eq!(read_on(&c, back, last).await, *last);
    assert!(
        c.node_log(back).contains("snapshot installed"),
        "node {back} came back without a snapshot"
    );
    c.put_until_ok("after-return", "ok", Duration::from_secs(10))
        .await
        .expect("the cluster takes writes with the returned member");
}
