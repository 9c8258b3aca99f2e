//! Backups: saving the cluster's data to a file (`KV/Backup`) and loading
//! a saved file into a running, empty cluster. Both read the backup an
//! item at a time (`strata_proto::backup::BackupReader`), so a backup
//! larger than memory is saved, checked and loaded in bounded memory.
//!
//! Loading writes through the API, so the keys get the new cluster's raft
//! indexes, and each lease's TTL runs from when it is granted again;
//! `strata-node restore` builds a member's data directory from the file
//! instead, keeping both as they were.

use std::io::Read;
use std::sync::Arc;

use bytes::Bytes;
use strata_proto::backup::{BackupError, BackupInfo, BackupItem, BackupReader};
use strata_proto::v1::{BackupRequest, TxnOp};
use tokio::sync::mpsc;

use crate::{Client, ClientError};

/// The most pairs, and bytes of keys and values, one restore batch holds.
const BATCH_PAIRS: usize = 1000;
const BATCH_BYTES: usize = 2 << 20;
/// Chunks or batches in flight between the network and the thread that
/// reads the backup.
const IN_FLIGHT: usize = 4;

/// What a restore wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    pub info: BackupInfo,
    pub batches: u64,
    /// Keys not written because their lease ran out in the new cluster
    /// before they were reached (they would have been deleted with it).
    pub expired: u64,
}

/// A `Read` over the chunks a channel delivers, for a reader on a blocking
/// thread; the input ends when the sender is dropped.
struct ChunkRead {
    chunks: mpsc::Receiver<Bytes>,
    current: Bytes,
}

impl Read for ChunkRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match self.chunks.blocking_recv() {
                Some(chunk) => self.current = chunk,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current.split_to(n));
        Ok(n)
    }
}

/// What the reading thread hands the writer, in the backup's order.
enum Step {
    /// Grant this lease again, with its id and TTL.
    Lease { id: u64, ttl_ms: u64 },
    /// Put these keys (each under its lease, if any), in one transaction.
    Puts(Vec<Put>),
}

/// One key to put, and the lease it goes under (0: none).
#[derive(Clone)]
struct Put {
    key: Bytes,
    value: Bytes,
    lease: u64,
}

impl Client {
    /// Streams a backup of every key, as of one linearizable read, into
    /// `sink` chunk by chunk, checking it as it goes (on a thread of its
    /// own); returns what it holds once it reads whole.
    pub async fn backup(
        &self,
        mut sink: impl FnMut(&[u8]) -> std::io::Result<()>,
    ) -> Result<BackupInfo, ClientError> {
        let mut stream = self.kv.clone().backup(BackupRequest {}).await?.into_inner();
        let (tx, rx) = mpsc::channel(IN_FLIGHT);
        let check = tokio::task::spawn_blocking(move || {
            let input = ChunkRead {
                chunks: rx,
                current: Bytes::new(),
            };
            BackupReader::new(input)?.check_rest()
        });
        while let Some(chunk) = stream.message().await? {
            sink(&chunk.data).map_err(ClientError::Io)?;
            if tx.send(chunk.data).await.is_err() {
                // The check stopped on an error, which it returns below.
                break;
            }
        }
        drop(tx);
        Ok(check.await.expect("the backup check does not panic")?)
    }

