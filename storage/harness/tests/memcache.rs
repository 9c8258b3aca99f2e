//! The memcached text protocol on a three-node cluster of real processes,
//! driven by libmemcached, the C client library most memcached clients
//! wrap, through its tools from Debian's `libmemcached-tools`:
//! `memccapable` (the protocol conformance suite), `memccp`, `memccat`,
//! `memcexist`, `memcrm` and `memcslap` (load). Every node serves the
//! protocol (`--memcache-listen`); a follower forwards writes to the leader.

use std::collections::BTreeSet;
use std::process::{Command, Output};
use std::time::Duration;

use strata_harness::Cluster;

/// Runs a libmemcached tool, whatever its exit status.
fn tool(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "{program} could not run ({e}): `./dev setup-system` installs libmemcached-tools"
            )
        })
}

/// Runs a libmemcached tool that must succeed; its standard output.
fn run(program: &str, args: &[&str]) -> String {
    let out = tool(program, args);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn servers(addr: &str) -> String {
    format!("--servers={addr}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memcapable_passes_on_a_follower_but_for_flush_all() {
    // Proves: memcached's own conformance suite for the text protocol
    // (`memccapable -a`: set, get, gets, add, replace, cas, delete, incr,
    // decr, append, prepend, each with and without noreply, verbosity,
    // version, quit, stats) passes against a follower, every write going
    // through the leader, except its two flush_all tests: the node refuses
    // flush_all (it would delete every key of the cluster).
    let c = Cluster::start(3).await.unwrap();
    let leader = c.wait_leader(Duration::from_secs(30)).await.unwrap();
    let follower = c.node_ids().into_iter().find(|&id| id != leader).unwrap();
    let addr = c.memcache_addr(follower);
    let (host, port) = addr.rsplit_once(':').unwrap();
    let out = tool("memccapable", &["-a", "-h", host, "-p", port, "-t", "10"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let results = memcapable_results(&stdout);
    let failed: BTreeSet<&str> = results
        .iter()
        .filter(|(_, passed)| !passed)
        .map(|(name, _)| name.as_str())
        .collect();
    let report = format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        failed,
        BTreeSet::from(["ascii flush", "ascii flush noreply"]),
        "{report}"
    );
    assert_eq!(results.len(), 27, "every test ran: {report}");
}

/// memccapable's report on its standard output: each test's name padded
/// to 40 columns, then `[pass]` and a newline for a test that passed (a
/// failure is told on standard error).
fn memcapable_results(stdout: &str) -> Vec<(String, bool)> {
    const NAME_COLUMNS: usize = 40;
    let mut rest = stdout;
    let mut results = Vec::new();
    while rest.len() >= NAME_COLUMNS && rest.starts_with("ascii ") {
        let (name, tail) = rest.split_at(NAME_COLUMNS);
        let passed = tail.starts_with("[pass]");
        rest = if passed {
            tail["[pass]".len()..].trim_start_matches('\n')
        } else {
            tail
        };
        results.push((name.trim().to_string(), passed));
    }
    results
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn libmemcached_tools_write_on_a_follower_and_read_on_every_node() {
    // Proves: a file memccp stores through a follower is applied and
    // memccat reads it back whole on every node (linearizable reads
    // anywhere); memcexist sees it, memcrm deletes it, and then no node
    // has it. The value is larger than a TCP segment (300 KiB).
    let c = Cluster::start(3).await.unwrap();
    let leader = c.wait_leader(Duration::from_secs(30)).await.unwrap();
    let follower = c.node_ids().into_iter().find(|&id| id != leader).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("payload.bin");
    let payload: Vec<u8> = (0..300 * 1024).map(|i| b'a' + (i % 26) as u8).collect();
    std::fs::write(&file, &payload).unwrap();
    run(
        "memccp",
        &[&servers(&c.memcache_addr(follower)), file.to_str().unwrap()],
    );
    for id in c.node_ids() {
        let out = tool("memccat", &[&servers(&c.memcache_addr(id)), "payload.bin"]);
        assert!(out.status.success(), "node {id}: {out:?}");
        // memccat ends each value it prints with a newline.
        assert!(
            out.stdout.strip_suffix(b"\n") == Some(&payload[..]),
            "node {id} reads the value whole"
        );
    }
    run(
        "memcexist",
        &[&servers(&c.memcache_addr(leader)), "payload.bin"],
    );
    run(
        "memcrm",
        &[&servers(&c.memcache_addr(follower)), "payload.bin"],
    );
    for id in c.node_ids() {
        let out = tool(
            "memcexist",
            &[&servers(&c.memcache_addr(id)), "payload.bin"],
        );
        assert!(!out.status.success(), "node {id} no longer has the key");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memcslap_sets_and_gets_through_the_gateway_without_an_error() {
    // Proves: libmemcached's load tool, 8 connections through Envoy's
    // memcached listener, runs its set and get tests to the end with no
    // failed request.
    let c = Cluster::start(3).await.unwrap();
    c.wait_gateway_leader(Duration::from_secs(30))
        .await
        .unwrap();
    let gateway = servers(&c.gateway_memcache_addr());
    for test in ["set", "get"] {
        let out = run(
            "memcslap",
            &[
                &gateway,
                &format!("--test={test}"),
                "--concurrency=8",
                "--execute-number=200",
                "--initial-load=200",
            ],
        );
        assert!(
            !out.to_lowercase().contains("fail"),
            "memcslap --test={test}: {out}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_serves_memcached_before_and_after_the_leader_is_killed() {
    // Proves: Envoy's memcached listener proxies a client to the leader;
    // with the leader killed, a new connection through the gateway writes
    // again once a new leader is elected, and reads what was written
    // before.
    let mut c = Cluster::start(3).await.unwrap();
    c.wait_gateway_leader(Duration::from_secs(30))
        .await
        .unwrap();
    let leader = c.wait_leader(Duration::from_secs(30)).await.unwrap();
    let gateway = servers(&c.gateway_memcache_addr());
    let dir = tempfile::tempdir().unwrap();
    let before = dir.path().join("before");
    let after = dir.path().join("after");
    std::fs::write(&before, b"1").unwrap();
    std::fs::write(&after, b"2").unwrap();
    run("memccp", &[&gateway, before.to_str().unwrap()]);
    c.kill(leader).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let out = tool("memccp", &[&gateway, after.to_str().unwrap()]);
        if out.status.success() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no write through the gateway within 30 s of the kill: {out:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(run("memccat", &[&gateway, "before", "after"]), "1\n2\n");
}
