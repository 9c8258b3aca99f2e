//! `strata-node restore FILE`: builds one member's data directory of a new
//! cluster from a backup, offline, as the node would have left it had it
//! applied everything up to the backup's index: every lease, and every key
//! with its value, create and mod index and lease, as they were; a raft
//! log that starts after that index, with the members in `--peers` as the
//! voters. Each member of the new cluster is restored from the same file
//! with its own `--id` (and the same `--peers`), then started as usual.
//! The new cluster has no id until its first leader draws one
//! (`crate::cluster_name`), so its members and the old cluster's never
//! take each other's messages.
//!
//! The directory is built beside the data directory, under
//! `<data-dir>.restoring`, and renamed to it only once the backup read
//! whole (checksum included) and everything in it was synced: a restore
//! that fails or is killed leaves no data directory a node would start on.

use std::collections::{BTreeMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_engine::{Engine, EngineError, FileSystem, Options as EngineOptions, StdFs, WalMode};
use strata_proto::backup::{BackupError, BackupInfo, BackupItem, BackupReader};
use strata_raft::log::{BOOTSTRAP_INDEX, BOOTSTRAP_TERM, DEFAULT_SEGMENT_BYTES, RaftLogStore};
use strata_raft::{LogError, StateMachine, ValueFormatError, Versioned};

use crate::config::NodeConfig;

/// What a restore built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    pub info: BackupInfo,
    /// The raft index the member starts after.
    pub index: u64,
    pub members: BTreeMap<u64, String>,
}

