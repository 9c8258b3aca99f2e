//! The replicated state machine: applies committed commands to the engine.
//!
//! All entries of one apply round become one atomic engine write that also
//! records the applied index, so the engine's state and its applied index can
//! never disagree after a crash. Replaying the raft log from that index
//! restores anything the engine lost.

mod cluster_id;
mod dedupe;
mod group_ids;
mod history;
mod install;
mod lease;
mod recent_keys;
mod record;
mod seed;
mod split;
mod txn;

pub use dedupe::MAX_REQUEST_KEEP_MS;
pub use split::CHILD_LOG_TERM;

pub use history::{
    Change, ChangeKind, DEFAULT_HISTORY_ENTRIES, HistoryError, HistoryPage, HistoryPosition,
};
pub use lease::MAX_LEASE_ID;
pub use record::Versioned;
pub use seed::Seeder;

use std::collections::HashMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use strata_engine::{Engine, EngineError, Options, ReadPoint, WriteBatch};
use tokio::sync::watch;

use crate::command::{ApplyResult, Command, Op, Proposal};
use crate::keys;
use crate::range::KeySpan;

/// A committed entry as the state machine sees it.
#[derive(Debug, Default)]
pub struct Committed {
    pub index: u64,
    /// `None` for entries without a command (a new leader's empty entry, a
    /// configuration change).
    pub proposal: Option<Proposal>,
    /// The encoded configuration after a configuration change entry, stored
    /// with the data so a snapshot of the engine knows its membership.
    pub conf_state: Option<Vec<u8>>,
    /// The encoded member directory after a configuration change entry.
    pub members: Option<Vec<u8>>,
}

/// What a snapshot of the state machine holds: the applied index and the
/// configuration as of that index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotInfo {
    pub index: u64,
    pub conf_state: Vec<u8>,
    /// The member directory (see [`crate::Members::encode`]).
    pub members: Vec<u8>,
    /// How many user keys the group holds.
    pub keys: u64,
}

/// Engine keys per batch while counting or copying a group's keys.
const SCAN_BATCH_KEYS: usize = 1024;
/// The most bytes of keys and values one piece of a key count reads (the
/// values are read along, and may be large).
const COUNT_PIECE_BYTES: usize = 4 << 20;

/// The outcome of one applied command.
#[derive(Debug)]
pub struct Applied {
    pub index: u64,
    pub request_id: u64,
    pub result: ApplyResult,
}

/// A user key-value pair.
pub type KvPair = (Vec<u8>, Vec<u8>);
/// A user key with its value and indexes.
pub type VersionedPair = (Vec<u8>, Versioned);

/// The writes of one apply round, which later commands in it must see
/// (`None`: deleted).
type Overlay = HashMap<Vec<u8>, Option<Versioned>>;

/// The state of one raft group, stored in the shared engine.
pub struct StateMachine {
    engine: Arc<Engine>,
    group: u64,
    applied_key: Vec<u8>,
    conf_key: Vec<u8>,
    members_key: Vec<u8>,
    installing_key: Vec<u8>,
    history_from_key: Vec<u8>,
    request_clock_key: Vec<u8>,
    value_format_key: Vec<u8>,
    cluster_id_key: Vec<u8>,
    span_key: Vec<u8>,
    space_key: Vec<u8>,
    inherited_key: Vec<u8>,
    log_start_key: Vec<u8>,
    next_group_key: Vec<u8>,
    cluster_id: cluster_id::ClusterIdCache,
    /// The keys the group serves (`crate::range`), read from the engine on
    /// first use and kept up to date by the apply rounds and installs.
    span: RwLock<Option<KeySpan>>,
    /// The id its user keys are stored under (`keys::data_key`): the group's
    /// own for a group that was never split off another, else the one of
    /// the group it was split from, so a split moves no data.
    space: RwLock<Option<u64>>,
    /// How many raft indexes of changes the history keeps.
    history_entries: u64,
    trim: Mutex<history::Trim>,
    /// Where the request ids' expiry queue is read next (`dedupe`).
    forget_cursor: Mutex<dedupe::ForgetCursor>,
    /// The applied index, announced after each apply round and install
    /// (so that watchers read the history written up to it).
    applied_tx: watch::Sender<u64>,
    /// How many splits this state machine has applied since it was made:
    /// the node starts the groups they split off.
    splits_tx: watch::Sender<u64>,
    /// While an install replaces the group's keys, user reads are served
    /// at the state from before it began, so they never see part of each.
    reads_at: RwLock<Option<Arc<ReadPoint>>>,
    /// The keys the apply rounds wrote lately, so that a put or delete of
    /// one need not read it from the engine (`recent_keys`).
    recent: Mutex<recent_keys::RecentKeys>,
}