    /// Loads a backup into this cluster, which must hold no key (unless
    /// `onto_data`). `open` opens the backup (a file, or bytes in memory);
    /// it is read twice: once whole to check it before anything is
    /// written, then again to put every pair, in atomic batches, each with
    /// a request id of its own, so that a batch resent after an unknown
    /// outcome is applied once. A backup that changed between the two
    /// reads stops the restore where that shows.
    pub async fn restore<R, F>(&self, open: F, onto_data: bool) -> Result<Restored, ClientError>
    where
        R: Read + Send + 'static,
        F: Fn() -> std::io::Result<R> + Send + Sync + 'static,
    {
        let open = Arc::new(open);
        let check = open.clone();
        let info = tokio::task::spawn_blocking(move || -> Result<BackupInfo, ClientError> {
            Ok(BackupReader::new(check().map_err(ClientError::Io)?)?.check_rest()?)
        })
        .await
        .expect("the backup check does not panic")?;
        if !onto_data {
            let page = self
                .scan(crate::ScanSelector::All, 1, Vec::new(), true)
                .await?;
            if let Some(kv) = page.kvs.first() {
                return Err(ClientError::NotEmpty {
                    key: String::from_utf8_lossy(&kv.key).into_owned(),
                });
            }
        }
        let (tx, mut rx) = mpsc::channel::<Result<Step, ClientError>>(IN_FLIGHT);
        let checked = info.clone();
        let reading = tokio::task::spawn_blocking(move || {
            if let Err(e) = read_steps(open(), &checked, &tx) {
                let _ = tx.blocking_send(Err(e));
            }
        });
        let writer = self.clone().with_request_ids();
        let (mut batches, mut expired) = (0u64, 0u64);
        while let Some(step) = rx.recv().await {
            match step? {
                Step::Lease { id, ttl_ms } => {
                    writer
                        .lease_grant(std::time::Duration::from_millis(ttl_ms), id)
                        .await?;
                }
                Step::Puts(puts) => {
                    expired += writer.put_all(puts).await?;
                    batches += 1;
                }
            }
        }
        reading.await.expect("reading the backup does not panic");
        Ok(Restored {
            info,
            batches,
            expired,
        })
    }

    /// Puts `puts` in one transaction; when a lease they name has ended
    /// meanwhile (NOT_FOUND), the keys under it are left out (its end
    /// would have deleted them) and the rest put. Returns how many were
    /// left out.
    async fn put_all(&self, mut puts: Vec<Put>) -> Result<u64, ClientError> {
        let mut left_out = 0u64;
        loop {
            if puts.is_empty() {
                return Ok(left_out);
            }
            let ops: Vec<TxnOp> = puts
                .iter()
                .map(|p| crate::txn::put_leased(p.key.clone(), p.value.clone(), p.lease))
                .collect();
            let err = match self.txn(Vec::new(), ops, Vec::new()).await {
                Ok(_) => return Ok(left_out),
                Err(ClientError::Status(s)) if s.code() == tonic::Code::NotFound => {
                    ClientError::Status(s)
                }
                Err(e) => return Err(e),
            };
            let mut leases: Vec<u64> = puts.iter().map(|p| p.lease).filter(|&l| l != 0).collect();
            leases.sort_unstable();
            leases.dedup();
            let mut ended = Vec::new();
            for id in leases {
                match self.lease_time_to_live(id, false).await {
                    Ok(_) => {}
                    Err(ClientError::Status(s)) if s.code() == tonic::Code::NotFound => {
                        ended.push(id);
                    }
                    Err(e) => return Err(e),
                }
            }
            if ended.is_empty() {
                return Err(err);
            }
            let before = puts.len();
            puts.retain(|p| !ended.contains(&p.lease));
            left_out += (before - puts.len()) as u64;
        }
    }
}

/// Reads the backup `input` again and sends its leases and its pairs in
/// batches; the last batch goes only once the backup read whole as it did
/// when `checked`.
fn read_steps(
    input: std::io::Result<impl Read>,
    checked: &BackupInfo,
    tx: &mpsc::Sender<Result<Step, ClientError>>,
) -> Result<(), ClientError> {
    let mut reader = BackupReader::new(input.map_err(ClientError::Io)?)?;
    let mut batch = Vec::new();
    let mut weight = 0usize;
    while let Some(item) = reader.next_item()? {
        let pair = match item {
            BackupItem::Lease { id, ttl_ms } => {
                if tx.blocking_send(Ok(Step::Lease { id, ttl_ms })).is_err() {
                    return Ok(());
                }
                continue;
            }
            BackupItem::Pair(pair) => pair,
        };
        weight += pair.key.len() + pair.value.len();
        batch.push(Put {
            key: Bytes::from(pair.key),
            value: Bytes::from(pair.value),
            lease: pair.lease,
        });
        if batch.len() >= BATCH_PAIRS || weight >= BATCH_BYTES {
            if tx
                .blocking_send(Ok(Step::Puts(std::mem::take(&mut batch))))
                .is_err()
            {
                return Ok(());
            }
            weight = 0;
        }
    }
    if reader.info() != Some(checked) {
        return Err(ClientError::Backup(BackupError::Checksum));
    }
    if !batch.is_empty() {
        let _ = tx.blocking_send(Ok(Step::Puts(batch)));
    }
    Ok(())
}
