//! The `strata-cluster` launcher as the recipes and scripts use it: up,
//! status, stopping and restarting a node, down, and a start that fails.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use strata_harness::{envoy_binary, free_port, workspace_binary};

fn launcher(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata-cluster"))
        .args(args)
        .env("STRATA_NODE_BIN", workspace_binary("strata-node").unwrap())
        .output()
        .expect("strata-cluster runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The command line of process `pid`, arguments separated by spaces.
fn cmdline(pid: u32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&raw).replace('\0', " ")
}

/// Pids of live processes whose command line mentions `dir`.
fn processes_under(dir: &Path) -> Vec<u32> {
    let needle = dir.display().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| cmdline(pid).contains(&needle))
        .collect()
}

/// `up` of one node into `run`, on free ports, with `envoy` as Envoy.
fn up(run: &str, envoy: &str) -> Output {
    up_on(run, envoy, [(); 3].map(|_| free_port().to_string()))
}

/// `up` of one node into `run` on the ports given: the node's (the base
/// port), the gateway's and Envoy's admin.
fn up_on(run: &str, envoy: &str, ports: [String; 3]) -> Output {
    launcher(&[
        "up",
        "--run-dir",
        run,
        "--nodes",
        "1",
        "--base-port",
        &ports[0],
        "--gateway-port",
        &ports[1],
        "--admin-port",
        &ports[2],
        "--envoy",
        envoy,
        "--timeout",
        "30",
    ])
}

/// Asserts that `out` exited successfully exactly when `success` says so,
/// and that its output contains `says`.
fn assert_outcome(out: &Output, success: bool, says: &str) {
    let text = text(out);
    assert_eq!(out.status.success(), success, "{}: {text}", out.status);
    assert!(text.contains(says), "expected {says:?} in: {text}");
}

/// What `up` prints and writes for the CLI and the console: the admin
/// token itself (for the console's Sign in), and the CLI's settings file,
/// with which the CLI does what needs the admin role (a backup) where
/// without a token it is refused.
fn the_cli_finds_the_admin_token(run: &Path, up_text: &str) {
    let token = std::fs::read_to_string(run.join("admin.token")).unwrap();
    assert!(
        up_text.contains(token.trim()),
        "the admin token is printed: {up_text}"
    );
    let settings = std::fs::read_to_string(run.join("cli.env")).unwrap();
    let cli = workspace_binary("strata").unwrap();
    let backup = run.join("backup.strata");
    let save = |env: &[(String, String)]| {
        let mut cmd = Command::new(&cli);
        cmd.args(["snapshot", "save"]).arg(&backup);
        for var in [
            "STRATA_ENDPOINT",
            "STRATA_TOKEN",
            "STRATA_TOKEN_FILE",
            "STRATA_CA_FILE",
        ] {
            cmd.env_remove(var);
        }
        cmd.envs(env.iter().cloned());
        cmd.output().expect("the CLI runs")
    };
    let vars: Vec<(String, String)> = settings
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert!(
        vars.iter()
            .any(|(k, v)| k == "STRATA_TOKEN_FILE" && v.ends_with("admin.token")),
        "{settings}"
    );
    let endpoint: Vec<(String, String)> = vars
        .iter()
        .filter(|(k, _)| k == "STRATA_ENDPOINT")
        .cloned()
        .collect();
    let refused = save(&endpoint);
    assert_outcome(&refused, false, "UNAUTHENTICATED");
    assert!(!backup.exists(), "a refused backup wrote a file");
    assert_outcome(&save(&vars), true, "");
    assert!(backup.exists(), "the backup was written");
}

