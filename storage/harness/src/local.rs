//! A local cluster in a run directory, as `strata-cluster` runs it: nodes on
//! consecutive ports from a base (each serving the console's bundle when
//! one is given), Envoy with a config generated at start, and optionally a
//! trace viewer that Envoy and the nodes export to ([`TraceViewer`]). Its layout is saved in
//! `cluster.json`, so that later invocations can stop, restart or add
//! single nodes.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::auth::ClusterAuth;
use crate::command::{self, NodeSpec};
use crate::gateway::{GatewaySpec, TcpGateway};
use crate::jaeger::TraceViewer;
use crate::run_dir::RunDir;

/// The process names in the run directory.
pub const ENVOY: &str = "envoy";
pub const TRACES: &str = "jaeger";
pub const LOAD_RUNNER: &str = "load-runner";

/// A node's process name.
pub fn node_name(id: u64) -> String {
    format!("node{id}")
}

/// What `strata-cluster up` was asked for.
#[derive(Debug, Clone)]
pub struct UpOptions {
    pub nodes: u64,
    /// Node `i` listens on `base_port + i - 1`.
    pub base_port: u16,
    /// Node `i` serves the Redis protocol on `resp_base_port + i - 1`, and
    /// the gateway on `gateway_resp_port`; none, neither does.
    pub resp_base_port: Option<u16>,
    pub gateway_resp_port: u16,
    /// Node `i` serves the memcached text protocol on
    /// `memcache_base_port + i - 1`, and the gateway on
    /// `gateway_memcache_port`; none, neither does.
    pub memcache_base_port: Option<u16>,
    pub gateway_memcache_port: u16,
    pub gateway_port: u16,
    pub admin_port: u16,
    pub k6_port: u16,
    /// k6's web dashboard, whose event stream the gateway routes as
    /// `/k6/events`.
    pub k6_dashboard_port: u16,
    /// The built console every node serves at `/`; none, no console.
    pub console_dir: Option<PathBuf>,
    /// Network threads per node and Envoy workers.
    pub threads: Option<usize>,
    pub node_bin: PathBuf,
    pub envoy_bin: PathBuf,
    /// Further flags for every node.
    pub node_args: Vec<String>,
    /// An OTLP/gRPC collector (`host:port`) Envoy and every node export
    /// their spans to.
    pub otlp: Option<String>,
    /// A trace viewer to start beside the cluster; Envoy and every node
    /// export to it (instead of `otlp`).
    pub traces: Option<TraceViewer>,
    /// The percent of requests traced when exporting.
    pub trace_sampling: f64,
    /// Run every node's consistency canary (`STRATA_CANARY`).
    pub canary: bool,
    /// The load runner beside the cluster, if any.
    pub load_runner: Option<LoadRunnerSpec>,
    /// What the nodes let requests without a token do (`none`, `read`,
    /// `write`).
    pub anonymous_role: String,
    /// Clients connect to the gateway with TLS, and the gateway and the
    /// nodes to the nodes with mutual TLS (`crate::tls`).
    pub tls: bool,
}

/// The load runner (`strata-cluster load-runner`): it serves on `listen`
/// and starts `k6` with its REST API on the gateway's `/k6/` upstream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadRunnerSpec {
    /// `strata-cluster` itself, which serves the runner.
    pub launcher: PathBuf,
    pub listen: String,
    pub k6: PathBuf,
    pub scripts: PathBuf,
    /// The cluster's public keys (set by [`Layout::plan`]): starting and
    /// stopping a run need an admin token.
    #[serde(default)]
    pub auth_jwks: Option<PathBuf>,
}

/// Everything needed to start, restart or extend the cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Layout {
    pub node_bin: PathBuf,
    pub envoy_bin: PathBuf,
    pub base_port: u16,
    /// Where node 1 serves the Redis protocol, the others on the ports
    /// after it; none, no node does.
    #[serde(default)]
    pub resp_base_port: Option<u16>,
    /// Where node 1 serves the memcached text protocol, the others on the
    /// ports after it; none, no node does.
    #[serde(default)]
    pub memcache_base_port: Option<u16>,
    /// Every node started so far, in id order.
    pub nodes: Vec<NodeSpec>,
    pub gateway: GatewaySpec,
    pub envoy_threads: Option<usize>,
    pub console_dir: Option<PathBuf>,
    /// The trace viewer started with the cluster, if any.
    #[serde(default)]
    pub traces: Option<TraceViewer>,
    /// The load runner started with the cluster, if any.
    #[serde(default)]
    pub load_runner: Option<LoadRunnerSpec>,
    /// Where the cluster's CA and certificates are kept, when it runs with
    /// TLS.
    #[serde(default)]
    pub tls_dir: Option<PathBuf>,
}

