//! Strata, fjall and (with `--features rocksdb`) RocksDB behind [`Kv`].
//!
//! Durability is the same for all: every write goes to the engine's
//! write-ahead log without an fsync per write (Strata `WalMode::NoSync`,
//! RocksDB `sync = false` with the WAL on, fjall's default journal). No
//! compression (Strata has none); bloom filters at 10 bits per key.

use std::ops::Bound;
use std::path::Path;

use anyhow::{Context, Result};

/// What the benchmark needs from an engine.
pub trait Kv {
    /// Name in the report.
    fn name(&self) -> &'static str;
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()>;
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Up to `limit` pairs with keys `>= start` (or after it when
    /// `exclusive`); returns how many and the last key.
    fn scan_from(&self, start: &[u8], exclusive: bool, limit: usize) -> Result<(usize, Vec<u8>)>;
    /// Waits for background flushes and compactions to settle, as far as
    /// the engine lets a caller do that.
    fn settle(&self) -> Result<()>;
    /// Engine-reported amplification, when it reports it.
    fn report(&self) -> String {
        String::new()
    }
}

pub struct Strata(pub strata_engine::Engine);

impl Strata {
    pub fn open(dir: &Path) -> Result<Strata> {
        let opts = strata_engine::Options {
            wal: strata_engine::WalMode::NoSync,
            ..strata_engine::Options::default()
        };
        Ok(Strata(strata_engine::Engine::open(dir, opts)?))
    }
}

impl Kv for Strata {
    fn name(&self) -> &'static str {
        "strata"
    }
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.0.put(key, value)?;
        Ok(())
    }
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.0.get(key)?)
    }
    fn scan_from(&self, start: &[u8], exclusive: bool, limit: usize) -> Result<(usize, Vec<u8>)> {
        let lo = if exclusive {
            Bound::Excluded(start)
        } else {
            Bound::Included(start)
        };
        let rows = self.0.scan(lo, Bound::Unbounded, limit)?;
        let last = rows.last().map(|(k, _)| k.clone()).unwrap_or_default();
        Ok((rows.len(), last))
    }
    fn settle(&self) -> Result<()> {
        self.0.flush()?;
        Ok(())
    }
    fn report(&self) -> String {
        let s = self.0.stats();
        let files: Vec<String> = s
            .levels
            .iter()
            .map(|l| format!("{}", l.file_count))
            .collect();
        format!(
            "files/level [{}] engine-wamp {:.2} tables/get {:.2} bloom-useful {:.2} stall {} ms slowdown {} ms",
            files.join(" "),
            s.write_amplification(),
            s.read_amplification(),
            s.bloom_useful_ratio(),
            s.stall_micros / 1000,
            s.slowdown_micros / 1000
        )
    }
}

pub struct Fjall {
    _keyspace: fjall::Keyspace,
    part: fjall::PartitionHandle,
}

impl Fjall {
    pub fn open(dir: &Path) -> Result<Fjall> {
        let keyspace = fjall::Config::new(dir).open().context("fjall open")?;
        let part = keyspace
            .open_partition(
                "default",
                fjall::PartitionCreateOptions::default().compression(fjall::CompressionType::None),
            )
            .context("fjall partition")?;
        Ok(Fjall {
            _keyspace: keyspace,
            part,
        })
    }
}

impl Kv for Fjall {
    fn name(&self) -> &'static str {
        "fjall"
    }
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.part.insert(key, value)?;
        Ok(())
    }
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.part.get(key)?.map(|v| v.to_vec()))
    }
    fn scan_from(&self, start: &[u8], exclusive: bool, limit: usize) -> Result<(usize, Vec<u8>)> {
        let lo = if exclusive {
            Bound::Excluded(start.to_vec())
        } else {
            Bound::Included(start.to_vec())
        };
        let mut n = 0;
        let mut last = Vec::new();
        for kv in self
            .part
            .range::<Vec<u8>, _>((lo, Bound::Unbounded))
            .take(limit)
        {
            let (k, _) = kv?;
            last = k.to_vec();
            n += 1;
        }
        Ok((n, last))
    }
    fn settle(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(feature = "rocksdb")]
pub struct Rocks(rocksdb::DB);

#[cfg(feature = "rocksdb")]
impl Rocks {
    pub fn open(dir: &Path) -> Result<Rocks> {
        let mut table = rocksdb::BlockBasedOptions::default();
        table.set_bloom_filter(10.0, false);
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        opts.set_compression_type(rocksdb::DBCompressionType::None);
        opts.set_block_based_table_factory(&table);
        opts.set_write_buffer_size(64 << 20);
        Ok(Rocks(rocksdb::DB::open(&opts, dir)?))
    }
}

#[cfg(feature = "rocksdb")]
impl Kv for Rocks {
    fn name(&self) -> &'static str {
        "rocksdb"
    }
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.0.put(key, value)?;
        Ok(())
    }
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.0.get(key)?)
    }
    fn scan_from(&self, start: &[u8], exclusive: bool, limit: usize) -> Result<(usize, Vec<u8>)> {
        let mut it = self.0.raw_iterator();
        it.seek(start);
        if exclusive && it.valid() && it.key() == Some(start) {
            it.next();
        }
        let mut n = 0;
        let mut last = Vec::new();
        while it.valid() && n < limit {
            last = it.key().map(<[u8]>::to_vec).unwrap_or_default();
            n += 1;
            it.next();
        }
        it.status()?;
        Ok((n, last))
    }
    fn settle(&self) -> Result<()> {
        self.0.flush()?;
        Ok(())
    }
    fn report(&self) -> String {
        let files: Vec<String> = (0..7)
            .map(|l| {
                self.0
                    .property_value(&format!("rocksdb.num-files-at-level{l}"))
                    .ok()
                    .flatten()
                    .unwrap_or_default()
            })
            .collect();
        format!("files/level [{}]", files.join(" "))
    }
}
