//! Receiving a snapshot: stage its files in a `.partial` directory, check
//! every file's CRC, make it durable, move it into place, and only then hand
//! the raft message to the peer, which installs it from there.

use std::path::{Component, Path, PathBuf};

use strata_proto::v1::{SnapshotChunk, snapshot_chunk};
use strata_raft::PeerHandle;
use tokio::io::AsyncWriteExt;
use tokio_stream::StreamExt;
use tonic::{Status, Streaming};

fn invalid(msg: impl Into<String>) -> Status {
    Status::invalid_argument(msg.into())
}

fn internal(what: &str, e: std::io::Error) -> Status {
    Status::internal(format!("{what}: {e}"))
}

/// A file path from the sender, accepted only if it stays inside the
/// snapshot directory.
fn safe_relative(path: &str) -> Result<PathBuf, Status> {
    let p = Path::new(path);
    let ok = !path.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)));
    if !ok {
        return Err(invalid(format!(
            "snapshot file path `{path}` leaves the snapshot directory"
        )));
    }
    Ok(p.to_path_buf())
}

struct OpenFile {
    path: PathBuf,
    file: tokio::fs::File,
    written: u64,
    crc: crc32fast::Hasher,
}

/// Handles one `InstallSnapshot` stream for node `id` in group `group_id`.
pub async fn receive(
    id: u64,
    group_id: u64,
    peer: &PeerHandle,
    mut chunks: Streaming<SnapshotChunk>,
) -> Result<(), Status> {
    let first = chunks
        .next()
        .await
        .ok_or_else(|| invalid("empty snapshot stream"))??;
    let Some(snapshot_chunk::Kind::Header(header)) = first.kind else {
        return Err(invalid("a snapshot stream starts with its header"));
    };
    if header.group_id != group_id {
        return Err(Status::not_found(format!(
            "node {id} does not hold raft group {}",
            header.group_id
        )));
    }
    if header.to_node != id {
        return Err(invalid(format!(
            "snapshot for node {} reached node {id}",
            header.to_node
        )));
    }
    let message = strata_raft::decode_message(&header.message)
        .map_err(|e| invalid(format!("snapshot message does not decode: {e}")))?;
    if message.to != id || !message.has_snapshot() {
        return Err(invalid(
            "the header does not carry a snapshot for this node",
        ));
    }
    let meta = message.get_snapshot().get_metadata();
    let dir = peer.snapshot_dirs().incoming(meta.index, meta.term);
    let partial = dir.with_extension("partial");
    let _ = tokio::fs::remove_dir_all(&partial).await;
    tokio::fs::create_dir_all(&partial)
        .await
        .map_err(|e| internal("creating the staging directory", e))?;

    let mut current: Option<OpenFile> = None;
    while let Some(chunk) = chunks.next().await {
        let Some(snapshot_chunk::Kind::File(part)) = chunk?.kind else {
            return Err(invalid("only file chunks may follow the header"));
        };
        let rel = safe_relative(&part.path)?;
        if current.as_ref().is_none_or(|f| f.path != rel) {
            if current.is_some() {
                return Err(invalid("a file ended without its last chunk"));
            }
            let full = partial.join(&rel);
            if let Some(parent) = full.parent() {
                tokio::fs::create_dir_all(parent)
                    .await
                    .map_err(|e| internal("creating a directory", e))?;
            }
            let file = tokio::fs::File::create(&full)
                .await
                .map_err(|e| internal("creating a snapshot file", e))?;
            current = Some(OpenFile {
                path: rel,
                file,
                written: 0,
                crc: crc32fast::Hasher::new(),
            });
        }
        let f = current.as_mut().expect("a file is open");
        if part.offset != f.written {
            return Err(invalid(format!(
                "chunk of {} at {} after {} bytes",
                part.path, part.offset, f.written
            )));
        }
        f.file
            .write_all(&part.data)
            .await
            .map_err(|e| internal("writing a snapshot file", e))?;
        f.written += part.data.len() as u64;
        f.crc.update(&part.data);
        if part.last {
            let f = current.take().expect("a file is open");
            if f.crc.finalize() != part.crc32 {
                return Err(invalid(format!("checksum mismatch in {}", part.path)));
            }
            f.file
                .sync_all()
                .await
                .map_err(|e| internal("syncing a snapshot file", e))?;
        }
    }
    if current.is_some() {
        return Err(invalid("the stream ended in the middle of a file"));
    }
    let staged = partial.clone();
    tokio::task::spawn_blocking(move || sync_tree(&staged))
        .await
        .map_err(|e| Status::internal(e.to_string()))?
        .map_err(|e| internal("syncing the staged snapshot", e))?;
    let _ = tokio::fs::remove_dir_all(&dir).await;
    tokio::fs::rename(&partial, &dir)
        .await
        .map_err(|e| internal("moving the snapshot into place", e))?;
    let root = peer.snapshot_dirs().root().to_path_buf();
    tokio::task::spawn_blocking(move || std::fs::File::open(root).and_then(|d| d.sync_all()))
        .await
        .map_err(|e| Status::internal(e.to_string()))?
        .map_err(|e| internal("syncing the snapshot directory", e))?;
    tracing::info!(
        index = meta.index,
        term = meta.term,
        from = header.from_node,
        "snapshot received"
    );
    peer.step(message);
    Ok(())
}

/// Fsyncs every directory under (and including) `dir`, so the entries of
/// the files written there are durable.
fn sync_tree(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            sync_tree(&entry.path())?;
        }
    }
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_outside_the_snapshot_are_refused() {
        for bad in ["", "/etc/passwd", "../x", "a/../../b", "./a"] {
            assert!(safe_relative(bad).is_err(), "{bad} accepted");
        }
        assert_eq!(
            safe_relative("sst/000001.sst").unwrap(),
            PathBuf::from("sst/000001.sst")
        );
    }
}
