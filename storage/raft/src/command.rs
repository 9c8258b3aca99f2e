//! The commands carried in raft entries and their binary encoding.
//!
//! ```text
//! version u8 (=1) | request_id u64 | tag u8 | body
//! version u8 (=2) | request_id u64 | trace (trace id 16, span id 8, flags u8) | tag u8 | body
//! version u8 (=3) | request_id u64 | has_trace u8 [| trace] | dedupe | tag u8 | body
//! dedupe: id | at_ms u64 | keep_ms u64 | digest u64
//! Put:    key | value          Delete: key
//! Batch:  count u32 | (op_tag u8 | key [| value])*
//! Cas:    key | has_expected u8 [| expected] | has_value u8 [| value]
//! Txn:    count u32 | compare* | count u32 | txn_op* | count u32 | txn_op*
//! compare: key | target u8 (value 1, exists 2, create 3, mod 4, lease 5) | body
//!          value: op u8 | bytes   exists: u8   create, mod, lease: op u8 | u64
//! txn_op:  put 1: key | value | lease u64   delete 2: key   get 3: key
//!          range 4: start | end | limit u32
//! PutLeased:   key | value | lease u64
//! PutWithTtl:  key | value | ttl_ms u64
//! LeaseGrant:  id u64 | ttl_ms u64          LeaseRevoke: id u64
//! ClusterId:   id u64
//! Split:       at | child u64
//! NewGroupId:  (empty)
//! ```
//! Compare ops: equal 0, not equal 1, less 2, greater 3.
//! Byte strings are a u32 length followed by the bytes; integers are
//! little-endian. Decoding checks every length against the buffer.

use crate::trace::TraceParent;
use crate::txn::{Compare, CompareOp, CompareTarget, Txn, TxnOp, TxnResult};

const VERSION: u8 = 1;
/// The same, with the proposing request's trace context after the id.
const VERSION_TRACED: u8 = 2;
/// A write that carries its client's request id (`Dedupe`), traced or not.
const VERSION_DEDUPED: u8 = 3;
const TAG_PUT: u8 = 1;
const TAG_DELETE: u8 = 2;
const TAG_BATCH: u8 = 3;
const TAG_CAS: u8 = 4;
const TAG_TXN: u8 = 5;
const TAG_PUT_LEASED: u8 = 6;
const TAG_PUT_TTL: u8 = 7;
const TAG_LEASE_GRANT: u8 = 8;
const TAG_LEASE_REVOKE: u8 = 9;
const TAG_CLUSTER_ID: u8 = 10;
const TAG_SPLIT: u8 = 11;
const TAG_NEW_GROUP_ID: u8 = 12;
const TXN_PUT: u8 = 1;
const TXN_DELETE: u8 = 2;
const TXN_GET: u8 = 3;
const TXN_RANGE: u8 = 4;
const TARGET_VALUE: u8 = 1;
const TARGET_EXISTS: u8 = 2;
const TARGET_CREATE: u8 = 3;
const TARGET_MOD: u8 = 4;
const TARGET_LEASE: u8 = 5;

/// One write inside a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Put { key: Vec<u8>, value: Vec<u8> },
    Delete { key: Vec<u8> },
}

