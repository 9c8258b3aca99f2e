//! The API over more than one range: a split asked for through the API, and
//! every request served by the range that holds its keys.

use axum::http::{Method, StatusCode};
use bytes::Bytes;
use serde_json::{Value, json};

use crate::support::{Answer, JSON, OneNode, assert_documented, call, document, one_node};
use strata_server::config::Limits;

async fn put(app: &axum::Router, key: &str, value: &str) -> Answer {
    call(
        app,
        Method::PUT,
        &format!("/v1/kv/{key}"),
        &[],
        value.to_string(),
    )
    .await
}

async fn get(app: &axum::Router, key: &str) -> Answer {
    call(
        app,
        Method::GET,
        &format!("/v1/kv/{key}"),
        &[],
        Bytes::new(),
    )
    .await
}

async fn post(app: &axum::Router, uri: &str, auth: Option<&str>, body: Value) -> Answer {
    let mut headers = vec![JSON];
    if let Some(auth) = auth {
        headers.push(("authorization", auth));
    }
    call(app, Method::POST, uri, &headers, body.to_string()).await
}

async fn split(n: &OneNode, key: &str) -> Value {
    let a = post(
        &n.app,
        "/v1/cluster/ranges/split",
        Some(&n.admin),
        json!({ "key": key }),
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{:?}", a.body);
    assert_documented(&document(), "post", "/v1/cluster/ranges/split", &a);
    a.json()
}

/// Every key of a scan of everything, page by page with `limit` pairs.
async fn scan_all(app: &axum::Router, limit: usize) -> (Vec<String>, usize) {
    let (mut keys, mut pages, mut token) = (Vec::new(), 0, None::<String>);
    loop {
        let uri = match &token {
            None => format!("/v1/kv?limit={limit}"),
            Some(t) => format!("/v1/kv?limit={limit}&page_token={t}"),
        };
        let a = call(app, Method::GET, &uri, &[], Bytes::new()).await;
        assert_eq!(a.status, StatusCode::OK, "{:?}", a.body);
        let page = a.json();
        let kvs = page["kvs"].as_array().unwrap();
        assert!(kvs.len() <= limit, "{page}");
        keys.extend(kvs.iter().map(|kv| kv["key"].as_str().unwrap().to_string()));
        pages += 1;
        match page["next_page_token"].as_str() {
            Some(t) if !t.is_empty() => token = Some(t.to_string()),
            _ => return (keys, pages),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_is_served_by_the_range_holding_its_keys() {
    // Proves: an admin splits a range through the API (a writer may not),
    // again at the same key splits nothing, and the status lists both
    // ranges; keys on both sides are read and written, the ones written
    // before the split among them; a scan crosses the split, page by page
    // and in one page; a batch, a transaction or a watch naming keys of
    // both ranges is refused whole, as is a lease on the new range's keys.
    let n = one_node(Limits::default()).await;
    let app = &n.app;
    for key in ["a/1", "q/1"] {
        assert_eq!(put(app, key, "before").await.status, StatusCode::OK);
    }

    let writer = post(app, "/v1/cluster/ranges/split", None, json!({ "key": "m" })).await;
    assert_eq!(writer.status, StatusCode::UNAUTHORIZED, "{:?}", writer.body);
    let empty = post(
        app,
        "/v1/cluster/ranges/split",
        Some(&n.admin),
        json!({ "key": "" }),
    )
    .await;
    assert_eq!(empty.error_code(), "INVALID_ARGUMENT");
    for bad in [
        json!({ "key": 5 }),
        json!({ "key": "m", "child": 9 }),
        json!({ "key": "bQ==", "encoding": "hex" }),
        json!({ "key": "%%", "encoding": "base64" }),
        json!({}),
    ] {
        let a = post(app, "/v1/cluster/ranges/split", Some(&n.admin), bad.clone()).await;
        assert_eq!(a.error_code(), "INVALID_ARGUMENT", "{bad}");
    }

    let first = split(&n, "m").await;
    assert_eq!(first["split"], true, "{first}");
    let range = &first["range"];
    assert_eq!(
        (range["start"].as_str(), range["end"].as_str()),
        (Some("m"), Some(""))
    );
    assert_eq!(range["voters"], json!([1]), "{first}");
    assert_eq!(
        range["leader_id"], 1,
        "the new range knows its leader: {first}"
    );
    let again = split(&n, "m").await;
    assert_eq!(
        (again["split"].clone(), again["range"]["id"].clone()),
        (json!(false), range["id"].clone())
    );
    let status = call(app, Method::GET, "/v1/cluster/status", &[], Bytes::new())
        .await
        .json();
    let ranges: Vec<(String, String, u64)> = status["ranges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["start"].as_str().unwrap().into(),
                r["end"].as_str().unwrap().into(),
                r["id"].as_u64().unwrap(),
            )
        })
        .collect();
    let child = range["id"].as_u64().unwrap();
    assert_eq!(
        ranges,
        [("".into(), "m".into(), 1), ("m".into(), "".into(), child)]
    );

    // Both sides, before and after the split.
    assert_eq!(get(app, "q/1").await.body, "before");
    for key in ["a/2", "q/2"] {
        assert_eq!(put(app, key, "after").await.status, StatusCode::OK);
        assert_eq!(get(app, key).await.body, "after");
    }
    let deleted = call(app, Method::DELETE, "/v1/kv/q/1", &[], Bytes::new()).await;
    assert_eq!(deleted.status, StatusCode::OK, "{:?}", deleted.body);
    assert_eq!(put(app, "q/1", "again").await.status, StatusCode::OK);

    let want: Vec<String> = ["a/1", "a/2", "q/1", "q/2"].map(String::from).into();
    assert_eq!(scan_all(app, 1).await, (want.clone(), 4));
    assert_eq!(scan_all(app, 3).await, (want.clone(), 2));
    assert_eq!(scan_all(app, 10).await, (want, 1));

    // Keys of both ranges in one request: refused, nothing applied.
    let batch = post(
        app,
        "/v1/batch",
        None,
        json!({"ops": [{"op": "put", "key": "a/3", "value": "v"}, {"op": "put", "key": "q/3", "value": "v"}]}),
    )
    .await;
    assert_eq!(batch.error_code(), "INVALID_ARGUMENT");
    assert!(
        String::from_utf8_lossy(&batch.body).contains("q/3"),
        "{:?}",
        batch.body
    );
    let txn = post(
        app,
        "/v1/txn",
        None,
        json!({"compare": [{"key": "a/1", "exists": true}],
               "success": [{"op": "put", "key": "q/3", "value": "v"}]}),
    )
    .await;
    assert_eq!(txn.error_code(), "INVALID_ARGUMENT");
    for key in ["a/3", "q/3"] {
        assert_eq!(get(app, key).await.status, StatusCode::NOT_FOUND);
    }
    let one_range = post(
        app,
        "/v1/batch",
        None,
        json!({"ops": [{"op": "put", "key": "q/3", "value": "v"}, {"op": "delete", "key": "q/2"}]}),
    )
    .await;
    assert_eq!(one_range.status, StatusCode::OK, "{:?}", one_range.body);

    let leased = call(app, Method::PUT, "/v1/kv/q/ttl?ttl=30s", &[], "v").await;
    assert_eq!(leased.error_code(), "INVALID_ARGUMENT");
    let kept = call(app, Method::PUT, "/v1/kv/a/ttl?ttl=30s", &[], "v").await;
    assert_eq!(kept.status, StatusCode::OK, "{:?}", kept.body);

    let watch_all = call(app, Method::GET, "/v1/watch", &[], Bytes::new()).await;
    assert_eq!(watch_all.error_code(), "INVALID_ARGUMENT");
    assert!(
        String::from_utf8_lossy(&watch_all.body).contains(r#"\"m\""#),
        "{:?}",
        watch_all.body
    );

    // A second split, of the new range.
    let second = split(&n, "q/2").await;
    assert_eq!(second["split"], true);
    assert!(second["range"]["id"].as_u64().unwrap() > child, "{second}");
    assert_eq!(get(app, "q/3").await.body, "v");

    // A backup holds every range's keys.
    let backup = call(
        app,
        Method::GET,
        "/v1/backup",
        &[("authorization", &n.admin)],
        Bytes::new(),
    )
    .await;
    assert_eq!(backup.status, StatusCode::OK);
    for key in ["a/1", "a/2", "a/ttl", "q/1", "q/3"] {
        assert!(
            backup.body.windows(key.len()).any(|w| w == key.as_bytes()),
            "{key} is not in the backup"
        );
    }
}
