//! YCSB core workloads A–F plus the single-operation shapes `put` and `get` used to compare with
//! etcd's own benchmark. A workload turns random numbers into the next operation.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use rand::Rng;

use crate::distribution::{DistributionKind, KeyChooser};
use crate::keys::{KeySpace, ValuePool};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkloadKind {
    /// 50 % read, 50 % update (session store).
    A,
    /// 95 % read, 5 % update (photo tagging).
    B,
    /// 100 % read (user profile cache).
    C,
    /// 95 % read, 5 % insert, reads favour the newest keys (status updates).
    D,
    /// 95 % short scan, 5 % insert (threaded conversations).
    E,
    /// 50 % read, 50 % read-modify-write (user database).
    F,
    /// 100 % single-key put (etcd `benchmark put`).
    Put,
    /// 100 % single-key get (etcd `benchmark range`).
    Get,
    /// 100 % batched puts: each request writes `--batch-size` keys at once
    /// (Strata's `Batch`, an etcd transaction of puts). Keys are uniform.
    Batch,
}

/// The fractions of each operation; they add up to 1.
#[derive(Debug, Clone, Copy)]
pub struct Mix {
    pub read: f64,
    pub update: f64,
    pub insert: f64,
    pub scan: f64,
    pub read_modify_write: f64,
    pub batch: f64,
}

impl WorkloadKind {
    pub fn mix(self) -> Mix {
        let m = |read, update, insert, scan, read_modify_write| Mix {
            read,
            update,
            insert,
            scan,
            read_modify_write,
            batch: 0.0,
        };
        match self {
            WorkloadKind::A => m(0.5, 0.5, 0.0, 0.0, 0.0),
            WorkloadKind::B => m(0.95, 0.05, 0.0, 0.0, 0.0),
            WorkloadKind::C | WorkloadKind::Get => m(1.0, 0.0, 0.0, 0.0, 0.0),
            WorkloadKind::D => m(0.95, 0.0, 0.05, 0.0, 0.0),
            WorkloadKind::E => m(0.0, 0.0, 0.05, 0.95, 0.0),
            WorkloadKind::F => m(0.5, 0.0, 0.0, 0.0, 0.5),
            WorkloadKind::Put => m(0.0, 1.0, 0.0, 0.0, 0.0),
            WorkloadKind::Batch => Mix {
                batch: 1.0,
                ..m(0.0, 0.0, 0.0, 0.0, 0.0)
            },
        }
    }

    /// YCSB's default request distribution for the workload.
    pub fn default_distribution(self) -> DistributionKind {
        match self {
            WorkloadKind::D => DistributionKind::Latest,
            WorkloadKind::Put | WorkloadKind::Get | WorkloadKind::Batch => {
                DistributionKind::Uniform
            }
            _ => DistributionKind::Zipfian,
        }
    }

    /// Whether the run reads keys that must exist beforehand.
    pub fn needs_load(self) -> bool {
        !matches!(self, WorkloadKind::Put | WorkloadKind::Batch)
    }
}

/// What one request does.
#[derive(Debug, Clone)]
pub enum Op {
    Read {
        key: Bytes,
    },
    Update {
        key: Bytes,
        value: Bytes,
    },
    Insert {
        key: Bytes,
        value: Bytes,
    },
    Scan {
        start: Bytes,
        end: Bytes,
        limit: u32,
    },
    ReadModifyWrite {
        key: Bytes,
        value: Bytes,
    },
    /// Puts of every pair in one request.
    Batch {
        pairs: Vec<(Bytes, Bytes)>,
    },
}

/// The label an operation is recorded under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    Read,
    Update,
    Insert,
    Scan,
    ReadModifyWrite,
    Batch,
}

impl OpKind {
    pub const ALL: [OpKind; 6] = [
        OpKind::Read,
        OpKind::Update,
        OpKind::Insert,
        OpKind::Scan,
        OpKind::ReadModifyWrite,
        OpKind::Batch,
    ];

    pub fn index(self) -> usize {
        self as usize
    }
}

impl Op {
    pub fn kind(&self) -> OpKind {
        match self {
            Op::Read { .. } => OpKind::Read,
            Op::Update { .. } => OpKind::Update,
            Op::Insert { .. } => OpKind::Insert,
            Op::Scan { .. } => OpKind::Scan,
            Op::ReadModifyWrite { .. } => OpKind::ReadModifyWrite,
            Op::Batch { .. } => OpKind::Batch,
        }
    }
}

/// Shared by all workers of a run: the mix, key chooser, and the insert counter that makes new
/// keys visible to later reads.
#[derive(Debug)]
pub struct Workload {
    mix: Mix,
    chooser: KeyChooser,
    keys: KeySpace,
    values: ValuePool,
    max_scan_len: u32,
    /// Keys per request of the batch workload.
    batch_size: usize,
    /// Number of keys that exist (loaded plus inserted); the next insert takes this index.
    live: Arc<AtomicU64>,
}

