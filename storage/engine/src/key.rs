//! Internal keys: a user key followed by an 8-byte trailer holding the
//! sequence number and the entry kind.
//!
//! Internal keys sort by user key ascending, then by sequence number
//! descending, so the newest version of a key comes first.

use std::cmp::Ordering;

use strata_arena::KeyComparator;

/// A write's position in the engine's total order of writes.
pub type SeqNo = u64;

/// Largest sequence number that fits beside the kind byte in a trailer.
pub const MAX_SEQ_NO: SeqNo = (1 << 56) - 1;

/// Length of the trailer appended to every user key.
pub(crate) const TRAILER_BYTES: usize = 8;

/// What an internal key records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum ValueKind {
    /// The key was deleted; hides older versions.
    Tombstone = 0,
    /// The key holds a value.
    Put = 1,
}

impl ValueKind {
    pub(crate) fn from_u8(b: u8) -> Option<ValueKind> {
        match b {
            0 => Some(ValueKind::Tombstone),
            1 => Some(ValueKind::Put),
            _ => None,
        }
    }
}

/// An internal key split into its parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ParsedKey<'a> {
    pub(crate) user_key: &'a [u8],
    pub(crate) seq: SeqNo,
    pub(crate) kind: ValueKind,
}

/// Appends the internal key for `(user_key, seq, kind)` to `buf`.
pub(crate) fn encode_internal_key(buf: &mut Vec<u8>, user_key: &[u8], seq: SeqNo, kind: ValueKind) {
    assert!(
        seq <= MAX_SEQ_NO,
        "sequence number {seq} overflows the trailer"
    );
    buf.extend_from_slice(user_key);
    buf.extend_from_slice(&((seq << 8) | kind as u64).to_le_bytes());
}

/// Returns the internal key for `(user_key, seq, kind)`.
pub(crate) fn internal_key(user_key: &[u8], seq: SeqNo, kind: ValueKind) -> Vec<u8> {
    let mut buf = Vec::with_capacity(user_key.len() + TRAILER_BYTES);
    encode_internal_key(&mut buf, user_key, seq, kind);
    buf
}

/// The smallest internal key for `user_key` that is visible at `read point`:
/// seeking to it lands on the newest version with `seq <= read point`.
pub(crate) fn lookup_key(user_key: &[u8], read_seq: SeqNo) -> Vec<u8> {
    internal_key(user_key, read_seq, ValueKind::Put)
}

/// The trailer of an internal key; 0 for a key too short to have one.
fn trailer(ikey: &[u8]) -> u64 {
    ikey.len()
        .checked_sub(TRAILER_BYTES)
        .and_then(|start| ikey[start..].try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// Splits an internal key; `None` if it is too short or has an unknown kind.
pub(crate) fn parse_internal_key(ikey: &[u8]) -> Option<ParsedKey<'_>> {
    if ikey.len() < TRAILER_BYTES {
        return None;
    }
    let t = trailer(ikey);
    Some(ParsedKey {
        user_key: &ikey[..ikey.len() - TRAILER_BYTES],
        seq: t >> 8,
        kind: ValueKind::from_u8(t as u8)?,
    })
}

/// The user-key part of an internal key. Total, so that comparing a
/// malformed key read from a damaged file cannot panic: a key shorter than
/// a trailer has an empty user key, and `parse_internal_key` reports it.
pub(crate) fn user_key(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len().saturating_sub(TRAILER_BYTES)]
}

/// Orders internal keys: user key ascending, then trailer descending.
pub(crate) fn compare_internal_keys(a: &[u8], b: &[u8]) -> Ordering {
    user_key(a)
        .cmp(user_key(b))
        .then_with(|| trailer(b).cmp(&trailer(a)))
}

/// [`compare_internal_keys`] as a skiplist comparator.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct InternalKeyComparator;

impl KeyComparator for InternalKeyComparator {
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        compare_internal_keys(a, b)
    }

    /// Internal keys order by user key first, so the user key's bytewise
    /// prefix orders them too.
    fn prefix(&self, key: &[u8]) -> u64 {
        strata_arena::bytewise_prefix(user_key(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves the ordering: user key first, then newer sequence numbers first,
    // and a user key that is a prefix of another sorts before it.
    #[test]
    fn internal_keys_order_by_user_key_then_newest_first() {
        let a5 = internal_key(b"a", 5, ValueKind::Put);
        let a7 = internal_key(b"a", 7, ValueKind::Tombstone);
        let ab1 = internal_key(b"ab", 1, ValueKind::Put);
        assert_eq!(compare_internal_keys(&a7, &a5), Ordering::Less);
        assert_eq!(compare_internal_keys(&a5, &ab1), Ordering::Less);
        assert_eq!(
            compare_internal_keys(&lookup_key(b"a", 6), &a5),
            Ordering::Less
        );
        assert_eq!(
            compare_internal_keys(&a7, &lookup_key(b"a", 6)),
            Ordering::Less
        );
        let parsed = parse_internal_key(&a7).expect("valid key");
        assert_eq!(
            parsed,
            ParsedKey {
                user_key: b"a",
                seq: 7,
                kind: ValueKind::Tombstone
            }
        );
        assert!(parse_internal_key(b"short").is_none());
    }
}
