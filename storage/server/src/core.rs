//! The service core: every KV operation, validated and routed once, behind
//! both the REST and the gRPC front ends so their behaviour cannot drift.
//!
//! Writes are proposed on the leader. A follower forwards a write once to the
//! leader over the pooled channel; a forwarded request is never forwarded
//! again. Reads are linearizable (ReadIndex) unless they ask for stale.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use strata_engine::EngineError;
use strata_proto::v1::cluster_client::ClusterClient;
use strata_proto::v1::kv_client::KvClient;
use strata_proto::v1::{
    self as pb, BatchRequest, BatchResponse, CompareAndSwapRequest, CompareAndSwapResponse,
    Consistency, DeleteRequest, DeleteResponse, GetRequest, GetResponse, KeyValue, PutRequest,
    PutResponse, ResponseHeader, ScanRequest, ScanResponse, TransferLeaderRequest,
    TransferLeaderResponse,
};
use strata_raft::{ApplyResult, Command, PeerHandle, ProposeError};
use tonic::Code;
use tonic::transport::Channel;

use crate::config::{Limits, Timing};
use crate::error::{ApiError, ErrorCode};
use crate::peers::PeerChannels;
use crate::validate::{self, ScanBounds};

/// Metadata key marking a request a follower forwarded to the leader.
pub const FORWARDED_HEADER: &str = "x-strata-forwarded";

/// Whether a request may still be forwarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hop {
    /// From a client: a follower may forward it to the leader.
    Client,
    /// Already forwarded once: serve it here or fail.
    Forwarded,
}

pub struct Core {
    id: u64,
    peer: PeerHandle,
    peers: Arc<PeerChannels>,
    limits: Limits,
    timing: Timing,
}

/// Where a write goes.
pub(crate) enum Route {
    Here,
    Leader(Channel),
}

