//! Receiving a snapshot: its manifest first (refused at once when it is
//! over this node's size limit), then every file it lists, in its order,
//! each written to a `.partial` directory and checked for its size and CRC.
//! Only a stream that delivered every listed file is made durable, stored
//! with its manifest (which marks it verified), moved into place and its
//! raft message handed to the peer (reported to it first: `snapshot_received`
//! in the metrics and on the event stream), which installs it from there. A stream
//! that ends early or carries anything else is refused and its partial copy
//! removed.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

use strata_proto::v1::{SnapshotChunk, SnapshotFileChunk, snapshot_chunk};
use strata_raft::snapshot::{Manifest, ManifestFile};
use strata_raft::{Message, SnapshotDirs};
use tokio::io::AsyncWriteExt;
use tokio_stream::{Stream, StreamExt};
use tonic::{Status, Streaming};

use crate::groups::Groups;

fn invalid(msg: impl Into<String>) -> Status {
    Status::invalid_argument(msg.into())
}

fn internal(what: &str, e: impl std::fmt::Display) -> Status {
    Status::internal(format!("{what}: {e}"))
}

/// How a refusal for want of space starts.
const NO_SPACE: &str = "no space left on this node's disk to stage the snapshot";

/// A failed write while staging: `RESOURCE_EXHAUSTED` when the disk is
/// full (freeing space lets the next transfer through), `INTERNAL`
/// otherwise.
fn io_failed(what: &str, e: std::io::Error) -> Status {
    if e.kind() == std::io::ErrorKind::StorageFull {
        Status::resource_exhausted(format!("{NO_SPACE}: {what}: {e}"))
    } else {
        internal(what, e)
    }
}

/// A refusal the next transfer would meet too, until an operator frees
/// space or raises the limit: `RESOURCE_EXHAUSTED`, which is also how the
/// sender tells it (`snapshot_send`).
fn is_lasting(status: &Status) -> bool {
    status.code() == tonic::Code::ResourceExhausted
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

/// The file being received, and what its manifest entry says it must be.
struct OpenFile<'m> {
    expected: &'m ManifestFile,
    file: tokio::fs::File,
    written: u64,
    crc: crc32fast::Hasher,
}

/// Handles one `InstallSnapshot` stream for node `id`, for the group its
/// header names among those the node hosts (NOT_FOUND for another),
/// refusing snapshots over `max_bytes`.
pub async fn receive(
    id: u64,
    groups: &Groups,
    max_bytes: u64,
    mut chunks: Streaming<SnapshotChunk>,
) -> Result<(), Status> {
    let first = chunks
        .next()
        .await
        .ok_or_else(|| invalid("empty snapshot stream"))??;
    let Some(snapshot_chunk::Kind::Header(header)) = &first.kind else {
        return Err(invalid("a snapshot stream starts with its header"));
    };
    let group_id = header.group_id;
    // Checked before the group is looked up: a snapshot for a group this
    // node misses starts a replica of it.
    if header.to_node != id {
        return Err(invalid(format!(
            "snapshot for node {} reached node {id}",
            header.to_node
        )));
    }
    let peer = groups.adopt(group_id).ok_or_else(|| {
        Status::not_found(format!("node {id} does not hold raft group {group_id}"))
    })?;
    let chunks = tokio_stream::iter([Ok(first)]).chain(chunks);
    let message = stage_noting(id, group_id, peer.snapshot_dirs(), max_bytes, chunks).await?;
    let meta = message.get_snapshot().get_metadata();
    peer.snapshot_received(format!(
        "index {} term {} from node {}",
        meta.index, meta.term, message.from
    ));
    // The snapshot stream carries no stamp; what the leader knows of this
    // member travels with its batches.
    peer.step(message, strata_raft::Stamp::default());
    Ok(())
}

/// [`stage`], noting in `dirs` whether the transfer was refused for a
/// reason that lasts, no space or over the size limit (the node is then
/// not ready, `/health/ready`), or staged.
async fn stage_noting(
    id: u64,
    group_id: u64,
    dirs: &SnapshotDirs,
    max_bytes: u64,
    chunks: impl Stream<Item = Result<SnapshotChunk, Status>> + Unpin,
) -> Result<Message, Status> {
    match stage(id, group_id, dirs, max_bytes, chunks).await {
        Ok(message) => {
            dirs.note_staging(None);
            Ok(message)
        }
        Err(status) => {
            if is_lasting(&status) {
                tracing::warn!(
                    "{}: this node cannot catch up until an operator acts",
                    status.message()
                );
                dirs.note_staging(Some(status.message().to_string()));
            }
            Err(status)
        }
    }
}

