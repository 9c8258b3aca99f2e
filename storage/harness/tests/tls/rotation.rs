//! Certificates replaced while they are in use: a node's, and the
//! gateway's toward its clients and toward the nodes, each taken up without
//! a restart.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::{Up, curl, eventually, launcher, strata, text};

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

/// A new certificate for the gateway from the cluster's CA, written into
/// `into` (as `strata tls cert` names them: gateway.pem, gateway-key.pem).
fn issue_gateway_certificate(up: &Up, into: &Path) {
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
        &into.display().to_string(),
    ]);
    assert!(made.status.success(), "{}", text(&made));
}

/// Renames the new key in `fresh` over the gateway's, its certificate
/// still the old one, and waits until Envoy has read the pair for SDS
/// secret `secret` and refused it (`key_rotation_failed` grew).
async fn rename_key_alone(up: &Up, fresh: &Path, secret: &str) {
    let refused = sds_counter(up, secret, "key_rotation_failed").await;
    std::fs::rename(
        fresh.join("gateway-key.pem"),
        up.certs().join("gateway-key.pem"),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while sds_counter(up, secret, "key_rotation_failed").await == refused {
        assert!(
            Instant::now() < deadline,
            "Envoy did not look at the new key of {secret} within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
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
    issue_gateway_certificate(&up, &fresh);
    let new = pem_der(&fresh.join("gateway.pem"));
    assert_ne!(new, old);

    // The key first: Envoy reads the pair again, finds they do not match,
    // and keeps serving the old pair.
    rename_key_alone(&up, &fresh, "gateway_certificate").await;
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
    issue_gateway_certificate(&up, &fresh);
    let new = serial(&fresh.join("gateway.pem"));
    let new_der = pem_der(&fresh.join("gateway.pem"));
    assert_ne!(new, old);

    rename_key_alone(&up, &fresh, "gateway_node_certificate").await;
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
