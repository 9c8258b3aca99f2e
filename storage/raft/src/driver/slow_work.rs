//! Work off the raft thread that holds writes up, said in the log: a raft
//! log write with its fsync, or an engine apply, that took a second or
//! more. Neither stops heartbeats (each runs on a thread of its own), but a
//! write waits for both before it is answered, and one that waits past the
//! request timeout is answered "outcome unknown": these lines say which of
//! the two it waited for. At most one line a second for each kind.

use std::time::{Duration, Instant};

/// What took long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Work {
    /// One group of writes to the raft log, with the fsync they shared.
    LogWrite(Duration),
    /// One batch applied to the engine, of this many entries and bytes.
    Apply {
        took: Duration,
        entries: u64,
        bytes: u64,
    },
}

/// From this long on, a piece of work is said.
pub(super) const SLOW: Duration = Duration::from_secs(1);

/// At most one line of each kind this often.
const QUIET: Duration = Duration::from_secs(1);

#[derive(Debug, Default)]
pub(super) struct SlowWork {
    log_write_said: Option<Instant>,
    apply_said: Option<Instant>,
}

impl SlowWork {
    /// Notes `work` at `now`; returns the line to log, if one is due.
    pub(super) fn note(&mut self, work: Work, now: Instant) -> Option<String> {
        let (took, said) = match work {
            Work::LogWrite(took) => (took, &mut self.log_write_said),
            Work::Apply { took, .. } => (took, &mut self.apply_said),
        };
        if took < SLOW || said.is_some_and(|t| now - t < QUIET) {
            return None;
        }
        *said = Some(now);
        Some(match work {
            Work::LogWrite(took) => format!(
                "a raft log write took {took:?} with its fsync: the disk is slow, and \
                 writes wait for it before they commit"
            ),
            Work::Apply {
                took,
                entries,
                bytes,
            } => format!(
                "applying {entries} entries ({bytes} bytes) to the storage engine took \
                 {took:?}: committed writes wait for it before they are answered"
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_work_is_said_once_a_second_for_each_kind() {
        let mut slow = SlowWork::default();
        let t0 = Instant::now();
        let write = |ms| Work::LogWrite(Duration::from_millis(ms));
        let apply = |ms| Work::Apply {
            took: Duration::from_millis(ms),
            entries: 2,
            bytes: 30 << 20,
        };
        assert_eq!(slow.note(write(999), t0), None);
        let said = slow.note(write(1500), t0).expect("said");
        assert!(said.starts_with("a raft log write took 1.5s"), "{said}");
        assert_eq!(slow.note(write(2000), t0 + QUIET / 2), None, "quiet");
        let said = slow
            .note(apply(1200), t0 + QUIET / 2)
            .expect("its own kind");
        assert!(
            said.starts_with("applying 2 entries (31457280 bytes)"),
            "{said}"
        );
        assert!(slow.note(write(2000), t0 + QUIET).is_some(), "said again");
    }
}
