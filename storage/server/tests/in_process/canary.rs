//! The consistency canary on a one-node cluster: it runs through the core,
//! completes its checks with the verdict ok, reports them as documented and
//! in the metrics, and cleans up each window's keys.

use std::time::Duration;

use axum::http::{Method, StatusCode};
use bytes::Bytes;
use strata_server::NodeConfig;
use strata_server::node::Node;

use crate::support::{assert_documented, call, document, wait_leader};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn canary_on_one_node_checks_windows_ok_and_removes_their_keys() {
    // Proves: with --canary a node's canary makes operations, checks whole
    // windows and finds them linearizable (a correct node raises no false
    // alarm), GET /v1/canary answers as documented, the metrics count the
    // same, and a checked window's keys are deleted.
    let dir = tempfile::tempdir().unwrap();
    let mut config = NodeConfig::single(1, "127.0.0.1:0".parse().unwrap(), dir.path().into());
    config.anonymous_role = "write".parse().unwrap();
    config.canary.enabled = true;
    config.canary.rate = 100.0;
    config.canary.window_secs = 1;
    let node = Node::start(config).await.unwrap();
    let app = node.router();
    wait_leader(&app).await;
    let doc = document();
    let mut report = serde_json::Value::Null;
    for _ in 0..200 {
        let got = call(&app, Method::GET, "/v1/canary", &[], Bytes::new()).await;
        assert_eq!(got.status, StatusCode::OK);
        assert_documented(&doc, "get", "/v1/canary", &got);
        report = got.json();
        if report["windows_ok"].as_u64().unwrap() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(report["enabled"], true);
    assert!(report["windows_ok"].as_u64().unwrap() >= 3, "{report}");
    assert_eq!(report["windows_violation"], 0, "{report}");
    assert_eq!(report["last_violation"], serde_json::Value::Null);

    let metrics = call(&app, Method::GET, "/metrics", &[], Bytes::new()).await;
    let text = String::from_utf8_lossy(&metrics.body);
    let sample = |series: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0.0)
    };
    assert!(
        sample("strata_canary_windows_total{verdict=\"ok\"}") >= 3.0,
        "{text}"
    );
    assert_eq!(sample("strata_canary_violations_total"), 0.0);
    assert!(sample("strata_canary_ops_total{op=\"write\",outcome=\"ok\"}") > 0.0);
    assert!(sample("strata_canary_last_check_timestamp_seconds") > 1.0e9);

    // Only the window under way (at most) still has keys.
    let scan = call(
        &app,
        Method::GET,
        "/v1/kv?prefix=__strata_canary/&keys_only=true&consistency=stale",
        &[],
        Bytes::new(),
    )
    .await;
    assert_eq!(scan.status, StatusCode::OK);
    let body = scan.json();
    let windows: std::collections::BTreeSet<String> = body["kvs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|kv| {
            let key = kv["key"].as_str().unwrap();
            key.rsplit_once('/').unwrap().0.to_string()
        })
        .collect();
    assert!(
        windows.len() <= 1,
        "keys of finished windows remain: {body}"
    );
}
