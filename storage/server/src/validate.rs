//! The checks every KV request passes before it is routed: pure functions of
//! the request and the node's [`Limits`]. `Core` runs them for REST and gRPC
//! alike, and the fuzz targets in `storage/fuzz` call them directly, so what
//! is fuzzed is what the node enforces.
//!
//! Every error here is the client's (a 4xx): nothing in this module can fail
//! because of the node's own state.

use strata_proto::v1::{
    BatchRequest, CompareAndSwapRequest, Consistency, ScanRequest, TxnRequest, batch_op, compare,
    scan_request, txn_op,
};
use strata_raft::keys::prefix_end;
use strata_raft::{
    Compare, CompareOp, CompareTarget, MAX_RANGE_KEYS, MAX_TXN_READS, Op, Txn, TxnOp,
};

use crate::config::Limits;
use crate::error::ApiError;

impl Limits {
    /// A key is non-empty and at most `max_key_bytes` long.
    pub fn check_key(&self, key: &[u8]) -> Result<(), ApiError> {
        if key.is_empty() {
            return Err(ApiError::invalid("key must not be empty"));
        }
        if key.len() > self.max_key_bytes {
            return Err(ApiError::too_large(format!(
                "key is {} bytes; the limit is {}",
                key.len(),
                self.max_key_bytes
            )));
        }
        Ok(())
    }

    /// A value (possibly empty) is at most `max_value_bytes` long.
    pub fn check_value(&self, value: &[u8]) -> Result<(), ApiError> {
        if value.len() > self.max_value_bytes {
            return Err(ApiError::too_large(format!(
                "value is {} bytes; the limit is {}",
                value.len(),
                self.max_value_bytes
            )));
        }
        Ok(())
    }
}

/// The operations of a batch as the raft command applies them. A batch has
/// between one and `max_batch_ops` operations, each a put or a delete with
/// a valid key (and value); the first bad one names its position.
pub fn batch_ops(limits: &Limits, req: &BatchRequest) -> Result<Vec<Op>, ApiError> {
    if req.ops.is_empty() {
        return Err(ApiError::invalid("a batch needs at least one operation"));
    }
    if req.ops.len() > limits.max_batch_ops {
        return Err(ApiError::too_large(format!(
            "batch has {} operations; the limit is {}",
            req.ops.len(),
            limits.max_batch_ops
        )));
    }
    let mut ops = Vec::with_capacity(req.ops.len());
    for (i, op) in req.ops.iter().enumerate() {
        let op = match &op.op {
            Some(batch_op::Op::Put(p)) => {
                if p.lease != 0 {
                    return Err(at_op(
                        i,
                        ApiError::invalid(
                            "a batch puts no key under a lease: use a put or a transaction",
                        ),
                    ));
                }
                limits.check_key(&p.key).map_err(|e| at_op(i, e))?;
                limits.check_value(&p.value).map_err(|e| at_op(i, e))?;
                Op::Put {
                    key: p.key.to_vec(),
                    value: p.value.to_vec(),
                }
            }
            Some(batch_op::Op::Delete(d)) => {
                limits.check_key(&d.key).map_err(|e| at_op(i, e))?;
                Op::Delete {
                    key: d.key.to_vec(),
                }
            }
            None => {
                return Err(ApiError::invalid(format!(
                    "operation {i} is neither put nor delete"
                )));
            }
        };
        ops.push(op);
    }
    Ok(ops)
}

fn at_op(i: usize, mut e: ApiError) -> ApiError {
    e.message = format!("operation {i}: {}", e.message);
    e
}