/// A state-machine command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Put {
        key: Vec<u8>,
        value: Vec<u8>,
    },
    Delete {
        key: Vec<u8>,
    },
    /// Applied atomically and in order.
    Batch(Vec<Op>),
    /// Replace (or delete, when `value` is `None`) `key` only if it currently
    /// holds `expected` (`None`: only if it does not exist).
    Cas {
        key: Vec<u8>,
        expected: Option<Vec<u8>>,
        value: Option<Vec<u8>>,
    },
    /// Compares, then one of two branches, atomically (see `crate::txn`).
    Txn(Txn),
    /// A put under lease `lease` (0: none), which must exist.
    PutLeased {
        key: Vec<u8>,
        value: Vec<u8>,
        lease: u64,
    },
    /// Grants a lease of `ttl_ms` whose id is the smallest free one from the
    /// entry's index on, and puts `key` under it.
    PutWithTtl {
        key: Vec<u8>,
        value: Vec<u8>,
        ttl_ms: u64,
    },
    /// Grants lease `id` (0: the smallest free id from the entry's index
    /// on) of `ttl_ms`.
    LeaseGrant {
        id: u64,
        ttl_ms: u64,
    },
    /// Ends lease `id`: every key put under it (and still under it) is
    /// deleted.
    LeaseRevoke {
        id: u64,
    },
    /// Names the cluster `id` (non-zero), unless it has a name already: the
    /// first leader of a cluster proposes it.
    ClusterId {
        id: u64,
    },
    /// Splits the group's span at `at` (strictly inside it): the group
    /// keeps the keys before `at`, and group `child` (a new id) serves the
    /// rest from this entry on, with the same members. No data is copied:
    /// the keys stay where they are in the engine (`crate::range`).
    Split {
        at: Vec<u8>,
        child: u64,
    },
    /// Takes the next unused raft group id from the group's counter (the
    /// first group keeps the cluster's): what a split names its child.
    NewGroupId,
}

/// What applying a command produced, returned to the proposer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyResult {
    Written,
    Deleted {
        existed: bool,
    },
    Cas {
        succeeded: bool,
        current: Option<Vec<u8>>,
    },
    Txn(TxnResult),
    /// Lease `id` of `ttl_ms` exists from this entry on.
    LeaseGranted {
        id: u64,
        ttl_ms: u64,
    },
    /// The lease ended; `keys` of its keys were deleted.
    LeaseRevoked {
        keys: u64,
    },
    /// Not applied: the command names lease `id`, which does not exist.
    LeaseNotFound {
        id: u64,
    },
    /// Not applied: lease `id` exists already.
    LeaseExists {
        id: u64,
    },
    /// The cluster's id, from this entry on (the one proposed, or the one
    /// an earlier entry gave it).
    ClusterId {
        id: u64,
    },
    /// Not applied: its request id names another request, applied at
    /// `index`, that the group still remembers.
    IdReused {
        index: u64,
    },
    /// Not applied again: a write with the same request id was applied at
    /// `index` with `result`, which is this one's answer too.
    Replayed {
        index: u64,
        result: Box<ApplyResult>,
    },
    /// Not applied: `key` is outside the group's span (it was split away,
    /// or the proposer's map of ranges was stale). Certainly not applied
    /// here: the write may be sent to the group that serves the key.
    KeyNotInRange {
        key: Vec<u8>,
    },
    /// The group was split: group `child` serves the keys from the split
    /// key on.
    Split {
        child: u64,
    },
    /// Not applied: the split is not possible (`why`).
    SplitRefused {
        why: String,
    },
    /// Group id `id` is taken for a new group, and never given again.
    GroupId {
        id: u64,
    },
}

/// A write's client request id, with what the group needs to answer a
/// retry of it, the same on every replica: the proposing leader's clock
/// and how long to remember it, and a digest of the write, which tells a
/// retry from another request under the same id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dedupe {
    pub id: Vec<u8>,
    /// The proposing leader's clock, in ms since the Unix epoch.
    pub at_ms: u64,
    /// How long after `at_ms` a retry gets the first answer.
    pub keep_ms: u64,
    pub digest: u64,
}

impl Dedupe {
    /// The request id `id` for `command`, proposed now, remembered for
    /// `keep_ms`.
    pub fn new(id: Vec<u8>, command: &Command, keep_ms: u64) -> Self {
        let at_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        Dedupe {
            id,
            at_ms,
            keep_ms,
            digest: command.digest(),
        }
    }
}

/// A command tagged with the id its proposer waits on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    pub request_id: u64,
    pub command: Command,
    /// The client's request id, when the write carried one.
    pub dedupe: Option<Dedupe>,
}

pub(crate) fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

fn put_opt(out: &mut Vec<u8>, b: &Option<Vec<u8>>) {
    match b {
        Some(b) => {
            out.push(1);
            put_bytes(out, b);
        }
        None => out.push(0),
    }
}

