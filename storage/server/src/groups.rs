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
//! A member whose replica of the parent caught up from a snapshot taken
//! after the split never applies it, so never starts the child that way:
//! the first raft message or snapshot for a group it does not host, of an
//! id the cluster gave out (below the first group's counter, as this node
//! knows it), starts an empty replica of it ([`Groups::adopt`]), which the
//! group's leader then catches up from a snapshot, as it does a joining
//! node.
//!
//! The service core asks the registry which group serves a key
//! ([`Groups::serving`]) and sends each request to that group's leader.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::select_all;
use parking_lot::{Mutex, RwLock};
use strata_engine::Engine;
use strata_raft::{KeySpan, Peer, PeerHandle, StateMachine};
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

/// Starts the peer of a group this node hosts, given its id.
pub type StartGroup = Arc<dyn Fn(u64) -> anyhow::Result<Peer> + Send + Sync>;

/// A range split off another, as this node started its replica of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitNotice {
    /// The new range's group.
    pub child: u64,
    /// The group it was split off (0 when no group hosted here ends where
    /// the new one starts).
    pub parent: u64,
    /// The keys the new range serves.
    pub span: KeySpan,
    /// When this node started it, Unix time in milliseconds.
    pub at_ms: u64,
}

/// The peers of the groups this node hosts.
pub struct Groups {
    handles: RwLock<BTreeMap<u64, PeerHandle>>,
    /// The peers started here (the first group's is the node's own).
    peers: Mutex<Vec<Peer>>,
    first: PeerHandle,
    /// How a group is started here; none: the registry starts nothing.
    start: Option<StartGroup>,
    /// Held while a group is started; true once the registry stopped (no
    /// group is started after that).
    starting: Mutex<bool>,
    /// How many groups were started or held here: changes with each.
    added: watch::Sender<usize>,
    /// Each range split off one hosted here, as it is started.
    splits: broadcast::Sender<SplitNotice>,
}

impl Groups {
    /// The registry, holding the first group's handle.
    pub fn new(first: PeerHandle) -> Self {
        let mut handles = BTreeMap::new();
        handles.insert(first.status().group_id, first.clone());
        Groups {
            handles: RwLock::new(handles),
            peers: Mutex::default(),
            first,
            start: None,
            starting: Mutex::new(false),
            added: watch::Sender::new(1),
            splits: broadcast::Sender::new(64),
        }
    }

    /// Changes whenever a group is started or held here (its handle is in
    /// [`all`](Self::all) by then).
    pub fn added(&self) -> watch::Receiver<usize> {
        self.added.subscribe()
    }

    /// The ranges split off a group hosted here, each as its replica is
    /// started here.
    pub fn split_notices(&self) -> broadcast::Receiver<SplitNotice> {
        self.splits.subscribe()
    }

    /// Tells the split notices' listeners of group `child`, just started
    /// after a split.
    fn announce_split(&self, child: u64) {
        let Some(span) = self.get(child).and_then(|h| h.state_machine().span().ok()) else {
            return;
        };
        let parent = self
            .spans()
            .into_iter()
            .find(|(s, _)| s.end.as_deref() == Some(&span.start[..]))
            .map_or(0, |(_, h)| h.status().group_id);
        let at_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        // No listener is not an error: nobody watches the events.
        let _ = self.splits.send(SplitNotice {
            child,
            parent,
            span,
            at_ms,
        });
    }

    /// The registry, starting groups with `start`.
    pub fn with_start(first: PeerHandle, start: StartGroup) -> Self {
        Groups {
            start: Some(start),
            ..Groups::new(first)
        }
    }

    /// The handle of group `group`'s peer, starting an empty replica of it
    /// first when this node does not host it and the cluster gave its id
    /// out (a raft message or snapshot names it: the node missed the split
    /// that made it). `None` for any other group.
    pub fn adopt(&self, group: u64) -> Option<PeerHandle> {
        if let Some(handle) = self.get(group) {
            return Some(handle);
        }
        let start = self.start.as_ref()?;
        if *self.starting.lock() {
            return None;
        }
        let given = self.first.state_machine().next_group_id().ok()?;
        if group == self.first.status().group_id || group >= given {
            return None;
        }
        match self.start_once(group, start) {
            Ok((handle, true)) => {
                tracing::info!(
                    group,
                    "started an empty replica of a raft group a member's message names: \
                     it catches up from the group's leader"
                );
                Some(handle)
            }
            Ok((handle, false)) => Some(handle),
            Err(e) => {
                tracing::error!(group, error = %e, "starting a replica of a raft group failed");
                None
            }
        }
    }

