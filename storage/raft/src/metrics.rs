//! The peer's own metrics: counters and histograms the driver updates as
//! it works, registered by the node in its registry (Prometheus names and
//! units: `_total`, `_seconds`, `_bytes`). They live in `Shared`, so a
//! handle reads the same values the `/metrics` page shows.

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

use std::sync::atomic::AtomicU64;

use crate::status::{ElectionReason, RaftEventKind};

/// The label of a raft event count.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EventLabels {
    pub kind: EventKind,
}

/// [`RaftEventKind`] as a label value.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum EventKind {
    leader_changed,
    role_changed,
    election_started,
    membership_changed,
    snapshot_sent,
    snapshot_received,
    snapshot_installed,
    storage_failed,
}

impl From<RaftEventKind> for EventKind {
    fn from(kind: RaftEventKind) -> Self {
        match kind {
            RaftEventKind::LeaderChanged => EventKind::leader_changed,
            RaftEventKind::RoleChanged => EventKind::role_changed,
            RaftEventKind::ElectionStarted => EventKind::election_started,
            RaftEventKind::MembershipChanged => EventKind::membership_changed,
            RaftEventKind::SnapshotSent => EventKind::snapshot_sent,
            RaftEventKind::SnapshotReceived => EventKind::snapshot_received,
            RaftEventKind::SnapshotInstalled => EventKind::snapshot_installed,
            RaftEventKind::StorageFailed => EventKind::storage_failed,
        }
    }
}

/// The label of an election count.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ElectionLabels {
    pub reason: ElectionReasonLabel,
}

/// [`ElectionReason`] as a label value.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum ElectionReasonLabel {
    leader_lost,
    timeout,
    transfer,
}

impl From<ElectionReason> for ElectionReasonLabel {
    fn from(reason: ElectionReason) -> Self {
        match reason {
            ElectionReason::LeaderLost => ElectionReasonLabel::leader_lost,
            ElectionReason::Timeout => ElectionReasonLabel::timeout,
            ElectionReason::Transfer => ElectionReasonLabel::transfer,
        }
    }
}

/// The label of a per-member value a leader keeps.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MemberLabels {
    pub member: u64,
}

/// What one peer counts.
#[derive(Clone, Debug)]
pub struct RaftMetrics {
    /// Events by kind, counted as they are published.
    pub events: Family<EventLabels, Counter>,
    /// Rounds that wrote and fsynced the raft log.
    pub log_syncs: Counter,
    /// Time to write and fsync one round's log records.
    pub append_seconds: Histogram,
    /// Bytes written to the raft log.
    pub appended_bytes: Counter,
    /// Entries appended to the raft log (leader's own and replicated).
    pub appended_entries: Counter,
    /// Client proposals stepped into raft.
    pub proposals: Counter,
    /// Proposals stepped in one round.
    pub proposal_batch: Histogram,
    /// Time from a proposal's stepping into raft to its answer: committed
    /// by a quorum (each member's append and fsync) and applied.
    pub commit_seconds: Histogram,
    /// Entries applied to the state machine.
    pub applied_entries: Counter,
    /// Time a linearizable read waited before it could read local state:
    /// the ReadIndex round and the apply up to its index.
    pub read_index_seconds: Histogram,
    /// For a leader, each other member's match index (how far its log is
    /// known to agree with the leader's); cleared when leadership ends.
    pub member_match_index: Family<MemberLabels, Gauge>,
    /// For a leader, how many entries each other member lacks.
    pub member_lag_entries: Family<MemberLabels, Gauge>,
    /// For a leader, how long ago it appended the first entry each other
    /// member lacks; 0 for a member that lacks none.
    pub member_lag_seconds: Family<MemberLabels, Gauge<f64, AtomicU64>>,
    /// Elections this peer started, by why it stood.
    pub elections: Family<ElectionLabels, Counter>,
}

impl Default for RaftMetrics {
    fn default() -> Self {
        RaftMetrics {
            events: Family::default(),
            log_syncs: Counter::default(),
            // 50 µs to about 13 s.
            append_seconds: Histogram::new(exponential_buckets(50e-6, 2.0, 19)),
            appended_bytes: Counter::default(),
            appended_entries: Counter::default(),
            proposals: Counter::default(),
            proposal_batch: Histogram::new(exponential_buckets(1.0, 2.0, 12)),
            commit_seconds: Histogram::new(exponential_buckets(50e-6, 2.0, 19)),
            applied_entries: Counter::default(),
            read_index_seconds: Histogram::new(exponential_buckets(50e-6, 2.0, 19)),
            member_match_index: Family::default(),
            member_lag_entries: Family::default(),
            member_lag_seconds: Family::default(),
            elections: Family::default(),
        }
    }
}

