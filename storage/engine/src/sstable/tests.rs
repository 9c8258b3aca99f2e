//! Round trips and corruption detection for the table format.

use std::path::Path;
use std::sync::Arc;

use super::builder::WRITE_CHUNK_BYTES;
use super::*;
use crate::error::EngineError;
use crate::fs::{FaultFs, FileSystem};
use crate::iter::InternalIterator;
use crate::key::{ValueKind, internal_key, lookup_key};

const PATH: &str = "/t/1.sst";

fn key(i: u32) -> Vec<u8> {
    internal_key(
        format!("user{i:06}").as_bytes(),
        u64::from(i) + 1,
        ValueKind::Put,
    )
}

fn value(i: u32) -> Vec<u8> {
    format!("value-{i}-{}", "x".repeat((i % 50) as usize)).into_bytes()
}

fn build(fs: &FaultFs, n: u32, bloom_bits: u32) -> TableSummary {
    fs.create_dir_all(Path::new("/t")).expect("mkdir");
    let file = fs.create(Path::new(PATH)).expect("create");
    let mut b = TableBuilder::new(file, 512, 4, bloom_bits);
    for i in 0..n {
        b.add(&key(i), &value(i)).expect("add");
    }
    b.finish().expect("finish")
}

fn open(fs: &FaultFs) -> crate::Result<Arc<Table>> {
    Ok(Arc::new(Table::open(
        fs.open(Path::new(PATH)).expect("open"),
        PATH.to_string(),
    )?))
}

// Proves that a multi-block table returns every entry in order and that
// seeks land on the first entry >= the target.
#[test]
fn table_round_trips_and_seeks_across_blocks() {
    let fs = FaultFs::new();
    let summary = build(&fs, 2000, 10);
    assert_eq!(summary.num_entries, 2000);
    assert_eq!(summary.smallest, key(0));
    assert_eq!(summary.largest, key(1999));
    let table = open(&fs).expect("valid table");
    let mut it = table.iter();
    it.seek_to_first().expect("seek");
    for i in 0..2000 {
        assert!(it.valid(), "entry {i} missing");
        assert_eq!((it.key(), it.value()), (&key(i)[..], &value(i)[..]));
        it.next().expect("next");
    }
    assert!(!it.valid());
    for i in [0, 1, 777, 1999] {
        it.seek(&lookup_key(format!("user{i:06}").as_bytes(), u64::MAX >> 8))
            .expect("seek");
        assert_eq!(it.key(), key(i));
    }
    it.seek(&lookup_key(b"user999999", 1)).expect("seek");
    assert!(!it.valid());
    assert!(table.may_contain(b"user000123"));
}

/// Counts the writes a table builder hands to its file.
struct CountingFile {
    inner: Arc<dyn crate::fs::WritableFile>,
    appends: std::sync::atomic::AtomicUsize,
}

impl crate::fs::WritableFile for CountingFile {
    fn append(&self, data: &[u8]) -> std::io::Result<()> {
        self.appends
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.append(data)
    }

    fn sync(&self) -> std::io::Result<()> {
        self.inner.sync()
    }

    fn truncate(&self, len_bytes: u64) -> std::io::Result<()> {
        self.inner.truncate(len_bytes)
    }

    fn preallocate(&self, len_bytes: u64) -> std::io::Result<()> {
        self.inner.preallocate(len_bytes)
    }
}

// Proves that a table of many small blocks reaches its file in a few large
// writes, and that the result reads back whole.
#[test]
fn blocks_reach_the_file_in_large_writes() {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/t")).expect("mkdir");
    let counting = Arc::new(CountingFile {
        inner: fs.create(Path::new(PATH)).expect("create"),
        appends: Default::default(),
    });
    let mut b = TableBuilder::new(counting.clone(), 512, 4, 10);
    let n = 12_000;
    for i in 0..n {
        b.add(&key(i), &value(i)).expect("add");
    }
    let summary = b.finish().expect("finish");
    let size = usize::try_from(summary.size_bytes).expect("fits");
    assert!(
        size > 2 * WRITE_CHUNK_BYTES,
        "table of {size} bytes too small"
    );
    let appends = counting.appends.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        appends <= size / WRITE_CHUNK_BYTES + 1,
        "{appends} writes for {size} bytes"
    );
    assert_eq!(fs.contents(Path::new(PATH)).map(|c| c.len()), Some(size));
    let table = open(&fs).expect("valid table");
    let mut it = table.iter();
    it.seek_to_first().expect("seek");
    for i in 0..n {
        assert_eq!((it.key(), it.value()), (&key(i)[..], &value(i)[..]));
        it.next().expect("next");
    }
    assert!(!it.valid());
}

