//! `strata-cluster`: starts and stops a local Strata cluster (nodes, which
//! also serve the console, and Envoy) as detached processes recorded by pid in a run
//! directory, and prints the command line of any of its processes for tools
//! that run them themselves.
//!
//!   strata-cluster up --run-dir .run/demo --console-dir console/dist
//!   strata-cluster up --run-dir .run/demo --traces          # and Jaeger, which Envoy and the nodes export to
//!   strata-cluster trace --run-dir .run/demo                # the latest PUT's trace, as a tree
//!   strata-cluster status --run-dir .run/demo
//!   strata-cluster stop-node --run-dir .run/demo --id 2 --kill
//!   strata-cluster start-node --run-dir .run/demo --id 4 --join
//!   strata-cluster down --run-dir .run/demo
//!   strata-cluster load-runner --target http://127.0.0.1:8080   # what `up` starts beside the cluster

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};
use rustix::process::Signal;
use strata_harness::command::{self, NodeSpec, parse_peers};
use strata_harness::gateway::GatewaySpec;
use strata_harness::jaeger::TraceViewer;
use strata_harness::load_runner::{self, Runner, RunnerConfig};
use strata_harness::local::{self, Layout, LoadRunnerSpec, UpOptions, node_name};
use strata_harness::run_dir::RunDir;
use strata_harness::{envoy_binary, jaeger_binary, k6_binary, loadtest_dir, workspace_binary};
use tokio::signal::unix::{SignalKind, signal};

#[derive(Parser)]
#[command(about = "Starts and stops a local Strata cluster")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Start nodes (serving the console with --console-dir) and Envoy; returns once
    /// the gateway reaches a leader. Stops a cluster already running there first.
    Up(Up),
    /// Stop every process recorded in the run directory.
    Down(RunDirArg),
    /// Show each process of the cluster and what the gateway says.
    Status(RunDirArg),
    /// Start one node of the cluster again, or add a new one with --join.
    StartNode(NodeArgs),
    /// Stop one node (SIGTERM, or SIGKILL with --kill); prints its pid.
    StopNode(NodeArgs),
    /// Print a command line as JSON (program, args, env) without running it.
    #[command(subcommand)]
    Command(Line),
    /// Make a key pair in --dir (or read the one there) and print, as JSON,
    /// its public keys' file (`jwks`, for --auth-jwks) and a token of
    /// --role (`token`): for harnesses that start nodes themselves.
    Auth {
        #[arg(long)]
        dir: PathBuf,
        #[arg(long, default_value = "admin")]
        role: strata_auth::Role,
    },
    /// Print a trace from the cluster's trace viewer (`up --traces`) as a
    /// tree: the latest that holds a node span named --operation, or the
    /// one --id names.
    Trace {
        #[arg(long)]
        run_dir: PathBuf,
        #[arg(long, default_value = "PUT /v1/kv/{key}")]
        operation: String,
        /// A trace id (32 hex digits).
        #[arg(long)]
        id: Option<String>,
    },
    /// Receive OTLP/gRPC spans on --listen and count them, until SIGTERM or
    /// Ctrl-C: a collector that keeps nothing, for measuring the cost of
    /// exporting traces.
    OtlpSink {
        #[arg(long, default_value = "127.0.0.1:4317")]
        listen: String,
    },
    /// Serve the load runner until SIGTERM or Ctrl-C: it starts the bundled
    /// k6 scenarios against --target, one at a time (`up` starts it).
    LoadRunner {
        #[arg(long, default_value = "127.0.0.1:6566")]
        listen: String,
        /// The cluster's gateway, http://HOST:PORT: the only target.
        #[arg(long)]
        target: String,
        /// k6 (default: STRATA_K6, else k6 on the PATH).
        #[arg(long)]
        k6: Option<PathBuf>,
        /// Where k6 serves its REST API (the gateway's /k6/ upstream).
        #[arg(long, default_value = "127.0.0.1:6565")]
        k6_address: String,
        /// Where k6 serves its web dashboard's event stream (the gateway's
        /// /k6/events upstream).
        #[arg(long, default_value = "127.0.0.1:6567")]
        k6_dashboard_address: String,
        /// The bundled scenarios (default: the repository's loadtest/).
        #[arg(long)]
        scripts: Option<PathBuf>,
        /// The cluster's public keys: starting and stopping a run then need
        /// an admin token (without them, anyone who reaches the runner may).
        #[arg(long)]
        auth_jwks: Option<PathBuf>,
    },
}

