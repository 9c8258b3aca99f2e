//! What a peer does at start, before raft runs: open the raft log, finish a
//! snapshot install a crash interrupted, remove staged snapshots nobody will
//! install, give a freshly bootstrapped group's state machine its starting
//! point, load the member directory, start raft from the configuration the
//! engine holds, and check that the engine and the raft log agree on how
//! far this node got.

use protobuf::Message as _;
use raft::eraftpb::{ConfState, SnapshotMetadata};

use crate::config::PeerConfig;
use crate::error::StartError;
use crate::log::RaftLogStore;
use crate::members::Members;
use crate::snapshot::SnapshotDirs;
use crate::state_machine::StateMachine;

/// Opens and reconciles the raft log and the state machine; returns the
/// log and the index the state machine has applied.
pub(super) fn recover(
    config: &PeerConfig,
    state_machine: &StateMachine,
    dirs: &SnapshotDirs,
) -> Result<(RaftLogStore, u64), StartError> {
    let mut store = RaftLogStore::open(
        config.log_fs.clone(),
        &config.log_dir,
        config.max_segment_bytes,
        &config.bootstrap_voters,
    )?;
    finish_interrupted_install(state_machine, &mut store)?;
    // Snapshots staged but never installed (raft found them stale, or
    // the node stopped first) are of no further use.
    dirs.remove_incoming();
    if state_machine.applied_index()? == 0
        && store.first_index() > 1
        && state_machine.conf_state()?.is_none()
    {
        // A freshly bootstrapped group: the state machine starts where
        // the log does, knowing the initial configuration and members
        // (so that snapshots of it carry them).
        let cs = store
            .conf_state()
            .write_to_bytes()
            .expect("conf state encodes");
        let members = Members::encode(&config.members.all());
        state_machine.bootstrap(store.first_index() - 1, &cs, &members)?;
    }
    if let Some(stored) = state_machine.members()? {
        let map = Members::decode(&stored).map_err(StartError::Config)?;
        if !map.is_empty() {
            config.members.replace(map);
        }
    }
    // raft restarts at the engine's applied index and applies the entries
    // after it again, each configuration change on top of the
    // configuration before it. The raft log records the configuration of
    // the newest change applied, which may be past that index (the engine
    // is durable only at a flush): raft must start from the one the engine
    // holds, which is as of its applied index.
    if let Some(bytes) = state_machine.conf_state()? {
        let cs = ConfState::parse_from_bytes(&bytes).map_err(|e| {
            StartError::Config(format!("the engine's configuration does not decode: {e}"))
        })?;
        if cs != *store.conf_state() {
            store.set_conf_state(&cs);
            store.persist()?;
        }
    }
    let applied = state_machine.applied_index()?;
    let last = store.last_index();
    if applied > last {
        return Err(StartError::Config(format!(
            "engine applied index {applied} is beyond the raft log's last index {last}"
        )));
    }
    // Entries are applied only once committed, so an applied index above
    // the recorded commit means the commit record was not yet synced.
    if applied > store.hard_state().commit {
        store.set_commit(applied);
        store.persist()?;
    }
    Ok((store, applied))
}

/// Finishes a snapshot install a crash interrupted: the staged copy is
/// installed again (it is idempotent), and the raft log records the snapshot
/// unless it already did.
fn finish_interrupted_install(
    sm: &StateMachine,
    store: &mut RaftLogStore,
) -> Result<(), StartError> {
    let Some((term, dir)) = sm.interrupted_install()? else {
        return Ok(());
    };
    if !dir.is_dir() {
        return Err(StartError::Config(format!(
            "an interrupted snapshot install needs {}, which is gone",
            dir.display()
        )));
    }
    tracing::warn!(dir = %dir.display(), "finishing an interrupted snapshot install");
    let info = sm.install(&dir, term)?;
    if store.first_index() <= info.index {
        let mut meta = SnapshotMetadata {
            index: info.index,
            term,
            ..Default::default()
        };
        let mut cs = ConfState::default();
        cs.merge_from_bytes(&info.conf_state).map_err(|e| {
            StartError::Config(format!("snapshot configuration does not decode: {e}"))
        })?;
        meta.set_conf_state(cs);
        store.apply_snapshot(&meta);
        store.persist()?;
    }
    sm.finish_install()?;
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}
