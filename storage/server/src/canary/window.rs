//! One window of the canary: a few fresh keys, the operations its workers
//! make on them until its deadline or its operation cap, and the check of
//! the resulting history, key by key (linearizability is local, so a
//! history is linearizable when each key's is).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::checker::{self, Verdict};
use super::client::{Client, Outcome};
use super::history::{Event, History};
use super::model::{Op, Ret};
use crate::metrics::{CanaryMetrics, OpKind, OpOutcome};

/// The most operations one window makes, whatever the rate: it keeps each
/// key's history within what the checker takes.
pub const MAX_WINDOW_OPS: usize = 120;
/// The most states the check of one window explores before calling the
/// window inconclusive.
pub const CHECK_BUDGET: usize = 200_000;

const _: () = assert!(MAX_WINDOW_OPS <= checker::MAX_OPS);

pub struct Window {
    pub id: String,
    pub keys: Vec<Vec<u8>>,
    pub deadline: Instant,
    history: History,
    ops_left: AtomicUsize,
    next_value: AtomicU64,
    /// The last value each key was seen holding, which compare-and-swaps
    /// expect so that some of them succeed.
    last_seen: Mutex<Vec<Option<u64>>>,
}

impl Window {
    pub fn new(id: String, keys: Vec<Vec<u8>>, length: Duration) -> Self {
        let n = keys.len();
        Window {
            id,
            keys,
            deadline: Instant::now() + length,
            history: History::new(),
            ops_left: AtomicUsize::new(MAX_WINDOW_OPS),
            next_value: AtomicU64::new(1),
            last_seen: Mutex::new(vec![None; n]),
        }
    }

    /// Claims one operation of the window's cap; false once the window is
    /// over (cap or deadline).
    pub fn take_op(&self) -> bool {
        Instant::now() < self.deadline
            && self
                .ops_left
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok()
    }

    /// A value no operation of this window wrote before.
    pub fn fresh_value(&self) -> u64 {
        self.next_value.fetch_add(1, Ordering::Relaxed)
    }

    pub fn last_seen(&self, key: usize) -> Option<u64> {
        self.last_seen.lock()[key]
    }

    /// Makes `op` on key `key` for `worker`, records it in the history
    /// (unless it certainly took no effect) and counts it.
    pub async fn call(
        &self,
        client: &Client,
        metrics: &CanaryMetrics,
        worker: usize,
        key: usize,
        op: Op,
    ) -> Outcome {
        let invoked = self.history.now_us();
        let outcome = client.call(&self.keys[key], op).await;
        let returned = self.history.now_us();
        let kind = match op {
            Op::Read => OpKind::read,
            Op::Write { .. } => OpKind::write,
            Op::Cas { .. } => OpKind::cas,
        };
        match outcome {
            Outcome::Answered(ret) => {
                metrics.op(kind, OpOutcome::ok);
                self.history
                    .record(Event::completed(worker, key, op, (invoked, returned), ret));
                if let Some(seen) = seen_after(op, ret) {
                    self.last_seen.lock()[key] = seen;
                }
            }
            Outcome::NotApplied => metrics.op(kind, OpOutcome::not_applied),
            Outcome::Unknown => {
                metrics.op(kind, OpOutcome::unknown);
                self.history
                    .record(Event::unknown(worker, key, op, invoked));
            }
        }
        outcome
    }

    /// The window's history, once its workers are done.
    pub fn into_history(self) -> History {
        self.history
    }
}

/// What the register held right after `op` answered `ret`, if that says.
fn seen_after(op: Op, ret: Ret) -> Option<Option<u64>> {
    match (op, ret) {
        (Op::Read, Ret::Value { value }) => Some(value),
        (Op::Write { value }, _)
        | (
            Op::Cas { value, .. },
            Ret::Cas {
                succeeded: true, ..
            },
        ) => Some(Some(value)),
        (_, Ret::Cas { previous, .. }) => Some(previous),
        _ => None,
    }
}

/// The check of a window: its verdict and, for a violation, the key and
/// its history.
#[derive(Debug)]
pub struct WindowCheck {
    pub verdict: Verdict,
    /// How many operations the history held.
    pub ops: usize,
    pub violating: Option<(usize, Vec<Event>)>,
}

/// Checks every key's history: a violation on any key makes the window a
/// violation; otherwise a key too costly to check makes it inconclusive.
/// `budget` bounds the states explored for each key.
pub fn check(keys: BTreeMap<usize, Vec<Event>>, budget: usize) -> WindowCheck {
    let ops = keys.values().map(Vec::len).sum();
    let mut verdict = Verdict::Ok;
    for (key, events) in keys {
        match checker::check(&events, budget) {
            Verdict::Ok => {}
            Verdict::Inconclusive => verdict = Verdict::Inconclusive,
            Verdict::Violation => {
                return WindowCheck {
                    verdict: Verdict::Violation,
                    ops,
                    violating: Some((key, events)),
                };
            }
        }
    }
    WindowCheck {
        verdict,
        ops,
        violating: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(key: usize, span: (u64, u64), value: Option<u64>) -> Event {
        Event::completed(0, key, Op::Read, span, Ret::Value { value })
    }

    fn write(key: usize, span: (u64, u64), value: u64) -> Event {
        Event::completed(1, key, Op::Write { value }, span, Ret::Written)
    }

    #[test]
    fn keys_are_checked_apart_and_one_bad_key_fails_the_window() {
        // Each key alone is fine: key 1 never sees key 0's write.
        let good = BTreeMap::from([
            (0, vec![write(0, (0, 1), 1), read(0, (2, 3), Some(1))]),
            (1, vec![read(1, (4, 5), None)]),
        ]);
        let c = check(good, CHECK_BUDGET);
        assert_eq!((c.verdict, c.ops), (Verdict::Ok, 3));
        let bad = BTreeMap::from([
            (0, vec![write(0, (0, 1), 1), read(0, (2, 3), Some(1))]),
            (1, vec![write(1, (0, 1), 2), read(1, (4, 5), None)]),
        ]);
        let c = check(bad, CHECK_BUDGET);
        assert_eq!(c.verdict, Verdict::Violation);
        assert_eq!(c.violating.map(|(k, _)| k), Some(1));
    }

    #[test]
    fn cas_observations_feed_what_later_swaps_expect() {
        let failed = Ret::Cas {
            succeeded: false,
            previous: Some(7),
        };
        let cas = Op::Cas {
            expected: None,
            value: 9,
        };
        assert_eq!(seen_after(cas, failed), Some(Some(7)));
        let swapped = Ret::Cas {
            succeeded: true,
            previous: None,
        };
        assert_eq!(seen_after(cas, swapped), Some(Some(9)));
    }
}