#[derive(Args)]
struct RunDirArg {
    #[arg(long)]
    run_dir: PathBuf,
}

#[derive(Args)]
struct Up {
    #[arg(long)]
    run_dir: PathBuf,
    #[arg(long, default_value_t = 3)]
    nodes: u64,
    /// Node i listens on this port + i - 1.
    #[arg(long, default_value_t = 7001)]
    base_port: u16,
    /// Node i also serves the Redis protocol on this port + i - 1
    /// (`--resp-listen`, docs/resp.md); off when not given.
    #[arg(long)]
    resp_base_port: Option<u16>,
    /// With --resp-base-port: the gateway takes Redis clients on this port
    /// (not Redis's own 6379, which a Redis of the machine's may hold).
    #[arg(long, default_value_t = 16379)]
    gateway_resp_port: u16,
    /// Node i also serves the memcached text protocol on this port + i - 1
    /// (`--memcache-listen`); off when not given.
    #[arg(long)]
    memcache_base_port: Option<u16>,
    /// With --memcache-base-port: the gateway takes memcached clients on
    /// this port (not memcached's own 11211, which a memcached of the
    /// machine's may hold).
    #[arg(long, default_value_t = 11311)]
    gateway_memcache_port: u16,
    #[arg(long, default_value_t = 8080)]
    gateway_port: u16,
    #[arg(long, default_value_t = 9901)]
    admin_port: u16,
    /// k6's REST API, which the gateway proxies under /k6/.
    #[arg(long, default_value_t = 6565)]
    k6_port: u16,
    /// k6's web dashboard, whose event stream the gateway proxies as
    /// /k6/events.
    #[arg(long, default_value_t = 6567)]
    k6_dashboard_port: u16,
    /// Start the load runner on this port, which the gateway proxies under
    /// /load/ (none: no runner; `./dev up` starts one on 6566).
    #[arg(long)]
    load_port: Option<u16>,
    /// k6 for the load runner (default: STRATA_K6, else k6 on the PATH).
    #[arg(long, requires = "load_port")]
    k6: Option<PathBuf>,
    /// The built console (`console/dist`), which every node serves at `/`
    /// (`strata-node --console-dir`; none: no console).
    #[arg(long)]
    console_dir: Option<PathBuf>,
    /// strata-node (default: STRATA_NODE_BIN, else beside this binary).
    #[arg(long)]
    node_bin: Option<PathBuf>,
    /// Envoy (default: STRATA_ENVOY, else envoy on the PATH).
    #[arg(long)]
    envoy: Option<PathBuf>,
    /// Network threads per node, and Envoy's workers (default: CPUs / (nodes + 1), at least 1).
    #[arg(long)]
    io_threads: Option<usize>,
    /// Delete the run directory (data and logs) first.
    #[arg(long)]
    fresh: bool,
    /// Seconds to wait for a healthy cluster.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// An OTLP/gRPC collector (HOST:PORT) Envoy and every node export their
    /// spans to. (Envoy's tracer runs either way; without a collector it
    /// exports nothing.)
    #[arg(long, conflicts_with = "traces")]
    otlp: Option<String>,
    /// Start a trace viewer (Jaeger, in memory) beside the cluster, and
    /// have Envoy and every node export their spans to it.
    #[arg(long)]
    traces: bool,
    /// The viewer's binary (default: STRATA_JAEGER, else jaeger on the PATH).
    #[arg(long, requires = "traces")]
    jaeger: Option<PathBuf>,
    /// The viewer's OTLP/gRPC receiver.
    #[arg(long, default_value_t = 4317, requires = "traces")]
    traces_otlp_port: u16,
    /// The viewer's UI; its gRPC query API takes the port below.
    #[arg(long, default_value_t = 16686, requires = "traces")]
    traces_ui_port: u16,
    /// When exporting (--otlp or --traces): the percent of requests traced
    /// (Envoy starts sampled traces at this rate; a node samples the traces
    /// it starts itself at the same rate and follows its caller's decision
    /// otherwise).
    #[arg(long, default_value_t = 100.0)]
    trace_sampling: f64,
    /// Leave the nodes' consistency canary off (on by default here; see
    /// docs/operations.md).
    #[arg(long)]
    no_canary: bool,
    /// What requests without a token may do: none, read or write (write
    /// here, for a demo bound to 127.0.0.1; the node's own default is none).
    #[arg(long, default_value = strata_harness::auth::LOCAL_ANONYMOUS_ROLE,
          value_parser = ["none", "read", "write"])]
    anonymous_role: String,
    /// Run with TLS: clients connect to the gateway with TLS, and the
    /// gateway and the nodes connect to the nodes with mutual TLS, all with
    /// certificates of the cluster's own CA (made in RUN_DIR/tls on the
    /// first start; clients trust RUN_DIR/tls/ca/ca.pem).
    #[arg(long, conflicts_with = "load_port")]
    tls: bool,
    /// Further flags for every node.
    #[arg(last = true)]
    node_args: Vec<String>,
}

