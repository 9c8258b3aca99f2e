//! Segment files of the raft log: a directory of append-only files named by
//! a sequence number, each a run of framed records, all on a
//! [`FileSystem`].
//!
//! Only the newest segment is ever written. At open, every segment is read in
//! order; damage is tolerated only as a torn tail of the newest segment (no
//! intact record after it), which is cut off and fsynced away. Any failed
//! write, fsync, roll or removal poisons the segments: every later write is
//! refused until the log is reopened, because what reached the disk is no
//! longer known.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_fs::{FileSystem, WritableFile};

use super::record::{self, RecordKind};
use crate::error::LogError;

const SUFFIX: &str = ".rlog";

/// One decoded record, owned, with the segment it came from.
#[derive(Debug)]
pub struct OwnedRecord {
    pub kind: RecordKind,
    pub payload: Vec<u8>,
    pub seq: u64,
}

/// The writable end of the log's segment files.
pub struct Segments {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    file: Arc<dyn WritableFile>,
    path: PathBuf,
    seq: u64,
    size_bytes: u64,
    max_segment_bytes: u64,
    /// Whether the current segment is allocated ahead to
    /// `max_segment_bytes` (see `allocate_ahead`).
    allocated: bool,
    /// The failure that poisoned the segments, if any.
    failure: Option<String>,
}

fn segment_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("{seq:020}{SUFFIX}"))
}

