//! A Rust client for Strata's gRPC API (`strata.v1.KV` and
//! `strata.v1.Cluster`). Point it at the gateway (Envoy) or at any node.

#![forbid(unsafe_code)]

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use strata_proto::v1::cluster_client::ClusterClient;
use strata_proto::v1::kv_client::KvClient;
use strata_proto::v1::lease_client::LeaseClient;
use strata_proto::v1::{
    BatchOp, BatchRequest, CompareAndSwapRequest, Consistency, DeleteOp, DeleteRequest, GetRequest,
    KeyRange, KeyValue, PutOp, PutRequest, ResponseHeader, ScanRequest, StatusRequest,
    StatusResponse, TxnRequest, TxnResponse, batch_op, scan_request,
};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

pub use backup::Restored;
pub use credential::{Credential, Transport};
pub use lease::KeepAlive;
pub use once::REQUEST_ID_METADATA;
pub use strata_proto::backup as proto_backup;
pub use strata_proto::v1 as proto;
pub use watch::{WatchSelector, Watcher};

use once::RequestIds;

mod backup;
mod credential;
mod lease;
pub mod once;
pub mod txn;
mod watch;

/// A client error: the transport failed, or the server answered with a status.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot reach {endpoint}: {source}")]
    Connect {
        endpoint: String,
        #[source]
        source: tonic::transport::Error,
    },
    /// The server's status, shown by its gRPC name (`UNAUTHENTICATED`,
    /// `PERMISSION_DENIED`, ...) and its message.
    #[error("{}: {}", code_name(.0.code()), .0.message())]
    Status(tonic::Status),
    #[error(transparent)]
    Backup(#[from] strata_proto::backup::BackupError),
    #[error("{0}")]
    Io(std::io::Error),
    #[error("the cluster holds data (key {key:?}); a backup is restored into an empty cluster")]
    NotEmpty { key: String },
    #[error("{0}")]
    Token(String),
}

impl From<tonic::Status> for ClientError {
    fn from(status: tonic::Status) -> Self {
        ClientError::Status(status)
    }
}

/// A gRPC status code by its name in the gRPC specification
/// (`UNAUTHENTICATED`), as the REST API's error bodies name it too.
pub fn code_name(code: tonic::Code) -> &'static str {
    use tonic::Code;
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

/// Metadata the node, and the gateway for requests it never sent to a node,
/// put on an UNAVAILABLE or RESOURCE_EXHAUSTED status to say that nothing
/// was applied.
pub const RETRYABLE_METADATA: &str = "x-strata-retryable";

impl ClientError {
    /// True when the server said nothing was applied, so sending the request
    /// again cannot apply it twice: an UNAVAILABLE status, or the
    /// RESOURCE_EXHAUSTED of a leader whose write budget is spent, marked
    /// `x-strata-retryable: true` (a full disk's RESOURCE_EXHAUSTED is not). An unmarked UNAVAILABLE is not enough:
    /// tonic reports a connection that died mid-call that way, and an
    /// intermediary may turn any 502/503/504 into it, both of which can
    /// follow a write that was applied. DEADLINE_EXCEEDED, CANCELLED and
    /// UNKNOWN mean the outcome is unknown and are never retryable.
    pub fn is_retryable(&self) -> bool {
        let ClientError::Status(status) = self else {
            return false;
        };
        matches!(
            status.code(),
            tonic::Code::Unavailable | tonic::Code::ResourceExhausted
        ) && status
            .metadata()
            .get(RETRYABLE_METADATA)
            .is_some_and(|v| v == "true")
    }
}

/// Which keys a scan covers.
#[derive(Debug, Clone)]
pub enum ScanSelector {
    All,
    Prefix(Vec<u8>),
    /// `[start, end)`; an empty end means to the end of the key space.
    Range {
        start: Vec<u8>,
        end: Vec<u8>,
    },
}

/// One page of a scan.
#[derive(Debug, Clone)]
pub struct ScanPage {
    pub kvs: Vec<KeyValue>,
    /// Pass back to continue; empty when the scan is complete.
    pub next_page_token: Vec<u8>,
}

/// What a client trusts and shows over TLS (an `https://` endpoint).
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// The CA certificates (PEM) a server's certificate must chain to: the
    /// cluster's `ca.pem` (`strata tls init`), or whoever issued the
    /// gateway's. None: the endpoint must be `http://`.
    pub ca_pem: Option<Vec<u8>>,
    /// A certificate and its key (PEM) to show the server, for a node that
    /// requires one (`strata tls cert`).
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
}

/// A cheap-to-clone client over one HTTP/2 connection.
#[derive(Clone)]
pub struct Client {
    channel: Channel,
    kv: KvClient<Transport>,
    lease: LeaseClient<Transport>,
    cluster: ClusterClient<Transport>,
    /// With request ids (`with_request_ids`): where each write's id comes
    /// from.
    ids: Option<Arc<RequestIds>>,
}

