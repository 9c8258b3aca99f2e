//! Memtable insert and point lookup: the arena skiplist against
//! `crossbeam-skiplist` and `BTreeMap`, in one criterion run.
//!
//! 16-byte keys, 100-byte values, random order, `N` entries per iteration
//! (criterion reports time per iteration; divide by `N`, or read the
//! elements/s throughput). All three store owned byte strings, as a
//! memtable must: the arena copies into its blocks, the others into `Vec`s.
//!
//! Our machines are shared, so wall time mostly measures the neighbours:
//! this bench measures the benchmark thread's own CPU time (nanoseconds on
//! a CPU, from `/proc/thread-self/schedstat`) instead.
//!
//! Run: `just bench-memtable`.

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use crossbeam_skiplist::SkipMap;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{RngCore, SeedableRng};
use strata_arena::{BytewiseComparator, SkipListWriter};

const N: usize = 100_000;
const ARENA_BLOCK_BYTES: usize = 4 << 20;

fn keys_and_value() -> (Vec<[u8; 16]>, [u8; 100]) {
    let mut rng = StdRng::seed_from_u64(42);
    let mut keys: Vec<[u8; 16]> = (0..N as u64)
        .map(|i| {
            let mut k = [0u8; 16];
            k[..8].copy_from_slice(&i.to_be_bytes());
            k[8..].copy_from_slice(&rng.next_u64().to_le_bytes());
            k
        })
        .collect();
    keys.shuffle(&mut rng);
    let mut value = [0u8; 100];
    rng.fill_bytes(&mut value);
    (keys, value)
}

/// Nanoseconds the current thread has spent on a CPU.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .expect("/proc/thread-self/schedstat is readable (Linux)")
}

/// Criterion measurement: CPU time of the benchmark thread.
struct ThreadCpuTime;

impl Measurement for ThreadCpuTime {
    type Intermediate = u64;
    type Value = u64;
    fn start(&self) -> u64 {
        thread_cpu_ns()
    }
    fn end(&self, start: u64) -> u64 {
        thread_cpu_ns().saturating_sub(start)
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, v: &u64) -> f64 {
        *v as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &NanosFormatter
    }
}

struct NanosFormatter;

impl ValueFormatter for NanosFormatter {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        let (factor, unit) = if typical >= 1e6 {
            (1e-6, "ms(cpu)")
        } else if typical >= 1e3 {
            (1e-3, "us(cpu)")
        } else {
            (1.0, "ns(cpu)")
        };
        values.iter_mut().for_each(|v| *v *= factor);
        unit
    }
    fn scale_throughputs(&self, _typical: f64, t: &Throughput, values: &mut [f64]) -> &'static str {
        let n = match t {
            Throughput::Elements(n) | Throughput::Bytes(n) | Throughput::BytesDecimal(n) => *n,
            _ => 1,
        } as f64;
        // ns per iteration -> elements per CPU-second.
        values.iter_mut().for_each(|v| *v = n * 1e9 / *v);
        "elem/cpu-s"
    }
    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

type Crit = Criterion<ThreadCpuTime>;

fn new_arena() -> SkipListWriter<BytewiseComparator> {
    SkipListWriter::new(BytewiseComparator, ARENA_BLOCK_BYTES)
}

/// Inserts `keys` into `list`, each search from the head or, with
/// `near_last`, from the previous insert's path.
fn fill_arena(
    mut list: SkipListWriter<BytewiseComparator>,
    keys: &[[u8; 16]],
    value: &[u8],
    near_last: bool,
) -> SkipListWriter<BytewiseComparator> {
    for k in keys {
        if near_last {
            list.insert_near_last(k, value);
        } else {
            list.insert(k, value);
        }
    }
    list
}

fn fill_btreemap(
    mut map: BTreeMap<Vec<u8>, Vec<u8>>,
    keys: &[[u8; 16]],
    value: &[u8],
) -> BTreeMap<Vec<u8>, Vec<u8>> {
    for k in keys {
        map.insert(k.to_vec(), value.to_vec());
    }
    map
}

fn insert(c: &mut Crit) {
    let (keys, value) = keys_and_value();
    let mut group = c.benchmark_group("memtable_insert");
    group.throughput(Throughput::Elements(N as u64));
    group.sample_size(20);
    group.bench_function("strata_arena_skiplist", |b| {
        b.iter_batched(
            new_arena,
            |list| fill_arena(list, &keys, &value, false),
            BatchSize::LargeInput,
        )
    });
    group.bench_function("crossbeam_skiplist", |b| {
        b.iter_batched(
            SkipMap::<Vec<u8>, Vec<u8>>::new,
            |map| {
                for k in &keys {
                    map.insert(k.to_vec(), value.to_vec());
                }
                map
            },
            BatchSize::LargeInput,
        )
    });
    group.bench_function("btreemap", |b| {
        b.iter_batched(
            BTreeMap::new,
            |map| fill_btreemap(map, &keys, &value),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

/// Keys in batches of `BATCH`, each batch sorted, as the engine inserts a
/// write batch: the plain search from the head against one that starts from
/// the previous insert's path, and BTreeMap fed the same order.
fn insert_sorted_batches(c: &mut Crit) {
    const BATCH: usize = 100;
    let (mut keys, value) = keys_and_value();
    for batch in keys.chunks_mut(BATCH) {
        batch.sort_unstable();
    }
    let mut group = c.benchmark_group("memtable_insert_sorted_batches_of_100");
    group.throughput(Throughput::Elements(N as u64));
    group.sample_size(20);
    for (name, near_last) in [("strata_insert", false), ("strata_insert_near_last", true)] {
        group.bench_function(name, |b| {
            b.iter_batched(
                new_arena,
                |list| fill_arena(list, &keys, &value, near_last),
                BatchSize::LargeInput,
            )
        });
    }
    group.bench_function("btreemap", |b| {
        b.iter_batched(
            BTreeMap::new,
            |map| fill_btreemap(map, &keys, &value),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

fn get(c: &mut Crit) {
    let (keys, value) = keys_and_value();
    let mut lookups = keys.clone();
    lookups.shuffle(&mut StdRng::seed_from_u64(7));
    let mut arena = SkipListWriter::new(BytewiseComparator, ARENA_BLOCK_BYTES);
    let crossbeam = SkipMap::new();
    let mut btree = BTreeMap::new();
    for k in &keys {
        arena.insert(k, &value);
        crossbeam.insert(k.to_vec(), value.to_vec());
        btree.insert(k.to_vec(), value.to_vec());
    }
    let arena = arena.reader();
    let mut group = c.benchmark_group("memtable_get");
    group.throughput(Throughput::Elements(N as u64));
    group.sample_size(20);
    group.bench_function("strata_arena_skiplist", |b| {
        b.iter(|| {
            for k in &lookups {
                black_box(arena.get(k).map(<[u8]>::len));
            }
        })
    });
    group.bench_function("crossbeam_skiplist", |b| {
        b.iter(|| {
            for k in &lookups {
                black_box(crossbeam.get(k.as_slice()).map(|e| e.value().len()));
            }
        })
    });
    group.bench_function("btreemap", |b| {
        b.iter(|| {
            for k in &lookups {
                black_box(btree.get(k.as_slice()).map(Vec::len));
            }
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(ThreadCpuTime);
    targets = insert, insert_sorted_batches, get
}
criterion_main!(benches);
