//! TLS as clients see it: a local cluster started with `strata-cluster up
//! --tls`, reached with curl and the `strata` CLI over HTTPS and gRPC with
//! TLS, in plaintext, and by a client that trusts another CA; and the
//! certificates of a node and of the gateway replaced while they run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::{Duration, Instant};

use protobuf::Message as _;
use strata_client::proto::RaftBatch;
use strata_client::proto::raft_client::RaftClient;
use strata_raft::{Message, MessageType};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
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
async fn served_certificate(up: &Up, address: &str) -> Vec<u8> {
    let certs = up.certs();
    let tls = strata_tls::NodeTls::load(
        &certs.join("gateway.pem"),
        &certs.join("gateway-key.pem"),
        &up.ca(),
    )
    .unwrap();
    let tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    let name = strata_tls::rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let conn = tokio_rustls::TlsConnector::from(tls.client)
        .connect(name, tcp)
        .await
        .unwrap();
    conn.get_ref().1.peer_certificates().unwrap()[0].to_vec()
}

fn pem_der(path: &Path) -> Vec<u8> {
    strata_tls::read_certs(path).unwrap()[0].to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_serves_a_replaced_certificate_without_restarting() {
    // Proves: replacing a node's certificate and key files (renamed over
    // the old ones, key first, as a rotation does) makes the node show the
    // new certificate to new connections, with no restart (same pid); while
    // only the key is new, the node keeps serving the old pair; the cluster
    // keeps working through the gateway after the rotation.
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let up = tokio::task::spawn_blocking(move || Up::start(&run, 1, &["--tls"]))
        .await
        .unwrap();
    let node = up.node(1);
    let pid = std::fs::read_to_string(up.run.join("pids/node1.pid")).ok();
    let old = pem_der(&up.certs().join("node1.pem"));
    assert_eq!(served_certificate(&up, &node).await, old);

    let fresh = dir.path().join("fresh");
    let made = strata(&[
        "tls",
        "cert",
        "--ca",
        &up.run.join("tls/ca").display().to_string(),
        "--name",
        "node1",
        "--san",
        "127.0.0.1,localhost",
        "--out",
        &fresh.display().to_string(),
    ]);
    assert!(made.status.success(), "{}", text(&made));
    let new = pem_der(&fresh.join("node1.pem"));
    assert_ne!(new, old);
    std::fs::rename(
        fresh.join("node1-key.pem"),
        up.certs().join("node1-key.pem"),
    )
    .unwrap();
    assert_eq!(
        served_certificate(&up, &node).await,
        old,
        "a new key beside the old certificate: the old pair stays"
    );
    std::fs::rename(fresh.join("node1.pem"), up.certs().join("node1.pem")).unwrap();
    assert_eq!(served_certificate(&up, &node).await, new);
    assert_eq!(
        std::fs::read_to_string(up.run.join("pids/node1.pid")).ok(),
        pid,
        "the node was not restarted"
    );
    let up = tokio::task::spawn_blocking(move || {
        let put = curl(&[
            "--cacert",
            &up.ca().display().to_string(),
            "-X",
            "PUT",
            "--data-binary",
            "after-rotation",
            &format!("https://{}/v1/kv/rotated", up.gateway),
        ]);
        assert!(put.status.success(), "{}", text(&put));
        up
    })
    .await
    .unwrap();
    tokio::task::spawn_blocking(move || drop(up)).await.unwrap();
}

/// A TLS connection to the gateway at `address` as a client sees it:
/// trusting the cluster's CA `ca` only, showing no certificate, offering
/// HTTP/1.1.
async fn client_connection(
    address: &str,
    ca: &Path,
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    use strata_tls::rustls;
    let mut config = rustls::ClientConfig::builder_with_provider(strata_tls::provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(strata_tls::roots(ca).unwrap())
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap()
}

/// The certificate `conn` was shown in its handshake.
fn shown(conn: &tokio_rustls::client::TlsStream<tokio::net::TcpStream>) -> Vec<u8> {
    conn.get_ref().1.peer_certificates().unwrap()[0].to_vec()
}

/// The counter `name` of the gateway's SDS secret `secret`
/// (`sds.<secret>.<name>`), from Envoy's admin interface.
async fn sds_counter(up: &Up, secret: &str, name: &str) -> u64 {
    let stat = format!("sds.{secret}.{name}");
    let text = reqwest::get(format!("http://{}/stats?filter=^{stat}$", up.admin))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{stat}: ")))
        .unwrap_or_else(|| panic!("no {stat} in {text:?}"))
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_serves_a_replaced_certificate_without_restarting() {
    // Proves, against Envoy started by `up --tls`: replacing the gateway's
    // certificate and key files the way docs/operations.md says (a new
    // certificate from the cluster's CA, `strata tls cert`, renamed over
    // the old files, key first) makes Envoy show new TLS connections the
    // new certificate within a bounded wait, with no restart (same pid, the
    // same process alive); while only the key is new, Envoy has seen it and
    // refused the pair (its SDS counter of failed rotations) and shows the
    // old certificate; a connection opened before the rotation keeps its
    // certificate and is still served; requests through the gateway (curl
    // over HTTPS, the CLI over gRPC with TLS) succeed afterwards.
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let up = tokio::task::spawn_blocking(move || Up::start(&run, 1, &["--tls"]))
        .await
        .unwrap();
    let pid_file = up.run.join("pids/envoy.pid");
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let old = pem_der(&up.certs().join("gateway.pem"));
    let before = client_connection(&up.gateway, &up.ca()).await;
    assert_eq!(
        shown(&before),
        old,
        "the gateway starts with its certificate"
    );

    let fresh = dir.path().join("fresh");
    let made = strata(&[
        "tls",
        "cert",
        "--ca",
        &up.run.join("tls/ca").display().to_string(),
        "--name",
        "gateway",
        "--san",
        "127.0.0.1,localhost",
        "--out",
        &fresh.display().to_string(),
    ]);
    assert!(made.status.success(), "{}", text(&made));
    let new = pem_der(&fresh.join("gateway.pem"));
    assert_ne!(new, old);

    // The key first: Envoy reads the pair again, finds they do not match,
    // and keeps serving the old pair.
    let refused = sds_counter(&up, "gateway_certificate", "key_rotation_failed").await;
    std::fs::rename(
        fresh.join("gateway-key.pem"),
        up.certs().join("gateway-key.pem"),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while sds_counter(&up, "gateway_certificate", "key_rotation_failed").await == refused {
        assert!(
            Instant::now() < deadline,
            "Envoy did not look at the new key within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        shown(&client_connection(&up.gateway, &up.ca()).await),
        old,
        "a new key beside the old certificate: the old pair stays"
    );

    // Then the certificate: new connections get it.
    std::fs::rename(fresh.join("gateway.pem"), up.certs().join("gateway.pem")).unwrap();
    let renamed = Instant::now();
    let reload = loop {
        let seen = shown(&client_connection(&up.gateway, &up.ca()).await);
        if seen == new {
            break renamed.elapsed();
        }
        assert_eq!(
            seen, old,
            "the gateway shows a certificate it was never given"
        );
        assert!(
            renamed.elapsed() < Duration::from_secs(10),
            "the gateway still shows the old certificate 10 s after the new one was renamed into place"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    eprintln!("the gateway showed the new certificate {reload:?} after its rename");
    for _ in 0..3 {
        assert_eq!(shown(&client_connection(&up.gateway, &up.ca()).await), new);
    }
    assert_eq!(
        std::fs::read_to_string(&pid_file).unwrap().trim(),
        pid.to_string(),
        "Envoy was not restarted"
    );
    assert!(
        Path::new(&format!("/proc/{pid}")).exists(),
        "Envoy {pid} still runs"
    );

    // The connection opened before the rotation: its certificate is the old
    // one, and it is still served.
    let mut before = before;
    assert_eq!(shown(&before), old);
    before
        .write_all(
            format!(
                "GET /v1/cluster/status HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
                up.gateway
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut answer = Vec::new();
    before.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    let up = tokio::task::spawn_blocking(move || {
        let ca = up.ca().display().to_string();
        let https = format!("https://{}", up.gateway);
        let put = curl(&[
            "--cacert",
            &ca,
            "-X",
            "PUT",
            "--data-binary",
            "after-rotation",
            &format!("{https}/v1/kv/rotated"),
        ]);
        assert!(put.status.success(), "{}", text(&put));
        let get = strata(&["--endpoint", &https, "--ca-file", &ca, "get", "rotated"]);
        assert!(get.status.success(), "{}", text(&get));
        assert_eq!(String::from_utf8_lossy(&get.stdout), "after-rotation");
        up
    })
    .await
    .unwrap();
    tokio::task::spawn_blocking(move || drop(up)).await.unwrap();
}

/// A certificate's serial number as Envoy's admin `/certs` shows it:
/// lowercase hex (without leading zeros, to compare either way).
fn serial(pem: &Path) -> String {
    let out = Command::new("openssl")
        .args(["x509", "-noout", "-serial", "-in"])
        .arg(pem)
        .output()
        .expect("openssl runs");
    assert!(out.status.success(), "{}", text(&out));
    let out = String::from_utf8(out.stdout).unwrap();
    normal_serial(out.trim().trim_start_matches("serial="))
}

fn normal_serial(hex: &str) -> String {
    hex.trim_start_matches('0').to_ascii_lowercase()
}

/// Envoy's TLS contexts that check a peer against a CA, the ones toward the
/// nodes (the public listener's checks no client), as Envoy's admin
/// `/certs` lists them: the serials of the certificate each presents.
async fn contexts_toward_the_nodes(up: &Up) -> Vec<Vec<String>> {
    let certs: serde_json::Value = reqwest::get(format!("http://{}/certs", up.admin))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let serials = |list: &serde_json::Value| -> Vec<String> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|c| normal_serial(c["serial_number"].as_str().unwrap()))
            .collect()
    };
    certs["certificates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|context| !serials(&context["ca_cert"]).is_empty())
        .map(|context| serials(&context["cert_chain"]))
        .collect()
}

/// Stands in for the node at `address` (whose process is stopped): serves
/// its port with the node's own TLS settings (its certificate `node`,
/// asking every caller for a certificate the cluster's CA issued), and
/// returns the client certificate of each handshake completed on it
/// within a second of the first, which must come within 10 s.
async fn client_certificates_at(
    address: &str,
    node: &strata_harness::tls::CertFiles,
    ca: &Path,
) -> Vec<Vec<u8>> {
    let tls = strata_tls::NodeTls::load(&node.cert, &node.key, ca).unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(tls.server);
    // The stopped node's port may take a moment to be free.
    let deadline = Instant::now() + Duration::from_secs(10);
    let listener = loop {
        match tokio::net::TcpListener::bind(address).await {
            Ok(listener) => break listener,
            Err(e) => {
                assert!(Instant::now() < deadline, "binding {address}: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    let mut seen = Vec::new();
    let mut until = Instant::now() + Duration::from_secs(10);
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let Ok(Ok((tcp, _))) = tokio::time::timeout(left, listener.accept()).await else {
            break;
        };
        let handshake = tokio::time::timeout(Duration::from_secs(2), acceptor.accept(tcp)).await;
        if let Ok(Ok(conn)) = handshake {
            let certificate = conn.get_ref().1.peer_certificates().unwrap()[0].to_vec();
            if seen.is_empty() {
                until = Instant::now() + Duration::from_secs(1);
            }
            seen.push(certificate);
        }
    }
    assert!(
        !seen.is_empty(),
        "nothing completed a TLS handshake at {address} within 10 s"
    );
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_nodes_are_shown_a_replaced_gateway_certificate_without_restarting_envoy() {
    // Proves, against Envoy started by `up --tls` (where the gateway shows
    // the nodes the same certificate files as its clients): a new gateway
    // certificate from the cluster's CA (`strata tls cert`), renamed over
    // the old files key first, becomes the certificate Envoy presents to the
    // nodes on new connections, with no restart of Envoy (same pid). While
    // only the key is new, Envoy refuses the pair for the nodes too (the SDS
    // counter of gateway_node_certificate) and its contexts toward the
    // nodes keep the old certificate; once both are in place, within 10 s,
    // every context toward the nodes (Envoy's admin /certs: the ones with a
    // CA) holds the new one. Then the node is killed, so Envoy's connections
    // to it end, and while it is down its address is served with the node's
    // own TLS settings: every connection Envoy opens there (health checks,
    // endpoint discovery) presents the new certificate. The node started
    // again takes writes and reads through the gateway.
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let up = tokio::task::spawn_blocking(move || Up::start(&run, 1, &["--tls"]))
        .await
        .unwrap();
    let pid_file = up.run.join("pids/envoy.pid");
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let old = serial(&up.certs().join("gateway.pem"));
    let old_der = pem_der(&up.certs().join("gateway.pem"));
    let toward_nodes = contexts_toward_the_nodes(&up).await;
    assert!(!toward_nodes.is_empty(), "no context toward the nodes");
    for context in &toward_nodes {
        assert_eq!(context, &vec![old.clone()], "{toward_nodes:?}");
    }

    let fresh = dir.path().join("fresh");
    let made = strata(&[
        "tls",
        "cert",
        "--ca",
        &up.run.join("tls/ca").display().to_string(),
        "--name",
        "gateway",
        "--san",
        "127.0.0.1,localhost",
        "--out",
        &fresh.display().to_string(),
    ]);
    assert!(made.status.success(), "{}", text(&made));
    let new = serial(&fresh.join("gateway.pem"));
    let new_der = pem_der(&fresh.join("gateway.pem"));
    assert_ne!(new, old);

    let refused = sds_counter(&up, "gateway_node_certificate", "key_rotation_failed").await;
    std::fs::rename(
        fresh.join("gateway-key.pem"),
        up.certs().join("gateway-key.pem"),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while sds_counter(&up, "gateway_node_certificate", "key_rotation_failed").await == refused {
        assert!(
            Instant::now() < deadline,
            "Envoy did not look at the new key for the nodes within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        contexts_toward_the_nodes(&up)
            .await
            .iter()
            .all(|context| context == &vec![old.clone()]),
        "a new key beside the old certificate: the old pair stays"
    );

    std::fs::rename(fresh.join("gateway.pem"), up.certs().join("gateway.pem")).unwrap();
    let renamed = Instant::now();
    let reload = loop {
        let toward_nodes = contexts_toward_the_nodes(&up).await;
        if !toward_nodes.is_empty() && toward_nodes.iter().all(|c| c == &vec![new.clone()]) {
            break renamed.elapsed();
        }
        assert!(
            renamed.elapsed() < Duration::from_secs(10),
            "10 s after the rename, Envoy's contexts toward the nodes hold {toward_nodes:?}, \
             not only the new certificate {new}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    eprintln!(
        "Envoy's contexts toward the nodes held the new certificate {reload:?} after its rename"
    );

    // New connections to the node: kill it, and see what Envoy shows at
    // its address.
    let run_s = up.run.display().to_string();
    let stopped = launcher(&["stop-node", "--run-dir", &run_s, "--id", "1", "--kill"]);
    assert!(stopped.status.success(), "{}", text(&stopped));
    let node_files = strata_harness::tls::cert_files(&up.run.join("tls"), "node1");
    let waited = Instant::now();
    let shown = client_certificates_at(&up.node(1), &node_files, &up.ca()).await;
    eprintln!(
        "{} handshakes from Envoy at node 1's address within {:?}",
        shown.len(),
        waited.elapsed()
    );
    let (with_old, with_new) = (
        shown.iter().filter(|c| **c == old_der).count(),
        shown.iter().filter(|c| **c == new_der).count(),
    );
    assert_eq!(
        (with_old, with_new),
        (0, shown.len()),
        "of {} handshakes at node 1's address, Envoy showed the old certificate in {with_old}, \
         the new one in {with_new}",
        shown.len()
    );

    let up = tokio::task::spawn_blocking(move || {
        let started = launcher(&["start-node", "--run-dir", &run_s, "--id", "1"]);
        assert!(started.status.success(), "{}", text(&started));
        let ca = up.ca().display().to_string();
        let https = format!("https://{}", up.gateway);
        eventually(
            30,
            "a write through the gateway to the restarted node",
            || {
                curl(&[
                    "--cacert",
                    &ca,
                    "-f",
                    "-X",
                    "PUT",
                    "--data-binary",
                    "after-rotation",
                    &format!("{https}/v1/kv/rotated"),
                ])
                .status
                .success()
            },
        );
        let get = strata(&["--endpoint", &https, "--ca-file", &ca, "get", "rotated"]);
        assert!(get.status.success(), "{}", text(&get));
        assert_eq!(String::from_utf8_lossy(&get.stdout), "after-rotation");
        up
    })
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(&pid_file).unwrap(),
        pid,
        "Envoy was not restarted"
    );
    assert!(
        Path::new(&format!("/proc/{}", pid.trim())).exists(),
        "Envoy {} still runs",
        pid.trim()
    );
    tokio::task::spawn_blocking(move || drop(up)).await.unwrap();
}
