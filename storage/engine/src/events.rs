//! Engine events for the console and metrics: flushes, compactions and
//! write stalls, delivered to subscribers over bounded channels.
//!
//! Publishing never blocks the engine: an event for a subscriber whose
//! channel is full is dropped (and counted), and a subscriber that went
//! away is forgotten.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::time::Duration;

use parking_lot::Mutex;

/// Something the engine did in the background.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineEvent {
    /// A frozen memtable started being written to an L0 table.
    FlushStarted {
        /// Arena bytes of the memtable.
        memtable_bytes: u64,
    },
    /// A flush finished and its table is visible.
    FlushFinished {
        /// File number of the new L0 table.
        table_number: u64,
        /// Size of the new table.
        bytes_out: u64,
        /// Wall time from start to install.
        duration: Duration,
    },
    /// A compaction was picked and started.
    CompactionStarted {
        /// Level the inputs come from.
        level: usize,
        /// Level the outputs go to.
        output_level: usize,
        /// Input files from both levels.
        files_in: usize,
        /// Total size of the input files.
        bytes_in: u64,
    },
    /// A compaction finished and its outputs are visible.
    CompactionFinished {
        /// Level the inputs came from.
        level: usize,
        /// Level the outputs went to.
        output_level: usize,
        /// Input files from both levels.
        files_in: usize,
        /// Total size of the input files.
        bytes_in: u64,
        /// Output files written.
        files_out: usize,
        /// Total size of the output files.
        bytes_out: u64,
        /// Whether the file was moved down without rewriting it.
        trivial_move: bool,
        /// Wall time from start to install.
        duration: Duration,
    },
    /// A writer waited for the background thread (full memtable queue or
    /// too many L0 tables), or was slowed down ahead of that.
    WriteStalled {
        /// `true` for a full stop, `false` for a slowdown.
        stopped: bool,
        /// How long the writer waited.
        duration: Duration,
    },
}

/// The subscribers of one engine.
#[derive(Default)]
pub(crate) struct EventBus {
    subscribers: Mutex<Vec<SyncSender<EngineEvent>>>,
    dropped: AtomicU64,
}

impl EventBus {
    /// A new subscriber whose channel holds up to `capacity` events.
    pub(crate) fn subscribe(&self, capacity: usize) -> Receiver<EngineEvent> {
        let (tx, rx) = sync_channel(capacity.max(1));
        self.subscribers.lock().push(tx);
        rx
    }

    /// Offers `event` to every subscriber without waiting.
    pub(crate) fn publish(&self, event: EngineEvent) {
        let mut subs = self.subscribers.lock();
        if subs.is_empty() {
            return;
        }
        subs.retain(|tx| match tx.try_send(event.clone()) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(TrySendError::Disconnected(_)) => false,
        });
    }

    /// Events dropped because a subscriber's channel was full.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stall() -> EngineEvent {
        EngineEvent::WriteStalled {
            stopped: true,
            duration: Duration::from_millis(1),
        }
    }

    // Proves that a full subscriber loses events instead of blocking the
    // publisher, and that a dropped receiver is forgotten.
    #[test]
    fn publish_never_blocks_and_counts_drops() {
        let bus = EventBus::default();
        let rx = bus.subscribe(2);
        for _ in 0..5 {
            bus.publish(stall());
        }
        assert_eq!(rx.try_iter().count(), 2);
        assert_eq!(bus.dropped(), 3);
        drop(rx);
        bus.publish(stall());
        assert!(bus.subscribers.lock().is_empty());
    }
}
