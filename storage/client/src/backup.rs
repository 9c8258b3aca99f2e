//! Backups: saving the cluster's data to a file (`KV/Backup`) and loading
//! a saved file into a new, empty cluster. Both read the backup a pair at
//! a time (`strata_proto::backup::BackupReader`), so a backup larger than
//! memory is saved, checked and restored in bounded memory.

use std::io::Read;
use std::sync::Arc;

use bytes::Bytes;
use strata_proto::backup::{BackupError, BackupInfo, BackupReader};
use strata_proto::v1::BackupRequest;
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

/// A batch of puts read from a backup, or why the reading stopped.
type Batch = Result<Vec<(Bytes, Option<Bytes>)>, ClientError>;

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
        let (tx, mut rx) = mpsc::channel::<Batch>(IN_FLIGHT);
        let checked = info.clone();
        let reading = tokio::task::spawn_blocking(move || {
            if let Err(e) = read_batches(open(), &checked, &tx) {
                let _ = tx.blocking_send(Err(e));
            }
        });
        let writer = self.clone().with_request_ids();
        let mut batches = 0u64;
        while let Some(batch) = rx.recv().await {
            writer.batch(batch?).await?;
            batches += 1;
        }
        reading.await.expect("reading the backup does not panic");
        Ok(Restored { info, batches })
    }
}

/// Reads the backup `input` again and sends its pairs in batches; the last
/// batch goes only once the backup read whole as it did when `checked`.
fn read_batches(
    input: std::io::Result<impl Read>,
    checked: &BackupInfo,
    tx: &mpsc::Sender<Batch>,
) -> Result<(), ClientError> {
    let mut reader = BackupReader::new(input.map_err(ClientError::Io)?)?;
    let mut batch = Vec::new();
    let mut weight = 0usize;
    while let Some((k, v)) = reader.next_pair()? {
        weight += k.len() + v.len();
        batch.push((Bytes::from(k), Some(Bytes::from(v))));
        if batch.len() >= BATCH_PAIRS || weight >= BATCH_BYTES {
            if tx.blocking_send(Ok(std::mem::take(&mut batch))).is_err() {
                return Ok(());
            }
            weight = 0;
        }
    }
    if reader.info() != Some(checked) {
        return Err(ClientError::Backup(BackupError::Checksum));
    }
    if !batch.is_empty() {
        let _ = tx.blocking_send(Ok(batch));
    }
    Ok(())
}
