//! Command-line options.

use std::time::Duration;

use clap::Parser;

use crate::distribution::DistributionKind;
use crate::target::{ReadConsistency, TargetKind};
use crate::workload::WorkloadKind;

/// YCSB-style load generator for Strata (gRPC or REST) and etcd.
///
/// Examples:
///   strata-bench --workload a --records 10000 --clients 64 --duration 20s
///   strata-bench --target rest --workload b --rate 2000 --duration 30s --json out.json
///   strata-bench --target etcd --endpoints 127.0.0.1:2379 --workload put --no-load --ops 20000
///   strata-bench --target etcd --endpoints 127.0.0.1:2379,127.0.0.1:2381 --etcd-leader-only --workload put
#[derive(Debug, Parser)]
#[command(name = "strata-bench", version, verbatim_doc_comment)]
pub struct Args {
    #[arg(long, value_enum, default_value = "grpc")]
    pub target: TargetKind,
    /// Comma-separated endpoints. Strata: `http://host:port` (the gateway or a node); etcd: `host:port`.
    #[arg(long, value_delimiter = ',')]
    pub endpoints: Vec<String>,
    /// etcd only: ask every endpoint for its status and send all requests to the current leader
    /// (instead of balancing over all endpoints, which forwards most writes through a follower).
    #[arg(long)]
    pub etcd_leader_only: bool,
    /// gRPC only: every write carries a request id of its own (as `Client::with_request_ids`
    /// sends them), so the cost of exactly-once writes is measured.
    #[arg(long)]
    pub request_ids: bool,
    #[arg(long, value_enum, default_value = "a")]
    pub workload: WorkloadKind,
    /// Key distribution; default: the workload's own (zipfian, latest for D, uniform for put/get).
    #[arg(long, value_enum)]
    pub distribution: Option<DistributionKind>,
    /// Zipfian skew.
    #[arg(long, default_value_t = 0.99)]
    pub theta: f64,
    /// Records loaded before the run (and the key space of reads and updates).
    #[arg(long, default_value_t = 10_000)]
    pub records: u64,
    #[arg(long, default_value_t = 8)]
    pub key_size: usize,
    #[arg(long, default_value_t = 256)]
    pub value_size: usize,
    /// Leading characters of every key (URL-safe ASCII).
    #[arg(long, default_value = "k")]
    pub key_prefix: String,
    /// Concurrent clients (workers).
    #[arg(long, default_value_t = 16)]
    pub clients: usize,
    /// Connections shared by the clients (default: min(clients, 16)).
    #[arg(long)]
    pub connections: Option<usize>,
    /// Open-loop target rate in requests/s over all clients; 0 = closed loop (as fast as answers come).
    #[arg(long, default_value_t = 0.0)]
    pub rate: f64,
    /// Stop after this many requests (default: only the duration bounds the run).
    #[arg(long)]
    pub ops: Option<u64>,
    /// Upper bound of the run, e.g. `30s`, `500ms`, `2m`.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub duration: Duration,
    #[arg(long, value_enum, default_value = "linearizable")]
    pub read_consistency: ReadConsistency,
    /// Longest scan of workload E (scan lengths are uniform in [1, max]).
    #[arg(long, default_value_t = 100)]
    pub max_scan_len: u32,
    /// Keys per request of `--workload batch`.
    #[arg(long, default_value_t = 100)]
    pub batch_size: usize,
    /// Skip the load phase (the records already exist, or the workload only writes).
    #[arg(long)]
    pub no_load: bool,
    /// Only load the records, then exit (the summary has the load figures and no run).
    #[arg(long, conflicts_with = "no_load")]
    pub load_only: bool,
    /// Writers of the load phase.
    #[arg(long, default_value_t = 64)]
    pub load_clients: usize,
    /// Upper bound of the load phase.
    #[arg(long, default_value = "120s", value_parser = parse_duration)]
    pub load_timeout: Duration,
    /// Client-side timeout of one request.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub request_timeout: Duration,
    /// Write the JSON summary here (`-` = stdout, instead of the human summary).
    #[arg(long)]
    pub json: Option<String>,
    #[arg(long)]
    pub no_progress: bool,
    /// Tokio worker threads of the bench process.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

impl Args {
    pub fn endpoints(&self) -> Vec<String> {
        if !self.endpoints.is_empty() {
            return self.endpoints.clone();
        }
        match self.target {
            TargetKind::Grpc | TargetKind::Rest => vec!["http://127.0.0.1:8080".to_string()],
            TargetKind::Etcd => vec!["127.0.0.1:2379".to_string()],
        }
    }

    pub fn connections(&self) -> usize {
        self.connections.unwrap_or(self.clients.min(16)).max(1)
    }
}

/// Parses `250ms`, `30s`, `2m` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s
        .find(|c: char| c.is_ascii_alphabetic())
        .map(|i| s.split_at(i))
        .unwrap_or((s, "s"));
    let n: f64 = num
        .parse()
        .map_err(|_| format!("bad duration {s:?} (try 30s, 500ms, 2m)"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        _ => return Err(format!("bad duration unit in {s:?} (ms, s or m)")),
    };
    if !(secs.is_finite() && secs > 0.0) {
        return Err(format!("duration must be positive: {s:?}"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        // Proves the accepted duration spellings.
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("0s").is_err() && parse_duration("5h").is_err());
    }
}
