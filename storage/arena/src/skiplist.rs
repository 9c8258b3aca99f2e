//! A skiplist whose nodes and keys live in one [`Arena`] and values in
//! another.
//!
//! One [`SkipListWriter`] inserts; any number of [`SkipList`] readers search
//! and iterate concurrently without locks. A node is fully written before it
//! is published with a `Release` store into its predecessors' towers, and
//! readers follow links with `Acquire` loads, so a reader that can reach a
//! node also sees its key, value and lower links. Nodes are never removed or
//! changed after publication (except for their links growing), and the arenas
//! outlive every handle because all handles share them through an `Arc`.

use std::cell::UnsafeCell;
use std::cmp::Ordering as CmpOrdering;
use std::ptr::{self, NonNull};
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use crate::{Arena, KeyComparator};

/// Maximum tower height; with a branching factor of 4 this suits lists of
/// tens of millions of entries.
pub const MAX_HEIGHT: usize = 12;

/// Fixed part of a node. In the node arena it is followed by `height` links,
/// then the key bytes. `prefix` is the comparator's order-preserving summary
/// of the key: a search compares it first and reads the key only on a tie.
///
/// The value lives in a separate arena (`value` points there): a search
/// touches only nodes, and without values inline they sit close together
/// (about 60 bytes instead of 300 for a 256-byte value), so a descent through
/// a large memtable misses the cache and the TLB far less.
#[repr(C)]
struct Node {
    prefix: u64,
    key_len: u32,
    value_len: u32,
    height: u32,
    _pad: u32,
    value: *const u8,
}

type Link = AtomicPtr<Node>;

const NODE_ALIGN: usize = {
    let a = std::mem::align_of::<Node>();
    let b = std::mem::align_of::<Link>();
    if a > b { a } else { b }
};
const HEADER_BYTES: usize = std::mem::size_of::<Node>();
const _: () = assert!(HEADER_BYTES.is_multiple_of(std::mem::align_of::<Link>()));

impl Node {
    /// Returns link `level` of `node`.
    ///
    /// # Safety
    /// `node` must point to an initialised node in a live arena and
    /// `level < node.height`.
    unsafe fn link<'a>(node: *const Node, level: usize) -> &'a Link {
        // SAFETY: the caller guarantees the node is initialised and that the
        // link exists; links start right after the header and are aligned.
        unsafe {
            debug_assert!(level < (*node).height as usize);
            &*node
                .cast::<u8>()
                .add(HEADER_BYTES)
                .cast::<Link>()
                .add(level)
        }
    }

    /// # Safety
    /// `node` must point to an initialised node in a live arena.
    unsafe fn key<'a>(node: *const Node) -> &'a [u8] {
        // SAFETY: the key was copied right after the links when the node was
        // built and is never modified afterwards.
        unsafe {
            let n = &*node;
            let start = node
                .cast::<u8>()
                .add(HEADER_BYTES + n.height as usize * size_of::<Link>());
            std::slice::from_raw_parts(start, n.key_len as usize)
        }
    }

    /// # Safety
    /// `node` must point to an initialised node in a live arena.
    unsafe fn value<'a>(node: *const Node) -> &'a [u8] {
        // SAFETY: `value` points to `value_len` bytes in the value arena
        // (dangling only when empty), written before the node was published
        // and never modified; that arena lives as long as the node's.
        unsafe {
            let n = &*node;
            std::slice::from_raw_parts(n.value, n.value_len as usize)
        }
    }
}

/// State shared by the writer and all readers.
struct Shared<C> {
    cmp: C,
    head: NonNull<Node>,
    /// Height of the tallest tower; only grows.
    height: AtomicUsize,
    len: AtomicUsize,
    memory_bytes: AtomicUsize,
    /// Only the unique [`SkipListWriter`] touches the arenas.
    arena: UnsafeCell<Arenas>,
}

/// Where nodes (with their links and keys) and values are carved from.
struct Arenas {
    nodes: Arena,
    values: Arena,
}

impl Arenas {
    fn used_bytes(&self) -> usize {
        self.nodes.used_bytes() + self.values.used_bytes()
    }
}

