//! The gateway follows membership: Envoy takes the members from the nodes
//! (EDS over gRPC, `gateway/gen_envoy.py --eds`, as the launcher runs it),
//! so a node added with `--join`, promoted, handed the leadership, and a
//! node removed, reach it without a restart, while a client writes through
//! it and loses nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use envoy_types::pb::envoy::config::endpoint::v3::ClusterLoadAssignment;
use envoy_types::pb::envoy::config::endpoint::v3::lb_endpoint::HostIdentifier;
use envoy_types::pb::envoy::service::discovery::v3::DiscoveryRequest;
use envoy_types::pb::envoy::service::endpoint::v3::endpoint_discovery_service_client::EndpointDiscoveryServiceClient;
use prost::Message;
use reqwest::StatusCode;
use serde_json::{Value, json};
use strata_harness::Cluster;

/// How long Envoy may take to have a membership change: "a few seconds".
const FOLLOWS_WITHIN: Duration = Duration::from_secs(5);
/// How long a new node may take to pass its first health check once Envoy
/// has it: its start and catching up, which a busy machine slows down.
const HEALTHY_WITHIN: Duration = Duration::from_secs(15);
/// Clients writing at once, and each one's bounds.
const WRITERS: usize = 4;
const MAX_WRITES: usize = 20_000;
const MAX_WRITING: Duration = Duration::from_secs(120);
/// How long one write may be retried before the test gives up on it.
const RETRY_LIMIT: Duration = Duration::from_secs(30);

/// `host:port` of node `id`.
fn address(c: &Cluster, id: u64) -> String {
    c.node_url(id).trim_start_matches("http://").to_string()
}

/// Envoy's admin `/clusters` (text: `cluster::host::stat::value` lines).
async fn clusters(c: &Cluster) -> String {
    match c
        .http()
        .get(format!("{}/clusters", c.admin_url()))
        .timeout(Duration::from_secs(2))
        .send()
        .await
    {
        Ok(r) => r.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// The hosts Envoy has in `cluster`.
fn hosts(text: &str, cluster: &str) -> Vec<String> {
    let mut hosts: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix(&format!("{cluster}::")))
        .filter_map(|rest| rest.split_once("::cx_active::").map(|(h, _)| h.to_string()))
        .collect();
    hosts.sort();
    hosts
}

/// A host's stat in `cluster`, if Envoy has the host.
fn host_stat(text: &str, cluster: &str, host: &str, stat: &str) -> Option<String> {
    let prefix = format!("{cluster}::{host}::{stat}::");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix).map(str::to_string))
}

