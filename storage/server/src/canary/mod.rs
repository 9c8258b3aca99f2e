//! The consistency canary (`--canary`): at a low rate, a handful of
//! concurrent workers read, write and compare-and-swap a few reserved keys
//! through the node's service core, the path a client's requests take, and
//! the node checks their history for linearizability as it goes.
//!
//! The history is cut into windows bounded in time and operations, each on
//! fresh keys so that it starts from registers never written. Once a
//! window's workers are done, its history is checked off the request path
//! (on a blocking thread, with a cap on the search), counted in the
//! `strata_canary_*` metrics and kept in the report `GET /v1/canary`
//! serves; a violation is also logged, with the offending history. Then
//! the window's keys are deleted.
//!
//! `config` holds the flags, `fault` the test-only fault the canary is
//! tested against, `keys` the reserved keys, `model` the register the
//! history must match, `history` its record, `checker` the search,
//! `client` the way into the core, `window` and `worker` the operations,
//! and `report` what the endpoint shows.

pub mod checker;
pub mod client;
pub mod config;
pub mod fault;
pub mod history;
pub mod keys;
pub mod model;
pub mod report;
pub mod window;
pub mod worker;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::task::JoinHandle;

pub use config::CanaryConfig;
pub use fault::Faults;
pub use report::{CanaryReport, CanaryState};

use checker::Verdict;
use client::Client;
use report::{EventView, Violation};
use window::{CHECK_BUDGET, Window, WindowCheck};

use crate::core::Core;
use crate::metrics::{CanaryMetrics, WindowVerdict};

/// Keys in each window: few enough that workers meet on the same key often.
const KEYS_PER_WINDOW: usize = 3;

/// Starts the canary on `core`; it runs until the task is aborted.
pub fn spawn(
    core: Arc<Core>,
    config: CanaryConfig,
    metrics: CanaryMetrics,
    state: Arc<CanaryState>,
) -> JoinHandle<()> {
    tokio::spawn(run(core, config, metrics, state))
}

async fn run(
    core: Arc<Core>,
    config: CanaryConfig,
    metrics: CanaryMetrics,
    state: Arc<CanaryState>,
) {
    let node = core.id();
    let client = Arc::new(Client::new(core));
    // Names this start of the canary, so a restarted node never reuses a
    // window's keys.
    let start = unix_ms();
    let workers = usize::from(config.workers);
    let interval =
        Duration::from_secs_f64(workers as f64 * worker::OPS_PER_ITERATION / config.rate);
    let length = Duration::from_secs(config.window_secs);
    tracing::info!(
        rate = config.rate,
        workers,
        window_secs = config.window_secs,
        "canary running"
    );
    for n in 0u64.. {
        let id = format!("{start}-{n}");
        let keys = (0..KEYS_PER_WINDOW)
            .map(|k| keys::key(node, &id, k))
            .collect();
        let window = Arc::new(Window::new(id.clone(), keys, length));
        let tasks: Vec<_> = (0..workers)
            .map(|w| {
                tokio::spawn(worker::work(
                    w,
                    window.clone(),
                    client.clone(),
                    metrics.clone(),
                    interval,
                ))
            })
            .collect();
        for task in tasks {
            if let Err(e) = task.await {
                tracing::warn!(error = %e, "canary worker failed");
            }
        }
        let Ok(window) = Arc::try_unwrap(window) else {
            tracing::warn!(
                window = id,
                "canary window still shared after its workers; skipped"
            );
            continue;
        };
        let keys = window.keys.clone();
        let history = window.into_history();
        let checked =
            tokio::task::spawn_blocking(move || window::check(history.into_keys(), CHECK_BUDGET))
                .await;
        match checked {
            Ok(check) => record(&id, &keys, check, &metrics, &state),
            Err(e) => tracing::warn!(error = %e, window = id, "canary check failed"),
        }
        client.delete(keys).await;
    }
}

/// Counts a window's check, keeps a violation for the report and logs it.
/// A window in which no operation answered checked nothing: it is not
/// counted.
fn record(
    id: &str,
    keys: &[Vec<u8>],
    check: WindowCheck,
    metrics: &CanaryMetrics,
    state: &CanaryState,
) {
    if check.ops == 0 {
        tracing::debug!(window = id, "canary window had no operations");
        return;
    }
    let now = unix_ms();
    let verdict = match check.verdict {
        Verdict::Ok => WindowVerdict::ok,
        Verdict::Violation => WindowVerdict::violation,
        Verdict::Inconclusive => WindowVerdict::inconclusive,
    };
    let violation = check.violating.map(|(key, events)| Violation {
        window: id.to_string(),
        key: String::from_utf8_lossy(&keys[key]).into_owned(),
        checked_unix_ms: now,
        history: events.iter().map(EventView::from).collect(),
    });
    if let Some(v) = &violation {
        let history = serde_json::to_string(&v.history).unwrap_or_default();
        tracing::error!(
            window = id,
            key = v.key,
            history,
            "canary: history is not linearizable"
        );
    } else if check.verdict == Verdict::Inconclusive {
        tracing::warn!(
            window = id,
            ops = check.ops,
            "canary: window too costly to check"
        );
    }
    metrics.window(verdict, now as f64 / 1000.0);
    state.checked(check.verdict, now, violation);
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
