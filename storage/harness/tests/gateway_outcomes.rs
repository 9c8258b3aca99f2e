//! What a client is told when the gateway answers for a node: a real 3-node
//! cluster behind real Envoy, over gRPC and REST. A write Envoy gave up on
//! while a node held it may still commit, so it must be "outcome unknown"
//! (gRPC DEADLINE_EXCEEDED, REST 504, code `OUTCOME_UNKNOWN`); only a write
//! that no node was sent may be "not applied" (gRPC UNAVAILABLE, REST 503,
//! both marked `x-strata-retryable: true`), which clients retry.

use std::future::Future;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::Value;
use strata_client::{Client, ClientError};
use strata_harness::Cluster;
use tonic::Code;

/// Requests Envoy's leader-first cluster has sent to a node and not yet
/// seen answered (health checks are not counted).
const LEADER_REQUESTS_ACTIVE: &str = "cluster.nodes_leader.upstream_rq_active";

/// The node answers a write it cannot commit after its 4 s request timeout;
/// the gateway's per-try timeout is 5 s. An answer that took longer than
/// this was made by Envoy, not by the node.
const ANSWERED_BY_THE_GATEWAY_AFTER: Duration = Duration::from_millis(4500);

/// Nodes for the tests that stall a leader holding a write: elections ten
/// times slower than the default (1 s instead of 100 ms). A leader whose
/// followers are paused steps down (check-quorum) one to two election
/// timeouts later; the test needs the write to reach the leader, and the
/// leader stalled, before that, which a busy machine cannot promise in 100 ms.
const SLOW_ELECTIONS: &[&str] = &["--election-ticks", "100"];

/// How long the write may take to reach the leader: half the slow election
/// timeout.
const REACH_THE_LEADER_WITHIN: Duration = Duration::from_millis(500);

/// Waits until Envoy's leader-first cluster has exactly one healthy host and
/// it is the node that leads, so that a write goes straight to the leader;
/// returns the leader's id.
async fn wait_gateway_routes_to_leader(c: &Cluster) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(leader) = c.leader().await {
            let healthy = healthy_leader_hosts(c).await;
            let address = c.node_url(leader).trim_start_matches("http://").to_string();
            if healthy == [address] {
                return leader;
            }
        }
        assert!(
            Instant::now() < deadline,
            "Envoy does not route to the leader; logs in {}",
            c.log_dir().display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The hosts of `nodes_leader` that Envoy counts healthy, from the admin
/// interface's `/clusters` (`nodes_leader::<host>::health_flags::healthy`).
async fn healthy_leader_hosts(c: &Cluster) -> Vec<String> {
    let Ok(resp) = c
        .http()
        .get(format!("{}/clusters", c.admin_url()))
        .send()
        .await
    else {
        return Vec::new();
    };
    let text = resp.text().await.unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("nodes_leader::")?;
            let host = rest.strip_suffix("::health_flags::healthy")?;
            Some(host.to_string())
        })
        .collect()
}

/// What happens to the leader once it holds the write.
#[derive(Clone, Copy)]
enum Stall {
    /// SIGSTOP until the gateway has answered, then SIGCONT.
    Freeze,
    /// `kill -9`: its connections close with the write in flight.
    Kill,
}

