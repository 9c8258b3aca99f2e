//! A write's time counted from when the node took it (`deadline.rs`), and a
//! refusal over HTTP/2 answered without waiting for the body: both keep
//! the node's answer ahead of the gateway's timeouts.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, Version};
use bytes::Bytes;
use futures::StreamExt;

use crate::support::{call, one_node_configured, send};

/// A body that sends `first`, waits `pause`, then sends `rest`; with no
/// `rest`, it never ends.
fn slow_body(first: &'static [u8], pause: Duration, rest: Option<&'static [u8]>) -> Body {
    let head = futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(first))]);
    let tail = futures::stream::once(async move {
        tokio::time::sleep(pause).await;
        rest
    })
    .filter_map(|r| async move { r.map(|b| Ok(Bytes::from_static(b))) });
    let never = futures::stream::pending();
    match rest {
        Some(_) => Body::from_stream(head.chain(tail)),
        None => Body::from_stream(head.chain(never)),
    }
}

fn put(key: &str, body: Body) -> Request<Body> {
    Request::builder()
        .method(Method::PUT)
        .uri(format!("/v1/kv/{key}"))
        .body(body)
        .unwrap()
}

#[tokio::test]
async fn a_write_whose_body_is_still_arriving_at_its_deadline_is_refused_as_not_applied() {
    // Proves: a write is given its request timeout from when the node took
    // it, not from when it proposed: one whose body takes longer than that
    // to arrive is answered OVERLOADED (retryable: never proposed) at its
    // deadline, and nothing is written. Counted from the proposal, the node
    // took it and answered 200 well after its request timeout, after the
    // gateway's own timeout had answered the client "outcome unknown".
    let n = one_node_configured(|c| c.timing.request_timeout_ms = 1000).await;
    let started = Instant::now();
    let answer = send(
        &n.app,
        put(
            "slow",
            slow_body(b"abc", Duration::from_millis(2500), Some(b"def")),
        ),
    )
    .await;
    let took = started.elapsed();
    assert_eq!(
        answer.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{:?}",
        answer.body
    );
    assert_eq!(answer.error_code(), "OVERLOADED");
    assert_eq!(answer.header("x-strata-retryable"), Some("true"));
    assert!(
        took < Duration::from_millis(2000),
        "answered after {took:?}"
    );
    let get = call(&n.app, Method::GET, "/v1/kv/slow", &[], Bytes::new()).await;
    assert_eq!(get.status, StatusCode::NOT_FOUND, "nothing was written");
}

#[tokio::test]
async fn a_write_that_used_half_its_time_arriving_is_not_proposed() {
    // Proves: a write whose body took more than half its time to arrive is
    // refused, not proposed (OVERLOADED, retryable), and nothing is
    // written; one that arrives in time is applied.
    let n = one_node_configured(|c| c.timing.request_timeout_ms = 1000).await;
    let late = send(
        &n.app,
        put(
            "late",
            slow_body(b"abc", Duration::from_millis(700), Some(b"def")),
        ),
    )
    .await;
    assert_eq!(
        late.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{:?}",
        late.body
    );
    assert_eq!(late.error_code(), "OVERLOADED");
    let get = call(&n.app, Method::GET, "/v1/kv/late", &[], Bytes::new()).await;
    assert_eq!(get.status, StatusCode::NOT_FOUND, "nothing was written");

    let timely = send(
        &n.app,
        put(
            "timely",
            slow_body(b"abc", Duration::from_millis(100), Some(b"def")),
        ),
    )
    .await;
    assert_eq!(timely.status, StatusCode::OK, "{:?}", timely.body);
    let get = call(&n.app, Method::GET, "/v1/kv/timely", &[], Bytes::new()).await;
    assert_eq!(get.body, Bytes::from_static(b"abcdef"));
}

#[tokio::test]
async fn a_write_refused_over_http2_is_answered_before_its_body_arrives() {
    // Proves: a write refused for want of budget over HTTP/2 (how the
    // gateway and gRPC clients connect) is answered at once, without
    // reading its body; over HTTP/1.1 the node still reads the body first,
    // or the client would see a broken connection. Reading it cost each
    // refused 15 MiB write a second or two, and the gateway, retrying
    // refusals, answered "outcome unknown" at its route timeout.
    let n = one_node_configured(|c| {
        c.timing.request_timeout_ms = 10_000;
        c.limits.max_write_bytes_in_flight = 1000;
    })
    .await;
    // Holds the whole budget: its body never ends.
    let holder = tokio::spawn({
        let app = n.app.clone();
        async move { send(&app, put("holder", slow_body(b"x", Duration::ZERO, None))).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut refused = put("refused", slow_body(b"y", Duration::ZERO, None));
    *refused.version_mut() = Version::HTTP_2;
    refused
        .headers_mut()
        .insert("content-length", "2000".parse().unwrap());
    let answer = tokio::time::timeout(Duration::from_secs(2), send(&n.app, refused))
        .await
        .expect("answered without waiting for the body");
    assert_eq!(
        answer.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{:?}",
        answer.body
    );
    assert_eq!(answer.error_code(), "OVERLOADED");
    holder.abort();
}
