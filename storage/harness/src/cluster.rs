//! A cluster for tests: `strata-node` processes on 127.0.0.1 behind a real
//! Envoy, each in a temporary directory, owned by the test process. Every
//! process is killed when the [`Cluster`] is dropped, also when a test fails.

use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rustix::process::Signal;

use strata_auth::Role;

use crate::auth::ClusterAuth;
use crate::command::{self, CommandLine, NodeSpec};
use crate::gateway::{GatewaySpec, TcpGateway};
use crate::{envoy_binary, free_port, workspace_binary};

/// Raft-rs logs at info too: some tests look for its snapshot messages.
const NODE_LOG: &str = "info,raft=info";

/// How a cluster starts, beyond its size.
#[derive(Default)]
struct Options<'a> {
    /// Flags for every node.
    node_args: &'a [&'a str],
    /// Environment variables for every node.
    node_env: &'a [(&'a str, &'a str)],
    /// The OTLP collector Envoy and the nodes export traces to.
    otlp: Option<String>,
    /// What requests without a token may do, when not the demo's.
    anonymous_role: Option<&'a str>,
    /// Extra flags for the gateway's generator.
    gateway_args: &'a [&'a str],
    /// The nodes Envoy's config names; every node when `None`.
    gateway_seeds: Option<&'a [u64]>,
}

/// Where a node started by a command of its own lives, and what of the
/// cluster's it needs.
#[derive(Debug, Clone)]
pub struct NodeSlot {
    /// `127.0.0.1:PORT`, to listen on and advertise.
    pub listen: String,
    /// `127.0.0.1:PORT`s for the Redis and memcached protocols.
    pub resp_listen: String,
    pub memcache_listen: String,
    pub data_dir: PathBuf,
    /// The public keys whose tokens the nodes take.
    pub jwks: PathBuf,
    /// The token nodes send with their own requests (admin).
    pub node_token: PathBuf,
}

struct NodeProc {
    id: u64,
    port: u16,
    /// Where it serves the Redis protocol.
    resp_port: u16,
    /// Where it serves the memcached text protocol.
    memcache_port: u16,
    data_dir: PathBuf,
    child: Option<Child>,
}

/// A running cluster. Nodes have ids `1..=n`.
pub struct Cluster {
    dir: tempfile::TempDir,
    nodes: Vec<NodeProc>,
    envoy: Option<Child>,
    gateway_port: u16,
    /// Where the gateway takes Redis clients.
    gateway_resp_port: u16,
    /// Where the gateway takes memcached clients.
    gateway_memcache_port: u16,
    admin_port: u16,
    http: reqwest::Client,
    /// Extra flags for every node start.
    node_args: Vec<String>,
    /// Extra environment variables for every node start.
    node_env: Vec<(String, String)>,
    /// The OTLP collector Envoy and the nodes export traces to, if any.
    otlp: Option<String>,
    /// The keys the nodes trust; requests without a token may read and
    /// write keys, as in the demo.
    auth: ClusterAuth,
    /// An admin token of those keys.
    admin_token: String,
    /// What requests without a token may do, when not the demo's.
    anonymous_role: Option<String>,
    /// Extra flags for the gateway's generator (its limits).
    gateway_args: Vec<String>,
    /// The nodes Envoy's config names (its seeds, with EDS); every node
    /// when `None`.
    gateway_seeds: Option<Vec<u64>>,
}

impl Cluster {
    /// Starts `n` nodes and Envoy and waits until the gateway reaches a leader.
    pub async fn start(n: usize) -> Result<Cluster> {
        Self::start_with_args(n, &[]).await
    }

    /// Like [`start`](Self::start), passing `node_args` to every node.
    pub async fn start_with_args(n: usize, node_args: &[&str]) -> Result<Cluster> {
        Self::start_configured(n, node_args, &[], None).await
    }

    /// Like [`start_with_args`](Self::start_with_args), also setting
    /// `node_env` in every node's environment.
    pub async fn start_with_args_and_env(
        n: usize,
        node_args: &[&str],
        node_env: &[(&str, &str)],
    ) -> Result<Cluster> {
        Self::start_configured(n, node_args, node_env, None).await
    }

