//! How long a leader waits before it sends a follower another snapshot
//! after one failed.
//!
//! raft-rs asks for a new snapshot at the follower's next heartbeat answer
//! after a failure is reported. A follower whose disk is full refuses every
//! transfer once the bytes that fit are written, so the leader streamed the
//! whole snapshot again about thirteen times a second, for as long as the
//! disk stayed full. After a failure the follower is now held: the log
//! store answers raft-rs's request for a snapshot to it "temporarily
//! unavailable" (which raft-rs asks again later, sending nothing) for 200 ms,
//! doubling with each failure in a row up to 10 s; a transfer that succeeds
//! clears it. Counted in ticks, so the simulation replays it exactly.

use std::collections::{BTreeMap, BTreeSet};

/// The first hold after a failure, in ticks (200 ms at 10 ms a tick).
pub(super) const FIRST_TICKS: u64 = 20;
/// The longest hold, in ticks (10 s at 10 ms a tick).
pub(super) const MOST_TICKS: u64 = 1000;

#[derive(Debug, Clone, Copy)]
struct Hold {
    ticks_left: u64,
    /// The last hold's length: the next failure in a row doubles it.
    ticks: u64,
}

#[derive(Debug, Default)]
pub(super) struct SnapshotBackoff {
    holds: BTreeMap<u64, Hold>,
}

impl SnapshotBackoff {
    /// A transfer to `to` failed: holds it; returns the hold's ticks.
    pub(super) fn failed(&mut self, to: u64) -> u64 {
        let ticks = self
            .holds
            .get(&to)
            .map_or(FIRST_TICKS, |h| (h.ticks * 2).min(MOST_TICKS));
        self.holds.insert(
            to,
            Hold {
                ticks_left: ticks,
                ticks,
            },
        );
        ticks
    }

    /// A transfer to `to` succeeded: the next failure starts over.
    pub(super) fn sent(&mut self, to: u64) {
        self.holds.remove(&to);
    }

    /// One tick passed; returns whether the set of held followers changed.
    pub(super) fn tick(&mut self) -> bool {
        let mut changed = false;
        for hold in self.holds.values_mut() {
            if hold.ticks_left > 0 {
                hold.ticks_left -= 1;
                changed |= hold.ticks_left == 0;
            }
        }
        changed
    }

    /// The followers no snapshot may be sent to now.
    pub(super) fn held(&self) -> BTreeSet<u64> {
        self.holds
            .iter()
            .filter(|(_, h)| h.ticks_left > 0)
            .map(|(&to, _)| to)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_in_a_row_hold_longer_and_a_success_starts_over() {
        let mut b = SnapshotBackoff::default();
        assert_eq!(b.failed(3), FIRST_TICKS);
        assert_eq!(b.held(), BTreeSet::from([3]));
        for _ in 1..FIRST_TICKS {
            assert!(!b.tick());
        }
        assert!(b.tick(), "the hold ends");
        assert!(b.held().is_empty());
        assert_eq!(b.failed(3), 2 * FIRST_TICKS, "a second failure in a row");
        let mut last = 0;
        for _ in 0..10 {
            last = b.failed(3);
        }
        assert_eq!(last, MOST_TICKS);
        b.sent(3);
        assert!(b.held().is_empty());
        assert_eq!(b.failed(3), FIRST_TICKS, "starts over after a success");
        assert_eq!(b.failed(2), FIRST_TICKS, "each follower on its own");
        assert_eq!(b.held(), BTreeSet::from([2, 3]));
    }
}
