//! Sending a snapshot: the engine checkpoint named in the raft message,
//! pinned so that it stays on disk while it is read, goes out over
//! `strata.v1.Raft/InstallSnapshot` as its manifest, then every file the
//! manifest lists in 1 MiB chunks; the result is reported to raft, after
//! a wait when the member refused it for a lasting reason
//! (`snapshot_backoff`). The bounded channel between the file reader and
//! the gRPC stream is the flow control.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use strata_proto::v1::raft_client::RaftClient;
use strata_proto::v1::{SnapshotChunk, SnapshotFileChunk, SnapshotHeader, snapshot_chunk};
use strata_raft::snapshot::{Manifest, ManifestFile};
use strata_raft::{Message, PeerHandle};
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;

use crate::snapshot_backoff::RefusalBackoff;

const CHUNK_BYTES: usize = 1 << 20;
const CHUNKS_IN_FLIGHT: usize = 4;

/// How a send failed.
struct Failure {
    message: String,
    /// The member refused it for a reason the next attempt would meet too
    /// (`RESOURCE_EXHAUSTED`: no space, or over its size limit).
    lasting: bool,
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure {
            message,
            lasting: false,
        }
    }
}

/// Streams the snapshot of `message` to its target and reports the outcome
/// to the local peer; a lasting refusal is reported only after the wait
/// `backoff` owes the target.
pub async fn send(
    peer: PeerHandle,
    channel: Channel,
    backoff: Arc<RefusalBackoff>,
    group_id: u64,
    from: u64,
    message: Message,
) {
    let to = message.to;
    match stream(&peer, channel, group_id, from, message).await {
        Ok(()) => {
            tracing::info!(to, "snapshot sent");
            backoff.delivered(to);
            peer.report_snapshot(to, true);
        }
        Err(e) if e.lasting => {
            let wait = backoff.refused(to);
            tracing::warn!(
                to,
                error = %e.message,
                wait_ms = wait.as_millis() as u64,
                "sending snapshot failed; the member refused it until an operator acts, \
                 sending again after a wait"
            );
            tokio::time::sleep(wait).await;
            peer.report_snapshot(to, false);
        }
        Err(e) => {
            tracing::warn!(to, error = %e.message, "sending snapshot failed");
            peer.report_snapshot(to, false);
        }
    }
}

async fn stream(
    peer: &PeerHandle,
    channel: Channel,
    group_id: u64,
    from: u64,
    message: Message,
) -> Result<(), Failure> {
    let name = String::from_utf8_lossy(&message.get_snapshot().data).into_owned();
    // Held until every file is read: a newer snapshot built meanwhile
    // must not prune this one from under the stream.
    let pin = peer
        .snapshot_dirs()
        .pin_outgoing(&name)
        .ok_or_else(|| format!("`{name}` is not a snapshot of ours, or is gone"))?;
    let manifest = Manifest::read(pin.dir())
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("`{name}` has no manifest"))?;
    tracing::info!(
        to = message.to,
        name,
        files = manifest.files.len(),
        bytes = manifest.total_bytes(),
        "sending snapshot"
    );
    let (tx, rx) = mpsc::channel(CHUNKS_IN_FLIGHT);
    let header = SnapshotChunk {
        kind: Some(snapshot_chunk::Kind::Header(SnapshotHeader {
            group_id,
            from_node: from,
            to_node: message.to,
            message: Bytes::from(strata_raft::encode_message(&message)),
            manifest: Bytes::from(manifest.encode()),
        })),
    };
    let reader = tokio::spawn(async move {
        if tx.send(header).await.is_err() {
            return Ok(());
        }
        for f in &manifest.files {
            if !send_file(&tx, pin.dir(), f).await? {
                return Ok(());
            }
        }
        Ok::<(), String>(())
    });
    let mut client = RaftClient::new(channel)
        .max_decoding_message_size(16 << 20)
        .max_encoding_message_size(16 << 20);
    let sent = client.install_snapshot(ReceiverStream::new(rx)).await;
    let read = reader.await.map_err(|e| e.to_string())?;
    read?;
    sent.map(|_| ()).map_err(|s| Failure {
        message: format!("receiver: {}", s.message()),
        lasting: s.code() == tonic::Code::ResourceExhausted,
    })
}

/// Streams the file `f` lists from `dir`, checking it still is what the
/// manifest says (a file that changed or shrank ends the stream short,
/// which the receiver refuses). `Ok(false)` when the receiver went away.
async fn send_file(
    tx: &mpsc::Sender<SnapshotChunk>,
    dir: &Path,
    f: &ManifestFile,
) -> Result<bool, String> {
    let mut file = tokio::fs::File::open(dir.join(&f.path))
        .await
        .map_err(|e| format!("opening {}: {e}", f.path))?;
    let mut crc = crc32fast::Hasher::new();
    let mut offset = 0u64;
    loop {
        let mut buf = vec![0u8; CHUNK_BYTES];
        let n = file
            .read(&mut buf)
            .await
            .map_err(|e| format!("reading {}: {e}", f.path))?;
        buf.truncate(n);
        crc.update(&buf);
        let last = n == 0;
        if offset + n as u64 > f.size || (last && offset != f.size) {
            return Err(format!(
                "{} is no longer the {} bytes its manifest lists",
                f.path, f.size
            ));
        }
        if last && crc.clone().finalize() != f.crc32 {
            return Err(format!("{} no longer matches its manifest's CRC", f.path));
        }
        let chunk = SnapshotFileChunk {
            path: f.path.clone(),
            offset,
            data: Bytes::from(buf),
            last,
            crc32: if last { f.crc32 } else { 0 },
        };
        offset += n as u64;
        let chunk = SnapshotChunk {
            kind: Some(snapshot_chunk::Kind::File(chunk)),
        };
        if tx.send(chunk).await.is_err() {
            return Ok(false);
        }
        if last {
            return Ok(true);
        }
    }
}
