//! Blocks: sorted key/value entries with prefix-compressed keys.
//!
//! Layout (see `docs/format.md`): entries, each `shared: varint | unshared:
//! varint | value_len: varint | key[shared..] | value`, then the restart
//! array (`u32 LE` offsets of entries stored with `shared == 0`, one every
//! `restart_interval` entries), then `num_restarts: u32 LE`. Seeks binary
//! search the restart points, then scan forward. Keys are internal keys.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::coding::{Decoder, put_varint, read_u32};
use crate::key::compare_internal_keys;

/// Accumulates entries into one encoded block.
pub(crate) struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    restart_interval: usize,
    since_restart: usize,
    last_key: Vec<u8>,
    entries: usize,
}

impl BlockBuilder {
    pub(crate) fn new(restart_interval: usize) -> BlockBuilder {
        assert!(restart_interval > 0);
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            restart_interval,
            since_restart: 0,
            last_key: Vec::new(),
            entries: 0,
        }
    }

    /// Appends an entry.
    ///
    /// # Panics
    /// If `key` does not sort after the previous key.
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) {
        assert!(
            self.entries == 0 || compare_internal_keys(&self.last_key, key) == Ordering::Less,
            "block keys must be added in strictly increasing order"
        );
        let mut shared = 0;
        if self.since_restart == self.restart_interval {
            self.restarts
                .push(u32::try_from(self.buf.len()).expect("block larger than 4 GiB"));
            self.since_restart = 0;
        } else {
            shared = self
                .last_key
                .iter()
                .zip(key)
                .take_while(|(a, b)| a == b)
                .count();
        }
        put_varint(&mut self.buf, shared as u64);
        put_varint(&mut self.buf, (key.len() - shared) as u64);
        put_varint(&mut self.buf, value.len() as u64);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.since_restart += 1;
        self.entries += 1;
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Size the block will have once finished.
    pub(crate) fn size_estimate_bytes(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    pub(crate) fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Returns the encoded block and resets the builder for the next one.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        for r in &self.restarts {
            out.extend_from_slice(&r.to_le_bytes());
        }
        out.extend_from_slice(&(self.restarts.len() as u32).to_le_bytes());
        self.restarts.clear();
        self.restarts.push(0);
        self.since_restart = 0;
        self.entries = 0;
        self.last_key.clear();
        out
    }
}

/// A decoded block whose restart array has been validated.
#[derive(Debug)]
pub(crate) struct Block {
    data: Vec<u8>,
    restarts_offset: usize,
    num_restarts: usize,
}

impl Block {
    /// Validates the block trailer; `None` if it is malformed.
    pub(crate) fn decode(data: Vec<u8>) -> Option<Block> {
        let len = data.len();
        let num_restarts = read_u32(&data, len.checked_sub(4)?)? as usize;
        let restarts_offset = len
            .checked_sub(4)?
            .checked_sub(num_restarts.checked_mul(4)?)?;
        if num_restarts == 0 {
            return None;
        }
        let block = Block {
            data,
            restarts_offset,
            num_restarts,
        };
        for i in 0..num_restarts {
            if block.restart(i) >= restarts_offset && !(i == 0 && restarts_offset == 0) {
                return None;
            }
        }
        Some(block)
    }

    fn restart(&self, i: usize) -> usize {
        read_u32(&self.data, self.restarts_offset + 4 * i).map_or(usize::MAX, |v| v as usize)
    }
}

/// A cursor over a block. Malformed entries make it invalid with
/// `corrupt() == true`.
pub(crate) struct BlockIter {
    block: Arc<Block>,
    /// Offset of the current entry (== `restarts_offset` when past the end).
    offset: usize,
    next_offset: usize,
    key: Vec<u8>,
    value: (usize, usize),
    corrupt: bool,
}

impl BlockIter {
    pub(crate) fn new(block: Arc<Block>) -> BlockIter {
        let end = block.restarts_offset;
        BlockIter {
            block,
            offset: end,
            next_offset: end,
            key: Vec::new(),
            value: (0, 0),
            corrupt: false,
        }
    }

    pub(crate) fn valid(&self) -> bool {
        self.offset < self.block.restarts_offset && !self.corrupt
    }

    pub(crate) fn corrupt(&self) -> bool {
        self.corrupt
    }

    pub(crate) fn key(&self) -> &[u8] {
        debug_assert!(self.valid());
        &self.key
    }

    pub(crate) fn value(&self) -> &[u8] {
        debug_assert!(self.valid());
        &self.block.data[self.value.0..self.value.1]
    }

