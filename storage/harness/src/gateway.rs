//! The gateway's Envoy config for a local cluster, written at start time by
//! `gateway/gen_envoy.py` (the one generator of every Envoy config).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// Where Envoy listens and what it routes to; every address is `host:port`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GatewaySpec {
    /// Every storage node; with `eds`, the seeds Envoy asks for the members.
    pub nodes: Vec<String>,
    /// Envoy takes the members from the nodes (EDS, `gen_envoy.py --eds`),
    /// so nodes added or removed later reach it without a restart; else it
    /// routes to `nodes` alone.
    #[serde(default)]
    pub eds: bool,
    /// REST and gRPC for clients.
    pub listen: String,
    /// Envoy's admin interface.
    pub admin: String,
    /// k6's REST API, routed under `/k6/` (the generator's default when `None`).
    pub k6: Option<String>,
    /// k6's web dashboard, whose event stream is routed as `/k6/events`
    /// (the generator's default when `None`).
    #[serde(default)]
    pub k6_dashboard: Option<String>,
    /// An OTLP/gRPC collector: Envoy then traces every request and exports
    /// its spans there.
    #[serde(default)]
    pub otlp: Option<String>,
    /// With `otlp`: the percent of requests Envoy traces (the generator's
    /// default, 100, when `None`).
    #[serde(default)]
    pub trace_sampling: Option<f64>,
    /// The load runner (`strata-cluster load-runner`), routed under `/load/`;
    /// no route when `None`.
    #[serde(default)]
    pub load_runner: Option<String>,
    /// Where Envoy writes one JSON line per request (its response flags,
    /// attempts, upstream and durations); none when `None`.
    #[serde(default)]
    pub access_log: Option<PathBuf>,
    /// The cluster's public keys: Envoy then refuses a token they do not
    /// verify before any node sees it.
    #[serde(default)]
    pub jwks: Option<PathBuf>,
    /// More flags for the generator, after the ones above: the gateway's
    /// limits (`--rate-limit-rps`, `--max-connections`, the request
    /// timeouts), when not its defaults.
    #[serde(default)]
    pub extra_args: Vec<String>,
    /// The gateway's certificate: clients then connect with TLS. Envoy
    /// takes it by SDS from `gateway-tls-sds.yaml`, which the generator
    /// writes beside the config, and serves new connections a certificate
    /// renamed over these files without a restart.
    #[serde(default)]
    pub tls: Option<crate::tls::CertFiles>,
    /// The gateway's certificate for the nodes and the CA it trusts them
    /// with: Envoy then connects to the nodes with mutual TLS. It takes
    /// both by SDS from `gateway-node-tls-sds.yaml` and
    /// `gateway-node-ca-sds.yaml`, which the generator writes beside the
    /// config, and uses a certificate or CA renamed over these files on new
    /// connections to the nodes without a restart.
    #[serde(default)]
    pub node_tls: Option<crate::tls::MutualFiles>,
    /// The Redis protocol at the gateway: Envoy proxies RESP connections to
    /// the nodes' RESP ports, the leader's first; none when `None`.
    #[serde(default)]
    pub resp: Option<TcpGateway>,
    /// The memcached text protocol at the gateway: Envoy proxies memcached
    /// connections to the nodes' memcached ports, the leader's first; none
    /// when `None`.
    #[serde(default)]
    pub memcache: Option<TcpGateway>,
}

/// A protocol the gateway proxies over TCP (`gateway/tcp_proxy.py`): where
/// it takes the protocol's clients, and each node's port for the protocol,
/// in the order of [`GatewaySpec::nodes`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TcpGateway {
    pub listen: String,
    pub nodes: Vec<String>,
}

