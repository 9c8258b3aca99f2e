//! The numbers the console shows, from the same counters `/metrics`
//! exports: each node answers `Cluster/LocalStats` with its own scrape (and
//! its engine's recent work, [`activity`]); the node a client asks gathers
//! every member's and reads each scrape into JSON ([`reading`]). So the
//! JSON stats and Prometheus cannot drift: they are one encoding of one
//! registry, read twice.
//!
//! Also here: compacting on demand (`Cluster/Compact`, `POST
//! /v1/cluster/compact`), and the feed of the event stream's `stats`
//! events ([`feed`]).

pub mod activity;
pub mod feed;
pub mod gateway;
pub mod raft_history;
pub mod reading;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use strata_engine::Engine;
use strata_proto::v1 as pb;
use strata_proto::v1::cluster_client::ClusterClient;
use strata_proto::v1::engine_activity::Kind;
use strata_proto::v1::node_compaction::Outcome;

use crate::core::Core;
use crate::error::ApiError;
use crate::metrics::NodeMetrics;
use crate::metrics::scrape::Scrape;
use crate::rest::model::cluster::RaftEvent;
use crate::rest::model::stats::{
    ClusterStats, CompactResult, CompactionOutcome, EngineActivity, EngineActivityKind,
    MemberStats, NodeCompaction, SlowRequest,
};
use activity::ActivityLog;
use raft_history::RaftHistory;

use crate::slow_requests::SlowRequests;

/// How long the gathering node waits for a member's stats.
const PEER_STATS_TIMEOUT: Duration = Duration::from_millis(500);
/// How long a compaction request waits for the work before answering
/// "running" (well inside the gateway's 5 s per try).
const COMPACT_WAIT: Duration = Duration::from_secs(3);

