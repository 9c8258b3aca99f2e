//! The command lines of every process a local cluster runs: storage nodes,
//! Envoy and the trace viewer. This is the one place that
//! knows their flags; the test harness, `strata-cluster up` and the chaos
//! harness (through `strata-cluster command`) all start processes from here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

/// The node's log filter when neither the caller nor `STRATA_LOG` says
/// otherwise: raft-rs is chatty at info.
pub const DEFAULT_NODE_LOG: &str = "info,raft=warn";

/// One process to start: its program, arguments and the environment
/// variables it needs on top of the caller's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandLine {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
}

impl CommandLine {
    /// A `Command` for this line with stdin closed; stdout and stderr are
    /// the caller's to set.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args).envs(&self.env).stdin(Stdio::null());
        cmd
    }

    /// Program and arguments, as `/proc/<pid>/cmdline` shows them.
    pub fn argv(&self) -> Vec<String> {
        std::iter::once(self.program.display().to_string())
            .chain(self.args.iter().cloned())
            .collect()
    }
}

/// Everything that makes one storage node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeSpec {
    pub id: u64,
    /// `host:port` it listens on.
    pub listen: String,
    /// `host:port` it tells the others to reach it at, when not `listen`.
    pub advertise: Option<String>,
    /// `host:port` it serves the Redis protocol on (`--resp-listen`), if any.
    #[serde(default)]
    pub resp_listen: Option<String>,
    /// `host:port` it serves the memcached text protocol on
    /// (`--memcache-listen`), if any.
    #[serde(default)]
    pub memcache_listen: Option<String>,
    /// Every member's id and address as this node should reach it: its
    /// own, and the others' (a test harness may route those through proxies).
    pub peers: Vec<(u64, String)>,
    pub data_dir: PathBuf,
    /// Start empty and ask the peers to add this node (`--join`).
    pub join: bool,
    /// Network threads (`--io-threads`); the node's default (one per CPU)
    /// when `None`.
    pub io_threads: Option<usize>,
    /// The `STRATA_LOG` filter.
    pub log: String,
    /// Further flags, passed last.
    pub extra_args: Vec<String>,
    /// Further environment variables (e.g. the `OTEL_*` ones).
    #[serde(default)]
    pub extra_env: BTreeMap<String, String>,
    /// The public keys whose tokens the node takes (`--auth-jwks`).
    #[serde(default)]
    pub auth_jwks: Option<PathBuf>,
    /// What requests without a token may do (`--anonymous-role`); the
    /// node's default (none) when not set.
    #[serde(default)]
    pub anonymous_role: Option<String>,
    /// The token the node sends with its own requests (`--token-file`).
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// Its certificate and the cluster's CA: it then serves and connects
    /// with mutual TLS (`--tls-cert`, `--tls-key`, `--tls-ca`).
    #[serde(default)]
    pub tls: Option<crate::tls::MutualFiles>,
}

impl NodeSpec {
    /// A node with no advertise address, no join, the node's own thread
    /// count, `STRATA_LOG` from the environment (else
    /// [`DEFAULT_NODE_LOG`]) and no extra flags.
    pub fn new(id: u64, listen: String, peers: Vec<(u64, String)>, data_dir: PathBuf) -> NodeSpec {
        NodeSpec {
            id,
            listen,
            advertise: None,
            resp_listen: None,
            memcache_listen: None,
            peers,
            data_dir,
            join: false,
            io_threads: None,
            log: std::env::var("STRATA_LOG").unwrap_or_else(|_| DEFAULT_NODE_LOG.to_string()),
            extra_args: Vec::new(),
            extra_env: BTreeMap::new(),
            auth_jwks: None,
            anonymous_role: None,
            token_file: None,
            tls: None,
        }
    }

