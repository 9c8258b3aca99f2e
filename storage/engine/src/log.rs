//! Checksummed record log, the framing shared by the WAL and the manifest.
//!
//! A record is a 12-byte header followed by its payload:
//! `len: u32 LE | payload_crc: u32 LE | header_crc: u32 LE`, where
//! `header_crc` covers the first 8 header bytes. The header checksum lets
//! recovery tell a torn tail (nothing intact after the damage) from damage in
//! the middle of the log (an intact record follows), without trusting a
//! length field that may itself be damaged.

use std::io;
use std::sync::Arc;

use crate::coding::read_u32;
use crate::error::{EngineError, Result};
use crate::fs::WritableFile;

/// Size of a record header.
pub(crate) const HEADER_BYTES: usize = 12;

/// Appends records to a file.
pub(crate) struct LogWriter {
    file: Arc<dyn WritableFile>,
    /// Bytes appended so far (the offset of the next record).
    len_bytes: u64,
    scratch: Vec<u8>,
}

impl LogWriter {
    pub(crate) fn new(file: Arc<dyn WritableFile>) -> LogWriter {
        LogWriter {
            file,
            len_bytes: 0,
            scratch: Vec::new(),
        }
    }

    /// Appends one record with a single write call, so a record is never
    /// split between two writes. Returns the file length after the record.
    pub(crate) fn add_record(&mut self, payload: &[u8]) -> io::Result<u64> {
        let len =
            u32::try_from(payload.len()).map_err(|_| io::Error::other("log record too large"))?;
        self.scratch.clear();
        encode_header(&mut self.scratch, len, crc32fast::hash(payload));
        self.scratch.extend_from_slice(payload);
        self.file.append(&self.scratch)?;
        self.len_bytes += self.scratch.len() as u64;
        if self.scratch.capacity() > 1 << 20 {
            // Do not keep a huge batch's buffer alive forever.
            self.scratch = Vec::new();
        }
        Ok(self.len_bytes)
    }

    pub(crate) fn sync(&self) -> io::Result<()> {
        self.file.sync()
    }

    pub(crate) fn file(&self) -> &Arc<dyn WritableFile> {
        &self.file
    }

    pub(crate) fn len_bytes(&self) -> u64 {
        self.len_bytes
    }
}

/// Appends one framed record to `buf`, as [`LogWriter::add_record`] writes it.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn encode_record(buf: &mut Vec<u8>, payload: &[u8]) {
    let len = u32::try_from(payload.len()).expect("a record is smaller than 4 GiB");
    encode_header(buf, len, crc32fast::hash(payload));
    buf.extend_from_slice(payload);
}

fn encode_header(buf: &mut Vec<u8>, len: u32, payload_crc: u32) {
    let start = buf.len();
    buf.extend_from_slice(&len.to_le_bytes());
    buf.extend_from_slice(&payload_crc.to_le_bytes());
    let header_crc = crc32fast::hash(&buf[start..start + 8]);
    buf.extend_from_slice(&header_crc.to_le_bytes());
}

/// How reading a log ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LogEnd {
    /// Length of the intact prefix of the log.
    pub(crate) valid_len: u64,
    /// Whether a torn tail followed the intact prefix.
    pub(crate) torn_tail: bool,
}

/// Outcome of decoding the record at one offset.
enum Record<'a> {
    Ok {
        payload: &'a [u8],
        next: usize,
    },
    /// The header is incomplete or fails its checksum: its length is unknown.
    BadHeader,
    /// The header is intact but the payload runs past the end of the log.
    Incomplete,
    /// The header is intact but the payload fails its checksum.
    BadPayload {
        next: usize,
    },
}

fn record_at(bytes: &[u8], offset: usize) -> Record<'_> {
    let Some(header) = bytes.get(offset..offset + HEADER_BYTES) else {
        return Record::BadHeader;
    };
    let (Some(len), Some(payload_crc), Some(header_crc)) = (
        read_u32(header, 0),
        read_u32(header, 4),
        read_u32(header, 8),
    ) else {
        return Record::BadHeader;
    };
    if crc32fast::hash(&header[..8]) != header_crc {
        return Record::BadHeader;
    }
    let start = offset + HEADER_BYTES;
    let next = start + len as usize;
    let Some(payload) = bytes.get(start..next) else {
        return Record::Incomplete;
    };
    if crc32fast::hash(payload) != payload_crc {
        return Record::BadPayload { next };
    }
    Record::Ok { payload, next }
}

/// Whether an intact record starts anywhere in `bytes[from..]`.
fn intact_record_after(bytes: &[u8], from: usize) -> bool {
    (from..bytes.len().saturating_sub(HEADER_BYTES - 1))
        .any(|o| matches!(record_at(bytes, o), Record::Ok { .. }))
}

