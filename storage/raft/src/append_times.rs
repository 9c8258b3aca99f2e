//! When a leader's log reached each last index, so that a member's lag can
//! be told in time as well as in entries: a member that lacks entries from
//! index `i` on is as far behind as the leader's log has been past `i`.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How many moves of the last index are kept. A member further behind
/// than the oldest is reported at least as far behind as that one.
const KEPT: usize = 1024;

/// The moments the leader's last index moved, oldest first.
#[derive(Debug, Default)]
pub(crate) struct AppendTimes {
    /// `(last index, when it was reached)`, both increasing.
    moves: VecDeque<(u64, Instant)>,
}

impl AppendTimes {
    /// Notes that the log ended at `last_index` at `now`; a last index that
    /// did not grow is not a move.
    pub(crate) fn record(&mut self, last_index: u64, now: Instant) {
        if let Some(&(last, at)) = self.moves.back() {
            if last_index <= last {
                return;
            }
            debug_assert!(now >= at, "the clock went backwards");
        }
        if self.moves.len() == KEPT {
            self.moves.pop_front();
        }
        self.moves.push_back((last_index, now));
    }

    /// Forgets every move (leadership ended: a new leader starts over).
    pub(crate) fn clear(&mut self) {
        self.moves.clear();
    }

    /// How long a member whose log matches up to `match_index` has lacked
    /// entries at `now`: since the log first grew past it; zero when it
    /// lacks none that were recorded.
    pub(crate) fn lag(&self, match_index: u64, now: Instant) -> Duration {
        let first_missing = self
            .moves
            .iter()
            .find(|&&(last, _)| last > match_index)
            .map(|&(_, at)| at);
        first_missing.map_or(Duration::ZERO, |at| now.saturating_duration_since(at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_is_the_age_of_the_first_entry_a_member_lacks() {
        // Proves: a caught-up member lags 0; one that lacks entries lags
        // since the log first grew past its match index, not since the
        // latest entry; repeated last indexes are not moves; the oldest
        // moves fall off, and a member further behind than all that is
        // kept lags as far as the oldest kept.
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut times = AppendTimes::default();
        times.record(10, ms(0));
        times.record(10, ms(5));
        times.record(12, ms(100));
        times.record(20, ms(300));
        assert_eq!(times.lag(20, ms(400)), Duration::ZERO);
        assert_eq!(times.lag(12, ms(400)), Duration::from_millis(100));
        assert_eq!(times.lag(10, ms(400)), Duration::from_millis(300));
        assert_eq!(times.lag(3, ms(400)), Duration::from_millis(400));

        let mut full = AppendTimes::default();
        for i in 0..(KEPT as u64 + 10) {
            full.record(i + 1, ms(i));
        }
        assert_eq!(full.moves.len(), KEPT);
        assert_eq!(
            full.lag(0, ms(KEPT as u64 + 10)),
            Duration::from_millis(KEPT as u64)
        );
        full.clear();
        assert_eq!(full.lag(0, ms(0)), Duration::ZERO);
    }
}
