//! Role checks at the gateway, tried the way an attacker would, through
//! real Envoy in front of real nodes: what a token's role does not allow is
//! refused by the gateway itself (its RBAC filter over the verified token's
//! claims, from the nodes' own table, gateway/roles.json), and no node sees
//! the request. Requests without a token go on to the nodes' anonymous
//! role, except to the routes that need admin, which the anonymous role
//! never is.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use strata_auth::Role;
use strata_client::{Client, ClientError};
use strata_harness::Cluster;

/// Envoy's count of requests its RBAC filter refused.
const RBAC_DENIED: &str = "http.ingress.rbac.denied";

fn grpc_refusal(e: &ClientError) -> (tonic::Code, String) {
    match e {
        ClientError::Status(s) => (s.code(), s.message().to_string()),
        other => panic!("not a status: {other}"),
    }
}

/// Sends `method path` through the gateway, with `token` when given, and
/// answers its status and body.
async fn send(c: &Cluster, method: Method, path: &str, token: Option<&str>) -> (StatusCode, Value) {
    let mut req = reqwest::Client::new().request(method, format!("{}{path}", c.gateway_url()));
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    let resp = req.body("v").send().await.unwrap();
    let status = resp.status();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Envoy's access log lines for `path`, once Envoy has written them (it
/// flushes its log file when it reopens it, else every 10 s).
async fn logged(c: &Cluster, path: &str) -> Vec<Value> {
    c.http()
        .post(format!("{}/reopen_logs", c.admin_url()))
        .send()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    std::fs::read_to_string(c.log_dir().join("envoy-access.log"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["path"] == path)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_refuses_what_a_tokens_role_does_not_allow_before_any_node() {
    // Proves, on the demo's setting (requests without a token may write):
    // with a write token, removing a member over REST (also spelled with a
    // percent-encoded id, or with a query) is 403 PERMISSION_DENIED and over
    // gRPC PERMISSION_DENIED, both from the gateway, which sent them to no
    // node (the access log has no upstream, Envoy's RBAC counter rose by
    // each); without a token the same removal is 401 from the gateway; a
    // read token cannot write (REST or gRPC) and the key stays absent, but
    // it reads; a write without a token reaches the node, whose anonymous
    // role writes; and an admin token is served, the member removed.
    let c = Cluster::start(3).await.unwrap();
    let writer = c.token(Role::Write);
    let reader = c.token(Role::Read);
    let before = c
        .envoy_stat(RBAC_DENIED)
        .await
        .expect("Envoy's RBAC counter");

    for path in [
        "/v1/cluster/members/3",
        "/v1/cluster/members/%33",
        "/v1/cluster/members/3?force=true",
    ] {
        let (status, body) = send(&c, Method::DELETE, path, Some(&writer)).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (StatusCode::FORBIDDEN, Some("PERMISSION_DENIED")),
            "{path}: {body}"
        );
        assert!(
            body["message"].as_str().unwrap().starts_with("gateway:"),
            "{path} was refused by a node, not the gateway: {body}"
        );
        eprintln!("write token, DELETE {path}: {status} {body}");
    }
    let grpc = Client::connect(&c.gateway_url()).await.unwrap();
    let err = grpc
        .clone()
        .with_token(&writer)
        .unwrap()
        .remove_member(3)
        .await
        .unwrap_err();
    let (code, message) = grpc_refusal(&err);
    assert_eq!(code, tonic::Code::PermissionDenied, "{message}");
    assert!(message.contains("gateway:"), "{message}");
    eprintln!("write token, gRPC RemoveMember: {code:?} {message}");

    let (status, body) = send(&c, Method::DELETE, "/v1/cluster/members/3", None).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("UNAUTHENTICATED")),
        "{body}"
    );
    assert!(
        body["message"].as_str().unwrap().starts_with("gateway:"),
        "{body}"
    );
    let err = grpc.remove_member(3).await.unwrap_err();
    let (code, message) = grpc_refusal(&err);
    assert_eq!(code, tonic::Code::Unauthenticated, "{message}");
    assert!(message.contains("gateway:"), "{message}");

    let (status, body) = send(&c, Method::PUT, "/v1/kv/read-only", Some(&reader)).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("PERMISSION_DENIED")),
        "{body}"
    );
    assert!(
        body["message"].as_str().unwrap().starts_with("gateway:"),
        "{body}"
    );
    let err = grpc
        .clone()
        .with_token(&reader)
        .unwrap()
        .put("read-only", "v")
        .await
        .unwrap_err();
    let (code, message) = grpc_refusal(&err);
    assert_eq!(code, tonic::Code::PermissionDenied, "{message}");
    assert!(message.contains("gateway:"), "{message}");
    let (status, _) = send(&c, Method::GET, "/v1/kv/read-only", Some(&reader)).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "the refused write was applied"
    );

    let (status, body) = send(&c, Method::PUT, "/v1/kv/anonymous", None).await;
    assert_eq!(status, StatusCode::OK, "the anonymous role writes: {body}");

    // Six refusals by the RBAC filter (the 401s are the JWT filter's).
    let after = c
        .envoy_stat(RBAC_DENIED)
        .await
        .expect("Envoy's RBAC counter");
    assert_eq!(after - before, 6);
    let refused = logged(&c, "/v1/cluster/members/3").await;
    let forbidden: Vec<&Value> = refused.iter().filter(|v| v["status"] == 403).collect();
    assert_eq!(forbidden.len(), 1, "{refused:?}");
    assert!(
        forbidden[0]["upstream"].is_null(),
        "a node was sent it: {}",
        forbidden[0]
    );
    assert!(
        forbidden[0]["details"]
            .as_str()
            .unwrap()
            .starts_with("rbac_access_denied"),
        "{}",
        forbidden[0]
    );

    let admin = c.admin_token().to_string();
    let (status, body) = send(&c, Method::DELETE, "/v1/cluster/members/3", Some(&admin)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let members = grpc.with_token(&admin).unwrap().members().await.unwrap();
    assert_eq!(members.len(), 2, "the admin's removal is served");
    let served = logged(&c, "/v1/cluster/members/3").await;
    let ok: Vec<&Value> = served.iter().filter(|v| v["status"] == 200).collect();
    assert!(
        ok.len() == 1 && !ok[0]["upstream"].is_null(),
        "the admin's removal went to a node: {served:?}"
    );
}
