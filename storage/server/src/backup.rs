//! Backups: every lease, and every key with its value, create and mod
//! index and lease, as of one linearizable read, streamed in the backup
//! format (`strata_proto::backup`) to `KV/Backup` and `GET /v1/backup`.
//!
//! The read barriers (one per range, the ranges all hosted here) make the
//! state at least as new as every write acknowledged before the request;
//! the engine view taken after them fixes one state, whose newest applied
//! index the header names, however long the copy takes and whatever is
//! written meanwhile. The leases are the first range's, which keeps them;
//! the pairs are every range's, in key order. The pairs are read from that
//! view a page at a time on a blocking thread and sent in chunks of about
//! a MiB; a client that stops reading holds the copy (and the view) until
//! it reads again or goes away.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use strata_engine::{EngineError, ReadPoint};
use strata_proto::backup::{BackupPair, BackupWriter};
use strata_proto::v1::Consistency;
use strata_raft::StateMachine;
use tokio::sync::mpsc;

use crate::core::Core;
use crate::error::{ApiError, ErrorCode};

/// Leases or pairs read from the view at a time.
const PAGE_PAIRS: usize = 1024;
/// The size a chunk is sent at.
const CHUNK_BYTES: usize = 1 << 20;
/// Chunks sent ahead of the client.
const CHUNKS_AHEAD: usize = 4;

/// Starts a backup of the data as of a linearizable read: its chunks, in
/// order, ending with an error if the copy failed.
pub async fn start(core: &Core) -> Result<mpsc::Receiver<Result<Bytes, ApiError>>, ApiError> {
    let storage = |e: EngineError| ApiError::new(ErrorCode::StorageFailed, e.to_string());
    let ranges = core.groups().spans();
    for (_, group) in &ranges {
        core.read_barrier_in(group, Consistency::Linearizable as i32)
            .await?;
    }
    let state_machine = core.peer().state_machine().clone();
    let view = state_machine.read_view();
    let mut index = 0;
    for (_, group) in &ranges {
        index = index.max(group.state_machine().applied_in(&view).map_err(storage)?);
    }
    let ranges: Vec<Arc<StateMachine>> = ranges
        .into_iter()
        .map(|(_, group)| group.state_machine().clone())
        .collect();
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let (tx, rx) = mpsc::channel(CHUNKS_AHEAD);
    let cluster_id = state_machine.cluster_id().map_err(storage)?;
    tokio::task::spawn_blocking(move || {
        let (writer, header) = BackupWriter::start(index, created, cluster_id);
        if let Err(e) = copy(&state_machine, &ranges, &view, writer, header, &tx) {
            let _ = tx.blocking_send(Err(ApiError::new(
                ErrorCode::StorageFailed,
                format!("the backup stopped: {e}"),
            )));
        }
    });
    Ok(rx)
}

/// Writes the leases `first` keeps and then the pairs of every range in
/// `ranges` (in key order) `view` holds after `header`, in chunks; returns
/// early (and fine) once the client went away.
fn copy(
    first: &StateMachine,
    ranges: &[Arc<StateMachine>],
    view: &ReadPoint,
    mut writer: BackupWriter,
    mut chunk: Vec<u8>,
    tx: &mpsc::Sender<Result<Bytes, ApiError>>,
) -> Result<(), EngineError> {
    // Hands the chunk over once it is full; false when no one reads.
    let send_full = |chunk: &mut Vec<u8>| {
        chunk.len() < CHUNK_BYTES
            || tx
                .blocking_send(Ok(Bytes::from(std::mem::take(chunk))))
                .is_ok()
    };
    let mut after = None;
    loop {
        let leases = first.leases_at(view, after, PAGE_PAIRS)?;
        for &(id, ttl_ms) in &leases {
            writer.lease(id, ttl_ms, &mut chunk);
            if !send_full(&mut chunk) {
                return Ok(());
            }
        }
        match leases.last() {
            Some(&(last, _)) if leases.len() == PAGE_PAIRS => after = Some(last),
            _ => break,
        }
    }
    for range in ranges {
        if !copy_pairs(range, view, &mut writer, &mut chunk, &send_full)? {
            return Ok(());
        }
    }
    chunk.extend(writer.finish());
    let _ = tx.blocking_send(Ok(Bytes::from(chunk)));
    Ok(())
}

/// Writes the pairs of `range` that `view` holds; false once the client went
/// away.
fn copy_pairs(
    range: &StateMachine,
    view: &ReadPoint,
    writer: &mut BackupWriter,
    chunk: &mut Vec<u8>,
    send_full: &impl Fn(&mut Vec<u8>) -> bool,
) -> Result<bool, EngineError> {
    let mut from = Vec::new();
    loop {
        // The scan starts at the range's start at the earliest.
        let pairs = range.scan_versioned_at(view, &from, None, PAGE_PAIRS)?;
        for (key, v) in &pairs {
            let pair = BackupPair {
                key: key.clone(),
                value: v.value.clone(),
                create_index: v.create_index,
                mod_index: v.mod_index,
                lease: v.lease,
            };
            writer.pair(&pair, chunk);
            if !send_full(chunk) {
                return Ok(false);
            }
        }
        match pairs.last() {
            Some((last, _)) if pairs.len() == PAGE_PAIRS => {
                from = last.clone();
                from.push(0);
            }
            _ => return Ok(true),
        }
    }
}
