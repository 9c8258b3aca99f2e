//! Many requests in flight at once through the gateway: real Envoy (its
//! config from `gateway/gen_envoy.py`) in front of real nodes, hundreds of
//! gRPC calls open together on a few client connections, as a load test or
//! a busy service sends them.
//!
//! A node takes 200 concurrent streams on one HTTP/2 connection. Envoy,
//! unless told so, put every request for a node on one connection: the
//! node refused those past 200 (RST_STREAM REFUSED_STREAM), and after 1,024
//! refusals closed the connection (GOAWAY ENHANCE_YOUR_CALM), failing every
//! request still on it with "outcome unknown". 1,024 clients' puts lost
//! 200 to 243 requests that way in 6 s.

use std::time::Duration;

use strata_client::proto::PutRequest;
use strata_client::proto::kv_client::KvClient;
use strata_harness::Cluster;
use tonic::transport::Channel;

/// Calls open at once, well past a node's 200 streams a connection.
const CLIENTS: usize = 1024;
const PUTS_EACH: usize = 10;
/// Client connections to the gateway, shared by the calls.
const CONNECTIONS: usize = 16;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundreds_of_calls_in_flight_are_all_answered_without_refused_streams() {
    // Proves: 1,024 gRPC calls open at once through the gateway, ten puts
    // each, are all answered OK and applied, while the nodes refuse no
    // stream (Envoy's count of resets from the nodes stays 0).
    let c = Cluster::start(3).await.unwrap();
    c.wait_gateway_leader(Duration::from_secs(30))
        .await
        .unwrap();
    let mut channels = Vec::new();
    for _ in 0..CONNECTIONS {
        channels.push(
            Channel::from_shared(c.gateway_url())
                .unwrap()
                .connect()
                .await
                .expect("the gateway accepts a connection"),
        );
    }
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let mut kv = KvClient::new(channels[i % CONNECTIONS].clone());
            tokio::spawn(async move {
                let mut failures = Vec::new();
                for j in 0..PUTS_EACH {
                    let put = PutRequest {
                        key: format!("many/{i:04}/{j}").into(),
                        value: "v".into(),
                        ..Default::default()
                    };
                    if let Err(status) = kv.put(put).await {
                        failures.push(format!("{:?}: {}", status.code(), status.message()));
                    }
                }
                failures
            })
        })
        .collect();
    let mut failures = Vec::new();
    for t in tasks {
        let answered = tokio::time::timeout(Duration::from_secs(120), t)
            .await
            .expect("every call is answered within two minutes")
            .unwrap();
        failures.extend(answered);
    }
    let refused = c
        .envoy_stat("cluster.nodes_leader.http2.rx_reset")
        .await
        .expect("Envoy counts the resets from the leader");
    let broken = c
        .envoy_stat("cluster.nodes_leader.upstream_cx_protocol_error")
        .await
        .expect("Envoy counts its broken connections to the leader");
    assert!(
        failures.is_empty(),
        "{} of {} puts failed, e.g. {:?} (streams reset by the nodes: {refused}, upstream \
         connections broken: {broken})",
        failures.len(),
        CLIENTS * PUTS_EACH,
        &failures[..failures.len().min(3)]
    );
    // Envoy also closes a few of its connections to the leader as protocol
    // errors under this load on debug nodes (none on release nodes), with
    // no request failing; what it objects to is not known yet, so only the
    // nodes' refusals are held to zero here.
    if refused != 0 {
        let stats = c.envoy_stats("nodes_leader").await.unwrap_or_default();
        let counted: Vec<&str> = stats.lines().filter(|l| !l.ends_with(": 0")).collect();
        panic!(
            "the nodes reset {refused} streams and {broken} of Envoy's connections to them \
             broke; Envoy's counts for the leader: {counted:#?}"
        );
    }
    let client = c.admin_client().await.unwrap();
    for i in (0..CLIENTS).step_by(97) {
        let key = format!("many/{i:04}/{}", PUTS_EACH - 1);
        assert!(
            client.get(key.clone(), false).await.unwrap().is_some(),
            "{key} was answered OK and is there"
        );
    }
}
