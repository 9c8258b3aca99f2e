//! The linearizability check of one key's history against the register
//! model: a depth-first search for an order of the operations that respects
//! real time (an operation that returned before another was invoked comes
//! first) and in which every answer is what the model gives. Sets of
//! linearized operations already tried with the same register state are
//! remembered, so each is explored once (Wing and Gong's search with Lowe's
//! memoisation, as Porcupine and Knossos do).
//!
//! Operations whose outcome is unknown may be placed anywhere after their
//! invocation, with any answer, or left out. The search is bounded: past
//! `budget` explored states it gives up, and the window counts as
//! inconclusive, never as a pass or a violation.
//!
//! It is written here rather than taken from a crate because the one
//! maintained candidate, `stateright`'s `LinearizabilityTester`, searches
//! without memoisation and without a bound on its effort (so it cannot say
//! "inconclusive", and a costly window would hold a thread without limit),
//! and it would bring a model checker and its HTTP explorer into the node.

use std::collections::HashSet;

use super::history::Event;
use super::model::{self, Ret};

/// The most operations one key's history may hold (the search keeps the
/// set of linearized ones in a `u128`).
pub const MAX_OPS: usize = 128;

/// What the check concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// An order exists: the history is linearizable.
    Ok,
    /// No order exists.
    Violation,
    /// The search gave up (too costly, or too many operations).
    Inconclusive,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Violation => "violation",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// Checks one key's `events` (its register starting absent), exploring at
/// most `budget` states.
pub fn check(events: &[Event], budget: usize) -> Verdict {
    if events.len() > MAX_OPS {
        return Verdict::Inconclusive;
    }
    let required = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.returned_us.is_some())
        .fold(0u128, |set, (i, _)| set | (1 << i));
    let mut search = Search {
        events,
        required,
        seen: HashSet::new(),
        budget,
    };
    match search.from(0, None) {
        Some(true) => Verdict::Ok,
        Some(false) => Verdict::Violation,
        None => Verdict::Inconclusive,
    }
}

struct Search<'a> {
    events: &'a [Event],
    /// The completed operations: all of them must be placed.
    required: u128,
    /// (placed operations, register state) pairs already explored.
    seen: HashSet<(u128, Option<u64>)>,
    budget: usize,
}

impl Search<'_> {
    /// Whether the operations not in `placed` can follow, from `state`;
    /// `None` once the budget is spent.
    fn from(&mut self, placed: u128, state: Option<u64>) -> Option<bool> {
        if placed & self.required == self.required {
            return Some(true);
        }
        if !self.seen.insert((placed, state)) {
            return Some(false);
        }
        if self.seen.len() > self.budget {
            return None;
        }
        // No operation may go before a pending one that returned before it
        // was invoked: only those invoked by the earliest pending return
        // are candidates.
        let horizon = self
            .pending(placed)
            .filter_map(|(_, e)| e.returned_us)
            .min()
            .unwrap_or(u64::MAX);
        let candidates: Vec<usize> = self
            .pending(placed)
            .filter(|(_, e)| e.invoked_us <= horizon)
            .map(|(i, _)| i)
            .collect();
        for i in candidates {
            let event = &self.events[i];
            let (next, ret) = model::apply(state, event.op);
            if !answers(event.ret, ret) {
                continue;
            }
            if self.from(placed | (1 << i), next)? {
                return Some(true);
            }
        }
        Some(false)
    }

    fn pending(&self, placed: u128) -> impl Iterator<Item = (usize, &Event)> {
        self.events
            .iter()
            .enumerate()
            .filter(move |(i, _)| placed & (1 << i) == 0)
    }
}

/// Whether an operation that answered `seen` (unknown when `None`) may have
/// answered `model`.
fn answers(seen: Option<Ret>, model: Ret) -> bool {
    seen.is_none_or(|s| s == model)
}

#[cfg(test)]
mod tests {
    use super::super::model::Op;
    use super::*;

    const BUDGET: usize = 100_000;

    fn read(span: (u64, u64), value: Option<u64>) -> Event {
        Event::completed(0, 0, Op::Read, span, Ret::Value { value })
    }

    fn write(span: (u64, u64), value: u64) -> Event {
        Event::completed(0, 0, Op::Write { value }, span, Ret::Written)
    }

    fn cas(
        span: (u64, u64),
        expected: Option<u64>,
        value: u64,
        ok: bool,
        prev: Option<u64>,
    ) -> Event {
        Event::completed(
            0,
            0,
            Op::Cas { expected, value },
            span,
            Ret::Cas {
                succeeded: ok,
                previous: prev,
            },
        )
    }

    fn unknown_write(invoked: u64, value: u64) -> Event {
        Event::unknown(0, 0, Op::Write { value }, invoked)
    }

    #[test]
    fn sequential_history_that_follows_the_model_passes() {
        let h = [
            read((0, 1), None),
            write((2, 3), 1),
            read((4, 5), Some(1)),
            cas((6, 7), Some(1), 2, true, Some(1)),
            cas((8, 9), Some(1), 3, false, Some(2)),
            read((10, 11), Some(2)),
        ];
        assert_eq!(check(&h, BUDGET), Verdict::Ok);
    }

    #[test]
    fn stale_read_after_an_acknowledged_write_is_a_violation() {
        let h = [write((0, 10), 1), read((20, 30), None)];
        assert_eq!(check(&h, BUDGET), Verdict::Violation);
    }

