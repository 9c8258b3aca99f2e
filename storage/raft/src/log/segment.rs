//! Segment files of the raft log: a directory of append-only files named by
//! a sequence number, each a run of framed records.
//!
//! Only the newest segment is ever written. At open, every segment is read in
//! order; a record that fails to decode is tolerated only at the tail of the
//! newest segment (a torn write), which is cut off and fsynced away.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use super::record::{self, Decoded, RecordKind};
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
    dir: PathBuf,
    file: File,
    path: PathBuf,
    seq: u64,
    size_bytes: u64,
    /// How much of the current segment the last sync covered.
    synced_bytes: u64,
    max_segment_bytes: u64,
}

fn segment_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("{seq:020}{SUFFIX}"))
}

fn list_segments(dir: &Path) -> Result<Vec<u64>, LogError> {
    let mut seqs = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| LogError::io(dir, e))? {
        let entry = entry.map_err(|e| LogError::io(dir, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(stem) = name.strip_suffix(SUFFIX)
            && let Ok(seq) = stem.parse::<u64>()
        {
            seqs.push(seq);
        }
    }
    seqs.sort_unstable();
    Ok(seqs)
}

fn sync_dir(dir: &Path) -> Result<(), LogError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| LogError::io(dir, e))
}

impl Segments {
    /// Opens (or creates) the log in `dir` and returns every record in it.
    pub fn open(dir: &Path, max_segment_bytes: u64) -> Result<(Self, Vec<OwnedRecord>), LogError> {
        fs::create_dir_all(dir).map_err(|e| LogError::io(dir, e))?;
        let seqs = list_segments(dir)?;
        let mut records = Vec::new();
        let mut last = None;
        for (i, &seq) in seqs.iter().enumerate() {
            let path = segment_path(dir, seq);
            let is_last = i + 1 == seqs.len();
            let valid_len = read_segment(&path, seq, is_last, &mut records)?;
            if is_last {
                last = Some((seq, path, valid_len));
            }
        }
        let (seq, path, size_bytes) = match last {
            Some((seq, path, valid_len)) => {
                let file = OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map_err(|e| LogError::io(&path, e))?;
                let on_disk = file.metadata().map_err(|e| LogError::io(&path, e))?.len();
                if on_disk != valid_len {
                    tracing::warn!(path = %path.display(), valid_len, on_disk, "cutting torn tail of raft log");
                    file.set_len(valid_len)
                        .map_err(|e| LogError::io(&path, e))?;
                    file.sync_all().map_err(|e| LogError::io(&path, e))?;
                }
                (seq, path, valid_len)
            }
            None => {
                let path = segment_path(dir, 1);
                File::create(&path).map_err(|e| LogError::io(&path, e))?;
                sync_dir(dir)?;
                (1, path, 0)
            }
        };
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|e| LogError::io(&path, e))?;
        let segments = Segments {
            dir: dir.to_path_buf(),
            file,
            path,
            seq,
            size_bytes,
            synced_bytes: size_bytes,
            max_segment_bytes,
        };
        Ok((segments, records))
    }

    /// Whether writing `len` more bytes starts a new segment first.
    pub fn would_roll(&self, len: usize) -> bool {
        self.size_bytes > 0 && self.size_bytes + len as u64 > self.max_segment_bytes
    }

    /// The sequence number of the segment being written.
    pub fn current_seq(&self) -> u64 {
        self.seq
    }

    /// Writes already framed records into the current segment. They are
    /// durable only after [`sync`](Segments::sync). Callers roll first when
    /// [`would_roll`](Segments::would_roll) says so.
    pub fn write(&mut self, framed: &[u8]) -> Result<(), LogError> {
        self.file
            .write_all(framed)
            .map_err(|e| LogError::io(&self.path, e))?;
        self.size_bytes += framed.len() as u64;
        Ok(())
    }

    /// Deletes the given sealed segments (never the current one).
    pub fn remove(&mut self, seqs: &[u64]) -> Result<(), LogError> {
        let mut removed = false;
        for &seq in seqs {
            if seq == self.seq {
                continue;
            }
            let path = segment_path(&self.dir, seq);
            fs::remove_file(&path).map_err(|e| LogError::io(&path, e))?;
            removed = true;
        }
        if removed {
            sync_dir(&self.dir)?;
        }
        Ok(())
    }

    /// Makes everything written so far durable (one `fdatasync`).
    pub fn sync(&mut self) -> Result<(), LogError> {
        self.file
            .sync_data()
            .map_err(|e| LogError::io(&self.path, e))?;
        self.synced_bytes = self.size_bytes;
        Ok(())
    }

    /// The current segment and how many of its bytes are durable; a power
    /// loss may cut it there (earlier segments are wholly durable).
    pub fn durable_tail(&self) -> (PathBuf, u64) {
        (self.path.clone(), self.synced_bytes)
    }

    /// Starts a new segment. The old one is synced first so that a later
    /// segment never exists without every earlier byte being durable.
    pub fn roll(&mut self) -> Result<(), LogError> {
        self.sync()?;
        let seq = self.seq + 1;
        let path = segment_path(&self.dir, seq);
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)
            .map_err(|e| LogError::io(&path, e))?;
        sync_dir(&self.dir)?;
        self.file = file;
        self.path = path;
        self.seq = seq;
        self.size_bytes = 0;
        self.synced_bytes = 0;
        Ok(())
    }
}