impl StateMachine {
    pub fn new(engine: Arc<Engine>, group: u64) -> Self {
        StateMachine {
            engine,
            group,
            applied_key: keys::meta_key(group, "applied_index"),
            conf_key: keys::meta_key(group, "conf_state"),
            members_key: keys::meta_key(group, "members"),
            installing_key: keys::meta_key(group, "installing_snapshot"),
            history_from_key: keys::meta_key(group, "history_from"),
            request_clock_key: keys::meta_key(group, "request_clock_ms"),
            value_format_key: keys::meta_key(group, "value_format"),
            cluster_id_key: keys::meta_key(group, "cluster_id"),
            span_key: keys::meta_key(group, "range_span"),
            space_key: keys::meta_key(group, "data_space"),
            inherited_key: keys::meta_key(group, "requests_inherited_until"),
            log_start_key: keys::meta_key(group, "log_start"),
            next_group_key: keys::meta_key(group, "next_group_id"),
            cluster_id: cluster_id::ClusterIdCache::default(),
            span: RwLock::new(None),
            space: RwLock::new(None),
            history_entries: DEFAULT_HISTORY_ENTRIES,
            trim: Mutex::new(history::Trim::default()),
            forget_cursor: Mutex::new(dedupe::ForgetCursor::default()),
            applied_tx: watch::Sender::new(0),
            splits_tx: watch::Sender::new(0),
            reads_at: RwLock::new(None),
            recent: Mutex::new(recent_keys::RecentKeys::new(
                recent_keys::DEFAULT_GENERATION_BYTES,
            )),
        }
    }

    /// Keeps the changes of the last `entries` raft indexes for watchers;
    /// 0 keeps none, and writes none (watches are off, and writes spare
    /// the history's cost).
    pub fn with_history(mut self, entries: u64) -> Self {
        self.history_entries = entries;
        self
    }

    /// Remembers about `bytes` of recently written keys per generation
    /// (`recent_keys`); 0 remembers none, and every put reads its key.
    #[cfg(test)]
    fn with_recent_key_bytes(self, bytes: usize) -> Self {
        *self.recent.lock() = recent_keys::RecentKeys::new(bytes);
        self
    }

    /// Whether this replica keeps a change history (and can serve watches).
    pub fn keeps_history(&self) -> bool {
        self.history_entries > 0
    }