    pub(crate) fn seek_to_first(&mut self) {
        self.seek_to_restart(0);
        self.parse_next();
    }

    pub(crate) fn next(&mut self) {
        debug_assert!(self.valid());
        self.parse_next();
    }

    /// Moves to the first entry with key `>= target`.
    pub(crate) fn seek(&mut self, target: &[u8]) {
        // Find the last restart point whose key is < target.
        let (mut lo, mut hi) = (0, self.block.num_restarts - 1);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            self.seek_to_restart(mid);
            if !self.parse_next() {
                return;
            }
            if compare_internal_keys(&self.key, target) == Ordering::Less {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        self.seek_to_restart(lo);
        while self.parse_next() && compare_internal_keys(&self.key, target) == Ordering::Less {}
    }

    fn seek_to_restart(&mut self, i: usize) {
        self.key.clear();
        self.corrupt = false;
        self.next_offset = self.block.restart(i);
    }

    /// Decodes the entry at `next_offset`; false when past the end or corrupt.
    fn parse_next(&mut self) -> bool {
        self.offset = self.next_offset;
        if self.offset >= self.block.restarts_offset {
            self.offset = self.block.restarts_offset;
            return false;
        }
        let data = &self.block.data[..self.block.restarts_offset];
        let mut d = Decoder::new(&data[self.offset..]);
        let parsed = (|| {
            let shared = d.varint_usize()?;
            let unshared = d.varint_usize()?;
            let value_len = d.varint_usize()?;
            let key_delta = d.bytes(unshared)?;
            let _ = d.bytes(value_len)?;
            Some((shared, key_delta, value_len))
        })();
        let Some((shared, key_delta, value_len)) =
            parsed.filter(|(shared, ..)| *shared <= self.key.len())
        else {
            self.corrupt = true;
            return false;
        };
        self.key.truncate(shared);
        self.key.extend_from_slice(key_delta);
        let value_end = data.len() - d.remaining().len();
        self.value = (value_end - value_len, value_end);
        self.next_offset = value_end;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, internal_key};

    fn key(i: u32) -> Vec<u8> {
        internal_key(format!("key{i:04}").as_bytes(), 1, ValueKind::Put)
    }

    fn build(n: u32, interval: usize) -> Arc<Block> {
        let mut b = BlockBuilder::new(interval);
        for i in 0..n {
            b.add(&key(i * 2), format!("v{i}").as_bytes());
        }
        Arc::new(Block::decode(b.finish()).expect("valid block"))
    }

    // Proves that every entry comes back in order with its value.
    #[test]
    fn block_round_trips_all_entries() {
        let mut it = BlockIter::new(build(100, 16));
        it.seek_to_first();
        for i in 0..100 {
            assert!(it.valid());
            assert_eq!(it.key(), key(i * 2));
            assert_eq!(it.value(), format!("v{i}").as_bytes());
            it.next();
        }
        assert!(!it.valid() && !it.corrupt());
    }

    // Proves that seek finds the first key >= target for hits, misses and ends.
    #[test]
    fn block_seek_finds_lower_bound() {
        for interval in [1, 3, 16] {
            let mut it = BlockIter::new(build(50, interval));
            for target in 0..101 {
                it.seek(&key(target));
                if target < 99 {
                    assert_eq!(it.key(), key(target.next_multiple_of(2)), "target {target}");
                } else {
                    assert!(!it.valid());
                }
            }
        }
    }

    // Proves that an empty block is valid and iterates nothing.
    #[test]
    fn empty_block_iterates_nothing() {
        let block = Arc::new(Block::decode(BlockBuilder::new(4).finish()).expect("valid"));
        let mut it = BlockIter::new(block);
        it.seek_to_first();
        assert!(!it.valid());
        it.seek(&key(1));
        assert!(!it.valid());
    }

    // Proves that malformed trailers and entries are detected, not misread.
    #[test]
    fn malformed_block_is_detected() {
        assert!(Block::decode(vec![1, 2]).is_none());
        assert!(Block::decode(vec![0xff, 0xff, 0xff, 0x0f]).is_none());
        let mut b = BlockBuilder::new(16);
        b.add(&key(1), b"value");
        let mut data = b.finish();
        data[1] = 200; // unshared length far past the end
        let mut it = BlockIter::new(Arc::new(Block::decode(data).expect("trailer intact")));
        it.seek_to_first();
        assert!(!it.valid() && it.corrupt());
    }
}
