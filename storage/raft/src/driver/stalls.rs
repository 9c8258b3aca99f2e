//! Stalls of the driver thread, said in the log: a round that kept the
//! thread busy, or a tick that came late (the thread was busy, or the
//! operating system did not run it). Either holds up heartbeats; past an
//! election timeout, followers campaign against a leader that is alive.
//! One line per stall, at most one a second, once the stall passes half
//! the shortest election timeout.

use std::time::{Duration, Instant};

/// What the driver thread was doing when it stalled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stall {
    /// One round (inputs, proposals, Ready) took this long.
    Round(Duration),
    /// A tick ran this long after it was due.
    LateTick(Duration),
}

#[derive(Debug)]
pub(super) struct Stalls {
    /// Half the shortest election timeout.
    threshold: Duration,
    election_timeout: Duration,
    last_said: Option<Instant>,
}

/// At most one line this often.
const QUIET: Duration = Duration::from_secs(1);

impl Stalls {
    pub(super) fn new(tick: Duration, election_ticks: usize) -> Self {
        let election_timeout = tick * election_ticks as u32;
        Stalls {
            threshold: election_timeout / 2,
            election_timeout,
            last_said: None,
        }
    }

    /// Notes `stall` at `now`; returns the line to log, if one is due.
    pub(super) fn note(&mut self, stall: Stall, now: Instant) -> Option<String> {
        let took = match stall {
            Stall::Round(d) | Stall::LateTick(d) => d,
        };
        if took < self.threshold || self.last_said.is_some_and(|t| now - t < QUIET) {
            return None;
        }
        self.last_said = Some(now);
        let what = match stall {
            Stall::Round(_) => format!("one round kept the raft thread busy for {took:?}"),
            Stall::LateTick(_) => format!("a raft tick ran {took:?} late"),
        };
        Some(format!(
            "{what} (the election timeout is {:?} to {:?}): heartbeats and their answers waited",
            self.election_timeout,
            self.election_timeout * 2
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_past_half_the_election_timeout_is_said_once_a_second() {
        let mut stalls = Stalls::new(Duration::from_millis(10), 10);
        let t0 = Instant::now();
        assert_eq!(
            stalls.note(Stall::Round(Duration::from_millis(49)), t0),
            None
        );
        let said = stalls
            .note(Stall::Round(Duration::from_millis(80)), t0)
            .expect("said");
        assert!(
            said.starts_with("one round kept the raft thread busy for 80ms"),
            "{said}"
        );
        assert!(said.contains("100ms to 200ms"), "{said}");
        assert_eq!(
            stalls.note(Stall::LateTick(Duration::from_millis(300)), t0 + QUIET / 2),
            None,
            "quiet for a second"
        );
        let said = stalls
            .note(Stall::LateTick(Duration::from_millis(300)), t0 + QUIET)
            .expect("said again");
        assert!(said.starts_with("a raft tick ran 300ms late"), "{said}");
    }
}