impl Workload {
    pub fn new(
        kind: WorkloadKind,
        chooser: KeyChooser,
        keys: KeySpace,
        values: ValuePool,
        records: u64,
        max_scan_len: u32,
        batch_size: usize,
    ) -> Self {
        assert!(records >= 1, "a workload needs at least one record");
        assert!(max_scan_len >= 1);
        assert!(batch_size >= 1, "a batch holds at least one key");
        Workload {
            mix: kind.mix(),
            chooser,
            keys,
            values,
            max_scan_len,
            batch_size,
            live: Arc::new(AtomicU64::new(records)),
        }
    }

    pub fn next(&self, rng: &mut impl Rng) -> Op {
        let live = self.live.load(Ordering::Relaxed);
        let mut p: f64 = rng.random();
        let pick = |rng: &mut _| self.keys.key(self.chooser.next(rng, live));
        p -= self.mix.read;
        if p < 0.0 {
            return Op::Read { key: pick(rng) };
        }
        p -= self.mix.update;
        if p < 0.0 {
            return Op::Update {
                key: pick(rng),
                value: self.values.next(rng),
            };
        }
        p -= self.mix.insert;
        if p < 0.0 {
            let index = self.live.fetch_add(1, Ordering::Relaxed);
            return Op::Insert {
                key: self.keys.key(index),
                value: self.values.next(rng),
            };
        }
        p -= self.mix.batch;
        if p < 0.0 {
            // Distinct keys: a batch names each key once (etcd refuses a
            // transaction that puts the same key twice).
            let mut seen = std::collections::HashSet::with_capacity(self.batch_size);
            let mut pairs = Vec::with_capacity(self.batch_size);
            while pairs.len() < self.batch_size.min(live as usize) {
                let key = pick(rng);
                if seen.insert(key.clone()) {
                    pairs.push((key, self.values.next(rng)));
                }
            }
            return Op::Batch { pairs };
        }
        p -= self.mix.scan;
        if p < 0.0 {
            return Op::Scan {
                start: pick(rng),
                end: self.keys.end(),
                limit: rng.random_range(1..=self.max_scan_len),
            };
        }
        // What is left is read-modify-write; rounding must not leave a gap.
        debug_assert!(self.mix.read_modify_write > 0.0 || p < 1e-9);
        Op::ReadModifyWrite {
            key: pick(rng),
            value: self.values.next(rng),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    fn workload(kind: WorkloadKind) -> Workload {
        let mut rng = SmallRng::seed_from_u64(5);
        Workload::new(
            kind,
            KeyChooser::new(kind.default_distribution(), 1000, 0.99),
            KeySpace::new("k", 8),
            ValuePool::new(256, &mut rng),
            1000,
            100,
            10,
        )
    }

    #[test]
    fn mixes_add_up_to_one() {
        // Proves every workload's fractions are a distribution.
        for kind in [
            WorkloadKind::A,
            WorkloadKind::B,
            WorkloadKind::C,
            WorkloadKind::D,
            WorkloadKind::E,
            WorkloadKind::F,
            WorkloadKind::Put,
            WorkloadKind::Get,
            WorkloadKind::Batch,
        ] {
            let m = kind.mix();
            let sum = m.read + m.update + m.insert + m.scan + m.read_modify_write + m.batch;
            assert!((sum - 1.0).abs() < 1e-9, "{kind:?}");
        }
    }

    #[test]
    fn workload_b_is_mostly_reads_and_d_inserts_new_keys() {
        // Proves the generated mix follows the table and inserts extend the key space.
        let mut rng = SmallRng::seed_from_u64(9);
        let b = workload(WorkloadKind::B);
        let reads = (0..10_000)
            .filter(|_| matches!(b.next(&mut rng), Op::Read { .. }))
            .count();
        assert!((9300..9700).contains(&reads), "{reads}");
        let d = workload(WorkloadKind::D);
        let inserts: Vec<Bytes> = (0..2000)
            .filter_map(|_| match d.next(&mut rng) {
                Op::Insert { key, .. } => Some(key),
                _ => None,
            })
            .collect();
        assert!(!inserts.is_empty());
        assert_eq!(inserts[0].as_ref(), b"k0001000");
        assert!(inserts.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn the_batch_workload_writes_batch_size_keys_per_request() {
        // Proves every batch request carries exactly the configured number of puts, each to a
        // different key.
        let mut rng = SmallRng::seed_from_u64(3);
        let w = workload(WorkloadKind::Batch);
        for _ in 0..100 {
            match w.next(&mut rng) {
                Op::Batch { pairs } => {
                    assert_eq!(pairs.len(), 10);
                    let keys: std::collections::HashSet<_> = pairs.iter().map(|p| &p.0).collect();
                    assert_eq!(keys.len(), 10, "keys repeat within a batch");
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
