//! The load phase: writes records `[0, records)` before a run so reads find their keys.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;
use rand::SeedableRng;
use rand::rngs::SmallRng;

use crate::keys::{KeySpace, ValuePool};
use crate::target::Target;

#[derive(Debug, Clone, serde::Serialize)]
pub struct LoadReport {
    pub records: u64,
    pub errors: u64,
    pub duration_s: f64,
}

/// Inserts every record once with `workers` concurrent writers; fails when a write keeps
/// failing or the phase runs past `timeout`.
pub async fn load<T: Target>(
    target: Arc<T>,
    keys: &KeySpace,
    values: &ValuePool,
    records: u64,
    workers: usize,
    timeout: Duration,
) -> anyhow::Result<LoadReport> {
    const ATTEMPTS: u32 = 5;
    let start = Instant::now();
    let next = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for worker in 0..workers.max(1) {
        let (target, next, errors) = (Arc::clone(&target), Arc::clone(&next), Arc::clone(&errors));
        let (keys, values) = (keys.clone(), values.clone());
        handles.push(tokio::spawn(async move {
            let mut rng = SmallRng::seed_from_u64(worker as u64);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= records {
                    return Ok(());
                }
                let mut attempt = 0;
                loop {
                    match target.put(worker, keys.key(i), values.next(&mut rng)).await {
                        Ok(()) => break,
                        Err(e) => {
                            errors.fetch_add(1, Ordering::Relaxed);
                            attempt += 1;
                            if attempt >= ATTEMPTS {
                                bail!(
                                    "load of record {i} failed {ATTEMPTS} times: {}: {}",
                                    e.kind,
                                    e.message
                                );
                            }
                            tokio::time::sleep(Duration::from_millis(50 * u64::from(attempt)))
                                .await;
                        }
                    }
                }
            }
        }));
    }
    let joined = tokio::time::timeout(timeout, async {
        for h in handles {
            h.await??;
        }
        anyhow::Ok(())
    })
    .await;
    match joined {
        Ok(result) => result?,
        Err(_) => bail!("load of {records} records did not finish within {timeout:?}"),
    }
    Ok(LoadReport {
        records,
        errors: errors.load(Ordering::Relaxed),
        duration_s: start.elapsed().as_secs_f64(),
    })
}
