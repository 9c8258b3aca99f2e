//! Installing a received snapshot: the group's keys replaced by those of a
//! staged engine checkpoint.
//!
//! The steps, in order (`docs/ARCHITECTURE.md`, "Snapshots"):
//! 1. check the staged copy: its manifest is there (the transport stores it
//!    only once every file matched), and the staged engine opens and holds
//!    the manifest's applied index and key count. A failure here leaves the
//!    replica exactly as it was;
//! 2. pin a read point, so that user reads see the old state until the
//!    install ends;
//! 3. write the install marker (term and staged path), durably: from here
//!    on, a crash is finished at the next start from the staged copy;
//! 4. delete the group's keys and copy the snapshot's in, in batches;
//! 5. record the snapshot's applied index, configuration and members, and
//!    make it all durable;
//! 6. drop the read point: reads see the new state, all of it at once.
//!
//! The marker is removed by [`StateMachine::finish_install`] once the raft
//! log records the snapshot.

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_engine::{Engine, EngineError, Options, WriteBatch};

use super::{SCAN_BATCH_KEYS, SnapshotInfo, StateMachine};

/// The most bytes of keys and values an install reads and writes in one
/// piece (a piece ends with the pair that reaches it, and holds at most
/// `SCAN_BATCH_KEYS` pairs).
const INSTALL_PIECE_BYTES: usize = 4 << 20;
use crate::keys;
use crate::snapshot::Manifest;

