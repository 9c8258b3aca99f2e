//! How long a leader waits before sending a snapshot again to a member that
//! refused the last one for a reason that lasts (its disk is full, or the
//! snapshot is over its size limit). Raft sends a member nothing more until
//! it is told how the last snapshot ended, so the sender holds that report
//! back: without the wait, raft would build the next attempt at the next
//! heartbeat answer, about ten a second, each reading the checkpoint and
//! logging the same refusal. Any other failure (a broken connection, a
//! stream cut short) is reported at once, as is a snapshot delivered, which
//! also forgets the member's wait.

use std::collections::HashMap;
use std::time::Duration;

use parking_lot::Mutex;

/// The wait after a member's first lasting refusal; each further one in a
/// row doubles it.
const FIRST_WAIT: Duration = Duration::from_millis(250);
/// The longest wait: a member whose operator freed space is sent the
/// snapshot again within this.
const MAX_WAIT: Duration = Duration::from_secs(4);

/// The wait owed per member, shared by every snapshot send of one group.
#[derive(Debug, Default)]
pub struct RefusalBackoff {
    waits: Mutex<HashMap<u64, Duration>>,
}

impl RefusalBackoff {
    /// Member `to` refused a snapshot for a lasting reason: how long to
    /// hold the report back. Doubles with each refusal in a row, up to
    /// [`MAX_WAIT`].
    pub fn refused(&self, to: u64) -> Duration {
        let mut waits = self.waits.lock();
        let wait = waits
            .get(&to)
            .map_or(FIRST_WAIT, |w| (*w * 2).min(MAX_WAIT));
        waits.insert(to, wait);
        wait
    }

    /// Member `to` took a snapshot: its next refusal starts afresh.
    pub fn delivered(&self, to: u64) {
        self.waits.lock().remove(&to);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_per_member_up_to_the_cap_and_restart_after_a_delivery() {
        let b = RefusalBackoff::default();
        let waits: Vec<_> = (0..7).map(|_| b.refused(2)).collect();
        let ms: Vec<_> = waits.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, [250, 500, 1000, 2000, 4000, 4000, 4000]);
        assert_eq!(
            b.refused(3),
            FIRST_WAIT,
            "another member's count is its own"
        );
        b.delivered(2);
        assert_eq!(b.refused(2), FIRST_WAIT);
    }
}
