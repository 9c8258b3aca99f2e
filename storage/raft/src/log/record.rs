//! The framing of one raft log record.
//!
//! ```text
//! +-----------+-----------+--------+-----------------+
//! | crc32 u32 | len u32   | kind u8| payload (len B) |
//! +-----------+-----------+--------+-----------------+
//! ```
//! Integers are little-endian. The checksum covers `kind` and the payload.

use protobuf::Message as _;
use raft::eraftpb::Entry;

/// The header size in bytes: crc, length and kind.
pub const HEADER_BYTES: usize = 9;

/// Records larger than this are rejected on both sides; a length above it is
/// corruption, not a reason to allocate.
pub const MAX_RECORD_BYTES: usize = 256 << 20;

/// What a record holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum RecordKind {
    /// A run of consecutive entries; the first one truncates any entries at or
    /// after its index.
    Entries = 1,
    /// The latest hard state (term, vote, commit).
    HardState = 2,
    /// The latest configuration state (voters, learners).
    ConfState = 3,
    /// Entries up to and including this index and term were discarded;
    /// later entries are kept (log compaction).
    Compacted = 4,
    /// A snapshot was installed: every entry is discarded and the log
    /// continues after the snapshot's index (raft-rs `SnapshotMetadata`).
    Snapshot = 5,
}

impl RecordKind {
    fn from_u8(b: u8) -> Option<Self> {
        match b {
            1 => Some(RecordKind::Entries),
            2 => Some(RecordKind::HardState),
            3 => Some(RecordKind::ConfState),
            4 => Some(RecordKind::Compacted),
            5 => Some(RecordKind::Snapshot),
            _ => None,
        }
    }
}

/// Appends one framed record to `out`.
pub fn encode(kind: RecordKind, payload: &[u8], out: &mut Vec<u8>) {
    assert!(payload.len() <= MAX_RECORD_BYTES, "raft record too large");
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&[kind as u8]);
    hasher.update(payload);
    out.extend_from_slice(&hasher.finalize().to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.push(kind as u8);
    out.extend_from_slice(payload);
}

/// The outcome of decoding at one offset.
#[derive(Debug, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// A whole, valid record and the number of bytes it used.
    Record {
        kind: RecordKind,
        payload: &'a [u8],
        size: usize,
    },
    /// The buffer ends inside a record: a torn write if this is the tail.
    Incomplete,
    /// The bytes are not a valid record.
    Invalid(&'static str),
}

/// Decodes the record at the start of `buf`.
pub fn decode(buf: &[u8]) -> Decoded<'_> {
    if buf.len() < HEADER_BYTES {
        return Decoded::Incomplete;
    }
    let crc = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]);
    let len = u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]) as usize;
    if len > MAX_RECORD_BYTES {
        return Decoded::Invalid("record length out of range");
    }
    if buf.len() < HEADER_BYTES + len {
        return Decoded::Incomplete;
    }
    let body = &buf[8..HEADER_BYTES + len];
    if crc32fast::hash(body) != crc {
        return Decoded::Invalid("checksum mismatch");
    }
    match RecordKind::from_u8(body[0]) {
        Some(kind) => Decoded::Record {
            kind,
            payload: &body[1..],
            size: HEADER_BYTES + len,
        },
        None => Decoded::Invalid("unknown record kind"),
    }
}

/// The payload of an Entries record: each entry's protobuf encoding after
/// its length (u32, little-endian).
pub fn encode_entries(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        let bytes = e.write_to_bytes().expect("entry encodes");
        out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(&bytes);
    }
    out
}

/// Reads an Entries record's payload; the entries must be consecutive.
pub fn decode_entries(mut buf: &[u8]) -> Result<Vec<Entry>, String> {
    let mut out: Vec<Entry> = Vec::new();
    while !buf.is_empty() {
        if buf.len() < 4 {
            return Err("entry length cut short".into());
        }
        let len = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
        let body = buf.get(4..4 + len).ok_or("entry body cut short")?;
        let entry = Entry::parse_from_bytes(body).map_err(|e| format!("entry: {e}"))?;
        if let Some(prev) = out.last()
            && prev.index + 1 != entry.index
        {
            return Err(format!("entry {} follows {}", entry.index, prev.index));
        }
        out.push(entry);
        buf = &buf[4 + len..];
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_round_trips() {
        let mut buf = Vec::new();
        encode(RecordKind::HardState, b"hello", &mut buf);
        encode(RecordKind::Entries, b"", &mut buf);
        let Decoded::Record {
            kind,
            payload,
            size,
        } = decode(&buf)
        else {
            panic!("first record did not decode");
        };
        assert_eq!((kind, payload), (RecordKind::HardState, &b"hello"[..]));
        assert_eq!(
            decode(&buf[size..]),
            Decoded::Record {
                kind: RecordKind::Entries,
                payload: b"",
                size: HEADER_BYTES
            }
        );
    }

    #[test]
    fn every_cut_of_a_record_is_incomplete() {
        let mut buf = Vec::new();
        encode(RecordKind::ConfState, b"voters", &mut buf);
        for cut in 0..buf.len() {
            assert_eq!(decode(&buf[..cut]), Decoded::Incomplete, "cut at {cut}");
        }
    }

    #[test]
    fn flipped_bit_is_detected() {
        let mut buf = Vec::new();
        encode(RecordKind::Entries, b"payload", &mut buf);
        for i in 0..buf.len() {
            let mut bad = buf.clone();
            bad[i] ^= 0x10;
            assert!(
                !matches!(decode(&bad), Decoded::Record { payload, .. } if payload == b"payload"),
                "flip at byte {i} went unnoticed"
            );
        }
    }
}
