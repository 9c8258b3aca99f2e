//! Requests through the real gateway to a real 3-node cluster: both front
//! ends, follower forwarding, and every kind of bad input.

use std::time::Duration;

use bytes::Bytes;
use reqwest::StatusCode;
use serde_json::{Value, json};
use strata_client::{Client, ScanSelector};
use strata_harness::Cluster;

async fn json_of(resp: reqwest::Response) -> Value {
    resp.json().await.expect("JSON body")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_and_grpc_round_trip_through_the_gateway() {
    // Proves: a put through Envoy is readable through Envoy, over REST and
    // gRPC alike, and both front ends see each other's writes.
    let c = Cluster::start(3).await.unwrap();
    let http = c.http();
    let gw = c.gateway_url();

    let put = http
        .put(format!("{gw}/v1/kv/greeting"))
        .body("hello")
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), StatusCode::OK);
    let body = json_of(put).await;
    assert!(body["index"].as_u64().unwrap() > 0, "{body}");

    let got = http
        .get(format!("{gw}/v1/kv/greeting"))
        .send()
        .await
        .unwrap();
    assert_eq!(got.status(), StatusCode::OK);
    assert_eq!(got.headers()["content-type"], "application/octet-stream");
    assert_eq!(got.bytes().await.unwrap(), "hello");

    let client = Client::connect(&gw).await.unwrap();
    assert_eq!(
        client.get("greeting", false).await.unwrap(),
        Some(Bytes::from("hello"))
    );
    client.put("from-grpc", "v1").await.unwrap();
    let got = http
        .get(format!("{gw}/v1/kv/from-grpc"))
        .send()
        .await
        .unwrap();
    assert_eq!(got.bytes().await.unwrap(), "v1");

    // JSON forms, keys with slashes, delete, scan with pagination.
    let put = http
        .put(format!("{gw}/v1/kv/dir/a"))
        .json(&json!({"value": "aGk=", "encoding": "base64"}))
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), StatusCode::OK);
    let got = http
        .get(format!("{gw}/v1/kv/dir/a"))
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    let body = json_of(got).await;
    assert_eq!(
        (body["key"].as_str(), body["value"].as_str()),
        (Some("dir/a"), Some("hi"))
    );
    for k in ["dir/b", "dir/c", "dir/d"] {
        client.put(k.to_string(), "x").await.unwrap();
    }
    let page = json_of(
        http.get(format!("{gw}/v1/kv?prefix=dir/&limit=3"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    let keys: Vec<&str> = page["kvs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|kv| kv["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["dir/a", "dir/b", "dir/c"]);
    let token = page["next_page_token"].as_str().expect("more pages");
    let page = json_of(
        http.get(format!("{gw}/v1/kv?prefix=dir/&limit=3&page_token={token}"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(page["kvs"][0]["key"], "dir/d");
    assert!(page["next_page_token"].is_null());
    let grpc_page = client
        .scan(ScanSelector::Prefix(b"dir/".to_vec()), 10, Vec::new(), true)
        .await
        .unwrap();
    assert_eq!(grpc_page.kvs.len(), 4);

    let del = json_of(
        http.delete(format!("{gw}/v1/kv/dir/a"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(del["deleted"], true);
    assert!(!client.delete("dir/a").await.unwrap());
    assert_eq!(
        http.get(format!("{gw}/v1/kv/dir/a"))
            .send()
            .await
            .unwrap()
            .status(),
        StatusCode::NOT_FOUND
    );

    // Batch and compare-and-swap.
    let b = http
        .post(format!("{gw}/v1/batch"))
        .json(&json!({"ops": [{"op": "put", "key": "b1", "value": "1"}, {"op": "put", "key": "b2", "value": "2"}, {"op": "delete", "key": "dir/b"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(b.status(), StatusCode::OK);
    assert_eq!(
        client.get("b2", false).await.unwrap(),
        Some(Bytes::from("2"))
    );
    assert_eq!(client.get("dir/b", false).await.unwrap(), None);
    let cas = json_of(
        http.post(format!("{gw}/v1/cas"))
            .json(&json!({"key": "b1", "expected": "wrong", "value": "x"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (cas["succeeded"].as_bool(), cas["current"].as_str()),
        (Some(false), Some("1"))
    );
    let (ok, before) = client
        .compare_and_swap("b1", Some(Bytes::from("1")), Some(Bytes::from("one")))
        .await
        .unwrap();
    assert!(ok);
    assert_eq!(before, Some(Bytes::from("1")));
    let (ok, _) = client
        .compare_and_swap("fresh", None, Some(Bytes::from("new")))
        .await
        .unwrap();
    assert!(ok, "absent expected value creates the key");

    // Cluster status through the gateway, both ways.
    let status = json_of(
        http.get(format!("{gw}/v1/cluster/status"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    let nodes = status["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    assert_eq!(
        nodes.iter().filter(|n| n["role"] == "leader").count(),
        1,
        "{status}"
    );
    assert!(nodes.iter().all(|n| n["healthy"] == true), "{status}");
    let st = client.status().await.unwrap();
    assert_eq!(st.nodes.len(), 3);
    assert_ne!(st.leader_id, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follower_forwards_writes_to_the_leader() {
    // Proves: a write sent straight to a follower is applied by the leader
    // (one hop) and the response says who leads.
    let c = Cluster::start(3).await.unwrap();
    let leader = c.wait_leader(Duration::from_secs(10)).await.unwrap();
    let follower = c.follower().await.unwrap();
    let resp = c
        .http()
        .put(format!("{}/v1/kv/forwarded", c.node_url(follower)))
        .body("yes")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        resp.headers()["x-strata-leader"],
        leader.to_string().as_str()
    );
    assert_eq!(resp.headers()["x-strata-node"], leader.to_string().as_str());

    // gRPC straight to the follower is forwarded too.
    let client = Client::connect(&c.node_url(follower)).await.unwrap();
    client.put("forwarded-grpc", "yes").await.unwrap();

    // A linearizable read on the follower sees both writes at once.
    for key in ["forwarded", "forwarded-grpc"] {
        let got = c
            .http()
            .get(format!("{}/v1/kv/{key}", c.node_url(follower)))
            .send()
            .await
            .unwrap();
        assert_eq!(got.status(), StatusCode::OK, "{key}");
        assert_eq!(got.bytes().await.unwrap(), "yes");
    }
    let leader_read = client.get("forwarded", false).await.unwrap();
    assert_eq!(leader_read, Some(Bytes::from("yes")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_a_clear_error_and_changes_nothing() {
    // Proves: every malformed request is refused with a 4xx and the error
    // shape, over REST and gRPC, and none of them writes anything.
    let c = Cluster::start(3).await.unwrap();
    let http = c.http();
    let gw = c.gateway_url();
    let big_key = "k".repeat(4097);
    let big_value = vec![b'v'; (1 << 20) + 1];
    let bad = StatusCode::BAD_REQUEST;
    let invalid = "INVALID_ARGUMENT";
    let too_large = (StatusCode::PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE");
    let not_allowed = (StatusCode::METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED");
    let cases = [
        ("put of an empty key", http.put(format!("{gw}/v1/kv/")).body("x"), bad, invalid),
        ("get of an empty key", http.get(format!("{gw}/v1/kv/")), bad, invalid),
        ("key over 4 KiB", http.put(format!("{gw}/v1/kv/{big_key}")).body("x"), too_large.0, too_large.1),
        ("value over 1 MiB", http.put(format!("{gw}/v1/kv/big")).body(big_value.clone()), too_large.0, too_large.1),
        (
            "malformed JSON",
            http.put(format!("{gw}/v1/kv/json")).header("content-type", "application/json").body("{\"value\": "),
            bad,
            invalid,
        ),
        (
            "bad base64",
            http.put(format!("{gw}/v1/kv/b64")).json(&json!({"value": "not base64!", "encoding": "base64"})),
            bad,
            invalid,
        ),
        (
            "batch with one bad operation",
            http.post(format!("{gw}/v1/batch")).json(
                &json!({"ops": [{"op": "put", "key": "atomic1", "value": "1"}, {"op": "put", "key": "", "value": "2"}]}),
            ),
            bad,
            invalid,
        ),
        ("empty batch", http.post(format!("{gw}/v1/batch")).json(&json!({"ops": []})), bad, invalid),
        (
            "non-JSON body on a JSON endpoint",
            http.post(format!("{gw}/v1/cas")).body("key=x"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UNSUPPORTED_MEDIA_TYPE",
        ),
        (
            "unknown JSON field",
            http.post(format!("{gw}/v1/cas")).json(&json!({"key": "x", "bogus": 1})),
            bad,
            invalid,
        ),
        ("unknown route", http.get(format!("{gw}/v1/nope")), StatusCode::NOT_FOUND, "NOT_FOUND"),
        ("POST on a key", http.post(format!("{gw}/v1/kv/x")).body("x"), not_allowed.0, not_allowed.1),
        ("GET on batch", http.get(format!("{gw}/v1/batch")), not_allowed.0, not_allowed.1),
        ("prefix with a range", http.get(format!("{gw}/v1/kv?prefix=a&start=b")), bad, invalid),
        ("scan limit above the maximum", http.get(format!("{gw}/v1/kv?limit=5000")), bad, invalid),
        ("scan limit of zero", http.get(format!("{gw}/v1/kv?limit=0")), bad, invalid),
        ("malformed page token", http.get(format!("{gw}/v1/kv?page_token=%%%")), bad, invalid),
        ("unknown consistency", http.get(format!("{gw}/v1/kv/x?consistency=sometimes")), bad, invalid),
    ];
    for (what, request, status, code) in cases {
        let resp = request.send().await.unwrap();
        assert_eq!(resp.status(), status, "{what}");
        let body: Value = resp.json().await.expect("error body is JSON");
        assert_eq!(body["code"], code, "{what}: {body}");
        assert!(
            body["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{what}: {body}"
        );
    }

    // gRPC: the same limits, as gRPC status codes.
    let client = Client::connect(&gw).await.unwrap();
    let code = |e: strata_client::ClientError| match e {
        strata_client::ClientError::Status(s) => s.code(),
        other => panic!("unexpected {other}"),
    };
    assert_eq!(
        code(client.put("", "x").await.unwrap_err()),
        tonic::Code::InvalidArgument
    );
    assert_eq!(
        code(client.put(big_key.clone(), "x").await.unwrap_err()),
        tonic::Code::InvalidArgument
    );
    assert_eq!(
        code(client.put("big", big_value).await.unwrap_err()),
        tonic::Code::InvalidArgument
    );
    assert_eq!(
        code(client.get("", false).await.unwrap_err()),
        tonic::Code::InvalidArgument
    );
    assert_eq!(
        code(
            client
                .batch(vec![
                    (Bytes::from("atomic2"), Some(Bytes::from("1"))),
                    (Bytes::new(), None)
                ])
                .await
                .unwrap_err()
        ),
        tonic::Code::InvalidArgument
    );

    // Nothing above wrote anything.
    let all = json_of(http.get(format!("{gw}/v1/kv")).send().await.unwrap()).await;
    assert_eq!(all["kvs"].as_array().unwrap().len(), 0, "{all}");
}
