//! Building transactions: compares and operations for [`Client::txn`]
//! (`crate::Client::txn`), so a caller writes
//! `txn::mod_index(key, CompareOp::Equal, 12)` rather than the messages.

use bytes::Bytes;
use strata_proto::v1::{
    Compare, CompareOp, DeleteOp, GetOp, PutOp, RangeOp, TxnOp, compare, txn_op,
};

/// `value(key) OP value`; never holds for a key that does not exist.
pub fn value(key: impl Into<Bytes>, op: CompareOp, value: impl Into<Bytes>) -> Compare {
    compare_with(key, op, compare::Target::Value(value.into()))
}

/// Holds when `key` exists (`true`) or does not (`false`).
pub fn exists(key: impl Into<Bytes>, exists: bool) -> Compare {
    compare_with(key, CompareOp::Equal, compare::Target::Exists(exists))
}

/// `create_index(key) OP index` (0 for a key that does not exist).
pub fn create_index(key: impl Into<Bytes>, op: CompareOp, index: u64) -> Compare {
    compare_with(key, op, compare::Target::CreateIndex(index))
}

/// `mod_index(key) OP index` (0 for a key that does not exist): with
/// `Equal` and the index a read returned, "nobody wrote it since".
pub fn mod_index(key: impl Into<Bytes>, op: CompareOp, index: u64) -> Compare {
    compare_with(key, op, compare::Target::ModIndex(index))
}

fn compare_with(key: impl Into<Bytes>, op: CompareOp, target: compare::Target) -> Compare {
    Compare {
        key: key.into(),
        op: op as i32,
        target: Some(target),
    }
}

pub fn put(key: impl Into<Bytes>, value: impl Into<Bytes>) -> TxnOp {
    put_leased(key, value, 0)
}

/// A put under lease `lease` (0: none), which must exist.
pub fn put_leased(key: impl Into<Bytes>, value: impl Into<Bytes>, lease: u64) -> TxnOp {
    op(txn_op::Op::Put(PutOp {
        key: key.into(),
        value: value.into(),
        lease,
    }))
}

/// `lease(key) OP id` (0 for a key under no lease, or that does not exist).
pub fn lease(key: impl Into<Bytes>, op: CompareOp, id: u64) -> Compare {
    compare_with(key, op, compare::Target::Lease(id))
}

pub fn delete(key: impl Into<Bytes>) -> TxnOp {
    op(txn_op::Op::Delete(DeleteOp { key: key.into() }))
}

pub fn get(key: impl Into<Bytes>) -> TxnOp {
    op(txn_op::Op::Get(GetOp { key: key.into() }))
}

/// Keys in `[start, end)` (`end` empty: to the end), at most `limit` (0:
/// the most, 1000).
pub fn range(start: impl Into<Bytes>, end: impl Into<Bytes>, limit: u32) -> TxnOp {
    op(txn_op::Op::Range(RangeOp {
        start: start.into(),
        end: end.into(),
        limit,
    }))
}

fn op(op: txn_op::Op) -> TxnOp {
    TxnOp { op: Some(op) }
}
