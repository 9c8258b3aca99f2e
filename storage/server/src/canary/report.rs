//! What the canary has found, as `GET /v1/canary` answers it: whether it
//! runs, its windows by verdict, its last check and the latest window that
//! was not linearizable, with that key's history.

use parking_lot::Mutex;
use serde::Serialize;
use utoipa::ToSchema;

use super::checker::Verdict;
use super::history::Event;

/// The canary's findings on this node.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct CanaryReport {
    /// Whether this node runs the canary (`--canary`).
    pub enabled: bool,
    /// Windows checked and found linearizable.
    pub windows_ok: u64,
    /// Windows checked and found not linearizable.
    pub windows_violation: u64,
    /// Windows whose check gave up (too costly to decide).
    pub windows_inconclusive: u64,
    /// When the last check completed, in milliseconds since the Unix epoch.
    pub last_check_unix_ms: Option<u64>,
    /// The last check's verdict: `ok`, `violation` or `inconclusive`.
    pub last_verdict: Option<String>,
    /// The latest window that was not linearizable.
    pub last_violation: Option<Violation>,
}

/// A window that was not linearizable.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Violation {
    /// The window's name (`<start of the node's canary>-<number>`).
    pub window: String,
    /// The key whose history has no linearization.
    pub key: String,
    pub checked_unix_ms: u64,
    /// That key's history, in the order of invocation.
    pub history: Vec<EventView>,
}

/// One operation of a history, for people.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EventView {
    pub worker: usize,
    /// `read`, `write <value>` or `cas <expected> -> <value>`.
    pub op: String,
    /// Microseconds since the window began.
    pub invoked_us: u64,
    /// Absent when the outcome is unknown.
    pub returned_us: Option<u64>,
    /// What it answered (`absent` for a missing key); absent when unknown.
    pub result: Option<String>,
}

impl From<&Event> for EventView {
    fn from(e: &Event) -> Self {
        EventView {
            worker: e.worker,
            op: e.op.to_string(),
            invoked_us: e.invoked_us,
            returned_us: e.returned_us,
            result: e.ret.map(|r| r.to_string()),
        }
    }
}

/// The report, shared by the canary that writes it and the endpoint that
/// reads it.
#[derive(Debug, Default)]
pub struct CanaryState {
    report: Mutex<CanaryReport>,
}

impl CanaryState {
    pub fn new(enabled: bool) -> Self {
        CanaryState {
            report: Mutex::new(CanaryReport {
                enabled,
                ..CanaryReport::default()
            }),
        }
    }

    pub fn report(&self) -> CanaryReport {
        self.report.lock().clone()
    }

    /// Records a completed check.
    pub fn checked(&self, verdict: Verdict, unix_ms: u64, violation: Option<Violation>) {
        let mut r = self.report.lock();
        match verdict {
            Verdict::Ok => r.windows_ok += 1,
            Verdict::Violation => r.windows_violation += 1,
            Verdict::Inconclusive => r.windows_inconclusive += 1,
        }
        r.last_check_unix_ms = Some(unix_ms);
        r.last_verdict = Some(verdict.as_str().to_string());
        if violation.is_some() {
            r.last_violation = violation;
        }
    }
}
