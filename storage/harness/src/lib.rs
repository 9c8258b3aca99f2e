//! Strata's one cluster launcher: it knows how to start storage nodes (which
//! serve the console's bundle themselves) and Envoy on 127.0.0.1 ([`command`], [`gateway`]).
//! Two front ends use it:
//!
//! - [`Cluster`]: a cluster owned by a test process (the multi-node tests in
//!   `tests/`, the `failover-probe` binary), killed when dropped;
//! - [`run_dir::RunDir`] and [`local`]: detached processes recorded by pid in
//!   a run directory, behind the `strata-cluster` binary (`./dev up`, the
//!   smoke, browser and bench recipes, the load-test scripts), with the
//!   trace viewer beside it on request (`--traces`). Its `command`
//!   subcommand prints command lines for the chaos harness, which runs the
//!   processes itself between its fault-injecting proxies.
//!
//! The node binary comes from `STRATA_NODE_BIN` (set by `./dev test`) or
//! from the target directory next to the running binary; Envoy from
//! `STRATA_ENVOY` or `envoy` on the PATH; the trace viewer ([`jaeger`]) from
//! `STRATA_JAEGER` or `jaeger` on the PATH.

#![forbid(unsafe_code)]

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

pub mod auth;
mod cluster;
pub mod command;
pub mod gateway;
pub mod jaeger;
pub mod load_runner;
pub mod local;
mod operator;
pub mod otlp;
pub mod run_dir;
pub mod tls;

pub use cluster::{Cluster, NodeSlot};

/// The repository the harness reads the gateway generator and the load
/// scenarios from: `STRATA_REPO_ROOT` (set by `./dev`, since a build cached
/// outside the clone may come from another clone), else the one it was
/// built from.
fn repo_root() -> PathBuf {
    std::env::var_os("STRATA_REPO_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

/// A binary of this workspace: `strata-node` or `strata`.
pub fn workspace_binary(name: &str) -> Result<PathBuf> {
    if name == "strata-node"
        && let Some(p) = std::env::var_os("STRATA_NODE_BIN")
    {
        return Ok(PathBuf::from(p));
    }
    // Test binaries live in target/<profile>/deps; the others in target/<profile>.
    let exe = std::env::current_exe()?;
    let mut dir = exe.parent().context("binary has no directory")?;
    if dir.ends_with("deps") {
        dir = dir
            .parent()
            .context("test binary has no target directory")?;
    }
    let p = dir.join(name);
    if !p.exists() {
        bail!(
            "{} is missing: run `cargo build --bins` first (./dev test does)",
            p.display()
        );
    }
    Ok(p)
}

/// The value of `series` (its name and labels exactly as the node writes
/// them, e.g. `strata_raft_events_total{kind="snapshot_sent"}`) in a
/// `/metrics` text; zero when absent, as a counter not yet created is.
pub fn metric_value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

/// Envoy: `STRATA_ENVOY`, else `envoy` on the PATH.
pub fn envoy_binary() -> PathBuf {
    std::env::var_os("STRATA_ENVOY")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("envoy"))
}

/// k6: `STRATA_K6`, else `k6` on the PATH (`./dev setup-k6` puts it in the
/// tools folder, which the recipes put on the PATH).
pub fn k6_binary() -> PathBuf {
    std::env::var_os("STRATA_K6")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("k6"))
}

/// The bundled k6 scenarios (`loadtest/`).
pub fn loadtest_dir() -> PathBuf {
    repo_root().join("loadtest")
}

/// The trace viewer, Jaeger: `STRATA_JAEGER`, else `jaeger` on the PATH
/// (`./dev setup-jaeger` puts it in the tools folder, which the recipes
/// put on the PATH).
pub fn jaeger_binary() -> PathBuf {
    std::env::var_os("STRATA_JAEGER")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("jaeger"))
}

/// A free port on 127.0.0.1 for a child to listen on. It is taken from
/// below the kernel's ephemeral range (`ip_local_port_range`), where the
/// outgoing connections of the processes under test get their local ports:
/// a port from inside it could be taken by a node's connection to a peer in
/// the moment between this check and the child's bind, and the child would
/// then fail to start. The port is checked free by binding it, and never
/// returned twice by this process, so tests in parallel threads, and the
/// nodes of one cluster, cannot be given the same one.
pub fn free_port() -> u16 {
    use std::hash::{BuildHasher, Hasher};
    static GIVEN: std::sync::Mutex<BTreeSet<u16>> = std::sync::Mutex::new(BTreeSet::new());
    let (lo, hi) = listening_ports();
    let random = std::collections::hash_map::RandomState::new();
    for attempt in 0u64.. {
        let mut h = random.build_hasher();
        h.write_u64(attempt);
        h.write_u32(std::process::id());
        let port = lo + (h.finish() % u64::from(hi - lo)) as u16;
        let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
        if given.contains(&port) || TcpListener::bind(("127.0.0.1", port)).is_err() {
            continue;
        }
        given.insert(port);
        return port;
    }
    unreachable!("the loop returns a port")
}

/// `[lo, hi)`: the ports tests listen on: `STRATA_PORT_RANGE` (`LO-HI`,
/// both included) when set, so runs sharing a host can be kept apart, else
/// the 12,000 below the ephemeral range (32768 by default on Linux).
fn listening_ports() -> (u16, u16) {
    if let Some((lo, hi)) = std::env::var("STRATA_PORT_RANGE")
        .ok()
        .and_then(|r| parse_port_range(&r))
    {
        return (lo, hi);
    }
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
        .filter(|low| *low >= 14_000)
        .unwrap_or(32_768);
    (ephemeral_low - 12_000, ephemeral_low)
}

/// `LO-HI` (both included) as `[lo, hi)`; `None` unless `lo <= hi`.
fn parse_port_range(text: &str) -> Option<(u16, u16)> {
    let (lo, hi) = text.trim().split_once('-')?;
    let (lo, hi): (u16, u16) = (lo.trim().parse().ok()?, hi.trim().parse().ok()?);
    (lo > 0 && lo <= hi && hi < u16::MAX).then_some((lo, hi + 1))
}

#[cfg(test)]
mod tests {
    use super::parse_port_range;

    #[test]
    fn port_range_includes_both_ends_and_refuses_nonsense() {
        assert_eq!(parse_port_range("22500-22999"), Some((22500, 23000)));
        assert_eq!(parse_port_range(" 7000 - 7000 "), Some((7000, 7001)));
        assert_eq!(parse_port_range("23000-22500"), None);
        assert_eq!(parse_port_range("22500"), None);
        assert_eq!(parse_port_range("0-10"), None);
    }
}
