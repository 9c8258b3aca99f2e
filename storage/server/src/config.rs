//! Node configuration: command-line flags, each also an environment variable.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

/// One storage node of a Strata cluster.
#[derive(Debug, Clone, Parser)]
#[command(name = "strata-node", version, about)]
pub struct NodeConfig {
    /// This node's id (non-zero, unique in the cluster).
    #[arg(long, env = "STRATA_ID")]
    pub id: u64,
    /// Address to listen on for REST, gRPC and raft traffic.
    #[arg(long, env = "STRATA_LISTEN", default_value = "127.0.0.1:7001")]
    pub listen: SocketAddr,
    /// Also serve the Redis protocol (RESP2) on this address: GET, SET,
    /// DEL, EXISTS, MGET, MSET, SCAN and more over the same keys, with the
    /// same consistency and durability (see docs/resp.md). Off when unset.
    #[arg(long, env = "STRATA_RESP_LISTEN")]
    pub resp_listen: Option<SocketAddr>,
    /// How long a RESP request may take to arrive from its first byte; a
    /// connection still sending one then is closed with an error.
    #[arg(long, env = "STRATA_RESP_FRAME_TIMEOUT_MS", default_value_t = 60_000)]
    pub resp_frame_timeout_ms: u64,
    /// How many RESP connections the node holds at once; one more is
    /// answered `-ERR max number of clients reached` and closed (Redis's
    /// maxclients).
    #[arg(long, env = "STRATA_RESP_MAX_CONNECTIONS", default_value_t = 10_000)]
    pub resp_max_connections: usize,
    /// Also serve the memcached text protocol on this address: get, gets,
    /// set, add, replace, cas, delete, incr, decr, touch, stats and more
    /// over the same keys, with the same consistency and durability (see
    /// docs/memcached.md). Off when unset.
    #[arg(long, env = "STRATA_MEMCACHE_LISTEN")]
    pub memcache_listen: Option<SocketAddr>,
    /// How long a memcached request may take to arrive from its first
    /// byte; a connection still sending one then is closed with an error.
    #[arg(
        long,
        env = "STRATA_MEMCACHE_FRAME_TIMEOUT_MS",
        default_value_t = 60_000
    )]
    pub memcache_frame_timeout_ms: u64,
    /// How many memcached connections the node holds at once; one more is
    /// answered `SERVER_ERROR Too many open connections` and closed
    /// (memcached's -c).
    #[arg(long, env = "STRATA_MEMCACHE_MAX_CONNECTIONS", default_value_t = 1024)]
    pub memcache_max_connections: usize,
    /// Address peers and clients use to reach this node (defaults to the
    /// entry for this id in --peers, then to --listen).
    #[arg(long, env = "STRATA_ADVERTISE")]
    pub advertise: Option<String>,
    /// Every member of the initial cluster as `id=host:port`, comma separated.
    #[arg(long, env = "STRATA_PEERS", value_delimiter = ',', value_parser = parse_peer)]
    pub peers: Vec<(u64, String)>,
    /// Directory for the raft log and the engine.
    #[arg(long, env = "STRATA_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,
    /// Join a running cluster instead of bootstrapping one: the node asks
    /// the members in --peers to add it (as a learner) and catches up by
    /// snapshot. Promote it to a voter afterwards.
    #[arg(long, env = "STRATA_JOIN")]
    pub join: bool,
    /// Raft group id of the node's single group.
    #[arg(long, env = "STRATA_GROUP_ID", default_value_t = 1)]
    pub group_id: u64,
    /// Threads serving the network (REST, gRPC, raft transport); defaults to
    /// one per CPU and at least 4. Nodes sharing a
    /// host may split its CPUs between them.
    #[arg(long, env = "STRATA_IO_THREADS", value_parser = clap::value_parser!(u16).range(1..))]
    pub io_threads: Option<u16>,
    #[command(flatten)]
    pub limits: Limits,
    #[command(flatten)]
    pub timing: Timing,
    /// Compact the raft log once this many applied entries are in it.
    #[arg(long, env = "STRATA_COMPACT_LOG_ENTRIES", default_value_t = 20_000)]
    pub compact_log_entries: u64,
    /// Entries kept behind the applied index at compaction; a follower
    /// further behind catches up by snapshot.
    #[arg(long, env = "STRATA_COMPACT_KEEP_ENTRIES", default_value_t = 5_000)]
    pub compact_keep_entries: u64,
    /// Raft entries of change history kept for watches: a watch can start
    /// (or resume) from any of the last this many indexes. The history
    /// costs writes (every change is written twice); 0 keeps none and
    /// turns watches off.
    #[arg(long, env = "STRATA_WATCH_HISTORY", default_value_t = strata_raft::DEFAULT_HISTORY_ENTRIES)]
    pub watch_history: u64,
    /// Compact the raft log also once its entries weigh this many MiB
    /// (batches of large values reach it before the entry count); the raft
    /// log's uncompacted entries are also held in memory, so this bounds it.
    #[arg(long, env = "STRATA_COMPACT_LOG_MB", default_value_t = 64)]
    pub compact_log_mb: u64,
    /// After the disk filled up, the node restarts itself (and so recovers)
    /// once this many MiB can be written to its data directory again; 0
    /// leaves the restart to the operator.
    #[arg(long, env = "STRATA_RESUME_FREE_MB", default_value_t = 16)]
    pub resume_free_mb: u64,
    /// Refuse a received snapshot whose files weigh more than this many
    /// MiB, before staging any of it: a snapshot must not fill the disk.
    #[arg(long, env = "STRATA_MAX_SNAPSHOT_MB", default_value_t = 64 << 10)]
    pub max_snapshot_mb: u64,
    /// Serve the web console's built bundle (`console/dist`) from this
    /// directory at `/`, beside the API; the gateway routes `/` to any node.
    #[arg(long, env = "STRATA_CONSOLE_DIR")]
    pub console_dir: Option<PathBuf>,
    /// The gateway's (Envoy's) admin address, `host:port`: the stats this
    /// node gathers then carry what the gateway answered (its 503s and
    /// 504s, from Envoy's own counters).
    #[arg(long, env = "STRATA_GATEWAY_ADMIN")]
    pub gateway_admin: Option<String>,
    /// An API request answered after this many milliseconds is kept among
    /// the node's slow requests (the latest 64, with their trace ids, in
    /// the stats and the console).
    #[arg(long, env = "STRATA_SLOW_REQUEST_MS", default_value_t = 100)]
    pub slow_request_ms: u64,
    /// How often the first range's leader looks whether some node leads
    /// more ranges than its share, and moves leaderships to even them out
    /// (at most two a round); 0 turns it off.
    #[arg(long, env = "STRATA_BALANCE_EVERY_MS", default_value_t = 5000)]
    pub balance_every_ms: u64,
    /// Where a trace can be seen, `{trace_id}` standing for its id: with
    /// Jaeger, `http://127.0.0.1:16686/trace/{trace_id}` (its UI) or
    /// `http://127.0.0.1:16686/api/traces/{trace_id}` (its query API). A
    /// slow request whose trace was sampled then carries its link.
    #[arg(long, env = "STRATA_TRACE_LINK")]
    pub trace_link: Option<String>,
    /// A JWKS file of the Ed25519 public keys whose tokens this node takes
    /// (`strata auth keygen` makes one). Without it no token is valid and
    /// every request is anonymous.
    #[arg(long, env = "STRATA_AUTH_JWKS")]
    pub auth_jwks: Option<PathBuf>,
    /// This node's certificate (PEM, `strata tls cert`), valid for the
    /// address the others reach it by. With it the node serves its port
    /// with TLS only, asks every caller (peers, the gateway, clients) for a
    /// certificate issued by --tls-ca, and connects to the other members
    /// with it. Read again when the file changes.
    #[arg(long, env = "STRATA_TLS_CERT", requires_all = ["tls_key", "tls_ca"])]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (read again when the file changes).
    #[arg(long, env = "STRATA_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// The cluster's CA certificate (`ca.pem` from `strata tls init`).
    #[arg(long, env = "STRATA_TLS_CA", requires = "tls_cert")]
    pub tls_ca: Option<PathBuf>,
    /// What a request without a token may do: none, read, or read and
    /// write (never admin).
    #[arg(long, env = "STRATA_ANONYMOUS_ROLE", default_value = "none")]
    pub anonymous_role: crate::auth::AnonymousRole,
    /// A file holding the token this node sends with the requests it makes
    /// itself: its --join request (needs admin), and its consistency
    /// canary's operations (need write, unless requests without a token may
    /// write).
    #[arg(long, env = "STRATA_NODE_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,
    #[command(flatten)]
    pub canary: crate::canary::CanaryConfig,
    #[command(flatten)]
    pub faults: crate::canary::Faults,
}

