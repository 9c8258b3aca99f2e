//! Writes a table file from entries added in increasing internal-key order.

use std::cmp::Ordering;
use std::io;
use std::sync::Arc;

use super::block::BlockBuilder;
use super::bloom::{build_filter, key_hash};
use super::{BlockHandle, Footer};
use crate::fs::WritableFile;
use crate::key::{compare_internal_keys, user_key};

/// Blocks are gathered into writes of about this size. A block handed to
/// the OS on its own (a few KiB) makes the filesystem zero the rest of each
/// fresh page it starts, which cost more than the copy itself under flush
/// load; one write per this many bytes leaves a single partial page.
pub(super) const WRITE_CHUNK_BYTES: usize = 256 << 10;

/// What a finished table contains, for the manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TableSummary {
    pub(crate) size_bytes: u64,
    pub(crate) smallest: Vec<u8>,
    pub(crate) largest: Vec<u8>,
    pub(crate) num_entries: u64,
}

/// Streams entries into a table file.
pub(crate) struct TableBuilder {
    file: Arc<dyn WritableFile>,
    /// Bytes of the file not yet handed to `file`; `offset` counts them.
    pending: Vec<u8>,
    offset: u64,
    block_size_bytes: usize,
    bloom_bits_per_key: u32,
    data: BlockBuilder,
    index: BlockBuilder,
    key_hashes: Vec<u64>,
    smallest: Vec<u8>,
    last_key: Vec<u8>,
    num_entries: u64,
}

impl TableBuilder {
    pub(crate) fn new(
        file: Arc<dyn WritableFile>,
        block_size_bytes: usize,
        restart_interval: usize,
        bloom_bits_per_key: u32,
    ) -> TableBuilder {
        TableBuilder {
            file,
            pending: Vec::with_capacity(WRITE_CHUNK_BYTES + block_size_bytes + 64),
            offset: 0,
            block_size_bytes,
            bloom_bits_per_key,
            data: BlockBuilder::new(restart_interval),
            // Index lookups are binary searches over every restart, so the
            // index block restarts at every entry.
            index: BlockBuilder::new(1),
            key_hashes: Vec::new(),
            smallest: Vec::new(),
            last_key: Vec::new(),
            num_entries: 0,
        }
    }

    /// Adds an entry; keys must strictly increase (asserted).
    pub(crate) fn add(&mut self, ikey: &[u8], value: &[u8]) -> io::Result<()> {
        if self.num_entries == 0 {
            self.smallest = ikey.to_vec();
        } else {
            assert_eq!(
                compare_internal_keys(&self.last_key, ikey),
                Ordering::Less,
                "table keys out of order"
            );
        }
        if self.num_entries == 0 || user_key(&self.last_key) != user_key(ikey) {
            self.key_hashes.push(key_hash(user_key(ikey)));
        }
        self.data.add(ikey, value);
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
        self.num_entries += 1;
        if self.data.size_estimate_bytes() >= self.block_size_bytes {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Bytes written so far plus the pending block.
    pub(crate) fn estimated_size_bytes(&self) -> u64 {
        self.offset + self.data.size_estimate_bytes() as u64
    }

    /// Writes the filter, index and footer, then fsyncs the file.
    pub(crate) fn finish(mut self) -> io::Result<TableSummary> {
        if !self.data.is_empty() {
            self.flush_data_block()?;
        }
        // An empty filter block means "no filter": every probe says "maybe".
        let filter = if self.bloom_bits_per_key == 0 {
            Vec::new()
        } else {
            build_filter(&self.key_hashes, self.bloom_bits_per_key)
        };
        let filter_handle = self.write_block(&filter)?;
        let index = self.index.finish();
        let index_handle = self.write_block(&index)?;
        let footer = Footer {
            index: index_handle,
            filter: filter_handle,
            num_entries: self.num_entries,
        };
        let footer = footer.encode();
        self.pending.extend_from_slice(&footer);
        self.offset += footer.len() as u64;
        self.file.append(&self.pending)?;
        self.file.sync()?;
        Ok(TableSummary {
            size_bytes: self.offset,
            smallest: self.smallest,
            largest: self.last_key,
            num_entries: self.num_entries,
        })
    }

    fn flush_data_block(&mut self) -> io::Result<()> {
        let last_key = self.data.last_key().to_vec();
        let block = self.data.finish();
        let handle = self.write_block(&block)?;
        let mut encoded = Vec::with_capacity(20);
        handle.encode(&mut encoded);
        self.index.add(&last_key, &encoded);
        Ok(())
    }

    fn write_block(&mut self, block: &[u8]) -> io::Result<BlockHandle> {
        let handle = BlockHandle {
            offset: self.offset,
            size: block.len() as u64,
        };
        self.pending.extend_from_slice(block);
        self.pending
            .extend_from_slice(&crc32fast::hash(block).to_le_bytes());
        self.offset += block.len() as u64 + 4;
        if self.pending.len() >= WRITE_CHUNK_BYTES {
            self.file.append(&self.pending)?;
            self.pending.clear();
        }
        Ok(handle)
    }
}