impl Client {
    /// Connects to `endpoint` such as `http://127.0.0.1:8080`.
    pub async fn connect(endpoint: &str) -> Result<Self, ClientError> {
        Self::connect_tls(endpoint, &TlsOptions::default()).await
    }

    /// Connects to `endpoint`; an `https://` one with TLS, trusting
    /// `tls.ca_pem` (ALPN h2) and showing `tls.identity` when asked.
    pub async fn connect_tls(endpoint: &str, tls: &TlsOptions) -> Result<Self, ClientError> {
        let failed = |source| ClientError::Connect {
            endpoint: endpoint.to_string(),
            source,
        };
        let mut builder = Endpoint::from_shared(endpoint.to_string())
            .map_err(failed)?
            .connect_timeout(Duration::from_secs(2))
            .tcp_nodelay(true);
        if let Some(ca) = &tls.ca_pem {
            let mut config = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca));
            if let Some((cert, key)) = &tls.identity {
                config = config.identity(Identity::from_pem(cert, key));
            }
            builder = builder.tls_config(config).map_err(failed)?;
        }
        let channel = builder.connect().await.map_err(failed)?;
        Ok(Self::from_channel(channel))
    }

    pub fn from_channel(channel: Channel) -> Self {
        Self::with_credential(channel, Credential::default(), None)
    }

    fn with_credential(
        channel: Channel,
        credential: Credential,
        ids: Option<Arc<RequestIds>>,
    ) -> Self {
        let transport = || InterceptedService::new(channel.clone(), credential.clone());
        Client {
            kv: KvClient::new(transport())
                .max_decoding_message_size(64 << 20)
                .max_encoding_message_size(64 << 20),
            lease: LeaseClient::new(transport()),
            cluster: ClusterClient::new(transport()),
            channel,
            ids,
        }
    }

    /// This client, sending `token` (as `strata auth token` prints it) with
    /// every call; the cluster answers with what the token's role allows.
    pub fn with_token(self, token: &str) -> Result<Self, ClientError> {
        let credential = Credential::bearer(token).map_err(ClientError::Token)?;
        Ok(Self::with_credential(self.channel, credential, self.ids))
    }

    /// This client, giving every write a request id of its own and sending
    /// it again, with the same id, until its outcome is known (for up to
    /// 30 s): after a timeout, a lost connection or a leader change, the
    /// retry is answered with the first attempt's outcome (`replayed` in
    /// its header) and never applied twice. See [`once`].
    pub fn with_request_ids(mut self) -> Self {
        self.ids = Some(Arc::new(RequestIds::new()));
        self
    }

    /// Sends a write made by `make` (given its request id, empty without
    /// one), with this client's retries when it gives ids.
    async fn write<T, Fut>(&self, make: impl Fn(String) -> Fut) -> Result<T, ClientError>
    where
        Fut: std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        match &self.ids {
            None => Ok(make(String::new()).await?.into_inner()),
            Some(ids) => Ok(once::send(ids.next(), make).await?.into_inner()),
        }
    }

    pub async fn put(
        &self,
        key: impl Into<Bytes>,
        value: impl Into<Bytes>,
    ) -> Result<ResponseHeader, ClientError> {
        let (key, value) = (key.into(), value.into());
        let r = self
            .write(|request_id| {
                let req = once::request(
                    PutRequest {
                        key: key.clone(),
                        value: value.clone(),
                        request_id: request_id.clone(),
                        ..PutRequest::default()
                    },
                    &request_id,
                );
                let mut kv = self.kv.clone();
                async move { kv.put(req).await }
            })
            .await?;
        Ok(r.header.unwrap_or_default())
    }

    /// Reads a key; `stale` serves from whichever node answers without a
    /// ReadIndex round.
    pub async fn get(
        &self,
        key: impl Into<Bytes>,
        stale: bool,
    ) -> Result<Option<Bytes>, ClientError> {
        let consistency = if stale {
            Consistency::Stale
        } else {
            Consistency::Linearizable
        };
        let r = self
            .kv
            .clone()
            .get(GetRequest {
                key: key.into(),
                consistency: consistency as i32,
            })
            .await?
            .into_inner();
        Ok(r.found.then_some(r.value))
    }

    /// Deletes a key; returns whether it existed.
    pub async fn delete(&self, key: impl Into<Bytes>) -> Result<bool, ClientError> {
        let key = key.into();
        let r = self
            .write(|request_id| {
                let req = once::request(
                    DeleteRequest {
                        key: key.clone(),
                        request_id: request_id.clone(),
                    },
                    &request_id,
                );
                let mut kv = self.kv.clone();
                async move { kv.delete(req).await }
            })
            .await?;
        Ok(r.deleted)
    }

    pub async fn scan(
        &self,
        selector: ScanSelector,
        limit: u32,
        page_token: Vec<u8>,
        keys_only: bool,
    ) -> Result<ScanPage, ClientError> {
        let selector = match selector {
            ScanSelector::All => None,
            ScanSelector::Prefix(p) => Some(scan_request::Selector::Prefix(p.into())),
            ScanSelector::Range { start, end } => Some(scan_request::Selector::Range(KeyRange {
                start: start.into(),
                end: end.into(),
            })),
        };
        let r = self
            .kv
            .clone()
            .scan(ScanRequest {
                selector,
                limit,
                page_token: page_token.into(),
                consistency: Consistency::Linearizable as i32,
                keys_only,
            })
            .await?
            .into_inner();
        Ok(ScanPage {
            kvs: r.kvs,
            next_page_token: r.next_page_token.to_vec(),
        })
    }

    /// Applies puts (`Some(value)`) and deletes (`None`) atomically.
    pub async fn batch(
        &self,
        ops: Vec<(Bytes, Option<Bytes>)>,
    ) -> Result<ResponseHeader, ClientError> {
        let ops: Vec<BatchOp> = ops
            .into_iter()
            .map(|(key, value)| BatchOp {
                op: Some(match value {
                    Some(value) => batch_op::Op::Put(PutOp {
                        key,
                        value,
                        lease: 0,
                    }),
                    None => batch_op::Op::Delete(DeleteOp { key }),
                }),
            })
            .collect();
        let r = self
            .write(|request_id| {
                let req = once::request(
                    BatchRequest {
                        ops: ops.clone(),
                        request_id: request_id.clone(),
                    },
                    &request_id,
                );
                let mut kv = self.kv.clone();
                async move { kv.batch(req).await }
            })
            .await?;
        Ok(r.header.unwrap_or_default())
    }

    /// Compare-and-swap; returns whether it succeeded and the value before.
    pub async fn compare_and_swap(
        &self,
        key: impl Into<Bytes>,
        expected: Option<Bytes>,
        value: Option<Bytes>,
    ) -> Result<(bool, Option<Bytes>), ClientError> {
        let key = key.into();
        let r = self
            .write(|request_id| {
                let req = once::request(
                    CompareAndSwapRequest {
                        key: key.clone(),
                        expected: expected.clone(),
                        value: value.clone(),
                        request_id: request_id.clone(),
                    },
                    &request_id,
                );
                let mut kv = self.kv.clone();
                async move { kv.compare_and_swap(req).await }
            })
            .await?;
        Ok((r.succeeded, r.current))
    }

    /// Runs a transaction: when every compare holds, `success`, else
    /// `failure` (build them with [`txn`]), atomically in one raft entry.
    pub async fn txn(
        &self,
        compare: Vec<proto::Compare>,
        success: Vec<proto::TxnOp>,
        failure: Vec<proto::TxnOp>,
    ) -> Result<TxnResponse, ClientError> {
        self.write(|request_id| {
            let req = once::request(
                TxnRequest {
                    compare: compare.clone(),
                    success: success.clone(),
                    failure: failure.clone(),
                    request_id: request_id.clone(),
                },
                &request_id,
            );
            let mut kv = self.kv.clone();
            async move { kv.txn(req).await }
        })
        .await
    }

    /// Reads a key with the raft indexes that created and last put it.
    pub async fn get_versioned(
        &self,
        key: impl Into<Bytes>,
    ) -> Result<Option<KeyValue>, ClientError> {
        let key = key.into();
        let r = self
            .kv
            .clone()
            .get(GetRequest {
                key: key.clone(),
                consistency: Consistency::Linearizable as i32,
            })
            .await?
            .into_inner();
        Ok(r.found.then_some(KeyValue {
            key,
            value: r.value,
            create_index: r.create_index,
            mod_index: r.mod_index,
            lease: r.lease,
        }))
    }

    /// Watches `selector`'s keys from raft index `from_index` (0: from
    /// now), with a progress message after every `progress` without a
    /// change (`None`: the server's 10 s). The watcher resumes by itself
    /// when its stream breaks (see [`Watcher`]).
    pub fn watch(
        &self,
        selector: WatchSelector,
        from_index: u64,
        progress: Option<Duration>,
    ) -> Watcher {
        Watcher::new(self.kv.clone(), selector, from_index, progress)
    }

    /// Hands the first range's leadership to `target_id`; returns the
    /// leader afterwards.
    pub async fn transfer_leader(&self, target_id: u64) -> Result<u64, ClientError> {
        self.transfer_range_leader(0, target_id).await
    }

    /// Hands the leadership of range `range` (its id in the status; 0 for
    /// the first) to `target_id`; returns the leader afterwards.
    pub async fn transfer_range_leader(
        &self,
        range: u64,
        target_id: u64,
    ) -> Result<u64, ClientError> {
        let r = self
            .cluster
            .clone()
            .transfer_leader(proto::TransferLeaderRequest { target_id, range })
            .await?;
        Ok(r.into_inner().leader_id)
    }

    /// Splits the range holding `key` at it: a new range serves the keys
    /// from `key` on. Asking again for a key a range starts at splits
    /// nothing and answers that range (`split` false).
    pub async fn split_range(
        &self,
        key: impl Into<Bytes>,
    ) -> Result<proto::SplitRangeResponse, ClientError> {
        Ok(self
            .cluster
            .clone()
            .split_range(proto::SplitRangeRequest {
                key: key.into(),
                child: 0,
            })
            .await?
            .into_inner())
    }

    /// The members and whether each votes.
    pub async fn members(&self) -> Result<Vec<proto::Member>, ClientError> {
        Ok(self
            .cluster
            .clone()
            .members(proto::MembersRequest {})
            .await?
            .into_inner()
            .members)
    }

    /// Adds a node as a learner; returns the members afterwards.
    pub async fn add_member(
        &self,
        id: u64,
        address: &str,
    ) -> Result<Vec<proto::Member>, ClientError> {
        let req = proto::AddMemberRequest {
            id,
            address: address.to_string(),
            range: 0,
        };
        Ok(self
            .cluster
            .clone()
            .add_member(req)
            .await?
            .into_inner()
            .members)
    }

    /// Makes a learner a voter; with a non-zero `replace_id` that voter is
    /// removed in the same joint change. Returns the members afterwards.
    pub async fn promote_member(
        &self,
        id: u64,
        replace_id: u64,
    ) -> Result<Vec<proto::Member>, ClientError> {
        let req = proto::PromoteMemberRequest {
            id,
            replace_id,
            range: 0,
        };
        Ok(self
            .cluster
            .clone()
            .promote_member(req)
            .await?
            .into_inner()
            .members)
    }

    /// Removes a member; returns the members afterwards.
    pub async fn remove_member(&self, id: u64) -> Result<Vec<proto::Member>, ClientError> {
        let req = proto::RemoveMemberRequest { id, range: 0 };
        Ok(self
            .cluster
            .clone()
            .remove_member(req)
            .await?
            .into_inner()
            .members)
    }

    pub async fn status(&self) -> Result<StatusResponse, ClientError> {
        Ok(self
            .cluster
            .clone()
            .status(StatusRequest {})
            .await?
            .into_inner())
    }
}

