//! Behavioural tests of the arena skiplist through its public API.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use proptest::prelude::*;
use strata_arena::{BytewiseComparator, KeyComparator, SkipListWriter};

fn collect(list: &strata_arena::SkipList<BytewiseComparator>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = list.iter();
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    out
}

// Proves that gets and full iteration see exactly what was inserted, in order.
#[test]
fn inserted_entries_are_found_in_order() {
    let mut writer = SkipListWriter::new(BytewiseComparator, 4096);
    let reader = writer.reader();
    assert!(reader.is_empty());
    for i in (0..1000u32).rev() {
        assert!(writer.insert(format!("key{i:05}").as_bytes(), &i.to_le_bytes()));
    }
    assert_eq!(reader.len(), 1000);
    assert_eq!(reader.get(b"key00042"), Some(&42u32.to_le_bytes()[..]));
    assert_eq!(reader.get(b"key99999"), None);
    let all = collect(&reader);
    assert_eq!(all.len(), 1000);
    assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
}

// Proves that a duplicate key is rejected and the first value kept.
#[test]
fn duplicate_key_is_rejected() {
    let mut writer = SkipListWriter::new(BytewiseComparator, 4096);
    assert!(writer.insert(b"a", b"1"));
    assert!(!writer.insert(b"a", b"2"));
    assert_eq!(writer.reader().get(b"a"), Some(&b"1"[..]));
    assert_eq!(writer.len(), 1);
}

// Proves that seek lands on the first key >= the target, including past the end.
#[test]
fn seek_finds_first_key_not_less_than_target() {
    let mut writer = SkipListWriter::new(BytewiseComparator, 4096);
    for key in [&b"b"[..], b"d", b"f"] {
        writer.insert(key, b"");
    }
    let list = writer.reader();
    let mut it = list.iter();
    it.seek(b"c");
    assert_eq!(it.key(), b"d");
    it.seek(b"d");
    assert_eq!(it.key(), b"d");
    it.seek(b"");
    assert_eq!(it.key(), b"b");
    it.seek(b"g");
    assert!(!it.valid());
}

// Proves that empty keys, empty values and values larger than a block work.
#[test]
fn empty_and_oversized_entries_round_trip() {
    let mut writer = SkipListWriter::new(BytewiseComparator, 1024);
    let big = vec![7u8; 10_000];
    assert!(writer.insert(b"", b""));
    assert!(writer.insert(b"big", &big));
    let list = writer.reader();
    assert_eq!(list.get(b""), Some(&b""[..]));
    assert_eq!(list.get(b"big"), Some(&big[..]));
    assert!(list.memory_usage_bytes() >= 10_000);
}

struct ReverseComparator;
impl KeyComparator for ReverseComparator {
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        b.cmp(a)
    }
}

// Proves that the list follows the supplied comparator rather than byte order.
#[test]
fn custom_comparator_orders_entries() {
    let mut writer = SkipListWriter::new(ReverseComparator, 4096);
    for key in [&b"a"[..], b"c", b"b"] {
        writer.insert(key, b"");
    }
    let list = writer.reader();
    let mut it = list.iter();
    it.seek_to_first();
    let mut keys = Vec::new();
    while it.valid() {
        keys.push(it.key().to_vec());
        it.next();
    }
    assert_eq!(keys, vec![b"c".to_vec(), b"b".to_vec(), b"a".to_vec()]);
}

