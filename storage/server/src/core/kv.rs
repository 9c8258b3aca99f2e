//! The KV operations: writes are proposed here on the leader (or forwarded
//! to it once), reads wait for their consistency barrier and are served from
//! the local engine.

use bytes::Bytes;
use strata_engine::EngineError;
use strata_proto::v1::kv_client::KvClient;
use strata_proto::v1::{
    BatchRequest, BatchResponse, CompareAndSwapRequest, CompareAndSwapResponse, Consistency,
    DeleteRequest, DeleteResponse, DeleteResult, GetRequest, GetResponse, GetResult, KeyValue,
    PutRequest, PutResponse, PutResult, RangeResult, ScanRequest, ScanResponse, TxnOpResult,
    TxnRequest, TxnResponse, txn_op_result,
};
use strata_raft::PeerHandle;
use strata_raft::{ApplyResult, Command, ProposeError, TxnOpResult as Applied, Versioned};
use tonic::transport::Channel;

use super::lease::lease_not_found;
use super::{Core, Hop, Route};
use crate::error::{ApiError, ErrorCode};
use crate::scan_views::PageToken;
use crate::validate::{self, ScanBounds};

impl Core {
    fn kv_client(&self, channel: Channel) -> KvClient<Channel> {
        KvClient::new(channel)
            .max_decoding_message_size(self.limits.max_request_bytes)
            .max_encoding_message_size(self.limits.max_request_bytes)
    }

    pub async fn put(&self, req: PutRequest, hop: Hop) -> Result<PutResponse, ApiError> {
        self.limits.check_key(&req.key)?;
        self.limits.check_value(&req.value)?;
        if req.lease != 0 && req.ttl_ms != 0 {
            return Err(ApiError::invalid(
                "a put names a lease or a TTL (which grants one), not both",
            ));
        }
        if req.ttl_ms != 0 {
            validate::lease_ttl(req.ttl_ms)?;
        }
        let group = self.group_for_key(&req.key, req.lease != 0 || req.ttl_ms != 0)?;
        match self.route_in(&group, hop)? {
            Route::Leader(leader) => {
                let put = |ch, r| async move { self.kv_client(ch).put(r).await };
                self.forward(leader, req, put).await
            }
            Route::Here => {
                let (key, value) = (req.key.to_vec(), req.value.to_vec());
                let command = match (req.lease, req.ttl_ms) {
                    (0, 0) => Command::Put { key, value },
                    (lease, 0) => Command::PutLeased { key, value, lease },
                    (0, ttl_ms) => Command::PutWithTtl { key, value, ttl_ms },
                    _ => unreachable!("checked before routing"),
                };
                let written = self.propose_in(&group, command, &req.request_id).await?;
                let lease = match written.result {
                    ApplyResult::Written => req.lease,
                    ApplyResult::LeaseGranted { id, ttl_ms } => {
                        self.lessor.start(id, ttl_ms);
                        id
                    }
                    ApplyResult::LeaseNotFound { id } => return Err(lease_not_found(id)),
                    ref other => {
                        return Err(ApiError::new(
                            ErrorCode::Internal,
                            format!("a put applied as another command: {other:?}"),
                        ));
                    }
                };
                Ok(PutResponse {
                    header: Some(self.write_header_in(&group, &written)),
                    lease,
                })
            }
        }
    }

    pub async fn delete(&self, req: DeleteRequest, hop: Hop) -> Result<DeleteResponse, ApiError> {
        self.limits.check_key(&req.key)?;
        let group = self.group_for_key(&req.key, false)?;
        match self.route_in(&group, hop)? {
            Route::Leader(leader) => {
                let delete = |ch, r| async move { self.kv_client(ch).delete(r).await };
                self.forward(leader, req, delete).await
            }
            Route::Here => {
                let command = Command::Delete {
                    key: req.key.to_vec(),
                };
                let written = self.propose_in(&group, command, &req.request_id).await?;
                let deleted = matches!(written.result, ApplyResult::Deleted { existed: true });
                Ok(DeleteResponse {
                    header: Some(self.write_header_in(&group, &written)),
                    deleted,
                })
            }
        }
    }

    pub async fn batch(&self, req: BatchRequest, hop: Hop) -> Result<BatchResponse, ApiError> {
        let command = Command::Batch(validate::batch_ops(&self.limits, &req)?);
        let group = self.group_for(&command)?;
        match self.route_in(&group, hop)? {
            Route::Leader(leader) => {
                let batch = |ch, r| async move { self.kv_client(ch).batch(r).await };
                self.forward(leader, req, batch).await
            }
            Route::Here => {
                let written = self.propose_in(&group, command, &req.request_id).await?;
                Ok(BatchResponse {
                    header: Some(self.write_header_in(&group, &written)),
                })
            }
        }
    }

