//! Per-worker recording (HDR histograms in microseconds, error counts by kind) and the merge of
//! all workers' records at the end of a run. Workers own their recorder, so recording never locks.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::workload::OpKind;

/// Latencies up to 60 s keep 3 significant digits; longer ones saturate at the top bucket.
const MAX_LATENCY_US: u64 = 60_000_000;

/// A duration as a histogram value: whole microseconds within the bounds.
fn micros(d: Duration) -> u64 {
    (d.as_micros() as u64).clamp(1, MAX_LATENCY_US)
}

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).expect("valid histogram bounds")
}

/// Keeps at most this many example messages per error kind.
const ERROR_SAMPLES: usize = 3;

#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct ErrorCount {
    pub count: u64,
    pub samples: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Recorder {
    by_op: Vec<Histogram<u64>>,
    pub errors: BTreeMap<String, ErrorCount>,
    /// Reads (and read-modify-writes) that found no value.
    pub not_found: u64,
    /// Error counts per op, in `OpKind::ALL` order.
    errors_by_op: Vec<u64>,
    /// Open loop: how late the client itself sent each request (time from
    /// its due time to the send). Large values mean the client, not the
    /// system under test, delayed requests.
    send_lag: Histogram<u64>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            by_op: OpKind::ALL.iter().map(|_| new_histogram()).collect(),
            errors: BTreeMap::new(),
            not_found: 0,
            errors_by_op: vec![0; OpKind::ALL.len()],
            send_lag: new_histogram(),
        }
    }
}

impl Recorder {
    pub fn record_ok(&mut self, op: OpKind, latency: Duration) {
        self.by_op[op.index()].saturating_record(micros(latency));
    }

    pub fn record_send_lag(&mut self, lag: Duration) {
        self.send_lag.saturating_record(micros(lag));
    }

    pub fn send_lag(&self) -> &Histogram<u64> {
        &self.send_lag
    }

    pub fn record_error(&mut self, op: OpKind, kind: &str, message: &str) {
        self.errors_by_op[op.index()] += 1;
        let entry = self.errors.entry(kind.to_string()).or_default();
        entry.count += 1;
        if entry.samples.len() < ERROR_SAMPLES {
            entry.samples.push(message.chars().take(200).collect());
        }
    }

    pub fn merge(&mut self, other: &Recorder) {
        for (mine, theirs) in self.by_op.iter_mut().zip(&other.by_op) {
            mine.add(theirs).expect("histograms share bounds");
        }
        for (kind, count) in &other.errors {
            let entry = self.errors.entry(kind.clone()).or_default();
            entry.count += count.count;
            for s in &count.samples {
                if entry.samples.len() < ERROR_SAMPLES {
                    entry.samples.push(s.clone());
                }
            }
        }
        self.not_found += other.not_found;
        for (mine, theirs) in self.errors_by_op.iter_mut().zip(&other.errors_by_op) {
            *mine += theirs;
        }
        self.send_lag
            .add(&other.send_lag)
            .expect("histograms share bounds");
    }

    pub fn error_total(&self) -> u64 {
        self.errors.values().map(|e| e.count).sum()
    }

    pub fn ok_total(&self) -> u64 {
        self.by_op.iter().map(|h| h.len()).sum()
    }

    /// All operations together.
    pub fn overall(&self) -> Histogram<u64> {
        let mut all = new_histogram();
        for h in &self.by_op {
            all.add(h).expect("histograms share bounds");
        }
        all
    }

    /// (op, histogram, errors) for every op that ran.
    pub fn per_op(&self) -> Vec<(OpKind, &Histogram<u64>, u64)> {
        OpKind::ALL
            .iter()
            .map(|&op| (op, &self.by_op[op.index()], self.errors_by_op[op.index()]))
            .filter(|(_, h, e)| !h.is_empty() || *e > 0)
            .collect()
    }
}

/// The latency figures of one histogram, in microseconds.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_us: f64,
    pub min_us: u64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
}

impl LatencySummary {
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return LatencySummary {
                count: 0,
                mean_us: 0.0,
                min_us: 0,
                p50_us: 0,
                p90_us: 0,
                p99_us: 0,
                p999_us: 0,
                max_us: 0,
            };
        }
        LatencySummary {
            count: h.len(),
            mean_us: (h.mean() * 10.0).round() / 10.0,
            min_us: h.min(),
            p50_us: h.value_at_quantile(0.50),
            p90_us: h.value_at_quantile(0.90),
            p99_us: h.value_at_quantile(0.99),
            p999_us: h.value_at_quantile(0.999),
            max_us: h.max(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_adds_counts_and_keeps_percentiles() {
        // Proves merging worker recorders loses neither operations nor errors.
        let mut a = Recorder::default();
        let mut b = Recorder::default();
        for ms in 1..=99 {
            a.record_ok(OpKind::Read, Duration::from_millis(ms));
        }
        b.record_ok(OpKind::Update, Duration::from_millis(1000));
        b.record_error(OpKind::Update, "UNAVAILABLE", "no leader");
        a.merge(&b);
        assert_eq!(a.ok_total(), 100);
        assert_eq!(a.error_total(), 1);
        let s = LatencySummary::of(&a.overall());
        assert!((49_000..=51_000).contains(&s.p50_us), "{}", s.p50_us);
        assert!(s.max_us >= 999_000);
        assert_eq!(a.per_op().len(), 2);
    }
}
