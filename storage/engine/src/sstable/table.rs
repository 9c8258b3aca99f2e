//! Reads a table file: point lookups and iteration.

use std::sync::Arc;

use super::block::{Block, BlockIter};
use super::bloom::{key_hash, may_contain};
use super::cache::BlockCache;
use super::{BLOCK_TRAILER_BYTES, BlockHandle, FOOTER_BYTES, Footer};
use crate::coding::read_u32;
use crate::error::{EngineError, Result};
use crate::fs::RandomAccessFile;
use crate::iter::InternalIterator;

/// An open table: footer, index and filter are held in memory; data blocks
/// are read on demand.
pub(crate) struct Table {
    name: String,
    /// The engine's block cache and this table's file number, its key there.
    cache: Option<(Arc<BlockCache>, u64)>,
    file: Arc<dyn RandomAccessFile>,
    index: Arc<Block>,
    filter: Vec<u8>,
    footer: Footer,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("name", &self.name)
            .field("footer", &self.footer)
            .finish()
    }
}

impl Table {
    /// Opens a table, validating the footer, index and filter blocks.
    pub(crate) fn open(file: Arc<dyn RandomAccessFile>, name: String) -> Result<Table> {
        let len = file.size_bytes();
        if len < FOOTER_BYTES as u64 {
            return Err(EngineError::corruption(format!(
                "{name}: {len} bytes is too short for a table"
            )));
        }
        let mut footer_bytes = [0u8; FOOTER_BYTES];
        file.read_exact_at(len - FOOTER_BYTES as u64, &mut footer_bytes)
            .map_err(|e| EngineError::io(format!("reading footer of {name}"), e))?;
        let footer = Footer::decode(&footer_bytes)
            .map_err(|e| EngineError::corruption(format!("{name}: {e}")))?;
        let mut table = Table {
            name,
            cache: None,
            file,
            index: Arc::new(empty_block()),
            filter: Vec::new(),
            footer,
        };
        let index = table.read_block(footer.index)?;
        table.index = Arc::new(table.decode_block(index)?);
        table.filter = table.read_block(footer.filter)?;
        Ok(table)
    }

    /// Reads data blocks through `cache`, keyed by `number`.
    pub(crate) fn with_cache(mut self, cache: Option<Arc<BlockCache>>, number: u64) -> Table {
        self.cache = cache.map(|c| (c, number));
        self
    }

    /// The decoded data block at `handle`, from the cache when it is there.
    fn data_block(&self, handle: BlockHandle) -> Result<Arc<Block>> {
        if let Some((cache, number)) = &self.cache
            && let Some(block) = cache.get(*number, handle.offset)
        {
            return Ok(block);
        }
        let block = Arc::new(self.decode_block(self.read_block(handle)?)?);
        if let Some((cache, number)) = &self.cache {
            cache.insert(
                *number,
                handle.offset,
                Arc::clone(&block),
                handle.size as usize,
            );
        }
        Ok(block)
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// False only if the table certainly has no entry for `user_key`.
    pub(crate) fn may_contain(&self, user_key: &[u8]) -> bool {
        may_contain(&self.filter, key_hash(user_key))
    }

    /// The first entry with internal key `>= target`, if any.
    pub(crate) fn seek_entry(
        self: &Arc<Self>,
        target: &[u8],
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let mut it = self.iter();
        it.seek(target)?;
        Ok(it.valid().then(|| (it.key().to_vec(), it.value().to_vec())))
    }

    /// A cursor over the whole table.
    pub(crate) fn iter(self: &Arc<Self>) -> TableIter {
        TableIter {
            table: Arc::clone(self),
            index: BlockIter::new(Arc::clone(&self.index)),
            data: None,
        }
    }

    fn read_block(&self, handle: BlockHandle) -> Result<Vec<u8>> {
        let body_end = self.file.size_bytes() - FOOTER_BYTES as u64;
        let end = handle
            .offset
            .checked_add(handle.size)
            .and_then(|e| e.checked_add(BLOCK_TRAILER_BYTES as u64));
        if end.is_none_or(|e| e > body_end) {
            return Err(EngineError::corruption(format!(
                "{}: block {handle:?} lies outside the file",
                self.name
            )));
        }
        let mut buf = vec![0u8; handle.size as usize + BLOCK_TRAILER_BYTES];
        self.file
            .read_exact_at(handle.offset, &mut buf)
            .map_err(|e| EngineError::io(format!("reading {}", self.name), e))?;
        let body_len = handle.size as usize;
        let stored = read_u32(&buf, body_len).unwrap_or_default();
        if crc32fast::hash(&buf[..body_len]) != stored {
            return Err(EngineError::corruption(format!(
                "{}: checksum mismatch in block at offset {}",
                self.name, handle.offset
            )));
        }
        buf.truncate(body_len);
        Ok(buf)
    }

    fn decode_block(&self, data: Vec<u8>) -> Result<Block> {
        Block::decode(data).ok_or_else(|| {
            EngineError::corruption(format!("{}: malformed block trailer", self.name))
        })
    }
}

fn empty_block() -> Block {
    Block::decode(vec![0, 0, 0, 0, 1, 0, 0, 0])
        .expect("a block with one restart and no entries is valid")
}

/// Two-level cursor: the index block selects data blocks.
pub(crate) struct TableIter {
    table: Arc<Table>,
    index: BlockIter,
    data: Option<BlockIter>,
}

impl TableIter {
    fn corruption(&self, what: &str) -> EngineError {
        EngineError::corruption(format!("{}: malformed {what} block entry", self.table.name))
    }

    /// Loads the data block the index cursor points at.
    fn load_block(&mut self) -> Result<()> {
        self.data = None;
        if !self.index.valid() {
            return if self.index.corrupt() {
                Err(self.corruption("index"))
            } else {
                Ok(())
            };
        }
        let handle =
            BlockHandle::decode(self.index.value()).ok_or_else(|| self.corruption("index"))?;
        self.data = Some(BlockIter::new(self.table.data_block(handle)?));
        Ok(())
    }

    /// Moves past exhausted data blocks.
    fn skip_exhausted_blocks(&mut self) -> Result<()> {
        while let Some(data) = &self.data {
            if data.valid() {
                return Ok(());
            }
            if data.corrupt() {
                self.data = None;
                return Err(self.corruption("data"));
            }
            self.index.next();
            self.load_block()?;
            if let Some(data) = &mut self.data {
                data.seek_to_first();
            }
        }
        Ok(())
    }
}

impl InternalIterator for TableIter {
    fn valid(&self) -> bool {
        self.data.as_ref().is_some_and(BlockIter::valid)
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.index.seek_to_first();
        self.load_block()?;
        if let Some(data) = &mut self.data {
            data.seek_to_first();
        }
        self.skip_exhausted_blocks()
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.index.seek(target);
        self.load_block()?;
        if let Some(data) = &mut self.data {
            data.seek(target);
        }
        self.skip_exhausted_blocks()
    }

    fn next(&mut self) -> Result<()> {
        if let Some(data) = &mut self.data {
            data.next();
        }
        self.skip_exhausted_blocks()
    }

    fn key(&self) -> &[u8] {
        self.data
            .as_ref()
            .expect("key() on an invalid table iterator")
            .key()
    }

    fn value(&self) -> &[u8] {
        self.data
            .as_ref()
            .expect("value() on an invalid table iterator")
            .value()
    }
}
