//! TLS as clients see it: a local cluster started with `strata-cluster up
//! --tls`, reached with curl and the `strata` CLI over HTTPS and gRPC with
//! TLS, in plaintext, and by a client that trusts another CA; and the
//! certificates of a node and of the gateway replaced while they run
//! (`rotation`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use protobuf::Message as _;
use strata_client::proto::RaftBatch;
use strata_client::proto::raft_client::RaftClient;
use strata_raft::{Message, MessageType};
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

use strata_harness::{envoy_binary, free_port, workspace_binary};

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn launcher(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata-cluster"))
        .args(args)
        .env("STRATA_NODE_BIN", workspace_binary("strata-node").unwrap())
        .output()
        .expect("strata-cluster runs")
}

/// A cluster started by `up`, stopped by `down` when dropped (a failing
/// test included).
struct Up {
    run: PathBuf,
    gateway: String,
    /// Envoy's admin interface.
    admin: String,
    base_port: u16,
}

impl Up {
    fn start(run: &Path, nodes: u64, extra: &[&str]) -> Up {
        // Node i listens on base + i - 1: a base whose next ports are free too.
        let ports = loop {
            let ports = [(); 3].map(|_| free_port());
            // (and the one after, for a node that joins).
            let next_free = (1..=nodes)
                .all(|i| std::net::TcpListener::bind(("127.0.0.1", ports[0] + i as u16)).is_ok());
            if next_free && ports[0] < 65000 {
                break ports.map(|p| p.to_string());
            }
        };
        let run_s = run.display().to_string();
        let nodes = nodes.to_string();
        let envoy = envoy_binary().display().to_string();
        let mut args = vec![
            "up",
            "--run-dir",
            &run_s,
            "--nodes",
            &nodes,
            "--base-port",
            &ports[0],
            "--gateway-port",
            &ports[1],
            "--admin-port",
            &ports[2],
            "--envoy",
            &envoy,
            "--no-canary",
            "--timeout",
            "60",
        ];
        args.extend_from_slice(extra);
        let up = Up {
            run: run.to_path_buf(),
            gateway: format!("127.0.0.1:{}", ports[1]),
            admin: format!("127.0.0.1:{}", ports[2]),
            base_port: ports[0].parse().unwrap(),
        };
        let out = launcher(&args);
        assert!(out.status.success(), "up failed: {}", text(&out));
        up
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        let out = launcher(&["down", "--run-dir", &self.run.display().to_string()]);
        if !out.status.success() {
            eprintln!("down failed: {}", text(&out));
        }
    }
}

fn curl(args: &[&str]) -> Output {
    Command::new("curl")
        .args(["-sS", "--max-time", "10"])
        .args(args)
        .output()
        .expect("curl runs")
}

fn strata(args: &[&str]) -> Output {
    Command::new(workspace_binary("strata").unwrap())
        .args(args)
        .env_remove("STRATA_ENDPOINT")
        .env_remove("STRATA_CA_FILE")
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("strata runs")
}

