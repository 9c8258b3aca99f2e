//! How user keys and replica metadata map onto engine keys.
//!
//! Every engine key starts with a one-byte namespace and a big-endian id,
//! so that many groups share one engine:
//! - `d | space | user key` holds user data. `space` is the group's own id
//!   for a group that was never split off another, else the space of the
//!   group it was split from (meta item `data_space`): a split moves no
//!   key, and which group serves a key is said by the groups' spans (meta
//!   item `range_span`, `crate::range`), not by where the key is stored;
//! - `m | group | name` holds replica metadata such as the applied index;
//! - `h | group | index | seq` holds the change history watchers read: the
//!   `seq`-th put or delete that the entry at raft `index` applied (both
//!   big-endian, so the history sorts in commit order);
//! - `r | space | ordered(anchor) | request id` holds what a write carrying
//!   that client request id was answered, beside the key it names first
//!   (its anchor, `Command::anchor`), so that a split's spans divide the
//!   records as they divide the data; `ordered` keeps the anchors in key
//!   order (`push_ordered`). `i | group | request id` holds it for a write
//!   that names no key (lease grants and revokes), and held every record
//!   before records were anchored. `e | group | expires_at_ms | request id`
//!   orders a group's records by when they may be forgotten; its value says
//!   where the record is (`RequestAt`);
//! - `l | group | lease id` holds a lease's TTL, and `k | group | lease id
//!   | user key` (empty) lists the keys put under it (a key put again under
//!   another lease, or none, keeps its entry until the lease ends: the
//!   key's own record says which lease holds it).

const DATA: u8 = b'd';
const META: u8 = b'm';
const HISTORY: u8 = b'h';
const REQUEST: u8 = b'i';
const REQUEST_EXPIRY: u8 = b'e';
const LEASE: u8 = b'l';
const LEASE_KEY: u8 = b'k';
const ANCHORED_REQUEST: u8 = b'r';

/// The first engine key after every group's metadata.
pub fn meta_end() -> Vec<u8> {
    vec![META + 1]
}

/// The group a metadata key belongs to.
pub fn meta_group(engine_key: &[u8]) -> Option<u64> {
    if engine_key.first() != Some(&META) {
        return None;
    }
    Some(u64::from_be_bytes(engine_key.get(1..9)?.try_into().ok()?))
}

/// The engine key of a user key in data space `group`.
pub fn data_key(group: u64, user_key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(9 + user_key.len());
    k.push(DATA);
    k.extend_from_slice(&group.to_be_bytes());
    k.extend_from_slice(user_key);
    k
}

/// The first engine key of `group`'s data.
pub fn data_start(group: u64) -> Vec<u8> {
    data_key(group, b"")
}

/// The first engine key after `group`'s data.
pub fn data_end(group: u64) -> Vec<u8> {
    match group.checked_add(1) {
        Some(next) => data_key(next, b""),
        None => vec![DATA + 1],
    }
}

/// Strips the namespace and group from a data key.
pub fn user_key(engine_key: &[u8]) -> &[u8] {
    &engine_key[9..]
}

/// The engine key of a metadata item of `group`.
pub fn meta_key(group: u64, name: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(9 + name.len());
    k.push(META);
    k.extend_from_slice(&group.to_be_bytes());
    k.extend_from_slice(name.as_bytes());
    k
}

