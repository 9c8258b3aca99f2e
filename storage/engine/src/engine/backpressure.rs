//! Write back-pressure: how a writer reacts to a background that lags.
//!
//! Instead of growing L0 or the queue of frozen memtables without bound, or
//! failing, writes first slow down a little and then wait for the
//! background thread. The decision is a pure function of the shape.

use crate::options::Options;

/// What a writer must do before inserting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pressure {
    /// Write now (freezing the memtable first if it is full).
    Go,
    /// Sleep a moment, then write: L0 is close to the stop trigger.
    SlowDown,
    /// Wait for the background thread: the memtable is full and the queue
    /// of frozen memtables is too, or L0 reached the stop trigger.
    Stop,
}

/// Decides from the number of L0 tables, the number of frozen memtables
/// and whether the active memtable is full.
pub(crate) fn write_pressure(
    l0_tables: usize,
    frozen_memtables: usize,
    memtable_full: bool,
    opts: &Options,
) -> Pressure {
    if (memtable_full && frozen_memtables >= opts.max_immutable_memtables)
        || l0_tables >= opts.l0_stop_trigger
    {
        Pressure::Stop
    } else if l0_tables >= opts.l0_slowdown_trigger {
        Pressure::SlowDown
    } else {
        Pressure::Go
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves the order go → slow down → stop as L0 grows, and that a full
    // memtable queue stops writers only once the active memtable is full.
    #[test]
    fn pressure_rises_with_l0_and_full_queue() {
        let opts = Options {
            l0_compaction_trigger: 4,
            l0_slowdown_trigger: 8,
            l0_stop_trigger: 12,
            max_immutable_memtables: 2,
            ..Options::default()
        };
        assert_eq!(write_pressure(7, 0, false, &opts), Pressure::Go);
        assert_eq!(write_pressure(8, 0, false, &opts), Pressure::SlowDown);
        assert_eq!(write_pressure(12, 0, false, &opts), Pressure::Stop);
        assert_eq!(write_pressure(0, 2, false, &opts), Pressure::Go);
        assert_eq!(write_pressure(0, 1, true, &opts), Pressure::Go);
        assert_eq!(write_pressure(0, 2, true, &opts), Pressure::Stop);
    }
}
