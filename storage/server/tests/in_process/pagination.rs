//! Consistent pagination: every page of one scan reads the state its first
//! page read, whatever is written meanwhile.

use axum::http::{Method, StatusCode};
use bytes::Bytes;
use serde_json::Value;

use crate::support::{Answer, assert_documented, call, document, one_node};
use strata_server::config::Limits;

async fn put(app: &axum::Router, key: &str, value: &str) {
    let a = call(
        app,
        Method::PUT,
        &format!("/v1/kv/{key}"),
        &[],
        value.to_string(),
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{:?}", a.body);
}

async fn page(app: &axum::Router, token: Option<&str>) -> Answer {
    let uri = match token {
        None => "/v1/kv?prefix=p/&limit=2".to_string(),
        Some(t) => format!("/v1/kv?prefix=p/&limit=2&page_token={t}"),
    };
    call(app, Method::GET, &uri, &[], Bytes::new()).await
}

fn pairs(page: &Value) -> Vec<(String, String)> {
    page["kvs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|kv| {
            (
                kv["key"].as_str().unwrap().to_string(),
                kv["value"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[tokio::test]
async fn every_page_of_a_scan_reads_the_state_its_first_page_read() {
    // Proves: writes between pages (a key added and one deleted in a later
    // page's range, one overwritten) are not seen by the scan's later pages,
    // which report the first page's index; retrying a page gives the same
    // page; a new scan sees the new state.
    let n = one_node(Limits::default()).await;
    let app = &n.app;
    let doc = document();
    for k in ["p/a", "p/b", "p/c", "p/d", "p/e"] {
        put(app, k, "old").await;
    }
    let first = page(app, None).await;
    assert_documented(&doc, "get", "/v1/kv", &first);
    let first = first.json();
    assert_eq!(pairs(&first), owned(&[("p/a", "old"), ("p/b", "old")]));
    let index = first["index"].as_u64().unwrap();
    let token = first["next_page_token"].as_str().unwrap().to_string();

    put(app, "p/c", "new").await;
    put(app, "p/c2", "new").await;
    let a = call(app, Method::DELETE, "/v1/kv/p/d", &[], Bytes::new()).await;
    assert_eq!(a.status, StatusCode::OK);

    let second = page(app, Some(&token)).await;
    assert_documented(&doc, "get", "/v1/kv", &second);
    let second = second.json();
    assert_eq!(pairs(&second), owned(&[("p/c", "old"), ("p/d", "old")]));
    assert_eq!(second["index"].as_u64(), Some(index), "{second}");
    let again = page(app, Some(&token)).await.json();
    assert_eq!(
        pairs(&again),
        pairs(&second),
        "a retried page is the same page"
    );
    let token = second["next_page_token"].as_str().unwrap().to_string();
    let last = page(app, Some(&token)).await.json();
    assert_eq!(pairs(&last), owned(&[("p/e", "old")]));
    assert!(last["next_page_token"].is_null(), "{last}");

    let fresh = page(app, None).await.json();
    assert_eq!(pairs(&fresh), owned(&[("p/a", "old"), ("p/b", "old")]));
    assert!(fresh["index"].as_u64().unwrap() > index);
    let fresh = page(app, fresh["next_page_token"].as_str()).await.json();
    assert_eq!(pairs(&fresh), owned(&[("p/c", "new"), ("p/c2", "new")]));
}

#[tokio::test]
async fn a_page_after_the_last_is_gone_and_a_token_not_ours_is_invalid() {
    // Proves: the view goes with the scan's last page, so that page's
    // token read again is 410 PAGE_TOKEN_EXPIRED; a token from a node that
    // has since restarted (another life) is the same; a token that is not
    // one at all is 400 INVALID_ARGUMENT.
    let n = one_node(Limits::default()).await;
    let app = &n.app;
    let doc = document();
    for k in ["p/a", "p/b", "p/c"] {
        put(app, k, "v").await;
    }
    let first = page(app, None).await.json();
    let token = first["next_page_token"].as_str().unwrap().to_string();
    assert_eq!(page(app, Some(&token)).await.status, StatusCode::OK);
    let gone = page(app, Some(&token)).await;
    assert_documented(&doc, "get", "/v1/kv", &gone);
    assert_eq!(gone.status, StatusCode::GONE);
    assert_eq!(gone.error_code(), "PAGE_TOKEN_EXPIRED");
    assert!(
        gone.json()["message"]
            .as_str()
            .unwrap()
            .contains("start the scan again")
    );

    let other = one_node(Limits::default()).await;
    for k in ["p/a", "p/b", "p/c"] {
        put(&other.app, k, "v").await;
    }
    let foreign = page(&other.app, None).await.json();
    let foreign = foreign["next_page_token"].as_str().unwrap().to_string();
    let answer = page(app, Some(&foreign)).await;
    assert_eq!(answer.status, StatusCode::GONE);

    let raw = page(app, Some("cC9i")).await;
    assert_eq!(raw.status, StatusCode::BAD_REQUEST);
    assert_eq!(raw.error_code(), "INVALID_ARGUMENT");
}
