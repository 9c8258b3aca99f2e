//! Write batches and their encoding, which is also the WAL record payload.
//!
//! Encoded form (see `docs/format.md`): `seq: u64 LE | count: u32 LE` then
//! `count` entries of `kind: u8 | key: varint len + bytes | value: varint len
//! + bytes (puts only)`.

use crate::coding::{Decoder, put_length_prefixed};
use crate::error::{EngineError, Result};
use crate::key::{SeqNo, ValueKind};

/// Bytes before the entries in an encoded batch.
pub(crate) const BATCH_HEADER_BYTES: usize = 12;

/// A group of puts and deletes applied atomically by [`crate::Engine::write`].
#[derive(Default, Clone, Debug)]
pub struct WriteBatch {
    /// Encoded entries, without the header.
    entries: Vec<u8>,
    count: u32,
}

impl WriteBatch {
    /// Creates an empty batch.
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }

    /// Adds `key -> value`.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.entries.push(ValueKind::Put as u8);
        put_length_prefixed(&mut self.entries, key);
        put_length_prefixed(&mut self.entries, value);
        self.count += 1;
    }

    /// Adds a deletion of `key`.
    pub fn delete(&mut self, key: &[u8]) {
        self.entries.push(ValueKind::Tombstone as u8);
        put_length_prefixed(&mut self.entries, key);
        self.count += 1;
    }

    /// Number of operations in the batch.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether the batch has no operations.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Size of the batch's encoding.
    pub fn approximate_size_bytes(&self) -> usize {
        BATCH_HEADER_BYTES + self.entries.len()
    }

    /// Removes all operations, keeping the buffer.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.count = 0;
    }

    /// Writes the full encoding (header with `first_seq`, then entries) into `buf`.
    pub(crate) fn encode_into(&self, first_seq: SeqNo, buf: &mut Vec<u8>) {
        buf.clear();
        buf.extend_from_slice(&first_seq.to_le_bytes());
        buf.extend_from_slice(&self.count.to_le_bytes());
        buf.extend_from_slice(&self.entries);
    }

    /// Iterates the operations of this (trusted, in-memory) batch.
    pub(crate) fn ops(&self) -> BatchOps<'_> {
        BatchOps {
            decoder: Decoder::new(&self.entries),
            left: self.count,
        }
    }
}

/// One operation of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BatchOp<'a> {
    pub(crate) kind: ValueKind,
    pub(crate) key: &'a [u8],
    pub(crate) value: &'a [u8],
}

/// Iterator over a batch's operations; yields an error on malformed input.
pub(crate) struct BatchOps<'a> {
    decoder: Decoder<'a>,
    left: u32,
}

impl<'a> Iterator for BatchOps<'a> {
    type Item = Result<BatchOp<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return (!self.decoder.is_empty())
                .then(|| Err(EngineError::corruption("batch has trailing bytes")));
        }
        self.left -= 1;
        Some(
            decode_op(&mut self.decoder)
                .ok_or_else(|| EngineError::corruption("batch entry is malformed")),
        )
    }
}

fn decode_op<'a>(d: &mut Decoder<'a>) -> Option<BatchOp<'a>> {
    let kind = ValueKind::from_u8(d.u8()?)?;
    let key = d.length_prefixed()?;
    let value = match kind {
        ValueKind::Put => d.length_prefixed()?,
        ValueKind::Tombstone => &[],
    };
    Some(BatchOp { kind, key, value })
}

/// Splits an encoded batch read from the WAL into its first sequence number,
/// its count and its operations.
pub(crate) fn decode_batch(payload: &[u8]) -> Result<(SeqNo, u32, BatchOps<'_>)> {
    let mut d = Decoder::new(payload);
    let (Some(seq), Some(count)) = (d.u64(), d.u32()) else {
        return Err(EngineError::corruption("batch header is truncated"));
    };
    Ok((
        seq,
        count,
        BatchOps {
            decoder: d,
            left: count,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves that a batch encodes and decodes to the same operations.
    #[test]
    fn batch_round_trips_through_encoding() {
        let mut batch = WriteBatch::new();
        batch.put(b"k1", b"v1");
        batch.delete(b"k2");
        batch.put(b"", b"");
        let mut buf = Vec::new();
        batch.encode_into(42, &mut buf);
        assert_eq!(buf.len(), batch.approximate_size_bytes());
        let (seq, count, ops) = decode_batch(&buf).expect("valid batch");
        assert_eq!((seq, count), (42, 3));
        let ops: Vec<_> = ops.collect::<Result<_>>().expect("valid ops");
        assert_eq!(
            ops,
            batch.ops().collect::<Result<Vec<_>>>().expect("valid ops")
        );
        assert_eq!(
            ops[1],
            BatchOp {
                kind: ValueKind::Tombstone,
                key: b"k2",
                value: b""
            }
        );
    }

    // Proves that truncated and padded encodings are reported as corruption.
    #[test]
    fn malformed_batch_is_corruption() {
        let mut batch = WriteBatch::new();
        batch.put(b"key", b"value");
        let mut buf = Vec::new();
        batch.encode_into(1, &mut buf);
        let (_, _, ops) = decode_batch(&buf[..buf.len() - 1]).expect("header is intact");
        assert!(ops.collect::<Result<Vec<_>>>().is_err());
        buf.push(0);
        let (_, _, ops) = decode_batch(&buf).expect("header is intact");
        assert!(ops.collect::<Result<Vec<_>>>().is_err());
        assert!(decode_batch(&buf[..5]).is_err());
        batch.clear();
        assert!(batch.is_empty());
    }
}