// SAFETY: the arena is mutated only through the single `SkipListWriter`
// (which is not `Clone`, and takes `&mut self` to insert); readers only read
// published, immutable node memory and atomics. `C` is `Send + Sync` by the
// `KeyComparator` bound.
unsafe impl<C: KeyComparator> Send for Shared<C> {}
// SAFETY: see the `Send` impl; shared access never mutates non-atomic state.
unsafe impl<C: KeyComparator> Sync for Shared<C> {}

impl<C: KeyComparator> Shared<C> {
    /// Whether `node`'s key sorts before `key`, whose prefix is `key_prefix`.
    ///
    /// # Safety
    /// `node` must point to a published node in a live arena.
    #[inline]
    unsafe fn before(&self, node: *const Node, key: &[u8], key_prefix: u64) -> bool {
        // SAFETY: the caller guarantees the node is published; its header
        // and key are immutable.
        let node_prefix = unsafe { (*node).prefix };
        if node_prefix != key_prefix {
            return node_prefix < key_prefix;
        }
        // SAFETY: as above.
        self.cmp.compare(unsafe { Node::key(node) }, key) == CmpOrdering::Less
    }

    /// Whether `node`'s key equals `key`.
    ///
    /// # Safety
    /// `node` must point to a published node in a live arena.
    #[inline]
    unsafe fn same_key(&self, node: *const Node, key: &[u8]) -> bool {
        // SAFETY: the caller guarantees the node is published; its header
        // and key are immutable.
        unsafe {
            (*node).prefix == self.cmp.prefix(key)
                && self.cmp.compare(Node::key(node), key) == CmpOrdering::Equal
        }
    }

    /// Returns the first node whose key is `>= key`, or null.
    fn find_greater_or_equal(&self, key: &[u8]) -> *const Node {
        let key_prefix = self.cmp.prefix(key);
        let mut x: *const Node = self.head.as_ptr();
        let mut level = self.height.load(Ordering::Acquire) - 1;
        // The node that stopped the search one level up: it is known to be
        // `>= key`, and often the next node one level down too, so it need
        // not be compared again (LevelDB's trick; saves a cache miss).
        let mut last_bigger: *const Node = ptr::null();
        loop {
            // SAFETY: `x` is the head or a node reached through links, both
            // initialised; `level` is below the list height, and every tower
            // reachable at `level` is at least that tall (head is MAX_HEIGHT).
            let next = unsafe { Node::link(x, level) }.load(Ordering::Acquire);
            // SAFETY: a non-null link points to a published node.
            if !next.is_null()
                && !ptr::eq(next, last_bigger)
                && unsafe { self.before(next, key, key_prefix) }
            {
                x = next;
            } else if level == 0 {
                return next;
            } else {
                last_bigger = next;
                level -= 1;
            }
        }
    }

    fn first(&self) -> *const Node {
        // SAFETY: the head is initialised and has MAX_HEIGHT links.
        unsafe { Node::link(self.head.as_ptr(), 0) }.load(Ordering::Acquire)
    }
}

/// A read handle: cheap to clone, `Send + Sync`, usable while the writer inserts.
pub struct SkipList<C: KeyComparator> {
    shared: Arc<Shared<C>>,
}