/// A transaction as the raft command applies it. Each of its compares and
/// of its two branches has at most `max_batch_ops` entries, and each
/// branch at most `MAX_TXN_READS` gets and ranges; every key and
/// value is within the limits, every compare names a target (and `exists`
/// only EQUAL or NOT_EQUAL), and every range has its start not after its
/// end and a limit of at most 1000. The first bad part names its place.
pub fn txn(limits: &Limits, req: &TxnRequest) -> Result<Txn, ApiError> {
    for (name, n) in [
        ("compare", req.compare.len()),
        ("success", req.success.len()),
        ("failure", req.failure.len()),
    ] {
        if n > limits.max_batch_ops {
            return Err(ApiError::too_large(format!(
                "`{name}` has {n} entries; the limit is {}",
                limits.max_batch_ops
            )));
        }
    }
    let mut compares = Vec::with_capacity(req.compare.len());
    for (i, c) in req.compare.iter().enumerate() {
        let at = |e: ApiError| in_part("compare", i, e);
        limits.check_key(&c.key).map_err(at)?;
        let op = match strata_proto::v1::CompareOp::try_from(c.op) {
            Ok(strata_proto::v1::CompareOp::Equal) => CompareOp::Equal,
            Ok(strata_proto::v1::CompareOp::NotEqual) => CompareOp::NotEqual,
            Ok(strata_proto::v1::CompareOp::Less) => CompareOp::Less,
            Ok(strata_proto::v1::CompareOp::Greater) => CompareOp::Greater,
            Err(_) => return Err(at(ApiError::invalid(format!("unknown op {}", c.op)))),
        };
        let target = match &c.target {
            Some(compare::Target::Value(v)) => {
                limits.check_value(v).map_err(at)?;
                CompareTarget::Value(op, v.to_vec())
            }
            Some(compare::Target::Exists(e)) => match op {
                CompareOp::Equal => CompareTarget::Exists(*e),
                CompareOp::NotEqual => CompareTarget::Exists(!*e),
                _ => {
                    return Err(at(ApiError::invalid(
                        "`exists` compares only with EQUAL or NOT_EQUAL",
                    )));
                }
            },
            Some(compare::Target::CreateIndex(n)) => CompareTarget::CreateIndex(op, *n),
            Some(compare::Target::ModIndex(n)) => CompareTarget::ModIndex(op, *n),
            Some(compare::Target::Lease(n)) => CompareTarget::Lease(op, *n),
            None => {
                return Err(at(ApiError::invalid(
                    "a compare needs a target: value, exists, create_index, mod_index or lease",
                )));
            }
        };
        compares.push(Compare {
            key: c.key.to_vec(),
            target,
        });
    }
    Ok(Txn {
        compares,
        success: txn_branch(limits, "success", &req.success)?,
        failure: txn_branch(limits, "failure", &req.failure)?,
    })
}

fn txn_branch(
    limits: &Limits,
    name: &str,
    ops: &[strata_proto::v1::TxnOp],
) -> Result<Vec<TxnOp>, ApiError> {
    let reads = ops
        .iter()
        .filter(|op| matches!(op.op, Some(txn_op::Op::Get(_)) | Some(txn_op::Op::Range(_))))
        .count();
    if reads > MAX_TXN_READS {
        return Err(ApiError::too_large(format!(
            "`{name}` has {reads} gets and ranges; the limit is {MAX_TXN_READS}"
        )));
    }
    let mut out = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        let at = |e: ApiError| in_part(name, i, e);
        out.push(match &op.op {
            Some(txn_op::Op::Put(p)) => {
                limits.check_key(&p.key).map_err(at)?;
                limits.check_value(&p.value).map_err(at)?;
                TxnOp::Put {
                    key: p.key.to_vec(),
                    value: p.value.to_vec(),
                    lease: p.lease,
                }
            }
            Some(txn_op::Op::Delete(d)) => {
                limits.check_key(&d.key).map_err(at)?;
                TxnOp::Delete {
                    key: d.key.to_vec(),
                }
            }
            Some(txn_op::Op::Get(g)) => {
                limits.check_key(&g.key).map_err(at)?;
                TxnOp::Get {
                    key: g.key.to_vec(),
                }
            }
            Some(txn_op::Op::Range(r)) => {
                for bound in [&r.start, &r.end] {
                    if bound.len() > limits.max_key_bytes {
                        return Err(at(ApiError::too_large(format!(
                            "a range bound is {} bytes; the limit is {}",
                            bound.len(),
                            limits.max_key_bytes
                        ))));
                    }
                }
                if !r.end.is_empty() && r.start > r.end {
                    return Err(at(ApiError::invalid("range start is after its end")));
                }
                if r.limit > MAX_RANGE_KEYS {
                    return Err(at(ApiError::invalid(format!(
                        "limit {} is above the maximum {MAX_RANGE_KEYS}",
                        r.limit
                    ))));
                }
                TxnOp::Range {
                    start: r.start.to_vec(),
                    end: r.end.to_vec(),
                    limit: r.limit,
                }
            }
            None => {
                return Err(at(ApiError::invalid(
                    "an operation needs one of put, delete, get or range",
                )));
            }
        });
    }
    Ok(out)
}

fn in_part(part: &str, i: usize, mut e: ApiError) -> ApiError {
    e.message = format!("{part}[{i}]: {}", e.message);
    e
}

/// The shortest lease TTL: a lease must outlive the elections a leader
/// change takes, or its keys could end before a client can keep it alive.
pub const MIN_LEASE_TTL_MS: u64 = 1_000;
/// The longest lease TTL: a year.
pub const MAX_LEASE_TTL_MS: u64 = 365 * 24 * 3600 * 1000;

