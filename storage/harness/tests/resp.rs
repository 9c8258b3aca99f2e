//! The Redis protocol on a three-node cluster of real processes, driven by
//! the Redis project's own tools from Debian's `redis-tools`: `redis-cli`
//! for commands and scans, `redis-benchmark` for load. Every node serves
//! RESP (`--resp-listen`); a follower forwards writes to the leader.

use std::process::Command;
use std::time::Duration;

use strata_harness::Cluster;

/// Runs a `redis-tools` program; its standard output, or a failure naming
/// what went wrong.
fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!("{program} could not run ({e}): `./dev setup-system` installs redis-tools")
        });
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `redis-cli` against `addr` (`host:port`), one command.
fn cli(addr: &str, command: &[&str]) -> String {
    let (host, port) = addr.rsplit_once(':').unwrap();
    let mut args = vec!["-h", host, "-p", port];
    args.extend_from_slice(command);
    run("redis-cli", &args).trim_end().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cli_reads_and_writes_on_every_node_and_scans() {
    // Proves: redis-cli's SET on a follower is forwarded and applied, its
    // GET on every node reads it (linearizable reads anywhere), DEL
    // answers the count, and `redis-cli --scan --pattern` lists exactly
    // the matching keys.
    let c = Cluster::start(3).await.unwrap();
    let leader = c.wait_leader(Duration::from_secs(30)).await.unwrap();
    let follower = c.node_ids().into_iter().find(|&id| id != leader).unwrap();
    assert_eq!(
        cli(&c.resp_addr(follower), &["SET", "greeting", "hello"]),
        "OK"
    );
    for id in c.node_ids() {
        assert_eq!(
            cli(&c.resp_addr(id), &["GET", "greeting"]),
            "hello",
            "node {id}"
        );
    }
    for i in 0..25 {
        let key = format!("scan:{i:02}");
        assert_eq!(cli(&c.resp_addr(leader), &["SET", &key, "x"]), "OK");
    }
    assert_eq!(cli(&c.resp_addr(leader), &["SET", "other", "y"]), "OK");
    let scanned = run(
        "redis-cli",
        &[
            "-h",
            "127.0.0.1",
            "-p",
            c.resp_addr(follower).rsplit_once(':').unwrap().1,
            "--scan",
            "--pattern",
            "scan:*",
        ],
    );
    let mut keys: Vec<&str> = scanned.lines().collect();
    keys.sort_unstable();
    let want: Vec<String> = (0..25).map(|i| format!("scan:{i:02}")).collect();
    assert_eq!(keys, want);
    assert_eq!(
        cli(&c.resp_addr(follower), &["DEL", "greeting", "missing"]),
        "1"
    );
    assert_eq!(cli(&c.resp_addr(leader), &["EXISTS", "greeting"]), "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_benchmark_sets_and_gets_without_an_error() {
    // Proves: redis-benchmark's SET and GET tests (50 clients, pipelining
    // off) against the leader's RESP port finish every request without an
    // error reply, and what it set is in the store.
    let c = Cluster::start(3).await.unwrap();
    let leader = c.wait_leader(Duration::from_secs(30)).await.unwrap();
    let addr = c.resp_addr(leader);
    let (host, port) = addr.rsplit_once(':').unwrap();
    let out = run(
        "redis-benchmark",
        &[
            "-h", host, "-p", port, "-t", "set,get", "-n", "2000", "-c", "50", "-r", "1000",
            "--csv",
        ],
    );
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("\"SET\"") || l.starts_with("\"GET\""))
        .collect();
    assert_eq!(rows.len(), 2, "a SET row and a GET row: {out}");
    for row in rows {
        let rps: f64 = row
            .split(',')
            .nth(1)
            .unwrap()
            .trim_matches('"')
            .parse()
            .unwrap();
        assert!(rps > 0.0, "{row}");
    }
    assert!(!out.contains("ERR") && !out.contains("Error"), "{out}");
    let scanned = run(
        "redis-cli",
        &["-h", host, "-p", port, "--scan", "--pattern", "key:*"],
    );
    assert!(
        scanned.lines().count() > 0,
        "redis-benchmark's keys are there"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cli_through_the_gateway_reaches_the_leader_and_a_new_one_after_a_kill() {
    // Proves: Envoy's RESP listener proxies redis-cli to the leader (its
    // SET is applied, INFO says leader); with the leader killed, a new
    // connection through the gateway writes again once a new leader is
    // elected, and reads what was written before.
    let mut c = Cluster::start(3).await.unwrap();
    c.wait_gateway_leader(Duration::from_secs(30))
        .await
        .unwrap();
    let leader = c.wait_leader(Duration::from_secs(30)).await.unwrap();
    let gateway = c.gateway_resp_addr();
    assert_eq!(cli(&gateway, &["SET", "before", "1"]), "OK");
    assert!(
        cli(&gateway, &["INFO"]).contains("raft_role:leader"),
        "the gateway's RESP connection goes to the leader"
    );
    c.kill(leader).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (host, port) = gateway.rsplit_once(':').unwrap();
        let out = Command::new("redis-cli")
            .args(["-h", host, "-p", port, "SET", "after", "2"])
            .output()
            .unwrap();
        if String::from_utf8_lossy(&out.stdout).trim() == "OK" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no write through the gateway within 30 s of the kill: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(cli(&gateway, &["MGET", "before", "after"]), "1\n2");
}