/// Bounds on what a request may carry.
#[derive(Debug, Clone, clap::Args)]
pub struct Limits {
    #[arg(long, env = "STRATA_MAX_KEY_BYTES", default_value_t = 4096)]
    pub max_key_bytes: usize,
    #[arg(long, env = "STRATA_MAX_VALUE_BYTES", default_value_t = 1 << 20)]
    pub max_value_bytes: usize,
    /// Largest request body (REST) or message (gRPC).
    #[arg(long, env = "STRATA_MAX_REQUEST_BYTES", default_value_t = 16 << 20)]
    pub max_request_bytes: usize,
    #[arg(long, env = "STRATA_MAX_BATCH_OPS", default_value_t = 10_000)]
    pub max_batch_ops: usize,
    #[arg(long, env = "STRATA_DEFAULT_SCAN_LIMIT", default_value_t = 100)]
    pub default_scan_limit: u32,
    #[arg(long, env = "STRATA_MAX_SCAN_LIMIT", default_value_t = 1000)]
    pub max_scan_limit: u32,
    /// Bytes of the write requests a node holds between taking them and
    /// answering them, each counted by its body's length; a write past it
    /// is refused as OVERLOADED (503 / RESOURCE_EXHAUSTED, not applied,
    /// retryable) before its body is read. Two of the largest requests:
    /// enough to keep the disk busy, little enough that what is admitted is
    /// persisted well within the request timeout.
    #[arg(long, env = "STRATA_MAX_WRITE_BYTES_IN_FLIGHT", default_value_t = 32 << 20)]
    pub max_write_bytes_in_flight: usize,
    /// How long a write waits, before any of it is read, while the node's
    /// storage engine is behind on its flushes and compactions (never more
    /// than half its time); one still waiting then is refused as
    /// OVERLOADED. 0 refuses at once.
    #[arg(long, env = "STRATA_WRITE_STALL_WAIT_MS", default_value_t = 1000)]
    pub write_stall_wait_ms: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_key_bytes: 4096,
            max_value_bytes: 1 << 20,
            max_request_bytes: 16 << 20,
            max_batch_ops: 10_000,
            default_scan_limit: 100,
            max_scan_limit: 1000,
            max_write_bytes_in_flight: 32 << 20,
            write_stall_wait_ms: 1000,
        }
    }
}

