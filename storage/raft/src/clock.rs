//! The clock a leader measures its lease on: the monotonic clock, which
//! setting the wall clock (by hand, or by NTP stepping it) does not move.
//! The simulation swaps in its own virtual clock, so that a seeded run
//! decides the lease exactly as it decides everything else.

use std::time::Instant;
#[cfg(test)]
use std::{
    sync::Arc,
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

/// Where the driver reads the time.
#[derive(Clone, Debug)]
pub(crate) enum Clock {
    /// `Instant::now()`.
    Monotonic,
    /// `base` plus the milliseconds the simulation has counted so far.
    #[cfg(test)]
    Virtual {
        base: Instant,
        elapsed_ms: Arc<AtomicU64>,
    },
}

impl Clock {
    pub(crate) fn now(&self) -> Instant {
        match self {
            Clock::Monotonic => Instant::now(),
            #[cfg(test)]
            Clock::Virtual { base, elapsed_ms } => {
                *base + Duration::from_millis(elapsed_ms.load(Ordering::Relaxed))
            }
        }
    }

    /// A virtual clock standing at `base` until `elapsed_ms` moves it.
    #[cfg(test)]
    pub(crate) fn virtual_at(base: Instant, elapsed_ms: Arc<AtomicU64>) -> Clock {
        Clock::Virtual { base, elapsed_ms }
    }
}