/// The engine key of the `seq`-th change applied at raft `index` in
/// `group`.
pub fn history_key(group: u64, index: u64, seq: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(21);
    k.push(HISTORY);
    k.extend_from_slice(&group.to_be_bytes());
    k.extend_from_slice(&index.to_be_bytes());
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// The first engine key after `group`'s history.
pub fn history_end(group: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(9);
    match group.checked_add(1) {
        Some(next) => {
            k.push(HISTORY);
            k.extend_from_slice(&next.to_be_bytes());
        }
        None => k.push(HISTORY + 1),
    }
    k
}

/// The raft index and sequence number a history key names, if it is one.
pub fn history_position(engine_key: &[u8]) -> Option<(u64, u32)> {
    if engine_key.len() != 21 || engine_key[0] != HISTORY {
        return None;
    }
    let index = u64::from_be_bytes(engine_key[9..17].try_into().ok()?);
    let seq = u32::from_be_bytes(engine_key[17..21].try_into().ok()?);
    Some((index, seq))
}

/// The engine key of the record of client request id `id` in `group`.
pub fn request_key(group: u64, id: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(9 + id.len());
    k.push(REQUEST);
    k.extend_from_slice(&group.to_be_bytes());
    k.extend_from_slice(id);
    k
}

/// Appends `bytes` so that encodings sort as the bytes do and none is a
/// prefix of another: each 0x00 becomes 0x00 0xff, and 0x00 0x01 ends it.
fn push_ordered(out: &mut Vec<u8>, bytes: &[u8]) {
    push_ordered_open(out, bytes);
    out.extend_from_slice(&[0, 1]);
}

/// [`push_ordered`] without the end: sorts before the encoding of `bytes`
/// and of every key after it, and after every key before it.
fn push_ordered_open(out: &mut Vec<u8>, bytes: &[u8]) {
    for &b in bytes {
        out.push(b);
        if b == 0 {
            out.push(0xff);
        }
    }
}

/// The engine key of the record of request id `id`, whose write names
/// `anchor` first, in data space `space`.
pub fn anchored_request_key(space: u64, anchor: &[u8], id: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(12 + anchor.len() + id.len());
    k.push(ANCHORED_REQUEST);
    k.extend_from_slice(&space.to_be_bytes());
    push_ordered(&mut k, anchor);
    k.extend_from_slice(id);
    k
}

/// `[lo, hi)` of the request records in `space` whose anchors `span` holds.
pub fn anchored_requests(space: u64, span: &KeySpan) -> (Vec<u8>, Vec<u8>) {
    let mut lo = vec![ANCHORED_REQUEST];
    lo.extend_from_slice(&space.to_be_bytes());
    let hi = match &span.end {
        Some(end) => {
            let mut hi = lo.clone();
            push_ordered_open(&mut hi, end);
            hi
        }
        None => group_range(ANCHORED_REQUEST, space).1,
    };
    push_ordered_open(&mut lo, &span.start);
    (lo, hi)
}

/// Where a group's record of a request id is, as its expiry queue entry
/// says (the entry's value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestAt {
    /// `i | group | id`: a write that names no key, or one recorded before
    /// records were anchored (an empty value).
    Group,
    /// `r | space | anchor | id`.
    Anchored(Vec<u8>),
}

impl RequestAt {
    /// The queue entry's value.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            RequestAt::Group => vec![0],
            RequestAt::Anchored(anchor) => {
                let mut v = Vec::with_capacity(1 + anchor.len());
                v.push(1);
                v.extend_from_slice(anchor);
                v
            }
        }
    }

    pub fn decode(v: &[u8]) -> Option<Self> {
        match v.split_first() {
            None | Some((0, [])) => Some(RequestAt::Group),
            Some((1, anchor)) => Some(RequestAt::Anchored(anchor.to_vec())),
            _ => None,
        }
    }
}

/// `[start, end)` of the keys of namespace `ns` in `group`.
fn group_range(ns: u8, group: u64) -> (Vec<u8>, Vec<u8>) {
    let mut lo = vec![ns];
    lo.extend_from_slice(&group.to_be_bytes());
    let hi = match group.checked_add(1) {
        Some(next) => {
            let mut hi = vec![ns];
            hi.extend_from_slice(&next.to_be_bytes());
            hi
        }
        None => vec![ns + 1],
    };
    (lo, hi)
}

/// `[start, end)` of `group`'s request records.
pub fn request_range(group: u64) -> (Vec<u8>, Vec<u8>) {
    group_range(REQUEST, group)
}

/// `[start, end)` of `group`'s request expiry queue.
pub fn request_expiry_range(group: u64) -> (Vec<u8>, Vec<u8>) {
    group_range(REQUEST_EXPIRY, group)
}

/// The engine key that queues request id `id`'s record in `group` to be
/// forgotten at `expires_at_ms`.
pub fn request_expiry_key(group: u64, expires_at_ms: u64, id: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(17 + id.len());
    k.push(REQUEST_EXPIRY);
    k.extend_from_slice(&group.to_be_bytes());
    k.extend_from_slice(&expires_at_ms.to_be_bytes());
    k.extend_from_slice(id);
    k
}

/// The expiry time and request id an expiry key names.
pub fn request_expiry(engine_key: &[u8]) -> Option<(u64, &[u8])> {
    if engine_key.len() < 17 || engine_key[0] != REQUEST_EXPIRY {
        return None;
    }
    let at = u64::from_be_bytes(engine_key[9..17].try_into().ok()?);
    Some((at, &engine_key[17..]))
}

/// The engine key of lease `id` of `group`.
pub fn lease_key(group: u64, id: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(17);
    k.push(LEASE);
    k.extend_from_slice(&group.to_be_bytes());
    k.extend_from_slice(&id.to_be_bytes());
    k
}

/// The lease id a lease key names.
pub fn lease_id(engine_key: &[u8]) -> Option<u64> {
    if engine_key.len() != 17 || engine_key[0] != LEASE {
        return None;
    }
    Some(u64::from_be_bytes(engine_key[9..17].try_into().ok()?))
}