impl Proposal {
    pub fn encode(&self) -> Vec<u8> {
        self.encode_traced(None)
    }

    /// The entry's bytes, carrying `trace` when the proposal was made in a
    /// sampled trace (see `crate::trace`).
    pub fn encode_traced(&self, trace: Option<&TraceParent>) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.command.approximate_size());
        match &self.dedupe {
            None => {
                out.push(if trace.is_some() {
                    VERSION_TRACED
                } else {
                    VERSION
                });
                out.extend_from_slice(&self.request_id.to_le_bytes());
                if let Some(t) = trace {
                    t.encode(&mut out);
                }
            }
            Some(d) => {
                out.push(VERSION_DEDUPED);
                out.extend_from_slice(&self.request_id.to_le_bytes());
                match trace {
                    Some(t) => {
                        out.push(1);
                        t.encode(&mut out);
                    }
                    None => out.push(0),
                }
                put_bytes(&mut out, &d.id);
                out.extend_from_slice(&d.at_ms.to_le_bytes());
                out.extend_from_slice(&d.keep_ms.to_le_bytes());
                out.extend_from_slice(&d.digest.to_le_bytes());
            }
        }
        self.command.encode_into(&mut out);
        out
    }
}

impl Command {
    /// The command's tag and body (see the module docs).
    fn encode_into(&self, out: &mut Vec<u8>) {
        match self {
            Command::Put { key, value } => {
                out.push(TAG_PUT);
                put_bytes(out, key);
                put_bytes(out, value);
            }
            Command::Delete { key } => {
                out.push(TAG_DELETE);
                put_bytes(out, key);
            }
            Command::Batch(ops) => {
                out.push(TAG_BATCH);
                out.extend_from_slice(&(ops.len() as u32).to_le_bytes());
                for op in ops {
                    match op {
                        Op::Put { key, value } => {
                            out.push(TAG_PUT);
                            put_bytes(out, key);
                            put_bytes(out, value);
                        }
                        Op::Delete { key } => {
                            out.push(TAG_DELETE);
                            put_bytes(out, key);
                        }
                    }
                }
            }
            Command::Cas {
                key,
                expected,
                value,
            } => {
                out.push(TAG_CAS);
                put_bytes(out, key);
                put_opt(out, expected);
                put_opt(out, value);
            }
            Command::Txn(txn) => {
                out.push(TAG_TXN);
                encode_txn(out, txn);
            }
            Command::PutLeased { key, value, lease } => {
                out.push(TAG_PUT_LEASED);
                put_bytes(out, key);
                put_bytes(out, value);
                out.extend_from_slice(&lease.to_le_bytes());
            }
            Command::PutWithTtl { key, value, ttl_ms } => {
                out.push(TAG_PUT_TTL);
                put_bytes(out, key);
                put_bytes(out, value);
                out.extend_from_slice(&ttl_ms.to_le_bytes());
            }
            Command::LeaseGrant { id, ttl_ms } => {
                out.push(TAG_LEASE_GRANT);
                out.extend_from_slice(&id.to_le_bytes());
                out.extend_from_slice(&ttl_ms.to_le_bytes());
            }
            Command::LeaseRevoke { id } => {
                out.push(TAG_LEASE_REVOKE);
                out.extend_from_slice(&id.to_le_bytes());
            }
            Command::ClusterId { id } => {
                out.push(TAG_CLUSTER_ID);
                out.extend_from_slice(&id.to_le_bytes());
            }
            Command::Split { at, child } => {
                out.push(TAG_SPLIT);
                put_bytes(out, at);
                out.extend_from_slice(&child.to_le_bytes());
            }
            Command::NewGroupId => out.push(TAG_NEW_GROUP_ID),
        }
    }

    /// A digest of the command's encoding (FNV-1a, 64 bits): the same for
    /// the same command in every process and version of this encoding.
    pub fn digest(&self) -> u64 {
        let mut body = Vec::with_capacity(16 + self.approximate_size());
        self.encode_into(&mut body);
        body.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
        })
    }
}

