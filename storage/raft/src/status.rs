//! What a peer reports about itself, and the events it emits.

use std::time::{SystemTime, UNIX_EPOCH};

use raft::StateRole;

use crate::error::StorageFailure;

/// A peer's role in its group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Leader,
    Follower,
    Candidate,
    Learner,
}

impl Role {
    pub(crate) fn from_raft(state: StateRole, is_learner: bool) -> Self {
        match state {
            StateRole::Leader => Role::Leader,
            StateRole::Candidate | StateRole::PreCandidate => Role::Candidate,
            StateRole::Follower if is_learner => Role::Learner,
            StateRole::Follower => Role::Follower,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Leader => "leader",
            Role::Follower => "follower",
            Role::Candidate => "candidate",
            Role::Learner => "learner",
        }
    }
}

/// A snapshot of a peer's state, refreshed by its driver after every step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerStatus {
    pub id: u64,
    pub group_id: u64,
    pub role: Role,
    pub term: u64,
    /// 0 when no leader is known.
    pub leader_id: u64,
    pub commit_index: u64,
    pub applied_index: u64,
    pub last_index: u64,
    /// First index the raft log still holds (entries before it were
    /// compacted away).
    pub first_index: u64,
    /// Payload bytes of the entries the raft log holds in memory, from
    /// `first_index` to `last_index`.
    pub log_bytes: u64,
    /// Every voter, in the incoming configuration or (during a joint
    /// change) the outgoing one.
    pub voters: Vec<u64>,
    pub learners: Vec<u64>,
    /// Voters a joint change is removing: they vote in the outgoing
    /// configuration until the group leaves it.
    pub leaving: Vec<u64>,
    /// Set once the peer's storage failed; the peer then acknowledges nothing.
    pub failure: Option<StorageFailure>,
    /// False while the peer's raft log was created empty (a new member, or
    /// one whose disk was replaced) and no leader has vouched yet that it
    /// holds everything it acknowledged before: it does not vote meanwhile.
    pub proven: bool,
}

impl PeerStatus {
    pub fn healthy(&self) -> bool {
        self.failure.is_none()
    }

    /// The peer failed on a full device: freeing space and restarting
    /// recovers.
    pub fn disk_full(&self) -> bool {
        self.failure.as_ref().is_some_and(StorageFailure::is_full)
    }

    /// The peer found that it lost entries it had acknowledged: it must be
    /// removed from the group and started again empty.
    pub fn lost_state(&self) -> Option<&StorageFailure> {
        self.failure.as_ref().filter(|f| f.is_lost_state())
    }
}

/// A leadership hand-over a leader started: to whom, and how far that
/// voter's log matched the leader's when it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HandOver {
    pub to: u64,
    /// The last index known to be in `to`'s log.
    pub match_index: u64,
    /// The leader's last index.
    pub last_index: u64,
}

/// Something that happened to a peer, for the event stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaftEvent {
    pub kind: RaftEventKind,
    pub node_id: u64,
    /// The raft group (range) the event is about.
    pub group_id: u64,
    pub term: u64,
    pub leader_id: u64,
    pub role: Role,
    pub at_ms: u64,
    /// For `LeaderChanged` to a new leader: how long the group had no
    /// leader, as this node saw it; 0 otherwise.
    pub duration_ms: u64,
    /// What happened, in words (e.g. the membership after a change).
    pub detail: String,
    /// For `ElectionStarted`: why the peer stood, and whether it asked
    /// for pre-votes first; `None` for every other kind.
    pub election: Option<ElectionStart>,
}

/// Why a peer started an election.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElectionReason {
    /// Its election timer ran out while it followed a leader: that
    /// leader's heartbeats stopped (it died, or is cut off).
    LeaderLost,
    /// Its election timer ran out while it knew no leader: a start-up, or
    /// another round after a vote that elected nobody.
    Timeout,
    /// The leader handed leadership over to it (`MsgTimeoutNow`).
    Transfer,
}

impl ElectionReason {
    pub fn as_str(self) -> &'static str {
        match self {
            ElectionReason::LeaderLost => "leader_lost",
            ElectionReason::Timeout => "timeout",
            ElectionReason::Transfer => "transfer",
        }
    }
}

/// How an election started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElectionStart {
    pub reason: ElectionReason,
    /// It asked for pre-votes first (a timer's election does; a hand-over
    /// skips them), so its term rises only once a quorum would vote.
    pub pre_vote: bool,
}

impl RaftEvent {
    /// An event of `kind` happening now to the peer whose status is `status`.
    pub(crate) fn now(
        kind: RaftEventKind,
        status: &PeerStatus,
        duration_ms: u64,
        detail: String,
    ) -> RaftEvent {
        RaftEvent {
            kind,
            node_id: status.id,
            group_id: status.group_id,
            term: status.term,
            leader_id: status.leader_id,
            role: status.role,
            at_ms: now_ms(),
            duration_ms,
            detail,
            election: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RaftEventKind {
    /// The peer learned of a new leader (or lost its leader: `leader_id` 0).
    LeaderChanged,
    /// The peer's own role changed.
    RoleChanged,
    /// The peer started an election (pre-vote or vote).
    ElectionStarted,
    /// A configuration change was applied.
    MembershipChanged,
    /// The peer finished sending a snapshot to another member.
    SnapshotSent,
    /// The peer received a whole snapshot from the leader, verified and
    /// staged it, and handed it to raft to install.
    SnapshotReceived,
    /// The peer installed a snapshot from the leader.
    SnapshotInstalled,
    /// The peer's storage failed.
    StorageFailed,
}

impl RaftEventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RaftEventKind::LeaderChanged => "leader_changed",
            RaftEventKind::RoleChanged => "role_changed",
            RaftEventKind::ElectionStarted => "election_started",
            RaftEventKind::MembershipChanged => "membership_changed",
            RaftEventKind::SnapshotSent => "snapshot_sent",
            RaftEventKind::SnapshotReceived => "snapshot_received",
            RaftEventKind::SnapshotInstalled => "snapshot_installed",
            RaftEventKind::StorageFailed => "storage_failed",
        }
    }
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