/// Stages the snapshot a stream carries where the driver installs it from;
/// returns its raft message, for the caller to step.
async fn stage(
    id: u64,
    group_id: u64,
    dirs: &SnapshotDirs,
    max_bytes: u64,
    mut chunks: impl Stream<Item = Result<SnapshotChunk, Status>> + Unpin,
) -> Result<Message, Status> {
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
    let manifest = check_manifest(&header.manifest, meta.index, max_bytes)?;
    let (index, term) = (meta.index, meta.term);
    let partial = dirs.partial_incoming(index, term);
    tokio::fs::create_dir_all(&partial)
        .await
        .map_err(|e| io_failed("creating the staging directory", e))?;
    if let Err(e) = receive_files(&partial, &manifest, &mut chunks).await {
        let _ = tokio::fs::remove_dir_all(&partial).await;
        return Err(e);
    }
    let (staged, dirs) = (partial.clone(), dirs.clone());
    let published = tokio::task::spawn_blocking(move || -> std::io::Result<bool> {
        // The manifest goes in last: it is what says the copy is whole.
        sync_tree(&staged)?;
        manifest.write(&staged)?;
        dirs.publish_incoming(&staged, index, term)
    })
    .await
    .map_err(|e| internal("staging the snapshot", e))?;
    let published = match published {
        Ok(p) => p,
        Err(e) => {
            let _ = tokio::fs::remove_dir_all(&partial).await;
            return Err(io_failed("making the staged snapshot durable", e));
        }
    };
    tracing::info!(
        index,
        term,
        from = header.from_node,
        already_staged = !published,
        "snapshot received"
    );
    Ok(message)
}

/// Decodes the manifest a header carries and checks it before anything is
/// written: it belongs to the raft message's snapshot, lists each file once
/// at a path inside the snapshot, and fits under `max_bytes`.
fn check_manifest(bytes: &[u8], index: u64, max_bytes: u64) -> Result<Manifest, Status> {
    let manifest = Manifest::decode(bytes).map_err(|e| invalid(e.to_string()))?;
    if manifest.index != index {
        return Err(invalid(format!(
            "the manifest describes index {}, the raft message index {index}",
            manifest.index
        )));
    }
    if manifest.files.is_empty() {
        return Err(invalid("the snapshot manifest lists no files"));
    }
    let mut seen = HashSet::new();
    for f in &manifest.files {
        safe_relative(&f.path)?;
        if !seen.insert(&f.path) {
            return Err(invalid(format!("the manifest lists {} twice", f.path)));
        }
    }
    let total = manifest.total_bytes();
    if total > max_bytes {
        return Err(Status::resource_exhausted(format!(
            "snapshot at index {index} holds {total} bytes, over this node's limit of \
             {max_bytes} (--max-snapshot-mb)"
        )));
    }
    Ok(manifest)
}

/// Writes the files the stream carries into `partial`; succeeds only if
/// they are exactly the manifest's, in its order, each whole and intact.
async fn receive_files(
    partial: &Path,
    manifest: &Manifest,
    chunks: &mut (impl Stream<Item = Result<SnapshotChunk, Status>> + Unpin),
) -> Result<(), Status> {
    let mut done = 0usize;
    let mut current: Option<OpenFile> = None;
    while let Some(chunk) = chunks.next().await {
        let Some(snapshot_chunk::Kind::File(part)) = chunk?.kind else {
            return Err(invalid("only file chunks may follow the header"));
        };
        let f = match &mut current {
            Some(f) if f.expected.path == part.path => f,
            Some(f) => {
                return Err(invalid(format!(
                    "{} ended without its last chunk",
                    f.expected.path
                )));
            }
            None => current.insert(open_next(partial, manifest, done, &part).await?),
        };
        if part.offset != f.written {
            return Err(invalid(format!(
                "chunk of {} at {} after {} bytes",
                part.path, part.offset, f.written
            )));
        }
        if f.written + part.data.len() as u64 > f.expected.size {
            return Err(invalid(format!(
                "{} is longer than the {} bytes its manifest lists",
                part.path, f.expected.size
            )));
        }
        f.file
            .write_all(&part.data)
            .await
            .map_err(|e| io_failed("writing a snapshot file", e))?;
        f.written += part.data.len() as u64;
        f.crc.update(&part.data);
        if part.last {
            let mut f = current.take().expect("a file is open");
            let crc = f.crc.finalize();
            if f.written != f.expected.size || crc != f.expected.crc32 || crc != part.crc32 {
                return Err(invalid(format!(
                    "{} arrived with {} bytes (CRC {crc:08x}); its manifest lists {} ({:08x})",
                    part.path, f.written, f.expected.size, f.expected.crc32
                )));
            }
            // tokio's file hands writes to a blocking thread and keeps the
            // error of the last one for the next write or flush, which
            // `sync_all` does not report: flush first, or a write that
            // failed (a full disk) would pass as written.
            f.file
                .flush()
                .await
                .map_err(|e| io_failed("writing a snapshot file", e))?;
            f.file
                .sync_all()
                .await
                .map_err(|e| io_failed("syncing a snapshot file", e))?;
            done += 1;
        }
    }
    if let Some(f) = current {
        return Err(Status::aborted(format!(
            "the snapshot stream ended in the middle of {}",
            f.expected.path
        )));
    }
    if done < manifest.files.len() {
        return Err(Status::aborted(format!(
            "the snapshot stream ended after {done} of the {} files its manifest lists",
            manifest.files.len()
        )));
    }
    Ok(())
}

