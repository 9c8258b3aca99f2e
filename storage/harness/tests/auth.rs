//! Who may do what, against real processes through Envoy, as a client or
//! an attacker would try it: a cluster change without a token, with a
//! token of too small a role, with a forged one, and the internal routes;
//! and a write sent to a follower with a token, which the follower forwards
//! to the leader with the caller's credential.

use std::time::Duration;

use strata_auth::{KeyPair, Role};
use strata_client::proto::LeaseKeepAliveRequest;
use strata_client::proto::lease_client::LeaseClient;
use strata_client::{Client, ClientError, Credential};
use strata_harness::Cluster;
use tonic::service::interceptor::InterceptedService;

fn code(e: &ClientError) -> Option<tonic::Code> {
    match e {
        ClientError::Status(s) => Some(s.code()),
        _ => None,
    }
}

async fn voters(c: &Cluster) -> usize {
    let body: serde_json::Value = c
        .http()
        .get(format!("{}/v1/cluster/members", c.gateway_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    body["members"].as_array().unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_changes_through_the_gateway_need_an_admin_token() {
    // Proves, through Envoy, on a cluster where requests without a token
    // may write (the demo's setting): removing a member without a token is
    // 401 over REST and UNAUTHENTICATED over gRPC; with a write token 403 /
    // PERMISSION_DENIED; with a token of another key 401 from the gateway
    // itself (its JWT filter); the raft transport and members' internal
    // calls are not routed at all; and after all of it every member is
    // still there. With the admin token the same call is served.
    let c = Cluster::start(3).await.unwrap();
    let gw = c.gateway_url();
    let plain = reqwest::Client::new();
    let remove = format!("{gw}/v1/cluster/members/3");

    let anonymous = plain.delete(&remove).send().await.unwrap();
    let status = anonymous.status();
    let body: serde_json::Value = anonymous.json().await.unwrap();
    assert_eq!(
        (status.as_u16(), body["code"].as_str()),
        (401, Some("UNAUTHENTICATED")),
        "{body}"
    );
    eprintln!("anonymous DELETE member: {status} {body}");

    let writer = c.token(Role::Write);
    let denied = plain
        .delete(&remove)
        .bearer_auth(&writer)
        .send()
        .await
        .unwrap();
    let status = denied.status();
    let body: serde_json::Value = denied.json().await.unwrap();
    assert_eq!(
        (status.as_u16(), body["code"].as_str()),
        (403, Some("PERMISSION_DENIED")),
        "{body}"
    );
    eprintln!("write-role DELETE member: {status} {body}");

    let forged = KeyPair::generate()
        .signer()
        .sign("mallory", Role::Admin, Duration::from_secs(600))
        .unwrap();
    let refused = plain
        .delete(&remove)
        .bearer_auth(&forged)
        .send()
        .await
        .unwrap();
    let status = refused.status();
    let body: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(
        (status.as_u16(), body["code"].as_str()),
        (401, Some("UNAUTHENTICATED")),
        "{body}"
    );
    assert!(
        body["message"].as_str().unwrap().starts_with("gateway:"),
        "refused by the gateway, before any node: {body}"
    );
    eprintln!("forged admin token DELETE member: {status} {body}");

    let grpc = Client::connect(&gw).await.unwrap();
    let err = grpc.remove_member(3).await.unwrap_err();
    assert_eq!(code(&err), Some(tonic::Code::Unauthenticated), "{err}");
    let err = grpc
        .clone()
        .with_token(&writer)
        .unwrap()
        .transfer_leader(2)
        .await
        .unwrap_err();
    assert_eq!(code(&err), Some(tonic::Code::PermissionDenied), "{err}");
    let err = grpc
        .clone()
        .with_token(&forged)
        .unwrap()
        .remove_member(3)
        .await
        .unwrap_err();
    assert_eq!(code(&err), Some(tonic::Code::Unauthenticated), "{err}");

    for internal in [
        "/strata.v1.Raft/Send",
        "/strata.v1.Cluster/LocalSnapshot",
        "/strata.v1.Cluster/LocalStatus",
        "/envoy.service.endpoint.v3.EndpointDiscoveryService/StreamEndpoints",
        "/envoy.service.endpoint.v3.EndpointDiscoveryService/FetchEndpoints",
    ] {
        let answer = plain
            .post(format!("{gw}{internal}"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(vec![0u8, 0, 0, 0, 0])
            .send()
            .await
            .unwrap();
        // Envoy's own 404, in gRPC's terms: UNIMPLEMENTED (12), with the
        // route's reason; no node saw it.
        let status = answer.status().as_u16();
        let grpc_status = answer
            .headers()
            .get("grpc-status")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let message = answer
            .headers()
            .get("grpc-message")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        assert_eq!(
            (status, grpc_status.as_deref()),
            (200, Some("12")),
            "{internal} is routed: {message}"
        );
        assert!(message.contains("internal"), "{internal}: {message}");
    }
    assert_eq!(voters(&c).await, 3, "a refused call removed a member");

    let admin = c.admin_client().await.unwrap();
    let members = admin.remove_member(3).await.unwrap();
    assert_eq!(members.len(), 2, "the admin's removal is served");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_cluster_serves_tokens_only_and_a_follower_forwards_the_callers() {
    // Proves, on a cluster whose nodes serve nothing without a token (the
    // default): a read without one is 401, also sent to a node directly; a
    // write with a write token sent straight to a follower is served (the
    // follower forwards it with the caller's credential, and the leader,
    // which checks it again, applies it); with a read token it is 403 there.
    let c = Cluster::start_closed(3).await.unwrap();
    let follower = c.follower().await.unwrap();
    let direct = c.node_url(follower);
    let plain = reqwest::Client::new();
    let read = plain
        .get(format!("{}/v1/kv/k", c.gateway_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(read.status().as_u16(), 401);
    let read = plain.get(format!("{direct}/v1/kv/k")).send().await.unwrap();
    assert_eq!(
        read.status().as_u16(),
        401,
        "a node reached directly is no way around"
    );

    let writer = Client::connect(&direct)
        .await
        .unwrap()
        .with_token(&c.token(Role::Write))
        .unwrap();
    let put = writer.put("k", "v").await.unwrap();
    assert_ne!(put.node_id, follower, "served by the leader, forwarded");
    let reader = Client::connect(&direct)
        .await
        .unwrap()
        .with_token(&c.token(Role::Read))
        .unwrap();
    assert_eq!(&reader.get("k", false).await.unwrap().unwrap()[..], b"v");
    let err = reader.put("k", "w").await.unwrap_err();
    assert_eq!(code(&err), Some(tonic::Code::PermissionDenied), "{err}");

    // A keep-alive stream to the follower: each keep-alive is sent on to
    // the leader, after the call that opened the stream has returned, and
    // still carries the caller's token.
    let lease = writer
        .lease_grant(Duration::from_secs(30), 0)
        .await
        .unwrap()
        .id;
    let channel = tonic::transport::Endpoint::from_shared(direct.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let credential = Credential::bearer(&c.token(Role::Write)).unwrap();
    let mut leases = LeaseClient::new(InterceptedService::new(channel, credential));
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let mut answers = leases
        .keep_alive(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    for _ in 0..3 {
        tx.send(LeaseKeepAliveRequest { id: lease }).await.unwrap();
        let answer = tokio::time::timeout(Duration::from_secs(10), answers.message())
            .await
            .expect("a keep-alive answer within 10 s")
            .expect("the keep-alive is served, not refused")
            .expect("an answer");
        assert_eq!(answer.ttl_ms, 30_000, "{answer:?}");
    }
}

/// Runs a bundled k6 scenario against `url` for 2 s (`STRATA_K6`, else k6
/// on the PATH), with `token` in STRATA_TOKEN when given; answers whether
/// every one of its checks passed (at least one ran), and the end of its
/// output. The scenario's latency thresholds are left out: they judge the
/// host, and this judges what the cluster answered.
fn k6_run(script: &str, url: &str, token: Option<&str>) -> (bool, String) {
    let summary = tempfile::NamedTempFile::new().unwrap();
    let mut cmd = std::process::Command::new(strata_harness::k6_binary());
    cmd.arg("run")
        .arg("--quiet")
        .arg("--no-thresholds")
        .arg("--summary-export")
        .arg(summary.path())
        .arg(strata_harness::loadtest_dir().join(script))
        .env("STRATA_URL", url)
        .env("SMOKE_VUS", "2")
        .env("SMOKE_DURATION", "2s")
        .env_remove("STRATA_TOKEN");
    if let Some(t) = token {
        cmd.env("STRATA_TOKEN", t);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let tail: String = text.lines().rev().take(12).collect::<Vec<_>>().join("\n");
    let checks = std::fs::read_to_string(summary.path())
        .ok()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
        .map(|v| v["metrics"]["checks"].clone())
        .unwrap_or_default();
    let (passes, fails) = (checks["passes"].as_u64(), checks["fails"].as_u64());
    let passed = out.status.success() && passes.is_some_and(|n| n > 0) && fails == Some(0);
    (
        passed,
        format!("checks {passes:?} passed, {fails:?} failed\n{tail}"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_k6_scenarios_send_the_token_they_are_given() {
    // Proves: against a cluster that serves nothing without a token, the
    // REST and gRPC smoke scenarios fail as they are, and pass with a write
    // token in STRATA_TOKEN (sent as a header and as gRPC metadata).
    let c = Cluster::start_closed(3).await.unwrap();
    let url = c.gateway_url();
    let writer = c.token(Role::Write);
    for script in ["smoke.js", "smoke-grpc.js"] {
        let (passed, out) = k6_run(script, &url, None);
        assert!(!passed, "{script} passed without a token:\n{out}");
        let (passed, out) = k6_run(script, &url, Some(&writer));
        assert!(passed, "{script} failed with a write token:\n{out}");
    }
}

/// Runs the `strata` CLI against the gateway of `c` with `env` added to an
/// environment that names no endpoint or token of its own; answers its
/// exit code, standard output and standard error.
fn strata_cli(c: &Cluster, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let mut cmd = std::process::Command::new(strata_harness::workspace_binary("strata").unwrap());
    cmd.arg("--endpoint")
        .arg(c.gateway_url())
        .args(args)
        .env_remove("STRATA_ENDPOINT")
        .env_remove("STRATA_TOKEN")
        .env_remove("STRATA_TOKEN_FILE")
        .envs(env.iter().copied());
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_sends_the_token_of_its_flag_its_environment_or_its_file() {
    // Proves, with the real `strata` binary against a cluster that serves
    // nothing without a token: a put and a get without one exit nonzero
    // and say UNAUTHENTICATED, and the put wrote nothing; with a write
    // token given as --token, as STRATA_TOKEN and in the file named by
    // STRATA_TOKEN_FILE each put and get is served; with a read token a
    // put exits nonzero saying PERMISSION_DENIED and writes nothing, while
    // a get is served.
    let c = Cluster::start_closed(3).await.unwrap();
    let writer = c.token(Role::Write);
    let reader = c.token(Role::Read);
    let admin = c.admin_token().to_string();
    let absent = |key: &str| {
        let (code, out, err) = strata_cli(&c, &["--token", &admin, "get", key], &[]);
        code != Some(0) && out.is_empty() && err.contains("key not found")
    };

    for args in [
        &["put", "cli/anonymous", "v"][..],
        &["get", "cli/anonymous"],
    ] {
        let (code, out, err) = strata_cli(&c, args, &[]);
        eprintln!(
            "strata {args:?} without a token: exit {code:?}: {}",
            err.trim()
        );
        assert_ne!(code, Some(0), "served without a token: {out}");
        assert!(out.is_empty(), "{out}");
        assert!(err.contains("UNAUTHENTICATED: "), "{err}");
        assert!(
            err.contains("--token, STRATA_TOKEN or STRATA_TOKEN_FILE"),
            "{err}"
        );
    }
    assert!(absent("cli/anonymous"), "a put without a token wrote");

    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("write.token");
    std::fs::write(&token_file, format!("{writer}\n")).unwrap();
    let token_file = token_file.to_str().unwrap();
    // (how the token is given, the flags and the environment that give it)
    let ways = [
        ("flag", vec!["--token", &writer], vec![]),
        ("env", vec![], vec![("STRATA_TOKEN", writer.as_str())]),
        ("file", vec![], vec![("STRATA_TOKEN_FILE", token_file)]),
    ];
    for (way, flags, env) in &ways {
        let key = format!("cli/{way}");
        let put: Vec<&str> = flags.iter().copied().chain(["put", &key, way]).collect();
        let (code, out, err) = strata_cli(&c, &put, env);
        assert_eq!(code, Some(0), "put with the token given by {way}: {err}");
        assert!(out.starts_with("OK index="), "{out}");
        let get: Vec<&str> = flags.iter().copied().chain(["get", &key]).collect();
        let (code, out, err) = strata_cli(&c, &get, env);
        assert_eq!(
            (code, out.as_str()),
            (Some(0), *way),
            "get with the token given by {way}: {err}"
        );
        eprintln!("strata put/get with the token given by {way}: served");
    }

    let (code, out, err) = strata_cli(&c, &["--token", &reader, "put", "cli/read", "v"], &[]);
    eprintln!(
        "strata put with a read token: exit {code:?}: {}",
        err.trim()
    );
    assert_ne!(code, Some(0), "a read token wrote: {out}");
    assert!(err.contains("PERMISSION_DENIED: "), "{err}");
    assert!(!err.contains("STRATA_TOKEN"), "a token was given: {err}");
    assert!(absent("cli/read"), "a put with a read token wrote");
    let (code, out, err) = strata_cli(&c, &["--token", &reader, "get", "cli/flag"], &[]);
    assert_eq!((code, out.as_str()), (Some(0), "flag"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_changes_sent_straight_to_a_node_need_an_admin_token_too() {
    // Proves, on each node's own port (not through the gateway), on a
    // cluster whose requests without a token may write (the demo's
    // setting): removing a member with a write token is 403
    // PERMISSION_DENIED over REST and PERMISSION_DENIED over gRPC
    // (Cluster/RemoveMember), on the leader and on the followers, and
    // without a token 401 / UNAUTHENTICATED; afterwards every member is
    // still listed, by every node.
    let c = Cluster::start(3).await.unwrap();
    let leader = c.wait_leader(Duration::from_secs(10)).await.unwrap();
    let writer = c.token(Role::Write);
    let plain = reqwest::Client::new();
    for id in c.node_ids() {
        let node = c.node_url(id);
        let victim = if id == 3 { 2 } else { 3 };
        let remove = format!("{node}/v1/cluster/members/{victim}");
        let denied = plain
            .delete(&remove)
            .bearer_auth(&writer)
            .send()
            .await
            .unwrap();
        let status = denied.status();
        let body: serde_json::Value = denied.json().await.unwrap();
        assert_eq!(
            (status.as_u16(), body["code"].as_str()),
            (403, Some("PERMISSION_DENIED")),
            "node {id}: {body}"
        );
        eprintln!(
            "node {id}{}: write-role DELETE /v1/cluster/members/{victim}: {status} {body}",
            if id == leader { " (leader)" } else { "" }
        );
        let anonymous = plain.delete(&remove).send().await.unwrap();
        let status = anonymous.status();
        let body: serde_json::Value = anonymous.json().await.unwrap();
        assert_eq!(
            (status.as_u16(), body["code"].as_str()),
            (401, Some("UNAUTHENTICATED")),
            "node {id}: {body}"
        );

        let direct = Client::connect(&node).await.unwrap();
        let err = direct
            .clone()
            .with_token(&writer)
            .unwrap()
            .remove_member(victim)
            .await
            .unwrap_err();
        assert_eq!(
            code(&err),
            Some(tonic::Code::PermissionDenied),
            "node {id}: {err}"
        );
        eprintln!("node {id}: write-role Cluster/RemoveMember({victim}): {err}");
        let err = direct.remove_member(victim).await.unwrap_err();
        assert_eq!(
            code(&err),
            Some(tonic::Code::Unauthenticated),
            "node {id}: {err}"
        );
    }
    // A removal the leader applied would reach every node within a
    // heartbeat or two: give it that long, then read each node's list.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for id in c.node_ids() {
        let body: serde_json::Value = c
            .http()
            .get(format!("{}/v1/cluster/members", c.node_url(id)))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let mut members: Vec<(u64, bool)> = body["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["id"].as_u64().unwrap(), m["voter"].as_bool().unwrap()))
            .collect();
        members.sort();
        assert_eq!(
            members,
            vec![(1, true), (2, true), (3, true)],
            "node {id} lists {body}"
        );
    }
}
