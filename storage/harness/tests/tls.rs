//! TLS as clients see it: a local cluster started with `strata-cluster up
//! --tls`, reached with curl and the `strata` CLI over HTTPS and gRPC with
//! TLS, in plaintext, and by a client that trusts another CA.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
}

impl Up {
    fn start(run: &Path, nodes: u64, extra: &[&str]) -> Up {
        let ports = [(); 3].map(|_| free_port().to_string());
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
        text(&refused).contains("UnknownIssuer") || text(&refused).contains("certificate"),
        "{}",
        text(&refused)
    );
    let get = curl(&["--cacert", &ca_s, &format!("{https}/v1/kv/greeting")]);
    assert_eq!(String::from_utf8_lossy(&get.stdout), "over-tls");
}
