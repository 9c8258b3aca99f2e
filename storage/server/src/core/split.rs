//! Splitting a range at a key on request (`Cluster/SplitRange`, `POST
//! /v1/cluster/ranges/split`).
//!
//! Two proposals, each on its group's leader: the first group gives the new
//! group an id (`Command::NewGroupId`, so no id is ever given twice), then
//! the range holding the key splits there (`Command::Split`). A node that
//! leads neither sends the request on to the first group's leader; that
//! one, having taken the id, sends it on to the range's leader when it does
//! not lead that range too: each step is forwarded at most once. The answer
//! waits until the new group is started on this node and knows a leader
//! (at most the request timeout).
//!
//! A split at a key a range starts at already splits nothing and answers
//! that range, so a retry after an unknown outcome is harmless. An id
//! taken by a request that then failed is never used.

use std::time::Duration;

use strata_proto::v1::cluster_client::ClusterClient;
use strata_proto::v1::{SplitRangeRequest, SplitRangeResponse};
use strata_raft::{ApplyResult, Command, PeerHandle};

use super::{Core, Hop, Route};
use crate::error::{ApiError, ErrorCode};
use crate::member_status::range_status;

/// How often the new group is looked for while it starts.
const POLL: Duration = Duration::from_millis(10);

impl Core {
    /// Splits the range holding `req.key` at it.
    pub async fn split_range(
        &self,
        req: SplitRangeRequest,
        hop: Hop,
    ) -> Result<SplitRangeResponse, ApiError> {
        self.limits.check_key(&req.key)?;
        if req.child != 0 && hop == Hop::Client {
            return Err(ApiError::invalid(
                "child is set only by the nodes: leave it 0, the cluster gives the new range its id",
            ));
        }
        let group = self.group_of(&req.key)?;
        if let Some(range) = self.starting_at(&group, &req.key)? {
            return Ok(range);
        }
        // The id, from the first group's leader.
        let (child, split_hop) = match req.child {
            0 => match self.route(hop)? {
                Route::Leader(leader) => {
                    let split = |ch, r| async move { ClusterClient::new(ch).split_range(r).await };
                    return self.forward(leader, req, split).await;
                }
                Route::Here => (self.new_group_id().await?, Hop::Client),
            },
            child => (child, hop),
        };
        // The split, on the range's leader.
        match self.route_in(&group, split_hop)? {
            Route::Leader(leader) => {
                let req = SplitRangeRequest { child, ..req };
                let split = |ch, r| async move { ClusterClient::new(ch).split_range(r).await };
                self.forward(leader, req, split).await
            }
            Route::Here => {
                let command = Command::Split {
                    at: req.key.to_vec(),
                    child,
                };
                let written = self.propose_in(&group, command, "").await?;
                match written.result {
                    ApplyResult::Split { child } => {
                        let range = self.started(child).await?;
                        Ok(SplitRangeResponse {
                            range: Some(range),
                            split: true,
                            index: written.index,
                        })
                    }
                    ApplyResult::SplitRefused { why } => {
                        Err(ApiError::invalid(format!("the range was not split: {why}")))
                    }
                    other => Err(ApiError::new(
                        ErrorCode::Internal,
                        format!("a split applied as another command: {other:?}"),
                    )),
                }
            }
        }
    }

    /// The answer for a split at `key` when `group`'s range starts there.
    fn starting_at(
        &self,
        group: &PeerHandle,
        key: &[u8],
    ) -> Result<Option<SplitRangeResponse>, ApiError> {
        let span = group
            .state_machine()
            .span()
            .map_err(|e| ApiError::new(ErrorCode::StorageFailed, e.to_string()))?;
        Ok((span.start == key).then(|| SplitRangeResponse {
            range: Some(range_status(span, group)),
            split: false,
            index: 0,
        }))
    }

    /// Takes a new group id from the first group, which this node leads.
    async fn new_group_id(&self) -> Result<u64, ApiError> {
        let written = self.propose(Command::NewGroupId, "").await?;
        match written.result {
            ApplyResult::GroupId { id } => Ok(id),
            ApplyResult::SplitRefused { why } => Err(ApiError::invalid(why)),
            other => Err(ApiError::new(
                ErrorCode::Internal,
                format!("taking a group id applied as another command: {other:?}"),
            )),
        }
    }

    /// Group `child`'s range once the group is started here and knows a
    /// leader, or as it is when the request's time is up.
    async fn started(&self, child: u64) -> Result<strata_proto::v1::RangeStatus, ApiError> {
        let deadline = tokio::time::Instant::now() + self.timing.request_timeout();
        loop {
            if let Some(group) = self.groups.get(child) {
                let span = group
                    .state_machine()
                    .span()
                    .map_err(|e| ApiError::new(ErrorCode::StorageFailed, e.to_string()))?;
                let range = range_status(span, &group);
                if range.leader_id != 0 || tokio::time::Instant::now() > deadline {
                    return Ok(range);
                }
            } else if tokio::time::Instant::now() > deadline {
                return Err(ApiError::new(
                    ErrorCode::OutcomeUnknown,
                    format!(
                        "the range was split off as group {child}, which did not start on node {} \
                         in time",
                        self.id
                    ),
                ));
            }
            tokio::time::sleep(POLL).await;
        }
    }
}
