//! Client request ids: a write retried with its id is applied once and
//! answered with the first attempt's outcome, over REST and gRPC.

use axum::http::{Method, StatusCode};
use bytes::Bytes;
use serde_json::{Value, json};

use crate::support::{assert_documented, call, document, one_node};
use strata_server::config::Limits;

const ID: &str = "x-strata-request-id";

#[tokio::test]
async fn a_write_retried_with_its_request_id_is_applied_once() {
    // Proves: a compare-and-swap retried with its request id (as after a
    // 504) is answered with the first attempt's outcome, `replayed` and at
    // the first attempt's index, and not applied again (a second swap from
    // absent would fail); the same id on another write is 400 and applies
    // nothing; a delete and a batch replay too; a bad id is 400.
    let n = one_node(Limits::default()).await;
    let app = &n.app;
    let doc = document();
    let cas = json!({"key": "counter", "expected": null, "value": "1"}).to_string();
    let json_ct = ("content-type", "application/json");
    let first = call(
        app,
        Method::POST,
        "/v1/cas",
        &[json_ct, (ID, "swap-1")],
        cas.clone(),
    )
    .await;
    assert_documented(&doc, "post", "/v1/cas", &first);
    let first = first.json();
    assert_eq!(first["succeeded"], true, "{first}");
    assert!(first.get("replayed").is_none(), "{first}");

    let again = call(
        app,
        Method::POST,
        "/v1/cas",
        &[json_ct, (ID, "swap-1")],
        cas.clone(),
    )
    .await;
    assert_documented(&doc, "post", "/v1/cas", &again);
    let again = again.json();
    assert_eq!(
        again["succeeded"], true,
        "a replay answers the first outcome: {again}"
    );
    assert_eq!(again["replayed"], true);
    assert_eq!(again["index"], first["index"]);
    let plain = call(app, Method::POST, "/v1/cas", &[json_ct], cas)
        .await
        .json();
    assert_eq!(
        plain["succeeded"], false,
        "without an id the swap runs again: {plain}"
    );

    let other = call(app, Method::PUT, "/v1/kv/counter", &[(ID, "swap-1")], "9").await;
    assert_eq!(other.status, StatusCode::BAD_REQUEST);
    assert_documented(&doc, "put", "/v1/kv/{key}", &other);
    assert!(
        other.json()["message"]
            .as_str()
            .unwrap()
            .contains("another write"),
        "{:?}",
        other.json()
    );
    let held = call(app, Method::GET, "/v1/kv/counter", &[], Bytes::new()).await;
    assert_eq!(held.body, Bytes::from("1"), "the refused write applied");

    let headers = [(ID, "del-1")];
    let d1 = call(
        app,
        Method::DELETE,
        "/v1/kv/counter",
        &headers,
        Bytes::new(),
    )
    .await
    .json();
    let d2 = call(
        app,
        Method::DELETE,
        "/v1/kv/counter",
        &headers,
        Bytes::new(),
    )
    .await
    .json();
    assert_eq!(
        (d1["deleted"].clone(), d2["deleted"].clone()),
        (json!(true), json!(true))
    );
    assert_eq!(d2["replayed"], true);
    let batch = json!({"ops": [{"op": "put", "key": "b", "value": "1"}]}).to_string();
    let b1: Value = call(
        app,
        Method::POST,
        "/v1/batch",
        &[json_ct, (ID, "batch-1")],
        batch.clone(),
    )
    .await
    .json();
    let b2: Value = call(
        app,
        Method::POST,
        "/v1/batch",
        &[json_ct, (ID, "batch-1")],
        batch,
    )
    .await
    .json();
    assert_eq!(
        (b2["replayed"].clone(), b2["index"].clone()),
        (json!(true), b1["index"].clone())
    );

    for bad in ["has space", &"x".repeat(129)] {
        let a = call(app, Method::PUT, "/v1/kv/k", &[(ID, bad)], "v").await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{bad:?}");
    }
}
