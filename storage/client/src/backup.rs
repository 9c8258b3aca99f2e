//! Backups: saving the cluster's data to a file (`KV/Backup`) and loading
//! a saved file into a new, empty cluster.

use bytes::Bytes;
use strata_proto::backup::{self, BackupInfo};
use strata_proto::v1::BackupRequest;

use crate::{Client, ClientError};

/// The most pairs, and bytes of keys and values, one restore batch holds.
const BATCH_PAIRS: usize = 1000;
const BATCH_BYTES: usize = 2 << 20;

/// What a restore wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    pub info: BackupInfo,
    pub batches: u64,
}

impl Client {
    /// Streams a backup of every key, as of one linearizable read, into
    /// `sink` chunk by chunk; returns what it holds once it reads whole.
    pub async fn backup(
        &self,
        mut sink: impl FnMut(&[u8]) -> std::io::Result<()>,
    ) -> Result<BackupInfo, ClientError> {
        let mut stream = self.kv.clone().backup(BackupRequest {}).await?.into_inner();
        // The whole file is checked at the end; it is kept meanwhile.
        let mut whole = Vec::new();
        while let Some(chunk) = stream.message().await? {
            sink(&chunk.data).map_err(ClientError::Io)?;
            whole.extend_from_slice(&chunk.data);
        }
        Ok(backup::read_each(&whole, |_, _| {})?)
    }

    /// Loads the backup `bytes` into this cluster, which must hold no key
    /// (unless `onto_data`): every pair is put, in atomic batches, each
    /// with a request id of its own, so that a batch resent after an
    /// unknown outcome is applied once. The file is checked whole before
    /// anything is written.
    pub async fn restore(&self, bytes: &[u8], onto_data: bool) -> Result<Restored, ClientError> {
        let (info, pairs) = backup::read(bytes)?;
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
        let writer = self.clone().with_request_ids();
        let mut batches = 0u64;
        let mut batch: Vec<(Bytes, Option<Bytes>)> = Vec::new();
        let mut weight = 0usize;
        for (k, v) in pairs {
            weight += k.len() + v.len();
            batch.push((Bytes::copy_from_slice(k), Some(Bytes::copy_from_slice(v))));
            if batch.len() >= BATCH_PAIRS || weight >= BATCH_BYTES {
                writer.batch(std::mem::take(&mut batch)).await?;
                batches += 1;
                weight = 0;
            }
        }
        if !batch.is_empty() {
            writer.batch(batch).await?;
            batches += 1;
        }
        Ok(Restored { info, batches })
    }
}