fn list_segments(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<u64>, LogError> {
    let mut seqs: Vec<u64> = fs
        .list_dir(dir)
        .map_err(|e| LogError::io(dir, e))?
        .iter()
        .filter_map(|name| name.strip_suffix(SUFFIX)?.parse().ok())
        .collect();
    seqs.sort_unstable();
    Ok(seqs)
}

impl Segments {
    /// Opens (or creates) the log in `dir` and returns every record in it.
    pub fn open(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        max_segment_bytes: u64,
    ) -> Result<(Self, Vec<OwnedRecord>), LogError> {
        fs.create_dir_durable(dir)
            .map_err(|e| LogError::io(dir, e))?;
        let seqs = list_segments(fs.as_ref(), dir)?;
        let mut records = Vec::new();
        let mut last = None;
        for (i, &seq) in seqs.iter().enumerate() {
            let path = segment_path(dir, seq);
            let is_last = i + 1 == seqs.len();
            let tail = read_segment(fs.as_ref(), &path, seq, is_last, &mut records)?;
            if is_last {
                last = Some((seq, path, tail));
            }
        }
        let (seq, path, file, size_bytes) = match last {
            Some((seq, path, tail)) => {
                let file = fs.open_append(&path).map_err(|e| LogError::io(&path, e))?;
                let Tail {
                    valid_len,
                    on_disk,
                    zeros,
                } = tail;
                if on_disk != valid_len {
                    // Zeros after the last record are space allocated ahead
                    // (and perhaps appends that never reached the disk);
                    // anything else is a torn write. Either way the segment
                    // is cut back, and allocated ahead again below.
                    if !zeros {
                        tracing::warn!(path = %path.display(), valid_len, on_disk, "cutting torn tail of raft log");
                    }
                    file.truncate(valid_len)
                        .and_then(|()| file.sync())
                        .map_err(|e| LogError::io(&path, e))?;
                }
                (seq, path, file, valid_len)
            }
            None => {
                let path = segment_path(dir, 1);
                let file = fs.create(&path).map_err(|e| LogError::io(&path, e))?;
                fs.sync_dir(dir).map_err(|e| LogError::io(dir, e))?;
                (1, path, file, 0)
            }
        };
        let mut segments = Segments {
            fs,
            dir: dir.to_path_buf(),
            file,
            path,
            seq,
            size_bytes,
            max_segment_bytes,
            allocated: false,
            failure: None,
        };
        segments.allocate_ahead();
        Ok((segments, records))
    }

    /// Allocates the current segment's space up to `max_segment_bytes`, so
    /// that the appends into it do not grow the file: the `fdatasync` after
    /// an append that grows a file commits the new size through the file
    /// system's journal as well, and one into allocated space does not
    /// (1.5-1.6x faster syncs on ext4 here: docs/benchmarks.md, "A single
    /// client's put: where its time goes, and two changes"). The zeros after the
    /// last record are cut off when the segment is sealed (`roll`) and when
    /// the log is opened. Where the space cannot be allocated ahead (the
    /// disk is too full, or the file system cannot), the segment grows with
    /// each append, as it would without this.
    fn allocate_ahead(&mut self) {
        if self.size_bytes >= self.max_segment_bytes {
            return;
        }
        match self.file.preallocate(self.max_segment_bytes) {
            Ok(()) => self.allocated = true,
            Err(e) => {
                tracing::debug!(path = %self.path.display(), error = %e, "raft log segment not allocated ahead");
            }
        }
    }

    /// Whether writing `len` more bytes starts a new segment first.
    pub fn would_roll(&self, len: usize) -> bool {
        self.size_bytes > 0 && self.size_bytes + len as u64 > self.max_segment_bytes
    }

    /// The sequence number of the segment being written.
    pub fn current_seq(&self) -> u64 {
        self.seq
    }

    /// Refuses every write once one has failed.
    fn check_healthy(&self) -> Result<(), LogError> {
        match &self.failure {
            Some(reason) => Err(LogError::Poisoned {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Runs one I/O step; a failure poisons the segments.
    pub(crate) fn guarded<T>(
        &mut self,
        step: impl FnOnce(&mut Self) -> Result<T, LogError>,
    ) -> Result<T, LogError> {
        self.check_healthy()?;
        let result = step(self);
        if let Err(e) = &result {
            self.failure = Some(e.to_string());
        }
        result
    }

    /// Writes already framed records into the current segment. They are
    /// durable only after [`sync`](Segments::sync). Callers roll first when
    /// [`would_roll`](Segments::would_roll) says so.
    pub fn write(&mut self, framed: &[u8]) -> Result<(), LogError> {
        self.guarded(|s| {
            s.file
                .append(framed)
                .map_err(|e| LogError::io(&s.path, e))?;
            s.size_bytes += framed.len() as u64;
            Ok(())
        })
    }

    /// Deletes the given sealed segments (never the current one).
    pub fn remove(&mut self, seqs: &[u64]) -> Result<(), LogError> {
        self.guarded(|s| {
            let mut removed = false;
            for &seq in seqs {
                if seq == s.seq {
                    continue;
                }
                let path = segment_path(&s.dir, seq);
                s.fs.remove_file(&path)
                    .map_err(|e| LogError::io(&path, e))?;
                removed = true;
            }
            if removed {
                s.fs.sync_dir(&s.dir).map_err(|e| LogError::io(&s.dir, e))?;
            }
            Ok(())
        })
    }

    /// Makes everything written so far durable (one `fdatasync`).
    pub fn sync(&mut self) -> Result<(), LogError> {
        self.guarded(|s| s.file.sync().map_err(|e| LogError::io(&s.path, e)))
    }

    /// Starts a new segment. The old one is synced first so that a later
    /// segment never exists without every earlier byte being durable, and
    /// the new one's directory entry is synced before anything is written
    /// into it.
    pub fn roll(&mut self) -> Result<(), LogError> {
        if self.allocated {
            // A sealed segment ends with its last record: only the newest
            // may have anything after it.
            self.guarded(|s| {
                s.file
                    .truncate(s.size_bytes)
                    .map_err(|e| LogError::io(&s.path, e))
            })?;
            self.allocated = false;
        }
        self.sync()?;
        self.guarded(|s| {
            let seq = s.seq + 1;
            let path = segment_path(&s.dir, seq);
            // Never reuse a name: the segment after the newest one cannot
            // exist unless something else writes into the directory.
            if s.fs.exists(&path).map_err(|e| LogError::io(&path, e))? {
                return Err(LogError::io(
                    &path,
                    io::Error::new(io::ErrorKind::AlreadyExists, "next segment already exists"),
                ));
            }
            let file = s.fs.create(&path).map_err(|e| LogError::io(&path, e))?;
            s.fs.sync_dir(&s.dir).map_err(|e| LogError::io(&s.dir, e))?;
            s.file = file;
            s.path = path;
            s.seq = seq;
            s.size_bytes = 0;
            Ok(())
        })?;
        self.allocate_ahead();
        Ok(())
    }
}

/// What follows a segment's last intact record.
struct Tail {
    /// The length of the segment's valid prefix.
    valid_len: u64,
    /// Its length on disk.
    on_disk: u64,
    /// Whether every byte after the valid prefix is zero.
    zeros: bool,
}

/// Reads one segment into `records`.
fn read_segment(
    fs: &dyn FileSystem,
    path: &Path,
    seq: u64,
    is_last: bool,
    records: &mut Vec<OwnedRecord>,
) -> Result<Tail, LogError> {
    let bytes = fs.read_all(path).map_err(|e| LogError::io(path, e))?;
    let corrupt = |offset: u64, reason: String| LogError::Corruption {
        path: path.to_path_buf(),
        offset,
        reason,
    };
    let mut reader = record::reader(&bytes, is_last);
    for rec in &mut reader {
        let rec = rec.map_err(|e| corrupt(e.offset(), e.to_string()))?;
        let (kind, body) =
            record::decode_payload(rec.payload).map_err(|r| corrupt(rec.offset, r.into()))?;
        records.push(OwnedRecord {
            kind,
            payload: body.to_vec(),
            seq,
        });
    }
    let end = reader
        .end()
        .expect("a segment read without corruption has an end");
    let valid = usize::try_from(end.valid_len).unwrap_or(bytes.len());
    Ok(Tail {
        valid_len: end.valid_len,
        on_disk: bytes.len() as u64,
        zeros: strata_fs::log::first_nonzero(&bytes, valid).is_none(),
    })
}

#[cfg(test)]
mod tests {
    use strata_fs::{FaultFs, StdFs};

    use super::*;

    /// Where a record's body starts: after the header and the kind byte.
    const BODY_OFFSET: usize = record::HEADER_BYTES + 1;

    fn framed(kind: RecordKind, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        record::encode(kind, payload, &mut out);
        out
    }

    // Proves that records written across rolled segments, on the real file
    // system, come back in order after reopening.
    #[test]
    fn records_survive_reopen_across_rolled_segments() {
        let dir = tempfile::tempdir().unwrap();
        let (mut segs, recs) = Segments::open(Arc::new(StdFs), dir.path(), 64).unwrap();
        assert!(recs.is_empty());
        for i in 0..10u8 {
            let rec = framed(RecordKind::Entries, &[i; 20]);
            if segs.would_roll(rec.len()) {
                segs.roll().unwrap();
            }
            segs.write(&rec).unwrap();
        }
        segs.sync().unwrap();
        drop(segs);
        assert!(list_segments(&StdFs, dir.path()).unwrap().len() > 1);
        let (_, recs) = Segments::open(Arc::new(StdFs), dir.path(), 64).unwrap();
        let payloads: Vec<u8> = recs.iter().map(|r| r.payload[0]).collect();
        assert_eq!(payloads, (0..10).collect::<Vec<u8>>());
    }

    // Proves, on the real file system, that a torn tail of the last segment
    // is cut at every offset of the torn record, durably, and that the log
    // stays appendable after the repair.
    #[test]
    fn torn_tail_of_last_segment_is_cut_at_every_offset() {
        let dir = tempfile::tempdir().unwrap();
        let first = framed(RecordKind::HardState, b"first");
        let second = framed(RecordKind::Entries, b"second record");
        for cut in 0..second.len() {
            let path = segment_path(dir.path(), 1);
            let mut bytes = first.clone();
            bytes.extend_from_slice(&second[..cut]);
            std::fs::write(&path, &bytes).unwrap();
            let (mut segs, recs) = Segments::open(Arc::new(StdFs), dir.path(), 1 << 20).unwrap();
            assert_eq!(recs.len(), 1, "cut at {cut}");
            // Cut after the first record, and allocated ahead again.
            let on_disk = std::fs::read(&path).unwrap();
            assert_eq!(on_disk.len(), 1 << 20);
            assert_eq!(&on_disk[..first.len()], &first[..]);
            assert!(
                on_disk[first.len()..].iter().all(|&b| b == 0),
                "cut at {cut}"
            );
            // The log stays appendable after the repair.
            segs.write(&second).unwrap();
            segs.sync().unwrap();
            drop(segs);
            let (_, recs) = Segments::open(Arc::new(StdFs), dir.path(), 1 << 20).unwrap();
            assert_eq!(recs.len(), 2, "append after repair at cut {cut}");
        }
    }

    // Proves that any damage in a sealed segment is corruption, even at its
    // end, where the newest segment would have a torn tail.
    #[test]
    fn corruption_in_a_sealed_segment_is_an_error() {
        let fs = FaultFs::new();
        let dir = Path::new("/log");
        fs.create_dir_durable(dir).unwrap();
        let mut bad = framed(RecordKind::Entries, b"sealed");
        bad[BODY_OFFSET] ^= 0xff;
        fs.overwrite(&segment_path(dir, 1), bad);
        fs.overwrite(&segment_path(dir, 2), framed(RecordKind::Entries, b"x"));
        let err = Segments::open(Arc::new(fs.clone()), dir, 1 << 20)
            .err()
            .expect("must fail");
        assert!(matches!(err, LogError::Corruption { .. }), "{err}");

        let torn = framed(RecordKind::Entries, b"sealed");
        fs.overwrite(&segment_path(dir, 1), torn[..torn.len() - 1].to_vec());
        let err = Segments::open(Arc::new(fs), dir, 1 << 20)
            .err()
            .expect("a torn sealed segment must fail");
        assert!(matches!(err, LogError::Corruption { .. }), "{err}");
    }

    // Proves the reader's side of the size guard: a record whose intact
    // header declares more than MAX_RECORD_BYTES is corruption, even as the
    // newest segment's tail, and nothing that size is allocated.
    #[test]
    fn oversized_record_at_the_tail_is_corruption() {
        let fs = FaultFs::new();
        let dir = Path::new("/log");
        fs.create_dir_durable(dir).unwrap();
        let mut bytes = framed(RecordKind::HardState, b"ok");
        let len = u32::try_from(record::MAX_RECORD_BYTES + 1).unwrap();
        let mut header = Vec::new();
        header.extend_from_slice(&len.to_le_bytes());
        header.extend_from_slice(&0u32.to_le_bytes());
        let crc = crc32fast::hash(&header);
        header.extend_from_slice(&crc.to_le_bytes());
        bytes.extend_from_slice(&header);
        fs.overwrite(&segment_path(dir, 1), bytes);
        let err = Segments::open(Arc::new(fs), dir, 1 << 20)
            .err()
            .expect("must fail");
        assert!(
            matches!(&err, LogError::Corruption { reason, .. } if reason.contains("above the limit")),
            "{err}"
        );
    }
}