/// Sends `request` through the gateway so that it reaches the leader and the
/// leader can neither commit it nor answer: the followers are paused first
/// (so the write waits for a quorum at the leader), and once Envoy has the
/// request in flight to the leader, the leader is stalled and the followers
/// resumed (they elect a new leader, as they would after a real stall).
/// Returns the answer, how long it took, and which node led.
async fn send_while_the_leader_stalls<T: Send + 'static>(
    c: &mut Cluster,
    stall: Stall,
    request: impl Future<Output = T> + Send + 'static,
) -> (T, Duration, u64) {
    let leader = wait_gateway_routes_to_leader(c).await;
    let followers: Vec<u64> = c
        .node_ids()
        .into_iter()
        .filter(|&id| id != leader)
        .collect();
    assert_eq!(c.envoy_stat(LEADER_REQUESTS_ACTIVE).await, Some(0));
    for &id in &followers {
        c.pause(id).unwrap();
    }
    let started = Instant::now();
    let answer = tokio::spawn(request);
    // Without its followers the leader steps down (check-quorum) one to two
    // election timeouts later; the write must be at the leader, and the
    // leader stalled, before that (see SLOW_ELECTIONS).
    while c.envoy_stat(LEADER_REQUESTS_ACTIVE).await != Some(1) {
        assert!(
            started.elapsed() < REACH_THE_LEADER_WITHIN,
            "the write did not reach the leader in time; logs in {}",
            c.log_dir().display()
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    match stall {
        Stall::Freeze => c.pause(leader).unwrap(),
        Stall::Kill => c.kill(leader).unwrap(),
    }
    for &id in &followers {
        c.resume(id).unwrap();
    }
    let answer = answer.await.unwrap();
    let took = started.elapsed();
    if let Stall::Freeze = stall {
        c.resume(leader).unwrap();
    }
    c.wait_gateway_leader(Duration::from_secs(30))
        .await
        .unwrap();
    (answer, took, leader)
}

/// A gRPC put through the gateway, as a task of its own.
fn grpc_put(
    client: &Client,
    key: &'static str,
) -> impl Future<Output = Result<(), ClientError>> + use<> {
    let client = client.clone();
    async move { client.put(key, "v").await.map(|_| ()) }
}

/// A REST put through the gateway, with `request_id` as its
/// `x-strata-request-id` if given: status, `x-strata-retryable`, body.
fn rest_put(
    c: &Cluster,
    key: &'static str,
    request_id: Option<&'static str>,
) -> impl Future<Output = (StatusCode, Option<String>, Value)> + use<> {
    let (http, url) = (c.http().clone(), format!("{}/v1/kv/{key}", c.gateway_url()));
    async move {
        let mut req = http.put(url).body("v");
        if let Some(id) = request_id {
            req = req.header("x-strata-request-id", id);
        }
        let resp = req.send().await.expect("the gateway answers");
        let retryable = resp
            .headers()
            .get("x-strata-retryable")
            .map(|v| v.to_str().unwrap_or_default().to_string());
        (
            resp.status(),
            retryable,
            resp.json().await.unwrap_or(Value::Null),
        )
    }
}

fn grpc_status(answer: Result<(), ClientError>) -> tonic::Status {
    match answer {
        Err(ClientError::Status(status)) => status,
        other => panic!("expected a gRPC error status, got {other:?}"),
    }
}

/// Asserts a gRPC answer says "outcome unknown" and nothing that invites a retry.
fn assert_grpc_outcome_unknown(status: tonic::Status) {
    assert!(
        matches!(status.code(), Code::DeadlineExceeded | Code::Unknown),
        "gRPC {:?} ({}): a write that may commit must not be called UNAVAILABLE",
        status.code(),
        status.message()
    );
    assert!(
        status.message().contains("OUTCOME_UNKNOWN"),
        "{}",
        status.message()
    );
    assert!(status.metadata().get("x-strata-retryable").is_none());
    assert!(!ClientError::Status(status).is_retryable());
}

fn assert_rest_outcome_unknown((status, retryable, body): (StatusCode, Option<String>, Value)) {
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT, "{body}");
    assert_eq!(body["code"], "OUTCOME_UNKNOWN", "{body}");
    assert_eq!(retryable, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_held_by_a_frozen_leader_past_the_gateway_timeout_is_outcome_unknown() {
    // Proves: when Envoy's per-try timeout ends a write the leader holds
    // (response flag UT), a gRPC client is told DEADLINE_EXCEEDED with
    // OUTCOME_UNKNOWN and a REST client 504 OUTCOME_UNKNOWN; neither is the
    // UNAVAILABLE / 503 that would make a client send the write again.
    let mut c = Cluster::start_with_args(3, SLOW_ELECTIONS).await.unwrap();
    let client = Client::connect(&c.gateway_url()).await.unwrap();
    client.put("warm-up", "v").await.unwrap();

    let put = grpc_put(&client, "held-grpc");
    let (answer, took, _) = send_while_the_leader_stalls(&mut c, Stall::Freeze, put).await;
    let status = grpc_status(answer);
    assert!(
        took > ANSWERED_BY_THE_GATEWAY_AFTER,
        "answered after {took:?}, before the gateway's timeout: {status:?}"
    );
    assert_grpc_outcome_unknown(status);

    let put = rest_put(&c, "held-rest", None);
    let (answer, took, _) = send_while_the_leader_stalls(&mut c, Stall::Freeze, put).await;
    assert!(
        took > ANSWERED_BY_THE_GATEWAY_AFTER,
        "answered after {took:?}, before the gateway's timeout: {answer:?}"
    );
    assert_rest_outcome_unknown(answer);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_in_flight_to_a_leader_that_dies_is_outcome_unknown() {
    // Proves: when the leader's connection closes with a write in flight
    // (response flag UC), both front ends say OUTCOME_UNKNOWN, not the
    // retryable UNAVAILABLE / 503 Envoy answers by default.
    let mut c = Cluster::start_with_args(3, SLOW_ELECTIONS).await.unwrap();
    let client = Client::connect(&c.gateway_url()).await.unwrap();
    client.put("warm-up", "v").await.unwrap();

    let put = grpc_put(&client, "cut-grpc");
    let (answer, _, killed) = send_while_the_leader_stalls(&mut c, Stall::Kill, put).await;
    assert_grpc_outcome_unknown(grpc_status(answer));

    // The REST case needs a leader with two live followers again.
    c.start_node(killed).unwrap();
    let put = rest_put(&c, "cut-rest", None);
    let (answer, _, _) = send_while_the_leader_stalls(&mut c, Stall::Kill, put).await;
    assert_rest_outcome_unknown(answer);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_no_node_can_take_is_unavailable_and_marked_retryable() {
    // Proves: with every node down Envoy answers for them (response flag UH)
    // with UNAVAILABLE / 503 marked `x-strata-retryable: true` on both front
    // ends, and the client calls that retryable: the fix for writes that may
    // commit did not turn the safe case into "outcome unknown".
    let mut c = Cluster::start(3).await.unwrap();
    let client = Client::connect(&c.gateway_url()).await.unwrap();
    client.put("warm-up", "v").await.unwrap();
    for id in c.node_ids() {
        c.kill(id).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    for cluster in ["nodes_leader", "nodes_any"] {
        let stat = format!("cluster.{cluster}.membership_healthy");
        while c.envoy_stat(&stat).await != Some(0) {
            assert!(Instant::now() < deadline, "Envoy still sees a healthy node");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    let status = grpc_status(grpc_put(&client, "nowhere-grpc").await);
    assert_eq!(status.code(), Code::Unavailable, "{}", status.message());
    assert!(
        status.message().contains("UNAVAILABLE"),
        "{}",
        status.message()
    );
    assert_eq!(
        status
            .metadata()
            .get("x-strata-retryable")
            .map(|v| v.to_str().unwrap()),
        Some("true")
    );
    assert!(ClientError::Status(status).is_retryable());

    let (status, retryable, body) = rest_put(&c, "nowhere-rest", None).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["code"], "UNAVAILABLE", "{body}");
    assert_eq!(retryable.as_deref(), Some("true"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_with_a_request_id_retried_after_a_cut_is_never_called_not_applied() {
    // Proves: a write carrying a request id, which the gateway sends again
    // after its first attempt was cut at the leader (the leader may commit
    // it), is answered OUTCOME_UNKNOWN when the later attempts find no node
    // to take it (connection refused, no healthy host): flags that on their
    // own earn "not applied", since they say only that the last attempt
    // reached nobody. Both front ends.
    let mut c = Cluster::start_with_args(3, SLOW_ELECTIONS).await.unwrap();
    let client = Client::connect(&c.gateway_url()).await.unwrap();
    client.put("warm-up", "v").await.unwrap();

    let put = rest_put(&c, "cut-once-rest", Some("cut-once-rest-1"));
    let answer = send_then_stop_every_node(&mut c, put).await;
    assert_rest_outcome_unknown(answer);

    for id in c.node_ids() {
        c.start_node(id).unwrap();
    }
    c.wait_gateway_leader(Duration::from_secs(30))
        .await
        .unwrap();
    let mut kv = strata_client::proto::kv_client::KvClient::connect(c.gateway_url())
        .await
        .unwrap();
    let put = async move {
        let req = strata_client::once::request(
            strata_client::proto::PutRequest {
                key: "cut-once-grpc".into(),
                value: "v".into(),
                request_id: "cut-once-grpc-1".into(),
                ..Default::default()
            },
            "cut-once-grpc-1",
        );
        kv.put(req).await.map(|_| ()).map_err(ClientError::Status)
    };
    let answer = send_then_stop_every_node(&mut c, put).await;
    assert_grpc_outcome_unknown(grpc_status(answer));
}

/// Sends `request` so that it reaches the leader while the followers are
/// paused (the leader holds it, waiting for a quorum), then kills every
/// node: the gateway's first attempt is cut, and every later one is
/// refused. Returns the answer.
async fn send_then_stop_every_node<T: Send + 'static>(
    c: &mut Cluster,
    request: impl Future<Output = T> + Send + 'static,
) -> T {
    let leader = wait_gateway_routes_to_leader(c).await;
    let followers: Vec<u64> = c
        .node_ids()
        .into_iter()
        .filter(|&id| id != leader)
        .collect();
    for &id in &followers {
        c.pause(id).unwrap();
    }
    let started = Instant::now();
    let answer = tokio::spawn(request);
    while c.envoy_stat(LEADER_REQUESTS_ACTIVE).await != Some(1) {
        assert!(
            started.elapsed() < REACH_THE_LEADER_WITHIN,
            "the write did not reach the leader in time; logs in {}",
            c.log_dir().display()
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    c.kill(leader).unwrap();
    for &id in &followers {
        c.kill(id).unwrap();
    }
    tokio::time::timeout(Duration::from_secs(30), answer)
        .await
        .expect("the gateway answers")
        .unwrap()
}