/// This node's side: its registry, its engine's recent work, and the
/// engine to compact.
pub struct StatsSource {
    id: u64,
    metrics: Arc<NodeMetrics>,
    activity: Arc<ActivityLog>,
    history: Arc<RaftHistory>,
    /// The node's latest slow requests, which its request spans note.
    slow: Arc<SlowRequests>,
    engine: Arc<Engine>,
    /// A requested compaction is running; another request joins it.
    compacting: Arc<AtomicBool>,
    /// Envoy's admin address, whose counters the gathered stats carry.
    gateway_admin: Option<String>,
    http: reqwest::Client,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl StatsSource {
    pub fn new(
        id: u64,
        metrics: Arc<NodeMetrics>,
        activity: Arc<ActivityLog>,
        history: Arc<RaftHistory>,
        engine: Arc<Engine>,
    ) -> Self {
        StatsSource {
            id,
            metrics,
            activity,
            history,
            slow: Arc::default(),
            engine,
            compacting: Arc::default(),
            gateway_admin: None,
            http: reqwest::Client::new(),
        }
    }

    /// Keeps the node's slow requests in `slow` (by default, those that
    /// took 100 ms, with no trace viewer to link to).
    pub fn with_slow_requests(mut self, slow: SlowRequests) -> Self {
        self.slow = Arc::new(slow);
        self
    }

    /// The list of slow requests the node's request spans add to.
    pub fn slow_requests(&self) -> Arc<SlowRequests> {
        self.slow.clone()
    }

    /// Gathered stats also carry the counters of the gateway whose admin
    /// interface is at `admin` (`host:port`).
    pub fn with_gateway_admin(mut self, admin: Option<String>) -> Self {
        self.gateway_admin = admin;
        self
    }

    /// What `Cluster/LocalStats` answers: this node's scrape and work.
    pub fn local(&self) -> pb::LocalStatsResponse {
        pb::LocalStatsResponse {
            id: self.id,
            at_ms: now_ms(),
            openmetrics: self.metrics.encode(),
            engine_activity: self.activity.recent(),
            raft_activity: self.history.recent(),
            slow_requests: self.slow.recent(),
        }
    }

    /// Flushes and compacts level 0 into level 1 here; answers once done,
    /// or after [`COMPACT_WAIT`] with "running" (the work goes on). A
    /// request while one runs joins it.
    pub async fn compact_local(&self) -> pb::NodeCompaction {
        let started = Instant::now();
        let answer = |outcome: Outcome, error: String| pb::NodeCompaction {
            id: self.id,
            outcome: outcome as i32,
            duration_ms: started.elapsed().as_millis() as u64,
            error,
        };
        if self.compacting.swap(true, Ordering::AcqRel) {
            return answer(Outcome::Running, String::new());
        }
        let engine = self.engine.clone();
        let compacting = self.compacting.clone();
        let work = tokio::task::spawn_blocking(move || {
            let result = engine.compact();
            compacting.store(false, Ordering::Release);
            result
        });
        match tokio::time::timeout(COMPACT_WAIT, work).await {
            Ok(Ok(Ok(()))) => answer(Outcome::Done, String::new()),
            Ok(Ok(Err(e))) => answer(Outcome::Failed, e.to_string()),
            Ok(Err(e)) => answer(Outcome::Failed, format!("compaction task: {e}")),
            Err(_) => answer(Outcome::Running, String::new()),
        }
    }
}

fn activity_kind(kind: Kind) -> Option<EngineActivityKind> {
    match kind {
        Kind::Flush => Some(EngineActivityKind::Flush),
        Kind::CompactionStarted => Some(EngineActivityKind::CompactionStarted),
        Kind::Compaction => Some(EngineActivityKind::Compaction),
        Kind::Stall => Some(EngineActivityKind::Stall),
        Kind::Unknown => None,
    }
}

/// A member's answer as JSON: its scrape read into stats.
pub fn member_stats(address: String, local: &pb::LocalStatsResponse) -> MemberStats {
    let activity = local
        .engine_activity
        .iter()
        .filter_map(|a| {
            Some(EngineActivity {
                kind: activity_kind(a.kind())?,
                at_ms: a.at_ms,
                level: a.level.into(),
                output_level: a.output_level.into(),
                files_in: a.files_in.into(),
                bytes_in: a.bytes_in,
                files_out: a.files_out.into(),
                bytes_out: a.bytes_out,
                trivial_move: a.trivial_move,
                duration_ms: a.duration_us as f64 / 1000.0,
                stopped: a.stopped,
            })
        })
        .collect();
    let raft_activity = local
        .raft_activity
        .iter()
        .filter_map(|a| RaftEvent::from_activity(local.id, a))
        .collect();
    match Scrape::parse(&local.openmetrics) {
        Ok(scrape) => {
            let slow = local.slow_requests.iter().map(SlowRequest::from).collect();
            let (stats, unread) = reading::read(&scrape, activity, raft_activity, slow);
            if !unread.is_empty() {
                tracing::debug!(?unread, "metric families the stats do not carry");
            }
            MemberStats {
                id: local.id,
                address,
                at_ms: local.at_ms,
                error: String::new(),
                stats: Some(stats),
            }
        }
        Err(e) => unreachable(local.id, address, format!("unreadable metrics: {e}")),
    }
}

fn unreachable(id: u64, address: String, error: String) -> MemberStats {
    MemberStats {
        id,
        address,
        at_ms: 0,
        error,
        stats: None,
    }
}

/// Every member's stats, asked in parallel; a member that does not answer
/// in time is listed with the reason.
pub async fn gather(core: &Core, source: &StatsSource) -> ClusterStats {
    let asks = core.channels().members().into_iter().map(|(id, address)| {
        let channel = core.channels().channel(id);
        async move {
            if id == source.id {
                return member_stats(address, &source.local());
            }
            let Some(channel) = channel else {
                return unreachable(id, address, "no channel".into());
            };
            let mut req = tonic::Request::new(pb::LocalStatsRequest {});
            req.set_timeout(PEER_STATS_TIMEOUT);
            match tokio::time::timeout(
                PEER_STATS_TIMEOUT,
                ClusterClient::new(channel).local_stats(req),
            )
            .await
            {
                Ok(Ok(resp)) => member_stats(address, &resp.into_inner()),
                Ok(Err(status)) => {
                    unreachable(id, address, format!("unreachable: {}", status.message()))
                }
                Err(_) => unreachable(id, address, "unreachable: timed out".into()),
            }
        }
    });
    let gateway = async {
        let admin = source.gateway_admin.as_deref()?;
        Some(
            gateway::scrape(&source.http, admin)
                .await
                .unwrap_or_else(|e| gateway::unreadable(&e)),
        )
    };
    let (mut nodes, gateway) = tokio::join!(futures::future::join_all(asks), gateway);
    nodes.sort_by_key(|n| n.id);
    ClusterStats {
        answered_by: source.id,
        nodes,
        gateway,
    }
}

fn outcome(o: Outcome) -> CompactionOutcome {
    match o {
        Outcome::Done => CompactionOutcome::Done,
        Outcome::Running => CompactionOutcome::Running,
        Outcome::Failed | Outcome::Unknown => CompactionOutcome::Failed,
    }
}

/// Compacts the members `ids` (every member when empty), in parallel.
/// A member id not in the configuration is refused before anything runs.
pub async fn compact(
    core: &Core,
    source: &StatsSource,
    ids: &[u64],
) -> Result<CompactResult, ApiError> {
    let members = core.channels().members();
    let targets: Vec<u64> = if ids.is_empty() {
        members.keys().copied().collect()
    } else {
        for id in ids {
            if !members.contains_key(id) {
                return Err(ApiError::not_found(format!("node {id} is not a member")));
            }
        }
        ids.to_vec()
    };
    let asks = targets.into_iter().map(|id| {
        let channel = core.channels().channel(id);
        async move {
            let started = Instant::now();
            let failed = |error: String| pb::NodeCompaction {
                id,
                outcome: Outcome::Failed as i32,
                duration_ms: started.elapsed().as_millis() as u64,
                error,
            };
            if id == source.id {
                return source.compact_local().await;
            }
            let Some(channel) = channel else {
                return failed("no channel".into());
            };
            let wait = COMPACT_WAIT + Duration::from_millis(500);
            let mut req = tonic::Request::new(pb::LocalCompactRequest {});
            req.set_timeout(wait);
            match tokio::time::timeout(wait, ClusterClient::new(channel).local_compact(req)).await {
                Ok(Ok(resp)) => resp.into_inner(),
                Ok(Err(status)) => failed(format!("unreachable: {}", status.message())),
                Err(_) => failed("unreachable: timed out".into()),
            }
        }
    });
    let mut nodes: Vec<NodeCompaction> = futures::future::join_all(asks)
        .await
        .into_iter()
        .map(|n| NodeCompaction {
            id: n.id,
            outcome: outcome(n.outcome()),
            duration_ms: n.duration_ms,
            error: n.error,
        })
        .collect();
    nodes.sort_by_key(|n| n.id);
    Ok(CompactResult { nodes })
}