/// A lease TTL in ms is between [`MIN_LEASE_TTL_MS`] and
/// [`MAX_LEASE_TTL_MS`].
pub fn lease_ttl(ttl_ms: u64) -> Result<u64, ApiError> {
    if !(MIN_LEASE_TTL_MS..=MAX_LEASE_TTL_MS).contains(&ttl_ms) {
        return Err(ApiError::invalid(format!(
            "a lease's TTL is {MIN_LEASE_TTL_MS} ms to {MAX_LEASE_TTL_MS} ms; got {ttl_ms} ms"
        )));
    }
    Ok(ttl_ms)
}

/// A lease id a client picks: 1 to 2^53 - 1 (what a JSON number carries
/// exactly); 0 asks the cluster to pick.
pub fn lease_id(id: u64) -> Result<u64, ApiError> {
    if id > strata_raft::MAX_LEASE_ID {
        return Err(ApiError::invalid(format!(
            "lease id {id} is above the largest, 2^53 - 1 (what a JSON number carries exactly)"
        )));
    }
    Ok(id)
}

/// A compare-and-swap has a valid key, and its expected and new values (each
/// optional) are within the value limit.
pub fn check_cas(limits: &Limits, req: &CompareAndSwapRequest) -> Result<(), ApiError> {
    limits.check_key(&req.key)?;
    for v in [&req.expected, &req.value].into_iter().flatten() {
        limits.check_value(v)?;
    }
    Ok(())
}

/// What a scan reads: keys in `[start, end)` (no end: to the last key), at
/// most `limit` of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanBounds {
    pub start: Vec<u8>,
    pub end: Option<Vec<u8>>,
    pub limit: usize,
}

/// The bounds of a scan: the limit (0 means the default) is at most
/// `max_scan_limit`, a range's start is not after its end, and a page token
/// lies inside the scanned range, where it becomes the new start.
pub fn scan_bounds(limits: &Limits, req: &ScanRequest) -> Result<ScanBounds, ApiError> {
    let limit = match req.limit {
        0 => limits.default_scan_limit,
        n if n > limits.max_scan_limit => {
            return Err(ApiError::invalid(format!(
                "limit {n} is above the maximum {}",
                limits.max_scan_limit
            )));
        }
        n => n,
    } as usize;
    let (mut start, end): (Vec<u8>, Option<Vec<u8>>) = match &req.selector {
        None => (Vec::new(), None),
        Some(scan_request::Selector::Prefix(p)) => (p.to_vec(), prefix_end(p)),
        Some(scan_request::Selector::Range(r)) => {
            let end = (!r.end.is_empty()).then(|| r.end.to_vec());
            if let Some(e) = &end
                && r.start.as_ref() > e.as_slice()
            {
                return Err(ApiError::invalid("range start is after its end"));
            }
            (r.start.to_vec(), end)
        }
    };
    if !req.page_token.is_empty() {
        let token = req.page_token.to_vec();
        let inside = token >= start && end.as_ref().is_none_or(|e| token <= *e);
        if !inside {
            return Err(ApiError::invalid("page_token does not belong to this scan"));
        }
        start = token;
    }
    Ok(ScanBounds { start, end, limit })
}

/// The longest client request id, in bytes.
pub const MAX_REQUEST_ID_BYTES: usize = 128;

/// A write's client request id: `None` when it carries none (empty), else
/// the id, at most [`MAX_REQUEST_ID_BYTES`] bytes of printable ASCII.
pub fn request_id(id: &str) -> Result<Option<&str>, ApiError> {
    if id.is_empty() {
        return Ok(None);
    }
    if id.len() > MAX_REQUEST_ID_BYTES {
        return Err(ApiError::invalid(format!(
            "request id has {} bytes; at most {MAX_REQUEST_ID_BYTES}",
            id.len()
        )));
    }
    if !id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ApiError::invalid(
            "request id must be printable ASCII without spaces",
        ));
    }
    Ok(Some(id))
}