    /// The `strata-node` command line (`bin` is the binary).
    pub fn command_line(&self, bin: &Path) -> CommandLine {
        let mut args = vec![
            "--id".to_string(),
            self.id.to_string(),
            "--listen".into(),
            self.listen.clone(),
        ];
        if let Some(advertise) = &self.advertise {
            args.extend(["--advertise".into(), advertise.clone()]);
        }
        if let Some(resp) = &self.resp_listen {
            args.extend(["--resp-listen".into(), resp.clone()]);
        }
        if let Some(memcache) = &self.memcache_listen {
            args.extend(["--memcache-listen".into(), memcache.clone()]);
        }
        args.extend([
            "--peers".into(),
            peers_arg(&self.peers),
            "--data-dir".into(),
            self.data_dir.display().to_string(),
        ]);
        if let Some(n) = self.io_threads {
            args.extend(["--io-threads".into(), n.to_string()]);
        }
        if self.join {
            args.push("--join".into());
        }
        if let Some(jwks) = &self.auth_jwks {
            args.extend(["--auth-jwks".into(), jwks.display().to_string()]);
        }
        if let Some(role) = &self.anonymous_role {
            args.extend(["--anonymous-role".into(), role.clone()]);
        }
        if let Some(file) = &self.token_file {
            args.extend(["--token-file".into(), file.display().to_string()]);
        }
        if let Some(tls) = &self.tls {
            for (flag, path) in [
                ("--tls-cert", &tls.cert),
                ("--tls-key", &tls.key),
                ("--tls-ca", &tls.ca),
            ] {
                args.extend([flag.to_string(), path.display().to_string()]);
            }
        }
        args.extend(self.extra_args.iter().cloned());
        CommandLine {
            program: bin.to_path_buf(),
            args,
            env: BTreeMap::from([("STRATA_LOG".to_string(), self.log.clone())])
                .into_iter()
                .chain(self.extra_env.clone())
                .collect(),
        }
    }
}

/// The environment that makes a node export its spans to the OTLP/gRPC
/// collector at `otlp` (`host:port`), within a fraction of a second.
pub fn otlp_env(otlp: &str) -> [(String, String); 2] {
    [
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT".into(),
            format!("http://{otlp}"),
        ),
        ("OTEL_BSP_SCHEDULE_DELAY".into(), "100".into()),
    ]
}

/// The environment that makes a node sample `percent` of the traces it
/// starts itself, and follow its caller's decision otherwise.
pub fn sampling_env(percent: f64) -> [(String, String); 2] {
    [
        (
            "OTEL_TRACES_SAMPLER".into(),
            "parentbased_traceidratio".into(),
        ),
        (
            "OTEL_TRACES_SAMPLER_ARG".into(),
            (percent / 100.0).to_string(),
        ),
    ]
}

