//! Answers of the `/v1/cluster` routes and the data of the event stream.

use serde::{Deserialize, Serialize, Serializer};
use strata_proto::v1 as pb;
use strata_proto::v1::RaftActivity;

use crate::rest::encoding::Encoding;
use strata_raft::{
    ElectionReason as PeerElectionReason, RaftEvent as PeerEvent, RaftEventKind, Role as PeerRole,
};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::{PartialSchema, ToSchema};

/// A node's raft role, named as the raft crate names it; `unknown` when the
/// node could not be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Role(Option<PeerRole>);

/// Every role a peer can have, in the order the document lists them.
const PEER_ROLES: [PeerRole; 4] = [
    PeerRole::Leader,
    PeerRole::Follower,
    PeerRole::Candidate,
    PeerRole::Learner,
];

impl Role {
    /// The role a `strata.v1.Role` number names; `unknown` for any other.
    pub fn from_proto(role: i32) -> Self {
        let role = match pb::Role::try_from(role).unwrap_or(pb::Role::Unknown) {
            pb::Role::Leader => Some(PeerRole::Leader),
            pb::Role::Follower => Some(PeerRole::Follower),
            pb::Role::Candidate => Some(PeerRole::Candidate),
            pb::Role::Learner => Some(PeerRole::Learner),
            pb::Role::Unknown => None,
        };
        Role(role)
    }

    /// The role raft names `name`; `unknown` for any other name.
    pub fn from_name(name: &str) -> Self {
        Role(PEER_ROLES.into_iter().find(|r| r.as_str() == name))
    }

    /// A node that could not be asked.
    pub fn unknown() -> Self {
        Role(None)
    }

    pub fn as_str(self) -> &'static str {
        self.0.map_or("unknown", PeerRole::as_str)
    }
}

impl From<PeerRole> for Role {
    fn from(role: PeerRole) -> Self {
        Role(Some(role))
    }
}

impl Serialize for Role {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl PartialSchema for Role {
    fn schema() -> RefOr<Schema> {
        let names = PEER_ROLES.map(PeerRole::as_str).into_iter();
        names_schema(
            "Raft role of a node; `unknown` when the node could not be asked.",
            names.chain(["unknown"]),
        )
    }
}

impl ToSchema for Role {}

/// A string schema that takes one of `names`.
fn names_schema<'a>(description: &str, names: impl Iterator<Item = &'a str>) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(description))
        .enum_values(Some(names))
        .into()
}

/// One node's view of the raft group.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeStatus {
    /// Node id.
    pub id: u64,
    /// host:port of the node's API.
    pub address: String,
    pub role: Role,
    /// The node's current raft term.
    pub term: u64,
    /// Highest raft log index known committed.
    pub commit_index: u64,
    /// Highest raft log index applied to the engine.
    pub applied_index: u64,
    /// False when the node cannot be reached or its storage has failed.
    pub healthy: bool,
    /// The leader this node knows of; 0 when none.
    pub leader_id: u64,
    /// Why the node is unhealthy, when it is.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub error: String,
    /// False while the node's raft log was created empty (a new member, or
    /// a member whose disk was replaced) and no leader has vouched yet that
    /// it holds everything it acknowledged before: it does not vote
    /// meanwhile. False too for a node that could not be asked.
    pub proven: bool,
    /// True while a joint configuration change is removing this voter: it
    /// still votes, in the outgoing configuration, until the group leaves
    /// it.
    pub leaving: bool,
    /// The cluster the node belongs to, as 16 hex digits: a random id the
    /// cluster's first leader drew (a cluster restored from a backup draws
    /// a new one). Empty until that leader's entry is applied on the node,
    /// and for a node that could not be asked.
    #[schema(example = "5f3a9c0d1e2b4a68")]
    pub cluster_id: String,
}

/// A cluster id as the API shows it: 16 hex digits, empty for none (0).
pub fn cluster_id_text(id: u64) -> String {
    if id == 0 {
        String::new()
    } else {
        format!("{id:016x}")
    }
}

impl From<&pb::NodeStatus> for NodeStatus {
    fn from(n: &pb::NodeStatus) -> Self {
        NodeStatus {
            id: n.id,
            address: n.address.clone(),
            role: Role::from_proto(n.role),
            term: n.term,
            commit_index: n.commit_index,
            applied_index: n.applied_index,
            healthy: n.healthy,
            leader_id: n.leader_id,
            error: n.error.clone(),
            proven: n.proven,
            leaving: n.leaving,
            cluster_id: cluster_id_text(n.cluster_id),
        }
    }
}

/// Result of GET /v1/cluster/status; also the data of the `status` SSE
/// event.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterStatus {
    /// The leader as seen by the answering node; 0 when none is known.
    pub leader_id: u64,
    /// The answering node's current term.
    pub term: u64,
    /// The answering node's cluster id (see `NodeStatus.cluster_id`).
    #[schema(example = "5f3a9c0d1e2b4a68")]
    pub cluster_id: String,
    /// Every member, as reported by itself; an unreachable peer appears with
    /// `healthy: false`, `role: unknown` and an `error`.
    pub nodes: Vec<NodeStatus>,
    /// The ranges of keys and the raft groups serving them, in key order.
    /// A cluster starts with one range over every key; a split adds one.
    pub ranges: Vec<RangeStatus>,
}