// Proves that readers running concurrently with the writer always observe a
// sorted list whose entries carry their complete values (no torn publication).
#[test]
fn concurrent_readers_see_sorted_complete_entries() {
    let mut writer = SkipListWriter::new(BytewiseComparator, 64 * 1024);
    let list = writer.reader();
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let list = list.clone();
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                let mut rounds = 0u64;
                while !done.load(AtomicOrdering::Acquire) || rounds == 0 {
                    let mut it = list.iter();
                    it.seek_to_first();
                    let mut previous: Option<Vec<u8>> = None;
                    while it.valid() {
                        let key = it.key().to_vec();
                        // The value is the key repeated, so a torn node shows up here.
                        assert_eq!(it.value(), [key.as_slice(), key.as_slice()].concat());
                        if let Some(p) = &previous {
                            assert!(p < &key, "iteration out of order");
                        }
                        previous = Some(key);
                        it.next();
                    }
                    rounds += 1;
                }
            })
        })
        .collect();
    for i in 0..20_000u64 {
        let key = (i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_be_bytes();
        writer.insert(&key, &[key, key].concat());
    }
    done.store(true, AtomicOrdering::Release);
    for r in readers {
        r.join().expect("reader thread panicked");
    }
    assert_eq!(list.len(), 20_000);
}

proptest! {
    // Proves that the list behaves like a BTreeMap with first-insert-wins semantics.
    #[test]
    fn skiplist_matches_btreemap(entries in proptest::collection::vec(
        (proptest::collection::vec(any::<u8>(), 0..8), proptest::collection::vec(any::<u8>(), 0..16)), 0..200),
        probes in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..8), 0..20)) {
        check_against_btreemap(&entries, &probes, &[])?;
    }

    // Proves the same when inserts start from the previous insert's path,
    // alone or mixed with plain inserts, for keys in any order and in
    // sorted runs (a sorted batch after another, overlapping).
    #[test]
    fn insert_near_last_matches_btreemap(entries in proptest::collection::vec(
        (proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(b'a'), any::<u8>()], 0..12),
         proptest::collection::vec(any::<u8>(), 0..4)), 0..300),
        run in 1usize..64,
        near in proptest::collection::vec(any::<bool>(), 1..8),
        probes in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..8), 0..20)) {
        check_against_btreemap(&entries, &probes, &near)?;
        let mut sorted_runs = entries.clone();
        for chunk in sorted_runs.chunks_mut(run) {
            chunk.sort();
        }
        check_against_btreemap(&sorted_runs, &probes, &[true])?;
        check_against_btreemap(&sorted_runs, &probes, &near)?;
    }

    // Proves the same for keys from a three-letter alphabet up to 12 bytes
    // long: many share their first 8 bytes or differ only by trailing
    // zeros, where the 8-byte prefixes in the nodes tie and the full key
    // comparison decides.
    #[test]
    fn skiplist_matches_btreemap_when_prefixes_tie(entries in proptest::collection::vec(
        (proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(b'a')], 0..12),
         proptest::collection::vec(any::<u8>(), 0..4)), 0..200),
        probes in proptest::collection::vec(
            proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(b'a')], 0..12), 0..20)) {
        check_against_btreemap(&entries, &probes, &[])?;
    }
}

/// Inserts `entries` in order, the i-th with `insert_near_last` when
/// `near[i % near.len()]` (plain `insert` when `near` is empty), and checks
/// the list against a first-insert-wins BTreeMap.
fn check_against_btreemap(
    entries: &[(Vec<u8>, Vec<u8>)],
    probes: &[Vec<u8>],
    near: &[bool],
) -> Result<(), TestCaseError> {
    {
        let mut writer = SkipListWriter::new(BytewiseComparator, 512);
        let mut model = BTreeMap::new();
        for (i, (k, v)) in entries.iter().enumerate() {
            let inserted = if !near.is_empty() && near[i % near.len()] {
                writer.insert_near_last(k, v)
            } else {
                writer.insert(k, v)
            };
            prop_assert_eq!(inserted, !model.contains_key(k));
            model.entry(k.clone()).or_insert_with(|| v.clone());
        }
        let list = writer.reader();
        let expected: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        prop_assert_eq!(collect(&list), expected);
        for p in probes {
            let mut it = list.iter();
            it.seek(p);
            let want = model.range(p.clone()..).next().map(|(k, _)| k.clone());
            prop_assert_eq!(it.valid().then(|| it.key().to_vec()), want);
            prop_assert_eq!(list.get(p).map(<[u8]>::to_vec), model.get(p).cloned());
        }
    }
    Ok(())
}
