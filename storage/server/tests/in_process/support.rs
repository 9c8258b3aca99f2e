//! Starting a one-node cluster in a temporary directory, calling its router,
//! and checking answers against the OpenAPI document.

use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use bytes::Bytes;
use http_body_util::BodyExt;
use serde_json::Value;
use strata_auth::{KeyPair, Role};
use strata_server::NodeConfig;
use strata_server::config::Limits;
use strata_server::node::Node;
use tempfile::TempDir;
use tower::ServiceExt;

/// A started node that serves nowhere; its router is called directly.
/// It takes tokens of its own key pair; requests without one may read and
/// write (the demo's setting), and `admin` is the `authorization` header
/// of an admin token for the rest.
pub struct OneNode {
    pub app: Router,
    pub node: Node,
    pub keys: KeyPair,
    pub admin: String,
    _dir: TempDir,
}

impl OneNode {
    /// The `authorization` header of a token of this node's key with `role`.
    pub fn bearer(&self, role: Role) -> String {
        let token = self
            .keys
            .signer()
            .sign("test", role, Duration::from_secs(3600))
            .unwrap();
        format!("Bearer {token}")
    }
}

/// Starts a one-voter node with `limits` and waits until it leads.
pub async fn one_node(limits: Limits) -> OneNode {
    one_node_configured(|config| config.limits = limits).await
}

/// A single-node cluster whose configuration `configure` changed.
pub async fn one_node_configured(configure: impl FnOnce(&mut NodeConfig)) -> OneNode {
    let dir = tempfile::tempdir().unwrap();
    let keys = KeyPair::generate();
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, keys.jwks_json()).unwrap();
    let mut config = NodeConfig::single(1, "127.0.0.1:0".parse().unwrap(), dir.path().join("data"));
    config.auth_jwks = Some(jwks);
    config.anonymous_role = "write".parse().unwrap();
    configure(&mut config);
    let node = Node::start(config).await.unwrap();
    let app = node.router();
    wait_leader(&app).await;
    wait_named(&node).await;
    let admin = format!(
        "Bearer {}",
        keys.signer()
            .sign("admin", Role::Admin, Duration::from_secs(3600))
            .unwrap()
    );
    OneNode {
        app,
        node,
        keys,
        admin,
        _dir: dir,
    }
}

/// Waits until `/health/leader` answers 200.
pub async fn wait_leader(app: &Router) {
    for _ in 0..500 {
        if call(app, Method::GET, "/health/leader", &[], Bytes::new())
            .await
            .status
            == StatusCode::OK
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the node did not become leader in 5 s");
}

/// Waits until the node's first leader has named the cluster (its one
/// proposal of its own), so that what a test proposes is all that follows.
pub async fn wait_named(node: &Node) {
    for _ in 0..500 {
        if node.raft().state_machine().cluster_id().unwrap() != 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the cluster was not named in 5 s");
}

/// What a router answered.
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The error code of an error answer, after checking its shape: exactly
    /// `code` and a non-empty `message` (and the leader, when known).
    pub fn error_code(&self) -> String {
        let body = self.json();
        let object = body.as_object().expect("an error body is an object");
        for key in object.keys() {
            assert!(
                ["code", "message", "leader_id", "leader_address"].contains(&key.as_str()),
                "unexpected `{key}` in {body}"
            );
        }
        assert!(
            body["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{body}"
        );
        body["code"].as_str().expect("a code").to_string()
    }
}

/// One request through `app`, answered in full.
pub async fn call(
    app: &Router,
    method: Method,
    uri: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> Answer {
    let mut req = Request::builder().method(method).uri(uri);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    send(app, req.body(Body::from(body.into())).unwrap()).await
}

/// One prepared request through `app`, answered in full.
pub async fn send(app: &Router, req: Request<Body>) -> Answer {
    let resp = app.clone().oneshot(req).await.unwrap();
    let (parts, body) = resp.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    Answer {
        status: parts.status,
        headers: parts.headers,
        body,
    }
}

/// JSON requests are the common case.
pub const JSON: (&str, &str) = ("content-type", "application/json");

/// The OpenAPI document the node serves.
pub fn document() -> Value {
    serde_json::from_str(&strata_server::rest::openapi::render()).unwrap()
}

/// Follows a local `$ref` in `doc`, if `value` is one.
fn resolve<'a>(doc: &'a Value, value: &'a Value) -> &'a Value {
    match value["$ref"].as_str() {
        Some(r) => doc
            .pointer(r.trim_start_matches('#'))
            .unwrap_or_else(|| panic!("{r} names nothing")),
        None => value,
    }
}

/// Checks `answer` against what the document says `method path` answers:
/// its status is documented, with its content type, a JSON body matches the
/// schema, and a success carries only documented `x-strata-*` headers.
pub fn assert_documented(doc: &Value, method: &str, path: &str, answer: &Answer) {
    let operation = &doc["paths"][path][method];
    assert!(operation.is_object(), "{method} {path} is not documented");
    let status = answer.status.as_str();
    let response = resolve(doc, &operation["responses"][status]);
    assert!(
        response.is_object(),
        "{method} {path} answered {status}, which is not documented"
    );
    let content_type = answer
        .header("content-type")
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    let media = &response["content"][&content_type];
    assert!(
        media.is_object(),
        "{method} {path} {status} answered {content_type}, which is not documented"
    );
    if content_type == "application/json" {
        let mut schema = media["schema"].clone();
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema".into();
        schema["components"] = doc["components"].clone();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let instance = answer.json();
        let errors: Vec<String> = validator
            .iter_errors(&instance)
            .map(|e| e.to_string())
            .collect();
        assert!(
            errors.is_empty(),
            "{method} {path} {status}: {instance} does not match the document: {errors:?}"
        );
    }
    if answer.status.is_success() {
        for name in answer.headers.keys() {
            if name.as_str().starts_with("x-strata-") {
                assert!(
                    response["headers"][name.as_str()].is_object(),
                    "{method} {path} {status} sent the undocumented header {name}"
                );
            }
        }
    }
}
