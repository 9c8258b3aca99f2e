//! The canary's families (`strata_canary_*`): its operations by kind and
//! outcome, the windows it checked by verdict, the violations among them,
//! and when it last completed a check. They exist, at zero, on a node whose
//! canary is off.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

/// The kind of a canary operation.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum OpKind {
    read,
    write,
    cas,
}

/// How a canary operation ended.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum OpOutcome {
    /// Answered.
    ok,
    /// Certainly took no effect (refused, retryable, or a failed read).
    not_applied,
    /// May or may not take effect.
    unknown,
}

/// What the check of a window concluded.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum WindowVerdict {
    ok,
    violation,
    inconclusive,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OpLabels {
    op: OpKind,
    outcome: OpOutcome,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VerdictLabels {
    verdict: WindowVerdict,
}

/// The canary's families.
#[derive(Clone, Debug, Default)]
pub struct CanaryMetrics {
    ops: Family<OpLabels, Counter>,
    windows: Family<VerdictLabels, Counter>,
    violations: Counter,
    last_check: Gauge<f64, AtomicU64>,
}

impl CanaryMetrics {
    pub(super) fn register(&self, registry: &mut Registry) {
        // Every verdict is exported from the start, at zero, so a query
        // (or a dashboard panel) finds the series before the first window.
        for verdict in [
            WindowVerdict::ok,
            WindowVerdict::violation,
            WindowVerdict::inconclusive,
        ] {
            let _ = self.windows.get_or_create(&VerdictLabels { verdict });
        }
        registry.register(
            "ops",
            "Operations the canary made, by kind and outcome",
            self.ops.clone(),
        );
        registry.register(
            "windows",
            "Windows of the canary's history checked for linearizability, by verdict",
            self.windows.clone(),
        );
        registry.register(
            "violations",
            "Windows of the canary's history that are not linearizable",
            self.violations.clone(),
        );
        registry.register_with_unit(
            "last_check_timestamp",
            "When the canary last completed a check, in seconds since the Unix epoch",
            Unit::Seconds,
            self.last_check.clone(),
        );
    }

    /// Counts one operation.
    pub fn op(&self, op: OpKind, outcome: OpOutcome) {
        self.ops.get_or_create(&OpLabels { op, outcome }).inc();
    }

    /// Counts one checked window, completed at `unix_seconds`.
    pub fn window(&self, verdict: WindowVerdict, unix_seconds: f64) {
        self.windows.get_or_create(&VerdictLabels { verdict }).inc();
        if verdict == WindowVerdict::violation {
            self.violations.inc();
        }
        self.last_check.set(unix_seconds);
    }
}