const ADDR: &str = "127.0.0.1";

/// Where node `id` serves a protocol that has a port of its own (the Redis
/// protocol, the memcached text protocol), if the cluster's nodes do: node
/// 1 on `base_port`, the others on the ports after it. `protocol` names it
/// in the error.
fn protocol_listen(base_port: Option<u16>, id: u64, protocol: &str) -> Result<Option<String>> {
    base_port
        .map(|base| {
            let port = u16::try_from(u64::from(base) + id - 1)
                .with_context(|| format!("{protocol} port beyond 65535"))?;
            Ok(format!("{ADDR}:{port}"))
        })
        .transpose()
}

/// The gateway's listener for a protocol the nodes serve on ports of their
/// own, if they do: on `gateway_port`, in front of each node's address for
/// it, as `listen` reads it from the node's spec (`nodes` in id order).
fn tcp_gateway(
    base_port: Option<u16>,
    gateway_port: u16,
    listen: impl Fn(&NodeSpec) -> Option<String>,
    nodes: &[NodeSpec],
) -> Option<TcpGateway> {
    base_port.map(|_| TcpGateway {
        listen: format!("{ADDR}:{gateway_port}"),
        nodes: nodes.iter().filter_map(listen).collect(),
    })
}

impl Layout {
    /// The layout `opts` describes, with its data under `run`.
    pub fn plan(opts: &UpOptions, run: &RunDir) -> Result<Layout> {
        if opts.nodes == 0 {
            bail!("a cluster needs at least one node");
        }
        let otlp = match (&opts.traces, &opts.otlp) {
            (Some(_), Some(_)) => bail!("a trace viewer and another collector: choose one"),
            (Some(viewer), None) => Some(viewer.otlp.clone()),
            (None, otlp) => otlp.clone(),
        };
        let port = |id: u64| -> Result<u16> {
            u16::try_from(u64::from(opts.base_port) + id - 1).context("node port beyond 65535")
        };
        let peers = (1..=opts.nodes)
            .map(|id| Ok((id, format!("{ADDR}:{}", port(id)?))))
            .collect::<Result<Vec<_>>>()?;
        let auth_dir = Self::auth_dir(run);
        let tls_dir = opts.tls.then(|| Self::tls_dir(run));
        let nodes = peers
            .iter()
            .map(|(id, listen)| -> Result<NodeSpec> {
                let mut spec = NodeSpec::new(
                    *id,
                    listen.clone(),
                    peers.clone(),
                    run.data().join(node_name(*id)),
                );
                crate::auth::configure(&mut spec, &auth_dir, &opts.anonymous_role);
                spec.resp_listen = protocol_listen(opts.resp_base_port, *id, "RESP")?;
                spec.memcache_listen = protocol_listen(opts.memcache_base_port, *id, "memcached")?;
                spec.tls = tls_dir
                    .as_ref()
                    .map(|dir| crate::tls::mutual_files(dir, &node_name(*id)));
                spec.io_threads = opts.threads;
                if let Some(dir) = &opts.console_dir {
                    spec.extra_args
                        .extend(["--console-dir".into(), dir.display().to_string()]);
                }
                // The stats the console reads then carry what Envoy answered.
                spec.extra_args.extend([
                    "--gateway-admin".into(),
                    format!("{ADDR}:{}", opts.admin_port),
                ]);
                spec.extra_args.extend(opts.node_args.iter().cloned());
                if let Some(otlp) = &otlp {
                    spec.extra_env.extend(command::otlp_env(otlp));
                    spec.extra_env
                        .extend(command::sampling_env(opts.trace_sampling));
                }
                if opts.canary {
                    spec.extra_env.insert("STRATA_CANARY".into(), "true".into());
                }
                // Slow requests in the console then link to their traces
                // (the query API's JSON: the viewer built here has no UI).
                if let Some(viewer) = &opts.traces {
                    spec.extra_args.extend([
                        "--trace-link".into(),
                        format!("{}api/traces/{{trace_id}}", viewer.ui_url()),
                    ]);
                }
                Ok(spec)
            })
            .collect::<Result<Vec<_>>>()?;
        let resp = tcp_gateway(
            opts.resp_base_port,
            opts.gateway_resp_port,
            |n| n.resp_listen.clone(),
            &nodes,
        );
        let memcache = tcp_gateway(
            opts.memcache_base_port,
            opts.gateway_memcache_port,
            |n| n.memcache_listen.clone(),
            &nodes,
        );
        Ok(Layout {
            node_bin: opts.node_bin.clone(),
            envoy_bin: opts.envoy_bin.clone(),
            base_port: opts.base_port,
            resp_base_port: opts.resp_base_port,
            memcache_base_port: opts.memcache_base_port,
            nodes,
            gateway: GatewaySpec {
                // The first nodes are the seeds; a node added later with
                // --join reaches Envoy through them (EDS).
                nodes: peers.into_iter().map(|(_, addr)| addr).collect(),
                eds: true,
                listen: format!("{ADDR}:{}", opts.gateway_port),
                admin: format!("{ADDR}:{}", opts.admin_port),
                k6: Some(format!("{ADDR}:{}", opts.k6_port)),
                k6_dashboard: Some(format!("{ADDR}:{}", opts.k6_dashboard_port)),
                trace_sampling: otlp.as_ref().map(|_| opts.trace_sampling),
                otlp,
                load_runner: opts.load_runner.as_ref().map(|r| r.listen.clone()),
                access_log: None,
                jwks: Some(crate::auth::jwks_file(&auth_dir)),
                extra_args: Vec::new(),
                tls: tls_dir
                    .as_ref()
                    .map(|dir| crate::tls::cert_files(dir, crate::tls::GATEWAY)),
                node_tls: tls_dir
                    .as_ref()
                    .map(|dir| crate::tls::mutual_files(dir, crate::tls::GATEWAY)),
                resp,
                memcache,
            },
            envoy_threads: opts.threads,
            console_dir: opts.console_dir.clone(),
            traces: opts.traces.clone(),
            load_runner: opts.load_runner.clone().map(|r| LoadRunnerSpec {
                auth_jwks: Some(crate::auth::jwks_file(&auth_dir)),
                ..r
            }),
            tls_dir,
        })
    }