#[test]
fn up_status_stop_start_and_down_leave_nothing_running() {
    // Proves the launcher's life cycle: `up` returns with the gateway
    // routing to a leader, `status` sees every process, a killed node shows
    // as stopped and comes back with `start-node` (also with `--join`), and
    // `down` stops every process it started.
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let run_s = run.display().to_string();
    let envoy = envoy_binary().display().to_string();
    let started = up(&run_s, &envoy);
    assert_outcome(&started, true, "Strata is up: 1 nodes, leader 1");
    let up_text = text(&started);
    assert!(
        run.join("envoy.yaml").exists(),
        "the gateway config is generated"
    );
    the_cli_finds_the_admin_token(&run, &up_text);

    let status = launcher(&["status", "--run-dir", &run_s]);
    assert_outcome(&status, true, "node1    running");

    let stop = launcher(&["stop-node", "--run-dir", &run_s, "--id", "1", "--kill"]);
    assert_outcome(&stop, true, "");
    // A stopped node fails the status.
    let status = launcher(&["status", "--run-dir", &run_s]);
    assert_outcome(&status, false, "node1    stopped");

    let start = launcher(&["start-node", "--run-dir", &run_s, "--id", "1"]);
    assert_outcome(&start, true, "");
    // A running node is not started twice.
    let again = launcher(&["start-node", "--run-dir", &run_s, "--id", "1"]);
    assert_outcome(&again, false, "");

    // A member removed after losing its disk comes back under its old id:
    // `start-node --join` of an existing node starts it asking to join.
    let stop = launcher(&["stop-node", "--run-dir", &run_s, "--id", "1", "--kill"]);
    assert!(stop.status.success(), "{}", text(&stop));
    let rejoin = launcher(&["start-node", "--run-dir", &run_s, "--id", "1", "--join"]);
    assert!(rejoin.status.success(), "{}", text(&rejoin));
    // A process that has only just been started may show an empty command
    // line while the kernel finishes its exec: look again for a while.
    let joining = |lines: &[String]| {
        lines
            .iter()
            .any(|line| line.contains("--id 1 ") && line.split(' ').any(|a| a == "--join"))
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut lines: Vec<String> = processes_under(&run).into_iter().map(cmdline).collect();
    while !joining(&lines) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        lines = processes_under(&run).into_iter().map(cmdline).collect();
    }
    assert!(joining(&lines), "node 1 runs with --join: {lines:#?}");

    assert_eq!(processes_under(&run).len(), 2, "node and Envoy run");
    let down = launcher(&["down", "--run-dir", &run_s]);
    assert_outcome(&down, true, "stopped envoy, node1");
    assert_eq!(processes_under(&run), Vec::<u32>::new());
}

#[test]
fn a_failed_start_stops_what_it_started() {
    // Proves `up` stops the node it already started when Envoy dies at
    // once (here: a binary that exits), and says why.
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    assert_outcome(
        &up(&run.display().to_string(), "/bin/false"),
        false,
        "envoy exited",
    );
    assert_eq!(processes_under(&run), Vec::<u32>::new());
}

#[test]
fn a_node_started_with_join_reaches_the_gateway_without_regenerating_it() {
    // Proves the operator's way to grow a local cluster: `start-node --id 2
    // --join` next to a running one, and the gateway routes to node 2 once
    // it is a member, learned from node 1 (EDS): Envoy is neither
    // restarted nor given another config.
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let run_s = run.display().to_string();
    let envoy = envoy_binary().display().to_string();
    let ports = [(); 3].map(|_| free_port().to_string());
    let (base, admin) = (ports[0].parse::<u16>().unwrap(), ports[2].clone());
    assert_outcome(&up_on(&run_s, &envoy, ports), true, "Strata is up");
    let config = std::fs::read(run.join("envoy.yaml")).unwrap();
    let envoy_pids = || -> Vec<u32> {
        processes_under(&run)
            .into_iter()
            .filter(|&pid| cmdline(pid).contains("envoy.yaml"))
            .collect()
    };
    let before = envoy_pids();

    let join = launcher(&["start-node", "--run-dir", &run_s, "--id", "2", "--join"]);
    assert!(join.status.success(), "{}", text(&join));
    let node2 = format!("nodes_any::127.0.0.1:{}::health_flags::healthy", base + 1);
    let clusters = || {
        Command::new("curl")
            .args([
                "-s",
                "--max-time",
                "2",
                &format!("http://127.0.0.1:{admin}/clusters"),
            ])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !clusters().contains(&node2) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let seen = clusters();
    let down = || launcher(&["down", "--run-dir", &run_s]);
    if !seen.contains(&node2) {
        down();
        panic!("Envoy never routed to node 2: {seen}");
    }
    let after = envoy_pids();
    let same_config = std::fs::read(run.join("envoy.yaml")).unwrap() == config;
    assert_outcome(&down(), true, "node2");
    assert_eq!(before, after, "Envoy was restarted");
    assert_eq!(before.len(), 1, "{before:?}");
    assert!(same_config, "Envoy's config was written again");
}
