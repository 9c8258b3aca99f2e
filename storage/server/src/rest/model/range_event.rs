//! The ranges' own events on the cluster's event stream (`event: range`):
//! a split, and a range's leader changing.

use serde::Serialize;
use utoipa::ToSchema;

use crate::groups::SplitNotice;
use crate::rest::encoding::Encoding;

/// What happened to a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RangeEventKind {
    /// The range was split off `parent` (the reporting node started its
    /// replica of it).
    Split,
    /// The reporting node's replica of the range learned of a new leader,
    /// `leader_id` (after an election, a hand-over, or a move that evens
    /// out the leaders per node).
    LeaderChanged,
}

/// An event of one range, as the reporting node saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RangeEvent {
    pub kind: RangeEventKind,
    /// The range (its raft group's id, as the status's `ranges` list it).
    pub range: u64,
    /// The node reporting the event.
    pub node_id: u64,
    /// For `leader_changed`: the new leader.
    pub leader_id: u64,
    /// For `leader_changed`: the range's term after the change.
    pub term: u64,
    /// For `split`: the range it was split off; 0 when unknown.
    pub parent: u64,
    /// For `split`: the first key the new range serves (in `encoding`).
    pub start: String,
    /// For `split`: the key past the last one it serves; empty past the
    /// last key.
    pub end: String,
    pub encoding: Encoding,
    /// When the reporting node saw it, Unix time in milliseconds.
    pub at_ms: u64,
}

impl RangeEvent {
    /// A new leader of range `e.group_id`; `None` for any other raft event
    /// (and for a leader lost, which the next election's event follows).
    pub fn from_raft(e: &strata_raft::RaftEvent) -> Option<Self> {
        if e.kind != strata_raft::RaftEventKind::LeaderChanged || e.leader_id == 0 {
            return None;
        }
        Some(RangeEvent {
            kind: RangeEventKind::LeaderChanged,
            range: e.group_id,
            node_id: e.node_id,
            leader_id: e.leader_id,
            term: e.term,
            parent: 0,
            start: String::new(),
            end: String::new(),
            encoding: Encoding::Utf8,
            at_ms: e.at_ms,
        })
    }

    /// Node `node_id`'s start of a range split off another.
    pub fn from_split(node_id: u64, s: &SplitNotice) -> Self {
        let end = s.span.end.clone().unwrap_or_default();
        let encoding = Encoding::Utf8.for_output([&s.span.start[..], &end[..]].into_iter());
        RangeEvent {
            kind: RangeEventKind::Split,
            range: s.child,
            node_id,
            leader_id: 0,
            term: 0,
            parent: s.parent,
            start: encoding.encode(&s.span.start),
            end: encoding.encode(&end),
            encoding,
            at_ms: s.at_ms,
        }
    }
}
