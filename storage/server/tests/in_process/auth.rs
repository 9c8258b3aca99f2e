//! Who may do what, on one node: every route checks the caller's role (a
//! token's, or the anonymous role), refuses in the API's error shape, 401
//! or 403 as documented, and a refused request changes nothing.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use bytes::Bytes;
use strata_auth::{Claims, ISSUER, KeyPair, Role};
use strata_server::config::Limits;

use crate::support::{
    JSON, OneNode, assert_documented, call, document, one_node, one_node_configured, send,
};

fn auth(value: &str) -> (&'static str, &str) {
    ("authorization", value)
}

async fn members(n: &OneNode) -> usize {
    let got = call(
        &n.app,
        Method::GET,
        "/v1/cluster/members",
        &[],
        Bytes::new(),
    )
    .await;
    got.json()["members"].as_array().unwrap().len()
}

#[tokio::test]
async fn each_route_takes_the_roles_that_allow_it_and_refuses_the_rest() {
    // Proves, on a node whose anonymous role is `write` (the demo's): a
    // request without a token writes but cannot remove a member (401
    // UNAUTHENTICATED with `www-authenticate: Bearer`), and the member
    // stays; a read token reads but cannot write (403 PERMISSION_DENIED);
    // a write token writes but cannot transfer leadership (403); an admin
    // token can; an expired token, another key's and a header that is not
    // `Bearer` are 401, whatever their role claims; health and metrics are
    // open. Every refusal is documented for its route.
    let n = one_node(Limits::default()).await;
    let (app, doc) = (&n.app, document());

    let put = call(app, Method::PUT, "/v1/kv/open", &[], "v").await;
    assert_eq!(put.status, StatusCode::OK, "anonymous write");
    let removed = call(
        app,
        Method::DELETE,
        "/v1/cluster/members/1",
        &[],
        Bytes::new(),
    )
    .await;
    assert_eq!(
        removed.status,
        StatusCode::UNAUTHORIZED,
        "{:?}",
        removed.body
    );
    assert_eq!(removed.error_code(), "UNAUTHENTICATED");
    assert_eq!(
        removed.header("www-authenticate"),
        Some("Bearer realm=\"strata\"")
    );
    assert_documented(&doc, "delete", "/v1/cluster/members/{id}", &removed);
    assert_eq!(members(&n).await, 1, "the refused removal changed nothing");

    let reader = n.bearer(Role::Read);
    let got = call(
        app,
        Method::GET,
        "/v1/kv/open",
        &[auth(&reader)],
        Bytes::new(),
    )
    .await;
    assert_eq!(got.status, StatusCode::OK);
    let denied = call(app, Method::PUT, "/v1/kv/denied", &[auth(&reader)], "v").await;
    assert_eq!(denied.status, StatusCode::FORBIDDEN, "{:?}", denied.body);
    assert_eq!(denied.error_code(), "PERMISSION_DENIED");
    assert_documented(&doc, "put", "/v1/kv/{key}", &denied);
    let absent = call(app, Method::GET, "/v1/kv/denied", &[], Bytes::new()).await;
    assert_eq!(
        absent.status,
        StatusCode::NOT_FOUND,
        "the refused put wrote nothing"
    );

    let writer = n.bearer(Role::Write);
    let put = call(app, Method::PUT, "/v1/kv/written", &[auth(&writer)], "v").await;
    assert_eq!(put.status, StatusCode::OK);
    let transfer = r#"{"target_id":1}"#;
    let denied = call(
        app,
        Method::POST,
        "/v1/cluster/leader",
        &[JSON, auth(&writer)],
        transfer,
    )
    .await;
    assert_eq!(denied.status, StatusCode::FORBIDDEN, "{:?}", denied.body);
    assert_documented(&doc, "post", "/v1/cluster/leader", &denied);
    let done = call(
        app,
        Method::POST,
        "/v1/cluster/leader",
        &[JSON, auth(&n.admin)],
        transfer,
    )
    .await;
    assert_eq!(done.status, StatusCode::OK, "{:?}", done.body);

    let expired = n
        .keys
        .signer()
        .sign_claims(&Claims {
            sub: "old".into(),
            role: Role::Admin,
            iss: ISSUER.into(),
            iat: 1,
            exp: 2,
        })
        .unwrap();
    let stranger = KeyPair::generate()
        .signer()
        .sign("mallory", Role::Admin, Duration::from_secs(60))
        .unwrap();
    for (what, header) in [
        ("expired", format!("Bearer {expired}")),
        ("another key's", format!("Bearer {stranger}")),
        ("not a bearer", "Basic YWRtaW46YWRtaW4=".to_string()),
        ("garbage", "Bearer x.y.z".to_string()),
    ] {
        let refused = call(
            app,
            Method::DELETE,
            "/v1/cluster/members/1",
            &[auth(&header)],
            Bytes::new(),
        )
        .await;
        assert_eq!(
            refused.status,
            StatusCode::UNAUTHORIZED,
            "{what}: {:?}",
            refused.body
        );
        assert_eq!(refused.error_code(), "UNAUTHENTICATED", "{what}");
    }
    assert_eq!(members(&n).await, 1);
    for open in ["/health/ready", "/health/live", "/metrics", "/openapi.json"] {
        let got = call(app, Method::GET, open, &[], Bytes::new()).await;
        assert_eq!(got.status, StatusCode::OK, "{open}");
    }
}

#[tokio::test]
async fn a_node_whose_anonymous_role_is_none_serves_no_data_without_a_token() {
    // Proves, with `--anonymous-role none` (the default): a read without
    // a token is 401 over REST and UNAUTHENTICATED (16) over gRPC; with a
    // read token both are served; health stays open for the gateway's
    // checks.
    let n = one_node_configured(|c| c.anonymous_role = Default::default()).await;
    let app = &n.app;
    let refused = call(app, Method::GET, "/v1/kv/a", &[], Bytes::new()).await;
    assert_eq!(
        refused.status,
        StatusCode::UNAUTHORIZED,
        "{:?}",
        refused.body
    );
    assert_documented(&document(), "get", "/v1/kv/{key}", &refused);
    let reader = n.bearer(Role::Read);
    let read = call(app, Method::GET, "/v1/kv/a", &[auth(&reader)], Bytes::new()).await;
    assert_eq!(
        read.status,
        StatusCode::NOT_FOUND,
        "served: the key does not exist"
    );

    let grpc = |token: Option<&str>| {
        let mut req = Request::builder()
            .method(Method::POST)
            .uri("/strata.v1.KV/Get")
            .header("content-type", "application/grpc")
            .header("te", "trailers");
        if let Some(t) = token {
            req = req.header("authorization", t);
        }
        // A GetRequest for key "a": one message, uncompressed.
        req.body(Body::from(vec![0, 0, 0, 0, 3, 0x0a, 1, b'a']))
            .unwrap()
    };
    let refused = send(app, grpc(None)).await;
    assert_eq!(
        refused.header("grpc-status"),
        Some("16"),
        "{:?}",
        refused.headers
    );
    let served = send(app, grpc(Some(&reader))).await;
    // Served by the handler: its answer's status comes in the trailers,
    // where a refusal before the handler is all headers.
    assert_eq!(served.header("content-type"), Some("application/grpc"));
    assert_eq!(served.header("grpc-status"), None, "{:?}", served.headers);
    let ready = call(app, Method::GET, "/health/ready", &[], Bytes::new()).await;
    assert_eq!(ready.status, StatusCode::OK);
}