// Proves that a write the file refuses fails the table, whether it happens
// while blocks are added or when the table is finished.
#[test]
fn a_refused_write_fails_the_table() {
    for (n, expect_in_add) in [(100, false), (12_000, true)] {
        let fs = FaultFs::new();
        fs.create_dir_all(Path::new("/t")).expect("mkdir");
        let mut b = TableBuilder::new(fs.create(Path::new(PATH)).expect("create"), 512, 4, 10);
        fs.set_no_space(true);
        let added = (0..n).try_for_each(|i| b.add(&key(i), &value(i)));
        assert_eq!(added.is_err(), expect_in_add, "{n} entries");
        if added.is_ok() {
            let err = b.finish().expect_err("no space");
            assert_eq!(err.kind(), std::io::ErrorKind::StorageFull);
        }
        assert!(fs.contents(Path::new(PATH)).unwrap_or_default().is_empty());
    }
}

// Proves that the bloom filter rejects most absent keys.
#[test]
fn table_filter_rejects_absent_keys() {
    let fs = FaultFs::new();
    build(&fs, 1000, 10);
    let table = open(&fs).expect("valid table");
    let hits = (0..1000)
        .filter(|i| table.may_contain(format!("absent{i}").as_bytes()))
        .count();
    assert!(hits < 50, "{hits} false positives");
    let fs = FaultFs::new();
    build(&fs, 10, 0);
    assert!(
        open(&fs).expect("valid").may_contain(b"anything"),
        "no filter means maybe"
    );
}

// Proves that a flipped bit in a data block is reported as corruption when
// that block is read, not returned as data.
#[test]
fn damaged_data_block_is_corruption() {
    let fs = FaultFs::new();
    build(&fs, 500, 10);
    let mut bytes = fs.contents(Path::new(PATH)).expect("exists");
    bytes[10] ^= 0x01;
    fs.overwrite(Path::new(PATH), bytes);
    let table = open(&fs).expect("footer and index are intact");
    let mut it = table.iter();
    let err = it.seek_to_first().expect_err("first block is damaged");
    assert!(matches!(err, EngineError::Corruption { .. }), "{err}");
}

// Proves that damaged footers, bad magic and truncated files are rejected.
#[test]
fn damaged_footer_or_truncated_table_is_corruption() {
    let fs = FaultFs::new();
    build(&fs, 100, 10);
    let clean = fs.contents(Path::new(PATH)).expect("exists");
    let len = clean.len();
    for (what, at) in [
        ("footer field", len - FOOTER_BYTES + 2),
        ("magic", len - 1),
        ("index block", len - FOOTER_BYTES - 6),
    ] {
        let mut bytes = clean.clone();
        bytes[at] ^= 0x10;
        fs.overwrite(Path::new(PATH), bytes);
        assert!(
            matches!(open(&fs), Err(EngineError::Corruption { .. })),
            "{what} damage not detected"
        );
    }
    fs.overwrite(Path::new(PATH), clean[..len / 2].to_vec());
    assert!(matches!(open(&fs), Err(EngineError::Corruption { .. })));
    fs.overwrite(Path::new(PATH), vec![0; 10]);
    assert!(matches!(open(&fs), Err(EngineError::Corruption { .. })));
}

// Proves that the footer encodes and decodes losslessly.
#[test]
fn footer_round_trips() {
    let footer = Footer {
        index: BlockHandle { offset: 1, size: 2 },
        filter: BlockHandle { offset: 3, size: 4 },
        num_entries: 5,
    };
    assert_eq!(Footer::decode(&footer.encode()), Ok(footer));
}