    /// The applied index, changed after every apply round and snapshot
    /// install: everything the history holds up to it can be read.
    pub fn applied_changes(&self) -> watch::Receiver<u64> {
        self.applied_tx.subscribe()
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Changes after every apply round that split the group: the groups
    /// split off are then in the engine ([`groups_in`](Self::groups_in)).
    pub fn splits(&self) -> watch::Receiver<u64> {
        self.splits_tx.subscribe()
    }

    /// The raft group this state machine belongs to.
    pub fn group(&self) -> u64 {
        self.group
    }

    /// The keys the group serves; the whole key space unless a split
    /// narrowed it.
    pub fn span(&self) -> Result<KeySpan, EngineError> {
        if let Some(span) = &*self.span.read() {
            return Ok(span.clone());
        }
        let span = self.stored_span()?;
        *self.span.write() = Some(span.clone());
        Ok(span)
    }

    fn stored_span(&self) -> Result<KeySpan, EngineError> {
        match self.engine.get(&self.span_key)? {
            None => Ok(KeySpan::all()),
            Some(v) => KeySpan::decode(&v).map_err(|e| EngineError::Corruption {
                context: format!("group {}: {e}", self.group),
            }),
        }
    }

    /// The id the group's user keys are stored under.
    pub(crate) fn space(&self) -> Result<u64, EngineError> {
        if let Some(space) = *self.space.read() {
            return Ok(space);
        }
        let space = match self.engine.get(&self.space_key)? {
            None => self.group,
            Some(v) => v
                .as_slice()
                .try_into()
                .map(u64::from_be_bytes)
                .map_err(|_| EngineError::Corruption {
                    context: format!("data space of group {} has {} bytes", self.group, v.len()),
                })?,
        };
        *self.space.write() = Some(space);
        Ok(space)
    }

    /// The index of the last entry whose effects the engine holds.
    pub fn applied_index(&self) -> Result<u64, EngineError> {
        match self.engine.get(&self.applied_key)? {
            None => Ok(0),
            Some(v) => {
                let arr: [u8; 8] =
                    v.as_slice()
                        .try_into()
                        .map_err(|_| EngineError::Corruption {
                            context: format!(
                                "applied index of group {} has {} bytes",
                                self.group,
                                v.len()
                            ),
                        })?;
                Ok(u64::from_be_bytes(arr))
            }
        }
    }

    /// Whether [`apply`](Self::apply) would now wait for the engine to
    /// make room (a write stall while flushes or compactions catch up).
    /// The raft thread asks before applying and holds the entries back
    /// while it would, so that it never stops ticking for the engine.
    pub fn apply_would_wait(&self) -> bool {
        self.engine.write_would_wait()
    }

    /// Why the engine's background work is behind, if it is (see
    /// `Engine::background_behind`).
    pub fn engine_behind(&self) -> Option<String> {
        self.engine.background_behind()
    }

    /// Applies `entries` (consecutive, ascending) in one atomic engine write,
    /// with their changes in the history.
    pub fn apply(&self, entries: &[Committed]) -> Result<Vec<Applied>, EngineError> {
        let Some(last) = entries.last() else {
            return Ok(Vec::new());
        };
        let mut batch = WriteBatch::default();
        let mut changes = history::Recorder::new(&mut batch, self.group, self.keeps_history());
        let mut requests = dedupe::Requests::default();
        let mut overlay = Overlay::new();
        let mut leases = lease::LeaseRound::default();
        let mut named = cluster_id::ClusterIdRound::default();
        let mut group_ids = group_ids::GroupIdRound::default();
        let mut span = self.span()?;
        let mut split_inputs = split::SplitInputs::default();
        let mut split = false;
        let mut out = Vec::new();
        for entry in entries {
            if let Some(cs) = &entry.conf_state {
                changes.batch().put(&self.conf_key, cs);
                split_inputs.conf_state = Some(cs.clone());
            }
            if let Some(m) = &entry.members {
                changes.batch().put(&self.members_key, m);
                split_inputs.members = Some(m.clone());
            }
            let Some(p) = &entry.proposal else { continue };
            let at = entry.index;
            // Refused, and not remembered under its request id: the write
            // belongs to another group, which may still apply it (and
            // holds its record, if an earlier attempt was applied here).
            if let Some(key) = p.command.key_outside(&span) {
                out.push(Applied {
                    index: entry.index,
                    request_id: p.request_id,
                    result: ApplyResult::KeyNotInRange { key },
                });
                continue;
            }
            let anchor = p.command.anchor();
            if let Some(d) = &p.dedupe
                && let Some(answer) = self.recall(&mut requests, d, anchor)?
            {
                out.push(Applied {
                    index: entry.index,
                    request_id: p.request_id,
                    result: answer,
                });
                continue;
            }
            let result = match &p.command {
                Command::Put { key, value } => {
                    self.stage_put(&mut changes, &mut overlay, &mut leases, at, key, value, 0)?;
                    ApplyResult::Written
                }
                Command::PutLeased { key, value, lease } => {
                    if *lease != 0 && self.lease_in_round(&leases, *lease)?.is_none() {
                        ApplyResult::LeaseNotFound { id: *lease }
                    } else {
                        self.stage_put(
                            &mut changes,
                            &mut overlay,
                            &mut leases,
                            at,
                            key,
                            value,
                            *lease,
                        )?;
                        ApplyResult::Written
                    }
                }
                Command::PutWithTtl { key, value, ttl_ms } => {
                    let id = self.free_lease_id(&leases, at)?;
                    let granted = self.stage_grant(changes.batch(), &mut leases, id, *ttl_ms)?;
                    if matches!(granted, ApplyResult::LeaseGranted { .. }) {
                        self.stage_put(
                            &mut changes,
                            &mut overlay,
                            &mut leases,
                            at,
                            key,
                            value,
                            id,
                        )?;
                    }
                    granted
                }
                Command::LeaseGrant { id, ttl_ms } => {
                    let id = if *id == 0 {
                        self.free_lease_id(&leases, at)?
                    } else {
                        *id
                    };
                    self.stage_grant(changes.batch(), &mut leases, id, *ttl_ms)?
                }
                Command::LeaseRevoke { id } => {
                    self.stage_revoke(&mut changes, &mut overlay, &mut leases, at, *id)?
                }
                Command::Delete { key } => {
                    let existed = self.stage_delete(&mut changes, &mut overlay, at, key, true)?;
                    ApplyResult::Deleted { existed }
                }
                Command::Batch(ops) => {
                    for op in ops {
                        match op {
                            Op::Put { key, value } => self.stage_put(
                                &mut changes,
                                &mut overlay,
                                &mut leases,
                                at,
                                key,
                                value,
                                0,
                            )?,
                            Op::Delete { key } => {
                                self.stage_delete(&mut changes, &mut overlay, at, key, false)?;
                            }
                        }
                    }
                    ApplyResult::Written
                }
                Command::Cas {
                    key,
                    expected,
                    value,
                } => {
                    let current = self.read(&overlay, key)?.map(|v| v.value);
                    let succeeded = current == *expected;
                    if succeeded {
                        match value {
                            Some(v) => self.stage_put(
                                &mut changes,
                                &mut overlay,
                                &mut leases,
                                at,
                                key,
                                v,
                                0,
                            )?,
                            None => {
                                self.stage_delete(&mut changes, &mut overlay, at, key, false)?;
                            }
                        }
                    }
                    ApplyResult::Cas { succeeded, current }
                }
                Command::Txn(txn) => {
                    self.apply_txn(&mut changes, &mut overlay, &mut leases, at, txn)?
                }
                Command::ClusterId { id } => {
                    self.stage_cluster_id(changes.batch(), &mut named, *id)?
                }
                Command::NewGroupId => self.stage_new_group_id(changes.batch(), &mut group_ids)?,
                Command::Split { at: key, child } => {
                    split_inputs.request_clock = requests.clock();
                    let result = self.stage_split(
                        changes.batch(),
                        &mut span,
                        &split_inputs,
                        &leases,
                        at,
                        key,
                        *child,
                    )?;
                    if let ApplyResult::Split { child } = result {
                        split = true;
                        // Watchers learn where their range may have left
                        // this group's history.
                        changes.record(at, ChangeKind::Split, key, &child.to_be_bytes());
                    }
                    result
                }
            };
            if let Some(d) = &p.dedupe {
                self.remember(
                    changes.batch(),
                    &mut requests,
                    d,
                    anchor,
                    entry.index,
                    &result,
                )?;
            }
            out.push(Applied {
                index: entry.index,
                request_id: p.request_id,
                result,
            });
        }
        let added = changes.count;
        self.forget_expired(&mut batch, &mut requests, &span)?;
        let trimmed = self.stage_trim(&mut batch, last.index, added)?;
        batch.put(&self.applied_key, &last.index.to_be_bytes());
        if let Err(e) = self.engine.write(&batch) {
            self.forget_recent_keys();
            return Err(e);
        }
        {
            let mut recent = self.recent.lock();
            for (key, record) in &overlay {
                recent.learn(key, record.as_ref().map(|r| r.create_index));
            }
        }
        if split {
            *self.span.write() = Some(span);
            self.splits_tx.send_modify(|n| *n += 1);
        }
        self.trimmed(trimmed);
        self.cluster_id_applied(named);
        self.applied_tx.send_replace(last.index);
        Ok(out)
    }

    /// Puts `key` under lease `lease` (0: none; the caller checked that it
    /// exists): created at `index` unless it exists, changed at `index`.
    #[allow(clippy::too_many_arguments)]
    fn stage_put(
        &self,
        changes: &mut history::Recorder<'_>,
        overlay: &mut Overlay,
        leases: &mut lease::LeaseRound,
        index: u64,
        key: &[u8],
        value: &[u8],
        lease: u64,
    ) -> Result<(), EngineError> {
        let create_index = self.created(overlay, key)?.unwrap_or(index);
        let record = Versioned {
            value: value.to_vec(),
            create_index,
            mod_index: index,
            lease,
        };
        changes
            .batch()
            .put(&keys::data_key(self.space()?, key), &record.encode());
        if lease != 0 {
            changes
                .batch()
                .put(&keys::lease_member_key(self.group, lease, key), b"");
            leases.attach(lease, key);
        }
        changes.record(index, ChangeKind::Put, key, value);
        overlay.insert(key.to_vec(), Some(record));
        Ok(())
    }

    /// Deletes `key`; returns whether it existed (only then is the delete
    /// a change in the history). The key is read only when that is needed:
    /// for the answer (`answer`), or for a history that is kept.
    fn stage_delete(
        &self,
        changes: &mut history::Recorder<'_>,
        overlay: &mut Overlay,
        index: u64,
        key: &[u8],
        answer: bool,
    ) -> Result<bool, EngineError> {
        let existed = (answer || changes.is_on()) && self.created(overlay, key)?.is_some();
        changes.batch().delete(&keys::data_key(self.space()?, key));
        if existed {
            changes.record(index, ChangeKind::Delete, key, b"");
        }
        overlay.insert(key.to_vec(), None);
        Ok(existed)
    }

    /// The index that created `key` if it exists, as this round's writes
    /// so far left it: from them, else from the keys written lately, else
    /// from the engine.
    fn created(&self, overlay: &Overlay, key: &[u8]) -> Result<Option<u64>, EngineError> {
        if let Some(v) = overlay.get(key) {
            return Ok(v.as_ref().map(|v| v.create_index));
        }
        if let Some(created) = self.recent.lock().get(key) {
            return Ok(created);
        }
        Ok(self.read(overlay, key)?.map(|v| v.create_index))
    }

    /// Makes the apply rounds forget the keys they wrote lately, because
    /// the group's keys were changed by something else (an install, a
    /// seeding) or a write failed.
    fn forget_recent_keys(&self) {
        self.recent.lock().forget_all();
    }

    /// `key`'s record as this round's writes so far left it.
    fn read(&self, overlay: &Overlay, key: &[u8]) -> Result<Option<Versioned>, EngineError> {
        match overlay.get(key) {
            Some(v) => Ok(v.clone()),
            None => self
                .engine
                .get(&keys::data_key(self.space()?, key))?
                .map(|stored| Versioned::decode(key, stored))
                .transpose(),
        }
    }

    /// The configuration stored with the data, if a change was ever applied
    /// (or recorded at bootstrap).
    pub fn conf_state(&self) -> Result<Option<Vec<u8>>, EngineError> {
        self.engine.get(&self.conf_key)
    }

    /// The member directory stored with the data, if any.
    pub fn members(&self) -> Result<Option<Vec<u8>>, EngineError> {
        self.engine.get(&self.members_key)
    }

    /// Sets up a new group's state: applied up to `index` (the log's
    /// bootstrap point) with the initial configuration and members.
    pub fn bootstrap(
        &self,
        index: u64,
        conf_state: &[u8],
        members: &[u8],
    ) -> Result<(), EngineError> {
        let mut batch = WriteBatch::default();
        batch.put(&self.applied_key, &index.to_be_bytes());
        batch.put(&self.conf_key, conf_state);
        batch.put(&self.members_key, members);
        // The entries up to `index` made no changes: all of them are held.
        batch.put(&self.history_from_key, &1u64.to_be_bytes());
        batch.put(&self.value_format_key, &[record::FORMAT]);
        self.engine.write(&batch)?;
        self.make_durable()
    }

    /// Makes everything applied so far durable, whatever the engine's WAL
    /// mode (the raft log may discard entries only after this).
    pub fn make_durable(&self) -> Result<(), EngineError> {
        self.engine.flush()
    }

    /// Writes a consistent copy of the engine to `dir` and says which applied
    /// index and configuration it holds. Runs off the raft thread.
    pub fn checkpoint(&self, dir: &Path) -> Result<SnapshotInfo, EngineError> {
        self.engine.checkpoint(dir)?;
        let copy = Engine::open(dir, Options::default())?;
        let view = StateMachine::new(Arc::new(copy), self.group);
        let info = view.describe()?;
        drop(view);
        Ok(info)
    }

    /// What this state machine holds, as a snapshot of it says.
    pub fn describe(&self) -> Result<SnapshotInfo, EngineError> {
        Ok(SnapshotInfo {
            index: self.applied_index()?,
            conf_state: self.conf_state()?.unwrap_or_default(),
            members: self.members()?.unwrap_or_default(),
            keys: self.count_keys()?,
        })
    }

    /// How many user keys the group holds.
    fn count_keys(&self) -> Result<u64, EngineError> {
        let (mut from, hi) = self.data_bounds()?;
        let mut count = 0u64;
        loop {
            let pairs = self.engine.scan_bytes(
                Bound::Included(&from[..]),
                Bound::Excluded(&hi[..]),
                SCAN_BATCH_KEYS,
                COUNT_PIECE_BYTES,
            )?;
            let Some((last, _)) = pairs.last() else {
                return Ok(count);
            };
            count += pairs.len() as u64;
            from = last.clone();
            from.push(0);
        }
    }

    /// `[lo, hi)` of the engine keys of the group's user keys: its span in
    /// its data space.
    pub(crate) fn data_bounds(&self) -> Result<(Vec<u8>, Vec<u8>), EngineError> {
        let (space, span) = (self.space()?, self.span()?);
        let lo = keys::data_key(space, &span.start);
        let hi = match &span.end {
            Some(end) => keys::data_key(space, end),
            None => keys::data_end(space),
        };
        Ok((lo, hi))
    }

    /// The value of a user key.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, EngineError> {
        Ok(self.get_versioned(key)?.map(|v| v.value))
    }