/// Calls `visit` on each record payload of the log in `bytes`.
///
/// A damaged record with no intact record after it is a torn tail:
/// accepted when `tolerate_torn_tail` (the newest log segment, the manifest),
/// reported as corruption otherwise. Damage followed by an intact record is
/// always corruption. `name` identifies the log in errors.
pub(crate) fn read_log(
    bytes: &[u8],
    tolerate_torn_tail: bool,
    name: &str,
    mut visit: impl FnMut(&[u8]) -> Result<()>,
) -> Result<LogEnd> {
    let mut offset = 0;
    while offset < bytes.len() {
        match record_at(bytes, offset) {
            Record::Ok { payload, next } => {
                visit(payload)?;
                offset = next;
            }
            damaged => {
                if !tolerate_torn_tail {
                    return Err(EngineError::corruption(format!(
                        "{name}: damaged record at offset {offset}"
                    )));
                }
                // Where an intact record could start if this one is not the
                // tail: after it when its header (and so its length) is
                // trustworthy, anywhere after its start otherwise.
                let resume = match damaged {
                    Record::BadPayload { next } => Some(next),
                    Record::BadHeader => Some(offset + 1),
                    Record::Incomplete | Record::Ok { .. } => None,
                };
                if resume.is_some_and(|from| intact_record_after(bytes, from)) {
                    return Err(EngineError::corruption(format!(
                        "{name}: damaged record at offset {offset} followed by intact records"
                    )));
                }
                return Ok(LogEnd {
                    valid_len: offset as u64,
                    torn_tail: true,
                });
            }
        }
    }
    Ok(LogEnd {
        valid_len: offset as u64,
        torn_tail: false,
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::fs::{FaultFs, FileSystem};

    fn write_log(records: &[&[u8]]) -> Vec<u8> {
        let fs = FaultFs::new();
        fs.create_dir_all(Path::new("/d")).expect("mkdir");
        let mut w = LogWriter::new(fs.create(Path::new("/d/log")).expect("create"));
        for r in records {
            w.add_record(r).expect("append");
        }
        fs.contents(Path::new("/d/log")).expect("file exists")
    }

    fn read_all(bytes: &[u8], tolerate: bool) -> Result<(Vec<Vec<u8>>, LogEnd)> {
        let mut out = Vec::new();
        let end = read_log(bytes, tolerate, "test", |p| {
            out.push(p.to_vec());
            Ok(())
        })?;
        Ok((out, end))
    }

    // Proves that records round-trip, including empty ones.
    #[test]
    fn records_round_trip() {
        let bytes = write_log(&[b"one", b"", b"three"]);
        let (records, end) = read_all(&bytes, false).expect("intact log");
        assert_eq!(records, vec![b"one".to_vec(), vec![], b"three".to_vec()]);
        assert_eq!(
            end,
            LogEnd {
                valid_len: bytes.len() as u64,
                torn_tail: false
            }
        );
    }

    // Proves that a log cut at any offset yields exactly the complete records.
    #[test]
    fn cut_at_every_offset_yields_complete_prefix() {
        let records: [&[u8]; 3] = [b"alpha", b"beta-beta", b"gamma-gamma-gamma"];
        let bytes = write_log(&records);
        let ends: Vec<usize> = records
            .iter()
            .scan(0, |acc, r| {
                *acc += HEADER_BYTES + r.len();
                Some(*acc)
            })
            .collect();
        for cut in 0..=bytes.len() {
            let (got, end) = read_all(&bytes[..cut], true).expect("torn tail is tolerated");
            let complete = ends.iter().filter(|&&e| e <= cut).count();
            assert_eq!(got.len(), complete, "cut at {cut}");
            assert_eq!(end.torn_tail, !ends.contains(&cut) && cut != 0);
        }
    }

    // Proves that zeros after the last record (pre-extended file) are a torn tail.
    #[test]
    fn zero_filled_tail_is_torn_tail() {
        let mut bytes = write_log(&[b"one"]);
        bytes.extend_from_slice(&[0; 100]);
        let (got, end) = read_all(&bytes, true).expect("tolerated");
        assert_eq!(got.len(), 1);
        assert!(end.torn_tail);
        assert!(read_all(&bytes, false).is_err());
    }

    // Proves that damage followed by an intact record is corruption even when
    // torn tails are tolerated, whether the payload or the header is hit.
    #[test]
    fn damage_before_intact_record_is_corruption() {
        let clean = write_log(&[b"first", b"second", b"third"]);
        for flip in [HEADER_BYTES + HEADER_BYTES + 5 + 2, HEADER_BYTES + 5 + 1] {
            let mut bytes = clean.clone();
            bytes[flip] ^= 0x40;
            let err = read_all(&bytes, true).expect_err("must be corruption");
            assert!(matches!(err, EngineError::Corruption { .. }), "{err}");
        }
    }
}
