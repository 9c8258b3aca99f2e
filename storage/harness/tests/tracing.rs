//! Traces from Envoy to a follower's fsync: one PUT through the gateway,
//! with Envoy and every node exporting to a real OTLP receiver.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use strata_harness::Cluster;
use strata_harness::otlp::{ReceivedSpan, Receiver};

/// Every span of the trace that holds a span named `name`, once the spans
/// the test waits for have all arrived.
async fn trace_with(
    receiver: &Receiver,
    ready: impl Fn(&[ReceivedSpan]) -> bool,
    name: &str,
) -> Vec<ReceivedSpan> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let all = receiver.spans();
        if let Some(root) = all.iter().find(|s| s.span.name == name) {
            let trace: Vec<ReceivedSpan> = all
                .iter()
                .filter(|s| s.trace_id() == root.trace_id())
                .cloned()
                .collect();
            if ready(&trace) {
                return trace;
            }
        }
        if Instant::now() > deadline {
            let names: Vec<_> = all
                .iter()
                .map(|s| (s.service.clone(), s.node_id, s.span.name.clone()))
                .collect();
            panic!("the trace never completed; received: {names:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn named<'a>(trace: &'a [ReceivedSpan], name: &str) -> Vec<&'a ReceivedSpan> {
    trace.iter().filter(|s| s.span.name == name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_put_through_envoy_is_one_trace_from_the_gateway_to_a_followers_fsync() {
    // Proves: Envoy starts a trace for a PUT and the nodes continue it; the
    // leader's request, propose, append + fsync and apply spans and at least
    // one follower's append + fsync and apply spans all carry the one trace
    // id; every span's parent is a span of the same trace (one root, in
    // Envoy); the leader's fsync span lies inside its commit (propose) span.
    let receiver = Receiver::start().await.unwrap();
    let cluster = Cluster::start_traced(3, &receiver.address()).await.unwrap();
    cluster.wait_leader(Duration::from_secs(10)).await.unwrap();
    // Until Envoy's health checks have found the leader, the gateway sends
    // a write to any node, and a follower forwards it: the request span the
    // test follows would then be on the follower.
    let deadline = Instant::now() + Duration::from_secs(30);
    while cluster
        .envoy_stat("cluster.nodes_leader.membership_healthy")
        .await
        != Some(1)
    {
        assert!(Instant::now() < deadline, "Envoy never found the leader");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let resp = cluster
        .http()
        .put(format!("{}/v1/kv/traced", cluster.gateway_url()))
        .body("v")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "{:?}", resp.text().await);

    // The leader is the member that proposed the write, read from the
    // trace itself: on a busy machine leadership can move between a status
    // poll and the PUT.
    let proposer = |trace: &[ReceivedSpan]| {
        trace
            .iter()
            .find(|s| s.span.name == "raft.propose")
            .and_then(|s| s.node_id)
    };
    let complete = |trace: &[ReceivedSpan]| {
        let Some(leader) = proposer(trace) else {
            return false;
        };
        let on = |name: &str| {
            trace
                .iter()
                .any(|s| s.node_id == Some(leader) && s.span.name == name)
        };
        let follower_appended = trace
            .iter()
            .any(|s| s.span.name == "raft.append" && s.node_id.is_some_and(|n| n != leader));
        // Spans are exported as they end, in batches: a parent (the
        // request, Envoy's root) may arrive after its children.
        let gateway = |name: &str| {
            trace
                .iter()
                .any(|s| s.service == "strata-gateway" && s.span.name == name)
        };
        gateway("ingress")
            && trace
                .iter()
                .any(|s| s.service == "strata-gateway" && s.span.name.starts_with("router"))
            && on("PUT /v1/kv/{key}")
            && on("raft.propose")
            && on("raft.append")
            && on("raft.apply")
            && follower_appended
    };
    // Found by the request span: the cluster's own proposals (the entry
    // naming it) make traces of their own.
    let trace = trace_with(&receiver, complete, "PUT /v1/kv/{key}").await;
    let leader = proposer(&trace).expect("a proposing member");

    // One root, in Envoy; every other span's parent is in the trace.
    let ids: HashSet<&[u8]> = trace.iter().map(|s| s.span.span_id.as_slice()).collect();
    let roots: Vec<_> = trace
        .iter()
        .filter(|s| s.span.parent_span_id.is_empty())
        .collect();
    assert_eq!(roots.len(), 1, "one root: {roots:?}");
    assert_eq!(roots[0].service, "strata-gateway");
    for s in &trace {
        if !s.span.parent_span_id.is_empty() {
            assert!(
                ids.contains(s.span.parent_span_id.as_slice()),
                "{} on {:?} has a parent outside the trace",
                s.span.name,
                s.node_id
            );
        }
    }
    // The leader's append + fsync is a child of, and inside, its propose.
    let by_id: HashMap<&[u8], &ReceivedSpan> = trace
        .iter()
        .map(|s| (s.span.span_id.as_slice(), s))
        .collect();
    let propose = named(&trace, "raft.propose")[0];
    let leader_append = named(&trace, "raft.append")
        .into_iter()
        .find(|s| s.node_id == Some(leader))
        .unwrap();
    assert_eq!(
        leader_append.span.parent_span_id, propose.span.span_id,
        "the leader's append span is a child of its propose span"
    );
    assert!(
        propose.span.start_time_unix_nano <= leader_append.span.start_time_unix_nano
            && leader_append.span.end_time_unix_nano <= propose.span.end_time_unix_nano,
        "the fsync lies inside the commit"
    );
    // A follower's append joins through the entry, under the same propose.
    let follower_append = named(&trace, "raft.append")
        .into_iter()
        .find(|s| s.node_id != Some(leader))
        .unwrap();
    assert_eq!(follower_append.span.parent_span_id, propose.span.span_id);
    // The leader's request span continues Envoy's.
    let request = trace
        .iter()
        .find(|s| s.node_id == Some(leader) && s.span.name == "PUT /v1/kv/{key}")
        .expect("the leader's request span");
    let parent = by_id
        .get(request.span.parent_span_id.as_slice())
        .expect("the request span's parent is in the trace");
    assert_eq!(parent.service, "strata-gateway");
}