    /// Like [`start`](Self::start), with Envoy and every node exporting
    /// their spans to the OTLP/gRPC collector at `otlp` (`host:port`).
    pub async fn start_traced(n: usize, otlp: &str) -> Result<Cluster> {
        Self::start_configured(n, &[], &[], Some(otlp.to_string())).await
    }

    /// Like [`start`](Self::start), with nodes that serve nothing to a
    /// request without a token (`--anonymous-role none`, their default).
    pub async fn start_closed(n: usize) -> Result<Cluster> {
        Self::start_with_anonymous_role(n, "none").await
    }

    /// Like [`start`](Self::start), with nodes whose requests without a
    /// token may do what `role` allows (`--anonymous-role`: none, read or
    /// write; the demo's is write).
    pub async fn start_with_anonymous_role(n: usize, role: &str) -> Result<Cluster> {
        let options = Options {
            anonymous_role: Some(role),
            ..Options::default()
        };
        Self::start_full(n, options, |_, _| Ok(())).await
    }

    /// Like [`start`](Self::start), with `gateway_args` for the gateway's
    /// generator (`gateway/gen_envoy.py`): its limits, when a test needs
    /// them lower than their defaults.
    pub async fn start_with_gateway_args(n: usize, gateway_args: &[&str]) -> Result<Cluster> {
        let options = Options {
            gateway_args,
            ..Options::default()
        };
        Self::start_full(n, options, |_, _| Ok(())).await
    }

    /// Like [`start`](Self::start), once `prepare` has been handed every
    /// node's id and (not yet created) data directory, and the `--peers`
    /// list the nodes start with: to build their data directories first,
    /// as `strata-node restore` does.
    pub async fn start_prepared(
        n: usize,
        prepare: impl FnOnce(&[(u64, PathBuf)], &str) -> Result<()>,
    ) -> Result<Cluster> {
        Self::start_full(n, Options::default(), prepare).await
    }

    /// Like [`start`](Self::start), with Envoy's config naming only the
    /// nodes `seeds`: it learns the others from them (EDS).
    pub async fn start_with_gateway_seeds(n: usize, seeds: &[u64]) -> Result<Cluster> {
        let options = Options {
            gateway_seeds: Some(seeds),
            ..Options::default()
        };
        Self::start_full(n, options, |_, _| Ok(())).await
    }

    async fn start_configured(
        n: usize,
        node_args: &[&str],
        node_env: &[(&str, &str)],
        otlp: Option<String>,
    ) -> Result<Cluster> {
        let options = Options {
            node_args,
            node_env,
            otlp,
            ..Options::default()
        };
        Self::start_full(n, options, |_, _| Ok(())).await
    }