    fn file(run: &RunDir) -> PathBuf {
        run.root().join("cluster.json")
    }

    /// Where the cluster's key pair is kept (`crate::auth`).
    fn auth_dir(run: &RunDir) -> PathBuf {
        run.root().join("auth")
    }

    /// Where the cluster's CA and certificates are kept (`crate::tls`).
    fn tls_dir(run: &RunDir) -> PathBuf {
        run.root().join("tls")
    }

    /// The CA clients trust the gateway with, when it has TLS.
    pub fn ca_file(&self) -> Option<PathBuf> {
        self.tls_dir.as_deref().map(crate::tls::ca_file)
    }

    /// An HTTP client for the gateway (trusting the cluster's CA when it
    /// has TLS).
    pub fn http_client(&self, timeout: Duration) -> Result<reqwest::Client> {
        crate::tls::http_client(self.tls_dir.as_deref(), timeout)
    }

    /// The admin token written at every start, for `strata --token-file`
    /// and the console's sign-in.
    pub fn admin_token_file(run: &RunDir) -> PathBuf {
        run.root().join("admin.token")
    }

    /// The CLI's settings for this cluster (`STRATA_ENDPOINT`,
    /// `STRATA_TOKEN_FILE`, and `STRATA_CA_FILE` with TLS), one
    /// `NAME=value` a line, as `./dev strata` and `set -a; . FILE` read
    /// them.
    pub fn cli_env_file(run: &RunDir) -> PathBuf {
        run.root().join("cli.env")
    }