    /// A user key's value with the indexes that created and last changed it.
    pub fn get_versioned(&self, key: &[u8]) -> Result<Option<Versioned>, EngineError> {
        let engine_key = keys::data_key(self.space()?, key);
        let stored = match &*self.reads_at.read() {
            Some(at) => at.get(&engine_key)?,
            None => self.engine.get(&engine_key)?,
        };
        stored.map(|s| Versioned::decode(key, s)).transpose()
    }

    /// User pairs in `[start, end)` (`end = None`: to the end), ascending.
    pub fn scan(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<KvPair>, EngineError> {
        self.scan_at(&self.read_view(), start, end, limit)
    }

    /// A view of the user data as it stands now, which later reads through
    /// [`scan_at`](Self::scan_at) see unchanged whatever is applied
    /// meanwhile (during a snapshot install: the state before it). Holding
    /// it keeps the engine from compacting away what it sees.
    pub fn read_view(&self) -> Arc<ReadPoint> {
        match &*self.reads_at.read() {
            Some(at) => Arc::clone(at),
            None => Arc::new(self.engine.read_point()),
        }
    }

    /// [`scan`](Self::scan) as of `view`.
    pub fn scan_at(
        &self,
        view: &ReadPoint,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<KvPair>, EngineError> {
        Ok(self
            .scan_versioned_at(view, start, end, limit)?
            .into_iter()
            .map(|(k, v)| (k, v.value))
            .collect())
    }

    /// [`scan_at`](Self::scan_at), each value with its indexes.
    pub fn scan_versioned_at(
        &self,
        view: &ReadPoint,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<VersionedPair>, EngineError> {
        let (space, span) = (self.space()?, self.span()?);
        let (start, end) = span.clamp(start, end);
        if end.is_some_and(|end| start >= end) {
            return Ok(Vec::new());
        }
        let lo = keys::data_key(space, start);
        let hi = match end {
            Some(e) => keys::data_key(space, e),
            None => keys::data_end(space),
        };
        view.scan(Bound::Included(&lo[..]), Bound::Excluded(&hi[..]), limit)?
            .into_iter()
            .map(|(k, v)| {
                let user = keys::user_key(&k).to_vec();
                let record = Versioned::decode(&user, v)?;
                Ok((user, record))
            })
            .collect()
    }

    /// Refuses a group whose values were written without the header this
    /// build reads (`record`), and marks a group that holds no data yet as
    /// written in this build's format.
    pub fn check_value_format(&self) -> Result<(), ValueFormatError> {
        match self.engine.get(&self.value_format_key)? {
            Some(f) if f == [record::FORMAT] => Ok(()),
            Some(f) => Err(ValueFormatError::Unknown(f)),
            None => {
                let (lo, hi) = self.data_bounds()?;
                let any = self.engine.scan_bytes(
                    Bound::Included(&lo[..]),
                    Bound::Excluded(&hi[..]),
                    1,
                    1,
                )?;
                if !any.is_empty() {
                    return Err(ValueFormatError::Unversioned);
                }
                let mut batch = WriteBatch::default();
                batch.put(&self.value_format_key, &[record::FORMAT]);
                self.engine.write(&batch)?;
                Ok(())
            }
        }
    }
}

/// Why a group's stored values cannot be read by this build.
#[derive(Debug, thiserror::Error)]
pub enum ValueFormatError {
    #[error(
        "the data directory holds values written before keys carried their create and mod \
         indexes, which this build cannot read: back the cluster up with the build that wrote \
         it (`strata snapshot save FILE`) and restore the file into a new cluster with this one \
         (`strata snapshot restore FILE`)"
    )]
    Unversioned,
    #[error("the data directory's values are in format {0:?}, which this build does not know")]
    Unknown(Vec<u8>),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

#[cfg(test)]
mod tests;
