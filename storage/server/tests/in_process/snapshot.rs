//! Snapshots on demand: `POST /v1/cluster/snapshot`.

use axum::http::{Method, StatusCode};
use bytes::Bytes;
use strata_server::config::Limits;

use crate::support::{JSON, assert_documented, call, document, one_node};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requested_snapshot_drops_the_raft_log_up_to_the_last_write() {
    // Proves: POST /v1/cluster/snapshot (with no body, or naming the node)
    // answers `done` as documented, with the last write's index made
    // durable and the raft log beginning after it; the data is untouched.
    let n = one_node(Limits::default()).await;
    let app = &n.app;
    let admin = ("authorization", n.admin.as_str());
    let doc = document();
    let mut last = 0;
    for i in 0..20 {
        let put = call(app, Method::PUT, &format!("/v1/kv/k{i}"), &[], "value").await;
        assert_eq!(put.status, StatusCode::OK);
        last = put.json()["index"].as_u64().unwrap();
    }
    let done = call(
        app,
        Method::POST,
        "/v1/cluster/snapshot",
        &[admin],
        Bytes::new(),
    )
    .await;
    assert_eq!(done.status, StatusCode::OK, "{:?}", done.body);
    assert_documented(&doc, "post", "/v1/cluster/snapshot", &done);
    let node = &done.json()["nodes"][0];
    assert_eq!(node["id"], 1);
    assert_eq!(node["outcome"], "done", "{node}");
    let durable = node["durable_index"].as_u64().unwrap();
    assert!(durable >= last, "{node}");
    assert!(
        node["first_index_before"].as_u64().unwrap() <= last,
        "{node}"
    );
    assert_eq!(
        node["first_index_after"].as_u64().unwrap(),
        durable + 1,
        "{node}"
    );

    let named = call(
        app,
        Method::POST,
        "/v1/cluster/snapshot",
        &[JSON, admin],
        r#"{"node_ids":[1]}"#,
    )
    .await;
    assert_eq!(named.status, StatusCode::OK);
    assert_eq!(named.json()["nodes"][0]["outcome"], "done");
    let read = call(app, Method::GET, "/v1/kv/k7", &[], Bytes::new()).await;
    assert_eq!(read.status, StatusCode::OK);
    assert_eq!(read.body, Bytes::from_static(b"value"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_request_that_names_a_stranger_or_is_malformed_is_refused() {
    // Proves: an id outside the configuration is 404 before anything runs;
    // an unknown field, a wrong type and a non-JSON body are 400/415 with
    // the API's error body.
    let n = one_node(Limits::default()).await;
    let app = &n.app;
    let admin = ("authorization", n.admin.as_str());
    let doc = document();
    let stranger = call(
        app,
        Method::POST,
        "/v1/cluster/snapshot",
        &[JSON, admin],
        r#"{"node_ids":[9]}"#,
    )
    .await;
    assert_eq!(stranger.status, StatusCode::NOT_FOUND);
    assert_eq!(stranger.error_code(), "NOT_FOUND");
    assert_documented(&doc, "post", "/v1/cluster/snapshot", &stranger);
    for body in [r#"{"nodes":[1]}"#, r#"{"node_ids":"1"}"#, "{"] {
        let bad = call(
            app,
            Method::POST,
            "/v1/cluster/snapshot",
            &[JSON, admin],
            body,
        )
        .await;
        assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(bad.error_code(), "INVALID_ARGUMENT", "{body}");
        assert_documented(&doc, "post", "/v1/cluster/snapshot", &bad);
    }
    let text = call(
        app,
        Method::POST,
        "/v1/cluster/snapshot",
        &[admin],
        "node_ids=1",
    )
    .await;
    assert_eq!(text.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
}
