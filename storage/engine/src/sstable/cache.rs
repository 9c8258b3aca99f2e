//! A bounded cache of decoded data blocks, shared by every table of one
//! engine, so hot blocks skip the read, the checksum and the decode.
//!
//! Sharded by block to keep lock hold times short under concurrent
//! readers; each shard evicts with CLOCK (second chance): a block read
//! since the hand last passed survives one more round.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use super::block::Block;

const SHARDS: usize = 16;

/// `(table file number, block offset)`.
type BlockKey = (u64, u64);

struct Entry {
    block: Arc<Block>,
    charge: usize,
    referenced: bool,
}

#[derive(Default)]
struct Shard {
    map: HashMap<BlockKey, Entry>,
    /// Keys in CLOCK order; the hand is the front.
    clock: VecDeque<BlockKey>,
    used: usize,
}

/// Decoded blocks up to a byte budget.
pub(crate) struct BlockCache {
    shards: Vec<Mutex<Shard>>,
    shard_capacity: usize,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl BlockCache {
    pub(crate) fn new(capacity_bytes: usize) -> BlockCache {
        BlockCache {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            shard_capacity: capacity_bytes / SHARDS,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    fn shard(&self, key: BlockKey) -> &Mutex<Shard> {
        let h = key.0.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (key.1 >> 6);
        &self.shards[(h.wrapping_mul(0xff51_afd7_ed55_8ccd) >> 60) as usize % SHARDS]
    }

    /// The cached block, counting a hit or a miss.
    pub(crate) fn get(&self, table: u64, offset: u64) -> Option<Arc<Block>> {
        let mut shard = self.shard((table, offset)).lock();
        let Some(entry) = shard.map.get_mut(&(table, offset)) else {
            self.misses.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        entry.referenced = true;
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(Arc::clone(&entry.block))
    }

    /// Lookups answered from the cache, and lookups that missed.
    pub(crate) fn hits_and_misses(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }

    /// Caches `block` (of `charge` bytes), evicting until it fits. A block
    /// larger than a shard is not cached.
    pub(crate) fn insert(&self, table: u64, offset: u64, block: Arc<Block>, charge: usize) {
        if charge > self.shard_capacity {
            return;
        }
        let key = (table, offset);
        let mut guard = self.shard(key).lock();
        let shard = &mut *guard;
        if shard.map.contains_key(&key) {
            return;
        }
        while shard.used + charge > self.shard_capacity {
            let Some(victim) = shard.clock.pop_front() else {
                break;
            };
            match shard.map.get_mut(&victim) {
                Some(e) if e.referenced => {
                    e.referenced = false;
                    shard.clock.push_back(victim);
                }
                Some(_) => {
                    if let Some(e) = shard.map.remove(&victim) {
                        shard.used -= e.charge;
                    }
                }
                None => {}
            }
        }
        shard.used += charge;
        shard.clock.push_back(key);
        shard.map.insert(
            key,
            Entry {
                block,
                charge,
                referenced: false,
            },
        );
    }

    /// Bytes held, for tests.
    #[cfg(test)]
    fn used_bytes(&self) -> usize {
        self.shards.iter().map(|s| s.lock().used).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block() -> Arc<Block> {
        Arc::new(Block::decode(vec![0, 0, 0, 0, 1, 0, 0, 0]).expect("valid empty block"))
    }

    // Proves that every lookup counts as a hit or a miss, and which.
    #[test]
    fn lookups_count_hits_and_misses() {
        let cache = BlockCache::new(SHARDS * 1000);
        assert!(cache.get(1, 0).is_none());
        cache.insert(1, 0, block(), 100);
        assert!(cache.get(1, 0).is_some());
        assert!(cache.get(1, 0).is_some());
        assert!(cache.get(2, 0).is_none());
        assert_eq!(cache.hits_and_misses(), (2, 2));
    }

    // Proves that the cache stays within its budget, returns what it holds,
    // and that a recently read block outlives an unread one.
    #[test]
    fn cache_is_bounded_and_keeps_referenced_blocks() {
        let cache = BlockCache::new(SHARDS * 1000);
        for i in 0..10_000u64 {
            cache.insert(1, i * 4096, block(), 100);
            assert!(cache.used_bytes() <= SHARDS * 1000);
        }
        assert!(
            cache.get(1, 9_999 * 4096).is_some(),
            "the newest block is cached"
        );
        assert!(cache.get(1, 0).is_none(), "the oldest was evicted");
        // In a fresh cache, fill one shard's worth around a referenced block.
        let cache = BlockCache::new(SHARDS * 1000);
        cache.insert(7, 0, block(), 100);
        let shard_of = |o: u64| std::ptr::from_ref(cache.shard((7, o)));
        let same: Vec<u64> = (1..100_000u64)
            .map(|i| i * 4096)
            .filter(|&o| shard_of(o) == shard_of(0))
            .take(30)
            .collect();
        for &o in &same {
            assert!(cache.get(7, 0).is_some(), "a block read every round stays");
            cache.insert(7, o, block(), 100);
        }
        assert!(cache.get(7, same[0]).is_none(), "unread blocks go first");
        assert!(cache.insert_oversized_is_ignored());
    }

    impl BlockCache {
        fn insert_oversized_is_ignored(&self) -> bool {
            self.insert(9, 0, block(), self.shard_capacity + 1);
            self.get(9, 0).is_none()
        }
    }
}