impl Core {
    pub fn new(peer: PeerHandle, peers: Arc<PeerChannels>, limits: Limits, timing: Timing) -> Self {
        Core {
            id: peers.self_id(),
            peer,
            peers,
            limits,
            timing,
        }
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn peer(&self) -> &PeerHandle {
        &self.peer
    }

    pub fn peers(&self) -> &PeerChannels {
        &self.peers
    }

    pub fn request_timeout(&self) -> Duration {
        self.timing.request_timeout()
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    fn header(&self, index: u64) -> ResponseHeader {
        let st = self.peer.status();
        ResponseHeader {
            node_id: self.id,
            term: st.term,
            index,
            leader_id: st.leader_id,
        }
    }

    pub(crate) fn route(&self, hop: Hop) -> Result<Route, ApiError> {
        let st = self.peer.status();
        if let Some(f) = st.failure {
            return Err(ApiError::storage(&f));
        }
        if st.leader_id == self.id {
            return Ok(Route::Here);
        }
        if st.leader_id == 0 {
            return Err(ApiError::unavailable("no leader is known; retry shortly"));
        }
        let address = self.peers.address(st.leader_id);
        if hop == Hop::Forwarded {
            return Err(ApiError::unavailable("this node is no longer the leader")
                .with_leader(st.leader_id, address));
        }
        let channel = self.peers.channel(st.leader_id).ok_or_else(|| {
            ApiError::unavailable(format!("leader {} is not a known member", st.leader_id))
        })?;
        Ok(Route::Leader(channel))
    }

    fn kv_client(&self, channel: Channel) -> KvClient<Channel> {
        KvClient::new(channel)
            .max_decoding_message_size(self.limits.max_request_bytes)
            .max_encoding_message_size(self.limits.max_request_bytes)
    }

    pub(crate) fn forward_request<T>(&self, body: T) -> tonic::Request<T> {
        let mut req = tonic::Request::new(body);
        req.metadata_mut().insert(
            FORWARDED_HEADER,
            tonic::metadata::MetadataValue::from(self.id),
        );
        req.set_timeout(self.timing.request_timeout() + Duration::from_millis(500));
        req
    }

    async fn propose(&self, command: Command) -> Result<(u64, ApplyResult), ApiError> {
        match tokio::time::timeout(self.timing.request_timeout(), self.peer.propose(command)).await
        {
            Ok(r) => r.map_err(|e| self.propose_error(e, true)),
            Err(_) => Err(ApiError::from_propose(ProposeError::Timeout, true)),
        }
    }

    fn propose_error(&self, e: ProposeError, write: bool) -> ApiError {
        let err = ApiError::from_propose(e, write);
        match err.leader_id {
            Some(id) => {
                let addr = self.peers.address(id);
                err.with_leader(id, addr)
            }
            None => err,
        }
    }

    /// Waits until local state reflects every write committed before the
    /// call, unless the read asked for stale data. Returns the applied index.
    async fn read_barrier(&self, consistency: i32) -> Result<u64, ApiError> {
        let consistency = validate::consistency(consistency)?;
        let st = self.peer.status();
        if let Some(f) = st.failure {
            return Err(ApiError::storage(&f));
        }
        match consistency {
            Consistency::Stale => Ok(st.applied_index),
            Consistency::Linearizable => {
                match tokio::time::timeout(self.timing.request_timeout(), self.peer.read_index())
                    .await
                {
                    Ok(r) => r.map_err(|e| self.propose_error(e, false)),
                    Err(_) => Err(ApiError::from_propose(ProposeError::Timeout, false)),
                }
            }
        }
    }

    pub async fn put(&self, req: PutRequest, hop: Hop) -> Result<PutResponse, ApiError> {
        self.limits.check_key(&req.key)?;
        self.limits.check_value(&req.value)?;
        match self.route(hop)? {
            Route::Leader(ch) => self
                .kv_client(ch)
                .put(self.forward_request(req))
                .await
                .map(|r| r.into_inner())
                .map_err(|s| forward_error(&s)),
            Route::Here => {
                let command = Command::Put {
                    key: req.key.to_vec(),
                    value: req.value.to_vec(),
                };
                let (index, _) = self.propose(command).await?;
                Ok(PutResponse {
                    header: Some(self.header(index)),
                })
            }
        }
    }

    pub async fn delete(&self, req: DeleteRequest, hop: Hop) -> Result<DeleteResponse, ApiError> {
        self.limits.check_key(&req.key)?;
        match self.route(hop)? {
            Route::Leader(ch) => self
                .kv_client(ch)
                .delete(self.forward_request(req))
                .await
                .map(|r| r.into_inner())
                .map_err(|s| forward_error(&s)),
            Route::Here => {
                let (index, result) = self
                    .propose(Command::Delete {
                        key: req.key.to_vec(),
                    })
                    .await?;
                let deleted = matches!(result, ApplyResult::Deleted { existed: true });
                Ok(DeleteResponse {
                    header: Some(self.header(index)),
                    deleted,
                })
            }
        }
    }

    pub async fn batch(&self, req: BatchRequest, hop: Hop) -> Result<BatchResponse, ApiError> {
        let ops = validate::batch_ops(&self.limits, &req)?;
        match self.route(hop)? {
            Route::Leader(ch) => self
                .kv_client(ch)
                .batch(self.forward_request(req))
                .await
                .map(|r| r.into_inner())
                .map_err(|s| forward_error(&s)),
            Route::Here => {
                let (index, _) = self.propose(Command::Batch(ops)).await?;
                Ok(BatchResponse {
                    header: Some(self.header(index)),
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
        match self.route(hop)? {
            Route::Leader(ch) => self
                .kv_client(ch)
                .compare_and_swap(self.forward_request(req))
                .await
                .map(|r| r.into_inner())
                .map_err(|s| forward_error(&s)),
            Route::Here => {
                let command = Command::Cas {
                    key: req.key.to_vec(),
                    expected: req.expected.map(|b| b.to_vec()),
                    value: req.value.map(|b| b.to_vec()),
                };
                let (index, result) = self.propose(command).await?;
                let ApplyResult::Cas { succeeded, current } = result else {
                    return Err(ApiError::new(
                        ErrorCode::Internal,
                        "compare-and-swap applied as another command",
                    ));
                };
                Ok(CompareAndSwapResponse {
                    header: Some(self.header(index)),
                    succeeded,
                    current: current.map(Bytes::from),
                })
            }
        }
    }

    pub async fn get(&self, req: GetRequest) -> Result<GetResponse, ApiError> {
        self.limits.check_key(&req.key)?;
        let index = self.read_barrier(req.consistency).await?;
        let value = self
            .peer
            .state_machine()
            .get(&req.key)
            .map_err(engine_error)?;
        Ok(GetResponse {
            header: Some(self.header(index)),
            found: value.is_some(),
            value: value.map(Bytes::from).unwrap_or_default(),
        })
    }

    pub async fn scan(&self, req: ScanRequest) -> Result<ScanResponse, ApiError> {
        let ScanBounds { start, end, limit } = validate::scan_bounds(&self.limits, &req)?;
        let index = self.read_barrier(req.consistency).await?;
        let mut pairs = self
            .peer
            .state_machine()
            .scan(&start, end.as_deref(), limit + 1)
            .map_err(engine_error)?;
        let next_page_token = if pairs.len() > limit {
            pairs.truncate(limit);
            // The smallest key after the last one returned.
            let mut next = pairs.last().map(|(k, _)| k.clone()).unwrap_or_default();
            next.push(0);
            Bytes::from(next)
        } else {
            Bytes::new()
        };
        let kvs = pairs
            .into_iter()
            .map(|(k, v)| KeyValue {
                key: Bytes::from(k),
                value: if req.keys_only {
                    Bytes::new()
                } else {
                    Bytes::from(v)
                },
            })
            .collect();
        Ok(ScanResponse {
            header: Some(self.header(index)),
            kvs,
            next_page_token,
        })
    }

    /// Hands leadership to `target` and waits until it leads.
    pub async fn transfer_leader(
        &self,
        req: TransferLeaderRequest,
        hop: Hop,
    ) -> Result<TransferLeaderResponse, ApiError> {
        let target = req.target_id;
        if !self.peers.members().contains_key(&target) {
            return Err(ApiError::invalid(format!("node {target} is not a member")));
        }
        match self.route(hop)? {
            Route::Leader(ch) => ClusterClient::new(ch)
                .transfer_leader(self.forward_request(req))
                .await
                .map(|r| r.into_inner())
                .map_err(|s| forward_error(&s)),
            Route::Here => {
                self.peer
                    .transfer_leader(target)
                    .await
                    .map_err(|e| self.propose_error(e, false))?;
                let deadline = tokio::time::Instant::now() + self.timing.request_timeout();
                loop {
                    let st = self.peer.status();
                    if st.leader_id == target {
                        return Ok(TransferLeaderResponse {
                            leader_id: target,
                            term: st.term,
                        });
                    }
                    if tokio::time::Instant::now() > deadline {
                        return Err(ApiError::unavailable(format!(
                            "leadership did not move to node {target} in time; the leader is {}",
                            st.leader_id
                        ))
                        .with_leader(st.leader_id, self.peers.address(st.leader_id)));
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        }
    }

    /// This node's own view of its group.
    pub fn local_status(&self) -> pb::NodeStatus {
        let st = self.peer.status();
        let role = match st.role {
            strata_raft::Role::Leader => pb::Role::Leader,
            strata_raft::Role::Follower => pb::Role::Follower,
            strata_raft::Role::Candidate => pb::Role::Candidate,
            strata_raft::Role::Learner => pb::Role::Learner,
        };
        let engine_health = self.peer.state_machine().engine().health();
        let error = match (&st.failure, &engine_health) {
            (Some(f), _) => f.reason.clone(),
            (None, Err(e)) => e.to_string(),
            (None, Ok(())) => String::new(),
        };
        pb::NodeStatus {
            id: self.id,
            address: self.peers.address(self.id).unwrap_or_default().to_string(),
            role: role as i32,
            term: st.term,
            commit_index: st.commit_index,
            applied_index: st.applied_index,
            healthy: error.is_empty(),
            leader_id: st.leader_id,
            group_id: st.group_id,
            error,
        }
    }
}

/// Maps the outcome of a forwarded write. A status the leader produced is
/// passed on as is. A transport failure is "not applied" only when the
/// connection was never made; otherwise the leader may have applied the
/// write, so the outcome is unknown.
pub(crate) fn forward_error(status: &tonic::Status) -> ApiError {
    let from_leader = status
        .metadata()
        .contains_key(crate::error::RETRYABLE_HEADER)
        || !matches!(
            status.code(),
            Code::Unavailable | Code::Unknown | Code::Cancelled | Code::Internal
        );
    if from_leader {
        return ApiError::from_status(status);
    }
    if never_connected(status) {
        return ApiError::unavailable(format!("the leader is unreachable: {}", status.message()));
    }
    ApiError::new(
        ErrorCode::OutcomeUnknown,
        format!(
            "the connection to the leader failed mid-request ({}); the write may or may not be applied",
            status.message()
        ),
    )
}

/// Whether a transport failure happened before any byte of the request left.
fn never_connected(status: &tonic::Status) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        let text = e.to_string().to_ascii_lowercase();
        if text.contains("tcp connect error")
            || text.contains("(connect)")
            || text.contains("connection refused")
        {
            return true;
        }
        source = e.source();
    }
    false
}

fn engine_error(e: EngineError) -> ApiError {
    match e {
        EngineError::NoSpace { .. } => ApiError::new(ErrorCode::StorageFull, e.to_string()),
        other => ApiError::new(ErrorCode::StorageFailed, other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::RETRYABLE_HEADER;

    #[tokio::test]
    async fn refused_connection_to_the_leader_is_retryable() {
        // A port nothing listens on: the request never leaves this node.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let channel = tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
            .unwrap()
            .connect_lazy();
        let status = KvClient::new(channel)
            .put(PutRequest::default())
            .await
            .expect_err("nothing listens there");
        assert_eq!(
            forward_error(&status).code,
            ErrorCode::Unavailable,
            "{status:?}"
        );
    }

    #[test]
    fn broken_stream_to_the_leader_is_outcome_unknown() {
        let status = tonic::Status::unavailable("connection reset");
        assert_eq!(forward_error(&status).code, ErrorCode::OutcomeUnknown);
    }

    #[test]
    fn the_leaders_own_answers_pass_through() {
        let mut status = tonic::Status::unavailable("no leader");
        status.metadata_mut().insert(
            RETRYABLE_HEADER,
            tonic::metadata::MetadataValue::from_static("true"),
        );
        assert_eq!(forward_error(&status).code, ErrorCode::Unavailable);
        let invalid = tonic::Status::invalid_argument("empty key");
        assert_eq!(forward_error(&invalid).code, ErrorCode::InvalidArgument);
    }
}
