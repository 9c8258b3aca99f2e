//! db_bench-style workloads over any [`Kv`].

use std::time::{Duration, Instant};

use anyhow::{Result, ensure};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, RngCore, SeedableRng};

use crate::engines::Kv;

pub const KEY_BYTES: usize = 16;
pub const VALUE_BYTES: usize = 100;

/// Key `i`: its decimal digits, zero-padded to 16 bytes (sorts by `i`).
pub fn key(i: u64) -> [u8; KEY_BYTES] {
    let mut k = [b'0'; KEY_BYTES];
    let digits = i.to_string();
    k[KEY_BYTES - digits.len()..].copy_from_slice(digits.as_bytes());
    k
}

/// A pool of incompressible value bytes; value `i` is a 100-byte window.
pub struct Values(Vec<u8>);

impl Values {
    pub fn new(seed: u64) -> Values {
        let mut pool = vec![0u8; 1 << 20];
        StdRng::seed_from_u64(seed).fill_bytes(&mut pool);
        Values(pool)
    }
    pub fn get(&self, i: u64) -> &[u8] {
        let start = (i as usize * 97) % (self.0.len() - VALUE_BYTES);
        &self.0[start..start + VALUE_BYTES]
    }
}

/// One measured phase.
pub struct Outcome {
    pub name: &'static str,
    pub ops: u64,
    pub elapsed: Duration,
    pub found: u64,
}

impl Outcome {
    pub fn ns_per_op(&self) -> f64 {
        self.elapsed.as_nanos() as f64 / self.ops.max(1) as f64
    }
    pub fn ops_per_sec(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64()
    }
}

fn timed(name: &'static str, ops: u64, f: impl FnOnce() -> Result<u64>) -> Result<Outcome> {
    let start = Instant::now();
    let found = f()?;
    Ok(Outcome {
        name,
        ops,
        elapsed: start.elapsed(),
        found,
    })
}

/// A random permutation of `0..num`.
pub fn permutation(num: u64, seed: u64) -> Vec<u64> {
    let mut order: Vec<u64> = (0..num).collect();
    order.shuffle(&mut StdRng::seed_from_u64(seed));
    order
}

pub fn fill(db: &dyn Kv, name: &'static str, order: &[u64], values: &Values) -> Result<Outcome> {
    timed(name, order.len() as u64, || {
        for &i in order {
            db.put(&key(i), values.get(i))?;
        }
        Ok(order.len() as u64)
    })
}

pub fn read_random(db: &dyn Kv, num: u64, reads: u64, seed: u64) -> Result<Outcome> {
    let mut rng = StdRng::seed_from_u64(seed);
    let out = timed("readrandom", reads, || {
        let mut found = 0;
        for _ in 0..reads {
            if db.get(&key(rng.random_range(0..num)))?.is_some() {
                found += 1;
            }
        }
        Ok(found)
    })?;
    ensure!(
        out.found == reads,
        "{}: readrandom found {} of {reads}",
        db.name(),
        out.found
    );
    Ok(out)
}

pub fn read_seq(db: &dyn Kv, num: u64) -> Result<Outcome> {
    let out = timed("readseq", num, || {
        let mut seen = 0u64;
        let (n, mut last) = db.scan_from(b"", false, 1000)?;
        seen += n as u64;
        while seen < num {
            let (n, next) = db.scan_from(&last, true, 1000)?;
            if n == 0 {
                break;
            }
            seen += n as u64;
            last = next;
        }
        Ok(seen)
    })?;
    ensure!(
        out.found == num,
        "{}: readseq saw {} of {num}",
        db.name(),
        out.found
    );
    Ok(out)
}

pub fn seek_random(db: &dyn Kv, num: u64, seeks: u64, seed: u64) -> Result<Outcome> {
    let mut rng = StdRng::seed_from_u64(seed);
    timed("seekrandom", seeks, || {
        let mut found = 0;
        for _ in 0..seeks {
            let (n, _) = db.scan_from(&key(rng.random_range(0..num)), false, 1)?;
            found += n as u64;
        }
        Ok(found)
    })
}
