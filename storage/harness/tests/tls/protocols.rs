//! The Redis and memcached protocols on a cluster started with `up --tls`:
//! the nodes take them over mutual TLS only, as their API port; the gateway
//! takes them over TLS and reaches the nodes with its client certificate.

use std::process::Command;
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use crate::{Up, curl, text};
use strata_harness::free_port;

/// Sends `request` over TLS to `address` (with the gateway's client
/// certificate, trusting the cluster's CA) and reads one line back.
async fn over_tls(up: &Up, address: &str, request: &[u8]) -> String {
    let certs = up.certs();
    let tls = strata_tls::NodeTls::load(
        &certs.join("gateway.pem"),
        &certs.join("gateway-key.pem"),
        &up.ca(),
    )
    .unwrap();
    let tcp = TcpStream::connect(address).await.unwrap();
    let name = strata_tls::rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let mut conn = tokio_rustls::TlsConnector::from(Arc::clone(&tls.client))
        .connect(name, tcp)
        .await
        .unwrap();
    conn.write_all(request).await.unwrap();
    let mut line = String::new();
    BufReader::new(conn).read_line(&mut line).await.unwrap();
    line.trim_end().to_string()
}

/// What a plaintext client gets from a TLS port: nothing it can read as
/// the protocol (the handshake fails and the connection closes).
async fn in_plaintext(address: &str, request: &[u8]) -> Vec<u8> {
    let mut tcp = TcpStream::connect(address).await.unwrap();
    let _ = tcp.write_all(request).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(15),
        tokio::io::AsyncReadExt::read_to_end(&mut tcp, &mut out),
    )
    .await;
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_and_memcached_clients_take_tls_at_the_gateway_and_the_nodes() {
    // Proves, on `up --tls` with both protocols: redis-cli --tls trusting
    // the cluster's CA sets a key through the gateway that curl reads over
    // HTTPS; a memcached client over TLS reads it through the gateway and,
    // with a client certificate of the cluster, at a node directly; a
    // plaintext client gets no answer from any of those ports.
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let (resp_base, memcache_base, gateway_resp, gateway_memcache) =
        (free_port(), free_port(), free_port(), free_port());
    let up = tokio::task::spawn_blocking(move || {
        let ports =
            [resp_base, memcache_base, gateway_resp, gateway_memcache].map(|p| p.to_string());
        Up::start(
            &run,
            1,
            &[
                "--tls",
                "--resp-base-port",
                &ports[0],
                "--memcache-base-port",
                &ports[1],
                "--gateway-resp-port",
                &ports[2],
                "--gateway-memcache-port",
                &ports[3],
            ],
        )
    })
    .await
    .unwrap();
    let ca = up.ca().display().to_string();
    let port = gateway_resp.to_string();
    let set = Command::new("redis-cli")
        .args(["--tls", "--cacert", &ca, "-h", "127.0.0.1", "-p", &port])
        .args(["SET", "over-tls", "redis"])
        .output()
        .expect("redis-cli runs: `./dev setup-system` installs redis-tools");
    assert_eq!(text(&set).trim(), "OK", "{set:?}");
    let read = curl(&[
        "--cacert",
        &ca,
        &format!("https://{}/v1/kv/over-tls", up.gateway),
    ]);
    assert_eq!(text(&read), "redis");

    let gateway = format!("127.0.0.1:{gateway_memcache}");
    let node = format!("127.0.0.1:{memcache_base}");
    assert_eq!(
        over_tls(&up, &gateway, b"get over-tls\r\n").await,
        "VALUE over-tls 0 5"
    );
    assert_eq!(
        over_tls(&up, &node, b"set at-node 0 0 1\r\nv\r\n").await,
        "STORED"
    );
    for address in [
        gateway.clone(),
        node,
        format!("127.0.0.1:{gateway_resp}"),
        format!("127.0.0.1:{resp_base}"),
    ] {
        let answer = in_plaintext(&address, b"version\r\n").await;
        assert!(
            !String::from_utf8_lossy(&answer).contains("VERSION")
                && !String::from_utf8_lossy(&answer).contains("ERR"),
            "{address} answered plaintext: {answer:?}"
        );
    }
}
