//! Membership changes on a running cluster under load.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use eventsource_stream::Eventsource;
use futures::{Stream, StreamExt};
use reqwest::StatusCode;
use serde_json::{Value, json};
use strata_harness::Cluster;

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

/// Starts node `id` with `--join` and waits until the cluster lists it.
async fn join(c: &mut Cluster, id: u64) {
    c.add_joining_node(id).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while member(&members(c).await, id).is_none() {
        assert!(
            Instant::now() < deadline,
            "node {id} never joined; logs in {}",
            c.log_dir().display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `POST` (or `DELETE`) of `path` on the gateway, with no body.
async fn post(c: &Cluster, path: &str) -> reqwest::Response {
    let url = format!("{}{path}", c.gateway_url());
    c.http().post(url).send().await.unwrap()
}

async fn delete(c: &Cluster, path: &str) -> reqwest::Response {
    let url = format!("{}{path}", c.gateway_url());
    c.http().delete(url).send().await.unwrap()
}

fn member(m: &Value, id: u64) -> Option<&Value> {
    m["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_learner_promote_and_remove_an_old_node_under_load() {
    // Proves: a fourth node joins as a learner (catching up by snapshot),
    // is promoted to voter, and an old node is removed, while a writer
    // runs; the writer sees only retryable errors and every acknowledged
    // write is readable afterwards, also on the new node.
    let mut c = Cluster::start(3).await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = c.spawn_writer("m-", stop.clone());
    tokio::time::sleep(Duration::from_millis(300)).await;

    join(&mut c, 4).await;
    assert_eq!(member(&members(&c).await, 4).unwrap()["voter"], false);

    let r = post(&c, "/v1/cluster/members/4/promote").await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    assert_eq!(member(&members(&c).await, 4).unwrap()["voter"], true);

    let leader = c.wait_leader(Duration::from_secs(5)).await.unwrap();
    let old = (1..=3).find(|&id| id != leader).unwrap();
    let r = delete(&c, &format!("/v1/cluster/members/{old}")).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    assert!(member(&members(&c).await, old).is_none());
    c.kill(old).unwrap();

    // A second removal of the same node is refused clearly.
    let r = delete(&c, &format!("/v1/cluster/members/{old}")).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let r = c
        .http()
        .post(format!("{}/v1/cluster/members", c.gateway_url()))
        .json(&json!({"id": 4, "address": "127.0.0.1:1"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        StatusCode::BAD_REQUEST,
        "adding an existing member"
    );

    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let acked = writer.await.unwrap();
    assert!(!acked.is_empty(), "the writer made no progress");
    // The reshaped cluster (voters: the leader, one old node and node 4)
    // takes writes.
    c.put_until_ok("after-change", "ok", Duration::from_secs(10))
        .await
        .expect("a write is accepted after the change");
    for key in acked.iter().step_by(7) {
        let r = c
            .http()
            .get(format!("{}/v1/kv/{key}", c.gateway_url()))
            .send()
            .await
            .unwrap();
        assert_eq!(r.text().await.unwrap(), *key);
    }
    // The new voter holds the data too.
    let last = acked.last().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = c
            .http()
            .get(format!("{}/v1/kv/{last}?consistency=stale", c.node_url(4)))
            .send()
            .await
            .unwrap();
        if r.status() == StatusCode::OK {
            assert_eq!(r.text().await.unwrap(), *last);
            break;
        }
        assert!(Instant::now() < deadline, "node 4 lags behind");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        c.node_log(4).contains("snapshot installed"),
        "node 4 joined without a snapshot"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn learner_replaces_a_voter_in_one_joint_change() {
    // Proves: promoting a learner with `?replace=OLD` swaps it for OLD in a
    // single joint-consensus change: afterwards the group has three voters,
    // OLD is gone, and writes still commit with OLD stopped.
    let mut c = Cluster::start(3).await.unwrap();
    join(&mut c, 4).await;
    let leader = c.wait_leader(Duration::from_secs(5)).await.unwrap();
    let old = (1..=3).find(|&id| id != leader).unwrap();
    let r = post(&c, &format!("/v1/cluster/members/4/promote?replace={old}")).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    // The joint configuration is left automatically.
    let voters = voters_without(&c, old).await;
    assert!(voters.len() == 3 && voters.contains(&4), "{voters:?}");
    c.kill(old).unwrap();
    c.put_until_ok("after-swap", "ok", Duration::from_secs(10))
        .await
        .expect("a write is accepted after the change");
}

/// The voters listed by the cluster, once no joint configuration remains
/// that still names `gone`.
async fn voters_without(c: &Cluster, gone: u64) -> Vec<u64> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let m = members(c).await;
        if member(&m, gone).is_none() {
            return m["members"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|x| x["voter"] == true)
                .map(|x| x["id"].as_u64().unwrap())
                .collect();
        }
        assert!(Instant::now() < deadline, "{gone} is still listed: {m}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replacing_or_removing_the_leader_hands_leadership_over_first() {
    // Proves: a change that removes the current leader (a joint replace,
    // then a plain remove) succeeds: the leader first hands leadership to a
    // voter that stays, the removed node does not crash, and the group keeps
    // taking writes. Found by the chaos harness: a leader that removed
    // itself panicked inside raft-rs and took the process down.
    let mut c = Cluster::start(3).await.unwrap();
    join(&mut c, 4).await;
    let first = c.wait_leader(Duration::from_secs(5)).await.unwrap();
    let r = post(
        &c,
        &format!("/v1/cluster/members/4/promote?replace={first}"),
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let voters = voters_without(&c, first).await;
    assert_eq!(voters.len(), 3, "{voters:?}");
    assert!(voters.contains(&4), "{voters:?}");
    c.put_until_ok("after-replace", "ok", Duration::from_secs(10))
        .await
        .expect("a write is accepted after the leader was replaced");

    let second = c.wait_leader(Duration::from_secs(5)).await.unwrap();
    assert_ne!(second, first);
    let r = delete(&c, &format!("/v1/cluster/members/{second}")).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    assert_eq!(voters_without(&c, second).await.len(), 2);
    c.put_until_ok("after-remove", "ok", Duration::from_secs(10))
        .await
        .expect("a write is accepted after the leader was removed");
    for id in [first, second] {
        let live = c
            .http()
            .get(format!("{}/health/live", c.node_url(id)))
            .send()
            .await
            .unwrap();
        assert_eq!(live.status(), StatusCode::OK, "removed node {id} died");
        assert!(!c.node_log(id).contains("panicked"), "node {id} panicked");
    }
}

/// The events of `resp`'s event stream, until it ends (or breaks).
fn events(resp: reqwest::Response) -> impl Stream<Item = eventsource_stream::Event> + Unpin {
    Box::pin(
        resp.bytes_stream()
            .eventsource()
            .take_while(|e| std::future::ready(e.is_ok()))
            .filter_map(|e| std::future::ready(e.ok())),
    )
}

/// The first `event: status` of an event stream, read within 5 s.
async fn first_status(
    events: &mut (impl Stream<Item = eventsource_stream::Event> + Unpin),
) -> Value {
    let first = async {
        while let Some(e) = events.next().await {
            if e.event == "status" {
                return serde_json::from_str(&e.data).unwrap();
            }
        }
        panic!("the stream ended before its first status event")
    };
    tokio::time::timeout(Duration::from_secs(5), first)
        .await
        .expect("a status event within 5 s")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_node_that_still_runs_refuses_to_speak_for_the_cluster() {
    // Proves: a node that applied its own removal, and runs on, no longer
    // answers for the cluster: it ends the event stream it was serving,
    // answers the status, the stats and the member list 503 UNAVAILABLE
    // ("ask another node") over REST and gRPC, and a stream opened through
    // the gateway comes from a member. Before, it went on serving its last
    // view, in which it was still listed.
    let c = Cluster::start(3).await.unwrap();
    let leader = c.wait_leader(Duration::from_secs(10)).await.unwrap();
    let gone = c.node_ids().into_iter().find(|id| *id != leader).unwrap();
    let resp = c
        .http()
        .get(format!("{}/v1/cluster/events", c.node_url(gone)))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let mut stream = events(resp);
    first_status(&mut stream).await;

    let r = delete(&c, &format!("/v1/cluster/members/{gone}")).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());

    // The stream it was serving ends (status events come at least every
    // second, so within a few of the removal).
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while stream.next().await.is_some() {}
    })
    .await;
    assert!(
        ended.is_ok(),
        "node {gone}'s event stream still runs 10 s after its removal"
    );

    for path in ["status", "stats", "members", "events"] {
        let r = c
            .http()
            .get(format!("{}/v1/cluster/{path}", c.node_url(gone)))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE, "{path}");
        assert_eq!(r.headers()["x-strata-gateway-retry"], "true", "{path}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["code"], "UNAVAILABLE", "{path}: {body}");
        let message = body["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("node {gone} was removed")),
            "{path}: {message}"
        );
    }
    let grpc = strata_client::Client::connect(&c.node_url(gone))
        .await
        .unwrap();
    for refused in [
        grpc.status().await.map(|_| ()).unwrap_err(),
        grpc.members().await.map(|_| ()).unwrap_err(),
    ] {
        match refused {
            strata_client::ClientError::Status(s) => {
                assert_eq!(s.code(), tonic::Code::Unavailable, "{s:?}")
            }
            other => panic!("{other}"),
        }
    }

    // Through the gateway, every new stream is a member's.
    for _ in 0..10 {
        let resp = c
            .http()
            .get(format!("{}/v1/cluster/events", c.gateway_url()))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let status = first_status(&mut events(resp)).await;
        let listed: Vec<u64> = status["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["id"].as_u64().unwrap())
            .collect();
        assert!(!listed.contains(&gone), "{status}");
    }
}
