//! A member that lost its disk: it comes back empty under its old id and
//! command line, is told apart from a member that merely lags, and is
//! caught up as a new life of that member (a new incarnation), voting only
//! once its leader vouched for it; the documented replacement (removed,
//! then an empty node started with `--join` under a new id) works too.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::Value;
use strata_harness::Cluster;

/// What the node says while it may not vote, and once it may.
const UNPROVEN: &str = "no leader has vouched for it yet";
const PROVEN: &str = "this member is proven";
/// What its leader says on hearing the new life.
const NEW_LIFE: &str = "came back with an empty log";

/// Starts node `id` (with `--join` when `join`) on an emptied data
/// directory and waits until it is proven: it must neither panic nor exit,
/// and its leader must have said that it came back as a new life.
async fn start_and_expect_new_life(c: &mut Cluster, id: u64, join: bool) {
    let log_before = c.node_log(id).len();
    let others: Vec<u64> = c.node_ids().into_iter().filter(|&n| n != id).collect();
    let others_before: Vec<usize> = others.iter().map(|&n| c.node_log(n).len()).collect();
    if join {
        c.start_node_joining(id).unwrap();
    } else {
        c.start_node(id).unwrap();
    }
    let started = Instant::now();
    let deadline = started + Duration::from_secs(30);
    let log = loop {
        let log = String::from_utf8_lossy(&c.node_log(id).as_bytes()[log_before..]).into_owned();
        let panic = log
            .lines()
            .filter(|l| l.contains("panicked") || l.contains("out of range"))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(panic.is_empty(), "node {id} panicked:\n{panic}");
        if log.contains(PROVEN) {
            break log;
        }
        assert!(
            Instant::now() < deadline,
            "node {id} was not vouched for within 30s; its log:\n{log}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        c.wait_exit(id, Duration::from_millis(500)).await.is_err(),
        "node {id} exited; its log:\n{log}"
    );
    let heard = others.iter().zip(&others_before).any(|(&n, &before)| {
        String::from_utf8_lossy(&c.node_log(n).as_bytes()[before..]).contains(NEW_LIFE)
    });
    assert!(
        heard,
        "no other member said that node {id} came back with an empty log"
    );
    let status: Value = c
        .http()
        .get(format!("{}/v1/cluster/status", c.node_url(id)))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let own = status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id)
        .cloned()
        .unwrap_or_default();
    assert_eq!(own["proven"], true, "node {id}'s own status: {own}");
    let said = log
        .lines()
        .filter(|l| l.contains(UNPROVEN) || l.contains(PROVEN))
        .take(3);
    eprintln!(
        "node {id} was vouched for {:?} after it started, saying:",
        started.elapsed()
    );
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
async fn member_restarted_on_an_empty_disk_is_caught_up_as_a_new_life() {
    // Proves: a follower killed, its data directory emptied and started
    // again with its old command line comes back by itself (before:
    // raft-rs panicked with "to_commit … is out of range [last_index 5]"
    // and the process aborted, at every restart; then it stopped with lost
    // state and needed an operator), its leader drops what it counted of
    // the old life, catches it up and vouches for it, and it serves every
    // write acknowledged before and while it was down; so does starting it
    // empty with `--join` while it is still a member; the other two keep
    // taking writes all along. Then the documented replacement: removing
    // it and starting an empty node with `--join` under a new id brings the
    // cluster back to three voters, the new one caught up by snapshot.
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
    c.put_until_ok("while-it-is-down", "ok", Duration::from_secs(10))
        .await
        .expect("the other two take writes");

    start_and_expect_new_life(&mut c, lost, false).await;
    for i in (0..300).step_by(37) {
        let key = format!("before-{i:03}");
        assert_eq!(read_on(&c, lost, &key).await, key);
    }
    assert_eq!(read_on(&c, lost, "while-it-is-down").await, "ok");

    // Emptied again and started with --join while still a member: the
    // same, since the cluster knows it already.
    c.kill(lost).unwrap();
    c.wipe(lost).unwrap();
    start_and_expect_new_life(&mut c, lost, true).await;
    assert_eq!(read_on(&c, lost, "while-it-is-down").await, "ok");

    // The documented replacement: remove the member and start an empty
    // node with `--join` under a new id.
    c.kill(lost).unwrap();
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