    /// Writes [`Layout::cli_env_file`] for this cluster.
    pub fn write_cli_env(&self, run: &RunDir) -> Result<()> {
        let mut text = format!(
            "STRATA_ENDPOINT={}\nSTRATA_TOKEN_FILE={}\n",
            self.gateway_url(),
            Self::admin_token_file(run).display()
        );
        if let Some(ca) = self.ca_file() {
            text.push_str(&format!("STRATA_CA_FILE={}\n", ca.display()));
        }
        std::fs::write(Self::cli_env_file(run), text)?;
        Ok(())
    }

    pub fn save(&self, run: &RunDir) -> Result<()> {
        std::fs::create_dir_all(run.root())?;
        std::fs::write(Self::file(run), serde_json::to_string_pretty(self)?)?;
        Ok(())
    }

    /// The layout `up` saved in `run`.
    pub fn load(run: &RunDir) -> Result<Layout> {
        let path = Self::file(run);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("no cluster in {} (run `up` first)", run.root().display()))?;
        serde_json::from_str(&text).with_context(|| format!("reading {}", path.display()))
    }

    pub fn gateway_url(&self) -> String {
        let scheme = if self.gateway.tls.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.gateway.listen)
    }

    /// Every process name of this layout.
    pub fn process_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.nodes.iter().map(|n| node_name(n.id)).collect();
        names.push(ENVOY.into());
        if self.traces.is_some() {
            names.push(TRACES.into());
        }
        if self.load_runner.is_some() {
            names.push(LOAD_RUNNER.into());
        }
        names
    }

    /// Starts the trace viewer (first, so that it receives the first
    /// spans), every node and Envoy.
    pub fn start_all(&self, run: &RunDir) -> Result<()> {
        // The keys the plan names, made on the first start, and an admin
        // token for the operator.
        let auth = ClusterAuth::open_or_create(&Self::auth_dir(run))?;
        auth.write_admin_token(&Self::admin_token_file(run))?;
        if let Some(dir) = &self.tls_dir {
            let mut names = vec![crate::tls::GATEWAY.to_string()];
            names.extend(self.nodes.iter().map(|n| node_name(n.id)));
            crate::tls::open_or_create(dir, &names)?;
        }
        if let Some(viewer) = &self.traces {
            let config = run.root().join("jaeger.yaml");
            viewer.write_config(&config)?;
            run.spawn(TRACES, &viewer.command_line(&config))?;
        }
        if let Some(runner) = &self.load_runner {
            run.spawn(
                LOAD_RUNNER,
                &command::load_runner(runner, &self.gateway_url(), &self.gateway),
            )?;
        }
        for node in &self.nodes {
            std::fs::create_dir_all(&node.data_dir)?;
            run.spawn(&node_name(node.id), &node.command_line(&self.node_bin))?;
        }
        let config = run.root().join("envoy.yaml");
        self.gateway.write_config(&config)?;
        run.spawn(
            ENVOY,
            &command::envoy(&self.envoy_bin, &config, self.envoy_threads),
        )?;
        Ok(())
    }

    /// Whether the layout has a node `id`.
    pub fn has_node(&self, id: u64) -> bool {
        self.nodes.iter().any(|n| n.id == id)
    }

    /// Starts node `id` again (after `stop-node`, or a crash). With
    /// `join`, it asks the others to add it: how a member removed after
    /// losing its disk comes back, empty, under its old id and port.
    pub fn start_node(&self, run: &RunDir, id: u64, join: bool) -> Result<u32> {
        let node = self
            .nodes
            .iter()
            .find(|n| n.id == id)
            .with_context(|| format!("no node {id} in this cluster (add one with --join)"))?;
        if let Some(pid) = run.running_pid(&node_name(id)) {
            bail!("node {id} already runs (pid {pid})");
        }
        let mut spec = node.clone();
        spec.join |= join;
        std::fs::create_dir_all(&spec.data_dir)?;
        run.spawn(&node_name(id), &spec.command_line(&self.node_bin))
    }

    /// Adds node `id` on the next port of the range, empty, asking the
    /// others to add it (`--join`), and records it in the layout. The
    /// gateway learns of it from the members (EDS) once it is added.
    pub fn add_joining_node(&mut self, run: &RunDir, id: u64) -> Result<u32> {
        let spec = self.joining_node(run, id)?;
        if let Some(dir) = &self.tls_dir {
            crate::tls::open_or_create(dir, &[node_name(id)])?;
        }
        std::fs::create_dir_all(&spec.data_dir)?;
        let pid = run.spawn(&node_name(id), &spec.command_line(&self.node_bin))?;
        self.nodes.push(spec);
        self.save(run)?;
        Ok(pid)
    }

    /// Node `id` as it joins: the next port of the range, every member as
    /// its peers, and the first node's threads, log filter, flags and
    /// environment (where the others export traces, their canary).
    pub fn joining_node(&self, run: &RunDir, id: u64) -> Result<NodeSpec> {
        if self.nodes.iter().any(|n| n.id == id) {
            bail!("node {id} exists; start it without --join");
        }
        let port =
            u16::try_from(u64::from(self.base_port) + id - 1).context("node port beyond 65535")?;
        let listen = format!("{ADDR}:{port}");
        let mut peers: Vec<(u64, String)> = self
            .nodes
            .iter()
            .map(|n| (n.id, n.listen.clone()))
            .collect();
        peers.push((id, listen.clone()));
        let template = &self.nodes[0];
        let mut spec = NodeSpec::new(id, listen, peers, run.data().join(node_name(id)));
        spec.join = true;
        spec.resp_listen = protocol_listen(self.resp_base_port, id, "RESP")?;
        spec.memcache_listen = protocol_listen(self.memcache_base_port, id, "memcached")?;
        spec.io_threads = template.io_threads;
        spec.log = template.log.clone();
        spec.extra_args = template.extra_args.clone();
        spec.extra_env = template.extra_env.clone();
        spec.auth_jwks = template.auth_jwks.clone();
        spec.anonymous_role = template.anonymous_role.clone();
        spec.token_file = template.token_file.clone();
        spec.tls = self
            .tls_dir
            .as_ref()
            .map(|dir| crate::tls::mutual_files(dir, &node_name(id)));
        Ok(spec)
    }

    /// Waits until the gateway routes to a leader (and serves the console,
    /// when there is one); fails at once when a process has exited.
    pub async fn wait_healthy(&self, run: &RunDir, timeout: Duration) -> Result<()> {
        let http = self.http_client(Duration::from_secs(1))?;
        let mut pending = vec![(
            "leader via gateway",
            format!("{}/health/leader", self.gateway_url()),
        )];
        if self.console_dir.is_some() {
            pending.push(("console via gateway", format!("{}/", self.gateway_url())));
        }
        if let Some(viewer) = &self.traces {
            pending.push(("trace viewer", viewer.ui_url()));
        }
        let deadline = Instant::now() + timeout;
        loop {
            let mut still = Vec::new();
            for (what, url) in pending {
                let ok = http
                    .get(&url)
                    .send()
                    .await
                    .is_ok_and(|r| r.status().is_success());
                if !ok {
                    still.push((what, url));
                }
            }
            pending = still;
            if pending.is_empty() {
                return Ok(());
            }
            let dead: Vec<String> = self
                .process_names()
                .into_iter()
                .filter(|name| run.running_pid(name).is_none())
                .collect();
            if !dead.is_empty() {
                bail!("{} exited", dead.join(", "));
            }
            if Instant::now() > deadline {
                let waiting: Vec<&str> = pending.iter().map(|(what, _)| *what).collect();
                bail!(
                    "not healthy after {timeout:?} (waiting for {})",
                    waiting.join(", ")
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Network threads per node and Envoy workers when nothing else is asked:
/// the nodes and Envoy share this host, so they split its CPUs rather than
/// each taking a thread per CPU (fewer cross-thread wake-ups, fuller batches
/// on every connection).
pub fn cpu_share(nodes: u64) -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cpus / (nodes as usize + 1)).max(1)
}

/// Whether a path names a file (rather than a program to find on the PATH).
pub fn is_path(p: &Path) -> bool {
    p.components().count() > 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> UpOptions {
        UpOptions {
            nodes: 3,
            base_port: 17001,
            resp_base_port: None,
            gateway_resp_port: 16379,
            memcache_base_port: None,
            gateway_memcache_port: 11311,
            gateway_port: 18080,
            admin_port: 19901,
            k6_port: 16565,
            k6_dashboard_port: 16567,
            console_dir: None,
            threads: Some(1),
            node_bin: "/b/strata-node".into(),
            envoy_bin: "envoy".into(),
            node_args: vec!["--read-mode".into(), "lease".into()],
            otlp: None,
            traces: None,
            trace_sampling: 100.0,
            canary: true,
            load_runner: None,
            anonymous_role: "write".into(),
            tls: false,
        }
    }

    fn viewer() -> TraceViewer {
        TraceViewer {
            bin: "/t/jaeger".into(),
            otlp: "127.0.0.1:14317".into(),
            ui: "127.0.0.1:16686".into(),
            query_grpc: "127.0.0.1:16685".into(),
        }
    }

    #[test]
    fn with_a_trace_viewer_envoy_and_every_node_export_to_it() {
        // Proves `--traces`: the viewer is a process of the layout, Envoy
        // exports to its receiver and samples every request, and every
        // node, a node that joins later too, gets the standard variables
        // naming it; without it nothing exports.
        let mut opts = options();
        opts.traces = Some(viewer());
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::new(dir.path());
        let layout = Layout::plan(&opts, &run).unwrap();
        assert_eq!(layout.gateway.otlp.as_deref(), Some("127.0.0.1:14317"));
        assert_eq!(layout.gateway.trace_sampling, Some(100.0));
        assert_eq!(
            layout.process_names(),
            ["node1", "node2", "node3", "envoy", "jaeger"]
        );
        let joined = layout.joining_node(&run, 4).unwrap();
        for n in layout.nodes.iter().chain([&joined]) {
            assert_eq!(
                n.extra_env["OTEL_EXPORTER_OTLP_ENDPOINT"],
                "http://127.0.0.1:14317"
            );
            assert_eq!(n.extra_env["STRATA_CANARY"], "true");
        }
        assert_eq!(joined.listen, "127.0.0.1:17004");
        assert!(joined.join);

        let plain = Layout::plan(&options(), &run).unwrap();
        assert_eq!(plain.gateway.otlp, None);
        assert!(
            plain
                .nodes
                .iter()
                .all(|n| !n.extra_env.contains_key("OTEL_EXPORTER_OTLP_ENDPOINT"))
        );
        opts.otlp = Some("127.0.0.1:4317".into());
        assert!(Layout::plan(&opts, &run).is_err());
    }

    #[test]
    fn with_a_load_runner_the_gateway_routes_to_it_and_it_loads_that_gateway() {
        // Proves `up`'s load runner: a process of the layout, started first,
        // whose address the gateway routes `/load/` to, and which loads this
        // cluster's gateway with k6's REST API where `/k6/` points.
        let mut opts = options();
        opts.load_runner = Some(LoadRunnerSpec {
            launcher: "/b/strata-cluster".into(),
            listen: "127.0.0.1:16566".into(),
            k6: "/t/k6".into(),
            scripts: "/repo/loadtest".into(),
            auth_jwks: None,
        });
        let layout = Layout::plan(&opts, &RunDir::new("/r")).unwrap();
        assert_eq!(
            layout.gateway.load_runner.as_deref(),
            Some("127.0.0.1:16566")
        );
        assert!(layout.process_names().contains(&LOAD_RUNNER.to_string()));
        let runner = layout.load_runner.as_ref().unwrap();
        let line = command::load_runner(runner, &layout.gateway_url(), &layout.gateway);
        assert_eq!(line.program, Path::new("/b/strata-cluster"));
        assert_eq!(
            line.args,
            [
                "load-runner",
                "--listen",
                "127.0.0.1:16566",
                "--target",
                "http://127.0.0.1:18080",
                "--k6",
                "/t/k6",
                "--scripts",
                "/repo/loadtest",
                "--k6-address",
                "127.0.0.1:16565",
                "--k6-dashboard-address",
                "127.0.0.1:16567",
                "--auth-jwks",
                "/r/auth/jwks.json",
            ]
        );
        let plain = Layout::plan(&options(), &RunDir::new("/r")).unwrap();
        assert_eq!(plain.gateway.load_runner, None);
        assert!(!plain.process_names().contains(&LOAD_RUNNER.to_string()));
    }

    #[test]
    fn with_a_resp_base_port_every_node_serves_the_redis_protocol_on_its_own_port() {
        // Proves: `--resp-base-port` gives node i the port base + i - 1,
        // a node that joins later the next one, and without it no node
        // serves RESP.
        let run = RunDir::new("/r");
        let plain = Layout::plan(&options(), &run).unwrap();
        assert!(plain.nodes.iter().all(|n| n.resp_listen.is_none()));
        let layout = Layout::plan(
            &UpOptions {
                resp_base_port: Some(16380),
                ..options()
            },
            &run,
        )
        .unwrap();
        let resp: Vec<Option<&str>> = layout
            .nodes
            .iter()
            .map(|n| n.resp_listen.as_deref())
            .collect();
        assert_eq!(
            resp,
            [
                Some("127.0.0.1:16380"),
                Some("127.0.0.1:16381"),
                Some("127.0.0.1:16382")
            ]
        );
        let gateway = layout
            .gateway
            .resp
            .as_ref()
            .expect("the gateway takes RESP too");
        assert_eq!(gateway.listen, "127.0.0.1:16379");
        assert_eq!(
            gateway.nodes,
            ["127.0.0.1:16380", "127.0.0.1:16381", "127.0.0.1:16382"]
        );
        assert_eq!(plain.gateway.resp, None);
        let joining = layout.joining_node(&run, 4).unwrap();
        assert_eq!(joining.resp_listen.as_deref(), Some("127.0.0.1:16383"));
        let line = joining.command_line(Path::new("strata-node"));
        assert!(
            line.args
                .windows(2)
                .any(|w| w == ["--resp-listen", "127.0.0.1:16383"]),
            "{:?}",
            line.args
        );
    }

    #[test]
    fn with_a_memcache_base_port_every_node_serves_memcached_on_its_own_port() {
        // Proves: `--memcache-base-port` gives node i the port base + i - 1,
        // a node that joins later the next one, the gateway its own
        // listener in front of them, and without it no node serves
        // memcached; it does not turn on RESP, nor RESP it.
        let run = RunDir::new("/r");
        let plain = Layout::plan(&options(), &run).unwrap();
        assert!(plain.nodes.iter().all(|n| n.memcache_listen.is_none()));
        assert_eq!(plain.gateway.memcache, None);
        let layout = Layout::plan(
            &UpOptions {
                memcache_base_port: Some(11312),
                ..options()
            },
            &run,
        )
        .unwrap();
        let memcache: Vec<Option<&str>> = layout
            .nodes
            .iter()
            .map(|n| n.memcache_listen.as_deref())
            .collect();
        assert_eq!(
            memcache,
            [
                Some("127.0.0.1:11312"),
                Some("127.0.0.1:11313"),
                Some("127.0.0.1:11314")
            ]
        );
        let gateway = layout
            .gateway
            .memcache
            .as_ref()
            .expect("the gateway takes memcached too");
        assert_eq!(gateway.listen, "127.0.0.1:11311");
        assert_eq!(
            gateway.nodes,
            ["127.0.0.1:11312", "127.0.0.1:11313", "127.0.0.1:11314"]
        );
        assert!(layout.nodes.iter().all(|n| n.resp_listen.is_none()));
        assert_eq!(layout.gateway.resp, None);
        let resp_only = Layout::plan(
            &UpOptions {
                resp_base_port: Some(16380),
                ..options()
            },
            &run,
        )
        .unwrap();
        assert!(resp_only.nodes.iter().all(|n| n.memcache_listen.is_none()));
        assert_eq!(resp_only.gateway.memcache, None);
        let joining = layout.joining_node(&run, 4).unwrap();
        assert_eq!(joining.memcache_listen.as_deref(), Some("127.0.0.1:11315"));
        let line = joining.command_line(Path::new("strata-node"));
        assert!(
            line.args
                .windows(2)
                .any(|w| w == ["--memcache-listen", "127.0.0.1:11315"]),
            "{:?}",
            line.args
        );
        assert!(!line.args.iter().any(|a| a == "--resp-listen"));
    }

    #[test]
    fn a_layout_saved_before_memcached_loads_without_it() {
        // Proves: a `cluster.json` written before the memcached settings
        // existed (no `memcache_base_port`, no `memcache_listen`, no
        // gateway `memcache`) still loads, with memcached off.
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::new(dir.path());
        let layout = Layout::plan(
            &UpOptions {
                resp_base_port: Some(16380),
                ..options()
            },
            &run,
        )
        .unwrap();
        let mut json = serde_json::to_value(&layout).unwrap();
        json.as_object_mut().unwrap().remove("memcache_base_port");
        json["gateway"].as_object_mut().unwrap().remove("memcache");
        for node in json["nodes"].as_array_mut().unwrap() {
            node.as_object_mut().unwrap().remove("memcache_listen");
        }
        std::fs::create_dir_all(run.root()).unwrap();
        std::fs::write(run.root().join("cluster.json"), json.to_string()).unwrap();
        assert_eq!(Layout::load(&run).unwrap(), layout);
    }

    #[test]
    fn plan_puts_nodes_on_consecutive_ports_and_every_node_knows_every_peer() {
        // Proves the layout `up` starts: ids 1..=n on base..base+n-1, each
        // listing all members, data under the run directory, the same
        // threads and flags for every node, and Envoy routing to all of them.
        let run = RunDir::new("/r");
        let layout = Layout::plan(&options(), &run).unwrap();
        let listens: Vec<&str> = layout.nodes.iter().map(|n| n.listen.as_str()).collect();
        assert_eq!(
            listens,
            ["127.0.0.1:17001", "127.0.0.1:17002", "127.0.0.1:17003"]
        );
        for n in &layout.nodes {
            assert_eq!(n.peers.len(), 3);
            assert_eq!(n.data_dir, Path::new("/r/data").join(node_name(n.id)));
            assert_eq!(n.io_threads, Some(1));
            assert_eq!(
                n.extra_args,
                ["--gateway-admin", "127.0.0.1:19901", "--read-mode", "lease"]
            );
            assert_eq!(n.extra_env["STRATA_CANARY"], "true");
            assert!(!n.join);
        }
        assert_eq!(layout.gateway.nodes, listens);
        assert_eq!(layout.gateway.listen, "127.0.0.1:18080");
        assert_eq!(layout.process_names(), ["node1", "node2", "node3", "envoy"]);
    }

    #[test]
    fn with_a_console_every_node_serves_it_and_no_other_process_runs() {
        // Proves `--console-dir`: every node, one that joins later too, is
        // started with the bundle's directory (and Envoy's admin address,
        // for the gateway's counters) ahead of the caller's flags, and the
        // console adds no process of its own.
        let mut opts = options();
        opts.console_dir = Some("/c/dist".into());
        let run = RunDir::new("/r");
        let layout = Layout::plan(&opts, &run).unwrap();
        let joined = layout.joining_node(&run, 4).unwrap();
        for n in layout.nodes.iter().chain([&joined]) {
            assert_eq!(
                n.extra_args,
                [
                    "--console-dir",
                    "/c/dist",
                    "--gateway-admin",
                    "127.0.0.1:19901",
                    "--read-mode",
                    "lease"
                ]
            );
        }
        assert_eq!(layout.process_names(), ["node1", "node2", "node3", "envoy"]);
    }

    #[test]
    fn layout_survives_a_round_trip_through_its_file() {
        // Proves later invocations see exactly the layout `up` saved.
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::new(dir.path());
        let layout = Layout::plan(&options(), &run).unwrap();
        layout.save(&run).unwrap();
        assert_eq!(Layout::load(&run).unwrap(), layout);
        assert!(Layout::load(&RunDir::new(dir.path().join("none"))).is_err());
    }

    #[test]
    fn ports_beyond_the_range_are_refused() {
        // Proves a base port too close to 65535 is an error, not a wrap.
        let mut opts = options();
        opts.base_port = 65535;
        assert!(Layout::plan(&opts, &RunDir::new("/r")).is_err());
    }
}