/// Polls `probe` every 20 ms until it holds, for at most `limit`; the
/// instant it first held.
async fn until<F, Fut>(what: &str, c: &Cluster, limit: Duration, mut probe: F) -> Instant
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    loop {
        if probe().await {
            return Instant::now();
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not within {limit:?}; logs in {}",
            c.log_dir().display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn member_ids(c: &Cluster) -> Vec<u64> {
    let r = c
        .http()
        .get(format!("{}/v1/cluster/members", c.gateway_url()))
        .timeout(Duration::from_secs(2))
        .send()
        .await;
    let Ok(r) = r else { return Vec::new() };
    let body: Value = r.json().await.unwrap_or_default();
    body["members"]
        .as_array()
        .map(|m| m.iter().filter_map(|x| x["id"].as_u64()).collect())
        .unwrap_or_default()
}

/// `POST`s `body` to `path` through the gateway until it is answered 200,
/// retrying what is safe to retry (503: the learner is still catching up,
/// a transfer is under way).
async fn post_until_ok(c: &Cluster, path: &str, body: Option<Value>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut req = c.http().post(format!("{}{path}", c.gateway_url()));
        if let Some(b) = &body {
            req = req.json(b);
        }
        let r = req.send().await.unwrap();
        let status = r.status();
        let text = r.text().await.unwrap_or_default();
        if status == StatusCode::OK {
            return;
        }
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{path}: {text}");
        assert!(Instant::now() < deadline, "{path}: still {status}: {text}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The API requests node `id` answered (routes under `/v1/` and the
/// public gRPC services), by its own metrics: health probes, metrics
/// scrapes, the gateway's endpoint discovery and the members' calls on
/// one another are not counted.
async fn api_requests(c: &Cluster, id: u64) -> u64 {
    c.scrape(id)
        .await
        .lines()
        .filter(|l| l.starts_with("strata_api_requests_total{"))
        .filter(|l| l.contains("route=\"/strata.v1.") || l.contains(" /v1/"))
        .filter(|l| !l.contains("/strata.v1.Cluster/Local"))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// One acknowledged write.
struct Ack {
    key: String,
    value: String,
    /// The node that answered (`x-strata-node`).
    node: u64,
    at: Instant,
}

/// Puts `<prefix><n>` = `v<n>` through the gateway, one after another, until
/// `stop` (or the bounds); every attempt of one write carries the same
/// request id, so a write sent again after an answer that is not definite
/// (503, 504, a lost connection) is applied once. Each write is retried
/// until it is acknowledged: every one it starts, it finishes.
fn spawn_writer(
    c: &Cluster,
    prefix: &str,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<(Vec<Ack>, usize)> {
    let (http, gateway, prefix) = (c.http().clone(), c.gateway_url(), prefix.to_string());
    tokio::spawn(async move {
        let (mut acks, mut retried, started) = (Vec::new(), 0, Instant::now());
        for n in 0..MAX_WRITES {
            if stop.load(Ordering::Relaxed) || started.elapsed() > MAX_WRITING {
                break;
            }
            let (key, value) = (format!("{prefix}{n:05}"), format!("v{n}"));
            let first = Instant::now();
            loop {
                let r = http
                    .put(format!("{gateway}/v1/kv/{key}"))
                    .header("x-strata-request-id", format!("{prefix}{n}"))
                    .body(value.clone())
                    .timeout(Duration::from_secs(6))
                    .send()
                    .await;
                match r {
                    Ok(r) if r.status() == StatusCode::OK => {
                        let node = r
                            .headers()
                            .get("x-strata-node")
                            .and_then(|v| v.to_str().ok()?.parse().ok())
                            .unwrap_or(0);
                        acks.push(Ack {
                            key,
                            value,
                            node,
                            at: Instant::now(),
                        });
                        break;
                    }
                    Ok(r) => {
                        let status = r.status().as_u16();
                        assert!(
                            status == 503 || status == 504,
                            "{key}: {status} {}",
                            r.text().await.unwrap_or_default()
                        );
                    }
                    Err(e) => assert!(
                        e.is_timeout() || e.is_connect() || e.is_request(),
                        "{key}: {e}"
                    ),
                }
                retried += 1;
                assert!(
                    first.elapsed() < RETRY_LIMIT,
                    "{key} not acknowledged within {RETRY_LIMIT:?}"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        (acks, retried)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_follows_a_node_that_joins_leads_and_one_that_leaves_losing_no_write() {
    // Proves: with Envoy's member clusters fed by the nodes (EDS), a fourth
    // node added with --join is in Envoy within seconds and gets traffic,
    // stays there when promoted, and once it is handed the leadership the
    // writes go to it; a removed node leaves Envoy within seconds and gets
    // no more requests, though it still runs. A client writing all along
    // (request ids, every write retried until acknowledged) reads back
    // every write it was acknowledged. No Envoy restart, no regenerated
    // config.
    let mut c = Cluster::start(3).await.unwrap();
    let a1 = address(&c, 1);
    let text = clusters(&c).await;
    let three: Vec<String> = {
        let mut v: Vec<String> = (1..=3).map(|id| address(&c, id)).collect();
        v.sort();
        v
    };
    assert_eq!(hosts(&text, "nodes_any"), three, "{text}");
    assert_eq!(hosts(&text, "nodes_leader"), three, "{text}");

    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| spawn_writer(&c, &format!("gm{w}-"), stop.clone()))
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;

    // 1. Node 4 joins: the cluster adds it as a learner.
    c.add_joining_node(4).unwrap();
    let a4 = address(&c, 4);
    let added = until("node 4 listed", &c, Duration::from_secs(30), || async {
        member_ids(&c).await.contains(&4)
    })
    .await;
    let in_envoy = until("node 4 in Envoy", &c, FOLLOWS_WITHIN, || async {
        let text = clusters(&c).await;
        hosts(&text, "nodes_any").contains(&a4) && hosts(&text, "nodes_leader").contains(&a4)
    })
    .await;
    let joined_ms = in_envoy.duration_since(added).as_millis();
    // And it gets traffic: the requests any node may answer (here the
    // gateway's `/metrics`) reach it once its health check passes.
    let reached = until("traffic reaches node 4", &c, HEALTHY_WITHIN, || async {
        let _ = c
            .http()
            .get(format!("{}/metrics", c.gateway_url()))
            .send()
            .await;
        host_stat(&clusters(&c).await, "nodes_any", &a4, "rq_success").is_some_and(|n| n != "0")
    })
    .await;
    let reached_ms = reached.duration_since(added).as_millis();

    // 2. Promoted (once caught up): still in Envoy, healthy.
    post_until_ok(&c, "/v1/cluster/members/4/promote", None).await;
    let text = clusters(&c).await;
    assert_eq!(
        host_stat(&text, "nodes_any", &a4, "health_flags").as_deref(),
        Some("healthy"),
        "{text}"
    );

    // 3. Node 1 is removed (handing leadership over first if it leads). It
    //    keeps running, and keeps passing its own health checks.
    let r = c
        .http()
        .delete(format!("{}/v1/cluster/members/1", c.gateway_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let removed = Instant::now();
    let left = until("node 1 out of Envoy", &c, FOLLOWS_WITHIN, || async {
        let text = clusters(&c).await;
        let any = hosts(&text, "nodes_any");
        !any.is_empty() && !any.contains(&a1) && !hosts(&text, "nodes_leader").contains(&a1)
    })
    .await;
    let left_ms = left.duration_since(removed).as_millis();
    // What was on its way to node 1 as Envoy dropped it ends first.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let node1_requests = api_requests(&c, 1).await;

    // 4. Leadership moves to node 4: the writes go to it.
    post_until_ok(&c, "/v1/cluster/leader", Some(json!({"target_id": 4}))).await;
    let transferred = Instant::now();
    let leads = until("node 4 leads in Envoy", &c, FOLLOWS_WITHIN, || async {
        host_stat(&clusters(&c).await, "nodes_leader", &a4, "health_flags").as_deref()
            == Some("healthy")
    })
    .await;
    let leads_ms = leads.duration_since(transferred).as_millis();
    let answered = until("a write answered by node 4", &c, FOLLOWS_WITHIN, || async {
        let r = c
            .http()
            .put(format!("{}/v1/kv/probe", c.gateway_url()))
            .body("p")
            .send()
            .await;
        r.is_ok_and(|r| {
            r.status() == StatusCode::OK
                && r.headers()
                    .get("x-strata-node")
                    .and_then(|v| v.to_str().ok())
                    == Some("4")
        })
    })
    .await;
    let answered_ms = answered.duration_since(transferred).as_millis();

    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::Relaxed);
    let (mut acks, mut retried) = (Vec::new(), 0);
    for w in writers {
        let (a, r) = w.await.unwrap();
        acks.extend(a);
        retried += r;
    }
    println!(
        "Envoy had node 4 {joined_ms} ms after the cluster listed it, sent it traffic after \
         {reached_ms} ms; dropped node 1 {left_ms} ms after its removal; saw node 4 lead \
         {leads_ms} ms after the transfer, and a write was answered by it after {answered_ms} ms; \
         {} writes acknowledged, {retried} attempts sent again",
        acks.len()
    );

    // The removed node got no request from the gateway after it left
    // Envoy (it still runs: its health checks pass).
    assert_eq!(
        api_requests(&c, 1).await,
        node1_requests,
        "node 1 was sent requests after its removal"
    );
    let live = c
        .http()
        .get(format!("{}/health/live", c.node_url(1)))
        .send()
        .await
        .unwrap();
    assert_eq!(live.status(), StatusCode::OK, "node 1 should still run");
    // After the transfer (and the moment Envoy takes to see it), node 4
    // answers every write.
    let late: Vec<u64> = acks
        .iter()
        .filter(|a| a.at > answered + Duration::from_millis(200))
        .map(|a| a.node)
        .collect();
    assert!(!late.is_empty(), "no write after the transfer");
    assert!(late.iter().all(|&n| n == 4), "answered by {late:?}");
    assert!(acks.len() > 100, "the writers made little progress");

    // Every acknowledged write reads back, as written.
    for a in &acks {
        let r = c
            .http()
            .get(format!("{}/v1/kv/{}", c.gateway_url(), a.key))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{} lost", a.key);
        assert_eq!(r.text().await.unwrap(), a.value, "{}", a.key);
    }
    // Each measured from the change itself, not from when the test began
    // to look.
    for (what, ms) in [
        ("node 4 added", joined_ms),
        ("node 1 removed", left_ms),
        ("node 4 leading", leads_ms),
    ] {
        assert!(ms < FOLLOWS_WITHIN.as_millis(), "{what}: {ms} ms");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_envoy_given_one_seed_learns_every_member() {
    // Proves: Envoy's config names node 2 alone, and Envoy still routes to
    // all three nodes, the leader among them, whichever it is: it learned
    // them from node 2.
    let c = Cluster::start_with_gateway_seeds(3, &[2]).await.unwrap();
    let mut all: Vec<String> = (1..=3).map(|id| address(&c, id)).collect();
    all.sort();
    until("every member in Envoy", &c, FOLLOWS_WITHIN, || async {
        let text = clusters(&c).await;
        hosts(&text, "nodes_any") == all && hosts(&text, "nodes_leader") == all
    })
    .await;
    let text = clusters(&c).await;
    assert_eq!(hosts(&text, "xds"), [address(&c, 2)], "{text}");
    let leader = c.wait_leader(Duration::from_secs(5)).await.unwrap();
    let r = c
        .http()
        .put(format!("{}/v1/kv/seeded", c.gateway_url()))
        .body("yes")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["x-strata-node"], leader.to_string().as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoint_discovery_is_served_by_the_nodes_and_never_through_the_gateway() {
    // Proves: a node answers FetchEndpoints with every member in both
    // member clusters and the overprovisioning factor the leader routing
    // needs; the same call through the gateway is refused there (it is
    // internal, like the raft transport), with or without a token.
    let c = Cluster::start(3).await.unwrap();
    let mut all: Vec<String> = (1..=3).map(|id| address(&c, id)).collect();
    all.sort();
    let mut node = EndpointDiscoveryServiceClient::connect(c.node_url(3))
        .await
        .unwrap();
    let resp = node
        .fetch_endpoints(DiscoveryRequest {
            resource_names: vec!["nodes_leader".into(), "nodes_any".into()],
            type_url: "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(resp.version_info.starts_with("3-"), "{}", resp.version_info);
    assert_eq!(resp.resources.len(), 2);
    for r in &resp.resources {
        let a = ClusterLoadAssignment::decode(r.value.as_slice()).unwrap();
        let mut got: Vec<String> = a.endpoints[0]
            .lb_endpoints
            .iter()
            .filter_map(|e| match &e.host_identifier {
                Some(HostIdentifier::Endpoint(e)) => {
                    let s = match e.address.as_ref()?.address.as_ref()? {
                        envoy_types::pb::envoy::config::core::v3::address::Address::SocketAddress(s) => s,
                        _ => return None,
                    };
                    match s.port_specifier {
                        Some(envoy_types::pb::envoy::config::core::v3::socket_address::PortSpecifier::PortValue(p)) => {
                            Some(format!("{}:{p}", s.address))
                        }
                        _ => None,
                    }
                }
                _ => None,
            })
            .collect();
        got.sort();
        assert_eq!(got, all, "{}", a.cluster_name);
        assert_eq!(
            a.policy.unwrap().overprovisioning_factor.unwrap().value,
            300
        );
    }

    // Through the gateway: refused by Envoy itself (its 404, in gRPC's
    // terms UNIMPLEMENTED, with the route's reason), never reaching a node.
    let mut gateway = EndpointDiscoveryServiceClient::connect(c.gateway_url())
        .await
        .unwrap();
    let err = gateway
        .fetch_endpoints(DiscoveryRequest::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unimplemented, "{err:?}");
    assert!(err.message().contains("internal"), "{err:?}");
    let mut gateway = gateway.max_decoding_message_size(1 << 20);
    let err = gateway
        .stream_endpoints(futures::stream::iter([DiscoveryRequest::default()]))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unimplemented, "{err:?}");
}

/// The nodes that served Envoy a discovery stream, by their own metrics.
async fn discovery_servers(c: &Cluster, ids: &[u64]) -> Vec<u64> {
    let mut servers = Vec::new();
    for &id in ids {
        let served = c.scrape(id).await.lines().any(|l| {
            l.starts_with("strata_api_requests_total{")
                && l.contains("EndpointDiscoveryService/StreamEndpoints")
                && l.rsplit_once(' ').is_some_and(|(_, n)| n != "0")
        });
        if served {
            servers.push(id);
        }
    }
    servers
}

/// A three-node cluster behind Envoy, once Envoy's discovery stream is
/// open; answers the cluster and the node the stream is on.
async fn three_nodes_and_envoys_discovery_node() -> (Cluster, u64) {
    let c = Cluster::start(3).await.unwrap();
    until("a discovery stream", &c, FOLLOWS_WITHIN, || async {
        !discovery_servers(&c, &[1, 2, 3]).await.is_empty()
    })
    .await;
    let server = discovery_servers(&c, &[1, 2, 3]).await[0];
    (c, server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_the_node_that_serves_envoy_its_members_moves_envoy_to_another() {
    // Proves: the node Envoy's discovery stream is on is removed; it stops
    // vouching for its (now old) member list, so Envoy drops it within
    // seconds and moves to another seed, from which it then learns a node
    // that joins afterwards.
    let (mut c, server) = three_nodes_and_envoys_discovery_node().await;
    let gone = address(&c, server);
    let r = c
        .http()
        .delete(format!("{}/v1/cluster/members/{server}", c.gateway_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let removed = Instant::now();
    let left = until(
        "the removed node out of Envoy",
        &c,
        FOLLOWS_WITHIN,
        || async {
            let text = clusters(&c).await;
            let any = hosts(&text, "nodes_any");
            any.len() == 2 && !any.contains(&gone) && !hosts(&text, "nodes_leader").contains(&gone)
        },
    )
    .await;
    let rest: Vec<u64> = (1..=3).filter(|&id| id != server).collect();
    c.add_joining_node(4).unwrap();
    let a4 = address(&c, 4);
    let joined = until("node 4 in Envoy", &c, Duration::from_secs(30), || async {
        hosts(&clusters(&c).await, "nodes_any").contains(&a4)
    })
    .await;
    println!(
        "Envoy discovered through node {server}; dropped it {} ms after its removal, and had \
         node 4 {} ms after its start",
        left.duration_since(removed).as_millis(),
        joined.duration_since(left).as_millis()
    );
    assert!(
        !discovery_servers(&c, &rest).await.is_empty(),
        "Envoy moved to none of {rest:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn envoy_moves_to_a_live_seed_when_the_node_it_asks_dies() {
    // Proves: the node Envoy's discovery stream is on is killed; Envoy opens
    // the stream again on a live seed and learns from it a node that joins
    // afterwards (the killed node stays a member: it is still listed).
    let (mut c, server) = three_nodes_and_envoys_discovery_node().await;
    c.kill(server).unwrap();
    let killed = Instant::now();
    let rest: Vec<u64> = (1..=3).filter(|&id| id != server).collect();
    c.wait_leader(Duration::from_secs(10)).await.unwrap();
    c.add_joining_node(4).unwrap();
    let a4 = address(&c, 4);
    let joined = until("node 4 in Envoy", &c, Duration::from_secs(30), || async {
        hosts(&clusters(&c).await, "nodes_any").contains(&a4)
    })
    .await;
    println!(
        "Envoy discovered through node {server}, killed; it had node 4 {} ms after the kill",
        joined.duration_since(killed).as_millis()
    );
    assert!(
        !discovery_servers(&c, &rest).await.is_empty(),
        "Envoy moved to none of {rest:?}"
    );
    let text = clusters(&c).await;
    assert!(
        hosts(&text, "nodes_any").contains(&address(&c, server)),
        "a member that is down stays listed (its health check fails): {text}"
    );
}
