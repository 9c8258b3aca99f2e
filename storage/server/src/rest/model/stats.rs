//! The answers of `GET /v1/cluster/stats` and `POST /v1/cluster/compact`,
//! and the data of the event stream's `stats` event.
//!
//! Every number in [`NodeStats`] but `engine_activity` and `raft_activity` is read from the
//! node's own `/metrics` scrape (`crate::stats::reading`), so the JSON and
//! Prometheus always show the same values; the comments name the family
//! each field comes from. Counters are totals since the node started: a
//! reader turns two samples into a rate.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::cluster::{RaftEvent, Role};

/// A histogram as `/metrics` exports it: cumulative bucket counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Histogram {
    /// Observations in all.
    pub count: u64,
    /// Sum of the observations.
    pub sum: f64,
    /// Observations at most `le`, for each finite upper bound in
    /// increasing order (the `+Inf` bucket is `count`).
    pub buckets: Vec<Bucket>,
}

/// One cumulative bucket of a [`Histogram`].
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Bucket {
    pub le: f64,
    pub count: u64,
}

/// Requests answered on one route with one outcome
/// (`strata_api_requests_total`).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestCount {
    /// `rest` or `grpc`.
    pub protocol: String,
    /// The route template (`PUT /v1/kv/{key}`) or gRPC method; `unmatched`
    /// for unknown routes.
    pub route: String,
    /// HTTP status for REST, gRPC status name for gRPC.
    pub code: String,
    pub count: u64,
}

/// Latency of one route (`strata_api_request_duration_seconds`).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteLatency {
    pub protocol: String,
    pub route: String,
    /// Seconds from arrival to the answer's head.
    pub seconds: Histogram,
}

/// Requests being served, by protocol (`strata_api_requests_in_flight`).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InFlight {
    pub protocol: String,
    pub count: u64,
}

/// The API's families (`strata_api_*`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApiStats {
    pub requests: Vec<RequestCount>,
    pub latency: Vec<RouteLatency>,
    pub in_flight: Vec<InFlight>,
    /// Requests this node sent on to the leader (`strata_api_forwarded_total`).
    pub forwarded: u64,
}

/// Raft events of one kind published so far (`strata_raft_events_total`).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EventCount {
    pub kind: String,
    pub count: u64,
}

/// Elections this member started for one reason (`strata_raft_elections_total`):
/// `leader_lost` (its leader's heartbeats stopped), `timeout` (no leader
/// known), `transfer` (a leader handed over).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ElectionCount {
    pub reason: String,
    pub count: u64,
}

/// On a leader: how far another member's log matches
/// (`strata_raft_member_match_index`, `strata_raft_member_lag_entries`,
/// `strata_raft_member_lag_seconds`).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemberProgress {
    pub member: u64,
    pub match_index: u64,
    /// Entries the member lacks.
    pub lag_entries: u64,
    /// How long ago the leader appended the first entry the member lacks,
    /// in milliseconds; 0 when it lacks none.
    pub lag_ms: f64,
}

/// The raft peer's families (`strata_raft_*`).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RaftStats {
    pub term: u64,
    pub role: Role,
    /// 0 when none is known.
    pub leader_id: u64,
    pub commit_index: u64,
    pub applied_index: u64,
    pub last_index: u64,
    /// First index the raft log still holds; absent from a member that
    /// does not report it (an older version, during a rolling upgrade).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_index: Option<u64>,
    /// Payload bytes of the raft log's entries held in memory; absent as
    /// `first_index` is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_entry_bytes: Option<u64>,
    pub voters: u64,
    pub learners: u64,
    /// False once the peer's storage failed.
    pub healthy: bool,
    pub events: Vec<EventCount>,
    pub elections: Vec<ElectionCount>,
    /// Client proposals stepped into raft.
    pub proposals: u64,
    /// Proposals stepped in one round.
    pub proposal_batch_size: Histogram,
    /// Proposal stepped into raft to its answer (quorum append + fsync, apply).
    pub commit_seconds: Histogram,
    /// A linearizable read's wait for its ReadIndex round and apply.
    pub read_index_seconds: Histogram,
    /// One round's raft log write + fsync.
    pub append_seconds: Histogram,
    /// Rounds that wrote and fsynced the raft log.
    pub log_syncs: u64,
    pub appended_bytes: u64,
    pub appended_entries: u64,
    pub applied_entries: u64,
    /// On the leader: every other member's progress; empty elsewhere.
    pub members: Vec<MemberProgress>,
}

