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
use crate::identity::Identity;
use crate::log::RaftLogStore;
use crate::members::Members;
use crate::snapshot::SnapshotDirs;
use crate::state_machine::StateMachine;

/// Opens and reconciles the raft log and the state machine; returns the
/// log, the index the state machine has applied and the member's identity.
pub(super) fn recover(
    config: &PeerConfig,
    state_machine: &StateMachine,
    dirs: &SnapshotDirs,
) -> Result<(RaftLogStore, u64, Identity), StartError> {
    start_split_off_log(config, state_machine)?;
    let mut store = RaftLogStore::open(
        config.log_fs.clone(),
        &config.log_dir,
        config.max_segment_bytes,
        &config.bootstrap_voters,
    )?;
    let identity = Identity::open(config.log_fs.clone(), &config.log_dir, store.opened_empty())?;
    finish_interrupted_install(state_machine, &mut store)?;
    state_machine.check_value_format()?;
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
    // Raft applies the entries after the engine's applied index again,
    // configuration changes among them, so it must start from the
    // configuration at that index. The raft log may hold a later one: its
    // record was synced, while the engine's write of the same change was
    // lost at a crash.
    if let Some(bytes) = state_machine.conf_state()? {
        let applied_conf = ConfState::parse_from_bytes(&bytes).map_err(|e| {
            StartError::Config(format!("the engine's configuration does not decode: {e}"))
        })?;
        if &applied_conf != store.conf_state() {
            store.set_conf_state(&applied_conf);
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
    Ok((store, applied, identity))
}

/// Starts the raft log of a group split off another where the split left
/// it (`StateMachine::log_start`): every entry up to the split's index
/// taken as committed, with the configuration the split copied. Only a log
/// that holds nothing yet is started, and the state machine then forgets
/// where: a log lost later is never started again as if it held nothing
/// (its member may have acknowledged entries; it comes back empty and
/// unproven, as any member whose log was lost).
fn start_split_off_log(config: &PeerConfig, sm: &StateMachine) -> Result<(), StartError> {
    let Some((index, term)) = sm.log_start()? else {
        return Ok(());
    };
    let log = RaftLogStore::open(
        config.log_fs.clone(),
        &config.log_dir,
        config.max_segment_bytes,
        &[],
    )?;
    if log.opened_empty() {
        drop(log);
        let conf = sm.conf_state()?.unwrap_or_default();
        let conf = ConfState::parse_from_bytes(&conf).map_err(|e| {
            StartError::Config(format!("the split's configuration does not decode: {e}"))
        })?;
        drop(RaftLogStore::seed(
            config.log_fs.clone(),
            &config.log_dir,
            config.max_segment_bytes,
            &conf.voters,
            index,
            term,
        )?);
        tracing::info!(
            group = config.group_id,
            index,
            "started the raft log of a group split off another, at the split"
        );
    }
    sm.clear_log_start()?;
    Ok(())
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

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use raft::eraftpb::Entry;
    use strata_engine::{Engine, FaultFs, Options, WalMode};

    use super::*;

    /// A member's parts on `fs`, as a start finds them.
    fn parts(fs: &FaultFs, snapshots: &Path) -> (PeerConfig, StateMachine, SnapshotDirs) {
        let mut config = PeerConfig::new(1, 1, vec![1, 2, 3], PathBuf::from("/raft"));
        config.log_fs = Arc::new(fs.clone());
        config.snapshot_root = snapshots.to_path_buf();
        let engine = Engine::open_with_fs(
            Arc::new(fs.clone()),
            Path::new("/engine"),
            Options {
                wal: WalMode::NoSync,
                ..Options::default()
            },
        )
        .expect("engine opens");
        let dirs = SnapshotDirs::new(snapshots.to_path_buf()).expect("snapshot dirs");
        (config, StateMachine::new(Arc::new(engine), 1), dirs)
    }

    // Proves: when the raft log recorded a configuration whose application
    // the engine lost at a crash (the engine's write was not yet durable,
    // the raft log's record was synced), raft restarts from the
    // configuration at the engine's applied index, so the change is
    // applied again once, not on top of itself.
    #[test]
    fn restart_takes_the_configuration_at_the_engines_applied_index() {
        let snapshots = tempfile::tempdir().expect("tempdir");
        let fs = FaultFs::new();
        let (config, sm, dirs) = parts(&fs, snapshots.path());
        let (mut store, applied, _) = recover(&config, &sm, &dirs).expect("first start");
        let later = ConfState {
            voters: vec![1, 2, 3, 4],
            ..Default::default()
        };
        store.append(&[Entry {
            index: applied + 1,
            term: 1,
            ..Default::default()
        }]);
        store.set_conf_state(&later);
        store.persist().expect("persist");
        drop((store, sm));
        let fs = fs.crash();
        let (config, sm, dirs) = parts(&fs, snapshots.path());
        let (store, applied_after, _) = recover(&config, &sm, &dirs).expect("restart");
        assert_eq!(
            applied_after, applied,
            "the engine lost nothing it had made durable"
        );
        assert_eq!(
            store.conf_state().voters,
            vec![1, 2, 3],
            "the configuration at the engine's applied index"
        );
    }
}