impl<C: KeyComparator> Clone for SkipList<C> {
    fn clone(&self) -> Self {
        SkipList {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<C: KeyComparator> SkipList<C> {
    /// Returns the value stored under exactly `key`.
    pub fn get(&self, key: &[u8]) -> Option<&[u8]> {
        let node = self.shared.find_greater_or_equal(key);
        // SAFETY: non-null results of a search are published nodes kept
        // alive by `self.shared`.
        if !node.is_null() && unsafe { self.shared.same_key(node, key) } {
            // SAFETY: as above.
            Some(unsafe { Node::value(node) })
        } else {
            None
        }
    }

    /// Returns an iterator positioned before the first entry (not valid until
    /// a seek).
    pub fn iter(&self) -> Iter<C> {
        Iter {
            list: self.clone(),
            node: ptr::null(),
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.shared.len.load(Ordering::Acquire)
    }

    /// Whether the list has no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of arena memory used by nodes, keys and values.
    pub fn memory_usage_bytes(&self) -> usize {
        self.shared.memory_bytes.load(Ordering::Acquire)
    }
}

/// A cursor over a [`SkipList`] in comparator order. It keeps the list alive.
pub struct Iter<C: KeyComparator> {
    list: SkipList<C>,
    node: *const Node,
}

// SAFETY: `node` points into the arena kept alive by `list`, whose shared
// state is `Send + Sync`; the iterator only reads immutable node memory.
unsafe impl<C: KeyComparator> Send for Iter<C> {}
// SAFETY: see `Send`.
unsafe impl<C: KeyComparator> Sync for Iter<C> {}

impl<C: KeyComparator> Iter<C> {
    /// Whether the cursor is on an entry.
    pub fn valid(&self) -> bool {
        !self.node.is_null()
    }

    /// Moves to the first entry with key `>= key`.
    pub fn seek(&mut self, key: &[u8]) {
        self.node = self.list.shared.find_greater_or_equal(key);
    }

    /// Moves to the first entry.
    pub fn seek_to_first(&mut self) {
        self.node = self.list.shared.first();
    }

    /// Moves to the next entry.
    ///
    /// # Panics
    /// If the cursor is not valid.
    pub fn next(&mut self) {
        assert!(self.valid(), "next() on an invalid skiplist iterator");
        // SAFETY: `node` is a published node kept alive by `self.list`.
        self.node = unsafe { Node::link(self.node, 0) }.load(Ordering::Acquire);
    }

    /// Key of the current entry.
    ///
    /// # Panics
    /// If the cursor is not valid.
    pub fn key(&self) -> &[u8] {
        assert!(self.valid(), "key() on an invalid skiplist iterator");
        // SAFETY: `node` is a published node kept alive by `self.list`.
        unsafe { Node::key(self.node) }
    }

    /// Value of the current entry.
    ///
    /// # Panics
    /// If the cursor is not valid.
    pub fn value(&self) -> &[u8] {
        assert!(self.valid(), "value() on an invalid skiplist iterator");
        // SAFETY: `node` is a published node kept alive by `self.list`.
        unsafe { Node::value(self.node) }
    }
}

/// The single write handle of a skiplist.
pub struct SkipListWriter<C: KeyComparator> {
    shared: Arc<Shared<C>>,
    rng_state: u64,
    /// At every level, the last node whose key is at most the key inserted
    /// last (the head before the first insert): the search path of a key
    /// just after it. [`SkipListWriter::insert_near_last`] starts there.
    /// Every insert keeps it exact, and nothing else changes the list.
    finger: [*const Node; MAX_HEIGHT],
}

// SAFETY: the finger points into the arena owned through `shared`, which the
// writer keeps alive; the writer is the only one that reads it, so moving the
// writer to another thread moves every use along with it.
unsafe impl<C: KeyComparator> Send for SkipListWriter<C> {}

impl<C: KeyComparator> SkipListWriter<C> {
    /// Creates an empty list whose arena uses blocks of `block_size_bytes`.
    pub fn new(cmp: C, block_size_bytes: usize) -> SkipListWriter<C> {
        let mut arena = Arenas {
            nodes: Arena::new(block_size_bytes),
            values: Arena::new(block_size_bytes),
        };
        let head = allocate_node(&mut arena, MAX_HEIGHT, 0, &[], &[]);
        let memory_bytes = arena.used_bytes();
        let shared = Shared {
            cmp,
            head,
            height: AtomicUsize::new(1),
            len: AtomicUsize::new(0),
            memory_bytes: AtomicUsize::new(memory_bytes),
            arena: UnsafeCell::new(arena),
        };
        SkipListWriter {
            shared: Arc::new(shared),
            rng_state: 0x9E37_79B9_7F4A_7C15,
            finger: [head.as_ptr().cast_const(); MAX_HEIGHT],
        }
    }

    /// Returns a read handle sharing this list.
    pub fn reader(&self) -> SkipList<C> {
        SkipList {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Inserts `key -> value`. Returns `false` (and changes nothing) if an
    /// equal key is already present.
    ///
    /// # Panics
    /// If the key or value is longer than `u32::MAX` bytes.
    pub fn insert(&mut self, key: &[u8], value: &[u8]) -> bool {
        self.insert_from(key, value, false)
    }

    /// Like [`insert`](Self::insert), but the search starts from the
    /// previous insert's path instead of the head: at the lowest level where
    /// that path already brackets `key`. Keys inserted in ascending order
    /// (a sorted batch) then cost a few steps near the last one instead of a
    /// full descent, each of which is a likely cache miss. Correct for any
    /// order; a key far from the last one falls back to a full search.
    pub fn insert_near_last(&mut self, key: &[u8], value: &[u8]) -> bool {
        self.insert_from(key, value, true)
    }

    fn insert_from(&mut self, key: &[u8], value: &[u8], near_last: bool) -> bool {
        assert!(
            u32::try_from(key.len()).is_ok() && u32::try_from(value.len()).is_ok(),
            "entry too large"
        );
        let height = self.random_height();
        let shared = &*self.shared;
        let head: *const Node = shared.head.as_ptr();
        let list_height = shared.height.load(Ordering::Relaxed);
        let key_prefix = shared.cmp.prefix(key);
        let mut prev = [head; MAX_HEIGHT];
        let mut x = head;
        let mut top = list_height;
        // See `find_greater_or_equal`: a node already found `>= key` one
        // level up is not compared again.
        let mut last_bigger: *const Node = ptr::null();
        if near_last
            && let Some((level, next)) = self.bracketing_level(key, key_prefix, list_height)
        {
            // At `level` and above, the finger is `key`'s exact path.
            prev[level..list_height].copy_from_slice(&self.finger[level..list_height]);
            x = self.finger[level];
            top = level;
            last_bigger = next;
        }
        for level in (0..top).rev() {
            loop {
                // SAFETY: `x` is the head or a published node at least
                // `level + 1` tall, since we reached it at this level.
                let next = unsafe { Node::link(x, level) }.load(Ordering::Acquire);
                // SAFETY: non-null links point to published nodes.
                if !next.is_null()
                    && !ptr::eq(next, last_bigger)
                    && unsafe { shared.before(next, key, key_prefix) }
                {
                    x = next;
                } else {
                    last_bigger = next;
                    break;
                }
            }
            prev[level] = x;
        }
        // SAFETY: `prev[0]` is the head or a published node.
        let successor = unsafe { Node::link(prev[0], 0) }.load(Ordering::Acquire);
        // SAFETY: non-null links point to published nodes.
        if !successor.is_null() && unsafe { shared.same_key(successor, key) } {
            return false;
        }

        // SAFETY: this writer is the only handle that touches the arena (it
        // is unique and we hold `&mut self`); readers never access it.
        let arena = unsafe { &mut *shared.arena.get() };
        let node = allocate_node(arena, height, key_prefix, key, value).as_ptr();
        for (level, &p) in prev.iter().enumerate().take(height) {
            // SAFETY: `node` is initialised with `height` links, and `p` is
            // the head or a node at least `level + 1` tall. The node is not
            // yet reachable, so relaxed stores into it are private.
            unsafe {
                let next = Node::link(p, level).load(Ordering::Relaxed);
                Node::link(node, level).store(next, Ordering::Relaxed);
            }
        }
        for (level, &p) in prev.iter().enumerate().take(height) {
            // SAFETY: as above; the `Release` store publishes the node's
            // contents to readers that `Acquire` this link.
            unsafe { Node::link(p, level) }.store(node, Ordering::Release);
        }
        if height > list_height {
            shared.height.store(height, Ordering::Release);
        }
        // The new node ends the path of a key just after it up to its
        // height; above, its predecessors do.
        self.finger[..height].fill(node.cast_const());
        self.finger[height..].copy_from_slice(&prev[height..]);
        shared.len.fetch_add(1, Ordering::Release);
        shared
            .memory_bytes
            .store(arena.used_bytes(), Ordering::Release);
        true
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.shared.len.load(Ordering::Relaxed)
    }

    /// Whether the list has no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of arena memory used by nodes, keys and values.
    pub fn memory_usage_bytes(&self) -> usize {
        self.shared.memory_bytes.load(Ordering::Relaxed)
    }

    /// The lowest level at which the finger brackets `key` (its node sorts
    /// before `key`, and the next one at that level is null or not before
    /// it), with that next node. Bracketing at one level implies it at every
    /// level above, because the finger is one exact search path.
    fn bracketing_level(
        &self,
        key: &[u8],
        key_prefix: u64,
        list_height: usize,
    ) -> Option<(usize, *const Node)> {
        let shared = &*self.shared;
        let head: *const Node = shared.head.as_ptr();
        for level in 0..list_height {
            let f = self.finger[level];
            // SAFETY: finger nodes are the head or published nodes of this
            // list, at least `level + 1` tall (they were reached or linked at
            // that level), kept alive by `self.shared`.
            if !ptr::eq(f, head) && !unsafe { shared.before(f, key, key_prefix) } {
                continue;
            }
            // SAFETY: as above.
            let next = unsafe { Node::link(f, level) }.load(Ordering::Acquire);
            // SAFETY: a non-null link points to a published node.
            if next.is_null() || !unsafe { shared.before(next, key, key_prefix) } {
                return Some((level, next));
            }
        }
        None
    }

    /// Picks a tower height: 1 with probability 3/4, 2 with 3/16, and so on.
    fn random_height(&mut self) -> usize {
        let mut height = 1;
        while height < MAX_HEIGHT {
            // xorshift64: cheap, allocation-free, good enough for towers.
            self.rng_state ^= self.rng_state << 13;
            self.rng_state ^= self.rng_state >> 7;
            self.rng_state ^= self.rng_state << 17;
            if self.rng_state & 3 != 0 {
                break;
            }
            height += 1;
        }
        height
    }
}

/// Allocates and initialises a node with null links.
fn allocate_node(
    arena: &mut Arenas,
    height: usize,
    prefix: u64,
    key: &[u8],
    value: &[u8],
) -> NonNull<Node> {
    let value_ptr = if value.is_empty() {
        NonNull::<u8>::dangling().as_ptr()
    } else {
        let dst = arena.values.allocate(value.len(), 1).as_ptr();
        // SAFETY: `dst` points to `value.len()` fresh bytes of the value
        // arena, exclusively ours; nothing reads them before the node that
        // points to them is published.
        unsafe { ptr::copy_nonoverlapping(value.as_ptr(), dst, value.len()) };
        dst
    };
    let links_bytes = height * size_of::<Link>();
    let size = HEADER_BYTES + links_bytes + key.len();
    let base = arena.nodes.allocate(size, NODE_ALIGN);
    let node = base.cast::<Node>();
    // SAFETY: `base` points to `size` writable bytes aligned for `Node` and
    // `Link`, exclusively ours until the node is published; the writes below
    // stay within `size`.
    unsafe {
        node.as_ptr().write(Node {
            prefix,
            key_len: key.len() as u32,
            value_len: value.len() as u32,
            height: height as u32,
            _pad: 0,
            value: value_ptr,
        });
        let links = base.as_ptr().add(HEADER_BYTES).cast::<Link>();
        for level in 0..height {
            links.add(level).write(AtomicPtr::new(ptr::null_mut()));
        }
        let key_dst = base.as_ptr().add(HEADER_BYTES + links_bytes);
        ptr::copy_nonoverlapping(key.as_ptr(), key_dst, key.len());
    }
    node
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BytewiseComparator;

    // Proves that values are kept out of the node arena, so nodes stay small
    // however large the values are, and that every value still reads back.
    #[test]
    fn values_live_apart_from_nodes() {
        let mut w = SkipListWriter::new(BytewiseComparator, 64 << 10);
        let n = 1000usize;
        for i in 0..n {
            let key = format!("key{i:05}");
            let value = vec![(i % 251) as u8; 1024];
            assert!(w.insert(key.as_bytes(), &value));
        }
        // SAFETY: this test is the only handle; nothing inserts meanwhile.
        let arenas = unsafe { &*w.shared.arena.get() };
        assert!(
            arenas.nodes.used_bytes() < n * 128,
            "{} bytes of nodes for {n} entries",
            arenas.nodes.used_bytes()
        );
        assert!(arenas.values.used_bytes() >= n * 1024);
        assert_eq!(w.reader().memory_usage_bytes(), arenas.used_bytes());
        let mut it = w.reader().iter();
        it.seek_to_first();
        for i in 0..n {
            assert!(it.valid());
            assert_eq!(it.key(), format!("key{i:05}").as_bytes());
            assert_eq!(it.value(), &vec![(i % 251) as u8; 1024][..]);
            it.next();
        }
        assert!(!it.valid());
    }
}