impl StateMachine {
    /// The term and staged directory of a snapshot install that has not been
    /// finished ([`finish_install`](Self::finish_install)), if any.
    pub fn interrupted_install(&self) -> Result<Option<(u64, PathBuf)>, EngineError> {
        let Some(v) = self.engine.get(&self.installing_key)? else {
            return Ok(None);
        };
        let term = v
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_be_bytes)
            .ok_or_else(|| EngineError::Corruption {
                context: format!(
                    "install marker of group {} is {} bytes",
                    self.group,
                    v.len()
                ),
            })?;
        let path = PathBuf::from(String::from_utf8_lossy(&v[8..]).into_owned());
        Ok(Some((term, path)))
    }

    /// Replaces this group's data with the verified snapshot staged in `dir`
    /// (taken at raft term `term`). The staged copy is checked before
    /// anything is touched; a marker is written next and stays until
    /// [`finish_install`](Self::finish_install), so a crash at any later
    /// point is finished at the next start. User reads see the old state
    /// until this returns. The data is durable when it returns.
    pub fn install(&self, dir: &Path, term: u64) -> Result<SnapshotInfo, EngineError> {
        let source = self.open_staged(dir)?;
        *self.reads_at.write() = Some(Arc::new(self.engine.read_point()));
        self.write_marker(dir, term)?;
        // The keys change here without an apply round: what the rounds
        // remember of them is forgotten, before and after (even a failed
        // install may have changed some).
        self.forget_recent_keys();
        let replaced = self.replace_keys(&source);
        self.forget_recent_keys();
        replaced?;
        let info = source.describe()?;
        let (history_from, _) = source.history_bounds()?;
        let request_clock = source.request_clock()?;
        let cluster_id = source.stored_cluster_id()?;
        let (span, space) = (source.span()?, source.space()?);
        let inherited = source.engine.get(&source.inherited_key)?;
        let next_group = source.engine.get(&source.next_group_key)?;
        drop(source);
        let mut done = WriteBatch::default();
        done.put(&self.span_key, &span.encode());
        done.put(&self.space_key, &space.to_be_bytes());
        match &inherited {
            Some(until) => done.put(&self.inherited_key, until),
            None => done.delete(&self.inherited_key),
        }
        match &next_group {
            Some(next) => done.put(&self.next_group_key, next),
            None => done.delete(&self.next_group_key),
        }
        done.put(&self.applied_key, &info.index.to_be_bytes());
        done.put(&self.conf_key, &info.conf_state);
        done.put(&self.members_key, &info.members);
        done.put(&self.history_from_key, &history_from.to_be_bytes());
        done.put(&self.request_clock_key, &request_clock.to_be_bytes());
        if cluster_id == 0 {
            done.delete(&self.cluster_id_key);
        } else {
            done.put(&self.cluster_id_key, &cluster_id.to_be_bytes());
        }
        self.engine.write(&done)?;
        self.cluster_id.set(cluster_id);
        *self.span.write() = Some(span);
        *self.space.write() = Some(space);
        self.make_durable()?;
        self.reset_trim();
        *self.forget_cursor.lock() = super::dedupe::ForgetCursor::default();
        // Only a finished install lets reads through to the new state; after
        // a failure they keep the old one until the node restarts and the
        // marker finishes the install.
        *self.reads_at.write() = None;
        self.applied_tx.send_replace(info.index);
        Ok(info)
    }

    /// Opens the staged snapshot in `dir` and checks it against its
    /// manifest: a staged copy that is not whole is refused here.
    fn open_staged(&self, dir: &Path) -> Result<StateMachine, EngineError> {
        let refuse = |why: String| EngineError::Corruption {
            context: format!("staged snapshot {}: {why}", dir.display()),
        };
        let manifest = Manifest::read(dir)
            .map_err(|e| refuse(e.to_string()))?
            .ok_or_else(|| refuse("no manifest: it was never received whole".into()))?;
        let source =
            StateMachine::new(Arc::new(Engine::open(dir, Options::default())?), self.group);
        source.check_value_format().map_err(|e| match e {
            super::ValueFormatError::Engine(e) => e,
            other => refuse(other.to_string()),
        })?;
        let info = source.describe()?;
        if (info.index, info.keys) != (manifest.index, manifest.keys) {
            return Err(refuse(format!(
                "holds index {} with {} keys; its manifest says index {} with {}",
                info.index, info.keys, manifest.index, manifest.keys
            )));
        }
        Ok(source)
    }

    fn write_marker(&self, dir: &Path, term: u64) -> Result<(), EngineError> {
        let mut marker = term.to_be_bytes().to_vec();
        marker.extend_from_slice(dir.to_string_lossy().as_bytes());
        let mut mark = WriteBatch::default();
        mark.put(&self.installing_key, &marker);
        self.engine.write(&mark)?;
        self.make_durable()
    }

    /// Deletes the group's keys, history, request records and leases, then
    /// copies `source`'s in.
    fn replace_keys(&self, source: &StateMachine) -> Result<(), EngineError> {
        // The snapshot's span in its data space: a replica behind a split
        // keeps the keys beyond it, which are the child's.
        let data = source.data_bounds()?;
        let history = (
            keys::history_key(self.group, 0, 0),
            keys::history_end(self.group),
        );
        let requests = keys::request_range(self.group);
        let anchored = keys::anchored_requests(source.space()?, &source.span()?);
        let expiries = keys::request_expiry_range(self.group);
        let leases = keys::lease_range(self.group);
        let lease_keys = keys::lease_members_all(self.group);
        for (lo, hi) in [
            data, history, requests, anchored, expiries, leases, lease_keys,
        ] {
            self.replace_range(source, lo, hi)?;
        }
        Ok(())
    }

    /// Deletes the keys in `[lo, hi)`, then copies `source`'s in.
    fn replace_range(
        &self,
        source: &StateMachine,
        lo: Vec<u8>,
        hi: Vec<u8>,
    ) -> Result<(), EngineError> {
        loop {
            let old = self.engine.scan_bytes(
                Bound::Included(&lo[..]),
                Bound::Excluded(&hi[..]),
                SCAN_BATCH_KEYS,
                INSTALL_PIECE_BYTES,
            )?;
            if old.is_empty() {
                break;
            }
            let mut batch = WriteBatch::default();
            for (k, _) in &old {
                batch.delete(k);
            }
            self.engine.write(&batch)?;
        }
        let mut from = lo;
        loop {
            let pairs = source.engine.scan_bytes(
                Bound::Included(&from[..]),
                Bound::Excluded(&hi[..]),
                SCAN_BATCH_KEYS,
                INSTALL_PIECE_BYTES,
            )?;
            let Some((last, _)) = pairs.last() else {
                return Ok(());
            };
            from = last.clone();
            from.push(0);
            let mut batch = WriteBatch::default();
            for (k, v) in &pairs {
                batch.put(k, v);
            }
            self.engine.write(&batch)?;
        }
    }

    /// Removes the install marker once the raft log records the snapshot.
    pub fn finish_install(&self) -> Result<(), EngineError> {
        let mut batch = WriteBatch::default();
        batch.delete(&self.installing_key);
        self.engine.write(&batch)?;
        self.make_durable()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{Command, Op, Proposal};
    use crate::snapshot::seal;
    use crate::state_machine::Committed;

    fn open(dir: &Path) -> StateMachine {
        let sm = StateMachine::new(Arc::new(Engine::open(dir, Options::default()).unwrap()), 1);
        sm.check_value_format().unwrap();
        sm
    }

    fn committed(index: u64, command: Command) -> Committed {
        Committed {
            index,
            proposal: Some(Proposal {
                request_id: 1,
                command,
                dedupe: None,
            }),
            conf_state: None,
            members: None,
        }
    }

    /// A checkpoint of `sm` in `dir` with its manifest, as the snapshot
    /// thread builds one.
    fn snapshot_of(sm: &StateMachine, dir: &Path) -> SnapshotInfo {
        seal(dir, sm.checkpoint(dir).unwrap()).unwrap()
    }

    /// A replica holding `keys` user keys, applied up to `index`.
    fn replica_with(dir: &std::path::Path, keys: usize, value: &str, index: u64) -> StateMachine {
        let sm = open(dir);
        let ops = (0..keys)
            .map(|i| Op::Put {
                key: format!("k{i:06}").into(),
                value: value.into(),
            })
            .collect();
        sm.apply(&[committed(index, Command::Batch(ops))]).unwrap();
        sm
    }

    #[test]
    fn an_install_copies_large_values_in_pieces_of_bounded_bytes() {
        // Proves that an install holds a bounded piece of the snapshot at a
        // time however large its values: 48 values of 1 MiB. The copy went
        // by 1,024 keys a piece, so a snapshot of large values was read and
        // written whole (a follower catching up after a minute of 15 MiB
        // batches reached 2.4 GiB).
        let dir = tempfile::tempdir().unwrap();
        let follower = replica_with(&dir.path().join("follower"), 10, "old", 7);
        let leader = replica_with(&dir.path().join("leader"), 48, &"n".repeat(1 << 20), 40);
        let snap = dir.path().join("snap");
        snapshot_of(&leader, &snap);

        strata_arena::largest_allocation();
        follower.install(&snap, 9).unwrap();
        let largest = strata_arena::largest_allocation();
        assert!(
            largest <= 4 * INSTALL_PIECE_BYTES,
            "the install made an allocation of {largest} bytes"
        );
        let pairs = follower.scan(b"", None, 100).unwrap();
        assert_eq!(pairs.len(), 48);
        assert!(pairs.iter().all(|(_, v)| v.len() == 1 << 20));
    }

    #[test]
    fn an_install_replaces_the_history_with_the_snapshots() {
        // Proves: after an install the replica's change history is the
        // snapshot's (its oldest index and every change from it on), none
        // of its own is left, and watchers are told the new applied index.
        let dir = tempfile::tempdir().unwrap();
        let follower = replica_with(&dir.path().join("follower"), 3, "old", 7);
        let mut applied = follower.applied_changes();
        let leader = open(&dir.path().join("leader")).with_history(5);
        for i in 1..=20u64 {
            let put = Command::Put {
                key: format!("n{i}").into(),
                value: "new".into(),
            };
            leader.apply(&[committed(i, put)]).unwrap();
        }
        let snap = dir.path().join("snap");
        snapshot_of(&leader, &snap);
        follower.install(&snap, 9).unwrap();
        assert_eq!(follower.history_bounds().unwrap(), (16, 20));
        let page = follower
            .history(crate::HistoryPosition::at(16), 100, usize::MAX)
            .unwrap();
        let keys: Vec<String> = page
            .changes
            .iter()
            .map(|c| String::from_utf8_lossy(&c.key).into_owned())
            .collect();
        assert_eq!(keys, ["n16", "n17", "n18", "n19", "n20"]);
        assert!(matches!(
            follower.history(crate::HistoryPosition::at(7), 100, usize::MAX),
            Err(crate::HistoryError::Compacted { oldest: 16 })
        ));
        assert!(applied.has_changed().unwrap());
        assert_eq!(*applied.borrow_and_update(), 20);
    }

    #[test]
    fn cut_short_snapshot_is_refused_and_the_old_data_kept() {
        // Proves: a staged snapshot that lacks its files (the stream ended
        // before the first one, or a table is missing) is refused before
        // anything of the replica's own data is touched.
        let dir = tempfile::tempdir().unwrap();
        let follower = replica_with(&dir.path().join("follower"), 10, "old", 7);

        let empty = dir.path().join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        let result = follower.install(&empty, 9);
        assert!(
            result.is_err(),
            "an empty staged snapshot was installed: {result:?}"
        );
        assert_eq!(follower.applied_index().unwrap(), 7);
        assert_eq!(follower.scan(b"", None, 100).unwrap().len(), 10);
        assert_eq!(follower.interrupted_install().unwrap(), None);

        let leader = replica_with(&dir.path().join("leader"), 10, "new", 40);
        let snap = dir.path().join("snap");
        snapshot_of(&leader, &snap);
        for entry in std::fs::read_dir(&snap).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "sst") {
                std::fs::remove_file(path).unwrap();
            }
        }
        let result = follower.install(&snap, 9);
        assert!(
            result.is_err(),
            "a snapshot without its tables was installed: {result:?}"
        );
        assert_eq!(follower.applied_index().unwrap(), 7);
        assert_eq!(
            follower.scan(b"", None, 100).unwrap(),
            (0..10)
                .map(|i| (format!("k{i:06}").into_bytes(), b"old".to_vec()))
                .collect::<Vec<_>>()
        );
        assert_eq!(follower.interrupted_install().unwrap(), None);
    }

    #[test]
    fn reads_during_an_install_see_the_old_state_or_the_new_one() {
        // Proves: while an install replaces the group's keys, a concurrent
        // scan sees either every old key or every new one, never a mix (nor
        // a missing key), across several installs.
        const KEYS: usize = 5000;
        let dir = tempfile::tempdir().unwrap();
        let follower = Arc::new(replica_with(&dir.path().join("follower"), KEYS, "old", 7));
        let leader = replica_with(&dir.path().join("leader"), KEYS, "new", 40);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader = {
            let (sm, stop) = (follower.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut scans = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let pairs = sm.scan(b"", None, KEYS + 1).unwrap();
                    let old = pairs.iter().filter(|(_, v)| v == b"old").count();
                    let new = pairs.iter().filter(|(_, v)| v == b"new").count();
                    assert!(
                        (old, new) == (KEYS, 0) || (old, new) == (0, KEYS),
                        "a read during an install saw {old} old and {new} new of {KEYS} keys"
                    );
                    scans += 1;
                }
                scans
            })
        };
        for round in 0..4 {
            let snap = dir.path().join(format!("snap-{round}"));
            snapshot_of(&leader, &snap);
            follower.install(&snap, 9).unwrap();
            follower.finish_install().unwrap();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let scans = reader.join().unwrap();
        assert!(scans > 0);
    }
}