#[derive(Args)]
struct NodeArgs {
    #[arg(long)]
    run_dir: PathBuf,
    #[arg(long)]
    id: u64,
    /// start-node: a new node that joins the running cluster, or an
    /// existing one started empty after its removal (a replaced disk).
    #[arg(long)]
    join: bool,
    /// stop-node: SIGKILL instead of SIGTERM.
    #[arg(long)]
    kill: bool,
}

#[derive(Subcommand)]
enum Line {
    /// A storage node.
    Node {
        #[arg(long)]
        node_bin: PathBuf,
        #[arg(long)]
        id: u64,
        #[arg(long)]
        listen: String,
        #[arg(long)]
        advertise: Option<String>,
        /// Every member as this node reaches it: ID=HOST:PORT,…
        #[arg(long)]
        peers: String,
        #[arg(long)]
        data_dir: PathBuf,
        #[arg(long)]
        join: bool,
        #[arg(long)]
        io_threads: Option<usize>,
        /// The public keys whose tokens the node takes.
        #[arg(long)]
        auth_jwks: Option<PathBuf>,
        /// What requests without a token may do (none, read, write).
        #[arg(long)]
        anonymous_role: Option<String>,
        /// The token the node sends with its own requests (its join, its
        /// canary).
        #[arg(long)]
        token_file: Option<PathBuf>,
        /// Further flags for the node.
        #[arg(last = true)]
        extra: Vec<String>,
    },
    /// Envoy; writes the config it serves to --config first.
    Envoy {
        #[arg(long)]
        envoy: PathBuf,
        #[arg(long)]
        config: PathBuf,
        /// Every node's HOST:PORT, comma-separated.
        #[arg(long, value_delimiter = ',')]
        nodes: Vec<String>,
        #[arg(long)]
        listen: String,
        #[arg(long)]
        admin: String,
        #[arg(long)]
        k6: Option<String>,
        /// An OTLP/gRPC collector the tracer exports to.
        #[arg(long)]
        otlp: Option<String>,
        #[arg(long)]
        concurrency: Option<usize>,
        /// The cluster's public keys: Envoy then refuses a token they do
        /// not verify.
        #[arg(long)]
        jwks: Option<PathBuf>,
        /// Take the members from the nodes (EDS), with --nodes as the
        /// seeds. Off by default: a cluster whose members reach one another
        /// through proxies (the chaos suite's) names the proxies as their
        /// addresses, which the gateway must not route through.
        #[arg(long)]
        eds: bool,
    },
}

