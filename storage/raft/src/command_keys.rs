//! The keys a command names: the one its request record is kept beside,
//! and whether a group's span holds them all (`crate::range`).

use crate::command::{Command, Op};
use crate::range::KeySpan;
use crate::txn::TxnOp;

impl Command {
    /// The key a write's request record is kept beside (`keys`), so that
    /// it moves with that key when a group is split: the first key the
    /// command names (a transaction's first compare, else its first
    /// operation; a range read's start). `None` for commands that name no
    /// key: their records stay with their group.
    pub fn anchor(&self) -> Option<&[u8]> {
        match self {
            Command::Put { key, .. }
            | Command::Delete { key }
            | Command::Cas { key, .. }
            | Command::PutLeased { key, .. }
            | Command::PutWithTtl { key, .. } => Some(key),
            Command::Batch(ops) => ops.first().map(|op| match op {
                Op::Put { key, .. } | Op::Delete { key } => key.as_slice(),
            }),
            Command::Txn(txn) => txn.compares.first().map(|c| c.key.as_slice()).or_else(|| {
                txn.success
                    .iter()
                    .chain(&txn.failure)
                    .next()
                    .map(|op| match op {
                        TxnOp::Put { key, .. } | TxnOp::Delete { key } | TxnOp::Get { key } => {
                            key.as_slice()
                        }
                        TxnOp::Range { start, .. } => start.as_slice(),
                    })
            }),
            Command::LeaseGrant { .. }
            | Command::LeaseRevoke { .. }
            | Command::ClusterId { .. }
            | Command::Split { .. }
            | Command::NewGroupId => None,
        }
    }

    /// The first key the command names that `span` does not hold (for a
    /// range read of a transaction: its start, when the span does not cover
    /// all of it), if any. Lease grants and revokes and the cluster's name
    /// name no key (a revoke deletes only the keys its group recorded
    /// under the lease, which are in its span); a split names its split
    /// key, which it checks itself.
    pub fn key_outside(&self, span: &KeySpan) -> Option<Vec<u8>> {
        let outside = |k: &Vec<u8>| (!span.contains(k)).then(|| k.clone());
        match self {
            Command::Put { key, .. }
            | Command::Delete { key }
            | Command::Cas { key, .. }
            | Command::PutLeased { key, .. }
            | Command::PutWithTtl { key, .. } => outside(key),
            Command::Batch(ops) => ops.iter().find_map(|op| match op {
                Op::Put { key, .. } | Op::Delete { key } => outside(key),
            }),
            Command::Txn(txn) => txn
                .compares
                .iter()
                .find_map(|c| outside(&c.key))
                .or_else(|| {
                    txn.success
                        .iter()
                        .chain(&txn.failure)
                        .find_map(|op| match op {
                            TxnOp::Put { key, .. } | TxnOp::Delete { key } | TxnOp::Get { key } => {
                                outside(key)
                            }
                            TxnOp::Range { start, end, .. } => {
                                let end = (!end.is_empty()).then_some(end.as_slice());
                                (!span.covers(start, end)).then(|| start.clone())
                            }
                        })
                }),
            Command::LeaseGrant { .. }
            | Command::LeaseRevoke { .. }
            | Command::ClusterId { .. }
            | Command::Split { .. }
            | Command::NewGroupId => None,
        }
    }

    /// Whether the command puts a key under a lease, or under a TTL (which
    /// grants one).
    pub fn names_lease(&self) -> bool {
        match self {
            Command::PutLeased { .. } | Command::PutWithTtl { .. } => true,
            Command::Txn(txn) => txn
                .success
                .iter()
                .chain(&txn.failure)
                .any(|op| matches!(op, TxnOp::Put { lease, .. } if *lease != 0)),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::txn::{Compare, CompareTarget, Txn};

    fn span(start: &str, end: Option<&str>) -> KeySpan {
        KeySpan {
            start: start.into(),
            end: end.map(Into::into),
        }
    }

    #[test]
    fn the_anchor_is_the_first_key_named_and_none_for_keyless_commands() {
        // Proves: a batch anchors at its first operation, a transaction at
        // its first compare, else its first operation (a range read at its
        // start); lease and cluster commands have no anchor.
        let batch = Command::Batch(vec![
            Op::Delete { key: "b".into() },
            Op::Put {
                key: "a".into(),
                value: "v".into(),
            },
        ]);
        assert_eq!(batch.anchor(), Some(&b"b"[..]));
        let range = TxnOp::Range {
            start: "r".into(),
            end: "".into(),
            limit: 1,
        };
        let txn = |compares: Vec<Compare>| {
            Command::Txn(Txn {
                compares,
                success: vec![],
                failure: vec![range.clone()],
            })
        };
        assert_eq!(txn(vec![]).anchor(), Some(&b"r"[..]));
        let compare = Compare {
            key: "c".into(),
            target: CompareTarget::Exists(true),
        };
        assert_eq!(txn(vec![compare]).anchor(), Some(&b"c"[..]));
        assert_eq!(Command::Batch(vec![]).anchor(), None);
        assert_eq!(Command::LeaseRevoke { id: 1 }.anchor(), None);
        assert_eq!(Command::ClusterId { id: 1 }.anchor(), None);
    }

    #[test]
    fn a_key_outside_the_span_is_named_and_a_range_read_must_fit_whole() {
        // Proves: the first key outside the span is named, whichever branch
        // of a transaction holds it; a range read that starts inside but
        // runs past the span's end is outside (named by its start).
        let s = span("b", Some("m"));
        let put = |k: &str| Command::Put {
            key: k.into(),
            value: "v".into(),
        };
        assert_eq!(put("c").key_outside(&s), None);
        assert_eq!(put("m").key_outside(&s), Some(b"m".to_vec()));
        let read = |end: &str| {
            Command::Txn(Txn {
                compares: vec![],
                success: vec![TxnOp::Get { key: "c".into() }],
                failure: vec![TxnOp::Range {
                    start: "d".into(),
                    end: end.into(),
                    limit: 10,
                }],
            })
        };
        assert_eq!(read("k").key_outside(&s), None);
        assert_eq!(read("").key_outside(&s), Some(b"d".to_vec()));
        assert_eq!(read("z").key_outside(&s), Some(b"d".to_vec()));
        assert_eq!(
            Command::LeaseRevoke { id: 1 }.key_outside(&span("x", None)),
            None
        );
    }

    #[test]
    fn a_lease_is_named_by_leased_puts_and_ttls_only() {
        // Proves: a leased put, a put with a TTL and a transaction putting a
        // key under a lease name one; a plain put, a transaction without a
        // leased put, and a revoke (which names no key) do not.
        let leased = |lease: u64| {
            Command::Txn(Txn {
                compares: vec![],
                success: vec![TxnOp::Get { key: "a".into() }],
                failure: vec![TxnOp::Put {
                    key: "b".into(),
                    value: "v".into(),
                    lease,
                }],
            })
        };
        assert!(leased(7).names_lease());
        assert!(!leased(0).names_lease());
        let key = Vec::from("k");
        let value = Vec::from("v");
        assert!(
            Command::PutLeased {
                key: key.clone(),
                value: value.clone(),
                lease: 3
            }
            .names_lease()
        );
        assert!(
            Command::PutWithTtl {
                key: key.clone(),
                value: value.clone(),
                ttl_ms: 1000
            }
            .names_lease()
        );
        assert!(!Command::Put { key, value }.names_lease());
        assert!(!Command::LeaseRevoke { id: 3 }.names_lease());
    }
}