#[cfg(test)]
mod tests {
    use tonic::metadata::MetadataValue;
    use tonic::{Code, Status};

    use super::*;

    fn status(code: Code, marked: Option<&'static str>) -> ClientError {
        let mut status = Status::new(code, "x");
        if let Some(mark) = marked {
            status
                .metadata_mut()
                .insert(RETRYABLE_METADATA, MetadataValue::from_static(mark));
        }
        ClientError::Status(status)
    }

    #[test]
    fn a_status_reads_as_its_grpc_name_and_message_once() {
        // Proves what the CLI prints for a refusal: the code's name as the
        // REST API spells it, then the server's message, with no cause
        // below that says the same again.
        let e = ClientError::from(Status::unauthenticated("send a token"));
        assert_eq!(e.to_string(), "UNAUTHENTICATED: send a token");
        assert!(std::error::Error::source(&e).is_none());
        let e = ClientError::from(Status::permission_denied("needs admin"));
        assert_eq!(e.to_string(), "PERMISSION_DENIED: needs admin");
        assert_eq!(code_name(Code::FailedPrecondition), "FAILED_PRECONDITION");
    }

    #[test]
    fn only_a_marked_unavailable_or_overloaded_is_retryable() {
        // Proves a write is retried only when the server said nothing was
        // applied: UNAVAILABLE, or an overloaded leader's RESOURCE_EXHAUSTED,
        // with the mark. Everything that may follow an applied write (an
        // unmarked UNAVAILABLE such as Envoy's old answer to its own timeout,
        // DEADLINE_EXCEEDED, CANCELLED, UNKNOWN) is not, nor is the unmarked
        // RESOURCE_EXHAUSTED of a full disk.
        for code in [Code::Unavailable, Code::ResourceExhausted] {
            assert!(status(code, Some("true")).is_retryable(), "{code:?}");
            assert!(!status(code, None).is_retryable(), "{code:?}");
            assert!(!status(code, Some("false")).is_retryable(), "{code:?}");
        }
        for code in [
            Code::DeadlineExceeded,
            Code::Cancelled,
            Code::Unknown,
            Code::Internal,
            Code::InvalidArgument,
        ] {
            assert!(!status(code, None).is_retryable(), "{code:?}");
            assert!(!status(code, Some("true")).is_retryable(), "{code:?}");
        }
    }
}