    async fn start_full(
        n: usize,
        options: Options<'_>,
        prepare: impl FnOnce(&[(u64, PathBuf)], &str) -> Result<()>,
    ) -> Result<Cluster> {
        let Options {
            node_args,
            node_env,
            otlp,
            anonymous_role,
            gateway_args,
            gateway_seeds,
        } = options;
        let dir = tempfile::Builder::new()
            .prefix("strata-cluster-")
            .tempdir()?;
        let nodes = (1..=n as u64)
            .map(|id| NodeProc {
                id,
                port: free_port(),
                resp_port: free_port(),
                memcache_port: free_port(),
                data_dir: dir.path().join(format!("node{id}")),
                child: None,
            })
            .collect();
        let auth = ClusterAuth::open_or_create(&dir.path().join("auth"))?;
        let admin_token = auth.token("harness", Role::Admin);
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            reqwest::header::AUTHORIZATION,
            format!("Bearer {admin_token}").parse()?,
        );
        let mut cluster = Cluster {
            dir,
            nodes,
            envoy: None,
            gateway_port: free_port(),
            gateway_resp_port: free_port(),
            gateway_memcache_port: free_port(),
            admin_port: free_port(),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(15))
                .pool_max_idle_per_host(0)
                .default_headers(headers)
                .build()?,
            auth,
            admin_token,
            anonymous_role: anonymous_role.map(str::to_string),
            gateway_args: gateway_args.iter().map(|a| a.to_string()).collect(),
            node_args: node_args.iter().map(|a| a.to_string()).collect(),
            node_env: node_env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            otlp,
            gateway_seeds: gateway_seeds.map(<[u64]>::to_vec),
        };
        let dirs: Vec<(u64, PathBuf)> = cluster
            .nodes
            .iter()
            .map(|n| (n.id, n.data_dir.clone()))
            .collect();
        let peers: Vec<String> = cluster
            .peers()
            .iter()
            .map(|(id, address)| format!("{id}={address}"))
            .collect();
        prepare(&dirs, &peers.join(","))?;
        for id in 1..=n as u64 {
            cluster.start_node(id)?;
        }
        cluster.start_envoy()?;
        if let Err(e) = cluster.wait_gateway_leader(Duration::from_secs(30)).await {
            let envoy = match cluster.envoy.as_mut().map(Child::try_wait) {
                Some(Ok(Some(status))) => format!("envoy exited ({status})"),
                _ => "envoy is running".to_string(),
            };
            return Err(e.context(format!("{envoy}; {}", cluster.log_tail("envoy", 15))));
        }
        Ok(cluster)
    }

    /// The last `lines` lines of `<name>.log` in the cluster's directory.
    fn log_tail(&self, name: &str, lines: usize) -> String {
        let path = self.dir.path().join(format!("{name}.log"));
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let all: Vec<&str> = text.lines().collect();
                let tail = all[all.len().saturating_sub(lines)..].join("\n");
                format!("the end of {}:\n{tail}", path.display())
            }
            Err(e) => format!("{} unreadable: {e}", path.display()),
        }
    }

    fn peers(&self) -> Vec<(u64, String)> {
        self.nodes
            .iter()
            .map(|n| (n.id, format!("127.0.0.1:{}", n.port)))
            .collect()
    }

    /// Starts `line` with its output appended to `<name>.log` in the
    /// cluster's directory.
    fn spawn_logged(&self, name: &str, line: &CommandLine) -> Result<Child> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join(format!("{name}.log")))?;
        Ok(line
            .command()
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?)
    }

    /// Starts (or restarts) node `id` on its port with its data directory.
    pub fn start_node(&mut self, id: u64) -> Result<()> {
        self.spawn_node(id, false)
    }

    fn spawn_node(&mut self, id: u64, join: bool) -> Result<()> {
        let bin = workspace_binary("strata-node")?;
        let node = self.node_mut(id)?;
        if node.child.is_some() {
            bail!("node {id} is already running");
        }
        let (listen, data_dir) = (format!("127.0.0.1:{}", node.port), node.data_dir.clone());
        let resp = format!("127.0.0.1:{}", node.resp_port);
        let memcache = format!("127.0.0.1:{}", node.memcache_port);
        let mut spec = NodeSpec::new(id, listen, self.peers(), data_dir);
        spec.resp_listen = Some(resp);
        spec.memcache_listen = Some(memcache);
        self.auth.configure(&mut spec);
        if let Some(role) = &self.anonymous_role {
            spec.anonymous_role = Some(role.clone());
        }
        spec.join = join;
        spec.log = NODE_LOG.into();
        spec.extra_args = self.node_args.clone();
        spec.extra_env.extend(self.node_env.iter().cloned());
        if let Some(otlp) = &self.otlp {
            spec.extra_env.extend(command::otlp_env(otlp));
        }
        let child = self
            .spawn_logged(&format!("node{id}"), &spec.command_line(&bin))
            .context("spawning strata-node")?;
        self.node_mut(id)?.child = Some(child);
        Ok(())
    }

    fn start_envoy(&mut self) -> Result<()> {
        let cfg = self.dir.path().join("envoy.yaml");
        // The nodes the gateway is told of: their API, RESP and memcached
        // ports, in the same order.
        let seeds: Vec<&NodeProc> = self
            .nodes
            .iter()
            .filter(|n| {
                self.gateway_seeds
                    .as_ref()
                    .is_none_or(|s| s.contains(&n.id))
            })
            .collect();
        GatewaySpec {
            nodes: seeds
                .iter()
                .map(|n| format!("127.0.0.1:{}", n.port))
                .collect(),
            // As the launcher runs it: the members come from the nodes.
            eds: true,
            listen: format!("127.0.0.1:{}", self.gateway_port),
            admin: format!("127.0.0.1:{}", self.admin_port),
            k6: None,
            k6_dashboard: None,
            otlp: self.otlp.clone(),
            trace_sampling: None,
            load_runner: None,
            access_log: Some(self.dir.path().join("envoy-access.log")),
            jwks: Some(self.auth.jwks().to_path_buf()),
            extra_args: self.gateway_args.clone(),
            tls: None,
            node_tls: None,
            resp: Some(TcpGateway {
                listen: format!("127.0.0.1:{}", self.gateway_resp_port),
                nodes: seeds
                    .iter()
                    .map(|n| format!("127.0.0.1:{}", n.resp_port))
                    .collect(),
            }),
            memcache: Some(TcpGateway {
                listen: format!("127.0.0.1:{}", self.gateway_memcache_port),
                nodes: seeds
                    .iter()
                    .map(|n| format!("127.0.0.1:{}", n.memcache_port))
                    .collect(),
            }),
        }
        .write_config(&cfg)?;
        let child = self
            .spawn_logged("envoy", &command::envoy(&envoy_binary(), &cfg, None))
            .context("spawning envoy (set STRATA_ENVOY, or run ./dev test)")?;
        self.envoy = Some(child);
        Ok(())
    }

    fn node_mut(&mut self, id: u64) -> Result<&mut NodeProc> {
        self.nodes
            .iter_mut()
            .find(|n| n.id == id)
            .with_context(|| format!("no node {id}"))
    }

    /// Starts a brand-new node `id` that joins the running cluster
    /// (`--join`): it asks to be added as a learner and catches up.
    pub fn add_joining_node(&mut self, id: u64) -> Result<()> {
        if self.nodes.iter().any(|n| n.id == id) {
            bail!("node {id} exists");
        }
        self.nodes.push(NodeProc {
            id,
            port: free_port(),
            resp_port: free_port(),
            memcache_port: free_port(),
            data_dir: self.dir.path().join(format!("node{id}")),
            child: None,
        });
        self.spawn_node(id, true)
    }

    /// The members as `--peers` takes them (`1=127.0.0.1:PORT,...`).
    pub fn peer_list(&self) -> String {
        self.peers()
            .iter()
            .map(|(id, addr)| format!("{id}={addr}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Where node `id` lives (a new one is given a free port and a data
    /// directory), for a caller that starts it with a command of its own
    /// ([`start_node_as`](Self::start_node_as)).
    pub fn node_slot(&mut self, id: u64) -> NodeSlot {
        if !self.nodes.iter().any(|n| n.id == id) {
            self.nodes.push(NodeProc {
                id,
                port: free_port(),
                resp_port: free_port(),
                memcache_port: free_port(),
                data_dir: self.dir.path().join(format!("node{id}")),
                child: None,
            });
        }
        let node = self.nodes.iter().find(|n| n.id == id).expect("just added");
        NodeSlot {
            listen: format!("127.0.0.1:{}", node.port),
            resp_listen: format!("127.0.0.1:{}", node.resp_port),
            memcache_listen: format!("127.0.0.1:{}", node.memcache_port),
            data_dir: node.data_dir.clone(),
            jwks: self.auth.jwks().to_path_buf(),
            node_token: self.auth.node_token_file().to_path_buf(),
        }
    }

    /// Starts node `id` (see [`node_slot`](Self::node_slot)) with `line`,
    /// the caller's own command; it is stopped and killed like the others.
    pub fn start_node_as(&mut self, id: u64, line: &CommandLine) -> Result<()> {
        if self.node_mut(id)?.child.is_some() {
            bail!("node {id} is already running");
        }
        let child = self
            .spawn_logged(&format!("node{id}"), line)
            .with_context(|| format!("spawning {}", line.program.display()))?;
        self.node_mut(id)?.child = Some(child);
        Ok(())
    }

    /// Starts node `id`, an existing member of this cluster's list that
    /// is stopped, with `--join` (as an operator starts an empty node that
    /// replaces a removed member under the same id).
    pub fn start_node_joining(&mut self, id: u64) -> Result<()> {
        self.spawn_node(id, true)
    }

    /// Deletes the data directory of node `id`, which must be stopped: the
    /// disk it lived on is gone.
    pub fn wipe(&mut self, id: u64) -> Result<()> {
        let node = self.node_mut(id)?;
        if node.child.is_some() {
            bail!("node {id} is running");
        }
        match std::fs::remove_dir_all(&node.data_dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }

    /// Waits until the process of node `id` ends by itself, for at most
    /// `timeout`, and returns how it ended; the node then counts as stopped.
    pub async fn wait_exit(&mut self, id: u64, timeout: Duration) -> Result<ExitStatus> {
        let logs = self.dir.path().display().to_string();
        let node = self.node_mut(id)?;
        let child = node
            .child
            .as_mut()
            .with_context(|| format!("node {id} is not running"))?;
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = child.try_wait()? {
                node.child = None;
                return Ok(status);
            }
            if Instant::now() > deadline {
                bail!("node {id} still runs after {timeout:?}; logs in {logs}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stops node `id` as an operator or orchestrator does: SIGTERM, then
    /// waits up to `timeout` for it to exit by itself. Returns how long that
    /// took; an error if it did not exit in time (it is killed then).
    pub async fn stop(&mut self, id: u64, timeout: Duration) -> Result<Duration> {
        let node = self.node_mut(id)?;
        let Some(mut child) = node.child.take() else {
            return Ok(Duration::ZERO);
        };
        let started = Instant::now();
        crate::run_dir::send(child.id(), Signal::TERM)?;
        loop {
            if let Some(status) = child.try_wait()? {
                if !status.success() {
                    bail!("node {id} exited with {status} after SIGTERM");
                }
                return Ok(started.elapsed());
            }
            if started.elapsed() > timeout {
                child.kill()?;
                child.wait()?;
                bail!("node {id} still ran {timeout:?} after SIGTERM; killed it");
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// `kill -9` of node `id`.
    pub fn kill(&mut self, id: u64) -> Result<()> {
        let node = self.node_mut(id)?;
        if let Some(mut c) = node.child.take() {
            c.kill()?;
            c.wait()?;
        }
        Ok(())
    }

    /// Freezes node `id` (SIGSTOP): it keeps its sockets open, so peers and
    /// Envoy see a node that holds what it was sent and answers nothing,
    /// until [`resume`](Self::resume).
    pub fn pause(&self, id: u64) -> Result<()> {
        self.signal(id, Signal::STOP)
    }

    /// Lets a node frozen by [`pause`](Self::pause) run again (SIGCONT).
    pub fn resume(&self, id: u64) -> Result<()> {
        self.signal(id, Signal::CONT)
    }

    fn signal(&self, id: u64, signal: Signal) -> Result<()> {
        let node = self
            .nodes
            .iter()
            .find(|n| n.id == id)
            .with_context(|| format!("no node {id}"))?;
        let child = node
            .child
            .as_ref()
            .with_context(|| format!("node {id} is not running"))?;
        crate::run_dir::send(child.id(), signal)
    }

    /// The process id of node `id` while it runs (to read its
    /// `/proc/<pid>/status`, for instance).
    pub fn pid(&self, id: u64) -> Option<u32> {
        let node = self.nodes.iter().find(|n| n.id == id)?;
        node.child.as_ref().map(Child::id)
    }

    /// An admin token the nodes take.
    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// The public keys (JWKS file) whose tokens the nodes take.
    pub fn jwks(&self) -> &Path {
        self.auth.jwks()
    }

    /// A token with `role` the nodes take.
    pub fn token(&self, role: Role) -> String {
        self.auth.token("harness", role)
    }

    /// A client of the gateway that sends the admin token.
    pub async fn admin_client(&self) -> Result<strata_client::Client> {
        Ok(strata_client::Client::connect(&self.gateway_url())
            .await?
            .with_token(&self.admin_token)?)
    }

    pub fn node_ids(&self) -> Vec<u64> {
        self.nodes.iter().map(|n| n.id).collect()
    }

    pub fn gateway_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.gateway_port)
    }

    /// Where the gateway takes Redis clients (`host:port`).
    pub fn gateway_resp_addr(&self) -> String {
        format!("127.0.0.1:{}", self.gateway_resp_port)
    }

    /// Where the gateway takes memcached clients (`host:port`).
    pub fn gateway_memcache_addr(&self) -> String {
        format!("127.0.0.1:{}", self.gateway_memcache_port)
    }

    /// Envoy's admin interface (`/stats`, `/clusters`).
    pub fn admin_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.admin_port)
    }

    /// Envoy's stats whose names `filter` (a regular expression) matches,
    /// as its admin interface lists them, one `name: value` a line; `None`
    /// when Envoy does not answer.
    pub async fn envoy_stats(&self, filter: &str) -> Option<String> {
        self.http
            .get(format!("{}/stats", self.admin_url()))
            .query(&[("filter", filter)])
            .send()
            .await
            .ok()?
            .text()
            .await
            .ok()
    }

    /// One Envoy counter or gauge by its full name; `None` when Envoy does
    /// not answer or has no such stat.
    pub async fn envoy_stat(&self, name: &str) -> Option<u64> {
        let text = self.envoy_stats(&format!("^{name}$")).await?;
        text.lines().find_map(|line| {
            line.strip_prefix(name)?
                .strip_prefix(": ")?
                .trim()
                .parse()
                .ok()
        })
    }

    /// Where node `id` serves the Redis protocol (`host:port`).
    pub fn resp_addr(&self, id: u64) -> String {
        let port = self
            .nodes
            .iter()
            .find(|n| n.id == id)
            .map_or(0, |n| n.resp_port);
        format!("127.0.0.1:{port}")
    }

    /// Where node `id` serves the memcached text protocol (`host:port`).
    pub fn memcache_addr(&self, id: u64) -> String {
        let port = self
            .nodes
            .iter()
            .find(|n| n.id == id)
            .map_or(0, |n| n.memcache_port);
        format!("127.0.0.1:{port}")
    }

    pub fn node_url(&self, id: u64) -> String {
        let port = self.nodes.iter().find(|n| n.id == id).map_or(0, |n| n.port);
        format!("http://127.0.0.1:{port}")
    }

    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// Node `id`'s `/metrics` text; empty when it does not answer.
    pub async fn scrape(&self, id: u64) -> String {
        match self
            .http
            .get(format!("{}/metrics", self.node_url(id)))
            .timeout(Duration::from_secs(5))
            .send()
            .await
        {
            Ok(r) => r.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        }
    }

    /// The id of the node that answers 200 on `/health/leader`, if exactly one does.
    pub async fn leader(&self) -> Option<u64> {
        let mut leaders = Vec::new();
        for n in self.nodes.iter().filter(|n| n.child.is_some()) {
            if self
                .answers_ok(&format!("{}/health/leader", self.node_url(n.id)))
                .await
            {
                leaders.push(n.id);
            }
        }
        (leaders.len() == 1).then(|| leaders[0])
    }

    async fn answers_ok(&self, url: &str) -> bool {
        self.http
            .get(url)
            .timeout(Duration::from_millis(500))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
    }

    /// Polls `probe` every 50 ms until it yields a value or `timeout` passes.
    async fn poll<T, F>(
        &self,
        what: &str,
        timeout: Duration,
        mut probe: impl FnMut() -> F,
    ) -> Result<T>
    where
        F: std::future::Future<Output = Option<T>>,
    {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(v) = probe().await {
                return Ok(v);
            }
            if Instant::now() > deadline {
                bail!(
                    "{what} within {timeout:?}; logs in {}",
                    self.dir.path().display()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until one running node leads and returns its id.
    pub async fn wait_leader(&self, timeout: Duration) -> Result<u64> {
        self.poll("no leader", timeout, || self.leader()).await
    }

    /// Waits until the gateway routes `/health/leader` to a leader.
    pub async fn wait_gateway_leader(&self, timeout: Duration) -> Result<()> {
        let url = format!("{}/health/leader", self.gateway_url());
        self.poll("gateway found no leader", timeout, || async {
            self.answers_ok(&url).await.then_some(())
        })
        .await
    }

    /// A node that is running and is not the leader.
    pub async fn follower(&self) -> Result<u64> {
        let leader = self.wait_leader(Duration::from_secs(10)).await?;
        self.nodes
            .iter()
            .find(|n| n.id != leader && n.child.is_some())
            .map(|n| n.id)
            .context("no running follower")
    }

    /// Puts through the gateway until one succeeds, retrying the answers a
    /// client may retry (503) or must re-check (504), for at most `timeout`.
    pub async fn put_until_ok(&self, key: &str, value: &str, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let r = self
                .http
                .put(format!("{}/v1/kv/{key}", self.gateway_url()))
                .body(value.to_string())
                .timeout(Duration::from_secs(3))
                .send()
                .await;
            match r {
                Ok(r) if r.status().is_success() => return Ok(()),
                Ok(r) => {
                    let status = r.status().as_u16();
                    if status != 503 && status != 504 {
                        bail!(
                            "unexpected {status}: {}",
                            r.text().await.unwrap_or_default()
                        );
                    }
                }
                Err(e) if e.is_timeout() || e.is_connect() || e.is_request() => {}
                Err(e) => return Err(e.into()),
            }
            if Instant::now() > deadline {
                bail!("no successful put of {key} within {timeout:?}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A background writer through the gateway: puts `<prefix><n>` = same,
    /// until `stop` is set (or 60 s / 20,000 writes pass), and returns the
    /// acknowledged keys. Any answer but 200 or a retryable 503 fails it.
    pub fn spawn_writer(
        &self,
        prefix: &str,
        stop: Arc<AtomicBool>,
    ) -> tokio::task::JoinHandle<Vec<String>> {
        let (http, gw, prefix) = (self.http.clone(), self.gateway_url(), prefix.to_string());
        tokio::spawn(async move {
            let (mut acked, started) = (Vec::new(), Instant::now());
            for i in 0..20_000u32 {
                if stop.load(Ordering::Relaxed) || started.elapsed() > Duration::from_secs(60) {
                    break;
                }
                let key = format!("{prefix}{i}");
                let r = http
                    .put(format!("{gw}/v1/kv/{key}"))
                    .body(key.clone())
                    .send()
                    .await;
                let r = r.expect("the gateway answers");
                match r.status().as_u16() {
                    200 => acked.push(key),
                    // Not applied (503), or in flight when leadership moved
                    // (504, outcome unknown): neither is acknowledged.
                    503 | 504 => {}
                    other => panic!("unexpected {other}: {}", r.text().await.unwrap_or_default()),
                }
            }
            acked
        })
    }

    /// Everything node `id` has logged so far.
    pub fn node_log(&self, id: u64) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("node{id}.log"))).unwrap_or_default()
    }

    /// Keeps the logs of a failed test: call before panicking to print where.
    pub fn log_dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for n in &mut self.nodes {
            if let Some(mut c) = n.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        if let Some(mut e) = self.envoy.take() {
            let _ = e.kill();
            let _ = e.wait();
        }
        if std::thread::panicking() {
            // Keep the logs of a failing test for inspection, not the
            // nodes' data: a test of large writes leaves gigabytes, and a
            // few failed runs would fill the disk.
            for n in &self.nodes {
                let _ = std::fs::remove_dir_all(&n.data_dir);
            }
            let path =
                std::mem::replace(&mut self.dir, tempfile::tempdir().expect("tempdir")).keep();
            eprintln!("cluster logs kept in {}", path.display());
        }
    }
}