/// At least this many network threads by default, whatever the CPUs: a
/// thread busy with a large request (decoding, copying or encoding 15 MiB)
/// holds up every task queued behind it, heartbeats included, until it
/// yields; with more threads than cores the operating system shares the
/// cores among them. Under a minute of maximum-size batches on 2 cores,
/// nodes with 2 threads held 10 to 11 elections, with 4 or 6 none
/// (docs/reliability.md, "Large writes under load"), and 100 clients' puts
/// ran as fast with 4 threads as with 1.
pub const MIN_DEFAULT_IO_THREADS: usize = 4;

/// The network threads of a node not given `--io-threads`: one per CPU,
/// and at least [`MIN_DEFAULT_IO_THREADS`].
pub fn default_io_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .max(MIN_DEFAULT_IO_THREADS)
}

/// Raft and request timing.
#[derive(Debug, Clone, clap::Args)]
pub struct Timing {
    /// One raft tick, in milliseconds.
    #[arg(long, env = "STRATA_TICK_MS", default_value_t = 10)]
    pub tick_ms: u64,
    /// Election timeout in ticks (randomized up to twice this).
    #[arg(long, env = "STRATA_ELECTION_TICKS", default_value_t = 10)]
    pub election_ticks: usize,
    #[arg(long, env = "STRATA_HEARTBEAT_TICKS", default_value_t = 2)]
    pub heartbeat_ticks: usize,
    /// How linearizable reads confirm leadership: `safe` (a quorum round per
    /// batch of reads) or `lease` (the leader answers without a round within
    /// a lease a quorum granted, a little under an election timeout on its
    /// monotonic clock; every node must run the same tick and election
    /// timeout; see docs/ARCHITECTURE.md).
    #[arg(long, env = "STRATA_READ_MODE", value_enum, default_value_t = ReadMode::Safe)]
    pub read_mode: ReadMode,
    /// How long a write may wait for its outcome before answering
    /// OUTCOME_UNKNOWN. Keep it below the gateway's per-try timeout (5 s) so
    /// the client gets the node's answer rather than the gateway's.
    #[arg(long, env = "STRATA_REQUEST_TIMEOUT_MS", default_value_t = 4000)]
    pub request_timeout_ms: u64,
    /// How long the group remembers a write's request id (and answers a
    /// retry with the first outcome), in seconds from when the leader
    /// proposed it; at most a day.
    #[arg(long, env = "STRATA_REQUEST_ID_TTL_S", default_value_t = 600,
          value_parser = clap::value_parser!(u64).range(1..=strata_raft::MAX_REQUEST_KEEP_MS / 1000))]
    pub request_id_ttl_s: u64,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            tick_ms: 10,
            election_ticks: 10,
            heartbeat_ticks: 2,
            read_mode: ReadMode::Safe,
            request_timeout_ms: 4000,
            request_id_ttl_s: 600,
        }
    }
}