/// `--peers` as the node reads it: `1=host:port,2=host:port`.
pub fn peers_arg(peers: &[(u64, String)]) -> String {
    peers
        .iter()
        .map(|(id, addr)| format!("{id}={addr}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Parses `--peers` syntax back into ids and addresses.
pub fn parse_peers(text: &str) -> Result<Vec<(u64, String)>, String> {
    text.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            let (id, addr) = p
                .split_once('=')
                .ok_or_else(|| format!("peer {p:?} is not ID=HOST:PORT"))?;
            let id = id
                .trim()
                .parse()
                .map_err(|_| format!("peer id {id:?} is not a number"))?;
            Ok((id, addr.trim().to_string()))
        })
        .collect()
}

/// Envoy serving the config at `config`; `concurrency` worker threads
/// (Envoy's default, one per CPU, when `None`). Hot restart is off so
/// that several Envoys on one host never share memory regions.
pub fn envoy(bin: &Path, config: &Path, concurrency: Option<usize>) -> CommandLine {
    let mut args = vec![
        "-c".to_string(),
        config.display().to_string(),
        "--disable-hot-restart".into(),
        "--log-level".into(),
        "warn".into(),
    ];
    if let Some(n) = concurrency {
        args.extend(["--concurrency".into(), n.to_string()]);
    }
    CommandLine {
        program: bin.to_path_buf(),
        args,
        env: BTreeMap::new(),
    }
}

/// Jaeger serving the config at `config` (see [`crate::jaeger`]).
pub fn jaeger(bin: &Path, config: &Path) -> CommandLine {
    CommandLine {
        program: bin.to_path_buf(),
        args: vec!["--config".into(), config.display().to_string()],
        env: BTreeMap::new(),
    }
}

/// The load runner, served by `strata-cluster load-runner`, loading the
/// gateway at `target`, with k6's REST API and web dashboard where
/// `gateway` routes `/k6/` and `/k6/events`.
pub fn load_runner(
    spec: &crate::local::LoadRunnerSpec,
    target: &str,
    gateway: &crate::gateway::GatewaySpec,
) -> CommandLine {
    let mut args = vec![
        "load-runner".into(),
        "--listen".into(),
        spec.listen.clone(),
        "--target".into(),
        target.into(),
        "--k6".into(),
        spec.k6.display().to_string(),
        "--scripts".into(),
        spec.scripts.display().to_string(),
    ];
    if let Some(address) = &gateway.k6 {
        args.extend(["--k6-address".into(), address.clone()]);
    }
    if let Some(address) = &gateway.k6_dashboard {
        args.extend(["--k6-dashboard-address".into(), address.clone()]);
    }
    if let Some(jwks) = &spec.auth_jwks {
        args.extend(["--auth-jwks".into(), jwks.display().to_string()]);
    }
    CommandLine {
        program: spec.launcher.clone(),
        args,
        env: BTreeMap::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_command_line_carries_every_setting_in_order() {
        // Proves the node's flags come out as strata-node reads them, with
        // the optional ones only when set and extra flags last.
        let mut spec = NodeSpec::new(
            2,
            "127.0.0.1:7002".into(),
            vec![(1, "127.0.0.1:7001".into()), (2, "127.0.0.1:7002".into())],
            PathBuf::from("/d/node2"),
        );
        spec.log = "debug".into();
        let plain = spec.command_line(Path::new("/bin/strata-node"));
        assert_eq!(
            plain.argv(),
            [
                "/bin/strata-node",
                "--id",
                "2",
                "--listen",
                "127.0.0.1:7002",
                "--peers",
                "1=127.0.0.1:7001,2=127.0.0.1:7002",
                "--data-dir",
                "/d/node2"
            ]
        );
        assert_eq!(plain.env["STRATA_LOG"], "debug");
        spec.advertise = Some("10.0.0.2:7002".into());
        spec.io_threads = Some(1);
        spec.join = true;
        spec.extra_args = vec!["--read-mode".into(), "lease".into()];
        let full = spec.command_line(Path::new("/bin/strata-node")).args;
        assert_eq!(
            full[4..],
            [
                "--advertise",
                "10.0.0.2:7002",
                "--peers",
                "1=127.0.0.1:7001,2=127.0.0.1:7002",
                "--data-dir",
                "/d/node2",
                "--io-threads",
                "1",
                "--join",
                "--read-mode",
                "lease"
            ]
        );
    }

    #[test]
    fn peers_round_trip_and_bad_peers_are_refused() {
        // Proves --peers parses back to what wrote it, and a malformed entry
        // is an error rather than a silently dropped member.
        let peers = vec![(1, "127.0.0.1:1".to_string()), (3, "h:3".to_string())];
        assert_eq!(parse_peers(&peers_arg(&peers)).unwrap(), peers);
        assert!(parse_peers("1=a:1,b:2").is_err());
        assert!(parse_peers("x=a:1").is_err());
    }

    #[test]
    fn envoy_command_line_never_hot_restarts() {
        // Proves Envoy never uses hot restart and gets a worker count only
        // when asked.
        let e = envoy(Path::new("envoy"), Path::new("/r/envoy.yaml"), None);
        assert_eq!(
            e.args,
            [
                "-c",
                "/r/envoy.yaml",
                "--disable-hot-restart",
                "--log-level",
                "warn"
            ]
        );
        let e = envoy(Path::new("envoy"), Path::new("/r/envoy.yaml"), Some(2));
        assert_eq!(e.args[5..], ["--concurrency", "2"]);
    }
}