impl Proposal {
    /// The trace context an encoded proposal carries, if any, read without
    /// decoding the rest.
    pub fn trace_of(buf: &[u8]) -> Option<TraceParent> {
        match buf.first() {
            Some(&VERSION_TRACED) => TraceParent::decode(buf.get(9..)?),
            Some(&VERSION_DEDUPED) if buf.get(9) == Some(&1) => TraceParent::decode(buf.get(10..)?),
            _ => None,
        }
    }

    pub fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader { buf };
        let version = r.u8()?;
        let request_id = r.u64()?;
        let mut dedupe = None;
        match version {
            VERSION => {}
            VERSION_TRACED => {
                r.take(crate::trace::ENCODED_LEN)?;
            }
            VERSION_DEDUPED => {
                match r.u8()? {
                    0 => {}
                    1 => {
                        r.take(crate::trace::ENCODED_LEN)?;
                    }
                    _ => return Err(DecodeError("bad trace flag")),
                }
                dedupe = Some(Dedupe {
                    id: r.bytes()?,
                    at_ms: r.u64()?,
                    keep_ms: r.u64()?,
                    digest: r.u64()?,
                });
            }
            _ => return Err(DecodeError("unknown command version")),
        }
        let command = match r.u8()? {
            TAG_PUT => Command::Put {
                key: r.bytes()?,
                value: r.bytes()?,
            },
            TAG_DELETE => Command::Delete { key: r.bytes()? },
            TAG_BATCH => {
                let n = r.u32()? as usize;
                // Every op takes at least 5 bytes, which bounds the allocation.
                if n > r.buf.len() / 5 {
                    return Err(DecodeError("batch count exceeds the buffer"));
                }
                let mut ops = Vec::with_capacity(n);
                for _ in 0..n {
                    ops.push(match r.u8()? {
                        TAG_PUT => Op::Put {
                            key: r.bytes()?,
                            value: r.bytes()?,
                        },
                        TAG_DELETE => Op::Delete { key: r.bytes()? },
                        _ => return Err(DecodeError("unknown batch op")),
                    });
                }
                Command::Batch(ops)
            }
            TAG_CAS => Command::Cas {
                key: r.bytes()?,
                expected: r.opt()?,
                value: r.opt()?,
            },
            TAG_TXN => Command::Txn(decode_txn(&mut r)?),
            TAG_PUT_LEASED => Command::PutLeased {
                key: r.bytes()?,
                value: r.bytes()?,
                lease: r.u64()?,
            },
            TAG_PUT_TTL => Command::PutWithTtl {
                key: r.bytes()?,
                value: r.bytes()?,
                ttl_ms: r.u64()?,
            },
            TAG_LEASE_GRANT => Command::LeaseGrant {
                id: r.u64()?,
                ttl_ms: r.u64()?,
            },
            TAG_LEASE_REVOKE => Command::LeaseRevoke { id: r.u64()? },
            TAG_CLUSTER_ID => Command::ClusterId { id: r.u64()? },
            TAG_SPLIT => Command::Split {
                at: r.bytes()?,
                child: r.u64()?,
            },
            TAG_NEW_GROUP_ID => Command::NewGroupId,
            _ => return Err(DecodeError("unknown command tag")),
        };
        if !r.buf.is_empty() {
            return Err(DecodeError("trailing bytes after command"));
        }
        Ok(Proposal {
            request_id,
            command,
            dedupe,
        })
    }
}

impl Command {
    /// Bytes of keys and values, for sizing buffers and limits.
    pub fn approximate_size(&self) -> usize {
        match self {
            Command::Put { key, value } => key.len() + value.len(),
            Command::Delete { key } => key.len(),
            Command::Batch(ops) => ops
                .iter()
                .map(|op| match op {
                    Op::Put { key, value } => key.len() + value.len() + 9,
                    Op::Delete { key } => key.len() + 5,
                })
                .sum(),
            Command::Cas {
                key,
                expected,
                value,
            } => {
                key.len()
                    + expected.as_ref().map_or(0, Vec::len)
                    + value.as_ref().map_or(0, Vec::len)
            }
            Command::Txn(txn) => txn.approximate_size(),
            Command::PutLeased { key, value, .. } | Command::PutWithTtl { key, value, .. } => {
                key.len() + value.len() + 8
            }
            Command::LeaseGrant { .. } | Command::LeaseRevoke { .. } => 16,
            Command::ClusterId { .. } => 8,
            Command::Split { at, .. } => at.len() + 12,
            Command::NewGroupId => 0,
        }
    }
}