impl Timing {
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }
}

/// How linearizable reads confirm that this node still leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReadMode {
    Safe,
    Lease,
}

fn parse_peer(s: &str) -> Result<(u64, String), String> {
    let (id, addr) = s
        .split_once('=')
        .ok_or_else(|| format!("peer `{s}` is not of the form id=host:port"))?;
    let id: u64 = id
        .trim()
        .parse()
        .map_err(|_| format!("peer id `{id}` is not a number"))?;
    if id == 0 {
        return Err("peer id 0 is reserved".into());
    }
    let addr = addr.trim();
    if !addr.contains(':') {
        return Err(format!("peer address `{addr}` has no port"));
    }
    Ok((id, addr.to_string()))
}

impl NodeConfig {
    /// Members by id, including this node.
    pub fn members(&self) -> Result<BTreeMap<u64, String>, String> {
        if self.id == 0 {
            return Err("--id must be non-zero".into());
        }
        let mut members = BTreeMap::new();
        for (id, addr) in &self.peers {
            if members.insert(*id, addr.clone()).is_some() {
                return Err(format!("peer {id} is listed twice"));
            }
        }
        let own = self.advertise_address();
        members.entry(self.id).or_insert(own);
        Ok(members)
    }

    /// The engine's directory in the data directory.
    pub fn engine_dir(&self) -> PathBuf {
        self.data_dir.join("engine")
    }

    /// The raft log's directory in the data directory.
    pub fn raft_log_dir(&self) -> PathBuf {
        self.raft_log_dir_of(self.group_id)
    }

    /// The raft log's directory of group `group` in the data directory.
    pub fn raft_log_dir_of(&self, group: u64) -> PathBuf {
        self.data_dir.join(format!("raft-{group}"))
    }