fn main() -> Result<()> {
    match Cli::parse().cmd {
        Cmd::Up(up) => block_on(cmd_up(up)),
        Cmd::Down(a) => {
            let stopped = RunDir::new(&a.run_dir).stop_all(Duration::from_secs(5))?;
            if !stopped.is_empty() {
                println!("stopped {}", stopped.join(", "));
            }
            Ok(())
        }
        Cmd::Status(a) => block_on(cmd_status(a)),
        Cmd::StartNode(a) => {
            let run = RunDir::new(&a.run_dir);
            let mut layout = Layout::load(&run)?;
            let pid = if a.join && !layout.has_node(a.id) {
                layout.add_joining_node(&run, a.id)?
            } else {
                layout.start_node(&run, a.id, a.join)?
            };
            println!("started node {} (pid {pid})", a.id);
            Ok(())
        }
        Cmd::StopNode(a) => {
            let run = RunDir::new(&a.run_dir);
            let sig = if a.kill { Signal::KILL } else { Signal::TERM };
            match run.signal(&node_name(a.id), sig, Some(Duration::from_secs(10)))? {
                Some(pid) => println!("stopped node {} (pid {pid})", a.id),
                None => bail!("node {} is not running", a.id),
            }
            Ok(())
        }
        Cmd::Command(line) => {
            println!("{}", serde_json::to_string(&command_line(line)?)?);
            Ok(())
        }
        Cmd::Auth { dir, role } => {
            let auth = strata_harness::auth::ClusterAuth::open_or_create(&dir)?;
            let out = serde_json::json!({
                "jwks": auth.jwks(),
                "token": auth.token("harness", role),
                "node_token_file": auth.node_token_file(),
                "anonymous_role": strata_harness::auth::LOCAL_ANONYMOUS_ROLE,
            });
            println!("{out}");
            Ok(())
        }
        Cmd::Trace {
            run_dir,
            operation,
            id,
        } => block_on(cmd_trace(run_dir, operation, id)),
        Cmd::LoadRunner {
            listen,
            target,
            k6,
            k6_address,
            k6_dashboard_address,
            scripts,
            auth_jwks,
        } => block_on(async move {
            let keys = auth_jwks
                .as_deref()
                .map(strata_auth::Verifier::from_file)
                .transpose()?
                .map(std::sync::Arc::new);
            if keys.is_none() {
                eprintln!("load runner: no --auth-jwks: anyone who reaches it may start runs");
            }
            let runner = Runner::new(RunnerConfig {
                k6: k6.unwrap_or_else(k6_binary),
                scripts: scripts.unwrap_or_else(loadtest_dir),
                target,
                k6_address,
                k6_dashboard_address,
            });
            let listener = tokio::net::TcpListener::bind(&listen)
                .await
                .with_context(|| format!("binding the load runner to {listen}"))?;
            println!("load runner on {listen}");
            let mut term = signal(SignalKind::terminate())?;
            axum::serve(listener, load_runner::http::router(runner, keys))
                .with_graceful_shutdown(async move {
                    tokio::select! {
                        _ = tokio::signal::ctrl_c() => {}
                        _ = term.recv() => {}
                    }
                })
                .await?;
            Ok(())
        }),
        Cmd::OtlpSink { listen } => block_on(async move {
            let sink = strata_harness::otlp::Receiver::bind(&listen, false).await?;
            println!("receiving OTLP/gRPC spans on {}", sink.address());
            let mut term = signal(SignalKind::terminate())?;
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            println!("received {} spans", sink.count());
            Ok(())
        }),
    }
}