/// Tables in one level (`strata_engine_level_files`, `strata_engine_level_bytes`).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LevelShape {
    pub level: u64,
    pub files: u64,
    pub bytes: u64,
}

/// The storage engine's families (`strata_engine_*`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EngineStats {
    /// Arena bytes of the active memtable.
    pub memtable_bytes: u64,
    /// Arena bytes at which the active memtable is frozen for a flush
    /// (`strata_engine_memtable_limit_bytes`).
    pub memtable_limit_bytes: u64,
    /// Level-0 tables at which writers are slowed down
    /// (`strata_engine_l0_slowdown_files`).
    pub l0_slowdown_files: u64,
    /// Level-0 tables at which writers stop until a compaction ends
    /// (`strata_engine_l0_stop_files`).
    pub l0_stop_files: u64,
    /// Frozen memtables waiting to be flushed.
    pub immutable_memtables: u64,
    pub immutable_memtable_bytes: u64,
    /// L0 first.
    pub levels: Vec<LevelShape>,
    pub flushes: u64,
    pub flush_seconds: f64,
    pub flush_written_bytes: u64,
    pub compactions: u64,
    pub compaction_seconds: f64,
    pub compaction_read_bytes: u64,
    pub compaction_written_bytes: u64,
    /// Key and value bytes callers wrote.
    pub user_written_bytes: u64,
    /// Time writers were stopped by the engine.
    pub stall_seconds: f64,
    /// Time writers were slowed down.
    pub slowdown_seconds: f64,
    pub gets: u64,
    pub table_probes: u64,
    pub bloom_useful: u64,
    pub bloom_false_positives: u64,
    pub block_cache_hits: u64,
    pub block_cache_misses: u64,
    pub events_dropped: u64,
}

/// The process and its data directory's file system (`strata_process_*`);
/// a value the system would not give is absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProcessStats {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resident_memory_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_fds: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_dir_free_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_dir_size_bytes: Option<u64>,
    /// When the process started, Unix seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time_seconds: Option<f64>,
}

/// Canary operations of one kind and outcome (`strata_canary_ops_total`).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CanaryOps {
    /// `read`, `write` or `cas`.
    pub op: String,
    /// `ok`, `not_applied` or `unknown`.
    pub outcome: String,
    pub count: u64,
}

/// The consistency canary's families (`strata_canary_*`); all zero on a
/// node that does not run it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CanaryStats {
    pub ops: Vec<CanaryOps>,
    pub windows_ok: u64,
    pub windows_violation: u64,
    pub windows_inconclusive: u64,
    pub violations: u64,
    /// When the canary last completed a check, Unix seconds; 0 before.
    pub last_check_seconds: f64,
}

/// What a piece of engine background work was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EngineActivityKind {
    /// A memtable became a level-0 table.
    Flush,
    /// A compaction started; it runs until its `compaction`.
    CompactionStarted,
    /// A compaction finished.
    Compaction,
    /// A writer waited for the engine's background work.
    Stall,
}

/// One piece of the engine's recent background work.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EngineActivity {
    pub kind: EngineActivityKind,
    /// When it ended (started, for `compaction_started`), Unix milliseconds.
    pub at_ms: u64,
    /// Compactions: the level read and the level written.
    pub level: u64,
    pub output_level: u64,
    pub files_in: u64,
    pub bytes_in: u64,
    /// Flushes and compactions: tables and bytes written.
    pub files_out: u64,
    pub bytes_out: u64,
    /// A compaction that moved a table down without rewriting it.
    pub trivial_move: bool,
    pub duration_ms: f64,
    /// Stalls: a full stop rather than a slowdown.
    pub stopped: bool,
}

/// One node's numbers, as its `/metrics` page shows them.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeStats {
    /// The build's version (`strata_build_info`).
    pub version: String,
    pub api: ApiStats,
    pub raft: RaftStats,
    pub engine: EngineStats,
    pub process: ProcessStats,
    pub canary: CanaryStats,
    /// The engine's latest flushes, compactions and stalls, oldest first
    /// (at most 64; kept by the node since it started, not in `/metrics`).
    pub engine_activity: Vec<EngineActivity>,
    /// The raft peer's latest events, oldest first (at most 64; kept by the
    /// node since it started, not in `/metrics`): who led when, and why
    /// each election started, as this member saw it.
    pub raft_activity: Vec<RaftEvent>,
    /// The node's latest requests answered after its slow-request threshold
    /// (`--slow-request-ms`), oldest first (at most 64; not in `/metrics`).
    /// Absent when there are none, and from a member that does not keep
    /// them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slow_requests: Vec<SlowRequest>,
}