    /// Where snapshots of group `group` are built and staged, in the data
    /// directory.
    pub fn snapshot_dir_of(&self, group: u64) -> PathBuf {
        self.data_dir.join(format!("snapshots-{group}"))
    }

    pub fn advertise_address(&self) -> String {
        self.advertise
            .clone()
            .or_else(|| {
                self.peers
                    .iter()
                    .find(|(id, _)| *id == self.id)
                    .map(|(_, a)| a.clone())
            })
            .unwrap_or_else(|| self.listen.to_string())
    }

    /// A config for tests and embedding: one node, everything else default.
    pub fn single(id: u64, listen: SocketAddr, data_dir: PathBuf) -> Self {
        NodeConfig {
            id,
            listen,
            resp_listen: None,
            resp_frame_timeout_ms: 60_000,
            resp_max_connections: 10_000,
            memcache_listen: None,
            memcache_frame_timeout_ms: 60_000,
            memcache_max_connections: 1024,
            advertise: None,
            peers: Vec::new(),
            join: false,
            data_dir,
            group_id: 1,
            io_threads: None,
            limits: Limits::default(),
            timing: Timing::default(),
            compact_log_entries: 20_000,
            compact_keep_entries: 5_000,
            watch_history: strata_raft::DEFAULT_HISTORY_ENTRIES,
            compact_log_mb: 64,
            resume_free_mb: 16,
            max_snapshot_mb: 64 << 10,
            console_dir: None,
            gateway_admin: None,
            slow_request_ms: 100,
            balance_every_ms: 5000,
            trace_link: None,
            auth_jwks: None,
            tls_cert: None,
            tls_key: None,
            tls_ca: None,
            anonymous_role: Default::default(),
            token_file: None,
            canary: Default::default(),
            faults: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_flags_go_together() {
        // Proves: a certificate without its key or the CA is refused at
        // parse time, and the three together parse.
        let base = ["strata-node", "--id", "1", "--data-dir", "/d"];
        let with =
            |extra: &[&str]| NodeConfig::try_parse_from(base.iter().chain(extra.iter()).copied());
        assert!(with(&["--tls-cert", "c"]).is_err());
        assert!(with(&["--tls-cert", "c", "--tls-key", "k"]).is_err());
        assert!(with(&["--tls-ca", "a"]).is_err());
        let cfg = with(&["--tls-cert", "c", "--tls-key", "k", "--tls-ca", "a"]).unwrap();
        assert_eq!(cfg.tls_ca, Some(PathBuf::from("a")));
    }

    #[test]
    fn a_request_id_is_remembered_for_at_most_a_day() {
        // Proves: --request-id-ttl-s takes 1 to 86,400 and refuses the
        // rest at parse time, naming the range.
        let with = |ttl: &str| {
            NodeConfig::try_parse_from(["strata-node", "--id", "1", "--request-id-ttl-s", ttl])
        };
        assert_eq!(with("86400").unwrap().timing.request_id_ttl_s, 86_400);
        for bad in ["0", "86401"] {
            let e = with(bad).unwrap_err().to_string();
            assert!(e.contains("1..=86400"), "{bad}: {e}");
        }
    }

    #[test]
    fn peers_parse_and_include_self() {
        let cfg = NodeConfig::try_parse_from([
            "strata-node",
            "--id",
            "2",
            "--peers",
            "1=127.0.0.1:7001,2=127.0.0.1:7002,3=127.0.0.1:7003",
        ])
        .unwrap();
        let m = cfg.members().unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(cfg.advertise_address(), "127.0.0.1:7002");
    }

    #[test]
    fn malformed_peers_are_rejected() {
        for bad in [
            "x=127.0.0.1:1",
            "1:127.0.0.1",
            "0=127.0.0.1:1",
            "1=localhost",
        ] {
            assert!(
                NodeConfig::try_parse_from(["strata-node", "--id", "1", "--peers", bad]).is_err(),
                "{bad} accepted"
            );
        }
    }
}
