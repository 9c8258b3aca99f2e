//! One window's history: every operation the canary's workers completed, or
//! whose outcome is unknown, with when it was invoked and when it returned.
//!
//! Operations that certainly took no effect (refused before they reached
//! raft, or reads that failed) are not recorded: they cannot constrain what
//! the others saw.

use std::collections::BTreeMap;
use std::time::Instant;

use parking_lot::Mutex;

use super::model::{Op, Ret};

/// One operation of the history. Times are microseconds since the window
/// began, on this node's monotonic clock, taken just before the call and
/// just after its answer, so they bracket the moment it took effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub worker: usize,
    /// The key's number within the window.
    pub key: usize,
    pub op: Op,
    pub invoked_us: u64,
    /// `None` when the outcome is unknown: the operation may take effect at
    /// any point after its invocation, or never.
    pub returned_us: Option<u64>,
    /// `None` when the outcome is unknown.
    pub ret: Option<Ret>,
}

impl Event {
    /// A completed operation.
    pub fn completed(worker: usize, key: usize, op: Op, span_us: (u64, u64), ret: Ret) -> Self {
        Event {
            worker,
            key,
            op,
            invoked_us: span_us.0,
            returned_us: Some(span_us.1),
            ret: Some(ret),
        }
    }

    /// An operation whose outcome is unknown.
    pub fn unknown(worker: usize, key: usize, op: Op, invoked_us: u64) -> Self {
        Event {
            worker,
            key,
            op,
            invoked_us,
            returned_us: None,
            ret: None,
        }
    }
}

/// The events of one window, recorded by its workers concurrently.
pub struct History {
    started: Instant,
    events: Mutex<Vec<Event>>,
}

impl History {
    pub fn new() -> Self {
        History {
            started: Instant::now(),
            events: Mutex::new(Vec::new()),
        }
    }

    /// Microseconds since the window began.
    pub fn now_us(&self) -> u64 {
        self.started.elapsed().as_micros() as u64
    }

    pub fn record(&self, event: Event) {
        self.events.lock().push(event);
    }

    /// The events, by key, each key's in the order of invocation.
    pub fn into_keys(self) -> BTreeMap<usize, Vec<Event>> {
        let mut keys: BTreeMap<usize, Vec<Event>> = BTreeMap::new();
        for e in self.events.into_inner() {
            keys.entry(e.key).or_default().push(e);
        }
        for events in keys.values_mut() {
            events.sort_by_key(|e| e.invoked_us);
        }
        keys
    }
}

impl Default for History {
    fn default() -> Self {
        Self::new()
    }
}