impl GatewaySpec {
    /// Writes the config to `out` (YAML).
    pub fn write_config(&self, out: &Path) -> Result<()> {
        let generator = generator();
        let mut cmd = Command::new("python3");
        cmd.arg(&generator)
            .args(["--nodes", &self.nodes.join(",")])
            .args(["--listen", &self.listen])
            .args(["--admin", &self.admin]);
        if self.eds {
            cmd.arg("--eds");
        }
        if let Some(k6) = &self.k6 {
            cmd.args(["--k6", k6]);
        }
        if let Some(dashboard) = &self.k6_dashboard {
            cmd.args(["--k6-dashboard", dashboard]);
        }
        if let Some(otlp) = &self.otlp {
            cmd.args(["--otlp", otlp]);
        }
        if let Some(percent) = self.trace_sampling {
            cmd.args(["--trace-sampling", &percent.to_string()]);
        }
        if let Some(runner) = &self.load_runner {
            cmd.args(["--load-runner", runner]);
        }
        if let Some(path) = &self.access_log {
            cmd.arg("--access-log").arg(path);
        }
        if let Some(jwks) = &self.jwks {
            cmd.arg("--jwks").arg(jwks);
        }
        if let Some(tls) = &self.tls {
            cmd.arg("--tls-cert").arg(&tls.cert);
            cmd.arg("--tls-key").arg(&tls.key);
        }
        if let Some(tls) = &self.node_tls {
            cmd.arg("--node-tls-cert").arg(&tls.cert);
            cmd.arg("--node-tls-key").arg(&tls.key);
            cmd.arg("--node-tls-ca").arg(&tls.ca);
        }
        // Each protocol's flags are named after it (`--resp-listen`,
        // `--memcache-nodes`, ...).
        for (protocol, proxy) in [("resp", &self.resp), ("memcache", &self.memcache)] {
            if let Some(proxy) = proxy {
                cmd.arg(format!("--{protocol}-listen"))
                    .arg(&proxy.listen)
                    .arg(format!("--{protocol}-nodes"))
                    .arg(proxy.nodes.join(","));
            }
        }
        let output = cmd
            .args(&self.extra_args)
            .arg("--out")
            .arg(out)
            .output()
            .with_context(|| format!("running {}", generator.display()))?;
        if !output.status.success() {
            bail!(
                "{} failed: {}",
                generator.display(),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(())
    }
}

/// `gateway/gen_envoy.py` of this checkout, unless `STRATA_GEN_ENVOY` names
/// another.
fn generator() -> PathBuf {
    std::env::var_os("STRATA_GEN_ENVOY")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::repo_root().join("gateway/gen_envoy.py"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A gateway for the one node `node`, local addresses, nothing else.
    fn local_spec(node: &str, eds: bool) -> GatewaySpec {
        GatewaySpec {
            nodes: vec![node.into()],
            eds,
            listen: "127.0.0.1:18080".into(),
            admin: "127.0.0.1:19901".into(),
            k6: None,
            k6_dashboard: None,
            otlp: None,
            trace_sampling: None,
            load_runner: None,
            access_log: None,
            jwks: None,
            extra_args: Vec::new(),
            tls: None,
            node_tls: None,
            resp: None,
            memcache: None,
        }
    }

    #[test]
    fn written_config_routes_to_every_node_and_listens_where_asked() {
        // Proves the generator is found and given the spec: the file names
        // every node, the listener and the admin address.
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("envoy.yaml");
        GatewaySpec {
            nodes: vec!["127.0.0.1:17001".into(), "127.0.0.1:17002".into()],
            k6: Some("127.0.0.1:16565".into()),
            k6_dashboard: Some("127.0.0.1:16567".into()),
            ..local_spec("127.0.0.1:17001", false)
        }
        .write_config(&out)
        .unwrap();
        let text = std::fs::read_to_string(&out).unwrap();
        for port in ["17001", "17002", "18080", "19901", "16565", "16567"] {
            assert!(
                text.contains(&format!("port_value: {port}")),
                "{port} missing"
            );
        }
    }

    #[test]
    fn with_eds_the_members_come_from_the_seeds() {
        // Proves the spec's `eds` reaches the generator: the member
        // clusters are EDS clusters, and the seeds make the xds cluster.
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("envoy.yaml");
        local_spec("127.0.0.1:17001", true)
            .write_config(&out)
            .unwrap();
        let text = std::fs::read_to_string(&out).unwrap();
        assert_eq!(text.matches("type: \"EDS\"").count(), 2, "{text}");
        assert!(text.contains("name: \"xds\""), "{text}");
        assert!(text.contains("port_value: 17001"));
    }

    #[test]
    fn with_tls_the_certificate_comes_from_an_sds_file_beside_the_config() {
        // Proves the spec's `tls` reaches the generator, which writes the
        // SDS file naming the certificate beside the config, and the config
        // reads the certificate from there.
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("envoy.yaml");
        let files = crate::tls::cert_files(Path::new("/certs"), crate::tls::GATEWAY);
        GatewaySpec {
            tls: Some(files.clone()),
            ..local_spec("127.0.0.1:17001", false)
        }
        .write_config(&out)
        .unwrap();
        let sds_file = dir.path().join("gateway-tls-sds.yaml");
        let config = std::fs::read_to_string(&out).unwrap();
        assert!(
            config.contains(&format!("path: \"{}\"", sds_file.display())),
            "{config}"
        );
        assert!(!config.contains("filename:"), "{config}");
        let sds = std::fs::read_to_string(&sds_file).unwrap();
        for file in [&files.cert, &files.key] {
            assert!(
                sds.contains(&format!("filename: \"{}\"", file.display())),
                "{sds}"
            );
        }
    }

    #[test]
    fn with_node_tls_the_certificate_and_ca_come_from_sds_files_beside_the_config() {
        // Proves the spec's `node_tls` reaches the generator, which writes
        // two SDS files beside the config, one naming the certificate and
        // key, the other the CA, and the config reads them from there.
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("envoy.yaml");
        let files = crate::tls::mutual_files(Path::new("/tls"), crate::tls::GATEWAY);
        GatewaySpec {
            node_tls: Some(files.clone()),
            ..local_spec("127.0.0.1:17001", true)
        }
        .write_config(&out)
        .unwrap();
        let config = std::fs::read_to_string(&out).unwrap();
        assert!(!config.contains("filename:"), "{config}");
        for (sds_file, named) in [
            ("gateway-node-tls-sds.yaml", vec![&files.cert, &files.key]),
            ("gateway-node-ca-sds.yaml", vec![&files.ca]),
        ] {
            let sds_file = dir.path().join(sds_file);
            assert!(
                config.contains(&format!("path: \"{}\"", sds_file.display())),
                "{config}"
            );
            let sds = std::fs::read_to_string(&sds_file).unwrap();
            for file in named {
                assert!(
                    sds.contains(&format!("filename: \"{}\"", file.display())),
                    "{sds}"
                );
            }
        }
    }

    #[test]
    fn each_tcp_protocol_reaches_the_generator_with_its_own_flags() {
        // Proves the spec's `resp` and `memcache` reach the generator as
        // its `--resp-*` and `--memcache-*` flags: the config has a
        // listener and an aggregate cluster for each, on the ports given.
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("envoy.yaml");
        GatewaySpec {
            resp: Some(TcpGateway {
                listen: "127.0.0.1:16379".into(),
                nodes: vec!["127.0.0.1:16380".into()],
            }),
            memcache: Some(TcpGateway {
                listen: "127.0.0.1:11311".into(),
                nodes: vec!["127.0.0.1:11312".into()],
            }),
            ..local_spec("127.0.0.1:17001", false)
        }
        .write_config(&out)
        .unwrap();
        let text = std::fs::read_to_string(&out).unwrap();
        for name in ["resp", "memcache"] {
            assert!(text.contains(&format!("name: \"{name}\"")), "{text}");
            assert!(text.contains(&format!("stat_prefix: \"{name}\"")), "{text}");
        }
        for port in ["16379", "16380", "11311", "11312"] {
            assert!(
                text.contains(&format!("port_value: {port}")),
                "{port} missing"
            );
        }
    }

    #[test]
    fn a_bad_spec_is_the_generators_error() {
        // Proves a refusal by the generator fails the start with its message.
        let dir = tempfile::tempdir().unwrap();
        let err = local_spec("no-port", false)
            .write_config(&dir.path().join("envoy.yaml"))
            .unwrap_err();
        assert!(err.to_string().contains("host:port"), "{err}");
    }
}
