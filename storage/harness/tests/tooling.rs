//! What tools need from a running cluster: the `strata` CLI, gRPC health and
//! reflection (so grpcurl needs no .proto), and the served OpenAPI document.

use std::process::Command;

use serde_json::Value;
use strata_harness::{Cluster, workspace_binary};
use tokio_stream::StreamExt;

fn cli(c: &Cluster, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(workspace_binary("strata").unwrap())
        .arg("--endpoint")
        .arg(c.gateway_url())
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_put_get_scan_del_status_through_the_gateway() {
    let c = Cluster::start(3).await.unwrap();
    let (ok, out, err) = cli(&c, &["put", "cli/a", "alpha"]);
    assert!(ok, "{err}");
    assert!(out.starts_with("OK index="), "{out}");
    cli(&c, &["put", "cli/b", "beta"]);
    let (ok, out, _) = cli(&c, &["get", "cli/a"]);
    assert!(ok);
    assert_eq!(out, "alpha");
    let (_, out, _) = cli(&c, &["scan", "--prefix", "cli/"]);
    assert_eq!(out, "cli/a\talpha\ncli/b\tbeta\n");
    let (_, out, _) = cli(
        &c,
        &["scan", "--prefix", "cli/", "--limit", "1", "--keys-only"],
    );
    assert_eq!(out, "cli/a\n");
    let (_, out, _) = cli(&c, &["del", "cli/a"]);
    assert_eq!(out.trim(), "deleted");
    let (ok, _, err) = cli(&c, &["get", "cli/a"]);
    assert!(!ok, "a missing key must fail the command");
    assert!(err.contains("not found"), "{err}");
    let (ok, out, _) = cli(&c, &["status", "--json"]);
    assert!(ok);
    let st: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(st["nodes"].as_array().unwrap().len(), 3);
    let (_, out, _) = cli(&c, &["status"]);
    assert_eq!(
        out.matches("leader").count(),
        2,
        "header line plus one leader row:\n{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_health_and_reflection_answer_through_the_gateway() {
    let c = Cluster::start(3).await.unwrap();
    let channel = tonic::transport::Endpoint::from_shared(c.gateway_url())
        .unwrap()
        .connect()
        .await
        .unwrap();

    let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
    let resp = health
        .check(tonic_health::pb::HealthCheckRequest {
            service: "strata.v1.KV".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        resp.status(),
        tonic_health::pb::health_check_response::ServingStatus::Serving
    );

    use tonic_reflection::pb::v1::ServerReflectionRequest;
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    let mut reflection = ServerReflectionClient::new(channel);
    let req = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut stream = reflection
        .server_reflection_info(tokio_stream::iter(vec![req]))
        .await
        .unwrap()
        .into_inner();
    let resp = stream.next().await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = resp.message_response else {
        panic!("unexpected reflection answer {resp:?}");
    };
    let names: Vec<_> = list.service.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"strata.v1.KV"), "{names:?}");
    assert!(names.contains(&"strata.v1.Cluster"), "{names:?}");
    assert!(names.contains(&"grpc.health.v1.Health"), "{names:?}");
    assert!(
        !names.contains(&"strata.v1.Raft"),
        "the internal transport is not advertised: {names:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_document_is_served_and_lists_every_route() {
    let c = Cluster::start(3).await.unwrap();
    let doc: Value = c
        .http()
        .get(format!("{}/openapi.json", c.gateway_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let paths = doc["paths"].as_object().unwrap();
    for p in [
        "/v1/kv/{key}",
        "/v1/kv",
        "/v1/batch",
        "/v1/cas",
        "/v1/cluster/status",
        "/health/leader",
    ] {
        assert!(
            paths.contains_key(p),
            "{p} missing from the OpenAPI document"
        );
    }
}