fn compare_op_code(op: CompareOp) -> u8 {
    match op {
        CompareOp::Equal => 0,
        CompareOp::NotEqual => 1,
        CompareOp::Less => 2,
        CompareOp::Greater => 3,
    }
}

fn encode_txn(out: &mut Vec<u8>, txn: &Txn) {
    out.extend_from_slice(&(txn.compares.len() as u32).to_le_bytes());
    for c in &txn.compares {
        put_bytes(out, &c.key);
        match &c.target {
            CompareTarget::Value(op, v) => {
                out.extend_from_slice(&[TARGET_VALUE, compare_op_code(*op)]);
                put_bytes(out, v);
            }
            CompareTarget::Exists(e) => out.extend_from_slice(&[TARGET_EXISTS, u8::from(*e)]),
            CompareTarget::CreateIndex(op, i)
            | CompareTarget::ModIndex(op, i)
            | CompareTarget::Lease(op, i) => {
                let target = match c.target {
                    CompareTarget::CreateIndex(..) => TARGET_CREATE,
                    CompareTarget::ModIndex(..) => TARGET_MOD,
                    _ => TARGET_LEASE,
                };
                out.extend_from_slice(&[target, compare_op_code(*op)]);
                out.extend_from_slice(&i.to_le_bytes());
            }
        }
    }
    for branch in [&txn.success, &txn.failure] {
        out.extend_from_slice(&(branch.len() as u32).to_le_bytes());
        for op in branch {
            match op {
                TxnOp::Put { key, value, lease } => {
                    out.push(TXN_PUT);
                    put_bytes(out, key);
                    put_bytes(out, value);
                    out.extend_from_slice(&lease.to_le_bytes());
                }
                TxnOp::Delete { key } => {
                    out.push(TXN_DELETE);
                    put_bytes(out, key);
                }
                TxnOp::Get { key } => {
                    out.push(TXN_GET);
                    put_bytes(out, key);
                }
                TxnOp::Range { start, end, limit } => {
                    out.push(TXN_RANGE);
                    put_bytes(out, start);
                    put_bytes(out, end);
                    out.extend_from_slice(&limit.to_le_bytes());
                }
            }
        }
    }
}

fn decode_txn(r: &mut Reader<'_>) -> Result<Txn, DecodeError> {
    // Every compare and op takes at least 5 bytes, which bounds each
    // allocation by the buffer.
    let count = |r: &mut Reader<'_>| -> Result<usize, DecodeError> {
        let n = r.u32()? as usize;
        if n > r.buf.len() / 5 {
            return Err(DecodeError("transaction count exceeds the buffer"));
        }
        Ok(n)
    };
    let op = |r: &mut Reader<'_>| -> Result<CompareOp, DecodeError> {
        Ok(match r.u8()? {
            0 => CompareOp::Equal,
            1 => CompareOp::NotEqual,
            2 => CompareOp::Less,
            3 => CompareOp::Greater,
            _ => return Err(DecodeError("unknown compare op")),
        })
    };
    let n = count(r)?;
    let mut compares = Vec::with_capacity(n);
    for _ in 0..n {
        let key = r.bytes()?;
        let target = match r.u8()? {
            TARGET_VALUE => CompareTarget::Value(op(r)?, r.bytes()?),
            TARGET_EXISTS => match r.u8()? {
                0 => CompareTarget::Exists(false),
                1 => CompareTarget::Exists(true),
                _ => return Err(DecodeError("bad exists flag")),
            },
            TARGET_CREATE => CompareTarget::CreateIndex(op(r)?, r.u64()?),
            TARGET_MOD => CompareTarget::ModIndex(op(r)?, r.u64()?),
            TARGET_LEASE => CompareTarget::Lease(op(r)?, r.u64()?),
            _ => return Err(DecodeError("unknown compare target")),
        };
        compares.push(Compare { key, target });
    }
    let mut branches = [Vec::new(), Vec::new()];
    for branch in &mut branches {
        let n = count(r)?;
        branch.reserve(n);
        for _ in 0..n {
            branch.push(match r.u8()? {
                TXN_PUT => TxnOp::Put {
                    key: r.bytes()?,
                    value: r.bytes()?,
                    lease: r.u64()?,
                },
                TXN_DELETE => TxnOp::Delete { key: r.bytes()? },
                TXN_GET => TxnOp::Get { key: r.bytes()? },
                TXN_RANGE => TxnOp::Range {
                    start: r.bytes()?,
                    end: r.bytes()?,
                    limit: r.u32()?,
                },
                _ => return Err(DecodeError("unknown transaction op")),
            });
        }
    }
    let [success, failure] = branches;
    Ok(Txn {
        compares,
        success,
        failure,
    })
}

