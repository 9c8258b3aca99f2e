//! Transactions and the indexes every key carries: optimistic concurrency
//! over REST, a transaction's reads, its refusals, and its replay under a
//! request id.

use axum::http::{Method, StatusCode};
use bytes::Bytes;
use serde_json::{Value, json};

use crate::support::{JSON, assert_documented, call, document, one_node};
use strata_server::config::Limits;

const ID: &str = "x-strata-request-id";

async fn get_json(app: &axum::Router, key: &str) -> Value {
    let got = call(
        app,
        Method::GET,
        &format!("/v1/kv/{key}"),
        &[("accept", "application/json")],
        Bytes::new(),
    )
    .await;
    assert_eq!(got.status, StatusCode::OK, "{:?}", got.body);
    assert_documented(&document(), "get", "/v1/kv/{key}", &got);
    got.json()
}

#[tokio::test]
async fn a_transaction_on_a_stale_mod_index_runs_its_failure_branch_and_writes_nothing() {
    // Proves: keys carry the index that created them and the one that last
    // put them (get, raw-get headers, scan); a transaction whose compare
    // names a mod index that a later put moved on runs `failure` (whose get
    // sees the current pair) and changes nothing; with the current mod
    // index it runs `success`, whose writes and reads (a range seeing the
    // put before it) apply at one index.
    let n = one_node(Limits::default()).await;
    let app = &n.app;
    let doc = document();
    let first = call(app, Method::PUT, "/v1/kv/acct/a", &[], "10")
        .await
        .json();
    let second = call(app, Method::PUT, "/v1/kv/acct/a", &[], "11")
        .await
        .json();
    call(app, Method::PUT, "/v1/kv/acct/b", &[], "5").await;
    let a = get_json(app, "acct/a").await;
    assert_eq!(a["create_index"], first["index"], "{a}");
    assert_eq!(a["mod_index"], second["index"], "{a}");
    let raw = call(app, Method::GET, "/v1/kv/acct/a", &[], Bytes::new()).await;
    assert_documented(&doc, "get", "/v1/kv/{key}", &raw);
    assert_eq!(
        raw.header("x-strata-mod-index"),
        Some(second["index"].to_string().as_str())
    );
    let scanned = call(app, Method::GET, "/v1/kv?prefix=acct/", &[], Bytes::new()).await;
    assert_documented(&doc, "get", "/v1/kv", &scanned);
    assert_eq!(scanned.json()["kvs"][0]["mod_index"], second["index"]);

    let transfer = |mod_index: &Value| {
        json!({
            "compare": [
                {"key": "acct/a", "mod_index": mod_index},
                {"key": "acct/c", "exists": false},
            ],
            "success": [
                {"op": "put", "key": "acct/a", "value": "7"},
                {"op": "put", "key": "acct/c", "value": "4"},
                {"op": "range", "start": "acct/", "end": "acct0"},
            ],
            "failure": [{"op": "get", "key": "acct/a"}],
        })
        .to_string()
    };
    let stale = call(
        app,
        Method::POST,
        "/v1/txn",
        &[JSON],
        transfer(&first["index"]),
    )
    .await;
    assert_eq!(stale.status, StatusCode::OK, "{:?}", stale.body);
    assert_documented(&doc, "post", "/v1/txn", &stale);
    let stale = stale.json();
    assert_eq!(stale["succeeded"], false, "{stale}");
    assert_eq!(stale["results"][0]["op"], "get");
    assert_eq!(stale["results"][0]["kv"]["value"], "11");
    assert_eq!(stale["results"][0]["kv"]["mod_index"], second["index"]);
    let c = call(app, Method::GET, "/v1/kv/acct/c", &[], Bytes::new()).await;
    assert_eq!(c.status, StatusCode::NOT_FOUND, "the failed branch wrote");

    let done = call(
        app,
        Method::POST,
        "/v1/txn",
        &[JSON],
        transfer(&second["index"]),
    )
    .await;
    assert_documented(&doc, "post", "/v1/txn", &done);
    let done = done.json();
    assert_eq!(done["succeeded"], true, "{done}");
    let range = &done["results"][2];
    assert_eq!(range["op"], "range");
    assert_eq!(range["more"], false);
    let seen: Vec<(String, String)> = range["kvs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|kv| {
            (
                kv["key"].as_str().unwrap().to_string(),
                kv["value"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [("acct/a", "7"), ("acct/b", "5"), ("acct/c", "4")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
    );
    let c = get_json(app, "acct/c").await;
    assert_eq!(c["create_index"], done["index"]);
    let a = get_json(app, "acct/a").await;
    assert_eq!(
        a["create_index"], first["index"],
        "an update keeps the create index"
    );
    assert_eq!(a["mod_index"], done["index"]);
}

#[tokio::test]
async fn malformed_transactions_are_refused_naming_the_bad_part_and_apply_nothing() {
    // Proves: every malformed transaction is a documented 4xx whose message
    // names the part at fault, and none of them applies its other writes.
    let n = one_node(Limits {
        max_batch_ops: 4,
        ..Limits::default()
    })
    .await;
    let app = &n.app;
    let doc = document();
    let put_x = json!({"op": "put", "key": "x", "value": "1"});
    let cases = [
        (
            json!({"compare": [{"key": "k", "value": "v", "exists": true}], "success": [put_x]}),
            StatusCode::BAD_REQUEST,
            "compare[0]: a compare needs exactly one of",
        ),
        (
            json!({"compare": [{"key": "k"}], "success": [put_x]}),
            StatusCode::BAD_REQUEST,
            "it has 0",
        ),
        (
            json!({"compare": [{"key": "k", "op": "less", "exists": true}], "success": [put_x]}),
            StatusCode::BAD_REQUEST,
            "compare[0]: `exists` compares only with EQUAL or NOT_EQUAL",
        ),
        (
            json!({"success": [put_x, {"op": "put", "key": "y"}]}),
            StatusCode::BAD_REQUEST,
            "success[1]: a put needs a value",
        ),
        (
            json!({"success": [put_x], "failure": [{"op": "get", "key": "k", "value": "v"}]}),
            StatusCode::BAD_REQUEST,
            "failure[0]: get takes no `value`",
        ),
        (
            json!({"success": [put_x, {"op": "range", "start": "b", "end": "a"}]}),
            StatusCode::BAD_REQUEST,
            "success[1]: range start is after its end",
        ),
        (
            json!({"success": [put_x, {"op": "range", "limit": 1001}]}),
            StatusCode::BAD_REQUEST,
            "above the maximum 1000",
        ),
        (
            json!({"success": [put_x, {"op": "delete", "key": ""}]}),
            StatusCode::BAD_REQUEST,
            "success[1]: key must not be empty",
        ),
        (
            json!({"success": [put_x, put_x, put_x, put_x, put_x]}),
            StatusCode::PAYLOAD_TOO_LARGE,
            "`success` has 5 entries; the limit is 4",
        ),
        (
            json!({"success": [put_x], "then": []}),
            StatusCode::BAD_REQUEST,
            "unknown field `then`",
        ),
        (
            json!({"success": [{"op": "swap", "key": "x"}]}),
            StatusCode::BAD_REQUEST,
            "unknown variant `swap`",
        ),
    ];
    for (body, status, says) in cases {
        let got = call(app, Method::POST, "/v1/txn", &[JSON], body.to_string()).await;
        assert_eq!(got.status, status, "{body}: {:?}", got.body);
        assert_documented(&doc, "post", "/v1/txn", &got);
        let message = got.json()["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(message.contains(says), "{body}: {message}");
    }
    let x = call(app, Method::GET, "/v1/kv/x", &[], Bytes::new()).await;
    assert_eq!(
        x.status,
        StatusCode::NOT_FOUND,
        "a refused transaction wrote"
    );
}

#[tokio::test]
async fn a_transaction_retried_with_its_request_id_gets_its_first_answer_reads_included() {
    // Proves: a transaction retried under its request id is not applied
    // again (a second run would find the key and take the failure branch)
    // and is answered with the first run's results, its read of the key it
    // created included.
    let n = one_node(Limits::default()).await;
    let app = &n.app;
    let create = json!({
        "compare": [{"key": "once", "exists": false}],
        "success": [
            {"op": "put", "key": "once", "value": "1"},
            {"op": "get", "key": "once"},
        ],
        "failure": [{"op": "delete", "key": "once"}],
    })
    .to_string();
    let first = call(
        app,
        Method::POST,
        "/v1/txn",
        &[JSON, (ID, "txn-1")],
        create.clone(),
    )
    .await
    .json();
    assert_eq!(first["succeeded"], true, "{first}");
    let again = call(
        app,
        Method::POST,
        "/v1/txn",
        &[JSON, (ID, "txn-1")],
        create.clone(),
    )
    .await
    .json();
    assert_eq!(again["replayed"], true, "{again}");
    assert_eq!(again["succeeded"], true, "{again}");
    assert_eq!(again["index"], first["index"]);
    assert_eq!(again["results"], first["results"]);
    let held = call(app, Method::GET, "/v1/kv/once", &[], Bytes::new()).await;
    assert_eq!(
        held.body,
        Bytes::from("1"),
        "the retry ran the failure branch"
    );
    let plain = call(app, Method::POST, "/v1/txn", &[JSON], create)
        .await
        .json();
    assert_eq!(
        plain["succeeded"], false,
        "without an id it runs again: {plain}"
    );
    assert_eq!(plain["results"][0]["deleted"], true);
}

#[tokio::test]
async fn a_branch_of_more_reads_than_the_limit_is_refused() {
    // Proves: the reads of one branch are bounded (with the ranges' shared
    // byte budget, what bounds the memory a transaction's reads take on
    // every replica): 128 pass, 129 are a documented 413.
    let n = one_node(Limits::default()).await;
    let app = &n.app;
    let reads = |n: usize| {
        let ops: Vec<Value> = (0..n)
            .map(|_| json!({"op": "range", "start": "a"}))
            .collect();
        json!({"failure": ops}).to_string()
    };
    let ok = call(app, Method::POST, "/v1/txn", &[JSON], reads(128)).await;
    assert_eq!(ok.status, StatusCode::OK, "{:?}", ok.body);
    let refused = call(app, Method::POST, "/v1/txn", &[JSON], reads(129)).await;
    assert_eq!(refused.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_documented(&document(), "post", "/v1/txn", &refused);
    assert!(
        refused.json()["message"]
            .as_str()
            .unwrap()
            .contains("`failure` has 129 gets and ranges; the limit is 128"),
        "{:?}",
        refused.body
    );
}