    /// Starts group `group`'s peer unless it runs already (one start at a
    /// time: two peers of one group must never run); its handle, and
    /// whether this call started it.
    fn start_once(&self, group: u64, start: &StartGroup) -> anyhow::Result<(PeerHandle, bool)> {
        let stopped = self.starting.lock();
        if let Some(handle) = self.get(group) {
            return Ok((handle, false));
        }
        anyhow::ensure!(
            !*stopped,
            "the node is stopping: group {group} is not started"
        );
        let peer = start(group)?;
        let handle = peer.handle();
        self.handles.write().insert(group, handle.clone());
        self.peers.lock().push(peer);
        self.added.send_modify(|n| *n += 1);
        Ok((handle, true))
    }

    /// The first group's handle.
    pub fn first(&self) -> &PeerHandle {
        &self.first
    }

    /// The handle of group `group`'s peer, if this node hosts it.
    pub fn get(&self, group: u64) -> Option<PeerHandle> {
        self.handles.read().get(&group).cloned()
    }

    /// The handles of every group this node hosts, by id.
    pub fn all(&self) -> Vec<PeerHandle> {
        self.handles.read().values().cloned().collect()
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

    /// Every group hosted here with its span, in key order. A replica
    /// started empty ([`adopt`](Self::adopt)) holds no span until its
    /// snapshot is installed (an empty state reads as the whole key space):
    /// it is left out until then. The first group is always in.
    pub fn spans(&self) -> Vec<(KeySpan, PeerHandle)> {
        let first = self.first.status().group_id;
        let mut spans: Vec<_> = self
            .handles
            .read()
            .values()
            .filter(|h| {
                let st = h.status();
                st.group_id == first || st.applied_index > 0
            })
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
        self.added.send_modify(|n| *n += 1);
    }

    /// Starts every group the engine holds that is not running here yet;
    /// returns the ones it started.
    pub fn start_hosted(&self, engine: &Arc<Engine>) -> anyhow::Result<Vec<u64>> {
        let Some(start) = &self.start else {
            return Ok(Vec::new());
        };
        let mut started = Vec::new();
        for group in StateMachine::groups_in(engine)? {
            if self.get(group).is_none() && self.start_once(group, start)?.1 {
                tracing::info!(group, "started a raft group split off another");
                started.push(group);
            }
        }
        Ok(started)
    }

    /// Stops the peers started here (their waiters are answered as their
    /// drivers stop).
    pub fn stop(&self) {
        *self.starting.lock() = true;
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
            match groups.start_hosted(&engine) {
                // A group started now is listened to from the next round
                // on: look again (it may have split already). The node
                // started the groups it held before this runs, so each one
                // started here was just split off.
                Ok(started) if !started.is_empty() => {
                    for child in started {
                        groups.announce_split(child);
                    }
                    continue;
                }
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use strata_engine::{Engine, Options, WalMode};
    use strata_raft::{Command, Message, PeerConfig, Transport};

    use super::*;

    /// A single-voter group has no one to send to.
    struct Nowhere;

    impl Transport for Nowhere {
        fn send(&self, _messages: Vec<Message>) {}
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_replica_started_empty_serves_no_key_until_it_holds_a_state() {
        // Proves: beside the first group (serving every key), a replica of
        // another group started empty, as one a member's message starts, is
        // not taken for the group serving any key (its empty state would
        // read as the whole key space), nor listed among the spans.
        let dir = tempfile::tempdir().unwrap();
        let options = Options {
            wal: WalMode::Disabled,
            ..Options::default()
        };
        let engine = Arc::new(Engine::open(dir.path().join("engine"), options).unwrap());
        let start = |group: u64, voters: Vec<u64>| {
            let sm = Arc::new(StateMachine::new(engine.clone(), group));
            let config =
                PeerConfig::new(1, group, voters, dir.path().join(format!("raft-{group}")));
            Peer::start(config, sm, Nowhere).unwrap()
        };
        let first = start(1, vec![1]);
        let handle = first.handle();
        while handle.status().leader_id != 1 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        handle
            .propose(Command::Put {
                key: "k".into(),
                value: "v".into(),
            })
            .await
            .unwrap();
        let empty = start(7, Vec::new());
        let groups = Groups::new(handle.clone());
        groups.insert(empty.handle());
        for key in [&b""[..], b"k", b"zzz"] {
            assert_eq!(groups.serving(key).map(|h| h.status().group_id), Some(1));
        }
        let listed: Vec<u64> = groups
            .spans()
            .iter()
            .map(|(_, h)| h.status().group_id)
            .collect();
        assert_eq!(listed, [1]);
    }
}