/// Runs `command` on a runtime of this thread: only the commands that wait
/// on the network need one.
fn block_on(command: impl Future<Output = Result<()>>) -> Result<()> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(command)
}

fn command_line(line: Line) -> Result<command::CommandLine> {
    Ok(match line {
        Line::Node {
            node_bin,
            id,
            listen,
            advertise,
            peers,
            data_dir,
            join,
            io_threads,
            auth_jwks,
            anonymous_role,
            token_file,
            extra,
        } => {
            let mut spec = NodeSpec::new(
                id,
                listen,
                parse_peers(&peers).map_err(anyhow::Error::msg)?,
                data_dir,
            );
            spec.advertise = advertise;
            spec.join = join;
            spec.io_threads = io_threads;
            spec.auth_jwks = auth_jwks;
            spec.anonymous_role = anonymous_role;
            spec.token_file = token_file;
            spec.extra_args = extra;
            spec.command_line(&node_bin)
        }
        Line::Envoy {
            envoy,
            config,
            nodes,
            listen,
            admin,
            k6,
            otlp,
            concurrency,
            jwks,
            eds,
        } => {
            GatewaySpec {
                nodes,
                eds,
                listen,
                admin,
                k6,
                k6_dashboard: None,
                otlp,
                trace_sampling: None,
                load_runner: None,
                access_log: None,
                jwks,
                extra_args: Vec::new(),
                tls: None,
                node_tls: None,
                resp: None,
                memcache: None,
            }
            .write_config(&config)?;
            command::envoy(&envoy, &config, concurrency)
        }
    })
}

