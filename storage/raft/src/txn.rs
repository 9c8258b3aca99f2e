//! Transactions: compares on keys, then one of two lists of operations,
//! all decided and applied in one raft entry.
//!
//! A transaction succeeds when every compare holds; it then runs its
//! `success` operations, else its `failure` ones, in order, each seeing the
//! writes before it. Reads inside it (`Get`, `Range`) are answered from the
//! state the entry is applied to, so they are linearizable with it.
//!
//! A key that does not exist has no value (a compare on its value never
//! holds; compare `Exists` instead), and create index, mod index and lease
//! 0, as in etcd.

use crate::command::{DecodeError, Reader, put_bytes};
use crate::state_machine::Versioned;

/// How a key's field is compared with the given one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    Equal,
    NotEqual,
    Less,
    Greater,
}

impl CompareOp {
    pub fn holds<T: Ord + ?Sized>(self, actual: &T, given: &T) -> bool {
        match self {
            CompareOp::Equal => actual == given,
            CompareOp::NotEqual => actual != given,
            CompareOp::Less => actual < given,
            CompareOp::Greater => actual > given,
        }
    }
}

/// What a compare looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompareTarget {
    /// The value, bytewise; never holds for a key that does not exist.
    Value(CompareOp, Vec<u8>),
    /// Whether the key exists.
    Exists(bool),
    CreateIndex(CompareOp, u64),
    ModIndex(CompareOp, u64),
    /// The lease the key is put under (0: none).
    Lease(CompareOp, u64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compare {
    pub key: Vec<u8>,
    pub target: CompareTarget,
}

impl Compare {
    /// Whether the compare holds for `key`'s current record.
    pub fn holds(&self, current: Option<&Versioned>) -> bool {
        let (create, modified, lease) =
            current.map_or((0, 0, 0), |v| (v.create_index, v.mod_index, v.lease));
        match &self.target {
            CompareTarget::Value(op, given) => {
                current.is_some_and(|v| op.holds(v.value.as_slice(), given.as_slice()))
            }
            CompareTarget::Exists(exists) => current.is_some() == *exists,
            CompareTarget::CreateIndex(op, given) => op.holds(&create, given),
            CompareTarget::ModIndex(op, given) => op.holds(&modified, given),
            CompareTarget::Lease(op, given) => op.holds(&lease, given),
        }
    }
}

/// One operation of a branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnOp {
    /// Puts `key` under lease `lease` (0: none), which must exist.
    Put {
        key: Vec<u8>,
        value: Vec<u8>,
        lease: u64,
    },
    Delete {
        key: Vec<u8>,
    },
    Get {
        key: Vec<u8>,
    },
    /// Keys in `[start, end)` (`end` empty: to the end), at most `limit`.
    Range {
        start: Vec<u8>,
        end: Vec<u8>,
        limit: u32,
    },
}

/// The most keys one `Range` of a transaction returns.
pub const MAX_RANGE_KEYS: u32 = 1000;
/// The most bytes of keys and values all the `Range`s of one transaction
/// return together (each stops at the pair that reaches what is left, and
/// says there is more), so that no transaction makes every replica hold
/// more than this for its ranges.
pub const MAX_RANGE_BYTES: usize = 4 << 20;
/// The most reads (`Get` and `Range`) one branch of a transaction holds:
/// with [`MAX_RANGE_BYTES`], what bounds the memory a transaction's reads
/// take on every replica.
pub const MAX_TXN_READS: usize = 128;

/// What one operation of the branch that ran produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnOpResult {
    Put,
    Delete {
        existed: bool,
    },
    Get {
        found: Option<Versioned>,
    },
    Range {
        pairs: Vec<(Vec<u8>, Versioned)>,
        /// Whether keys in the range were left out (by the limit).
        more: bool,
    },
}

/// A transaction's answer: which branch ran, and its operations' results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnResult {
    pub succeeded: bool,
    pub results: Vec<TxnOpResult>,
}

/// A transaction as proposed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Txn {
    pub compares: Vec<Compare>,
    pub success: Vec<TxnOp>,
    pub failure: Vec<TxnOp>,
}

impl Txn {
    /// Bytes of keys and values, for sizing buffers and limits.
    pub fn approximate_size(&self) -> usize {
        let compares: usize = self
            .compares
            .iter()
            .map(|c| {
                c.key.len()
                    + 10
                    + match &c.target {
                        CompareTarget::Value(_, v) => v.len(),
                        _ => 8,
                    }
            })
            .sum();
        let ops: usize = self
            .success
            .iter()
            .chain(&self.failure)
            .map(|op| match op {
                TxnOp::Put { key, value, .. } => key.len() + value.len() + 17,
                TxnOp::Delete { key } | TxnOp::Get { key } => key.len() + 5,
                TxnOp::Range { start, end, .. } => start.len() + end.len() + 13,
            })
            .sum();
        compares + ops
    }

    /// Whether any operation of either branch writes.
    pub fn writes(&self) -> bool {
        self.success
            .iter()
            .chain(&self.failure)
            .any(|op| matches!(op, TxnOp::Put { .. } | TxnOp::Delete { .. }))
    }
}

fn put_versioned(out: &mut Vec<u8>, v: &Versioned) {
    put_bytes(out, &v.value);
    for n in [v.create_index, v.mod_index, v.lease] {
        out.extend_from_slice(&n.to_le_bytes());
    }
}