impl From<&pb::StatusResponse> for ClusterStatus {
    fn from(s: &pb::StatusResponse) -> Self {
        ClusterStatus {
            leader_id: s.leader_id,
            term: s.term,
            cluster_id: cluster_id_text(s.cluster_id),
            nodes: s.nodes.iter().map(NodeStatus::from).collect(),
            ranges: s.ranges.iter().map(RangeStatus::from).collect(),
        }
    }
}

/// One range of keys and the raft group that serves it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RangeStatus {
    /// The raft group's id.
    pub id: u64,
    /// The range's first key (inclusive); empty: the first key there is.
    pub start: String,
    /// Its end (exclusive); empty: past the last key there is.
    pub end: String,
    /// `base64` when `start` or `end` is not valid UTF-8 (then both are
    /// base64).
    pub encoding: Encoding,
    pub voters: Vec<u64>,
    pub learners: Vec<u64>,
    /// 0 when no leader is known.
    pub leader_id: u64,
    pub term: u64,
}

impl From<&pb::RangeStatus> for RangeStatus {
    fn from(r: &pb::RangeStatus) -> Self {
        let encoding = Encoding::Utf8.for_output([&r.start[..], &r.end[..]].into_iter());
        RangeStatus {
            id: r.id,
            start: encoding.encode(&r.start),
            end: encoding.encode(&r.end),
            encoding,
            voters: r.voters.clone(),
            learners: r.learners.clone(),
            leader_id: r.leader_id,
            term: r.term,
        }
    }
}

/// One member of the raft configuration.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Member {
    /// Node id.
    pub id: u64,
    /// host:port of the node's API.
    pub address: String,
    /// True for voters, false for learners.
    pub voter: bool,
    /// True while a joint configuration change is removing this voter: it
    /// still votes, in the outgoing configuration, until the group leaves
    /// it (which it does by itself once the change is applied).
    pub leaving: bool,
}

/// Result of GET /v1/cluster/members and of every membership change.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Members {
    pub members: Vec<Member>,
}

impl From<&[pb::Member]> for Members {
    fn from(members: &[pb::Member]) -> Self {
        let members = members
            .iter()
            .map(|m| Member {
                id: m.id,
                address: m.address.clone(),
                voter: m.voter,
                leaving: m.leaving,
            })
            .collect();
        Members { members }
    }
}

/// Body of POST /v1/cluster/members.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddMemberRequest {
    #[schema(minimum = 1)]
    pub id: u64,
    /// host:port the node serves on (API and raft).
    pub address: String,
}

/// Body of POST /v1/cluster/leader.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TransferLeaderRequest {
    /// Id of the voter that should lead.
    pub target_id: u64,
    /// The range whose leadership moves (its `id` in the status's
    /// `ranges`); the first range when absent or 0.
    #[serde(default)]
    pub range: u64,
}

/// Result of POST /v1/cluster/leader: the target leads now.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TransferLeaderResult {
    pub leader_id: u64,
    pub term: u64,
    /// The range whose leadership moved.
    pub range: u64,
}

/// Body of POST /v1/cluster/ranges/split.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SplitRangeRequest {
    /// The first key of the new range (in `encoding`); not empty.
    #[schema(example = "m")]
    pub key: String,
    /// How `key` is written; `utf8` when absent.
    #[serde(default)]
    pub encoding: Encoding,
}

/// Result of POST /v1/cluster/ranges/split.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SplitRangeResult {
    /// The range that starts at the key now: the new one, or the one that
    /// started there already.
    pub range: RangeStatus,
    /// False when a range started at the key already and nothing was split.
    pub split: bool,
    /// The split's index in the raft log of the range it split; 0 when
    /// nothing was split.
    pub index: u64,
}

/// What a `raft` event reports, named as the raft crate names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventKind(RaftEventKind);

/// Every kind of raft event, in the order the document lists them.
const EVENT_KINDS: [RaftEventKind; 8] = [
    RaftEventKind::LeaderChanged,
    RaftEventKind::RoleChanged,
    RaftEventKind::ElectionStarted,
    RaftEventKind::MembershipChanged,
    RaftEventKind::SnapshotSent,
    RaftEventKind::SnapshotReceived,
    RaftEventKind::SnapshotInstalled,
    RaftEventKind::StorageFailed,
];

impl From<RaftEventKind> for EventKind {
    fn from(kind: RaftEventKind) -> Self {
        EventKind(kind)
    }
}

impl Serialize for EventKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0.as_str())
    }
}

