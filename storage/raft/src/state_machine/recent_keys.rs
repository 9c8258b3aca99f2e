//! What the apply thread remembers of the keys it wrote lately: whether
//! each exists and, if it does, the raft index that created it.
//!
//! A put must know its key's create index, and a delete whether its key
//! existed, so every key a command writes was read from the engine first:
//! for a batch of 100 keys, 100 point gets in the apply thread, on every
//! replica, which cost more than the writes themselves. The keys written
//! lately are the ones written again soonest, so the answer is kept here,
//! learned from each round's own writes once they are in the engine.
//!
//! It holds only what the apply rounds wrote, after the engine took it, and
//! the apply rounds are the only writers of a group's keys, except for a
//! snapshot install and a seeding, which make it forget everything. So an
//! entry is the engine's state of its key, or the key is not here and the
//! engine is read.
//!
//! Bounded in bytes by two generations: new entries go into the current
//! one; when it is full it becomes the previous one and the one before is
//! dropped, so a key written in either is found, and a key written again
//! moves to the current one.

use std::collections::HashMap;

/// The most bytes of keys one generation holds by default.
pub(super) const DEFAULT_GENERATION_BYTES: usize = 8 << 20;

/// What an entry costs beside its key's bytes, about: the map's slot, the
/// key's heap header and the value.
const ENTRY_OVERHEAD_BYTES: usize = 48;

/// A key's state as the engine holds it: `Some(create_index)` while it
/// exists, `None` once it does not.
pub(super) type Created = Option<u64>;

#[derive(Debug)]
pub(super) struct RecentKeys {
    current: HashMap<Vec<u8>, Created>,
    previous: HashMap<Vec<u8>, Created>,
    current_bytes: usize,
    generation_bytes: usize,
}

impl RecentKeys {
    /// Remembers up to about `generation_bytes` of keys in each of the two
    /// generations; 0 remembers nothing.
    pub(super) fn new(generation_bytes: usize) -> Self {
        RecentKeys {
            current: HashMap::new(),
            previous: HashMap::new(),
            current_bytes: 0,
            generation_bytes,
        }
    }

    /// `key`'s state, if it is remembered.
    pub(super) fn get(&self, key: &[u8]) -> Option<Created> {
        self.current
            .get(key)
            .or_else(|| self.previous.get(key))
            .copied()
    }

    /// Remembers that the engine now holds `key` as `created` says.
    pub(super) fn learn(&mut self, key: &[u8], created: Created) {
        if self.generation_bytes == 0 {
            return;
        }
        if let Some(slot) = self.current.get_mut(key) {
            *slot = created;
            return;
        }
        let bytes = key.len() + ENTRY_OVERHEAD_BYTES;
        if self.current_bytes + bytes > self.generation_bytes && !self.current.is_empty() {
            self.previous = std::mem::take(&mut self.current);
            self.current_bytes = 0;
        }
        self.current.insert(key.to_vec(), created);
        self.current_bytes += bytes;
    }

    /// Forgets every key: the engine's keys were changed by something other
    /// than an apply round.
    pub(super) fn forget_all(&mut self) {
        self.current = HashMap::new();
        self.previous = HashMap::new();
        self.current_bytes = 0;
    }

    /// How many keys are remembered (a key in both generations counts
    /// twice).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.current.len() + self.previous.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves that the newest state of a key wins, that a full generation
    // moves to the previous one (still read) and the one before it is
    // dropped, and that the bound holds.
    #[test]
    fn newest_state_wins_and_two_generations_stay_bounded() {
        let per_key = 1 + ENTRY_OVERHEAD_BYTES;
        let mut recent = RecentKeys::new(3 * per_key);
        recent.learn(b"a", Some(1));
        recent.learn(b"b", Some(2));
        recent.learn(b"a", None);
        assert_eq!(recent.get(b"a"), Some(None));
        assert_eq!(recent.get(b"b"), Some(Some(2)));
        assert_eq!(recent.get(b"c"), None);
        recent.learn(b"c", Some(3));
        // Full: "d" starts a new generation; a, b, c are still read.
        recent.learn(b"d", Some(4));
        assert_eq!(recent.get(b"a"), Some(None));
        assert_eq!(recent.get(b"d"), Some(Some(4)));
        // "b" written again: its new state is the one read.
        recent.learn(b"b", Some(5));
        assert_eq!(recent.get(b"b"), Some(Some(5)));
        recent.learn(b"e", Some(6));
        // Full again: a and c are dropped, b, d and e are kept.
        recent.learn(b"f", Some(7));
        assert_eq!(recent.get(b"a"), None);
        assert_eq!(recent.get(b"c"), None);
        assert_eq!(recent.get(b"b"), Some(Some(5)));
        assert_eq!(recent.get(b"d"), Some(Some(4)));
        assert_eq!(recent.get(b"f"), Some(Some(7)));
        assert!(recent.len() <= 6);
        recent.forget_all();
        assert_eq!(recent.get(b"f"), None);
    }

    // Proves that a cache of no bytes remembers nothing.
    #[test]
    fn zero_bytes_remembers_nothing() {
        let mut recent = RecentKeys::new(0);
        recent.learn(b"a", Some(1));
        assert_eq!(recent.get(b"a"), None);
    }
}