/// Creates the file the `done`-th manifest entry names, which `part` must
/// be the first chunk of.
async fn open_next<'m>(
    partial: &Path,
    manifest: &'m Manifest,
    done: usize,
    part: &SnapshotFileChunk,
) -> Result<OpenFile<'m>, Status> {
    let expected = manifest.files.get(done).ok_or_else(|| {
        invalid(format!(
            "{} follows the last file the manifest lists",
            part.path
        ))
    })?;
    if part.path != expected.path {
        return Err(invalid(format!(
            "{} arrived where the manifest lists {}",
            part.path, expected.path
        )));
    }
    let full = partial.join(safe_relative(&part.path)?);
    if let Some(parent) = full.parent() {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|e| io_failed("creating a directory", e))?;
    }
    let file = tokio::fs::File::create(&full)
        .await
        .map_err(|e| io_failed("creating a snapshot file", e))?;
    Ok(OpenFile {
        expected,
        file,
        written: 0,
        crc: crc32fast::Hasher::new(),
    })
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
    use bytes::Bytes;
    use strata_proto::v1::SnapshotHeader;

    /// How many transfers' partial copies are on disk.
    fn partials(dirs: &SnapshotDirs) -> usize {
        std::fs::read_dir(dirs.root())
            .unwrap()
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                name.to_string_lossy().contains(".partial")
            })
            .count()
    }

    /// The manifest of a two-file snapshot at `index`.
    fn two_files(index: u64) -> Manifest {
        Manifest {
            index,
            keys: 3,
            files: [
                ("000001.sst", &b"table one"[..]),
                ("MANIFEST-000002", b"layout"),
            ]
            .into_iter()
            .map(|(path, data)| ManifestFile {
                path: path.into(),
                size: data.len() as u64,
                crc32: crc32fast::hash(data),
            })
            .collect(),
        }
    }

    fn header(index: u64, term: u64, manifest: &Manifest) -> SnapshotChunk {
        let mut m = Message {
            to: 2,
            from: 1,
            term,
            msg_type: strata_raft::MessageType::MsgSnapshot,
            ..Message::default()
        };
        let meta = m.mut_snapshot().mut_metadata();
        meta.index = index;
        meta.term = term;
        SnapshotChunk {
            kind: Some(snapshot_chunk::Kind::Header(SnapshotHeader {
                group_id: 1,
                from_node: 1,
                to_node: 2,
                message: Bytes::from(strata_raft::encode_message(&m)),
                manifest: Bytes::from(manifest.encode()),
            })),
        }
    }

    fn whole_file(path: &str, data: &[u8]) -> Vec<SnapshotChunk> {
        let chunk = |offset: u64, part: &[u8], last: bool| SnapshotChunk {
            kind: Some(snapshot_chunk::Kind::File(SnapshotFileChunk {
                path: path.into(),
                offset,
                data: Bytes::copy_from_slice(part),
                last,
                crc32: if last { crc32fast::hash(data) } else { 0 },
            })),
        };
        vec![chunk(0, data, false), chunk(data.len() as u64, &[], true)]
    }

    #[tokio::test]
    async fn a_stream_cut_short_is_refused_and_nothing_staged() {
        // Proves: a stream that ends before all of the snapshot's files
        // arrived (before the first, or between two) is refused, and no
        // staged snapshot is left for the driver to install.
        let root = tempfile::tempdir().unwrap();
        let dirs = SnapshotDirs::new(root.path().join("snap")).unwrap();
        let m = two_files(50);
        let a = whole_file("000001.sst", b"table one");
        let mut half_b = whole_file("MANIFEST-000002", b"layout");
        half_b.pop();
        let cuts: [Vec<SnapshotChunk>; 3] = [
            vec![header(50, 3, &m)],
            [vec![header(50, 3, &m)], a.clone()].concat(),
            [vec![header(50, 3, &m)], a, half_b].concat(),
        ];
        for (i, cut) in cuts.into_iter().enumerate() {
            let stream = tokio_stream::iter(cut.into_iter().map(Ok));
            let result = stage(2, 1, &dirs, u64::MAX, stream).await;
            assert!(result.is_err(), "cut {i} was staged as complete");
            assert!(
                !dirs.incoming(50, 3).exists(),
                "cut {i} left a staged snapshot"
            );
            assert_eq!(partials(&dirs), 0, "cut {i} left its partial copy");
            assert!(dirs.verified_incoming(50, 3).is_none());
        }
    }

    #[tokio::test]
    async fn a_whole_stream_is_staged_with_its_manifest() {
        // Proves: a stream carrying every file its manifest lists, intact,
        // is staged and marked verified; the same stream with one file's
        // bytes changed, or its files out of order, is refused.
        let root = tempfile::tempdir().unwrap();
        let dirs = SnapshotDirs::new(root.path().join("snap")).unwrap();
        let m = two_files(60);
        let a = whole_file("000001.sst", b"table one");
        let b = whole_file("MANIFEST-000002", b"layout");
        let bad_b = whole_file("MANIFEST-000002", b"layouT");
        let refused = [
            [vec![header(60, 3, &m)], a.clone(), bad_b].concat(),
            [vec![header(60, 3, &m)], b.clone(), a.clone()].concat(),
        ];
        for (i, chunks) in refused.into_iter().enumerate() {
            let stream = tokio_stream::iter(chunks.into_iter().map(Ok));
            assert!(stage(2, 1, &dirs, u64::MAX, stream).await.is_err(), "{i}");
            assert!(dirs.verified_incoming(60, 3).is_none(), "{i}");
        }
        let whole = [vec![header(60, 3, &m)], a, b].concat();
        let stream = tokio_stream::iter(whole.into_iter().map(Ok));
        let message = stage(2, 1, &dirs, u64::MAX, stream).await.unwrap();
        assert_eq!(message.get_snapshot().get_metadata().index, 60);
        assert_eq!(dirs.verified_incoming(60, 3), Some(m));
        let staged = dirs.incoming(60, 3);
        assert_eq!(
            std::fs::read(staged.join("000001.sst")).unwrap(),
            b"table one"
        );
    }

    #[tokio::test]
    async fn the_same_snapshot_sent_twice_leaves_the_staged_copy_in_place() {
        // Proves: a second transfer of a snapshot already staged (a leader
        // that sent it again, or two transfers at once) neither removes nor
        // replaces the staged copy the driver may be installing from; and
        // two transfers interleaved chunk by chunk do not share a partial
        // copy, so both succeed and one whole copy is staged.
        let root = tempfile::tempdir().unwrap();
        let dirs = SnapshotDirs::new(root.path().join("snap")).unwrap();
        let m = two_files(80);
        let whole = || {
            [
                vec![header(80, 3, &m)],
                whole_file("000001.sst", b"table one"),
                whole_file("MANIFEST-000002", b"layout"),
            ]
            .concat()
        };
        let stream = tokio_stream::iter(whole().into_iter().map(Ok));
        stage(2, 1, &dirs, u64::MAX, stream).await.unwrap();
        // The driver is installing from the staged copy.
        let installing = dirs.incoming(80, 3).join("000001.sst");
        let inode = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&installing).unwrap());
        let stream = tokio_stream::iter(whole().into_iter().map(Ok));
        stage(2, 1, &dirs, u64::MAX, stream).await.unwrap();
        let after = std::fs::metadata(&installing).expect("the staged copy was removed");
        assert_eq!(
            std::os::unix::fs::MetadataExt::ino(&after),
            inode,
            "the staged copy was replaced under the install"
        );
        assert_eq!(dirs.verified_incoming(80, 3), Some(m.clone()));

        // Two transfers of a new snapshot, their chunks interleaved.
        let m = two_files(90);
        let chunks = || {
            [
                vec![header(90, 3, &m)],
                whole_file("000001.sst", b"table one"),
                whole_file("MANIFEST-000002", b"layout"),
            ]
            .concat()
        };
        let (tx_a, rx_a) = tokio::sync::mpsc::unbounded_channel();
        let (tx_b, rx_b) = tokio::sync::mpsc::unbounded_channel();
        let a = stage(
            2,
            1,
            &dirs,
            u64::MAX,
            tokio_stream::wrappers::UnboundedReceiverStream::new(rx_a),
        );
        let b = stage(
            2,
            1,
            &dirs,
            u64::MAX,
            tokio_stream::wrappers::UnboundedReceiverStream::new(rx_b),
        );
        let feed = async move {
            for (ca, cb) in chunks().into_iter().zip(chunks()) {
                tx_a.send(Ok(ca)).unwrap();
                tokio::task::yield_now().await;
                tx_b.send(Ok(cb)).unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        };
        let (ra, rb, ()) = tokio::join!(a, b, feed);
        assert!(ra.is_ok() && rb.is_ok(), "{ra:?} {rb:?}");
        assert_eq!(dirs.verified_incoming(90, 3), Some(m));
        assert_eq!(
            std::fs::read(dirs.incoming(90, 3).join("MANIFEST-000002")).unwrap(),
            b"layout"
        );
        assert_eq!(partials(&dirs), 0, "the copy not used is removed");
    }

    #[tokio::test]
    async fn a_transfer_refused_for_want_of_space_says_so_until_one_is_staged() {
        // Proves: a file that cannot be written for want of space (the
        // staged file is made to point at /dev/full, which answers every
        // write with ENOSPC) refuses the transfer as RESOURCE_EXHAUSTED,
        // saying so, and the directories remember it (the node is then
        // not ready); the next transfer that is staged clears it.
        let root = tempfile::tempdir().unwrap();
        let dirs = SnapshotDirs::new(root.path().join("snap")).unwrap();
        let m = two_files(80);
        // The first transfer's partial copy is `.partial-1`.
        let partial = dirs.root().join("in-80-3.partial-1");
        std::fs::create_dir_all(&partial).unwrap();
        std::os::unix::fs::symlink("/dev/full", partial.join("000001.sst")).unwrap();
        let chunks = [
            vec![header(80, 3, &m)],
            whole_file("000001.sst", b"table one"),
            whole_file("MANIFEST-000002", b"layout"),
        ]
        .concat();
        let status = stage_noting(
            2,
            1,
            &dirs,
            u64::MAX,
            tokio_stream::iter(chunks.clone().into_iter().map(Ok)),
        )
        .await
        .unwrap_err();
        assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
        assert!(status.message().starts_with(NO_SPACE), "{status:?}");
        let said = dirs.staging_refused().expect("noted");
        assert!(said.contains("No space left on device"), "{said}");
        assert_eq!(partials(&dirs), 0);

        let message = stage_noting(
            2,
            1,
            &dirs,
            u64::MAX,
            tokio_stream::iter(chunks.into_iter().map(Ok)),
        )
        .await
        .expect("staged once there is space");
        assert_eq!(message.get_snapshot().get_metadata().index, 80);
        assert_eq!(dirs.staging_refused(), None, "cleared");
    }

    #[tokio::test]
    async fn a_snapshot_over_the_limit_is_refused_before_staging() {
        // Proves: a snapshot whose manifest totals more than the node's
        // limit is refused with RESOURCE_EXHAUSTED and a message naming the
        // limit, before any staging directory is created; the node notes
        // that it cannot catch up (`/health/ready`).
        let root = tempfile::tempdir().unwrap();
        let dirs = SnapshotDirs::new(root.path().join("snap")).unwrap();
        let m = two_files(70);
        let stream = tokio_stream::iter([Ok(header(70, 3, &m))]);
        let status = stage_noting(2, 1, &dirs, m.total_bytes() - 1, stream)
            .await
            .unwrap_err();
        assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
        assert!(status.message().contains("--max-snapshot-mb"), "{status:?}");
        assert_eq!(partials(&dirs), 0);
        assert!(!dirs.incoming(70, 3).exists());
        let said = dirs.staging_refused().expect("noted");
        assert!(said.contains("--max-snapshot-mb"), "{said}");
    }

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