/// `[start, end)` of `group`'s leases.
pub fn lease_range(group: u64) -> (Vec<u8>, Vec<u8>) {
    group_range(LEASE, group)
}

/// The engine key that lists `user_key` under lease `id` of `group`.
pub fn lease_member_key(group: u64, id: u64, user_key: &[u8]) -> Vec<u8> {
    let mut k = lease_key(group, id);
    k[0] = LEASE_KEY;
    k.extend_from_slice(user_key);
    k
}

/// `[start, end)` of the keys listed under lease `id` of `group`.
pub fn lease_members_range(group: u64, id: u64) -> (Vec<u8>, Vec<u8>) {
    let lo = lease_member_key(group, id, b"");
    let hi = match id.checked_add(1) {
        Some(next) => lease_member_key(group, next, b""),
        None => group_range(LEASE_KEY, group).1,
    };
    (lo, hi)
}

/// `[start, end)` of every lease's key list in `group`.
pub fn lease_members_all(group: u64) -> (Vec<u8>, Vec<u8>) {
    group_range(LEASE_KEY, group)
}

/// The user key a lease member key names.
pub fn lease_member(engine_key: &[u8]) -> &[u8] {
    &engine_key[17..]
}

/// The exclusive end of the keys that start with a prefix (one
/// implementation, the engine's, for every layer).
pub use strata_engine::prefix_end;

use crate::range::KeySpan;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchored_records_sort_by_anchor_and_a_span_holds_exactly_its_own() {
        // Proves: a span's record range holds the records of exactly the
        // anchors the span holds, whatever bytes (zeros, 0xff, prefixes of
        // one another) the anchors and ids are made of.
        let anchors: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            vec![0],
            vec![0, 0],
            vec![0, 1],
            vec![0, 0xff],
            b"a".to_vec(),
            b"a\0".to_vec(),
            vec![b'a', 0],
            vec![b'a', 0, 1],
            b"ab".to_vec(),
            b"b".to_vec(),
            vec![0xff],
            vec![0xff, 0xff, 0],
        ];
        let ids: [&[u8]; 3] = [b"", &[0, 1], &[0xff, 0]];
        let bounds: Vec<Option<Vec<u8>>> =
            anchors.iter().cloned().map(Some).chain([None]).collect();
        for start in &anchors {
            for end in &bounds {
                if end.as_ref().is_some_and(|e| e <= start) {
                    continue;
                }
                let span = KeySpan {
                    start: start.clone(),
                    end: end.clone(),
                };
                let (lo, hi) = anchored_requests(7, &span);
                for a in &anchors {
                    for id in ids {
                        let k = anchored_request_key(7, a, id);
                        assert_eq!(
                            lo <= k && k < hi,
                            span.contains(a),
                            "anchor {a:?} id {id:?} in {span:?}"
                        );
                    }
                }
            }
        }
        let (_, hi) = anchored_requests(7, &KeySpan::all());
        assert!(anchored_request_key(8, b"", b"") >= hi);
    }

    #[test]
    fn a_queue_entry_says_where_its_record_is() {
        // Proves: the queue value round-trips; an empty value (written
        // before records were anchored) means the group's own table.
        for at in [RequestAt::Group, RequestAt::Anchored(b"k\0".to_vec())] {
            assert_eq!(RequestAt::decode(&at.encode()), Some(at));
        }
        assert_eq!(RequestAt::decode(b""), Some(RequestAt::Group));
        assert_eq!(RequestAt::decode(&[2]), None);
    }

    #[test]
    fn group_ranges_do_not_overlap() {
        let k = data_key(1, &[0xff; 8]);
        assert!(data_start(1) <= k && k < data_end(1));
        assert!(data_key(2, b"") >= data_end(1));
        assert_eq!(user_key(&data_key(5, b"abc")), b"abc");
    }

    #[test]
    fn a_leases_key_list_stays_inside_its_lease() {
        let (lo, hi) = lease_members_range(1, 7);
        let k = lease_member_key(1, 7, &[0xff; 4]);
        assert!(lo <= k && k < hi);
        assert!(lease_member_key(1, 8, b"") >= hi);
        assert_eq!(lease_member(&k), &[0xff; 4]);
        assert_eq!(lease_id(&lease_key(3, 9)), Some(9));
    }

    #[test]
    fn history_sorts_in_commit_order_within_its_group() {
        let a = history_key(1, 255, 7);
        let b = history_key(1, 256, 0);
        assert!(a < b && b < history_end(1));
        assert!(history_key(2, 0, 0) >= history_end(1));
        assert_eq!(history_position(&b), Some((256, 0)));
        assert_eq!(history_position(&data_key(1, b"x")), None);
    }
}
