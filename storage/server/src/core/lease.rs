//! Leases: granted and revoked by entries proposed on the leader, kept
//! alive and timed by the leader's clock (`crate::lessor`). Every call is
//! served by the leader; a follower forwards it once.

use std::time::Duration;

use strata_proto::v1::lease_client::LeaseClient;
use strata_proto::v1::{
    Consistency, LeaseGrantRequest, LeaseGrantResponse, LeaseKeepAliveRequest,
    LeaseKeepAliveResponse, LeaseListRequest, LeaseListResponse, LeaseRevokeRequest,
    LeaseRevokeResponse, LeaseStatus, LeaseTimeToLiveRequest, LeaseTimeToLiveResponse,
};
use strata_raft::{ApplyResult, Command};
use tonic::transport::Channel;

use super::{Core, Hop, Route};
use crate::error::{ApiError, ErrorCode};
use crate::lessor::KeepAlive;
use crate::validate;

fn millis(d: Duration) -> u64 {
    d.as_millis().try_into().unwrap_or(u64::MAX)
}

impl Core {
    fn lease_client(&self, channel: Channel) -> LeaseClient<Channel> {
        LeaseClient::new(channel)
    }

    pub async fn lease_grant(
        &self,
        req: LeaseGrantRequest,
        hop: Hop,
    ) -> Result<LeaseGrantResponse, ApiError> {
        let ttl_ms = validate::lease_ttl(req.ttl_ms)?;
        let id = validate::lease_id(req.id)?;
        match self.route(hop)? {
            Route::Leader(leader) => {
                let call = |ch, r| async move { self.lease_client(ch).grant(r).await };
                self.forward(leader, req, call).await
            }
            Route::Here => {
                let command = Command::LeaseGrant { id, ttl_ms };
                let written = self.propose(command, &req.request_id).await?;
                match written.result {
                    ApplyResult::LeaseGranted { id, ttl_ms } => {
                        self.lessor.start(id, ttl_ms);
                        Ok(LeaseGrantResponse {
                            header: Some(self.write_header(&written)),
                            id,
                            ttl_ms,
                        })
                    }
                    ApplyResult::LeaseExists { id } => Err(ApiError::new(
                        ErrorCode::AlreadyExists,
                        format!("lease {id} exists already"),
                    )),
                    other => Err(unexpected("a lease grant", &other)),
                }
            }
        }
    }

    pub async fn lease_revoke(
        &self,
        req: LeaseRevokeRequest,
        hop: Hop,
    ) -> Result<LeaseRevokeResponse, ApiError> {
        match self.route(hop)? {
            Route::Leader(leader) => {
                let call = |ch, r| async move { self.lease_client(ch).revoke(r).await };
                self.forward(leader, req, call).await
            }
            Route::Here => {
                let command = Command::LeaseRevoke { id: req.id };
                let written = self.propose(command, &req.request_id).await?;
                match written.result {
                    ApplyResult::LeaseRevoked { keys } => Ok(LeaseRevokeResponse {
                        header: Some(self.write_header(&written)),
                        keys_deleted: keys,
                    }),
                    ApplyResult::LeaseNotFound { id } => Err(lease_not_found(id)),
                    other => Err(unexpected("a lease revoke", &other)),
                }
            }
        }
    }

    /// Starts lease `id`'s TTL again, after a ReadIndex round proves that
    /// this node leads and has applied every grant and revoke committed
    /// before. A lease that does not exist, or whose TTL already ran out
    /// (it is being ended), is answered with TTL 0.
    pub async fn lease_keep_alive(
        &self,
        req: LeaseKeepAliveRequest,
        hop: Hop,
    ) -> Result<LeaseKeepAliveResponse, ApiError> {
        match self.route(hop)? {
            Route::Leader(leader) => {
                let call = |ch, r| async move { self.lease_client(ch).keep_alive_once(r).await };
                self.forward(leader, req, call).await
            }
            Route::Here => {
                let index = self.read_barrier(Consistency::Linearizable as i32).await?;
                let ttl_ms = match self.lease_ttl(req.id)? {
                    None => 0,
                    Some(ttl_ms) => match self.lessor.keep_alive(req.id, ttl_ms, true) {
                        KeepAlive::Kept => ttl_ms,
                        KeepAlive::Ended => 0,
                        KeepAlive::NotLeading => {
                            return Err(ApiError::unavailable(
                                "this node stopped leading; retry the keep-alive",
                            ));
                        }
                    },
                };
                Ok(LeaseKeepAliveResponse {
                    header: Some(self.header(index)),
                    id: req.id,
                    ttl_ms,
                })
            }
        }
    }

    pub async fn lease_time_to_live(
        &self,
        req: LeaseTimeToLiveRequest,
        hop: Hop,
    ) -> Result<LeaseTimeToLiveResponse, ApiError> {
        match self.route(hop)? {
            Route::Leader(leader) => {
                let call = |ch, r| async move { self.lease_client(ch).time_to_live(r).await };
                self.forward(leader, req, call).await
            }
            Route::Here => {
                let index = self.read_barrier(Consistency::Linearizable as i32).await?;
                let ttl_ms = self
                    .lease_ttl(req.id)?
                    .ok_or_else(|| lease_not_found(req.id))?;
                let remaining_ms = self
                    .lessor
                    .remaining(req.id)
                    .map_or(ttl_ms, |r| millis(r.remaining));
                let keys = if req.keys {
                    self.peer
                        .state_machine()
                        .lease_keys(req.id)
                        .map_err(|e| ApiError::new(ErrorCode::StorageFailed, e.to_string()))?
                        .into_iter()
                        .map(Into::into)
                        .collect()
                } else {
                    Vec::new()
                };
                Ok(LeaseTimeToLiveResponse {
                    header: Some(self.header(index)),
                    id: req.id,
                    ttl_ms,
                    remaining_ms,
                    keys,
                })
            }
        }
    }

    pub async fn lease_list(
        &self,
        req: LeaseListRequest,
        hop: Hop,
    ) -> Result<LeaseListResponse, ApiError> {
        match self.route(hop)? {
            Route::Leader(leader) => {
                let call = |ch, r| async move { self.lease_client(ch).list(r).await };
                self.forward(leader, req, call).await
            }
            Route::Here => {
                let index = self.read_barrier(Consistency::Linearizable as i32).await?;
                let leases = self
                    .lessor
                    .all()
                    .ok_or_else(|| ApiError::unavailable("this node stopped leading; retry"))?
                    .into_iter()
                    .map(|(id, r)| LeaseStatus {
                        id,
                        ttl_ms: millis(r.ttl),
                        remaining_ms: millis(r.remaining),
                    })
                    .collect();
                Ok(LeaseListResponse {
                    header: Some(self.header(index)),
                    leases,
                })
            }
        }
    }

    fn lease_ttl(&self, id: u64) -> Result<Option<u64>, ApiError> {
        self.peer
            .state_machine()
            .lease(id)
            .map_err(|e| ApiError::new(ErrorCode::StorageFailed, e.to_string()))
    }
}

/// The answer for a lease that does not exist.
pub fn lease_not_found(id: u64) -> ApiError {
    ApiError::not_found(format!(
        "lease {id} does not exist (it was revoked or ran out)"
    ))
}

fn unexpected(what: &str, result: &ApplyResult) -> ApiError {
    ApiError::new(
        ErrorCode::Internal,
        format!("{what} applied as another command: {result:?}"),
    )
}