/// An API request a node answered after its slow-request threshold.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SlowRequest {
    /// When it was answered, Unix milliseconds on the node's clock.
    pub at_ms: u64,
    /// The route's name, as the metrics label it (`PUT /v1/kv/{key}`,
    /// `/strata.v1.KV/Put`).
    pub route: String,
    /// `rest` or `grpc`.
    pub protocol: String,
    /// The answer's HTTP status.
    pub status: u16,
    /// The gRPC status code, when the answer's headers carried it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grpc_status: Option<String>,
    /// From the request's arrival to its answer.
    pub duration_ms: f64,
    /// The trace the request belongs to (32 hex digits), when it belongs
    /// to one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// Whether that trace was sampled: only then may a trace viewer hold it.
    pub sampled: bool,
    /// The trace in the node's trace viewer (`--trace-link`), when
    /// the node has one and the trace was sampled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_url: Option<String>,
}

impl From<&strata_proto::v1::SlowRequest> for SlowRequest {
    fn from(s: &strata_proto::v1::SlowRequest) -> Self {
        let some = |v: &str| (!v.is_empty()).then(|| v.to_string());
        SlowRequest {
            at_ms: s.at_ms,
            route: s.route.clone(),
            protocol: s.protocol.clone(),
            status: u16::try_from(s.status).unwrap_or(u16::MAX),
            grpc_status: some(&s.grpc_status),
            duration_ms: s.duration_us as f64 / 1000.0,
            trace_id: some(&s.trace_id),
            sampled: s.sampled,
            trace_url: some(&s.trace_url),
        }
    }
}

/// One member's stats, or why they could not be read.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemberStats {
    pub id: u64,
    /// host:port of the node's API.
    pub address: String,
    /// When the node took its numbers, Unix milliseconds on its clock;
    /// 0 when it could not be asked.
    pub at_ms: u64,
    /// Why the node could not be asked, when it could not.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub error: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<NodeStats>,
}

/// Result of GET /v1/cluster/stats; also the data of the `stats` SSE
/// event.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterStats {
    /// The member that gathered them.
    pub answered_by: u64,
    /// Every member of the configuration, in id order.
    pub nodes: Vec<MemberStats>,
    /// What the gateway answered, when the gathering node was given its
    /// admin address (`--gateway-admin`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway: Option<GatewayStats>,
}

/// Failed answers of one HTTP status (a gRPC answer under the status its
/// gRPC status stands for), from the gateway's own count
/// (`envoy_gateway_answers_answered`).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GatewayResponses {
    pub code: String,
    pub count: u64,
}

/// The gateway's failed answers (HTTP 5xx; gRPC UNAVAILABLE,
/// DEADLINE_EXCEEDED, INTERNAL, UNKNOWN) to requests routed to the nodes,
/// one per answer as its client got it, whoever made it (a node, or Envoy
/// itself: no healthy node, a timeout). Totals since Envoy started.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GatewayStats {
    /// When they were read, Unix milliseconds on the gathering node's
    /// clock; 0 when they could not be.
    pub at_ms: u64,
    /// Why they could not be read; empty when they were.
    pub error: String,
    /// By code, in code order.
    pub responses: Vec<GatewayResponses>,
}

/// Body of POST /v1/cluster/compact.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompactRequest {
    /// The members to compact; every member when absent or empty.
    #[serde(default)]
    pub node_ids: Vec<u64>,
}

/// How a compaction request ended on one member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompactionOutcome {
    /// Flushed and compacted.
    Done,
    /// Still running when the answer was due; it goes on, and the stats
    /// show it end.
    Running,
    /// The node could not be asked, or its engine refused: see `error`.
    Failed,
}

/// What a compaction request did on one member.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeCompaction {
    pub id: u64,
    pub outcome: CompactionOutcome,
    /// How long the node worked before answering.
    pub duration_ms: u64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub error: String,
}

/// Result of POST /v1/cluster/compact.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompactResult {
    pub nodes: Vec<NodeCompaction>,
}