#[test]
fn clients_reach_the_gateway_over_tls_and_only_with_the_clusters_ca() {
    // Proves, against Envoy and a node started by `up --tls`: curl puts
    // and reads a key over HTTPS trusting the cluster's CA; the strata CLI
    // does the same over gRPC with TLS (--ca-file, and STRATA_CA_FILE);
    // plaintext to the TLS port is answered 400 with the reason, and the
    // CLI without TLS fails; a client trusting another CA fails the
    // handshake, over HTTPS and gRPC alike, and writes nothing.
    let dir = tempfile::tempdir().unwrap();
    let up = Up::start(&dir.path().join("run"), 1, &["--tls"]);
    let ca = up.run.join("tls/ca/ca.pem");
    let ca_s = ca.display().to_string();
    let https = format!("https://{}", up.gateway);

    let put = curl(&[
        "--cacert",
        &ca_s,
        "-X",
        "PUT",
        "--data-binary",
        "over-tls",
        &format!("{https}/v1/kv/greeting"),
    ]);
    assert!(put.status.success(), "{}", text(&put));
    let get = curl(&["--cacert", &ca_s, &format!("{https}/v1/kv/greeting")]);
    assert!(get.status.success(), "{}", text(&get));
    assert_eq!(String::from_utf8_lossy(&get.stdout), "over-tls");
    // HTTP/2 is offered over TLS (ALPN), and gRPC uses it.
    let h2 = curl(&[
        "--cacert",
        &ca_s,
        "-o",
        "/dev/null",
        "-w",
        "%{http_version}",
        &format!("{https}/v1/kv/greeting"),
    ]);
    assert_eq!(String::from_utf8_lossy(&h2.stdout), "2", "{}", text(&h2));

    let put = strata(&[
        "--endpoint",
        &https,
        "--ca-file",
        &ca_s,
        "put",
        "cli",
        "grpc-tls",
    ]);
    assert!(put.status.success(), "{}", text(&put));
    let get = Command::new(workspace_binary("strata").unwrap())
        .args(["get", "cli"])
        .env("STRATA_ENDPOINT", &https)
        .env("STRATA_CA_FILE", &ca_s)
        .output()
        .unwrap();
    assert!(get.status.success(), "{}", text(&get));
    assert_eq!(String::from_utf8_lossy(&get.stdout), "grpc-tls");
    let get = curl(&["--cacert", &ca_s, &format!("{https}/v1/kv/cli")]);
    assert_eq!(String::from_utf8_lossy(&get.stdout), "grpc-tls");

    // Plaintext to the TLS port.
    let plain = curl(&["-i", &format!("http://{}/v1/kv/greeting", up.gateway)]);
    let answer = text(&plain);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("this port speaks TLS"), "{answer}");
    let plain = curl(&[
        "-i",
        "-X",
        "PUT",
        "--data-binary",
        "plain",
        &format!("http://{}/v1/kv/greeting", up.gateway),
    ]);
    assert!(text(&plain).starts_with("HTTP/1.1 400"), "{}", text(&plain));
    let plain = strata(&[
        "--endpoint",
        &format!("http://{}", up.gateway),
        "get",
        "cli",
    ]);
    assert!(!plain.status.success(), "{}", text(&plain));
    // The CLI refuses an https:// endpoint without a CA, before connecting.
    let no_ca = strata(&["--endpoint", &https, "get", "cli"]);
    assert!(!no_ca.status.success());
    assert!(text(&no_ca).contains("--ca-file"), "{}", text(&no_ca));

    // A client that trusts another CA.
    let other = dir.path().join("other-ca");
    let init = strata(&["tls", "init", "--out", &other.display().to_string()]);
    assert!(init.status.success(), "{}", text(&init));
    let other_ca = other.join("ca.pem").display().to_string();
    let refused = curl(&[
        "--cacert",
        &other_ca,
        "-X",
        "PUT",
        "--data-binary",
        "untrusted",
        &format!("{https}/v1/kv/greeting"),
    ]);
    assert_eq!(refused.status.code(), Some(60), "{}", text(&refused));
    let refused = strata(&[
        "--endpoint",
        &https,
        "--ca-file",
        &other_ca,
        "put",
        "greeting",
        "untrusted",
    ]);
    assert!(!refused.status.success());
    assert!(
        text(&refused).contains("UnknownIssuer"),
        "{}",
        text(&refused)
    );
    let get = curl(&["--cacert", &ca_s, &format!("{https}/v1/kv/greeting")]);
    assert_eq!(String::from_utf8_lossy(&get.stdout), "over-tls");
}

impl Up {
    fn node(&self, id: u64) -> String {
        format!("127.0.0.1:{}", self.base_port + id as u16 - 1)
    }

    fn certs(&self) -> PathBuf {
        self.run.join("tls/certs")
    }

    fn ca(&self) -> PathBuf {
        self.run.join("tls/ca/ca.pem")
    }