/// The consistency a read asks for; an unknown value is the client's error.
pub fn consistency(value: i32) -> Result<Consistency, ApiError> {
    Consistency::try_from(value)
        .map_err(|_| ApiError::invalid(format!("unknown consistency {value}")))
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use strata_proto::v1::{BatchOp, DeleteOp, KeyRange, PutOp};

    use super::*;
    use crate::error::ErrorCode;

    fn put(key: &[u8], value: &[u8]) -> BatchOp {
        BatchOp {
            op: Some(batch_op::Op::Put(PutOp {
                key: Bytes::copy_from_slice(key),
                value: Bytes::copy_from_slice(value),
                lease: 0,
            })),
        }
    }

    #[test]
    fn keys_must_be_non_empty_and_within_the_limit() {
        // Proves: the empty key is invalid, an oversized one is too large,
        // and the boundary length is accepted.
        let limits = Limits {
            max_key_bytes: 4,
            ..Limits::default()
        };
        assert_eq!(
            limits.check_key(b"").unwrap_err().code,
            ErrorCode::InvalidArgument
        );
        assert!(limits.check_key(b"abcd").is_ok());
        assert_eq!(
            limits.check_key(b"abcde").unwrap_err().code,
            ErrorCode::PayloadTooLarge
        );
    }

    #[test]
    fn batch_errors_name_the_operation() {
        // Proves: a batch is checked op by op, and the error says which op.
        let limits = Limits::default();
        let req = BatchRequest {
            ops: vec![
                put(b"a", b"1"),
                BatchOp {
                    op: Some(batch_op::Op::Delete(DeleteOp { key: Bytes::new() })),
                },
            ],
            request_id: String::new(),
        };
        let e = batch_ops(&limits, &req).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert_eq!(e.message, "operation 1: key must not be empty");
        let e = batch_ops(
            &limits,
            &BatchRequest {
                ops: vec![],
                request_id: String::new(),
            },
        )
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        let e = batch_ops(
            &limits,
            &BatchRequest {
                ops: vec![BatchOp { op: None }],
                request_id: String::new(),
            },
        )
        .unwrap_err();
        assert_eq!(e.message, "operation 0 is neither put nor delete");
        let ops = batch_ops(
            &limits,
            &BatchRequest {
                ops: vec![put(b"k", b"v")],
                request_id: String::new(),
            },
        )
        .unwrap();
        assert_eq!(
            ops,
            vec![Op::Put {
                key: b"k".to_vec(),
                value: b"v".to_vec()
            }]
        );
    }

    #[test]
    fn oversized_batches_are_too_large() {
        // Proves: more than max_batch_ops operations is PAYLOAD_TOO_LARGE.
        let limits = Limits {
            max_batch_ops: 2,
            ..Limits::default()
        };
        let req = BatchRequest {
            ops: vec![put(b"a", b""), put(b"b", b""), put(b"c", b"")],
            request_id: String::new(),
        };
        assert_eq!(
            batch_ops(&limits, &req).unwrap_err().code,
            ErrorCode::PayloadTooLarge
        );
    }

    #[test]
    fn scan_bounds_follow_selector_limit_and_page_token() {
        // Proves: 0 means the default limit, a prefix scans up to the next
        // prefix, a page token inside the range moves the start, and one
        // outside it or a reversed range is refused.
        let limits = Limits::default();
        let b = scan_bounds(
            &limits,
            &ScanRequest {
                selector: Some(scan_request::Selector::Prefix(Bytes::from_static(b"ab"))),
                page_token: Bytes::from_static(b"ab\x00"),
                ..ScanRequest::default()
            },
        )
        .unwrap();
        assert_eq!(
            b,
            ScanBounds {
                start: b"ab\x00".to_vec(),
                end: Some(b"ac".to_vec()),
                limit: limits.default_scan_limit as usize,
            }
        );
        let outside = ScanRequest {
            selector: Some(scan_request::Selector::Prefix(Bytes::from_static(b"ab"))),
            page_token: Bytes::from_static(b"b"),
            ..ScanRequest::default()
        };
        assert!(scan_bounds(&limits, &outside).is_err());
        let reversed = ScanRequest {
            selector: Some(scan_request::Selector::Range(KeyRange {
                start: Bytes::from_static(b"b"),
                end: Bytes::from_static(b"a"),
            })),
            ..ScanRequest::default()
        };
        assert_eq!(
            scan_bounds(&limits, &reversed).unwrap_err().message,
            "range start is after its end"
        );
        let too_many = ScanRequest {
            limit: limits.max_scan_limit + 1,
            ..ScanRequest::default()
        };
        assert!(scan_bounds(&limits, &too_many).is_err());
    }

    #[test]
    fn unknown_consistency_is_invalid() {
        // Proves: an enum value this node does not know is the client's error.
        assert_eq!(consistency(1).unwrap(), Consistency::Stale);
        assert_eq!(consistency(7).unwrap_err().code, ErrorCode::InvalidArgument);
    }

    #[test]
    fn cas_checks_key_and_both_values() {
        // Proves: the expected value is held to the value limit like the new one.
        let limits = Limits {
            max_value_bytes: 1,
            ..Limits::default()
        };
        let req = CompareAndSwapRequest {
            key: Bytes::from_static(b"k"),
            expected: Some(Bytes::from_static(b"xx")),
            value: None,
            request_id: String::new(),
        };
        assert_eq!(
            check_cas(&limits, &req).unwrap_err().code,
            ErrorCode::PayloadTooLarge
        );
    }
}
