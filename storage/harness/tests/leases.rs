//! Leases against real processes, through the gateway: keys under a lease
//! outlive its TTL while it is kept alive, are never gone before the TTL
//! has passed since the last keep-alive, and are gone soon after it (within
//! an election more when the leader was killed right after that
//! keep-alive); watchers see their deletes.

use std::time::{Duration, Instant};

use strata_client::proto::ChangeKind;
use strata_client::{Client, WatchSelector};
use strata_harness::Cluster;

const TTL: Duration = Duration::from_secs(2);
/// How long after TTL the keys may take to go: the leader's 100 ms check,
/// the revoke's commit, and a busy host.
const SLACK: Duration = Duration::from_millis(1500);
/// More when the leader was killed: the new leader counts the TTL from
/// when it took office, an election after the kill.
const SLACK_ACROSS_A_KILL: Duration = Duration::from_millis(3000);

/// Grants a lease, puts `keys` under it and keeps it alive for `kept`
/// (longer than its TTL); returns its id and when the last keep-alive was
/// sent and answered.
async fn hold(client: &Client, keys: &[&str], kept: Duration) -> (u64, Instant, Instant) {
    let id = client.lease_grant(TTL, 0).await.unwrap().id;
    for key in keys {
        client
            .put_with_lease(key.to_string(), "v", id)
            .await
            .unwrap();
    }
    let until = Instant::now() + kept;
    loop {
        let sent = Instant::now();
        let ttl = client.lease_keep_alive_once(id).await.unwrap();
        assert_eq!(ttl, Some(TTL), "the lease ended while kept alive");
        let answered = Instant::now();
        if answered >= until {
            return (id, sent, answered);
        }
        tokio::time::sleep(TTL / 4).await;
    }
}

/// Reads `key` every 20 ms until it is gone; asserts that no read answered
/// before `not_before` missed it, and returns when the first miss was
/// answered.
async fn wait_gone(client: &Client, key: &str, not_before: Instant, give_up: Instant) -> Instant {
    loop {
        match client.get(key.to_string(), false).await {
            Ok(Some(_)) => {}
            Ok(None) => {
                let answered = Instant::now();
                assert!(
                    answered >= not_before,
                    "{key} was gone {:?} before its TTL had passed since the last keep-alive",
                    not_before - answered
                );
                return answered;
            }
            // An election in progress: not an answer about the key.
            Err(_) => {}
        }
        assert!(Instant::now() < give_up, "{key} outlived its lease");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn keys_end_with_their_lease_never_early_also_across_a_leader_kill() {
    // Proves: a lease kept alive past its TTL keeps its keys; once the
    // keep-alives stop, no read sees a key missing before the TTL has
    // passed since the last keep-alive was sent, and every key is gone
    // within TTL + 1.5 s of the last answer; with the leader killed right
    // after the last keep-alive, the new leader still waits out the TTL
    // and ends the lease within TTL + 3 s; a watch sees every delete.
    let mut c = Cluster::start(3).await.unwrap();
    let gateway = c.gateway_url();
    let client = Client::connect(&gateway).await.unwrap();
    let start = client.put("lease/~start", "s").await.unwrap().index;
    let watcher = tokio::spawn({
        let gateway = gateway.clone();
        async move {
            let client = Client::connect(&gateway).await.unwrap();
            let mut w = client.watch(
                WatchSelector::Prefix(b"lease/".to_vec()),
                start,
                Some(Duration::from_millis(500)),
            );
            let mut deleted = Vec::new();
            while deleted.len() < 4 {
                for e in w.next().await.unwrap().events {
                    if e.kind == ChangeKind::Delete as i32 {
                        deleted.push(String::from_utf8(e.key.to_vec()).unwrap());
                    }
                }
            }
            deleted.sort();
            deleted
        }
    });

    let (id, sent, answered) = hold(&client, &["lease/a1", "lease/a2"], TTL * 2).await;
    for key in ["lease/a1", "lease/a2"] {
        let gone = wait_gone(&client, key, sent + TTL, answered + TTL + SLACK).await;
        eprintln!(
            "{key}: gone {:?} after the last keep-alive",
            gone - answered
        );
    }
    assert_eq!(client.lease_keep_alive_once(id).await.unwrap(), None);

    let (_, sent, answered) = hold(&client, &["lease/b1", "lease/b2"], TTL * 2).await;
    let leader = c.wait_leader(Duration::from_secs(10)).await.unwrap();
    c.kill(leader).unwrap();
    for key in ["lease/b1", "lease/b2"] {
        let gone = wait_gone(
            &client,
            key,
            sent + TTL,
            answered + TTL + SLACK_ACROSS_A_KILL,
        )
        .await;
        eprintln!(
            "{key}: gone {:?} after the last keep-alive, the leader killed",
            gone - answered
        );
    }
    c.start_node(leader).unwrap();

    let deleted = tokio::time::timeout(Duration::from_secs(20), watcher)
        .await
        .expect("the watch saw every delete")
        .unwrap();
    assert_eq!(deleted, ["lease/a1", "lease/a2", "lease/b1", "lease/b2"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keep_alive_stream_through_the_gateway_answers_each_request() {
    // Proves: the bidirectional `Lease/KeepAlive` stream, through Envoy's
    // stream route and whichever node it reaches, answers every request in
    // order, with the TTL for a live lease and 0 for one that does not
    // exist, and keeps the lease's key past its TTL.
    let c = Cluster::start(3).await.unwrap();
    let client = Client::connect(&c.gateway_url()).await.unwrap();
    let id = client.lease_grant(TTL, 0).await.unwrap().id;
    client.put_with_lease("kept/k", "v", id).await.unwrap();
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let mut lease = strata_client::proto::lease_client::LeaseClient::connect(c.gateway_url())
        .await
        .unwrap();
    let mut answers = lease
        .keep_alive(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    let started = Instant::now();
    for n in 0..6 {
        let ask = if n == 5 { 404 } else { id };
        tx.send(strata_client::proto::LeaseKeepAliveRequest { id: ask })
            .await
            .unwrap();
        let answer = answers.message().await.unwrap().expect("an answer");
        assert_eq!(answer.id, ask);
        let want = if ask == id { TTL.as_millis() as u64 } else { 0 };
        assert_eq!(answer.ttl_ms, want, "keep-alive {n}");
        tokio::time::sleep(TTL / 3).await;
    }
    assert!(
        started.elapsed() > TTL,
        "the stream did not outlast the TTL"
    );
    assert_eq!(
        client.get("kept/k", false).await.unwrap().as_deref(),
        Some(&b"v"[..]),
        "the key ended while its lease was kept alive over the stream"
    );
}
