//! The JSON stats against the node's own `/metrics`, compaction on demand,
//! and the event stream's `stats` events.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use bytes::Bytes;
use http_body_util::BodyExt;
use serde_json::Value;
use strata_server::config::Limits;
use strata_server::metrics::scrape::Scrape;
use strata_server::stats::reading;
use tower::ServiceExt;

use crate::support::{JSON, assert_documented, call, document, one_node, one_node_configured};

/// The value of the sample `line_prefix` (name and labels) in `text`.
fn sample(text: &str, line_prefix: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(line_prefix)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no `{line_prefix}` in:\n{text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_carry_every_family_of_the_scrape_with_its_values() {
    // Proves: GET /v1/cluster/stats answers as documented, every metric
    // family of a real scrape has a place in the stats (none left unread,
    // so a new metric cannot be forgotten there), and the stats show the
    // values the scrape shows.
    let n = one_node(Limits::default()).await;
    let app = &n.app;
    for key in ["a", "b", "c"] {
        let put = call(app, Method::PUT, &format!("/v1/kv/{key}"), &[], "v").await;
        assert_eq!(put.status, StatusCode::OK);
    }
    let scrape = call(app, Method::GET, "/metrics", &[], Bytes::new()).await;
    let text = String::from_utf8(scrape.body.to_vec()).unwrap();
    let (_, unread) = reading::read(
        &Scrape::parse(&text).unwrap(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    assert!(
        unread.is_empty(),
        "families the stats do not carry: {unread:?}"
    );

    let answer = call(app, Method::GET, "/v1/cluster/stats", &[], Bytes::new()).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_documented(&document(), "get", "/v1/cluster/stats", &answer);
    let body = answer.json();
    assert_eq!(body["answered_by"], 1);
    let node = &body["nodes"][0];
    assert_eq!(node["id"], 1);
    assert!(node["at_ms"].as_u64().unwrap() > 0);
    let stats = &node["stats"];
    assert_eq!(stats["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(stats["raft"]["role"], "leader");
    // Counters the stats request itself does not move.
    assert_eq!(
        stats["raft"]["proposals"].as_f64().unwrap(),
        sample(&text, "strata_raft_proposals_total ")
    );
    assert_eq!(
        stats["raft"]["term"].as_f64().unwrap(),
        sample(&text, "strata_raft_term ")
    );
    let puts = stats["api"]["requests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["route"] == "PUT /v1/kv/{key}" && r["code"] == "200")
        .expect("the PUTs are counted");
    assert_eq!(puts["count"], 3);
    let latency = stats["api"]["latency"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["route"] == "PUT /v1/kv/{key}")
        .expect("the PUTs' latency");
    assert_eq!(latency["seconds"]["count"], 3);
    assert!(
        stats["process"]["start_time_seconds"].as_f64().unwrap() > 1.6e9,
        "{stats}"
    );
    assert!(stats["process"]["resident_memory_bytes"].as_u64().unwrap() > 0);
    assert!(!stats["engine"]["levels"].as_array().unwrap().is_empty());
    // The engine's limits, beside its shape.
    assert_eq!(
        stats["engine"]["l0_stop_files"].as_f64().unwrap(),
        sample(&text, "strata_engine_l0_stop_files ")
    );
    assert!(stats["engine"]["memtable_limit_bytes"].as_u64().unwrap() > 0);
    // A single member wins at once, so it never shows itself standing: no
    // election is counted, and its own events (kept beside the numbers)
    // show who led after.
    assert_eq!(stats["raft"]["elections"], serde_json::json!([]));
    let history = stats["raft_activity"].as_array().unwrap();
    assert!(
        history
            .iter()
            .any(|e| e["kind"] == "leader_changed" && e["leader_id"] == 1),
        "{history:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requested_compaction_flushes_and_the_stats_show_its_work() {
    // Proves: POST /v1/cluster/compact (with no body, or naming the node)
    // answers `done` as documented, the engine has flushed a table and
    // compacted, its recent work lists both, and an id outside the
    // configuration is refused as not found.
    let n = one_node(Limits::default()).await;
    let app = &n.app;
    let admin = ("authorization", n.admin.as_str());
    let doc = document();
    for i in 0..50 {
        let put = call(app, Method::PUT, &format!("/v1/kv/k{i}"), &[], "value").await;
        assert_eq!(put.status, StatusCode::OK);
    }
    let done = call(
        app,
        Method::POST,
        "/v1/cluster/compact",
        &[admin],
        Bytes::new(),
    )
    .await;
    assert_eq!(done.status, StatusCode::OK, "{:?}", done.body);
    assert_documented(&doc, "post", "/v1/cluster/compact", &done);
    assert_eq!(done.json()["nodes"][0]["outcome"], "done");
    let named = call(
        app,
        Method::POST,
        "/v1/cluster/compact",
        &[JSON, admin],
        r#"{"node_ids":[1]}"#,
    )
    .await;
    assert_eq!(named.json()["nodes"][0]["id"], 1);

    let stats = call(app, Method::GET, "/v1/cluster/stats", &[], Bytes::new())
        .await
        .json();
    let node = &stats["nodes"][0]["stats"];
    assert!(node["engine"]["flushes"].as_u64().unwrap() >= 1, "{node}");
    assert!(
        node["engine"]["compactions"].as_u64().unwrap() >= 1,
        "{node}"
    );
    let kinds: Vec<&str> = node["engine_activity"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"flush"), "{kinds:?}");
    assert!(kinds.contains(&"compaction"), "{kinds:?}");

    let stranger = call(
        app,
        Method::POST,
        "/v1/cluster/compact",
        &[JSON, admin],
        r#"{"node_ids":[9]}"#,
    )
    .await;
    assert_eq!(stranger.status, StatusCode::NOT_FOUND);
    assert_documented(&doc, "post", "/v1/cluster/compact", &stranger);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_stream_carries_stats_once_a_second() {
    // Proves: a stream of /v1/cluster/events gets `stats` events, each a
    // ClusterStats naming every member, within about a second of opening.
    let n = one_node(Limits::default()).await;
    let req = Request::get("/v1/cluster/events")
        .body(Body::empty())
        .unwrap();
    let resp = n.app.clone().oneshot(req).await.unwrap();
    let mut body = resp.into_body();
    let found = tokio::time::timeout(Duration::from_secs(5), async {
        let mut text = String::new();
        loop {
            let frame = body.frame().await.expect("the stream goes on").unwrap();
            text.push_str(&String::from_utf8_lossy(&frame.into_data().unwrap()));
            if let Some(at) = text.find("event: stats\ndata: ") {
                let rest = &text[at + "event: stats\ndata: ".len()..];
                if let Some(end) = rest.find('\n') {
                    return serde_json::from_str::<Value>(&rest[..end]).unwrap();
                }
            }
        }
    })
    .await
    .expect("a stats event within 5 s");
    assert_eq!(found["nodes"][0]["id"], 1);
    assert!(found["nodes"][0]["stats"]["raft"]["term"].as_u64().unwrap() > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_request_is_in_the_stats_with_its_trace() {
    // Proves: a request answered after the slow-request threshold is in
    // the node's stats with its route, answer, duration and the trace its
    // caller's `traceparent` named (sampled, as the caller flagged it), and
    // its link; a scrape or the OpenAPI document is not an API call and is
    // not kept; the stats of a node whose threshold nothing reaches carry
    // none.
    let n = one_node_configured(|config| {
        config.slow_request_ms = 0;
        config.trace_link = Some("http://127.0.0.1:16686/trace/{trace_id}".into());
    })
    .await;
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let traceparent = format!("00-{trace}-00f067aa0ba902b7-01");
    let put = call(
        &n.app,
        Method::PUT,
        "/v1/kv/slow",
        &[("traceparent", traceparent.as_str())],
        "v",
    )
    .await;
    assert_eq!(put.status, StatusCode::OK);
    for not_api in ["/metrics", "/openapi.json"] {
        let answer = call(&n.app, Method::GET, not_api, &[], Bytes::new()).await;
        assert_eq!(answer.status, StatusCode::OK);
    }
    let answer = call(&n.app, Method::GET, "/v1/cluster/stats", &[], Bytes::new()).await;
    assert_documented(&document(), "get", "/v1/cluster/stats", &answer);
    let body = answer.json();
    let slow = body["nodes"][0]["stats"]["slow_requests"]
        .as_array()
        .unwrap_or_else(|| panic!("no slow requests in {body}"));
    let put = slow
        .iter()
        .find(|s| s["route"] == "PUT /v1/kv/{key}")
        .unwrap_or_else(|| panic!("the PUT is not among {slow:?}"));
    assert_eq!(put["protocol"], "rest");
    assert_eq!(put["status"], 200);
    assert_eq!(put["trace_id"], trace);
    assert_eq!(put["sampled"], true);
    assert_eq!(
        put["trace_url"],
        format!("http://127.0.0.1:16686/trace/{trace}")
    );
    assert!(put["duration_ms"].as_f64().unwrap() > 0.0);
    let routes: Vec<&str> = slow.iter().filter_map(|s| s["route"].as_str()).collect();
    assert!(
        !routes
            .iter()
            .any(|r| r.contains("metrics") || r.contains("openapi")),
        "only API calls are kept: {routes:?}"
    );

    let quiet = one_node_configured(|config| config.slow_request_ms = 60_000).await;
    let put = call(&quiet.app, Method::PUT, "/v1/kv/fast", &[], "v").await;
    assert_eq!(put.status, StatusCode::OK);
    let body = call(
        &quiet.app,
        Method::GET,
        "/v1/cluster/stats",
        &[],
        Bytes::new(),
    )
    .await
    .json();
    assert!(
        body["nodes"][0]["stats"].get("slow_requests").is_none(),
        "{body}"
    );
}
