//! The raft log's records on the shared checksummed framing
//! (`strata_fs::log`): each framed payload is a kind byte followed by the
//! record's body.
//!
//! ```text
//! +-----------+-------------------+------------------+---------+------------------+
//! | len u32   | payload_crc u32   | header_crc u32   | kind u8 | body (len - 1 B) |
//! +-----------+-------------------+------------------+---------+------------------+
//! ```
//! Integers are little-endian; `payload_crc` covers the kind and the body,
//! `header_crc` the first eight header bytes.

use protobuf::Message as _;
use raft::eraftpb::Entry;
use strata_fs::log::{LogReader, encode_record_parts};

pub use strata_fs::log::HEADER_BYTES;

/// Framed payloads (kind byte and body) larger than this are refused on
/// both sides: the writer asserts, and a reader treats a header declaring
/// more as corruption rather than a reason to allocate or a torn write.
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
///
/// # Panics
/// If the body is larger than [`MAX_RECORD_BYTES`] allows.
pub fn encode(kind: RecordKind, body: &[u8], out: &mut Vec<u8>) {
    assert!(body.len() < MAX_RECORD_BYTES, "raft record too large");
    encode_record_parts(out, &[&[kind as u8], body]);
}

/// Reads the records of one segment's bytes, tolerating a torn tail only
/// when asked (the newest segment), with the [`MAX_RECORD_BYTES`] guard.
pub fn reader(bytes: &[u8], tolerate_torn_tail: bool) -> LogReader<'_> {
    LogReader::new(bytes, tolerate_torn_tail).max_payload_bytes(MAX_RECORD_BYTES)
}

/// Splits an intact record's payload into its kind and body. A payload
/// that passed its checksum but has no known kind was written by something
/// else: corruption.
pub fn decode_payload(payload: &[u8]) -> Result<(RecordKind, &[u8]), &'static str> {
    let (&kind, body) = payload.split_first().ok_or("empty record")?;
    let kind = RecordKind::from_u8(kind).ok_or("unknown record kind")?;
    Ok((kind, body))
}

/// Appends one entry to an Entries record's body: its protobuf encoding
/// after its length (u32, little-endian).
fn push_entry(e: &Entry, body: &mut Vec<u8>) {
    let bytes = e.write_to_bytes().expect("entry encodes");
    body.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    body.extend_from_slice(&bytes);
}

/// Frames consecutive `entries` as Entries records whose bodies hold at
/// most `max_body_bytes` each; an entry larger than that gets a record of
/// its own. Returns how many records it framed.
///
/// Each record replays by itself (its first entry truncates the log from
/// its index, and each one after the first continues where the one before
/// ended), so a crash between two of them keeps a prefix of the entries,
/// as a torn write of one record would.
///
/// # Panics
/// If one entry alone is larger than [`MAX_RECORD_BYTES`] allows.
pub fn encode_entries_records(
    entries: &[Entry],
    max_body_bytes: usize,
    out: &mut Vec<u8>,
) -> usize {
    let mut records = 0;
    let mut body = Vec::new();
    let mut one = Vec::new();
    for e in entries {
        one.clear();
        push_entry(e, &mut one);
        if !body.is_empty() && body.len() + one.len() > max_body_bytes {
            encode(RecordKind::Entries, &body, out);
            records += 1;
            body.clear();
        }
        body.extend_from_slice(&one);
    }
    if !body.is_empty() {
        encode(RecordKind::Entries, &body, out);
        records += 1;
    }
    records
}

/// Reads an Entries record's body; the entries must be consecutive.
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
    use strata_fs::log::LogCorruption;

    use super::*;

    /// The kinds and bodies of the records in `bytes`, which must be intact.
    fn read(bytes: &[u8]) -> Vec<(RecordKind, Vec<u8>)> {
        reader(bytes, false)
            .map(|r| {
                let r = r.expect("intact record");
                let (kind, body) = decode_payload(r.payload).expect("known kind");
                (kind, body.to_vec())
            })
            .collect()
    }

    // Proves that records round-trip with their kind, including an empty body.
    #[test]
    fn record_round_trips() {
        let mut buf = Vec::new();
        encode(RecordKind::HardState, b"hello", &mut buf);
        encode(RecordKind::Entries, b"", &mut buf);
        assert_eq!(
            read(&buf),
            vec![
                (RecordKind::HardState, b"hello".to_vec()),
                (RecordKind::Entries, Vec::new())
            ]
        );
        assert_eq!(buf.len(), 2 * (HEADER_BYTES + 1) + 5);
    }

    // Proves that a record cut anywhere is a torn tail where tolerated and
    // damage where not, never a record.
    #[test]
    fn every_cut_of_a_record_is_a_torn_tail() {
        let mut buf = Vec::new();
        encode(RecordKind::ConfState, b"voters", &mut buf);
        for cut in 1..buf.len() {
            let mut torn = reader(&buf[..cut], true);
            assert_eq!(torn.next(), None, "cut at {cut}");
            assert!(torn.end().expect("tolerated").torn_tail);
            assert_eq!(
                reader(&buf[..cut], false).next(),
                Some(Err(LogCorruption::Damaged { offset: 0 }))
            );
        }
    }

    // Proves that every flipped bit is detected: the record never reads
    // back as the payload that was written.
    #[test]
    fn flipped_bit_is_detected() {
        let mut buf = Vec::new();
        encode(RecordKind::Entries, b"payload", &mut buf);
        for i in 0..buf.len() {
            for bit in 0..8 {
                let mut bad = buf.clone();
                bad[i] ^= 1 << bit;
                let read_back = reader(&bad, true).next();
                assert!(
                    !matches!(read_back, Some(Ok(r)) if r.payload.ends_with(b"payload")),
                    "flip of bit {bit} in byte {i} went unnoticed"
                );
            }
        }
    }

    // Proves that an intact record with no kind, or an unknown one, is
    // refused.
    #[test]
    fn unknown_kind_is_refused() {
        assert_eq!(decode_payload(b""), Err("empty record"));
        assert_eq!(decode_payload(&[9, 1, 2]), Err("unknown record kind"));
        assert_eq!(
            decode_payload(&[4, 1, 2]),
            Ok((RecordKind::Compacted, &[1u8, 2][..]))
        );
    }

    // Proves the writer's side of the size guard.
    #[test]
    #[should_panic(expected = "raft record too large")]
    fn oversized_record_is_refused_by_the_writer() {
        let body = vec![0u8; MAX_RECORD_BYTES];
        encode(RecordKind::Entries, &body, &mut Vec::new());
    }
}
