//! [`PeerConfig`]: how a peer is set up.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use strata_fs::{FileSystem, StdFs};

use crate::log::DEFAULT_SEGMENT_BYTES;
use crate::members::Members;

/// How a peer is set up.
#[derive(Debug, Clone)]
pub struct PeerConfig {
    pub id: u64,
    pub group_id: u64,
    /// The voters of a brand-new group. Ignored once the log has a
    /// configuration.
    pub bootstrap_voters: Vec<u64>,
    /// Where the raft log lives.
    pub log_dir: PathBuf,
    /// The file system the raft log is on: the real one, or a simulated
    /// one that tests can crash.
    pub log_fs: Arc<dyn FileSystem>,
    pub max_segment_bytes: u64,
    /// The logical clock: one raft tick.
    pub tick: Duration,
    /// Election timeout in ticks; the effective timeout is randomized in
    /// `[election_ticks, 2 * election_ticks)`.
    pub election_ticks: usize,
    pub heartbeat_ticks: usize,
    /// Client requests waiting for the driver at most; a full inbox turns
    /// proposals away as retryable.
    pub inbox_capacity: usize,
    /// Raft messages (and news from the transport and the snapshot thread)
    /// waiting for the driver at most, apart from client requests; a full
    /// one drops messages, which raft sends again.
    pub raft_inbox_capacity: usize,
    /// How long a ReadIndex request may wait for its answer before the peer
    /// gives up on it (a lost message, a partition); counted in ticks of
    /// the driver's clock, rounded up.
    pub read_timeout: Duration,
    pub max_inflight_msgs: usize,
    /// The payload bytes a leader sends one follower without an answer,
    /// at most (one append more than this when a single entry is larger);
    /// see `driver/flow.rs`.
    pub max_inflight_bytes: u64,
    /// Entries one append carries at most, in bytes (at least one entry).
    pub max_size_per_msg_bytes: u64,
    /// The bytes of entries a leader holds uncommitted, or committed but
    /// not yet taken by a stalled engine, at most: past it, proposals are
    /// refused as retryable (`Dropped`) until entries commit and apply, so
    /// followers that stop acknowledging, or an engine that stalls, cannot
    /// make the leader buffer without end. At least `max_size_per_msg_bytes`.
    pub max_uncommitted_bytes: u64,
    /// The bytes of committed entries one Ready hands out, and one engine
    /// write applies, at most (at least one entry); the rest wait.
    pub max_committed_bytes_per_ready: u64,
    /// The largest entry a proposal may make, in bytes; a larger one is
    /// refused as invalid. It keeps an entry within a raft log record and
    /// an append within the transport's message limit.
    pub max_entry_bytes: usize,
    /// Where snapshots are built and staged.
    pub snapshot_root: PathBuf,
    /// Compact the raft log once this many applied entries are in it.
    pub compact_log_entries: u64,
    /// Entries kept behind the applied index at compaction, so a follower
    /// that is only a little behind catches up without a snapshot.
    pub compact_keep_entries: u64,
    /// Compact the raft log also once its entries weigh this many bytes
    /// (large batches reach it long before the entry count); such a
    /// compaction keeps at most half of it.
    pub compact_log_bytes: u64,
    /// The member directory; filled from storage at start and kept current
    /// as configuration changes apply.
    pub members: Members,
    /// How a linearizable read confirms leadership (see [`ReadMode`]).
    pub read_mode: ReadMode,
}

/// How a linearizable read confirms that this node still leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadMode {
    /// A heartbeat round to a quorum for every batch of reads.
    #[default]
    Safe,
    /// A leader answers at once while its lease holds: a quorum
    /// acknowledged one of its rounds less than the lease ago (a little
    /// under an election timeout, on its monotonic clock). Other reads,
    /// and every read on a follower, take the round. Sound as long as
    /// every member runs with the same tick and election timeout and no
    /// member's clock runs 5 % faster than another's; see
    /// `driver/lease.rs`.
    Lease,
}

impl PeerConfig {
    pub fn new(id: u64, group_id: u64, bootstrap_voters: Vec<u64>, log_dir: PathBuf) -> Self {
        let snapshot_root = log_dir.join("snapshots");
        PeerConfig {
            snapshot_root,
            compact_log_entries: 20_000,
            compact_keep_entries: 5_000,
            compact_log_bytes: 64 << 20,
            members: Members::default(),
            read_mode: ReadMode::Safe,
            id,
            group_id,
            bootstrap_voters,
            log_dir,
            log_fs: Arc::new(StdFs),
            max_segment_bytes: DEFAULT_SEGMENT_BYTES,
            tick: Duration::from_millis(10),
            election_ticks: 10,
            heartbeat_ticks: 2,
            inbox_capacity: 16 * 1024,
            raft_inbox_capacity: 16 * 1024,
            read_timeout: Duration::from_secs(2),
            max_inflight_msgs: 256,
            max_inflight_bytes: 32 << 20,
            max_size_per_msg_bytes: 1 << 20,
            max_uncommitted_bytes: 64 << 20,
            max_committed_bytes_per_ready: 64 << 20,
            max_entry_bytes: 32 << 20,
        }
    }
}