async fn cmd_up(up: Up) -> Result<()> {
    let run_dir = std::path::absolute(&up.run_dir)?;
    let run = RunDir::new(&run_dir);
    run.stop_all(Duration::from_secs(5))?;
    if up.fresh && run_dir.exists() {
        std::fs::remove_dir_all(&run_dir)
            .with_context(|| format!("removing {}", run_dir.display()))?;
    }
    let node_bin = match up.node_bin {
        Some(p) => p,
        None => workspace_binary("strata-node")?,
    };
    if !node_bin.exists() {
        bail!("{} does not exist; build it first", node_bin.display());
    }
    let envoy_bin = up.envoy.unwrap_or_else(envoy_binary);
    if local::is_path(&envoy_bin) && !envoy_bin.exists() {
        bail!(
            "envoy not found at {}; run ./dev setup",
            envoy_bin.display()
        );
    }
    let traces = if up.traces {
        let bin = up.jaeger.unwrap_or_else(jaeger_binary);
        if local::is_path(&bin) && !bin.exists() {
            bail!(
                "the trace viewer is not at {}; run ./dev setup-jaeger",
                bin.display()
            );
        }
        let query_grpc = up
            .traces_ui_port
            .checked_sub(1)
            .context("--traces-ui-port must be above 1")?;
        Some(TraceViewer {
            bin,
            otlp: format!("127.0.0.1:{}", up.traces_otlp_port),
            ui: format!("127.0.0.1:{}", up.traces_ui_port),
            query_grpc: format!("127.0.0.1:{query_grpc}"),
        })
    } else {
        None
    };
    let opts = UpOptions {
        nodes: up.nodes,
        base_port: up.base_port,
        resp_base_port: up.resp_base_port,
        gateway_resp_port: up.gateway_resp_port,
        memcache_base_port: up.memcache_base_port,
        gateway_memcache_port: up.gateway_memcache_port,
        gateway_port: up.gateway_port,
        admin_port: up.admin_port,
        k6_port: up.k6_port,
        k6_dashboard_port: up.k6_dashboard_port,
        console_dir: up.console_dir.map(std::path::absolute).transpose()?,
        threads: Some(up.io_threads.unwrap_or_else(|| local::cpu_share(up.nodes))),
        node_bin: std::path::absolute(node_bin)?,
        envoy_bin,
        node_args: up.node_args,
        otlp: up.otlp,
        traces,
        trace_sampling: up.trace_sampling,
        canary: !up.no_canary,
        anonymous_role: up.anonymous_role,
        tls: up.tls,
        load_runner: match up.load_port {
            Some(port) => Some(LoadRunnerSpec {
                launcher: std::env::current_exe().context("finding strata-cluster itself")?,
                listen: format!("127.0.0.1:{port}"),
                k6: up.k6.unwrap_or_else(k6_binary),
                scripts: loadtest_dir(),
                // Set by the plan: the cluster's keys.
                auth_jwks: None,
            }),
            None => None,
        },
    };
    let layout = Layout::plan(&opts, &run)?;
    layout.save(&run)?;
    // From here on, anything that goes wrong (or a Ctrl-C) stops whatever
    // was started before the error is reported.
    let started = async {
        layout.start_all(&run)?;
        layout
            .wait_healthy(&run, Duration::from_secs(up.timeout))
            .await
    };
    let mut term = signal(SignalKind::terminate())?;
    let outcome = tokio::select! {
        r = started => r,
        _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted")),
        _ = term.recv() => Err(anyhow::anyhow!("terminated")),
    };
    if let Err(e) = outcome {
        eprintln!("strata-cluster: {e:#}");
        for name in layout.process_names() {
            eprintln!("--- {name}.log\n{}", run.log_tail(&name, 20));
        }
        run.stop_all(Duration::from_secs(5))?;
        std::process::exit(1);
    }
    let status = cluster_status(&layout).await;
    println!(
        "Strata is up: {} nodes, {}",
        layout.nodes.len(),
        status.as_deref().unwrap_or("leader unknown")
    );
    let gw = layout.gateway_url();
    println!("  gateway (REST + gRPC)  {gw}");
    if layout.console_dir.is_some() {
        println!("  console                {gw}/");
    }
    if layout.load_runner.is_some() {
        println!(
            "  load runner            {gw}/load/run (k6's REST API: {gw}/k6/v1/status, its events: {gw}/k6/events)"
        );
    }
    if let Some(ca) = layout.ca_file() {
        println!("  the gateway's CA       {}", ca.display());
        println!(
            "    export STRATA_ENDPOINT={gw} STRATA_CA_FILE={}",
            ca.display()
        );
        println!("    curl --cacert {} {gw}/v1/cluster/status", ca.display());
    }
    println!("  Envoy admin            http://{}", layout.gateway.admin);
    let (node_scheme, node_note) = if layout.tls_dir.is_some() {
        ("https", " (mutual TLS: a certificate of the cluster's CA)")
    } else {
        ("http", "")
    };
    for n in &layout.nodes {
        println!("  node {:<18}{node_scheme}://{}{node_note}", n.id, n.listen);
    }
    // With TLS, both protocols take TLS only: the gateway's with the CA,
    // the nodes' with a certificate of the cluster too.
    let tls_flags = layout
        .ca_file()
        .map(|ca| format!("--tls --cacert {} ", ca.display()))
        .unwrap_or_default();
    let gateway_note = if tls_flags.is_empty() { "" } else { " (TLS)" };
    if let Some(resp) = &layout.gateway.resp {
        let (host, port) = resp.listen.rsplit_once(':').unwrap_or((&resp.listen, ""));
        println!(
            "  gateway Redis protocol {}   redis-cli {tls_flags}-h {host} -p {port}",
            resp.listen
        );
    }
    for n in layout.nodes.iter().filter(|n| n.resp_listen.is_some()) {
        let resp = n.resp_listen.as_deref().unwrap_or_default();
        let (host, port) = resp.rsplit_once(':').unwrap_or((resp, ""));
        println!(
            "  node {} Redis protocol  {resp}   redis-cli {tls_flags}-h {host} -p {port}{node_note}",
            n.id
        );
    }
    if let Some(memcache) = &layout.gateway.memcache {
        println!("  gateway memcached      {}{gateway_note}", memcache.listen);
    }
    for n in &layout.nodes {
        if let Some(memcache) = &n.memcache_listen {
            println!("  node {} memcached       {memcache}{node_note}", n.id);
        }
    }
    if let Some(viewer) = &layout.traces {
        println!("  traces (Jaeger)        {}", viewer.ui_url());
    }
    println!("  logs                   {}", run.logs().display());
    let token = Layout::admin_token_file(&run);
    println!(
        "  requests without a token may read and write keys; an admin token (membership, \
         leadership, compaction, snapshots, backups, load runs) is in {}:",
        token.display()
    );
    println!("    export STRATA_TOKEN_FILE={}", token.display());
    layout.write_cli_env(&run)?;
    println!(
        "  the CLI, with that token: ./dev strata member list  (its settings: {})",
        Layout::cli_env_file(&run).display()
    );
    if let Ok(text) = std::fs::read_to_string(&token) {
        println!(
            "  the console's Sign in takes the admin token:\n    {}",
            text.trim()
        );
    }
    println!(
        "    curl -H \"authorization: Bearer $(cat {})\" {gw}/v1/cluster/members",
        token.display()
    );
    Ok(())
}

