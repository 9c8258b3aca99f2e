//! What `stats` counts, over every memcached connection of the node since
//! it started, under memcached's own names.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::tcp_front::Connections;

#[derive(Debug)]
pub struct Counters {
    pub started: Instant,
    pub connections: Arc<Connections>,
    pub cmd_get: AtomicU64,
    pub get_hits: AtomicU64,
    pub get_misses: AtomicU64,
    pub cmd_set: AtomicU64,
    pub cmd_touch: AtomicU64,
    pub touch_hits: AtomicU64,
    pub touch_misses: AtomicU64,
    pub delete_hits: AtomicU64,
    pub delete_misses: AtomicU64,
    pub incr_hits: AtomicU64,
    pub incr_misses: AtomicU64,
    pub decr_hits: AtomicU64,
    pub decr_misses: AtomicU64,
    pub cas_hits: AtomicU64,
    pub cas_misses: AtomicU64,
    pub cas_badval: AtomicU64,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            started: Instant::now(),
            connections: Arc::default(),
            cmd_get: AtomicU64::new(0),
            get_hits: AtomicU64::new(0),
            get_misses: AtomicU64::new(0),
            cmd_set: AtomicU64::new(0),
            cmd_touch: AtomicU64::new(0),
            touch_hits: AtomicU64::new(0),
            touch_misses: AtomicU64::new(0),
            delete_hits: AtomicU64::new(0),
            delete_misses: AtomicU64::new(0),
            incr_hits: AtomicU64::new(0),
            incr_misses: AtomicU64::new(0),
            decr_hits: AtomicU64::new(0),
            decr_misses: AtomicU64::new(0),
            cas_hits: AtomicU64::new(0),
            cas_misses: AtomicU64::new(0),
            cas_badval: AtomicU64::new(0),
        }
    }
}

/// Adds one to `counter`.
pub fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl Counters {
    /// Every counter, by its `stats` name, in memcached's order.
    pub fn named(&self) -> Vec<(&'static str, u64)> {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        vec![
            ("uptime", self.started.elapsed().as_secs()),
            ("curr_connections", self.connections.open()),
            ("total_connections", self.connections.taken()),
            ("rejected_connections", self.connections.refused()),
            ("cmd_get", get(&self.cmd_get)),
            ("cmd_set", get(&self.cmd_set)),
            ("cmd_touch", get(&self.cmd_touch)),
            ("get_hits", get(&self.get_hits)),
            ("get_misses", get(&self.get_misses)),
            ("delete_misses", get(&self.delete_misses)),
            ("delete_hits", get(&self.delete_hits)),
            ("incr_misses", get(&self.incr_misses)),
            ("incr_hits", get(&self.incr_hits)),
            ("decr_misses", get(&self.decr_misses)),
            ("decr_hits", get(&self.decr_hits)),
            ("cas_misses", get(&self.cas_misses)),
            ("cas_hits", get(&self.cas_hits)),
            ("cas_badval", get(&self.cas_badval)),
            ("touch_hits", get(&self.touch_hits)),
            ("touch_misses", get(&self.touch_misses)),
        ]
    }
}
