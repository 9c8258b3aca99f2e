//! The loop of a node's periodic background tasks (the lease clock, the
//! naming of the cluster): a tick at a fixed period, delayed rather than
//! bunched up after a stall, until the node stops.

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::{Interval, MissedTickBehavior};

/// A tick every `period`; one missed is taken late, not twice.
pub fn every(period: Duration) -> Interval {
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    tick
}

/// Waits for the next tick; false once `stopping` changes (the node
/// stops) or is already true.
pub async fn next(tick: &mut Interval, stopping: &mut watch::Receiver<bool>) -> bool {
    tokio::select! {
        _ = tick.tick() => !*stopping.borrow(),
        _ = stopping.changed() => false,
    }
}