#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("{0}")]
    Config(String),
    #[error(
        "the data directory {0} exists and is not empty; a member is restored into a new one \
         (move the old one away first)"
    )]
    DataDirInUse(PathBuf),
    #[error("the backup does not read: {0}")]
    Backup(#[from] BackupError),
    #[error("the backup puts key {key:?} under lease {lease}, which it does not hold")]
    UnknownLease { key: String, lease: u64 },
    #[error("writing the engine: {0}")]
    Engine(#[from] EngineError),
    #[error("writing the engine: {0}")]
    ValueFormat(#[from] ValueFormatError),
    #[error("writing the raft log: {0}")]
    Log(#[from] LogError),
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> RestoreError {
    let path = path.to_path_buf();
    move |source| RestoreError::Io { what, path, source }
}

/// Builds the data directory of member `config.id` from the backup
/// `input`, for the cluster of `config.members()`.
pub fn restore(config: &NodeConfig, input: impl Read) -> Result<Restored, RestoreError> {
    if config.join {
        return Err(RestoreError::Config(
            "--join does not go with restore: a restored member is one of the new cluster's \
             initial members (restore each of them from the same backup)"
                .into(),
        ));
    }
    let members = config.members().map_err(RestoreError::Config)?;
    let target = config.data_dir.clone();
    if is_in_use(&target)? {
        return Err(RestoreError::DataDirInUse(target));
    }
    let staging = staging_dir(&target);
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(io("removing", &staging))?;
    }
    let built = NodeConfig {
        data_dir: staging.clone(),
        ..config.clone()
    };
    let result = build(&built, &members, input);
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    let restored = result?;
    if target.exists() {
        // Empty (checked above): it gives way to the one built.
        std::fs::remove_dir(&target).map_err(io("removing", &target))?;
    }
    std::fs::rename(&staging, &target).map_err(io("renaming into place", &staging))?;
    let parent = parent_of(&target);
    StdFs.sync_dir(&parent).map_err(io("syncing", &parent))?;
    Ok(restored)
}

/// A data directory a node could already hold something in.
fn is_in_use(dir: &Path) -> Result<bool, RestoreError> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => Ok(entries.next().is_some()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io("reading", dir)(e)),
    }
}

fn staging_dir(target: &Path) -> PathBuf {
    let mut name = target.file_name().unwrap_or_default().to_os_string();
    name.push(".restoring");
    target.with_file_name(name)
}

fn parent_of(dir: &Path) -> PathBuf {
    match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Writes the engine and then the raft log under `config.data_dir`.
fn build(
    config: &NodeConfig,
    members: &BTreeMap<u64, String>,
    input: impl Read,
) -> Result<Restored, RestoreError> {
    StdFs
        .create_dir_durable(&config.data_dir)
        .map_err(io("creating", &config.data_dir))?;
    let engine = Arc::new(Engine::open(
        config.engine_dir(),
        EngineOptions {
            wal: WalMode::Disabled,
            ..EngineOptions::default()
        },
    )?);
    let state_machine = StateMachine::new(engine.clone(), config.group_id);
    state_machine.check_value_format()?;
    let mut seed = state_machine.seeder()?;
    let mut reader = BackupReader::new(input)?;
    let mut leases = HashSet::new();
    while let Some(item) = reader.next_item()? {
        match item {
            BackupItem::Lease { id, ttl_ms } => {
                seed.lease(id, ttl_ms)?;
                leases.insert(id);
            }
            BackupItem::Pair(pair) => {
                if pair.lease != 0 && !leases.contains(&pair.lease) {
                    return Err(RestoreError::UnknownLease {
                        key: String::from_utf8_lossy(&pair.key).into_owned(),
                        lease: pair.lease,
                    });
                }
                let record = Versioned {
                    value: pair.value,
                    create_index: pair.create_index,
                    mod_index: pair.mod_index,
                    lease: pair.lease,
                };
                seed.key(&pair.key, &record)?;
            }
        }
    }
    let info = reader
        .info()
        .cloned()
        .expect("the reader says what it held once the items end");
    // A backup is never taken before the bootstrap's entries; the log
    // cannot start before them either way.
    let index = info.index.max(BOOTSTRAP_INDEX);
    seed.finish(index, members)?;
    drop(state_machine);
    drop(engine);
    let voters: Vec<u64> = members.keys().copied().collect();
    RaftLogStore::seed(
        Arc::new(StdFs),
        &config.raft_log_dir(),
        DEFAULT_SEGMENT_BYTES,
        &voters,
        index,
        BOOTSTRAP_TERM,
    )?;
    StdFs
        .sync_dir(&config.data_dir)
        .map_err(io("syncing", &config.data_dir))?;
    Ok(Restored {
        info,
        index,
        members: members.clone(),
    })
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use strata_proto::backup::{BackupPair, BackupWriter};

    use super::*;

    fn config(data_dir: PathBuf) -> NodeConfig {
        let mut c =
            NodeConfig::single(1, "127.0.0.1:7001".parse::<SocketAddr>().unwrap(), data_dir);
        c.peers = vec![
            (1, "127.0.0.1:7001".into()),
            (2, "127.0.0.1:7002".into()),
            (3, "127.0.0.1:7003".into()),
        ];
        c
    }

    fn backup(damage_at: Option<usize>) -> Vec<u8> {
        let (mut w, mut out) = BackupWriter::start(120, 1, 0xabc);
        w.lease(4, 30_000, &mut out);
        for (i, lease) in [(0u64, 0u64), (1, 4), (2, 0)] {
            let pair = BackupPair {
                key: format!("k{i}").into_bytes(),
                value: vec![b'v'; 100],
                create_index: 10 + i,
                mod_index: 20 + i,
                lease,
            };
            w.pair(&pair, &mut out);
        }
        out.extend(w.finish());
        if let Some(at) = damage_at {
            out[at] ^= 1;
        }
        out
    }

    #[test]
    fn a_restored_member_holds_the_backup_and_a_log_that_starts_after_it() {
        // Proves: the data directory holds every key with its indexes and
        // lease and the lease itself, applied through the backup's index,
        // with the members of --peers as its configuration; its raft log
        // starts after that index; nothing is left beside it.
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("node1");
        let restored = restore(&config(dir.clone()), &backup(None)[..]).unwrap();
        assert_eq!(
            (restored.index, restored.info.pairs, restored.info.leases),
            (120, 3, 1)
        );
        let c = config(dir.clone());
        let engine = Arc::new(Engine::open(c.engine_dir(), EngineOptions::default()).unwrap());
        let sm = StateMachine::new(engine, 1);
        sm.check_value_format().unwrap();
        assert_eq!(sm.applied_index().unwrap(), 120);
        let k1 = sm.get_versioned(b"k1").unwrap().unwrap();
        assert_eq!((k1.create_index, k1.mod_index, k1.lease), (11, 21, 4));
        assert_eq!(sm.lease(4).unwrap(), Some(30_000));
        assert_eq!(
            sm.cluster_id().unwrap(),
            0,
            "the new cluster is not named yet"
        );
        let log = RaftLogStore::open(
            Arc::new(StdFs),
            &c.raft_log_dir(),
            DEFAULT_SEGMENT_BYTES,
            &[],
        )
        .unwrap();
        assert_eq!((log.first_index(), log.last_index()), (121, 120));
        assert_eq!(log.conf_state().voters, vec![1, 2, 3]);
        let beside: Vec<_> = std::fs::read_dir(root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(beside, vec![std::ffi::OsString::from("node1")]);
    }

    #[test]
    fn a_damaged_backup_or_a_used_data_directory_restores_nothing() {
        // Proves: a backup with one byte changed anywhere in its pairs
        // fails the restore and leaves no data directory (and no staging
        // one); a data directory that holds anything is refused untouched.
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("node1");
        let whole = backup(None);
        for at in [100, whole.len() / 2, whole.len() - 60, whole.len() - 10] {
            let err = restore(&config(dir.clone()), &backup(Some(at))[..]).unwrap_err();
            assert!(matches!(err, RestoreError::Backup(_)), "byte {at}: {err}");
            assert_eq!(
                std::fs::read_dir(root.path()).unwrap().count(),
                0,
                "byte {at}"
            );
        }
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("keep"), b"x").unwrap();
        let err = restore(&config(dir.clone()), &whole[..]).unwrap_err();
        assert!(matches!(err, RestoreError::DataDirInUse(_)), "{err}");
        assert_eq!(std::fs::read(dir.join("keep")).unwrap(), b"x");
    }
}
