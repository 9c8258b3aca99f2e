//! Model test: the engine against a `BTreeMap` under random operation
//! sequences, including flushes, compactions, reopens and crashes.

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;

use common::{open, tiny_options};
use proptest::prelude::*;
use strata_engine::{Engine, FaultFs, ReadPoint, WalMode, WriteBatch};

#[derive(Clone, Debug)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    Batch(Vec<(Vec<u8>, Option<Vec<u8>>)>),
    Get(Vec<u8>),
    Scan(Bound<Vec<u8>>, Bound<Vec<u8>>, usize),
    Flush,
    Compact,
    Reopen,
    Crash,
    /// Takes a read point and remembers the model as of then.
    TakeReadPoint,
    /// Reads at the `i % n`-th live read point.
    ReadPointGet(usize, Vec<u8>),
    ReadPointScan(usize, Bound<Vec<u8>>, Bound<Vec<u8>>, usize),
    DropReadPoint(usize),
}

/// Few distinct keys, so that overwrites and deletes hit existing keys; the
/// empty key is included.
fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        (0u8..24).prop_map(|k| vec![b'a' + k]),
        (0u8..24, 0u8..4).prop_map(|(k, s)| vec![b'a' + k, b'0' + s]),
        Just(Vec::new()),
    ]
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..8),
        proptest::collection::vec(any::<u8>(), 100..300)
    ]
}

fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        Just(Bound::Unbounded),
        key().prop_map(Bound::Included),
        key().prop_map(Bound::Excluded)
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => (key(), value()).prop_map(|(k, v)| Op::Put(k, v)),
        10 => key().prop_map(Op::Delete),
        5 => proptest::collection::vec((key(), proptest::option::of(value())), 1..6).prop_map(Op::Batch),
        15 => key().prop_map(Op::Get),
        8 => (bound(), bound(), 0usize..30).prop_map(|(s, e, l)| Op::Scan(s, e, l)),
        3 => Just(Op::Flush),
        2 => Just(Op::Compact),
        2 => Just(Op::Reopen),
        2 => Just(Op::Crash),
        3 => Just(Op::TakeReadPoint),
        6 => (any::<usize>(), key()).prop_map(|(i, k)| Op::ReadPointGet(i, k)),
        4 => (any::<usize>(), bound(), bound(), 0usize..30)
            .prop_map(|(i, s, e, l)| Op::ReadPointScan(i, s, e, l)),
        2 => any::<usize>().prop_map(Op::DropReadPoint),
    ]
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn model_scan(
    model: &BTreeMap<Vec<u8>, Vec<u8>>,
    s: &Bound<Vec<u8>>,
    e: &Bound<Vec<u8>>,
    limit: usize,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let in_range = |k: &Vec<u8>| {
        let after_start = match s {
            Bound::Included(x) => k >= x,
            Bound::Excluded(x) => k > x,
            Bound::Unbounded => true,
        };
        let before_end = match e {
            Bound::Included(x) => k <= x,
            Bound::Excluded(x) => k < x,
            Bound::Unbounded => true,
        };
        after_start && before_end
    };
    model
        .iter()
        .filter(|(k, _)| in_range(k))
        .take(limit)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let opts = tiny_options(WalMode::Sync);
    let mut fs = FaultFs::new();
    let mut engine: Option<Engine> = Some(open(&fs, opts.clone()));
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut last_seq = 0;
    // Live read points with the model as of when each was taken.
    let mut read_points: Vec<(ReadPoint, Model)> = Vec::new();
    for op in ops {
        let e = engine.as_ref().expect("engine is open");
        match op {
            Op::Put(k, v) => {
                let seq = e.put(&k, &v).expect("put");
                prop_assert!(seq > last_seq);
                last_seq = seq;
                model.insert(k, v);
            }
            Op::Delete(k) => {
                last_seq = e.delete(&k).expect("delete");
                model.remove(&k);
            }
            Op::Batch(entries) => {
                let mut batch = WriteBatch::new();
                for (k, v) in &entries {
                    match v {
                        Some(v) => batch.put(k, v),
                        None => batch.delete(k),
                    }
                }
                last_seq = e.write(&batch).expect("write");
                for (k, v) in entries {
                    match v {
                        Some(v) => model.insert(k, v),
                        None => model.remove(&k),
                    };
                }
            }
            Op::Get(k) => prop_assert_eq!(e.get(&k).expect("get"), model.get(&k).cloned()),
            Op::Scan(s, end, limit) => {
                let got = e.scan(as_ref(&s), as_ref(&end), limit).expect("scan");
                prop_assert_eq!(got, model_scan(&model, &s, &end, limit));
            }
            Op::Flush => e.flush().expect("flush"),
            Op::Compact => e.compact().expect("compact"),
            Op::TakeReadPoint => {
                let snap = e.read_point();
                prop_assert_eq!(snap.seq(), last_seq);
                read_points.push((snap, model.clone()));
            }
            Op::ReadPointGet(i, k) if !read_points.is_empty() => {
                let (snap, old) = &read_points[i % read_points.len()];
                prop_assert_eq!(snap.get(&k).expect("read point get"), old.get(&k).cloned());
            }
            Op::ReadPointScan(i, s, end, limit) if !read_points.is_empty() => {
                let (snap, old) = &read_points[i % read_points.len()];
                let got = snap
                    .scan(as_ref(&s), as_ref(&end), limit)
                    .expect("read point scan");
                prop_assert_eq!(got, model_scan(old, &s, &end, limit));
            }
            Op::DropReadPoint(i) if !read_points.is_empty() => {
                let n = read_points.len();
                read_points.remove(i % n);
            }
            Op::ReadPointGet(..) | Op::ReadPointScan(..) | Op::DropReadPoint(_) => {}
            Op::Reopen => {
                // Read points do not outlive the engine's process.
                read_points.clear();
                engine.take().expect("open").close().expect("close");
                engine = Some(open(&fs, opts.clone()));
            }
            Op::Crash => {
                read_points.clear();
                // Sync mode: every acknowledged write must survive.
                fs = fs.crash();
                drop(engine.take());
                engine = Some(open(&fs, opts.clone()));
            }
        }
    }
    let e = engine.expect("engine is open");
    let all = e
        .scan(Bound::Unbounded, Bound::Unbounded, usize::MAX)
        .expect("scan");
    prop_assert_eq!(all, model.into_iter().collect::<Vec<_>>());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    // Proves that every read, at the latest state and at any live read point,
    // matches the model after any sequence of writes, flushes, compactions,
    // clean reopens and crashes.
    #[test]
    fn engine_matches_btreemap_model(ops in proptest::collection::vec(op(), 1..120)) {
        run(ops)?;
    }
}