/// Reads one segment into `records`; returns the length of its valid prefix.
fn read_segment(
    path: &Path,
    seq: u64,
    is_last: bool,
    records: &mut Vec<OwnedRecord>,
) -> Result<u64, LogError> {
    let mut buf = Vec::new();
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut buf))
        .map_err(|e| LogError::io(path, e))?;
    let mut offset = 0usize;
    while offset < buf.len() {
        match record::decode(&buf[offset..]) {
            Decoded::Record {
                kind,
                payload,
                size,
            } => {
                records.push(OwnedRecord {
                    kind,
                    payload: payload.to_vec(),
                    seq,
                });
                offset += size;
            }
            Decoded::Incomplete | Decoded::Invalid(_) if is_last => break,
            Decoded::Incomplete => {
                return Err(LogError::Corruption {
                    path: path.to_path_buf(),
                    offset: offset as u64,
                    reason: "truncated record in a sealed segment".into(),
                });
            }
            Decoded::Invalid(reason) => {
                return Err(LogError::Corruption {
                    path: path.to_path_buf(),
                    offset: offset as u64,
                    reason: reason.into(),
                });
            }
        }
    }
    Ok(offset as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(kind: RecordKind, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        record::encode(kind, payload, &mut out);
        out
    }

    #[test]
    fn records_survive_reopen_across_rolled_segments() {
        let dir = tempfile::tempdir().unwrap();
        let (mut segs, recs) = Segments::open(dir.path(), 64).unwrap();
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
        assert!(list_segments(dir.path()).unwrap().len() > 1);
        let (_, recs) = Segments::open(dir.path(), 64).unwrap();
        let payloads: Vec<u8> = recs.iter().map(|r| r.payload[0]).collect();
        assert_eq!(payloads, (0..10).collect::<Vec<u8>>());
    }

    #[test]
    fn torn_tail_of_last_segment_is_cut_at_every_offset() {
        let dir = tempfile::tempdir().unwrap();
        let first = framed(RecordKind::HardState, b"first");
        let second = framed(RecordKind::Entries, b"second record");
        for cut in 0..second.len() {
            let path = segment_path(dir.path(), 1);
            let mut bytes = first.clone();
            bytes.extend_from_slice(&second[..cut]);
            fs::write(&path, &bytes).unwrap();
            let (mut segs, recs) = Segments::open(dir.path(), 1 << 20).unwrap();
            assert_eq!(recs.len(), 1, "cut at {cut}");
            assert_eq!(fs::metadata(&path).unwrap().len(), first.len() as u64);
            // The log stays appendable after the repair.
            segs.write(&second).unwrap();
            segs.sync().unwrap();
            drop(segs);
            let (_, recs) = Segments::open(dir.path(), 1 << 20).unwrap();
            assert_eq!(recs.len(), 2, "append after repair at cut {cut}");
        }
    }

    #[test]
    fn corruption_in_a_sealed_segment_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut bad = framed(RecordKind::Entries, b"sealed");
        bad[12] ^= 0xff;
        fs::write(segment_path(dir.path(), 1), &bad).unwrap();
        fs::write(
            segment_path(dir.path(), 2),
            framed(RecordKind::Entries, b"x"),
        )
        .unwrap();
        let err = Segments::open(dir.path(), 1 << 20)
            .err()
            .expect("must fail");
        assert!(matches!(err, LogError::Corruption { .. }), "{err}");
    }
}
