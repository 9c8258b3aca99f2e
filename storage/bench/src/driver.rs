//! Runs a workload against a target with a fixed number of workers (the "clients").
//!
//! Open loop (`rate > 0`): request `i` is due at `start + i / rate`, whoever sends it, and its
//! latency is measured from that intended time, not from when a worker got round to sending it.
//! When the system stalls, the backlog's waiting time shows up in the percentiles instead of being
//! silently omitted (no coordinated omission). Closed loop (`rate == 0`): each worker sends its
//! next request as soon as the previous one finished, and latency is measured from the send.
//!
//! Every run is bounded twice: by a request count and by a deadline.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::SmallRng;
use tokio::time::Instant;

use crate::progress::Progress;
use crate::stats::Recorder;
use crate::target::{ReadConsistency, Target, TargetError};
use crate::workload::{Op, OpKind, Workload};

#[derive(Debug, Clone)]
pub struct RunPlan {
    pub workers: usize,
    /// Total requests; `u64::MAX` for "until the deadline".
    pub max_ops: u64,
    pub duration: Duration,
    /// Target rate in requests per second over all workers; 0 = closed loop.
    pub rate_per_s: f64,
    pub read_consistency: ReadConsistency,
    pub request_timeout: Duration,
    pub seed: u64,
}

#[derive(Debug)]
pub struct RunResult {
    pub recorder: Recorder,
    pub elapsed: Duration,
    /// Open loop only: requests that were due before the deadline but never sent.
    pub missed: u64,
}

struct Shared<T> {
    target: T,
    workload: Workload,
    plan: RunPlan,
    next: AtomicU64,
    done: AtomicU64,
    errors: AtomicU64,
}

pub async fn run<T: Target>(
    target: T,
    workload: Workload,
    plan: RunPlan,
    progress: Progress,
) -> RunResult {
    assert!(plan.workers >= 1, "at least one worker");
    let shared = Arc::new(Shared {
        target,
        workload,
        plan: plan.clone(),
        next: AtomicU64::new(0),
        done: AtomicU64::new(0),
        errors: AtomicU64::new(0),
    });
    let start = Instant::now();
    let deadline = start + plan.duration;
    let mut handles = Vec::with_capacity(plan.workers);
    for worker in 0..plan.workers {
        let shared = Arc::clone(&shared);
        handles.push(tokio::spawn(worker_loop(shared, worker, start, deadline)));
    }
    let ticker = {
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(200));
            // Bounded: the run ends at the deadline; this task is aborted right after.
            loop {
                tick.tick().await;
                progress.update(
                    shared.done.load(Ordering::Relaxed),
                    shared.errors.load(Ordering::Relaxed),
                    start.elapsed(),
                );
            }
        })
    };
    let mut recorder = Recorder::default();
    for h in handles {
        match h.await {
            Ok(r) => recorder.merge(&r),
            Err(e) => recorder.record_error(OpKind::Read, "worker panicked", &e.to_string()),
        }
    }
    ticker.abort();
    let elapsed = start.elapsed();
    let missed = if plan.rate_per_s > 0.0 {
        let due = (plan.duration.as_secs_f64() * plan.rate_per_s) as u64;
        due.min(plan.max_ops)
            .saturating_sub(shared.done.load(Ordering::Relaxed))
    } else {
        0
    };
    RunResult {
        recorder,
        elapsed,
        missed,
    }
}

async fn worker_loop<T: Target>(
    shared: Arc<Shared<T>>,
    worker: usize,
    start: Instant,
    deadline: Instant,
) -> Recorder {
    let plan = &shared.plan;
    let mut rng = SmallRng::seed_from_u64(plan.seed ^ (worker as u64).wrapping_mul(0x9e37_79b9));
    let mut recorder = Recorder::default();
    loop {
        let i = shared.next.fetch_add(1, Ordering::Relaxed);
        if i >= plan.max_ops {
            break;
        }
        let sent_at = if plan.rate_per_s > 0.0 {
            let due = start + Duration::from_secs_f64(i as f64 / plan.rate_per_s);
            if due >= deadline {
                break;
            }
            tokio::time::sleep_until(due).await;
            due
        } else {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            now
        };
        let op = shared.workload.next(&mut rng);
        let kind = op.kind();
        let outcome = tokio::time::timeout(
            plan.request_timeout,
            execute(&shared.target, worker, op, plan.read_consistency),
        )
        .await
        .unwrap_or_else(|_| Err(TargetError::new("client timeout", "request timed out")));
        match outcome {
            Ok(found) => {
                recorder.record_ok(kind, sent_at.elapsed());
                if !found {
                    recorder.not_found += 1;
                }
            }
            Err(e) => {
                recorder.record_error(kind, &e.kind, &e.message);
                shared.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
        shared.done.fetch_add(1, Ordering::Relaxed);
    }
    recorder
}

/// Runs one operation; `Ok(false)` means a read found no value (not an error).
async fn execute<T: Target>(
    target: &T,
    conn: usize,
    op: Op,
    consistency: ReadConsistency,
) -> Result<bool, TargetError> {
    match op {
        Op::Read { key } => target.get(conn, key, consistency).await,
        Op::Update { key, value } | Op::Insert { key, value } => {
            target.put(conn, key, value).await.map(|()| true)
        }
        Op::Scan { start, end, limit } => target.scan(conn, start, end, limit).await.map(|_| true),
        Op::ReadModifyWrite { key, value } => {
            let found = target.get(conn, key.clone(), consistency).await?;
            target.put(conn, key, value).await?;
            Ok(found)
        }
        Op::Batch { pairs } => target.batch(conn, pairs).await.map(|()| true),
    }
}