async fn cmd_status(a: RunDirArg) -> Result<()> {
    let run = RunDir::new(&a.run_dir);
    let layout = Layout::load(&run)?;
    let mut all_running = true;
    for name in layout.process_names() {
        match run.running_pid(&name) {
            Some(pid) => println!("  {name:<8} running  pid {pid}"),
            None => {
                all_running = false;
                println!("  {name:<8} stopped");
            }
        }
    }
    match cluster_status(&layout).await {
        Some(s) => println!("gateway {}: {s}", layout.gateway_url()),
        None => println!("gateway {}: no answer", layout.gateway_url()),
    }
    if let Some(viewer) = &layout.traces {
        println!("traces {}", viewer.ui_url());
    }
    if !all_running {
        std::process::exit(1);
    }
    Ok(())
}

async fn cmd_trace(run_dir: PathBuf, operation: String, id: Option<String>) -> Result<()> {
    let layout = Layout::load(&RunDir::new(&run_dir))?;
    let viewer = layout
        .traces
        .context("this cluster has no trace viewer (start it with `up --traces`)")?;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()?;
    let ui = viewer.ui_url();
    let request = match &id {
        Some(id) => http.get(format!("{ui}api/traces/{id}")),
        None => http.get(format!("{ui}api/traces")).query(&[
            ("service", "strata-node"),
            ("operation", operation.as_str()),
            ("limit", "50"),
        ]),
    };
    let answer: serde_json::Value = request
        .send()
        .await
        .with_context(|| format!("asking the trace viewer at {ui}"))?
        .json()
        .await?;
    // The latest: the trace whose first span started last.
    let first_start = |t: &serde_json::Value| {
        t["spans"]
            .as_array()
            .and_then(|s| s.iter().filter_map(|s| s["startTime"].as_u64()).min())
            .unwrap_or(0)
    };
    let trace = answer["data"]
        .as_array()
        .and_then(|traces| traces.iter().max_by_key(|t| first_start(t)))
        .with_context(|| match &id {
            Some(id) => format!("the trace viewer has no trace {id}"),
            None => format!("the trace viewer has no trace with a node span `{operation}`"),
        })?;
    print!("{}", strata_harness::jaeger::format_trace(trace)?);
    Ok(())
}

/// "leader N (term T)" as the gateway reports it.
async fn cluster_status(layout: &Layout) -> Option<String> {
    let status: serde_json::Value = layout
        .http_client(Duration::from_secs(2))
        .ok()?
        .get(format!("{}/v1/cluster/status", layout.gateway_url()))
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    Some(format!(
        "leader {} (term {})",
        status.get("leader_id")?,
        status.get("term")?
    ))
}
