//! The simulated disks: how slow a member's fsyncs are and what a crash
//! leaves of the writes they had not covered, both drawn from the seed.
//!
//! A member's writes become durable only at fsync. While a round's fsyncs
//! are under way the member is stopped inside that round (it neither ticks
//! nor runs another round, and messages to it wait), and what the round
//! sent after its first fsync, like the answers it gave, waits for the
//! fsyncs to finish, while the other members go on; a crash in between
//! loses the whole round's writes. What the driver sent before
//! persisting goes out at once: raft-rs allows that only for a leader's own
//! appends, so a message sent too early about unpersisted entries reaches
//! its target while a crash can still take the entries back.
//!
//! At a crash, each file's unsynced bytes survive as any seeded subset of
//! its pages, the lost ones reading as zeros, each file on its own
//! (`FaultFs::crash_reordered`); directory entries not synced in their
//! parent are lost.

use rand::Rng;
use rand::rngs::StdRng;

/// A stall: an fsync behind a full device queue or a flushing controller,
/// long enough to cost a follower its leader's heartbeats.
const STALL_MS: std::ops::RangeInclusive<u64> = 40..=150;

/// One seed's disks (every member's is the same kind).
#[derive(Debug, Clone, Copy)]
pub struct Disk {
    /// How often a round's fsyncs take time at all.
    pub slow_fsync: f64,
    /// The longest ordinary slow fsync, in simulated milliseconds.
    pub max_fsync_ms: u64,
    /// How often a slow fsync stalls instead.
    pub stall: f64,
    /// The page size of write-back: what a crash keeps or loses whole.
    pub page_bytes: usize,
}

impl Disk {
    pub fn draw(rng: &mut StdRng) -> Disk {
        Disk {
            slow_fsync: rng.random_range(0.0..0.5),
            max_fsync_ms: 6,
            stall: 0.01,
            page_bytes: if rng.random_bool(0.5) { 512 } else { 4096 },
        }
    }

    /// A disk whose fsyncs take no time.
    pub fn instant() -> Disk {
        Disk {
            slow_fsync: 0.0,
            max_fsync_ms: 0,
            stall: 0.0,
            page_bytes: 4096,
        }
    }

    /// How long the fsyncs of a round that synced take, in simulated
    /// milliseconds (0: done within the round).
    pub fn fsync_ms(&self, rng: &mut StdRng) -> u64 {
        if !rng.random_bool(self.slow_fsync) {
            return 0;
        }
        if rng.random_bool(self.stall) {
            rng.random_range(STALL_MS)
        } else {
            rng.random_range(1..=self.max_fsync_ms.max(1))
        }
    }
}
