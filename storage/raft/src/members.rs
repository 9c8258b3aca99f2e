//! The member directory: which address reaches each member of the group.
//!
//! Raft knows members only by id. Their addresses travel in the context of
//! the configuration change that adds them, are stored with the
//! configuration in the engine (so snapshots carry them too), and are kept
//! here for the transport to look up.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::RwLock;

/// A shared, cheap-to-clone map from member id to address.
#[derive(Debug, Clone, Default)]
pub struct Members {
    inner: Arc<RwLock<BTreeMap<u64, String>>>,
}

impl Members {
    pub fn new(initial: BTreeMap<u64, String>) -> Self {
        Members {
            inner: Arc::new(RwLock::new(initial)),
        }
    }

    pub fn address(&self, id: u64) -> Option<String> {
        self.inner.read().get(&id).cloned()
    }

    pub fn all(&self) -> BTreeMap<u64, String> {
        self.inner.read().clone()
    }

    pub fn insert(&self, id: u64, address: String) {
        self.inner.write().insert(id, address);
    }

    pub fn remove(&self, id: u64) {
        self.inner.write().remove(&id);
    }

    pub fn replace(&self, all: BTreeMap<u64, String>) {
        *self.inner.write() = all;
    }

    /// `id=address` lines, the form stored in the engine.
    pub fn encode(map: &BTreeMap<u64, String>) -> Vec<u8> {
        let mut out = String::new();
        for (id, addr) in map {
            out.push_str(&format!("{id}={addr}\n"));
        }
        out.into_bytes()
    }

    pub fn decode(bytes: &[u8]) -> Result<BTreeMap<u64, String>, String> {
        let text = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
        let mut map = BTreeMap::new();
        for line in text.lines().filter(|l| !l.is_empty()) {
            let (id, addr) = line
                .split_once('=')
                .ok_or_else(|| format!("bad member line `{line}`"))?;
            let id = id.parse().map_err(|_| format!("bad member id `{id}`"))?;
            map.insert(id, addr.to_string());
        }
        Ok(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips() {
        let map = BTreeMap::from([
            (1, "127.0.0.1:7001".to_string()),
            (4, "node4:7001".to_string()),
        ]);
        assert_eq!(Members::decode(&Members::encode(&map)).unwrap(), map);
        assert!(Members::decode(b"x=1").is_err());
    }
}
