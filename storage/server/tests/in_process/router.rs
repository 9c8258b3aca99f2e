//! The node's router called in process (`tower::ServiceExt::oneshot`):
//! every REST route against a real one-node cluster, each answer checked
//! against the OpenAPI document.

use axum::Router;
use axum::http::{Method, StatusCode};
use bytes::Bytes;
use serde_json::{Value, json};
use strata_server::config::Limits;

use crate::support::{JSON, assert_documented, call, document, one_node};

const KEY: &str = "/v1/kv/{key}";

/// Reads `uri` as a GetResult, checks the answer against the document, and
/// returns its key, value and encoding.
async fn read_json(app: &Router, doc: &Value, uri: &str, headers: &[(&str, &str)]) -> [Value; 3] {
    let got = call(app, Method::GET, uri, headers, Bytes::new()).await;
    assert_documented(doc, "get", KEY, &got);
    let body = got.json();
    [&body["key"], &body["value"], &body["encoding"]].map(Value::clone)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_round_trip_raw_and_as_json() {
    // Proves: a raw put reads back raw with the node headers, a JSON put
    // decodes its encoding, keys may hold `/` and any byte (answered in
    // base64 then), a delete says whether the key existed, and a missing key
    // is a 404 in the error shape; every answer is as documented.
    let n = one_node(Limits::default()).await;
    let doc = document();
    let app = &n.app;

    let put = call(app, Method::PUT, "/v1/kv/greeting", &[], "hello").await;
    assert_eq!(put.status, StatusCode::OK);
    assert_documented(&doc, "put", KEY, &put);
    let written = put.json();
    assert!(written["index"].as_u64().unwrap() > 0, "{written}");
    assert_eq!(
        (written["node_id"].as_u64(), written["leader_id"].as_u64()),
        (Some(1), Some(1))
    );

    let got = call(app, Method::GET, "/v1/kv/greeting", &[], Bytes::new()).await;
    assert_eq!(got.status, StatusCode::OK);
    assert_documented(&doc, "get", KEY, &got);
    assert_eq!(got.header("content-type"), Some("application/octet-stream"));
    assert_eq!(
        (got.header("x-strata-node"), got.header("x-strata-leader")),
        (Some("1"), Some("1"))
    );
    assert_eq!(got.body, "hello");

    let json_put = call(
        app,
        Method::PUT,
        "/v1/kv/dir/a",
        &[JSON],
        r#"{"value":"aGk=","encoding":"base64"}"#,
    )
    .await;
    assert_eq!(json_put.status, StatusCode::OK);
    let accept_json = [("accept", "application/json")];
    let read = read_json(app, &doc, "/v1/kv/dir/a", &accept_json).await;
    assert_eq!(read, ["dir/a", "hi", "utf8"]);

    let put = call(
        app,
        Method::PUT,
        "/v1/kv/bin%FF",
        &[],
        Bytes::from_static(&[0, 1]),
    )
    .await;
    assert_eq!(put.status, StatusCode::OK);
    let read = read_json(app, &doc, "/v1/kv/bin%FF?encoding=utf8", &[]).await;
    assert_eq!(read, ["Ymlu/w==", "AAE=", "base64"]);

    let deleted = call(app, Method::DELETE, "/v1/kv/dir/a", &[], Bytes::new()).await;
    assert_documented(&doc, "delete", KEY, &deleted);
    assert_eq!(deleted.json()["deleted"], true);
    let again = call(app, Method::DELETE, "/v1/kv/dir/a", &[], Bytes::new()).await;
    assert_eq!(again.json()["deleted"], false);

    let missing = call(app, Method::GET, "/v1/kv/dir/a", &[], Bytes::new()).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_documented(&doc, "get", KEY, &missing);
    assert_eq!(missing.error_code(), "NOT_FOUND");
    assert_eq!(missing.header("x-strata-node"), Some("1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scans_page_through_a_prefix() {
    // Proves: a scan pages with an opaque token until it answers null,
    // keys_only drops the values, and a stale scan is marked stale.
    let n = one_node(Limits::default()).await;
    let doc = document();
    let app = &n.app;
    for k in ["p/a", "p/b", "p/c", "q/a"] {
        assert_eq!(
            call(app, Method::PUT, &format!("/v1/kv/{k}"), &[], "v")
                .await
                .status,
            StatusCode::OK
        );
    }
    let first = call(
        app,
        Method::GET,
        "/v1/kv?prefix=p/&limit=2",
        &[],
        Bytes::new(),
    )
    .await;
    assert_documented(&doc, "get", "/v1/kv", &first);
    let page = first.json();
    let keys: Vec<&str> = page["kvs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|kv| kv["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["p/a", "p/b"]);
    let token = page["next_page_token"].as_str().expect("a second page");
    let second = call(
        app,
        Method::GET,
        &format!("/v1/kv?prefix=p/&limit=2&page_token={token}"),
        &[],
        Bytes::new(),
    )
    .await;
    assert_documented(&doc, "get", "/v1/kv", &second);
    let page = second.json();
    let kvs = page["kvs"].as_array().unwrap();
    assert_eq!(kvs.len(), 1, "{page}");
    assert_eq!(
        (&kvs[0]["key"], &kvs[0]["value"]),
        (&json!("p/c"), &json!("v"))
    );
    assert!(kvs[0]["mod_index"].as_u64().unwrap() > 0, "{page}");
    assert!(page["next_page_token"].is_null(), "{page}");

    let stale = call(
        app,
        Method::GET,
        "/v1/kv?keys_only=true&consistency=stale",
        &[],
        Bytes::new(),
    )
    .await;
    assert_documented(&doc, "get", "/v1/kv", &stale);
    assert_eq!(stale.header("x-strata-consistency"), Some("stale"));
    let kvs = stale.json()["kvs"].clone();
    assert_eq!(kvs.as_array().unwrap().len(), 4);
    assert!(
        kvs.as_array()
            .unwrap()
            .iter()
            .all(|kv| kv.get("value").is_none()),
        "{kvs}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_and_compare_and_swap_apply_as_documented() {
    // Proves: a batch applies its puts and deletes, and compare-and-swap
    // answers the value it compared against whether or not it held, creates
    // a key when nothing is expected and deletes one when no value is given.
    let n = one_node(Limits::default()).await;
    let doc = document();
    let app = &n.app;
    let batch = call(app, Method::POST, "/v1/batch", &[JSON], r#"{"ops":[{"op":"put","key":"b1","value":"1"},{"op":"put","key":"b2","value":"2"},{"op":"delete","key":"b2"}]}"#).await;
    assert_eq!(batch.status, StatusCode::OK);
    assert_documented(&doc, "post", "/v1/batch", &batch);
    let b2 = call(app, Method::GET, "/v1/kv/b2", &[], Bytes::new()).await;
    assert_eq!(b2.status, StatusCode::NOT_FOUND);

    let cas = |body: &'static str| call(app, Method::POST, "/v1/cas", &[JSON], body);
    let missed = cas(r#"{"key":"b1","expected":"wrong","value":"x"}"#).await;
    assert_documented(&doc, "post", "/v1/cas", &missed);
    let body = missed.json();
    assert_eq!(
        (body["succeeded"].as_bool(), body["current"].as_str()),
        (Some(false), Some("1"))
    );
    let swapped = cas(r#"{"key":"b1","expected":"1","value":"one"}"#)
        .await
        .json();
    assert_eq!(
        (swapped["succeeded"].as_bool(), swapped["current"].as_str()),
        (Some(true), Some("1"))
    );
    let created = cas(r#"{"key":"fresh","value":"new"}"#).await;
    assert_documented(&doc, "post", "/v1/cas", &created);
    let body = created.json();
    assert_eq!(body["succeeded"], true);
    assert!(body["current"].is_null(), "{body}");
    let removed = cas(r#"{"key":"fresh","expected":"new","value":null}"#)
        .await
        .json();
    assert_eq!(removed["succeeded"], true);
    let fresh = call(app, Method::GET, "/v1/kv/fresh", &[], Bytes::new()).await;
    assert_eq!(fresh.status, StatusCode::NOT_FOUND);
}

/// A request the node must refuse, and how.
struct Refusal {
    what: &'static str,
    method: Method,
    uri: &'static str,
    json: bool,
    body: String,
    status: StatusCode,
    code: &'static str,
    /// The documented operation (method, path), when the route has one.
    documented: Option<(&'static str, &'static str)>,
}

fn refusal(
    what: &'static str,
    (method, uri): (Method, &'static str),
    body: &str,
    (status, code): (StatusCode, &'static str),
    documented: Option<(&'static str, &'static str)>,
) -> Refusal {
    Refusal {
        what,
        method,
        uri,
        json: false,
        body: body.to_string(),
        status,
        code,
        documented,
    }
}

fn as_json(mut r: Refusal) -> Refusal {
    r.json = true;
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_the_error_shape_and_changes_nothing() {
    // Proves: every malformed, oversized or misdirected request is refused
    // with the right status and `{"code","message"}`, as documented (a 405
    // also names the methods the route takes), and none of them writes
    // anything.
    let limits = Limits {
        max_key_bytes: 8,
        max_value_bytes: 16,
        max_request_bytes: 128,
        ..Limits::default()
    };
    let n = one_node(limits).await;
    let doc = document();
    let app = &n.app;
    let invalid = (StatusCode::BAD_REQUEST, "INVALID_ARGUMENT");
    let too_large = (StatusCode::PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE");
    let not_allowed = (StatusCode::METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED");
    let media = (StatusCode::UNSUPPORTED_MEDIA_TYPE, "UNSUPPORTED_MEDIA_TYPE");
    let put = Some(("put", KEY));
    let get = Some(("get", KEY));
    let scan = Some(("get", "/v1/kv"));
    let batch = Some(("post", "/v1/batch"));
    let cas = Some(("post", "/v1/cas"));
    let big = "x".repeat(129);
    let cases = [
        refusal("empty key", (Method::PUT, "/v1/kv/"), "x", invalid, None),
        refusal(
            "key over the limit",
            (Method::PUT, "/v1/kv/123456789"),
            "x",
            too_large,
            put,
        ),
        refusal(
            "value over the limit",
            (Method::PUT, "/v1/kv/k"),
            &"x".repeat(17),
            too_large,
            put,
        ),
        refusal(
            "body over the limit",
            (Method::PUT, "/v1/kv/k"),
            &big,
            too_large,
            put,
        ),
        as_json(refusal(
            "JSON body over the limit",
            (Method::POST, "/v1/batch"),
            &big,
            too_large,
            batch,
        )),
        as_json(refusal(
            "malformed JSON",
            (Method::PUT, "/v1/kv/k"),
            r#"{"value": "#,
            invalid,
            put,
        )),
        as_json(refusal(
            "bad base64",
            (Method::PUT, "/v1/kv/k"),
            r#"{"value":"!","encoding":"base64"}"#,
            invalid,
            put,
        )),
        as_json(refusal(
            "a batch with one bad operation",
            (Method::POST, "/v1/batch"),
            r#"{"ops":[{"op":"put","key":"a","value":"1"},{"op":"put","key":"","value":"2"}]}"#,
            invalid,
            batch,
        )),
        as_json(refusal(
            "an empty batch",
            (Method::POST, "/v1/batch"),
            r#"{"ops":[]}"#,
            invalid,
            batch,
        )),
        refusal(
            "a non-JSON body on a JSON endpoint",
            (Method::POST, "/v1/cas"),
            "key=x",
            media,
            cas,
        ),
        as_json(refusal(
            "an unknown JSON field",
            (Method::POST, "/v1/cas"),
            r#"{"key":"x","bogus":1}"#,
            invalid,
            cas,
        )),
        refusal(
            "a prefix with a range",
            (Method::GET, "/v1/kv?prefix=a&start=b"),
            "",
            invalid,
            scan,
        ),
        refusal(
            "a scan limit above the maximum",
            (Method::GET, "/v1/kv?limit=5000"),
            "",
            invalid,
            scan,
        ),
        refusal(
            "an unknown query parameter",
            (Method::GET, "/v1/kv?bogus=1"),
            "",
            invalid,
            scan,
        ),
        refusal(
            "an unknown consistency",
            (Method::GET, "/v1/kv/k?consistency=sometimes"),
            "",
            invalid,
            get,
        ),
        refusal(
            "a member id that is not a number",
            (Method::DELETE, "/v1/cluster/members/x"),
            "",
            invalid,
            Some(("delete", "/v1/cluster/members/{id}")),
        ),
        as_json(refusal(
            "a transfer to a non-member",
            (Method::POST, "/v1/cluster/leader"),
            r#"{"target_id":9}"#,
            invalid,
            Some(("post", "/v1/cluster/leader")),
        )),
        refusal(
            "an unknown route",
            (Method::GET, "/v1/nope"),
            "",
            (StatusCode::NOT_FOUND, "NOT_FOUND"),
            None,
        ),
        refusal(
            "POST on a key",
            (Method::POST, "/v1/kv/x"),
            "x",
            not_allowed,
            None,
        ),
        refusal(
            "GET on batch",
            (Method::GET, "/v1/batch"),
            "",
            not_allowed,
            None,
        ),
    ];
    let admin = ("authorization", n.admin.as_str());
    for r in cases {
        // Every case as an admin may send it: what is checked is the input.
        let headers: &[(&str, &str)] = if r.json { &[JSON, admin] } else { &[admin] };
        let answer = call(app, r.method, r.uri, headers, r.body).await;
        let what = r.what;
        assert_eq!(answer.status, r.status, "{what}: {:?}", answer.body);
        assert_eq!(answer.error_code(), r.code, "{what}");
        assert_eq!(
            answer.header("content-type"),
            Some("application/json"),
            "{what}"
        );
        if let Some((method, path)) = r.documented {
            assert_documented(&doc, method, path, &answer);
        }
        if r.status == StatusCode::METHOD_NOT_ALLOWED {
            let allow = answer.header("allow").unwrap_or_default();
            assert!(
                allow.contains("GET") || allow.contains("POST"),
                "{what}: {allow:?}"
            );
        }
    }
    let all = call(app, Method::GET, "/v1/kv", &[], Bytes::new())
        .await
        .json();
    assert_eq!(all["kvs"], json!([]), "{all}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_grpc_methods_are_unimplemented() {
    // Proves: a gRPC call to a method nobody serves is answered in gRPC
    // (UNIMPLEMENTED), not with the JSON 404 of REST.
    let n = one_node(Limits::default()).await;
    let answer = call(
        &n.app,
        Method::POST,
        "/strata.v1.KV/Nope",
        &[("content-type", "application/grpc")],
        Bytes::new(),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.header("grpc-status"), Some("12"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_cluster_routes_describe_the_one_node() {
    // Proves: the leader of a one-node cluster passes every health check,
    // and the cluster routes and the event stream report it, as documented.
    let n = one_node(Limits::default()).await;
    let doc = document();
    let app = &n.app;
    for (path, status) in [
        ("/health/leader", "leader"),
        ("/health/ready", "ready"),
        ("/health/live", "live"),
    ] {
        let answer = call(app, Method::GET, path, &[], Bytes::new()).await;
        assert_eq!(answer.status, StatusCode::OK, "{path}");
        assert_documented(&doc, "get", path, &answer);
        let body = answer.json();
        assert_eq!(
            (body["status"].as_str(), body["node_id"].as_u64()),
            (Some(status), Some(1)),
            "{path}"
        );
        assert_eq!(
            body.get("leader_id").is_some(),
            path == "/health/ready",
            "{body}"
        );
    }
    let status = call(app, Method::GET, "/v1/cluster/status", &[], Bytes::new()).await;
    assert_documented(&doc, "get", "/v1/cluster/status", &status);
    let body = status.json();
    assert_eq!(
        (
            body["leader_id"].as_u64(),
            body["nodes"][0]["role"].as_str()
        ),
        (Some(1), Some("leader")),
        "{body}"
    );
    let members = call(app, Method::GET, "/v1/cluster/members", &[], Bytes::new()).await;
    assert_documented(&doc, "get", "/v1/cluster/members", &members);
    assert_eq!(
        members.json(),
        json!({"members": [{"id": 1, "address": "127.0.0.1:0", "voter": true, "leaving": false}]})
    );
    let transfer = call(
        app,
        Method::POST,
        "/v1/cluster/leader",
        &[JSON, ("authorization", n.admin.as_str())],
        r#"{"target_id":1}"#,
    )
    .await;
    assert_documented(&doc, "post", "/v1/cluster/leader", &transfer);
    assert_eq!(transfer.json()["leader_id"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draining_node_leaves_rotation_and_refuses_writes_as_not_applied() {
    // Proves: once a node starts its graceful stop, the health checks the
    // gateway and orchestrators use take it out of rotation (leader and
    // ready fail, live holds), and a write is refused as certainly not
    // applied: 503, marked retryable, and absent afterwards.
    let n = one_node(Limits::default()).await;
    let doc = document();
    let app = &n.app;
    n.node.drain();
    for (path, status) in [
        ("/health/leader", StatusCode::SERVICE_UNAVAILABLE),
        ("/health/ready", StatusCode::SERVICE_UNAVAILABLE),
        ("/health/live", StatusCode::OK),
    ] {
        let answer = call(app, Method::GET, path, &[], Bytes::new()).await;
        assert_eq!(answer.status, status, "{path}");
        assert_documented(&doc, "get", path, &answer);
    }
    let put = call(app, Method::PUT, "/v1/kv/drained", &[], "v").await;
    assert_documented(&doc, "put", KEY, &put);
    assert_eq!(
        (
            put.status,
            put.error_code(),
            put.header("x-strata-retryable")
        ),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "UNAVAILABLE".into(),
            Some("true")
        )
    );
    let stale = call(
        app,
        Method::GET,
        "/v1/kv/drained?consistency=stale",
        &[],
        Bytes::new(),
    )
    .await;
    assert_ne!(
        stale.status,
        StatusCode::OK,
        "the refused write was applied"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_each_answer_under_its_route_template() {
    // Proves: `/metrics` answers OpenMetrics text, as documented, and
    // counts answered requests under the documented route template and
    // outcome code (a 400 apart from a 200), and raft's proposals with them.
    let n = one_node(Limits::default()).await;
    let doc = document();
    let app = &n.app;
    for key in ["a", "b/c"] {
        let put = call(app, Method::PUT, &format!("/v1/kv/{key}"), &[], "v").await;
        assert_eq!(put.status, StatusCode::OK);
    }
    let bad = call(
        app,
        Method::GET,
        "/v1/kv/a?consistency=bogus",
        &[],
        Bytes::new(),
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    let scrape = call(app, Method::GET, "/metrics", &[], Bytes::new()).await;
    assert_eq!(scrape.status, StatusCode::OK);
    assert_documented(&doc, "get", "/metrics", &scrape);
    assert!(
        scrape
            .header("content-type")
            .is_some_and(|t| t.starts_with("application/openmetrics-text")),
        "{:?}",
        scrape.header("content-type")
    );
    let text = String::from_utf8(scrape.body.to_vec()).unwrap();
    for line in [
        r#"strata_api_requests_total{protocol="rest",route="PUT /v1/kv/{key}",code="200"} 2"#,
        r#"strata_api_requests_total{protocol="rest",route="GET /v1/kv/{key}",code="400"} 1"#,
        // The two puts, and the entry that named the cluster (which
        // `one_node` waits for).
        "strata_raft_proposals_total 3",
    ] {
        assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
    }
    assert!(
        text.ends_with("# EOF\n"),
        "an OpenMetrics scrape ends with # EOF"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_stream_opens_with_the_cluster_status() {
    // Proves: `/v1/cluster/events` is an event stream whose first event is
    // a `status` event carrying a ClusterStatus.
    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    let n = one_node(Limits::default()).await;
    let req = Request::get("/v1/cluster/events")
        .body(Body::empty())
        .unwrap();
    let resp = n.app.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let mut body = resp.into_body();
    let frame = body.frame().await.expect("an event").unwrap();
    let text = String::from_utf8(frame.into_data().unwrap().to_vec()).unwrap();
    let data = text
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or_else(|| panic!("no data in {text:?}"));
    assert!(text.starts_with("event: status\n"), "{text:?}");
    let status: serde_json::Value = serde_json::from_str(data).unwrap();
    assert!(status["nodes"].is_array(), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_served_document_is_the_checked_in_one() {
    // Proves: `/openapi.json` serves, as JSON, exactly proto/openapi.json.
    let n = one_node(Limits::default()).await;
    let answer = call(&n.app, Method::GET, "/openapi.json", &[], Bytes::new()).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.header("content-type"), Some("application/json"));
    let checked_in = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../proto/openapi.json"
    ))
    .unwrap();
    assert_eq!(answer.body, checked_in);
}