impl PartialSchema for EventKind {
    fn schema() -> RefOr<Schema> {
        let names = EVENT_KINDS.map(RaftEventKind::as_str).into_iter();
        names_schema("What a `raft` event reports.", names)
    }
}

impl ToSchema for EventKind {}

/// Data of the `raft` SSE event.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RaftEvent {
    #[schema(inline)]
    pub kind: EventKind,
    /// The node reporting the event.
    pub node_id: u64,
    /// Term after the change.
    pub term: u64,
    /// Leader known to the reporting node after the change; 0 when none.
    pub leader_id: u64,
    pub role: Role,
    /// When the reporting node observed the change, Unix time in
    /// milliseconds.
    pub at_ms: u64,
    /// For `leader_changed` to a new leader: how long the reporting node saw
    /// no leader; 0 otherwise.
    pub duration_ms: u64,
    /// What happened, in words (e.g. the configuration after a membership
    /// change); may be empty.
    pub detail: String,
    /// For `election_started`: why the node stood; absent for every other
    /// kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub election: Option<ElectionStart>,
}

/// Why a node started an election.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ElectionReason {
    /// Its election timer ran out while it followed a leader: that
    /// leader's heartbeats stopped (it died, or is cut off).
    LeaderLost,
    /// Its election timer ran out while it knew no leader: a start-up, or
    /// another round after a vote that elected nobody.
    Timeout,
    /// The leader handed leadership over to it.
    Transfer,
}

impl From<PeerElectionReason> for ElectionReason {
    fn from(reason: PeerElectionReason) -> Self {
        match reason {
            PeerElectionReason::LeaderLost => ElectionReason::LeaderLost,
            PeerElectionReason::Timeout => ElectionReason::Timeout,
            PeerElectionReason::Transfer => ElectionReason::Transfer,
        }
    }
}

/// Every reason, so that a name read back finds its reason.
const ELECTION_REASONS: [PeerElectionReason; 3] = [
    PeerElectionReason::LeaderLost,
    PeerElectionReason::Timeout,
    PeerElectionReason::Transfer,
];

/// How an election started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ElectionStart {
    pub reason: ElectionReason,
    /// It asked for pre-votes first (an election timer's election does; a
    /// hand-over skips them): its term rose only once a quorum would vote.
    pub pre_vote: bool,
}

impl From<&PeerEvent> for RaftEvent {
    fn from(e: &PeerEvent) -> Self {
        RaftEvent {
            kind: e.kind.into(),
            node_id: e.node_id,
            term: e.term,
            leader_id: e.leader_id,
            role: e.role.into(),
            at_ms: e.at_ms,
            duration_ms: e.duration_ms,
            detail: e.detail.clone(),
            election: e.election.map(|s| ElectionStart {
                reason: s.reason.into(),
                pre_vote: s.pre_vote,
            }),
        }
    }
}

impl RaftEvent {
    /// Node `node_id`'s event as its stats carry it; `None` for a kind this
    /// build does not know.
    pub fn from_activity(node_id: u64, a: &RaftActivity) -> Option<RaftEvent> {
        let kind = EVENT_KINDS.into_iter().find(|k| k.as_str() == a.kind)?;
        let reason = ELECTION_REASONS
            .into_iter()
            .find(|r| r.as_str() == a.election_reason);
        Some(RaftEvent {
            kind: kind.into(),
            node_id,
            term: a.term,
            leader_id: a.leader_id,
            role: Role::from_name(&a.role),
            at_ms: a.at_ms,
            duration_ms: a.duration_ms,
            detail: a.detail.clone(),
            election: reason.map(|r| ElectionStart {
                reason: r.into(),
                pre_vote: a.pre_vote,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_kinds_and_roles_keep_the_peers_names() {
        // Proves: the REST names of raft's event kinds and roles are the
        // ones the raft crate gives them. The matches name every variant,
        // so a kind or role the raft crate gains fails to compile here: a
        // reminder to add it to EVENT_KINDS or PEER_ROLES, which the
        // document's lists come from.
        for kind in EVENT_KINDS {
            match kind {
                RaftEventKind::LeaderChanged
                | RaftEventKind::RoleChanged
                | RaftEventKind::ElectionStarted
                | RaftEventKind::MembershipChanged
                | RaftEventKind::SnapshotSent
                | RaftEventKind::SnapshotReceived
                | RaftEventKind::SnapshotInstalled
                | RaftEventKind::StorageFailed => {}
            }
            let json = serde_json::to_value(EventKind::from(kind)).unwrap();
            assert_eq!(json, kind.as_str());
        }
        for role in PEER_ROLES {
            match role {
                PeerRole::Leader | PeerRole::Follower => {}
                PeerRole::Candidate | PeerRole::Learner => {}
            }
            let json = serde_json::to_value(Role::from(role)).unwrap();
            assert_eq!(json, role.as_str());
            assert_eq!(Role::from(role).as_str(), role.as_str());
        }
        assert_eq!(
            serde_json::to_value(Role::from_proto(99)).unwrap(),
            "unknown"
        );
    }
}
