//! Entry points for fuzzing every decoder that reads bytes from disk.
//!
//! Each function feeds arbitrary bytes to one decoder and exercises what it
//! returns; none may panic, whatever the input. The fuzz targets in
//! `storage/fuzz` run them under libFuzzer (nightly) and, seeded and
//! bounded, on stable (`just fuzz-smoke`), starting from [`seed_corpus`].
//! Not a stable API.

use std::path::Path;
use std::sync::Arc;

use crate::batch::decode_batch;
use crate::fs::log::encode_record;
use crate::fs::{FaultFs, FileSystem};
use crate::key::{ValueKind, internal_key, lookup_key};
use crate::log::read_log;
use crate::manifest::VersionEdit;
use crate::sstable::block::{Block, BlockBuilder, BlockIter};
use crate::sstable::bloom::{key_hash, may_contain};
use crate::sstable::{Footer, Table, TableBuilder};
use crate::version::FileMeta;
use crate::{WriteBatch, iter::InternalIterator};

/// A data or index block: decode, iterate, seek.
pub fn block(data: &[u8]) {
    let Some(block) = Block::decode(data.to_vec()) else {
        return;
    };
    let block = Arc::new(block);
    let mut it = BlockIter::new(Arc::clone(&block));
    it.seek_to_first();
    let mut steps = 0;
    while it.valid() && steps < 10_000 {
        let _ = (it.key().len(), it.value().len());
        it.next();
        steps += 1;
    }
    let _ = it.corrupt();
    for target in [&b""[..], b"a", b"key", &[0xff; 9]] {
        let mut it = BlockIter::new(Arc::clone(&block));
        it.seek(target);
        if it.valid() {
            let _ = it.key();
        }
    }
}

/// A table footer on its own.
pub fn footer(data: &[u8]) {
    let _ = Footer::decode(data);
}

/// A bloom filter block probed with a few keys.
pub fn bloom(data: &[u8]) {
    for key in [&b""[..], b"a", b"key00001", data] {
        let _ = may_contain(data, key_hash(key));
    }
}

/// A whole table file: footer, index, filter and data blocks.
pub fn table(data: &[u8]) {
    let fs = FaultFs::new();
    let path = Path::new("/fuzz/table.sst");
    let Ok(file) = fs
        .create_dir_all(Path::new("/fuzz"))
        .and_then(|()| fs.create(path))
    else {
        return;
    };
    if file.append(data).is_err() {
        return;
    }
    let Ok(file) = fs.open(path) else { return };
    let Ok(table) = Table::open(file, "fuzz.sst".to_string()) else {
        return;
    };
    let table = Arc::new(table);
    let _ = table.may_contain(b"key");
    let mut it = table.iter();
    if it.seek_to_first().is_ok() {
        let mut steps = 0;
        while it.valid() && steps < 10_000 {
            let _ = (it.key().len(), it.value().len());
            if it.next().is_err() {
                break;
            }
            steps += 1;
        }
    }
    let _ = table.seek_entry(&lookup_key(b"key", u64::MAX >> 8));
}

/// A WAL segment: record framing, then each batch inside.
pub fn wal(data: &[u8]) {
    for tolerate_torn_tail in [false, true] {
        let _ = read_log(data, tolerate_torn_tail, "fuzz.wal", |payload| {
            let (_, _, ops) = decode_batch(payload)?;
            for op in ops {
                let op = op?;
                let _ = (op.kind, op.key.len(), op.value.len());
            }
            Ok(())
        });
    }
}

/// One manifest edit; one that decodes must re-encode to an equal edit.
pub fn manifest_edit(data: &[u8]) {
    if let Ok(edit) = VersionEdit::decode(data) {
        let again = VersionEdit::decode(&edit.encode());
        assert_eq!(again.as_ref(), Ok(&edit), "an edit survives a round trip");
    }
}

/// A manifest file: record framing, then each edit.
pub fn manifest_log(data: &[u8]) {
    let _ = read_log(data, true, "fuzz.manifest", |payload| {
        manifest_edit(payload);
        Ok(())
    });
}

/// Which decoder a corpus entry is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// [`block`]
    Block,
    /// [`footer`]
    Footer,
    /// [`bloom`]
    Bloom,
    /// [`table`]
    Table,
    /// [`wal`]
    Wal,
    /// [`manifest_edit`]
    ManifestEdit,
    /// [`manifest_log`]
    ManifestLog,
}

impl Target {
    /// Every target.
    pub const ALL: [Target; 7] = [
        Target::Block,
        Target::Footer,
        Target::Bloom,
        Target::Table,
        Target::Wal,
        Target::ManifestEdit,
        Target::ManifestLog,
    ];

    /// Runs the target's decoder on `data`.
    pub fn run(self, data: &[u8]) {
        match self {
            Target::Block => block(data),
            Target::Footer => footer(data),
            Target::Bloom => bloom(data),
            Target::Table => table(data),
            Target::Wal => wal(data),
            Target::ManifestEdit => manifest_edit(data),
            Target::ManifestLog => manifest_log(data),
        }
    }
}

/// Valid encodings for every target, built with the engine's own builders,
/// so that mutations start close to real files.
pub fn seed_corpus() -> Vec<(Target, Vec<u8>)> {
    let mut corpus = Vec::new();
    let keys: Vec<Vec<u8>> = (0..40u64)
        .map(|i| internal_key(format!("key{i:05}").as_bytes(), 100 - i, ValueKind::Put))
        .collect();
    let mut block = BlockBuilder::new(4);
    for k in &keys {
        block.add(k, b"value");
    }
    corpus.push((Target::Block, block.finish()));

    let fs = FaultFs::new();
    let path = Path::new("/seed/table.sst");
    if let Ok(file) = fs
        .create_dir_all(Path::new("/seed"))
        .and_then(|()| fs.create(path))
    {
        let mut builder = TableBuilder::new(file, 128, 4, 10);
        let built = keys.iter().all(|k| builder.add(k, b"value").is_ok());
        if built
            && builder.finish().is_ok()
            && let Some(bytes) = fs.contents(path)
        {
            let footer_start = bytes.len().saturating_sub(crate::sstable::FOOTER_BYTES);
            corpus.push((Target::Footer, bytes[footer_start..].to_vec()));
            corpus.push((Target::Table, bytes));
        }
    }
    let hashes: Vec<u64> = keys.iter().map(|k| key_hash(k)).collect();
    corpus.push((
        Target::Bloom,
        crate::sstable::bloom::build_filter(&hashes, 10),
    ));

    let mut wal = Vec::new();
    let mut payload = Vec::new();
    for first in [1u64, 4] {
        let mut batch = WriteBatch::new();
        batch.put(b"a", b"1");
        batch.delete(b"b");
        batch.put(b"c", &[7; 30]);
        batch.encode_into(first, &mut payload);
        encode_record(&mut wal, &payload);
    }
    corpus.push((Target::Wal, wal));

    let edit = VersionEdit {
        log_number: Some(3),
        next_file_number: Some(9),
        last_seq: Some(77),
        deleted_files: vec![(0, 4)],
        new_files: vec![(
            1,
            FileMeta {
                number: 8,
                size_bytes: 4096,
                smallest: keys[0].clone(),
                largest: keys[39].clone(),
            },
        )],
    };
    let encoded = edit.encode();
    let mut log = Vec::new();
    encode_record(&mut log, &encoded);
    encode_record(&mut log, &VersionEdit::default().encode());
    corpus.push((Target::ManifestEdit, encoded));
    corpus.push((Target::ManifestLog, log));
    corpus
}