    #[test]
    fn lost_write_is_a_violation() {
        // The second write returned before the read began, yet the read
        // sees the first.
        let h = [
            write((0, 10), 1),
            write((20, 30), 2),
            read((40, 50), Some(1)),
        ];
        assert_eq!(check(&h, BUDGET), Verdict::Violation);
    }

    #[test]
    fn double_applied_cas_is_a_violation() {
        // The swap from 1 to 2 took effect again after the register was set
        // back to 1: a retried proposal applied twice.
        let h = [
            write((0, 1), 1),
            cas((2, 3), Some(1), 2, true, Some(1)),
            write((4, 5), 1),
            read((6, 7), Some(2)),
        ];
        assert_eq!(check(&h, BUDGET), Verdict::Violation);
    }

    #[test]
    fn reads_going_back_in_time_are_a_violation() {
        // Both reads overlap the write, but the first one to return saw it
        // and a later one did not.
        let h = [
            write((0, 100), 1),
            read((10, 20), Some(1)),
            read((30, 40), None),
        ];
        assert_eq!(check(&h, BUDGET), Verdict::Violation);
    }

    #[test]
    fn concurrent_reads_may_see_either_side_of_a_write() {
        let h = [
            write((0, 100), 1),
            read((5, 15), None),
            read((10, 20), Some(1)),
        ];
        assert_eq!(check(&h, BUDGET), Verdict::Ok);
    }

    #[test]
    fn concurrent_cas_race_has_one_winner_the_other_sees() {
        let h = [
            cas((0, 10), None, 1, false, Some(2)),
            cas((1, 11), None, 2, true, None),
            read((12, 13), Some(2)),
        ];
        assert_eq!(check(&h, BUDGET), Verdict::Ok);
    }

    #[test]
    fn unknown_write_may_take_effect_late_or_never() {
        let late = [
            unknown_write(0, 1),
            read((10, 20), None),
            read((30, 40), Some(1)),
        ];
        assert_eq!(check(&late, BUDGET), Verdict::Ok);
        let never = [unknown_write(0, 1), read((10, 20), None)];
        assert_eq!(check(&never, BUDGET), Verdict::Ok);
    }

    #[test]
    fn unknown_write_cannot_be_undone() {
        let h = [
            unknown_write(0, 1),
            read((10, 20), Some(1)),
            read((30, 40), None),
        ];
        assert_eq!(check(&h, BUDGET), Verdict::Violation);
    }

    #[test]
    fn unknown_write_cannot_take_effect_before_its_invocation() {
        let h = [read((0, 10), Some(1)), unknown_write(20, 1)];
        assert_eq!(check(&h, BUDGET), Verdict::Violation);
    }

    #[test]
    fn search_past_its_budget_is_inconclusive() {
        // Many overlapping writes read back in an order that is only
        // legal after a long search; one explored state is not enough.
        let mut h: Vec<Event> = (0..20).map(|v| write((0, 1000), v)).collect();
        h.push(read((2000, 2001), Some(19)));
        assert_eq!(check(&h, 1), Verdict::Inconclusive);
        assert_eq!(check(&h, BUDGET), Verdict::Ok);
    }

    #[test]
    fn random_histories_of_an_atomic_register_always_pass() {
        // Histories made by running operations on an atomic register, each
        // taking effect at a random moment inside its interval (some with
        // an unknown outcome, taking effect or not), are linearizable by
        // construction: the checker must never call one a violation, and a
        // window's worth must fit its budget.
        use rand::rngs::StdRng;
        use rand::{Rng, SeedableRng};
        for seed in 0..300u64 {
            let mut rng = StdRng::seed_from_u64(seed);
            let n = rng.random_range(1..=40);
            let mut planned: Vec<(u64, u64, u64, Op, bool)> = (0..n)
                .map(|v| {
                    let invoked = rng.random_range(0..10_000);
                    let effect = invoked + rng.random_range(0..500);
                    let returned = effect + rng.random_range(0..500);
                    let op = match rng.random_range(0..3) {
                        0 => Op::Read,
                        1 => Op::Write { value: v },
                        _ => Op::Cas {
                            expected: rng.random_bool(0.3).then(|| rng.random_range(0..n)),
                            value: v,
                        },
                    };
                    (effect, invoked, returned, op, rng.random_bool(0.1))
                })
                .collect();
            planned.sort_by_key(|p| p.0);
            let mut state = None;
            let mut events = Vec::new();
            for (_, invoked, returned, op, unknown) in planned {
                if unknown {
                    // Whether it took effect is for the register to know.
                    if rng.random_bool(0.5) {
                        state = model::apply(state, op).0;
                    }
                    events.push(Event::unknown(0, 0, op, invoked));
                } else {
                    let (next, ret) = model::apply(state, op);
                    state = next;
                    events.push(Event::completed(0, 0, op, (invoked, returned), ret));
                }
            }
            events.sort_by_key(|e| e.invoked_us);
            assert_eq!(
                check(&events, 200_000),
                Verdict::Ok,
                "seed {seed}: {events:?}"
            );
        }
    }

    #[test]
    fn history_longer_than_the_search_supports_is_inconclusive() {
        let h: Vec<Event> = (0..MAX_OPS as u64 + 1)
            .map(|v| write((2 * v, 2 * v + 1), v))
            .collect();
        assert_eq!(check(&h, BUDGET), Verdict::Inconclusive);
    }
}
