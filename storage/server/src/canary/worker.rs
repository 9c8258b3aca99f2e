//! One canary worker: within a window, at its share of the rate, it picks a
//! key and an operation (read, write or compare-and-swap) and makes it;
//! after a write that answered it sometimes reads the key back at once, the
//! probe most sensitive to a node serving reads from state that lags.

use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::client::{Client, Outcome};
use super::model::Op;
use super::window::Window;
use crate::metrics::CanaryMetrics;

/// Chance that a write which answered is followed at once by a read of the
/// same key.
const READ_BACK: f64 = 0.5;
/// Operations an iteration makes on average: one, plus a read back after
/// the writes and compare-and-swaps (six in ten) that answer.
pub const OPS_PER_ITERATION: f64 = 1.0 + 0.6 * READ_BACK;

/// Works on `window` until it is over, one iteration about every `interval`.
pub async fn work(
    worker: usize,
    window: Arc<Window>,
    client: Arc<Client>,
    metrics: CanaryMetrics,
    interval: Duration,
) {
    let mut rng = StdRng::from_os_rng();
    loop {
        // Jitter keeps the workers from falling into step, so their
        // operations sometimes overlap and sometimes do not.
        tokio::time::sleep(interval.mul_f64(rng.random_range(0.5..1.5))).await;
        if !window.take_op() {
            return;
        }
        let key = rng.random_range(0..window.keys.len());
        let op = match rng.random_range(0..10) {
            0..4 => Op::Read,
            4..7 => Op::Write {
                value: window.fresh_value(),
            },
            _ => Op::Cas {
                expected: window.last_seen(key),
                value: window.fresh_value(),
            },
        };
        let outcome = window.call(&client, &metrics, worker, key, op).await;
        let wrote = op != Op::Read && matches!(outcome, Outcome::Answered(_));
        if wrote && rng.random_bool(READ_BACK) && window.take_op() {
            window.call(&client, &metrics, worker, key, Op::Read).await;
        }
    }
}