fn read_versioned(r: &mut Reader<'_>) -> Result<Versioned, DecodeError> {
    Ok(Versioned {
        value: r.bytes()?,
        create_index: r.u64()?,
        mod_index: r.u64()?,
        lease: r.u64()?,
    })
}

impl TxnResult {
    /// The answer as a write's request record keeps it:
    /// `succeeded u8 | count u32 | result*`, each result a tag (put 1,
    /// delete 2, get 3, range 4) and its fields.
    pub(crate) fn encode_into(&self, out: &mut Vec<u8>) {
        out.push(u8::from(self.succeeded));
        out.extend_from_slice(&(self.results.len() as u32).to_le_bytes());
        for result in &self.results {
            match result {
                TxnOpResult::Put => out.push(1),
                TxnOpResult::Delete { existed } => out.extend_from_slice(&[2, u8::from(*existed)]),
                TxnOpResult::Get { found } => {
                    out.push(3);
                    match found {
                        Some(v) => {
                            out.push(1);
                            put_versioned(out, v);
                        }
                        None => out.push(0),
                    }
                }
                TxnOpResult::Range { pairs, more } => {
                    out.extend_from_slice(&[4, u8::from(*more)]);
                    out.extend_from_slice(&(pairs.len() as u32).to_le_bytes());
                    for (k, v) in pairs {
                        put_bytes(out, k);
                        put_versioned(out, v);
                    }
                }
            }
        }
    }

    pub(crate) fn decode(buf: &[u8]) -> Result<TxnResult, DecodeError> {
        let mut r = Reader { buf };
        let succeeded = r.u8()? == 1;
        let n = r.u32()? as usize;
        if n > r.buf.len() {
            return Err(DecodeError("result count exceeds the buffer"));
        }
        let mut results = Vec::with_capacity(n);
        for _ in 0..n {
            results.push(match r.u8()? {
                1 => TxnOpResult::Put,
                2 => TxnOpResult::Delete {
                    existed: r.u8()? == 1,
                },
                3 => TxnOpResult::Get {
                    found: match r.u8()? {
                        0 => None,
                        _ => Some(read_versioned(&mut r)?),
                    },
                },
                4 => {
                    let more = r.u8()? == 1;
                    let count = r.u32()? as usize;
                    // A pair takes at least 28 bytes.
                    if count > r.buf.len() / 28 {
                        return Err(DecodeError("range count exceeds the buffer"));
                    }
                    let mut pairs = Vec::with_capacity(count);
                    for _ in 0..count {
                        pairs.push((r.bytes()?, read_versioned(&mut r)?));
                    }
                    TxnOpResult::Range { pairs, more }
                }
                _ => return Err(DecodeError("unknown transaction result")),
            });
        }
        if !r.buf.is_empty() {
            return Err(DecodeError("trailing bytes after a transaction result"));
        }
        Ok(TxnResult { succeeded, results })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(create: u64, modified: u64, value: &str) -> Versioned {
        Versioned {
            value: value.into(),
            create_index: create,
            mod_index: modified,
            lease: 0,
        }
    }

    fn cmp(target: CompareTarget) -> Compare {
        Compare {
            key: b"k".to_vec(),
            target,
        }
    }

    #[test]
    fn a_result_round_trips_and_a_cut_one_does_not_decode() {
        let result = TxnResult {
            succeeded: true,
            results: vec![
                TxnOpResult::Put,
                TxnOpResult::Delete { existed: true },
                TxnOpResult::Get { found: None },
                TxnOpResult::Get {
                    found: Some(at(1, 2, "v")),
                },
                TxnOpResult::Range {
                    pairs: vec![
                        (b"a".to_vec(), at(3, 4, "x")),
                        (b"b".to_vec(), at(5, 5, "")),
                    ],
                    more: true,
                },
            ],
        };
        let mut enc = Vec::new();
        result.encode_into(&mut enc);
        assert_eq!(TxnResult::decode(&enc).unwrap(), result);
        for cut in 0..enc.len() {
            assert!(TxnResult::decode(&enc[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn compares_on_a_missing_key_see_no_value_and_zero_indexes() {
        let missing = None;
        assert!(!cmp(CompareTarget::Value(CompareOp::NotEqual, b"x".to_vec())).holds(missing));
        assert!(cmp(CompareTarget::Exists(false)).holds(missing));
        assert!(cmp(CompareTarget::CreateIndex(CompareOp::Equal, 0)).holds(missing));
        assert!(cmp(CompareTarget::ModIndex(CompareOp::Less, 1)).holds(missing));
        assert!(cmp(CompareTarget::Lease(CompareOp::Equal, 0)).holds(missing));
    }

    #[test]
    fn compares_on_a_key_look_at_the_field_they_name() {
        let v = at(4, 9, "b");
        let present = Some(&v);
        assert!(cmp(CompareTarget::Value(CompareOp::Equal, b"b".to_vec())).holds(present));
        assert!(cmp(CompareTarget::Value(CompareOp::Greater, b"a".to_vec())).holds(present));
        assert!(!cmp(CompareTarget::Value(CompareOp::Less, b"a".to_vec())).holds(present));
        assert!(cmp(CompareTarget::Exists(true)).holds(present));
        assert!(cmp(CompareTarget::CreateIndex(CompareOp::Equal, 4)).holds(present));
        assert!(!cmp(CompareTarget::ModIndex(CompareOp::Equal, 4)).holds(present));
        assert!(cmp(CompareTarget::ModIndex(CompareOp::Greater, 8)).holds(present));
        assert!(cmp(CompareTarget::ModIndex(CompareOp::NotEqual, 8)).holds(present));
    }
}