    /// The leader and term the gateway reports, once it names a leader
    /// (within 10 s).
    fn status(&self) -> (u64, u64) {
        let mut last = String::new();
        for _ in 0..50 {
            let out = curl(&[
                "--cacert",
                &self.ca().display().to_string(),
                &format!("https://{}/v1/cluster/status", self.gateway),
            ]);
            let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
            if let (Some(leader), Some(term)) =
                (status["leader_id"].as_u64(), status["term"].as_u64())
                && leader != 0
            {
                return (leader, term);
            }
            last = text(&out);
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("no leader reported within 10 s: {last}");
    }

    /// `strata ARGS` against node `id` directly, as the gateway (its
    /// certificate is the cluster's).
    fn strata_on_node(&self, id: u64, args: &[&str]) -> Output {
        let (cert, key) = (
            self.certs().join("gateway.pem"),
            self.certs().join("gateway-key.pem"),
        );
        let endpoint = format!("https://{}", self.node(id));
        let (ca, cert, key) = (
            self.ca().display().to_string(),
            cert.display().to_string(),
            key.display().to_string(),
        );
        let mut all = vec![
            "--endpoint",
            &endpoint,
            "--ca-file",
            &ca,
            "--cert-file",
            &cert,
            "--key-file",
            &key,
        ];
        all.extend_from_slice(args);
        strata(&all)
    }
}

/// Waits up to `secs` for `check`.
fn eventually(secs: u64, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    while !check() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not within {secs} s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn three_nodes_with_mutual_tls_elect_a_leader_and_replicate_through_the_gateway() {
    // Proves: with `up --tls` every node serves TLS and asks for the
    // cluster's certificates, and still the three elect a leader (raft over
    // mutual TLS), Envoy routes to it (health checks and requests over
    // mutual TLS) and a write through the gateway reaches every node, and a
    // node that joins later; a node's port answers neither plaintext nor
    // TLS without a client certificate.
    let dir = tempfile::tempdir().unwrap();
    let up = Up::start(&dir.path().join("run"), 3, &["--tls"]);
    let ca = up.ca().display().to_string();
    let (leader, term) = up.status();
    assert!((1..=3).contains(&leader), "leader {leader} term {term}");
    let put = curl(&[
        "--cacert",
        &ca,
        "-X",
        "PUT",
        "--data-binary",
        "everywhere",
        &format!("https://{}/v1/kv/replicated", up.gateway),
    ]);
    assert!(put.status.success(), "{}", text(&put));
    for id in 1..=3 {
        eventually(10, &format!("node {id} has the write"), || {
            let get = up.strata_on_node(id, &["get", "--stale", "replicated"]);
            get.status.success() && get.stdout == b"everywhere"
        });
    }
    let status = up.strata_on_node(leader, &["status"]);
    assert!(status.status.success(), "{}", text(&status));

    // A fourth node joins over mutual TLS (its own certificate, made by
    // the launcher) and catches up.
    let joined = launcher(&[
        "start-node",
        "--run-dir",
        &up.run.display().to_string(),
        "--id",
        "4",
        "--join",
    ]);
    assert!(joined.status.success(), "{}", text(&joined));
    assert!(up.certs().join("node4.pem").exists());
    eventually(30, "node 4 joined and has the write", || {
        let get = up.strata_on_node(4, &["get", "--stale", "replicated"]);
        get.status.success() && get.stdout == b"everywhere"
    });

    // A node's port, without the cluster's certificate.
    let node = up.node(1);
    let plain = curl(&["-i", &format!("http://{node}/health/live")]);
    assert!(!text(&plain).contains("HTTP/1.1 200"), "{}", text(&plain));
    assert!(
        !plain.status.success(),
        "plaintext is not served: {}",
        text(&plain)
    );
    let no_cert = curl(&["--cacert", &ca, &format!("https://{node}/health/live")]);
    assert!(!no_cert.status.success(), "{}", text(&no_cert));
    let with_cert = curl(&[
        "--cacert",
        &ca,
        "--cert",
        &up.certs().join("gateway.pem").display().to_string(),
        "--key",
        &up.certs().join("gateway-key.pem").display().to_string(),
        &format!("https://{node}/health/live"),
    ]);
    assert!(with_cert.status.success(), "{}", text(&with_cert));
    let no_cert = strata(&[
        "--endpoint",
        &format!("https://{node}"),
        "--ca-file",
        &ca,
        "get",
        "replicated",
    ]);
    assert!(!no_cert.status.success(), "{}", text(&no_cert));
}

/// A raft batch to node 1 that would move it to a much later term: a
/// heartbeat of a leader at `term`, from node 2 (a member).
fn usurping_batch(to: u64, term: u64) -> RaftBatch {
    let mut m = Message::default();
    m.set_msg_type(MessageType::MsgHeartbeat);
    m.from = 2;
    m.to = to;
    m.term = term;
    RaftBatch {
        group_id: 1,
        from_node: 2,
        to_node: to,
        messages: vec![m.write_to_bytes().unwrap().into()],
        ..RaftBatch::default()
    }
}

/// Sends `batch` to `address` over TLS trusting `ca`, showing `identity`
/// when given (or in plaintext when `ca` is None).
async fn send_raft(
    address: &str,
    ca: Option<&Path>,
    identity: Option<(&Path, &Path)>,
    batch: RaftBatch,
) -> Result<(), String> {
    let endpoint = match ca {
        None => Endpoint::from_shared(format!("http://{address}")).unwrap(),
        Some(ca) => {
            let mut tls = ClientTlsConfig::new()
                .ca_certificate(Certificate::from_pem(std::fs::read(ca).unwrap()));
            if let Some((cert, key)) = identity {
                tls = tls.identity(Identity::from_pem(
                    std::fs::read(cert).unwrap(),
                    std::fs::read(key).unwrap(),
                ));
            }
            Endpoint::from_shared(format!("https://{address}"))
                .unwrap()
                .tls_config(tls)
                .unwrap()
        }
    }
    .connect_timeout(Duration::from_secs(5))
    .timeout(Duration::from_secs(5));
    let channel = endpoint
        .connect()
        .await
        .map_err(|e| format!("connect: {e:?}"))?;
    RaftClient::new(channel)
        .send(batch)
        .await
        .map(|_| ())
        .map_err(|s| {
            format!(
                "{:?}: {} ({:?})",
                s.code(),
                s.message(),
                std::error::Error::source(&s)
            )
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_without_the_clusters_certificate_cannot_send_raft_messages() {
    // Proves: a process that reaches a node's port but holds no
    // certificate of the cluster (none at all, plaintext, or one from
    // another CA) has its connection refused before any raft message is
    // read, and the forged term never reaches the cluster; the same
    // call with a certificate of the cluster does reach the raft service
    // (which answers it), so it is the certificate that is refused.
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let up = tokio::task::spawn_blocking(move || Up::start(&run, 3, &["--tls"]))
        .await
        .unwrap();
    let status = |up: &Up| (up.gateway.clone(), up.ca());
    let (_, ca) = status(&up);
    let up = Arc::new(up);
    let before = {
        let up = up.clone();
        tokio::task::spawn_blocking(move || up.status())
            .await
            .unwrap()
    };
    let target = up.node(1);
    let usurp = || usurping_batch(1, before.1 + 50);

    let plain = send_raft(&target, None, None, usurp()).await;
    assert!(plain.is_err(), "plaintext: {plain:?}");
    let no_cert = send_raft(&target, Some(&ca), None, usurp()).await;
    let no_cert = no_cert.expect_err("no client certificate");
    let other = dir.path().join("other");
    let made = strata(&[
        "tls",
        "init",
        "--out",
        &other.join("ca").display().to_string(),
    ]);
    assert!(made.status.success(), "{}", text(&made));
    let made = strata(&[
        "tls",
        "cert",
        "--ca",
        &other.join("ca").display().to_string(),
        "--name",
        "node2",
        "--san",
        "127.0.0.1",
        "--out",
        &other.display().to_string(),
    ]);
    assert!(made.status.success(), "{}", text(&made));
    let foreign = send_raft(
        &target,
        Some(&ca),
        Some((&other.join("node2.pem"), &other.join("node2-key.pem"))),
        usurp(),
    )
    .await
    .expect_err("another CA's certificate");
    for refused in [&no_cert, &foreign] {
        assert!(
            !refused.contains("Raft") && !refused.contains("batch"),
            "refused by the connection, not by the raft service: {refused}"
        );
    }
    eprintln!("no certificate: {no_cert}\nanother CA: {foreign}");

    std::thread::sleep(Duration::from_secs(1));
    let after = {
        let up = up.clone();
        tokio::task::spawn_blocking(move || up.status())
            .await
            .unwrap()
    };
    // Had node 1 taken the heartbeat, it would be at the forged term, and
    // its answers would have pushed the whole cluster there. (An ordinary
    // election on this busy host may still move the term by one or two.)
    assert!(
        after.1 < before.1 + 50,
        "the forged term took effect: before {before:?}, after {after:?}"
    );

    // The control: the cluster's certificate reaches the raft service,
    // which refuses a batch for a node that is not it.
    let certs = up.certs();
    let reached = send_raft(
        &target,
        Some(&ca),
        Some((&certs.join("gateway.pem"), &certs.join("gateway-key.pem"))),
        usurping_batch(9, before.1),
    )
    .await;
    let reached = reached.expect_err("a batch for node 9 is refused by node 1");
    assert!(
        reached.starts_with("InvalidArgument")
            || reached.starts_with("FailedPrecondition")
            || reached.starts_with("NotFound"),
        "{reached}"
    );
    // And the forged heartbeat itself, sent with it, moves the cluster to
    // the forged term: what the refusals above kept out.
    send_raft(
        &target,
        Some(&ca),
        Some((&certs.join("gateway.pem"), &certs.join("gateway-key.pem"))),
        usurp(),
    )
    .await
    .expect("a member's certificate is let in");
    let forged = {
        let up = up.clone();
        tokio::task::spawn_blocking(move || {
            let mut seen = up.status();
            for _ in 0..50 {
                if seen.1 >= before.1 + 50 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(200));
                seen = up.status();
            }
            seen
        })
        .await
        .unwrap()
    };
    assert!(
        forged.1 >= before.1 + 50,
        "the control did not take: {forged:?}"
    );
    tokio::task::spawn_blocking(move || drop(up)).await.unwrap();
}

/// The certificate node `address` shows a new connection now, connecting
/// as the gateway.
mod protocols;
mod rotation;