    pub async fn compare_and_swap(
        &self,
        req: CompareAndSwapRequest,
        hop: Hop,
    ) -> Result<CompareAndSwapResponse, ApiError> {
        validate::check_cas(&self.limits, &req)?;
        let group = self.group_for_key(&req.key, false)?;
        match self.route_in(&group, hop)? {
            Route::Leader(leader) => {
                let cas = |ch, r| async move { self.kv_client(ch).compare_and_swap(r).await };
                self.forward(leader, req, cas).await
            }
            Route::Here => {
                let command = Command::Cas {
                    key: req.key.to_vec(),
                    expected: req.expected.map(|b| b.to_vec()),
                    value: req.value.map(|b| b.to_vec()),
                };
                let written = self.propose_in(&group, command, &req.request_id).await?;
                let ApplyResult::Cas { succeeded, current } = written.result.clone() else {
                    return Err(ApiError::new(
                        ErrorCode::Internal,
                        "compare-and-swap applied as another command",
                    ));
                };
                Ok(CompareAndSwapResponse {
                    header: Some(self.write_header_in(&group, &written)),
                    succeeded,
                    current: current.map(Bytes::from),
                })
            }
        }
    }

    pub async fn txn(&self, req: TxnRequest, hop: Hop) -> Result<TxnResponse, ApiError> {
        let command = Command::Txn(validate::txn(&self.limits, &req)?);
        let group = self.group_for(&command)?;
        match self.route_in(&group, hop)? {
            Route::Leader(leader) => {
                let forward = |ch, r| async move { self.kv_client(ch).txn(r).await };
                self.forward(leader, req, forward).await
            }
            Route::Here => {
                let written = self.propose_in(&group, command, &req.request_id).await?;
                let result = match written.result.clone() {
                    ApplyResult::Txn(result) => result,
                    ApplyResult::LeaseNotFound { id } => return Err(lease_not_found(id)),
                    other => {
                        return Err(ApiError::new(
                            ErrorCode::Internal,
                            format!("a transaction applied as another command: {other:?}"),
                        ));
                    }
                };
                let branch = if result.succeeded {
                    &req.success
                } else {
                    &req.failure
                };
                let results = result
                    .results
                    .into_iter()
                    .zip(branch)
                    .map(|(r, op)| TxnOpResult {
                        result: Some(txn_op_result(r, op)),
                    })
                    .collect();
                Ok(TxnResponse {
                    header: Some(self.write_header_in(&group, &written)),
                    succeeded: result.succeeded,
                    results,
                })
            }
        }
    }

    /// Waits until local state reflects every write committed before the
    /// call, unless the read asked for stale data. Returns the applied index.
    pub(crate) async fn read_barrier(&self, consistency: i32) -> Result<u64, ApiError> {
        self.read_barrier_in(&self.peer, consistency).await
    }

    /// [`read_barrier`](Self::read_barrier) on `group`.
    pub(crate) async fn read_barrier_in(
        &self,
        group: &PeerHandle,
        consistency: i32,
    ) -> Result<u64, ApiError> {
        let consistency = validate::consistency(consistency)?;
        let st = group.status();
        if let Some(f) = st.failure {
            return Err(ApiError::storage(&f));
        }
        match consistency {
            Consistency::Stale => Ok(st.applied_index),
            Consistency::Linearizable if self.stale_reads => Ok(st.applied_index),
            Consistency::Linearizable => {
                match tokio::time::timeout(self.timing.request_timeout(), group.read_index()).await
                {
                    Ok(r) => r.map_err(|e| self.propose_error(e, false)),
                    Err(_) => Err(ApiError::from_propose(ProposeError::Timeout, false)),
                }
            }
        }
    }

    pub async fn get(&self, req: GetRequest) -> Result<GetResponse, ApiError> {
        self.limits.check_key(&req.key)?;
        // A split applied while the read waited for its barrier gives the
        // key to the group split off: the read is then served by that one.
        for _ in 0..READ_TRIES {
            let group = self.group_of(&req.key)?;
            let index = self.read_barrier_in(&group, req.consistency).await?;
            let state_machine = group.state_machine();
            if !state_machine
                .span()
                .map_err(engine_error)?
                .contains(&req.key)
            {
                continue;
            }
            let found = state_machine
                .get_versioned(&req.key)
                .map_err(engine_error)?;
            let (create_index, mod_index, lease) = found
                .as_ref()
                .map_or((0, 0, 0), |v| (v.create_index, v.mod_index, v.lease));
            return Ok(GetResponse {
                header: Some(self.header_in(&group, index)),
                found: found.is_some(),
                value: found.map(|v| Bytes::from(v.value)).unwrap_or_default(),
                create_index,
                mod_index,
                lease,
            });
        }
        Err(moved_while_read(&req.key))
    }

