//! Backups: every key and value as of one linearizable read, streamed in
//! the backup format (`strata_proto::backup`) to `KV/Backup` and
//! `GET /v1/backup`.
//!
//! The read barrier makes the state at least as new as every write
//! acknowledged before the request; the engine view taken after it fixes
//! one state, whose applied index the header names, however long the copy
//! takes and whatever is written meanwhile. The pairs are read from that
//! view a page at a time on a blocking thread and sent in chunks of about
//! a MiB; a client that stops reading holds the copy (and the view) until
//! it reads again or goes away.

use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use strata_proto::backup::BackupWriter;
use strata_proto::v1::Consistency;
use tokio::sync::mpsc;

use crate::core::Core;
use crate::error::{ApiError, ErrorCode};

/// Pairs read from the view at a time.
const PAGE_PAIRS: usize = 1024;
/// The size a chunk is sent at.
const CHUNK_BYTES: usize = 1 << 20;
/// Chunks sent ahead of the client.
const CHUNKS_AHEAD: usize = 4;

/// Starts a backup of the data as of a linearizable read: its chunks, in
/// order, ending with an error if the copy failed.
pub async fn start(core: &Core) -> Result<mpsc::Receiver<Result<Bytes, ApiError>>, ApiError> {
    core.read_barrier(Consistency::Linearizable as i32).await?;
    let state_machine = core.peer().state_machine().clone();
    let view = state_machine.read_view();
    let index = state_machine
        .applied_in(&view)
        .map_err(|e| ApiError::new(ErrorCode::StorageFailed, e.to_string()))?;
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let (tx, rx) = mpsc::channel(CHUNKS_AHEAD);
    tokio::task::spawn_blocking(move || {
        let (mut writer, mut chunk) = BackupWriter::start(index, created);
        let mut from = Vec::new();
        loop {
            let pairs = match state_machine.scan_at(&view, &from, None, PAGE_PAIRS) {
                Ok(pairs) => pairs,
                Err(e) => {
                    let _ = tx.blocking_send(Err(ApiError::new(
                        ErrorCode::StorageFailed,
                        format!("the backup stopped: {e}"),
                    )));
                    return;
                }
            };
            for (k, v) in &pairs {
                writer.pair(k, v, &mut chunk);
                if chunk.len() >= CHUNK_BYTES
                    && tx
                        .blocking_send(Ok(Bytes::from(std::mem::take(&mut chunk))))
                        .is_err()
                {
                    return;
                }
            }
            match pairs.last() {
                Some((last, _)) if pairs.len() == PAGE_PAIRS => {
                    from = last.clone();
                    from.push(0);
                }
                _ => break,
            }
        }
        chunk.extend(writer.finish());
        let _ = tx.blocking_send(Ok(Bytes::from(chunk)));
    });
    Ok(rx)
}
