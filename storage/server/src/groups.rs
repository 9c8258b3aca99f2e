//! The raft groups this node hosts, by id: the one it was started with
//! (`--group-id`), and every group split off a group it hosts. A raft
//! batch or snapshot that arrives for a group is handed to that group's
//! peer; one for a group the node does not host is refused NOT_FOUND.
//!
//! A group split off one this node hosts is started here as soon as the
//! split is applied (`follow_splits`), and at every start for each group
//! the engine holds (`start_hosted`): each replica of the parent starts the
//! child's replica beside it, where the split left its raft log
//! (`StateMachine::log_start`).
//!
//! The service core asks the registry which group serves a key
//! ([`Groups::serving`]) and sends each request to that group's leader.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::select_all;
use parking_lot::{Mutex, RwLock};
use strata_engine::Engine;
use strata_raft::{KeySpan, Peer, PeerHandle, StateMachine};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Starts the peer of a group this node hosts, given its id.
pub type StartGroup = Box<dyn Fn(u64) -> anyhow::Result<Peer> + Send + Sync>;

/// The peers of the groups this node hosts.
#[derive(Default)]
pub struct Groups {
    handles: RwLock<BTreeMap<u64, PeerHandle>>,
    /// The peers started here (the first group's is the node's own).
    peers: Mutex<Vec<Peer>>,
}

impl Groups {
    /// The registry, holding the first group's handle.
    pub fn new(first: PeerHandle) -> Self {
        let groups = Groups::default();
        groups
            .handles
            .write()
            .insert(first.status().group_id, first);
        groups
    }

    /// The handle of group `group`'s peer, if this node hosts it.
    pub fn get(&self, group: u64) -> Option<PeerHandle> {
        self.handles.read().get(&group).cloned()
    }

    /// The ids of the groups this node hosts, ascending.
    pub fn ids(&self) -> Vec<u64> {
        self.handles.read().keys().copied().collect()
    }

    /// The group whose span holds `key`, as this node's replicas know the
    /// spans (a replica behind a split still claims the keys it gave away
    /// until it applies it; the group's leader refuses them then, and the
    /// caller tries again). `None` while no group hosted here holds it: a
    /// group just split off is started a moment after the split is applied.
    ///
    /// Should two spans known here both hold the key (a replica of a group
    /// that has not applied a split yet, beside one of the group split off
    /// it, made from a snapshot), the narrower one, which starts later, is
    /// the newer.
    pub fn serving(&self, key: &[u8]) -> Option<PeerHandle> {
        self.spans()
            .into_iter()
            .filter(|(span, _)| span.contains(key))
            .max_by(|a, b| a.0.start.cmp(&b.0.start))
            .map(|(_, handle)| handle)
    }

    /// Every group hosted here with its span, in key order.
    pub fn spans(&self) -> Vec<(KeySpan, PeerHandle)> {
        let mut spans: Vec<_> = self
            .handles
            .read()
            .values()
            .filter_map(|h| Some((h.state_machine().span().ok()?, h.clone())))
            .collect();
        spans.sort_by(|a, b| a.0.start.cmp(&b.0.start));
        spans
    }

    /// Holds `handle` as its group's (a peer started elsewhere).
    #[cfg(test)]
    pub(crate) fn insert(&self, handle: PeerHandle) {
        self.handles
            .write()
            .insert(handle.status().group_id, handle);
    }

    fn add(&self, group: u64, peer: Peer) {
        self.handles.write().insert(group, peer.handle());
        self.peers.lock().push(peer);
    }

    /// Starts every group the engine holds that is not running here yet;
    /// returns how many it started.
    pub fn start_hosted(&self, engine: &Arc<Engine>, start: &StartGroup) -> anyhow::Result<usize> {
        let mut started = 0;
        for group in StateMachine::groups_in(engine)? {
            if self.get(group).is_none() {
                let peer = start(group)?;
                tracing::info!(group, "started a raft group split off another");
                self.add(group, peer);
                started += 1;
            }
        }
        Ok(started)
    }

    /// Stops the peers started here (their waiters are answered as their
    /// drivers stop).
    pub fn stop(&self) {
        self.handles.write().clear();
        let peers = std::mem::take(&mut *self.peers.lock());
        drop(peers);
    }
}

/// Starts, until `stopping`, every group split off a group this node hosts
/// once the split is applied here.
pub fn follow_splits(
    groups: Arc<Groups>,
    engine: Arc<Engine>,
    start: StartGroup,
    mut stopping: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            // Listening first, then looking: a split applied in between is
            // found by the look, and one applied after it is heard.
            let mut notices: Vec<_> = groups
                .ids()
                .into_iter()
                .filter_map(|g| groups.get(g))
                .map(|h| h.state_machine().splits())
                .collect();
            match groups.start_hosted(&engine, &start) {
                // A group started now is listened to from the next round
                // on: look again (it may have split already).
                Ok(started) if started > 0 => continue,
                Ok(_) => {}
                Err(e) => {
                    tracing::error!(error = %e, "starting a group split off another failed")
                }
            }
            if notices.is_empty() {
                return;
            }
            let changed = select_all(notices.iter_mut().map(|n| Box::pin(n.changed())));
            tokio::select! {
                (result, _, _) = changed => {
                    if result.is_err() {
                        // A group's state machine is gone: the node stops.
                        return;
                    }
                }
                _ = stopping.wait_for(|stop| *stop) => return,
            }
        }
    })
}