    /// One page of a scan. Each range the page reaches is read from a view
    /// of the data taken after that range's read barrier; the pages after
    /// it read from the view the page before ended in (see
    /// `crate::scan_views`), so a scan sees one state of each range. The
    /// header names the index of the range the page starts in.
    pub async fn scan(&self, mut req: ScanRequest) -> Result<ScanResponse, ApiError> {
        let token = if req.page_token.is_empty() {
            None
        } else {
            let token = PageToken::decode(&req.page_token)?;
            req.page_token = token.next.clone();
            Some(token)
        };
        let ScanBounds { start, end, limit } = validate::scan_bounds(&self.limits, &req)?;
        validate::consistency(req.consistency)?;
        // The view the page before ended in.
        let mut kept = match &token {
            Some(token) => {
                let (view, index) = self.scan_views.get(token)?;
                Some((view, index, Some(token.view())))
            }
            None => None,
        };
        let mut cursor = start;
        let mut pairs = Vec::new();
        let mut header = None;
        let next_page_token = loop {
            let group = self.group_of(&cursor)?;
            let state_machine = group.state_machine();
            let (view, index, id) = match kept.take() {
                Some(kept) => kept,
                None => {
                    let index = self.read_barrier_in(&group, req.consistency).await?;
                    (state_machine.read_view(), index, None)
                }
            };
            header.get_or_insert_with(|| self.header_in(&group, index));
            let span = state_machine.span().map_err(engine_error)?;
            let before = pairs.len();
            let part = state_machine
                .scan_versioned_at(&view, &cursor, end.as_deref(), limit + 1 - before)
                .map_err(engine_error)?;
            pairs.extend(part);
            if pairs.len() > limit {
                pairs.truncate(limit);
                // The next page starts at the smallest key after the last
                // one returned, or at this range's part when the page
                // holds none of it (then it reads this range's view).
                let next = if before == limit {
                    cursor
                } else {
                    let mut next = pairs.last().map(|(k, _)| k.clone()).unwrap_or_default();
                    next.push(0);
                    next
                };
                let id = id.unwrap_or_else(|| self.scan_views.open(view, index));
                break self.scan_views.token(id, Bytes::from(next)).encode();
            }
            if let Some(id) = id {
                self.scan_views.release(id);
            }
            // This range's part is read: on to the next range, when the
            // scan reaches past this one's end. (A split applied since the
            // range was looked up may have ended it before the cursor: then
            // the cursor stays, and the range now holding it is looked up.)
            match span.end {
                Some(range_end) if end.as_deref().is_none_or(|e| range_end.as_slice() < e) => {
                    if range_end > cursor {
                        cursor = range_end;
                    }
                }
                _ => break Bytes::new(),
            }
        };
        let kvs = pairs
            .into_iter()
            .map(|(k, mut v)| {
                if req.keys_only {
                    v.value = Vec::new();
                }
                key_value(k, v)
            })
            .collect();
        Ok(ScanResponse {
            header,
            kvs,
            next_page_token,
        })
    }
}

/// How often a read looks for the group serving its key again when a split
/// moved the key while the read waited.
const READ_TRIES: usize = 3;

fn moved_while_read(key: &[u8]) -> ApiError {
    ApiError::unavailable(format!(
        "the range holding key {:?} was split {READ_TRIES} times while it was read; retry",
        String::from_utf8_lossy(key)
    ))
}

/// One operation's result as the API returns it (`op`: the operation).
fn txn_op_result(applied: Applied, op: &strata_proto::v1::TxnOp) -> txn_op_result::Result {
    use txn_op_result::Result as R;
    match applied {
        Applied::Put => R::Put(PutResult {}),
        Applied::Delete { existed } => R::Delete(DeleteResult { deleted: existed }),
        Applied::Get { found } => {
            let key = match &op.op {
                Some(strata_proto::v1::txn_op::Op::Get(g)) => g.key.to_vec(),
                _ => Vec::new(),
            };
            R::Get(GetResult {
                found: found.is_some(),
                kv: found.map(|v| key_value(key, v)),
            })
        }
        Applied::Range { pairs, more } => R::Range(RangeResult {
            kvs: pairs.into_iter().map(|(k, v)| key_value(k, v)).collect(),
            more,
        }),
    }
}

/// A key's pair as the API returns it.
fn key_value(key: Vec<u8>, v: Versioned) -> KeyValue {
    KeyValue {
        key: Bytes::from(key),
        value: Bytes::from(v.value),
        create_index: v.create_index,
        mod_index: v.mod_index,
        lease: v.lease,
    }
}

fn engine_error(e: EngineError) -> ApiError {
    match e {
        EngineError::NoSpace { .. } => ApiError::new(ErrorCode::StorageFull, e.to_string()),
        other => ApiError::new(ErrorCode::StorageFailed, other.to_string()),
    }
}
