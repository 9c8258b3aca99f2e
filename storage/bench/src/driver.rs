//! Runs a workload against a target with a fixed number of workers (the "clients").
//!
//! Open loop (`rate > 0`): request `i` is due at `start + i / rate`, whoever sends it, and its
//! latency is measured from that intended time, not from when a worker got round to sending it.
//! When the system stalls, the backlog's waiting time shows up in the percentiles instead of being
//! silently omitted (no coordinated omission). One pacer thread releases requests as they fall
//! due and idle workers take them in order; a worker never sleeps towards a due time of its own.
//! How late the client itself sent each request is recorded too (`send_lag`), so a client that
//! cannot keep up is told apart from a slow target. Closed loop (`rate == 0`): each worker sends its
//! next request as soon as the previous one finished, and latency is measured from the send.
//!
//! Every run is bounded twice: by a request count and by a deadline.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::SmallRng;
use tokio::sync::Semaphore;
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
    /// Open loop: one permit per request that has fallen due.
    due: Semaphore,
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
        due: Semaphore::new(0),
    });
    // Each recorder holds a few MB of histograms: allocating them inside the
    // workers once held the first requests of a run back by tens of
    // milliseconds (300 ms with 300 workers), so they exist before the clock
    // starts.
    let recorders: Vec<Recorder> = (0..plan.workers).map(|_| Recorder::default()).collect();
    let start = Instant::now();
    let deadline = start + plan.duration;
    let stop_pacer = Arc::new(AtomicBool::new(false));
    let pacer = if plan.rate_per_s > 0.0 {
        let shared = Arc::clone(&shared);
        let stop = Arc::clone(&stop_pacer);
        let handle = std::thread::Builder::new()
            .name("bench-pacer".into())
            .spawn(move || pace(&shared, start, deadline, &stop))
            .expect("cannot start the pacer thread");
        Some(handle)
    } else {
        None
    };
    let mut handles = Vec::with_capacity(plan.workers);
    for (worker, recorder) in recorders.into_iter().enumerate() {
        let shared = Arc::clone(&shared);
        handles.push(tokio::spawn(worker_loop(
            shared, worker, recorder, start, deadline,
        )));
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
    stop_pacer.store(true, Ordering::Relaxed);
    if let Some(pacer) = pacer {
        let joined = tokio::task::spawn_blocking(move || pacer.join().is_ok()).await;
        if !matches!(joined, Ok(true)) {
            recorder.record_error(OpKind::Read, "pacer panicked", "the pacer thread panicked");
        }
    }
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
    mut recorder: Recorder,
    start: Instant,
    deadline: Instant,
) -> Recorder {
    let plan = &shared.plan;
    let mut rng = SmallRng::seed_from_u64(plan.seed ^ (worker as u64).wrapping_mul(0x9e37_79b9));
    loop {
        if plan.rate_per_s > 0.0 {
            tokio::select! {
                permit = shared.due.acquire() => match permit {
                    Ok(permit) => permit.forget(),
                    Err(_) => break,
                },
                () = tokio::time::sleep_until(deadline) => break,
            }
        }
        let i = shared.next.fetch_add(1, Ordering::Relaxed);
        if i >= plan.max_ops {
            break;
        }
        let sent_at = if plan.rate_per_s > 0.0 {
            let due = due_at(start, i, plan.rate_per_s);
            let now = Instant::now();
            if due >= deadline || now >= deadline {
                break;
            }
            recorder.record_send_lag(now.saturating_duration_since(due));
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

fn due_at(start: Instant, i: u64, rate_per_s: f64) -> Instant {
    start + Duration::from_secs_f64(i as f64 / rate_per_s)
}

/// The pacer sleeps at least this long between releases; requests that fall
/// due meanwhile are released together. Bounds its wakeups to 4,000 a second.
const PACER_MIN_SLEEP: Duration = Duration::from_micros(250);

/// The pacer looks at `stop` at least this often.
const PACER_MAX_SLEEP: Duration = Duration::from_millis(20);

/// Open loop: adds a permit to `shared.due` for each request as it falls due,
/// until the deadline, the last request or `stop`. A worker takes a permit
/// before it claims the next request index, so it never claims one that is
/// not yet due.
///
/// It runs on a thread of its own with the OS's sleep: the runtime's timer
/// rounds up to whole milliseconds (requests left 1.3 ms late at the median)
/// and fires only when a runtime thread gets round to it.
fn pace<T: Target>(shared: &Shared<T>, start: Instant, deadline: Instant, stop: &AtomicBool) {
    let plan = &shared.plan;
    let mut released: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        let elapsed = now.min(deadline) - start;
        // Requests 0..=floor(elapsed * rate) are due.
        let due = ((elapsed.as_secs_f64() * plan.rate_per_s) as u64).saturating_add(1);
        let due = due.min(plan.max_ops);
        if due > released {
            shared
                .due
                .add_permits(usize::try_from(due - released).unwrap_or(usize::MAX));
            released = due;
        }
        if released >= plan.max_ops {
            // Wake every waiting worker: each finds no request left and stops.
            shared.due.add_permits(plan.workers);
            return;
        }
        let next = due_at(start, released, plan.rate_per_s);
        if next >= deadline {
            return;
        }
        let wait = next.saturating_duration_since(Instant::now());
        std::thread::sleep(wait.clamp(PACER_MIN_SLEEP, PACER_MAX_SLEEP));
    }
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use bytes::Bytes;
    use rand::SeedableRng;

    use super::*;
    use crate::distribution::{DistributionKind, KeyChooser};
    use crate::keys::{KeySpace, ValuePool};
    use crate::workload::WorkloadKind;

    /// Answers every request after `service` and remembers when each one
    /// arrived.
    struct Clocked {
        service: Duration,
        arrivals: Arc<Mutex<Vec<Instant>>>,
    }

    impl Clocked {
        async fn serve(&self) {
            self.arrivals.lock().expect("lock").push(Instant::now());
            tokio::time::sleep(self.service).await;
        }
    }

    impl Target for Clocked {
        async fn put(&self, _: usize, _: Bytes, _: Bytes) -> Result<(), TargetError> {
            self.serve().await;
            Ok(())
        }

        async fn get(&self, _: usize, _: Bytes, _: ReadConsistency) -> Result<bool, TargetError> {
            self.serve().await;
            Ok(true)
        }

        async fn batch(&self, _: usize, _: Vec<(Bytes, Bytes)>) -> Result<(), TargetError> {
            self.serve().await;
            Ok(())
        }

        async fn scan(&self, _: usize, _: Bytes, _: Bytes, _: u32) -> Result<usize, TargetError> {
            self.serve().await;
            Ok(0)
        }
    }

    fn workload() -> Workload {
        let mut rng = SmallRng::seed_from_u64(1);
        Workload::new(
            WorkloadKind::A,
            KeyChooser::new(DistributionKind::Uniform, 100, 0.99),
            KeySpace::new("k", 8),
            ValuePool::new(16, &mut rng),
            100,
            10,
            1,
        )
    }

    fn plan(workers: usize, rate_per_s: f64, duration: Duration) -> RunPlan {
        RunPlan {
            workers,
            max_ops: u64::MAX,
            duration,
            rate_per_s,
            read_consistency: ReadConsistency::Linearizable,
            request_timeout: Duration::from_secs(30),
            seed: 7,
        }
    }

    async fn run_clocked(plan: RunPlan, service: Duration) -> (RunResult, Vec<Duration>) {
        let start = Instant::now();
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let target = Clocked {
            service,
            arrivals: Arc::clone(&arrivals),
        };
        let progress = Progress::new("test", plan.max_ops, plan.duration, false);
        let result = run(target, workload(), plan, progress).await;
        let mut arrivals: Vec<Duration> = arrivals
            .lock()
            .expect("lock")
            .iter()
            .map(|t| *t - start)
            .collect();
        arrivals.sort();
        (result, arrivals)
    }

    // Proves that the open loop never sends request k before k / rate, with
    // many more workers than requests in flight, and sends every request due
    // before the deadline. (Real clock: only lower bounds are asserted.)
    #[tokio::test]
    async fn open_loop_sends_no_request_before_it_falls_due() {
        let (result, arrivals) = run_clocked(
            plan(50, 1000.0, Duration::from_millis(300)),
            Duration::from_millis(1),
        )
        .await;
        assert_eq!(arrivals.len() as u64 + result.missed, 300);
        for (k, at) in arrivals.iter().enumerate() {
            let due = Duration::from_millis(k as u64);
            assert!(*at >= due, "request {k} sent at {at:?}, due at {due:?}");
        }
        assert_eq!(result.recorder.send_lag().len(), arrivals.len() as u64);
        assert!(
            result.recorder.overall().min() >= 1_000,
            "faster than the service time"
        );
    }

    // Proves that when the target cannot keep up, waiting requests count from
    // their due time (no coordinated omission) and the unsent rest is missed.
    #[tokio::test]
    async fn open_loop_counts_a_backlog_from_the_due_time() {
        let (result, arrivals) = run_clocked(
            plan(1, 100.0, Duration::from_millis(500)),
            Duration::from_millis(50),
        )
        .await;
        // One worker at >= 50 ms a request serves at most 10 of the 50 due.
        assert!(arrivals.len() <= 10, "{} sent", arrivals.len());
        assert!(arrivals.len() >= 2, "{} sent", arrivals.len());
        assert_eq!(arrivals.len() as u64 + result.missed, 50);
        // Request k was due at 10k ms and could not start before 50k ms.
        let k = arrivals.len() as u64 - 1;
        let floor_us = (40 * k + 50) * 1_000;
        let max = result.recorder.overall().max();
        assert!(
            max >= floor_us,
            "max {max} us, at least {floor_us} expected"
        );
        assert!(result.recorder.send_lag().max() >= 40 * k * 1_000);
    }

    // Proves that an open loop bounded by a request count sends exactly that
    // many and ends then, not at its (far) deadline.
    #[tokio::test]
    async fn open_loop_ends_at_the_request_count() {
        let mut p = plan(8, 1000.0, Duration::from_secs(60));
        p.max_ops = 20;
        let (result, arrivals) = run_clocked(p, Duration::from_millis(1)).await;
        assert_eq!(arrivals.len(), 20);
        assert_eq!(result.recorder.ok_total(), 20);
        assert!(
            result.elapsed < Duration::from_secs(30),
            "ran {:?}",
            result.elapsed
        );
    }

    // Proves that the closed loop sends exactly the requested count.
    #[tokio::test]
    async fn closed_loop_stops_at_the_request_count() {
        let mut p = plan(4, 0.0, Duration::from_secs(10));
        p.max_ops = 50;
        let (result, arrivals) = run_clocked(p, Duration::from_millis(1)).await;
        assert_eq!(arrivals.len(), 50);
        assert_eq!(result.recorder.ok_total(), 50);
        assert!(result.recorder.send_lag().is_empty());
    }
}
