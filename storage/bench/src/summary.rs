//! The end-of-run summary: a JSON document (for scripts such as `just bench-compare`) and a short
//! human-readable table.

use std::collections::BTreeMap;

use crate::driver::RunResult;
use crate::load::LoadReport;
use crate::stats::{ErrorCount, LatencySummary};
use crate::workload::OpKind;

#[derive(Debug, Clone, serde::Serialize)]
pub struct RunConfig {
    pub target: crate::target::TargetKind,
    pub endpoints: Vec<String>,
    pub workload: crate::workload::WorkloadKind,
    pub distribution: crate::distribution::DistributionKind,
    pub theta: f64,
    pub read_consistency: crate::target::ReadConsistency,
    pub records: u64,
    pub key_size_bytes: usize,
    pub value_size_bytes: usize,
    /// Keys per request of the batch workload (1 for the others).
    pub batch_size: usize,
    pub clients: usize,
    pub connections: usize,
    /// 0 = closed loop.
    pub target_rate_per_s: f64,
    pub max_ops: Option<u64>,
    pub max_duration_s: f64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct OpSummary {
    pub ops: u64,
    pub errors: u64,
    pub latency: LatencySummary,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Summary {
    pub tool: &'static str,
    pub version: &'static str,
    pub config: RunConfig,
    pub load: Option<LoadReport>,
    pub duration_s: f64,
    /// Successful requests.
    pub ops: u64,
    pub errors: u64,
    pub not_found: u64,
    /// Open loop: requests due before the deadline that were never sent.
    pub missed: u64,
    pub throughput_ops_per_s: f64,
    /// Keys written or read per second: requests/s times the batch size.
    pub throughput_keys_per_s: f64,
    /// Successful requests; open loop measures from the intended send time.
    pub latency: LatencySummary,
    /// Open loop only: how late the client sent requests after their due
    /// time (included in `latency`). When its tail is close to the latency
    /// tail, the client, not the target, set that tail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_lag: Option<LatencySummary>,
    pub per_op: BTreeMap<OpKind, OpSummary>,
    pub error_kinds: BTreeMap<String, ErrorCount>,
}

impl Summary {
    pub fn new(config: RunConfig, load: Option<LoadReport>, result: &RunResult) -> Self {
        let r = &result.recorder;
        let secs = result.elapsed.as_secs_f64().max(1e-9);
        let batch = if config.workload == crate::workload::WorkloadKind::Batch {
            config.batch_size
        } else {
            1
        };
        let per_op = r
            .per_op()
            .into_iter()
            .map(|(op, h, errors)| {
                (
                    op,
                    OpSummary {
                        ops: h.len(),
                        errors,
                        latency: LatencySummary::of(h),
                    },
                )
            })
            .collect();
        Summary {
            tool: "strata-bench",
            version: env!("CARGO_PKG_VERSION"),
            config,
            load,
            duration_s: (secs * 1000.0).round() / 1000.0,
            ops: r.ok_total(),
            errors: r.error_total(),
            not_found: r.not_found,
            missed: result.missed,
            throughput_ops_per_s: (r.ok_total() as f64 / secs * 10.0).round() / 10.0,
            throughput_keys_per_s: (r.ok_total() as f64 * batch as f64 / secs).round(),
            latency: LatencySummary::of(&r.overall()),
            send_lag: (!r.send_lag().is_empty()).then(|| LatencySummary::of(r.send_lag())),
            per_op,
            error_kinds: r.errors.clone(),
        }
    }

    /// A few lines for people.
    pub fn human(&self) -> String {
        let ms = |us: u64| us as f64 / 1000.0;
        let c = &self.config;
        let mut out = format!(
            "{:?} workload {:?} ({:?}), {} clients / {} conns: {} ops in {:.2} s = {:.0} ops/s ({:.0} keys/s), {} errors, {} missed\n",
            c.target,
            c.workload,
            c.distribution,
            c.clients,
            c.connections,
            self.ops,
            self.duration_s,
            self.throughput_ops_per_s,
            self.throughput_keys_per_s,
            self.errors,
            self.missed
        );
        out.push_str(&format!(
            "  {:<18} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9}\n",
            "op", "ops", "errors", "p50 ms", "p99 ms", "p99.9 ms", "max ms"
        ));
        let mut row = |name: &str, ops: u64, errors: u64, l: &LatencySummary| {
            out.push_str(&format!(
                "  {:<18} {:>9} {:>7} {:>9.2} {:>9.2} {:>9.2} {:>9.2}\n",
                name,
                ops,
                errors,
                ms(l.p50_us),
                ms(l.p99_us),
                ms(l.p999_us),
                ms(l.max_us)
            ));
        };
        for (op, s) in &self.per_op {
            row(&format!("{op:?}"), s.ops, s.errors, &s.latency);
        }
        row("all", self.ops, self.errors, &self.latency);
        if let Some(lag) = &self.send_lag {
            row("(client send lag)", lag.count, 0, lag);
        }
        for (kind, e) in &self.error_kinds {
            out.push_str(&format!(
                "  error {kind}: {} (e.g. {})\n",
                e.count,
                e.samples.first().map(String::as_str).unwrap_or("")
            ));
        }
        out
    }
}
