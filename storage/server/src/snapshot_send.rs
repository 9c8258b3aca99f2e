//! Sending a snapshot: the files of the engine checkpoint named in the raft
//! message, streamed in chunks over `strata.v1.Raft/InstallSnapshot`, then
//! the result reported to raft. The bounded channel between the file reader
//! and the gRPC stream is the flow control.

use bytes::Bytes;
use strata_proto::v1::raft_client::RaftClient;
use strata_proto::v1::{SnapshotChunk, SnapshotFileChunk, SnapshotHeader, snapshot_chunk};
use strata_raft::snapshot::list_files;
use strata_raft::{Message, PeerHandle};
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;

const CHUNK_BYTES: usize = 1 << 20;
const CHUNKS_IN_FLIGHT: usize = 4;

/// Streams the snapshot of `message` to its target and reports the outcome
/// to the local peer.
pub async fn send(peer: PeerHandle, channel: Channel, group_id: u64, from: u64, message: Message) {
    let to = message.to;
    let result = stream(&peer, channel, group_id, from, message).await;
    match &result {
        Ok(()) => tracing::info!(to, "snapshot sent"),
        Err(e) => tracing::warn!(to, error = %e, "sending snapshot failed"),
    }
    peer.report_snapshot(to, result.is_ok());
}

async fn stream(
    peer: &PeerHandle,
    channel: Channel,
    group_id: u64,
    from: u64,
    message: Message,
) -> Result<(), String> {
    let name = String::from_utf8_lossy(&message.get_snapshot().data).into_owned();
    let dir = peer
        .snapshot_dirs()
        .outgoing(&name)
        .ok_or_else(|| format!("`{name}` is not a snapshot of ours"))?;
    let files = list_files(&dir).map_err(|e| format!("listing {}: {e}", dir.display()))?;
    let (tx, rx) = mpsc::channel(CHUNKS_IN_FLIGHT);
    let header = SnapshotChunk {
        kind: Some(snapshot_chunk::Kind::Header(SnapshotHeader {
            group_id,
            from_node: from,
            to_node: message.to,
            message: Bytes::from(strata_raft::encode_message(&message)),
        })),
    };
    let reader = tokio::spawn(async move {
        if tx.send(header).await.is_err() {
            return Ok(());
        }
        for rel in files {
            let mut file = tokio::fs::File::open(dir.join(&rel))
                .await
                .map_err(|e| format!("opening {}: {e}", rel.display()))?;
            let mut crc = crc32fast::Hasher::new();
            let mut offset = 0u64;
            loop {
                let mut buf = vec![0u8; CHUNK_BYTES];
                let n = file
                    .read(&mut buf)
                    .await
                    .map_err(|e| format!("reading {}: {e}", rel.display()))?;
                buf.truncate(n);
                crc.update(&buf);
                let last = n == 0;
                let chunk = SnapshotFileChunk {
                    path: rel.to_string_lossy().into_owned(),
                    offset,
                    data: Bytes::from(buf),
                    last,
                    crc32: if last { crc.clone().finalize() } else { 0 },
                };
                offset += n as u64;
                let chunk = SnapshotChunk {
                    kind: Some(snapshot_chunk::Kind::File(chunk)),
                };
                if tx.send(chunk).await.is_err() {
                    return Ok(());
                }
                if last {
                    break;
                }
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
    sent.map(|_| ())
        .map_err(|s| format!("receiver: {}", s.message()))
}