/// A command that does not decode: the entry was not written by this code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed command: {0}")]
pub struct DecodeError(pub(crate) &'static str);

pub(crate) struct Reader<'a> {
    pub(crate) buf: &'a [u8],
}

impl Reader<'_> {
    pub(crate) fn take(&mut self, n: usize) -> Result<&[u8], DecodeError> {
        if self.buf.len() < n {
            return Err(DecodeError("command cut short"));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }
    pub(crate) fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn u32(&mut self) -> Result<u32, DecodeError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub(crate) fn u64(&mut self) -> Result<u64, DecodeError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    pub(crate) fn bytes(&mut self) -> Result<Vec<u8>, DecodeError> {
        let n = self.u32()? as usize;
        Ok(self.take(n)?.to_vec())
    }
    pub(crate) fn opt(&mut self) -> Result<Option<Vec<u8>>, DecodeError> {
        match self.u8()? {
            0 => Ok(None),
            1 => Ok(Some(self.bytes()?)),
            _ => Err(DecodeError("bad option flag")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    pub(crate) fn bytes() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(any::<u8>(), 0..40)
    }

    fn command() -> impl Strategy<Value = Command> {
        let op = prop_oneof![
            (bytes(), bytes()).prop_map(|(key, value)| Op::Put { key, value }),
            bytes().prop_map(|key| Op::Delete { key }),
        ];
        prop_oneof![
            (bytes(), bytes()).prop_map(|(key, value)| Command::Put { key, value }),
            bytes().prop_map(|key| Command::Delete { key }),
            proptest::collection::vec(op, 0..10).prop_map(Command::Batch),
            (
                bytes(),
                proptest::option::of(bytes()),
                proptest::option::of(bytes())
            )
                .prop_map(|(key, expected, value)| Command::Cas {
                    key,
                    expected,
                    value
                }),
            txn().prop_map(Command::Txn),
            (bytes(), bytes(), any::<u64>()).prop_map(|(key, value, lease)| Command::PutLeased {
                key,
                value,
                lease
            }),
            (bytes(), bytes(), any::<u64>()).prop_map(|(key, value, ttl_ms)| Command::PutWithTtl {
                key,
                value,
                ttl_ms
            }),
            (any::<u64>(), any::<u64>())
                .prop_map(|(id, ttl_ms)| Command::LeaseGrant { id, ttl_ms }),
            any::<u64>().prop_map(|id| Command::LeaseRevoke { id }),
            any::<u64>().prop_map(|id| Command::ClusterId { id }),
            (bytes(), any::<u64>()).prop_map(|(at, child)| Command::Split { at, child }),
            Just(Command::NewGroupId),
        ]
    }

    fn txn() -> impl Strategy<Value = Txn> {
        let op = prop_oneof![
            Just(CompareOp::Equal),
            Just(CompareOp::NotEqual),
            Just(CompareOp::Less),
            Just(CompareOp::Greater),
        ];
        let target = prop_oneof![
            (op.clone(), bytes()).prop_map(|(o, v)| CompareTarget::Value(o, v)),
            any::<bool>().prop_map(CompareTarget::Exists),
            (op.clone(), any::<u64>()).prop_map(|(o, i)| CompareTarget::CreateIndex(o, i)),
            (op.clone(), any::<u64>()).prop_map(|(o, i)| CompareTarget::ModIndex(o, i)),
            (op, any::<u64>()).prop_map(|(o, i)| CompareTarget::Lease(o, i)),
        ];
        let compare = (bytes(), target).prop_map(|(key, target)| Compare { key, target });
        let txn_op = prop_oneof![
            (bytes(), bytes(), any::<u64>()).prop_map(|(key, value, lease)| TxnOp::Put {
                key,
                value,
                lease
            }),
            bytes().prop_map(|key| TxnOp::Delete { key }),
            bytes().prop_map(|key| TxnOp::Get { key }),
            (bytes(), bytes(), any::<u32>()).prop_map(|(start, end, limit)| TxnOp::Range {
                start,
                end,
                limit
            }),
        ];
        (
            proptest::collection::vec(compare, 0..4),
            proptest::collection::vec(txn_op.clone(), 0..4),
            proptest::collection::vec(txn_op, 0..4),
        )
            .prop_map(|(compares, success, failure)| Txn {
                compares,
                success,
                failure,
            })
    }

    proptest! {
        #[test]
        fn proposals_round_trip(request_id in any::<u64>(), command in command()) {
            let p = Proposal { request_id, command, dedupe: None };
            prop_assert_eq!(Proposal::decode(&p.encode()).unwrap(), p);
        }

        #[test]
        fn proposals_with_a_request_id_round_trip_traced_or_not(
            request_id in any::<u64>(),
            command in command(),
            id in bytes(),
            at_ms in any::<u64>(),
            keep_ms in any::<u64>(),
            ids in proptest::collection::vec(any::<u8>(), crate::trace::ENCODED_LEN),
        ) {
            let digest = command.digest();
            let dedupe = Some(Dedupe { id, at_ms, keep_ms, digest });
            let p = Proposal { request_id, command, dedupe };
            prop_assert_eq!(Proposal::decode(&p.encode()).unwrap(), p.clone());
            prop_assert_eq!(Proposal::trace_of(&p.encode()), None);
            let trace = TraceParent::decode(&ids).unwrap();
            let enc = p.encode_traced(Some(&trace));
            prop_assert_eq!(Proposal::trace_of(&enc), Some(trace));
            prop_assert_eq!(Proposal::decode(&enc).unwrap(), p);
        }

        #[test]
        fn a_digest_tells_commands_apart(a in command(), b in command()) {
            prop_assert_eq!(a.digest(), a.clone().digest());
            if a != b {
                prop_assert_ne!(a.digest(), b.digest());
            }
        }

        #[test]
        fn traced_proposals_round_trip_and_name_their_trace(
            request_id in any::<u64>(),
            command in command(),
            ids in proptest::collection::vec(any::<u8>(), crate::trace::ENCODED_LEN),
        ) {
            let trace = TraceParent::decode(&ids).unwrap();
            let p = Proposal { request_id, command, dedupe: None };
            let enc = p.encode_traced(Some(&trace));
            prop_assert_eq!(Proposal::trace_of(&enc), Some(trace));
            prop_assert_eq!(Proposal::decode(&enc).unwrap(), p.clone());
            prop_assert_eq!(Proposal::trace_of(&p.encode()), None);
            prop_assert_eq!(p.encode_traced(None), p.encode());
        }

        #[test]
        fn truncated_proposals_never_decode(command in command(), cut_frac in 0.0f64..1.0) {
            let enc = Proposal { request_id: 7, command, dedupe: None }.encode();
            let cut = ((enc.len() as f64) * cut_frac) as usize;
            prop_assert!(Proposal::decode(&enc[..cut]).is_err());
        }

        #[test]
        fn arbitrary_bytes_never_panic(buf in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = Proposal::decode(&buf);
        }
    }
}