impl RaftMetrics {
    /// Counts one published event.
    pub(crate) fn event(&self, kind: RaftEventKind) {
        self.events
            .get_or_create(&EventLabels { kind: kind.into() })
            .inc();
    }

    /// Counts one election this peer started.
    pub(crate) fn election(&self, reason: ElectionReason) {
        self.elections
            .get_or_create(&ElectionLabels {
                reason: reason.into(),
            })
            .inc();
    }

    /// Registers every family under `registry` (the node gives it the
    /// `strata_raft` prefix).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "events",
            "Raft events by kind: elections started, leader and role changes, membership changes, snapshots sent, received and installed, storage failures",
            self.events.clone(),
        );
        registry.register(
            "log_syncs",
            "Rounds that wrote and fsynced the raft log",
            self.log_syncs.clone(),
        );
        registry.register_with_unit(
            "append",
            "Time to write and fsync one round of raft log records",
            Unit::Seconds,
            self.append_seconds.clone(),
        );
        registry.register_with_unit(
            "appended",
            "Bytes written to the raft log",
            Unit::Bytes,
            self.appended_bytes.clone(),
        );
        registry.register(
            "appended_entries",
            "Entries appended to the raft log",
            self.appended_entries.clone(),
        );
        registry.register(
            "proposals",
            "Client proposals stepped into raft",
            self.proposals.clone(),
        );
        registry.register(
            "proposal_batch_size",
            "Proposals stepped into raft in one round",
            self.proposal_batch.clone(),
        );
        registry.register_with_unit(
            "commit",
            "Time from a proposal's stepping into raft to its answer (committed by a quorum and applied)",
            Unit::Seconds,
            self.commit_seconds.clone(),
        );
        registry.register(
            "applied_entries",
            "Entries applied to the state machine",
            self.applied_entries.clone(),
        );
        registry.register_with_unit(
            "read_index",
            "Time a linearizable read waited for its ReadIndex round and the apply up to its index",
            Unit::Seconds,
            self.read_index_seconds.clone(),
        );
        registry.register(
            "member_match_index",
            "On the leader: the index up to which each other member's log is known to match",
            self.member_match_index.clone(),
        );
        registry.register(
            "member_lag_entries",
            "On the leader: entries each other member lacks",
            self.member_lag_entries.clone(),
        );
        registry.register_with_unit(
            "member_lag",
            "On the leader: how long ago it appended the first entry each other member lacks (0: none lacking)",
            Unit::Seconds,
            self.member_lag_seconds.clone(),
        );
        registry.register(
            "elections",
            "Elections this member started, by reason: leader_lost (its leader's heartbeats stopped), timeout (no leader known), transfer (a leader handed over)",
            self.elections.clone(),
        );
    }
}

#[cfg(test)]
mod tests {
    use prometheus_client::encoding::text::encode;

    use super::*;

    // Proves that an event is counted under its kind's label and that the
    // families carry Prometheus names and units.
    #[test]
    fn events_are_counted_by_kind_under_prometheus_names() {
        let m = RaftMetrics::default();
        m.event(RaftEventKind::ElectionStarted);
        m.event(RaftEventKind::ElectionStarted);
        m.event(RaftEventKind::LeaderChanged);
        m.append_seconds.observe(0.001);
        m.election(ElectionReason::LeaderLost);
        m.member_lag_seconds
            .get_or_create(&MemberLabels { member: 2 })
            .set(0.25);
        let mut registry = Registry::with_prefix("strata_raft");
        m.register(&mut registry);
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        assert!(
            text.contains("strata_raft_events_total{kind=\"election_started\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("strata_raft_events_total{kind=\"leader_changed\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("strata_raft_elections_total{reason=\"leader_lost\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("strata_raft_member_lag_seconds{member=\"2\"} 0.25"),
            "{text}"
        );
        assert!(
            text.contains("strata_raft_append_seconds_count 1"),
            "{text}"
        );
        assert!(
            text.contains("# UNIT strata_raft_appended_bytes bytes"),
            "{text}"
        );
    }
}
